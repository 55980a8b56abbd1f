/*
 * actors/metrics.c — see metrics.h.
 */
#include "actors/metrics.h"

#include <stdio.h>
#include <string.h>

static const char *const req_names[URS_REQ__N] = {"start", "ping", "metrics", "other"};
static const struct urs_metric_label req_label[] = {{"request", req_names, URS_REQ__N}};

struct urs_metric urs_m_ctl_requests = {
	.name = "ursa_supervisor_control_requests_total",
	.help = "Requests on the supervisor's control socket, by request.",
	.type = URS_METRIC_COUNTER,
	.labels = req_label,
	.nlabels = 1,
};
struct urs_metric urs_m_signals = {
	.name = "ursa_supervisor_signals_forwarded_total",
	.help = "Signals the supervisor forwarded to the container's init.",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metric m_pss_anon = {
	.name = "ursa_supervisor_pss_anon_bytes",
	.help = "Proportional anonymous memory of the supervisor process.",
	.type = URS_METRIC_GAUGE,
};
static struct urs_metric m_loop_turns = {
	.name = "ursa_supervisor_loop_turns_total",
	.help = "Turns of the supervisor's io_uring loop.",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metric m_loop_cqes = {
	.name = "ursa_supervisor_loop_completions_total",
	.help = "io_uring completions the supervisor reaped.",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metric m_mem = {
	.name = "ursa_container_memory_usage_bytes",
	.help = "Memory charged to the container's cgroup.",
	.type = URS_METRIC_GAUGE,
};
static struct urs_metric m_mem_max = {
	.name = "ursa_container_memory_max_usage_bytes",
	.help = "Peak memory charged to the container's cgroup.",
	.type = URS_METRIC_GAUGE,
};
static struct urs_metric m_cpu = {
	.name = "ursa_container_cpu_usage_nanoseconds_total",
	.help = "CPU time used by the container's cgroup.",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metric m_pids = {
	.name = "ursa_container_pids",
	.help = "Tasks in the container's cgroup (the supervisor included).",
	.type = URS_METRIC_GAUGE,
};

static struct urs_metrics set;

int urs_sup_metrics_init(void)
{
	struct urs_metric *all[] = {&urs_m_ctl_requests, &urs_m_signals, &m_pss_anon,
				    &m_loop_turns,	 &m_loop_cqes,	 &m_mem,
				    &m_mem_max,		 &m_cpu,	 &m_pids};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		int r = urs_metric_register(&set, all[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

static long pss_anon_kb(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "re");
	char line[128];
	long v = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Pss_Anon: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

int urs_sup_metrics_render(const char *id, const struct urs_loop *loop, struct urs_cgroup *cg,
			   char *buf, size_t len)
{
	urs_metric_set(&m_pss_anon, 0, (uint64_t) pss_anon_kb() * 1024);
	if (loop) {
		urs_metric_set(&m_loop_turns, 0, loop->stats.turns);
		urs_metric_set(&m_loop_cqes, 0, loop->stats.cqes);
	}
	struct urs_cg_stats st = {0};
	if (cg && urs_cg_stats(cg, &st, NULL) == 0) {
		urs_metric_set(&m_mem, 0, st.mem_usage);
		urs_metric_set(&m_mem_max, 0, st.mem_max_usage);
		urs_metric_set(&m_cpu, 0, st.cpu_usage_ns);
		urs_metric_set(&m_pids, 0, st.pids_current);
		urs_cg_close(cg); /* keep the supervisor's fd count low between scrapes */
	}
	char cl[300];
	snprintf(cl, sizeof(cl), "sandbox=\"%s\"", id ? id : "");
	return urs_metrics_expose(&set, cl, buf, len);
}
