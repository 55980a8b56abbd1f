/*
 * shim/reaper.c — children and their exits (shim/reaper.h): a signalfd
 * read on the loop, waitpid(-1, WNOHANG) until none is left, each exit to
 * its watch or into the ring of unclaimed ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/common.h"
#include "shim/reaper.h"

static void reap_all(struct shim_reaper *r)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0)
			return; /* 0: none exited; -ECHILD: no children */
		struct timespec at;
		clock_gettime(CLOCK_REALTIME, &at);
		r->seq++;
		uint32_t i = 0;
		while (i < r->n && r->w[i].pid != pid)
			i++;
		if (i == r->n) {
			r->unclaimed[r->seq % SHIM_UNCLAIMED] = (struct shim_exit){
				.seq = r->seq, .pid = pid, .status = status, .at = at};
			continue;
		}
		struct shim_watch w = r->w[i];
		r->w[i] = r->w[--r->n];
		w.cb(w.arg, pid, status, &at);
	}
}

static void sig_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) flags;
	struct shim_reaper *r = container_of(op, struct shim_reaper, op);
	if (res == -ECANCELED || r->fd < 0)
		return;
	reap_all(r);
	io_uring_prep_read(urs_op_sqe(&r->op), r->fd, &r->si, sizeof(r->si), 0);
	r->op.flags = URS_OPF_WEAK;
	urs_submit(loop, &r->op, sig_cb);
}

int shim_reaper_init(struct shim_reaper *r, struct urs_loop *loop)
{
	memset(r, 0, sizeof(*r));
	r->loop = loop;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	r->fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->fd < 0)
		return -errno;
	/* a child that exited before the signalfd existed raised no read */
	sig_cb(loop, &r->op, 0, 0);
	return 0;
}

int shim_reaper_watch(struct shim_reaper *r, pid_t pid, uint64_t since, shim_exit_cb cb, void *arg,
		      int *status, struct timespec *at)
{
	for (uint32_t i = 0; i < SHIM_UNCLAIMED; i++) {
		struct shim_exit *e = &r->unclaimed[i];
		if (e->pid == pid && e->seq > since) {
			*status = e->status;
			*at = e->at;
			e->pid = 0;
			return 1;
		}
	}
	void *arr = r->w;
	if (urs_grow(&arr, &r->cap, r->n, sizeof(*r->w), 8) < 0)
		return -ENOMEM;
	r->w = arr;
	r->w[r->n++] = (struct shim_watch){.pid = pid, .cb = cb, .arg = arg};
	return 0;
}

void shim_reaper_unwatch(struct shim_reaper *r, pid_t pid)
{
	for (uint32_t i = 0; i < r->n; i++)
		if (r->w[i].pid == pid) {
			r->w[i] = r->w[--r->n];
			return;
		}
}

void shim_reaper_fini(struct shim_reaper *r)
{
	if (r->fd >= 0) {
		if (urs_op_busy(&r->op))
			urs_cancel(r->loop, &r->op);
		close(r->fd);
		r->fd = -1;
	}
	free(r->w);
	r->w = NULL;
	r->n = r->cap = 0;
}
