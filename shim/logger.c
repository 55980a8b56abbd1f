/*
 * shim/logger.c — containerd's logging binaries (shim/logger.h): the URI
 * parsed, the program spawned with its three pipes, its readiness awaited
 * on the shim's loop (a poll of the ready pipe and a timer): the other
 * containers of the pod are served meanwhile. A logger that is not ready
 * within its deadline fails the Create or Exec that named it (the runc
 * shim waits without a bound, blocking that call).
 */
#include "shim/logger.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/common.h"
#include "runtime/loop.h"
#include "runtime/timer.h"

#define MAX_ARGS 32

/* %XX and '+' (in a query) decoded in place; false on a bad escape */
static bool unescape(char *s, bool query)
{
	char *o = s;
	for (; *s; s++) {
		if (*s == '%') {
			unsigned v;
			if (!isxdigit((unsigned char) s[1]) || !isxdigit((unsigned char) s[2]) ||
			    sscanf(s + 1, "%2x", &v) != 1 || !v)
				return false;
			*o++ = (char) v;
			s += 2;
		} else {
			*o++ = query && *s == '+' ? ' ' : *s;
		}
	}
	*o = 0;
	return true;
}

/* binary:///PATH?... (or binary://localhost/PATH?...) -> "/PATH?..." */
static const char *uri_path(const char *uri)
{
	const char *p = !strncmp(uri, "binary://", 9) ? uri + 9 : uri;
	return !strncmp(p, "localhost/", 10) ? p + 9 : p;
}

/* binary:///PATH?K=V&K2=V2 -> @buf holds PATH, argv[1..] "K" "V" "K2" "V2" */
static int parse(const char *uri, char *buf, size_t len, char **argv, struct urs_err *error)
{
	const char *p = uri_path(uri);
	if (*p != '/' || snprintf(buf, len, "%s", p) >= (int) len)
		return urs_err_set(error, -EINVAL, "stdio %s: not binary:///ABSOLUTE-PATH", uri);
	char *q = strchr(buf, '?');
	if (q)
		*q++ = 0;
	if (!unescape(buf, false))
		return urs_err_set(error, -EINVAL, "stdio %s: a bad %%-escape in its path", uri);
	int n = 0;
	argv[n++] = buf;
	for (char *kv = q, *next; kv; kv = next) {
		next = strchr(kv, '&');
		if (next)
			*next++ = 0;
		if (!*kv)
			continue; /* "a=1&&b=2": no pair */
		char *v = strchr(kv, '=');
		if (v)
			*v++ = 0;
		if (n + 2 >= MAX_ARGS || !unescape(kv, true) || (v && !unescape(v, true)))
			return urs_err_set(error, -EINVAL,
					   "stdio %s: more than %d arguments or a bad %%-escape",
					   uri, MAX_ARGS / 2 - 1);
		bool seen = false; /* containerd passes a key's first value only */
		for (int i = 1; i < n && !seen; i += 2)
			seen = !strcmp(argv[i], kv);
		if (seen)
			continue;
		argv[n++] = kv;
		argv[n++] = v ? v : (char *) ""; /* a bare key: KEY "" (url.Query's) */
	}
	argv[n] = NULL;
	return 0;
}

/* the program on fds 3, 4, 5 and /dev/null on 0, 1, 2 */
static int spawn(char **argv, const char *id, const char *ns, const int fds[3], pid_t *pid,
		 struct urs_err *error)
{
	char env_id[512], env_ns[512];
	snprintf(env_id, sizeof(env_id), "CONTAINER_ID=%s", id);
	snprintf(env_ns, sizeof(env_ns), "CONTAINER_NAMESPACE=%s", ns);
	char *envp[] = {env_id, env_ns, NULL};
	/* copies above 5: no source is one of the targets 3..5 */
	int hi[3] = {-1, -1, -1}, r = 0;
	for (int i = 0; i < 3 && r == 0; i++)
		if ((hi[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 6)) < 0)
			r = errno;
	/* the shim blocks SIGCHLD (its reaper) and ignores SIGPIPE: the program
	 * starts with no signal blocked and every one at its default */
	posix_spawnattr_t at;
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	for (int i = 0; i < 3; i++) {
		posix_spawn_file_actions_adddup2(&fa, hi[i], 3 + i);
		posix_spawn_file_actions_addopen(&fa, i, "/dev/null", i ? O_WRONLY : O_RDONLY, 0);
	}
	if (r == 0)
		r = posix_spawn(pid, argv[0], &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	for (int i = 0; i < 3; i++)
		if (hi[i] >= 0)
			close(hi[i]);
	return r ? urs_err_set(error, -r, "logging binary %s: %s", argv[0], strerror(r)) : 0;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]), fds[i] = -1;
}

