/*
 * actors/metrics.c — see metrics.h.
 */
#include "actors/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actors/sc_count.h"
#include "host/seccomp.h"
#include "host/seccomp_bpf.h"
#include "runtime/actor.h"
#include "runtime/common.h"

static const char *const req_names[URS_REQ__N] = {"start", "ping", "metrics", "checkpoint",
						  "other"};
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
static struct urs_metrics prof_set; /* --profile only: empty otherwise */

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

/* ---- counted seccomp denials: the process's own (actors/sc_count.h) ---- */

/* in .bss, so its counters cost nothing until something is denied (an
 * initializer would put all of it in .data) */
static struct urs_sc_count proc_sc;
static bool proc_sc_ready;

static struct urs_sc_count *proc(void)
{
	if (!proc_sc_ready) {
		proc_sc.fd = -1;
		proc_sc_ready = true;
	}
	return &proc_sc;
}

void urs_sup_seccomp_take(int listener, const struct urs_seccomp_denials *d)
{
	urs_sc_take(proc(), listener, d, false);
}

int urs_sup_seccomp_fd(void)
{
	return proc()->fd;
}

int urs_sup_seccomp_start(struct urs_loop *loop)
{
	return urs_sc_start(proc(), loop);
}

/* ---- --profile ----
 *
 * Per named callback: calls, total and max nanoseconds (CLOCK_MONOTONIC
 * around the call), and heap growth from mallinfo2() read before and after:
 * the calls after which the heap held more bytes than before, and the sum of
 * those growths. That is net growth, not a count of malloc() calls (glibc
 * has no allocation hooks any more, and interposing malloc would fight the
 * sanitizers and the mimalloc builds); a handler that allocates and frees
 * within the call shows nothing, and so does another allocator (ASan's,
 * mimalloc). mallinfo2() walks glibc's free lists: ~200 ns per call on the
 * supervisor's small heap. Profiling is for finding where the time goes. */

