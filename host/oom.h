/*
 * host/oom.h — the supervisor's place in the OOM killer's order.
 *
 * The supervisor is charged to its sandbox's memory cgroup (docs/sandbox.md,
 * "Where the supervisor is charged"), so when a tenant fills that cgroup the
 * kernel's OOM killer chooses among the tenant's processes and the
 * supervisor. A tenant filling a tmpfs from a small process (file pages
 * count against the cgroup, not against any process's score) leaves the
 * supervisor the largest task in the cgroup: it was killed, and the sandbox
 * lost its network, volumes and metrics. The supervisor therefore takes the
 * score containerd gives its shims (-999: chosen only when nothing else in
 * the cgroup can be), once its init is cloned (the container keeps the
 * caller's score, as with runc), and its later children (hooks) get the
 * caller's score back before they exec.
 */
#ifndef URSA_HOST_OOM_H
#define URSA_HOST_OOM_H

#include "runtime/err.h"

/* The supervisor's oom_score_adj: the last task of its cgroup to go. */
#define URS_OOM_SUPERVISOR_ADJ (-999)

/**
 * urs_oom_protect_self() - lower this process's oom_score_adj to @adj
 * @adj: the new score (-1000..1000)
 * @err: filled on failure
 *
 * Remembers the score it had, for urs_oom_child_reset().
 *
 * Return: 0 or a negative errno.
 */
int urs_oom_protect_self(int adj, struct urs_err *err);

/**
 * urs_oom_child_reset() - in a child forked after urs_oom_protect_self(),
 * put back the score the process had before it (async-signal-safe; a no-op
 * if the score was never changed).
 *
 * Return: 0 or a negative errno.
 */
int urs_oom_child_reset(void);

#endif
