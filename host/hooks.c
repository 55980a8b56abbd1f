/*
 * host/hooks.c — see hooks.h.
 */
#include "host/hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/oom.h"
#include "host/proc.h"
#include "runtime/common.h"

int urs_hook_run(const struct urs_hook *h, enum urs_hook_kind kind, size_t idx,
		 const char *state_json, struct urs_err *err)
{
	int in[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return urs_err_set(err, -errno, "hooks.%s[%zu]: pipe: %m", urs_hook_name(kind),
				   idx);
	pid_t pid = fork();
	if (pid < 0) {
		close(in[0]);
		close(in[1]);
		return urs_err_set(err, -errno, "hooks.%s[%zu]: fork: %m", urs_hook_name(kind),
				   idx);
	}
	if (pid == 0) {
		setpgid(0, 0);		  /* its own group: a timeout kills what it started too */
		signal(SIGPIPE, SIG_DFL); /* ignored by us (below, the supervisor), not by hooks */
		urs_oom_child_reset();	  /* the caller's OOM score, not the supervisor's */
		dup2(in[0], 0);
		char *const noargs[] = {h->path, NULL};
		char *const noenv[] = {NULL};
		execve(h->path, h->n_args ? h->args : noargs, h->env ? h->env : noenv);
		_exit(127);
	}
	close(in[0]);
	/* the state goes on stdin; a hook that does not read it must not block us */
	size_t n = strlen(state_json);
	signal(SIGPIPE, SIG_IGN);
	if (write(in[1], state_json, n) < 0) {
		/* the hook may have exited without reading: its status tells */
	}
	close(in[1]);
	int timeout_ms = h->has_timeout ? (int) h->timeout * 1000 : -1;
	_cleanup_close_ int pfd = urs_pidfd_open(pid, 0);
	if (pfd >= 0) {
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		if (poll(&p, 1, timeout_ms) == 0) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return urs_err_set(err, -ETIMEDOUT,
					   "hooks.%s[%zu] (%s): timed out after %us",
					   urs_hook_name(kind), idx, h->path, h->timeout);
		}
	}
	int st;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (w < 0)
		return urs_err_set(err, -errno, "hooks.%s[%zu] (%s): waiting for it: %m",
				   urs_hook_name(kind), idx, h->path);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st))
		return urs_err_set(err, -EIO, "hooks.%s[%zu] (%s): exited with status %d%s",
				   urs_hook_name(kind), idx, h->path, WEXITSTATUS(st),
				   WEXITSTATUS(st) == 127 ? " (could not be executed?)" : "");
	return urs_err_set(err, -EIO, "hooks.%s[%zu] (%s): killed by signal %d",
			   urs_hook_name(kind), idx, h->path, WTERMSIG(st));
}

int urs_hooks_run(const struct urs_spec *spec, enum urs_hook_kind kind, const char *state_json,
		  struct urs_err *err)
{
	const struct urs_hook_list *l = &spec->hooks[kind];
	for (size_t i = 0; i < l->n; i++) {
		int r = urs_hook_run(&l->v[i], kind, i, state_json, err);
		if (r < 0)
			return r;
	}
	return 0;
}
