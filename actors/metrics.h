/*
 * actors/metrics.h — what a supervisor measures, and its exposition.
 *
 * The metrics are static structs registered once before the loop starts
 * (one small array each, see runtime/metrics.h). Counters are bumped where
 * things happen; gauges that are cheap to read but costly to track (the
 * supervisor's own Pss_Anon, the container cgroup's memory, CPU and pids,
 * the loop's counters) are sampled when somebody scrapes.
 */
#ifndef URSA_ACTORS_METRICS_H
#define URSA_ACTORS_METRICS_H

#include <stddef.h>

#include "host/cgroup.h"
#include "runtime/loop.h"
#include "runtime/metrics.h"

enum urs_ctl_req { URS_REQ_START, URS_REQ_PING, URS_REQ_METRICS, URS_REQ_OTHER, URS_REQ__N };

extern struct urs_metric urs_m_ctl_requests, urs_m_signals;

int urs_sup_metrics_init(void);
/* Sample the gauges and write the exposition for sandbox @id. Length or -ENOSPC. */
int urs_sup_metrics_render(const char *id, const struct urs_loop *loop, struct urs_cgroup *cg,
			   char *buf, size_t len);

#endif