static const char *prof_values[URS_PROF_MAX + 2];
static const void *prof_fns[URS_PROF_MAX + 1];
static uint32_t prof_n; /* named entries; index prof_n is "other" */
static struct urs_metric_label prof_label[1] = {{"handler", prof_values, 0}};
static struct urs_metric m_prof_calls = {
	.name = "ursa_profile_handler_calls_total",
	.help = "Calls of each supervisor handler (--profile).",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metric m_prof_ns = {
	.name = "ursa_profile_handler_nanoseconds_total",
	.help = "Time spent in each supervisor handler, CLOCK_MONOTONIC (--profile).",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metric m_prof_max = {
	.name = "ursa_profile_handler_max_nanoseconds",
	.help = "Longest single call of each supervisor handler (--profile).",
	.type = URS_METRIC_GAUGE,
};
static struct urs_metric m_prof_grow = {
	.name = "ursa_profile_handler_heap_growths_total",
	.help = "Handler calls after which the heap held more bytes (mallinfo2; --profile).",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metric m_prof_grow_bytes = {
	.name = "ursa_profile_handler_heap_grown_bytes_total",
	.help = "Bytes the heap grew by across those calls (mallinfo2; --profile).",
	.type = URS_METRIC_COUNTER,
};

static uint32_t prof_slot(const void *fn)
{
	for (uint32_t i = 0; i < prof_n; i++)
		if (prof_fns[i] == fn)
			return i;
	return prof_n;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static uint64_t prof_t0;
static size_t prof_h0;

static void prof_begin(void)
{
	prof_h0 = heap_in_use();
	prof_t0 = now_ns();
}

static void prof_end(const void *fn)
{
	uint64_t dt = now_ns() - prof_t0;
	size_t h1 = heap_in_use();
	uint32_t c = prof_slot(fn);
	urs_metric_add(&m_prof_calls, c, 1);
	urs_metric_add(&m_prof_ns, c, dt);
	if (dt > atomic_load_explicit(&m_prof_max.cells[c], memory_order_relaxed))
		urs_metric_set(&m_prof_max, c, dt);
	if (h1 > prof_h0) {
		urs_metric_add(&m_prof_grow, c, 1);
		urs_metric_add(&m_prof_grow_bytes, c, h1 - prof_h0);
	}
}

/* Both hooks are called from the loop's one thread, never nested (callbacks
 * do not nest, and actors run from the loop's turn), so one t0/h0 pair. */
static void prof_actor(struct urs_actor *a, struct urs_msg *m)
{
	urs_actor_fn fn = a->handler;
	prof_begin();
	fn(a, m);
	prof_end((const void *) fn);
}

static void prof_op(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	urs_op_cb fn = op->cb; /* the callback may reuse the op */
	prof_begin();
	fn(loop, op, res, flags);
	prof_end((const void *) fn);
}

int urs_sup_profile_init(const struct urs_prof_name *names, size_t n)
{
	if (prof_set.count)
		return -EALREADY;
	prof_n = 0;
	for (size_t i = 0; i < n && prof_n < URS_PROF_MAX; i++) {
		prof_fns[prof_n] = names[i].fn;
		prof_values[prof_n++] = names[i].name;
	}
	if (prof_n < URS_PROF_MAX) {
		prof_fns[prof_n] = urs_sc_handler;
		prof_values[prof_n++] = "seccomp";
	}
	prof_values[prof_n] = "other";
	prof_label[0].n = prof_n + 1;
	struct urs_metric *all[] = {&m_prof_calls, &m_prof_ns, &m_prof_max, &m_prof_grow,
				    &m_prof_grow_bytes};
	for (size_t i = 0; i < URS_ARRAY_SIZE(all); i++) {
		all[i]->labels = prof_label;
		all[i]->nlabels = 1;
		int r = urs_metric_register(&prof_set, all[i]);
		if (r < 0) {
			urs_metrics_free(&prof_set);
			return r;
		}
	}
	urs_prof_actor = prof_actor;
	urs_prof_op = prof_op;
	return 0;
}

/* ---- checkpoint ---- */

/* saved values of the loop's counters (a restored supervisor's loop starts
 * from zero): added when they are sampled */
static uint64_t loop_base[2];

static int save_cells(urs_sup_metric_fn fn, void *ctx, const char *name,
		      const _Atomic uint64_t *cells, uint32_t n)
{
	uint64_t *v = malloc((size_t) n * sizeof(*v) + 1);
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		v[i] = atomic_load_explicit(&cells[i], memory_order_relaxed);
	int r = fn(ctx, name, v, n);
	free(v);
	return r;
}

/* sampled when scraped, not counted here: not saved */
static bool sampled(const struct urs_metric *m)
{
	return m->type == URS_METRIC_GAUGE || m == &m_cpu || m == &m_loop_turns ||
	       m == &m_loop_cqes;
}

int urs_sup_metrics_save(const struct urs_loop *loop, const struct urs_sc_count *sc,
			 urs_sup_metric_fn fn, void *ctx)
{
	sc = sc ? sc : proc();
	int r;
	for (struct urs_metric *m = set.head; m; m = m->next)
		if (!sampled(m) &&
		    (r = save_cells(fn, ctx, m->name, m->cells, m->ncells * m->stride)))
			return r;
	uint64_t lv[2] = {loop_base[0], loop_base[1]};
	if (loop) {
		lv[0] += loop->stats.turns;
		lv[1] += loop->stats.cqes;
	}
	if ((r = fn(ctx, m_loop_turns.name, &lv[0], 1)) ||
	    (r = fn(ctx, m_loop_cqes.name, &lv[1], 1)))
		return r;
	if ((r = save_cells(fn, ctx, "ursa_seccomp_denied_total", sc->denied,
			    URS_ARRAY_SIZE(sc->denied))))
		return r;
	return save_cells(fn, ctx, "ursa_seccomp_notify_errors_total", &sc->errors, 1);
}

static void add_cells(_Atomic uint64_t *cells, const uint64_t *vals, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		atomic_fetch_add_explicit(&cells[i], vals[i], memory_order_relaxed);
}

int urs_sup_metrics_load(const char *name, const uint64_t *vals, uint32_t n, bool check)
{
	for (struct urs_metric *m = set.head; m; m = m->next) {
		if (strcmp(m->name, name))
			continue;
		if (m == &m_loop_turns || m == &m_loop_cqes) {
			if (n != 1)
				return -EINVAL;
			if (!check)
				loop_base[m == &m_loop_cqes] += vals[0];
			return 0;
		}
		if (sampled(m))
			return -ENOENT;
		if (n != m->ncells * m->stride)
			return -EINVAL;
		if (!check)
			add_cells(m->cells, vals, n);
		return 0;
	}
	if (!strcmp(name, "ursa_seccomp_notify_errors_total")) {
		if (n != 1)
			return -EINVAL;
		if (!check)
			add_cells(&proc()->errors, vals, 1);
		return 0;
	}
	if (strcmp(name, "ursa_seccomp_denied_total"))
		return -ENOENT;
	if (n != URS_ARRAY_SIZE(proc_sc.denied))
		return -EINVAL;
	return check ? 0 : urs_sc_load_denied(proc(), vals, n);
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
			   const struct urs_sc_count *sc, char *buf, size_t len)
{
	urs_metric_set(&m_pss_anon, 0, (uint64_t) pss_anon_kb() * 1024);
	if (loop) {
		urs_metric_set(&m_loop_turns, 0, loop_base[0] + loop->stats.turns);
		urs_metric_set(&m_loop_cqes, 0, loop_base[1] + loop->stats.cqes);
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
	int n = urs_metrics_expose(&set, cl, buf, len);
	if (n < 0)
		return n;
	int m = urs_sc_render(sc ? sc : proc(), cl, buf + n, len - (size_t) n);
	if (m < 0)
		return m;
	n += m;
	m = urs_metrics_expose(&prof_set, cl, buf + n, len - (size_t) n);
	return m < 0 ? m : n + m;
}
