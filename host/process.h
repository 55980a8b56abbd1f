/*
 * host/process.h — turning the current process into the spec's process,
 * shared by the container's init and `ursa exec`: pty on the console socket,
 * rlimits, oom_score_adj, umask, capability bounding, identity and sets,
 * seccomp, cwd, PATH lookup, no_new_privs, close-on-exec of everything that
 * is not stdio or preserved, and finally execve.
 */
#ifndef URSA_HOST_PROCESS_H
#define URSA_HOST_PROCESS_H

#include <stddef.h>

#include "runtime/err.h"
#include "host/spec.h"

/* Send a pty master over @console_fd (then closed), make the slave our
 * controlling terminal and stdio. */
int urs_console_setup(int console_fd, const struct urs_process *p, struct urs_err *err);

/* Everything up to execve; @exe receives the resolved executable. Seccomp is
 * loaded here when the process keeps privileges (loading needs
 * CAP_SYS_ADMIN then), else by urs_process_exec. */
int urs_process_prepare(const struct urs_process *p, int preserve_fds, void *seccomp,
			int (*load_seccomp)(void *, struct urs_err *), char *exe, size_t len,
			struct urs_err *err);

/* Load a no_new_privs process's seccomp filter last, then execve. Returns
 * only on failure. */
int urs_process_exec(const struct urs_process *p, const char *exe, void *seccomp,
		     int (*load_seccomp)(void *, struct urs_err *), struct urs_err *err);

/* The two halves of urs_process_exec, for callers that fork in between. */
int urs_process_seccomp_late(const struct urs_process *p, void *seccomp,
			     int (*load_seccomp)(void *, struct urs_err *), struct urs_err *err);
int urs_process_execve(const struct urs_process *p, const char *exe, struct urs_err *err);

/* PATH lookup as execvpe would, with the process's own PATH. */
int urs_find_exec(const char *file, char *const env[], char *out, size_t len);

#endif
