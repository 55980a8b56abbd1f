/*
 * host/exec.h — starting an extra process inside a running container
 * (`ursa exec`): join the init's namespaces and cgroups, then become the
 * process the spec describes (identity, caps, rlimits, seccomp, cwd).
 *
 * The caller forks; the child joins the user namespace first, then the
 * others, and — because a pid namespace applies to children only — forks
 * once more with CLONE_PARENT so that the final process is the CALLER's
 * child (its exit status can be waited for; with --detach it is re-parented
 * to the caller's subreaper). Until execve every process here is
 * non-dumpable: nothing in the container can open /proc/PID/exe of ours.
 */
#ifndef URSA_HOST_EXEC_H
#define URSA_HOST_EXEC_H

#include <stdbool.h>
#include <sys/types.h>

#include "host/cgroup.h"
#include "runtime/err.h"
#include "host/spec.h"

struct urs_exec_opts {
	pid_t init_pid;
	uint64_t init_start;
	const struct urs_process *process;
	struct urs_cgroup *cg; /* NULL: do not join */
	int console_fd;	       /* connected console socket, or -1 */
	int preserve_fds;
	void *seccomp;
	int (*load_seccomp)(void *filter, struct urs_err *err);
};

/* Start the process; *pid is the final process (our child). */
int urs_exec_spawn(const struct urs_exec_opts *o, pid_t *pid, struct urs_err *err);

/* Send a pty master over a console socket and make the slave our ctty and
 * stdio (shared with the init's terminal setup). */
int urs_console_setup(int console_fd, const struct urs_process *p, struct urs_err *err);

#endif
