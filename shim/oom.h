/*
 * shim/oom.h — a container's OOM kills, for containerd's /tasks/oom: on
 * cgroup v1 an eventfd registered on the memory cgroup's memory.oom_control
 * through cgroup.event_control (it counts OOM events), on cgroup v2 an
 * inotify watch on memory.events, whose oom_kill count is re-read at each
 * change. Read on the loop; the record frees itself once stopped and its
 * read has completed.
 */
#ifndef URSA_SHIM_OOM_H
#define URSA_SHIM_OOM_H

#include "host/cgroup.h"
#include "runtime/loop.h"

struct shim_oom;

/**
 * shim_oom_watch() - call @cb at each OOM kill in @cg's memory cgroup
 * @loop: the loop
 * @cg: the container's cgroups (its memory hierarchy, or v2 on unified hosts)
 * @cb: called from the loop, once per OOM event seen
 * @arg: passed to @cb
 *
 * Return: the watch, or NULL (errno set; -ENOENT: no memory cgroup).
 */
struct shim_oom *shim_oom_watch(struct urs_loop *loop, const struct urs_cgroup *cg,
				void (*cb)(void *arg), void *arg);

/**
 * shim_oom_stop() - stop watching (@cb is not called again)
 * @o: the watch (not to be used after this)
 */
void shim_oom_stop(struct shim_oom *o);

#endif
