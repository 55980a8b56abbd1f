/*
 * host/ckpt_restore.h — restore a checkpoint image (host/ckpt_image.h) as a
 * new process tree. The image is loaded and fully validated first (nothing is
 * created if it is corrupted, truncated, foreign, or names files that changed);
 * then the root is cloned as a "puppet" (in a new pid namespace when its pid
 * was 1, else with the same pid through clone3 set_tid), children are cloned
 * from their parent's puppet with their pids, and each puppet's address
 * space, fds and kernel state are rebuilt by ptrace-injected syscalls before
 * its saved registers and FPU state are set and it is let go.
 * The restore sequence is documented in docs/checkpoint.md.
 */
#ifndef URSA_HOST_CKPT_RESTORE_H
#define URSA_HOST_CKPT_RESTORE_H

#include <stdint.h>
#include <sys/types.h>

#include "host/err.h"

struct ckpt_restore_stats {
	uint32_t ntasks;
	uint64_t pages;
	double load_ms; /* read + verify the image */
	double ms;	/* total, load included, until every task runs */
};

/* Restore the image in dir. The root task becomes a child of the caller;
 * *pid receives its pid in the caller's pid namespace. Namespaces other than
 * the pid namespace, the root and mounts the paths refer to, cgroups and
 * seccomp are the caller's business (the puppet inherits the caller's). */
int ckpt_restore(const char *dir, pid_t *pid, struct ckpt_restore_stats *stats,
		 struct urs_err *err);

#endif