int shim_logger_spawn(const char *uri, const char *id, const char *ns, int *out, int *err,
		      int *ready, pid_t *pid, struct urs_err *error)
{
	char path[PATH_MAX], *argv[MAX_ARGS];
	int r = parse(uri, path, sizeof(path), argv, error);
	if (r < 0)
		return r;
	int p[6] = {-1, -1, -1, -1, -1, -1}; /* out r/w, err r/w, ready r/w */
	for (int i = 0; i < 3; i++)
		if (pipe2(p + 2 * i, O_CLOEXEC) < 0) {
			r = urs_err_set(error, -errno, "logging binary %s: pipes: %m", path);
			close_all(p, 6);
			return r;
		}
	int child[3] = {p[0], p[2], p[5]};
	r = spawn(argv, id, ns, child, pid, error);
	close(p[0]), close(p[2]), close(p[5]);
	if (r < 0) {
		close(p[1]), close(p[3]), close(p[4]);
		return r;
	}
	*out = p[1];
	*err = p[3];
	*ready = p[4];
	return 0;
}

/* -- the wait on the loop ------------------------------------------------ */

struct shim_logger_wait {
	struct urs_op poll; /* the ready pipe readable or hung up */
	struct urs_timer deadline;
	int fd;
	int err; /* 0 ready; the poll's error; -ETIMEDOUT */
	unsigned ms;
	shim_logger_done done;
	void *arg;
	char path[]; /* the program, for the message */
};

/* both the poll and the timer over: tell, free */
static void wait_end(struct shim_logger_wait *w)
{
	if (urs_op_busy(&w->poll) || urs_timer_busy(&w->deadline))
		return;
	char msg[PATH_MAX + 64] = "";
	if (w->err == -ETIMEDOUT)
		snprintf(msg, sizeof(msg), "logging binary %s: not ready after %u ms", w->path,
			 w->ms);
	else if (w->err)
		snprintf(msg, sizeof(msg), "logging binary %s: waiting for it: %s", w->path,
			 strerror(-w->err));
	close(w->fd);
	shim_logger_done done = w->done;
	void *arg = w->arg;
	int e = w->err;
	free(w);
	done(arg, e, e ? msg : NULL);
}

static void poll_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) flags;
	struct shim_logger_wait *w = container_of(op, struct shim_logger_wait, poll);
	if (res > 0) /* ready, even if the deadline was handled first in this turn */
		w->err = 0;
	else if (w->err == 0 && res < 0) /* -ECANCELED after the deadline keeps -ETIMEDOUT */
		w->err = res;
	if (urs_timer_busy(&w->deadline))
		urs_timer_cancel(loop, &w->deadline);
	wait_end(w);
}

static void deadline_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct shim_logger_wait *w = container_of(t, struct shim_logger_wait, deadline);
	if (res == 0 && urs_op_busy(&w->poll)) {
		w->err = -ETIMEDOUT;
		urs_cancel(loop, &w->poll);
	}
	wait_end(w);
}

int shim_logger_await(struct urs_loop *loop, int fd, const char *uri, unsigned ms,
		      shim_logger_done done, void *arg)
{
	/* the program, named without its query (its arguments may be secrets) */
	const char *path = uri_path(uri);
	size_t n = strcspn(path, "?");
	struct shim_logger_wait *w = calloc(1, sizeof(*w) + n + 1);
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	memcpy(w->path, path, n);
	w->fd = fd, w->ms = ms, w->done = done, w->arg = arg;
	io_uring_prep_poll_add(urs_op_sqe(&w->poll), fd, POLLIN);
	int r = urs_submit(loop, &w->poll, poll_cb);
	if (r == 0 &&
	    (r = urs_timer_start(loop, &w->deadline, (uint64_t) ms * 1000000, 0, deadline_cb)) < 0)
		urs_cancel(loop, &w->poll); /* poll_cb ends it, with the timer idle */
	if (r < 0 && !urs_op_busy(&w->poll)) {
		close(fd);
		free(w);
		return r;
	}
	if (r < 0)
		w->err = r;
	return 0;
}
