/*
 * actors/metrics.h — what a supervisor measures, and its exposition.
 *
 * The metrics are static structs registered once before the loop starts
 * (one small array each, see runtime/metrics.h). Counters are bumped where
 * things happen; gauges that are cheap to read but costly to track (the
 * supervisor's own Pss_Anon, the container cgroup's memory, CPU and pids,
 * the loop's counters) are sampled when somebody scrapes.
 *
 * Two optional parts cost nothing unless switched on before the loop:
 *  - counted seccomp denials: the supervisor holds the filter's listener and
 *    answers each notification with the profile's errno (host/seccomp_bpf.h),
 *    counting ursa_seccomp_denied_total{syscall=...};
 *  - `ursa --profile`: every actor handler and op callback runs between two
 *    clock reads and two mallinfo2() calls: ursa_profile_handler_* by name.
 */
#ifndef URSA_ACTORS_METRICS_H
#define URSA_ACTORS_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "host/cgroup.h"
#include "runtime/loop.h"
#include "runtime/metrics.h"

enum urs_ctl_req {
	URS_REQ_START,
	URS_REQ_PING,
	URS_REQ_METRICS,
	URS_REQ_CHECKPOINT,
	URS_REQ_OTHER,
	URS_REQ__N
};

extern struct urs_metric urs_m_ctl_requests, urs_m_signals;

int urs_sup_metrics_init(void);
/* Sample the gauges and write the exposition for sandbox @id. Length or -ENOSPC. */
struct urs_sc_count;
/* @sc: the sandbox's counted seccomp denials, NULL: the process's own */
int urs_sup_metrics_render(const char *id, const struct urs_loop *loop, struct urs_cgroup *cg,
			   const struct urs_sc_count *sc, char *buf, size_t len);

/* ---- checkpoint (actors/checkpointer.c) ----
 * The values that must continue across a checkpoint/restore: counters and
 * histograms bumped by the supervisor (every cell, histogram buckets, count
 * and sum included), the loop's counters and the counted seccomp denials.
 * Gauges and what is sampled from the cgroup are not saved (they describe
 * the new sandbox). */

/* @vals: the metric's storage (cells × stride slots) at the call. */
typedef int (*urs_sup_metric_fn)(void *ctx, const char *name, const uint64_t *vals, uint32_t n);
/* Call @fn for each saved metric; stops at (and returns) the first non-zero. */
int urs_sup_metrics_save(const struct urs_loop *loop, const struct urs_sc_count *sc,
			 urs_sup_metric_fn fn, void *ctx);
/* Add the saved @vals to metric @name, so it continues from them (@check:
 * only say whether it would). 0, -ENOENT (not a saved metric of this
 * build: ignore it), -EINVAL (its shape — label values, buckets — differs:
 * nothing added). */
int urs_sup_metrics_load(const char *name, const uint64_t *vals, uint32_t n, bool check);

/* ---- counted seccomp denials ---- */

struct urs_seccomp_denials;
/* Keep @listener (the filter's, received with READY) and the errno table;
 * the caller keeps the fd open (urs_sup_seccomp_fd()) until the loop.
 * (-1, NULL) closes a listener taken before: the kernel then fails the
 * notifying syscalls with ENOSYS instead of letting them wait. */
void urs_sup_seccomp_take(int listener, const struct urs_seccomp_denials *d);
/* The listener taken, or -1. */
int urs_sup_seccomp_fd(void);
/* Answer the listener's notifications on @loop from now on (a weak op: it
 * does not keep the loop alive). 0, or a negative errno (then the listener
 * is closed and denied syscalls fail with ENOSYS). No-op without a listener. */
int urs_sup_seccomp_start(struct urs_loop *loop);

/* ---- --profile ---- */

/* A callback (actor handler or op callback) and its label value. */
struct urs_prof_name {
	const void *fn;
	const char *name;
};
#define URS_PROF_MAX 15 /* named callbacks; the rest are "other" */

/* Register the ursa_profile_* metrics for @names (+ "other", + this module's
 * own callbacks) and install the runtime's profiling hooks. Call once,
 * before the loop, only when profiling is wanted: without this call nothing
 * is allocated or registered. */
int urs_sup_profile_init(const struct urs_prof_name *names, size_t n);

#endif
