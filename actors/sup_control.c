/*
 * actors/sup_control.c — the server side of the control protocol (the
 * client: actors/control.c): ROOT/ID/ctl.sock, accepted on the loop, one
 * request and its reply per connection, within CTL_IDLE_NS: start, ping,
 * metrics, checkpoint DIR, guard, exec-wait. With it the watch on the
 * init's exec that start sets up, and start and exec-wait wait for.
 */
#include "actors/sup_int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "actors/checkpointer.h"
#include "actors/control.h"
#include "actors/metrics.h"
#include "actors/netstack.h"
#include "host/cgroup.h"
#include "host/init.h"
#include "runtime/loop.h"
#include "runtime/timer.h"

#define CTL_MAX_CONNS 32
/* metrics replies: a buffer of CTL_REPLY_MIN, doubled while the exposition
 * does not fit, up to CTL_REPLY_MAX (16 gofer volumes need ~200 KiB) */
#define CTL_REPLY_MIN (64u << 10)
#define CTL_REPLY_MAX (2u << 20)
#define CTL_IDLE_NS   (2ull * 1000000000ull) /* a request and its reply, at most */
#define CTL_RETRY_NS  (100ull * 1000000ull)  /* accept again after running out of fds */

/* One control connection: one request, one reply, at most CTL_IDLE_NS of
 * it. Freed when both its op and its timer have had their final callback. */
struct ctl_conn {
	struct urs_op op;
	struct urs_timer idle;
	struct sup *s;
	int fd;
	bool replying;
	bool waiting;		      /* a checkpoint save runs for it: not freed */
	bool guard;		      /* "guard": held open by a checkpoint (ctl_guard) */
	char *reply;		      /* large replies (metrics), or NULL */
	struct urs_ckpt_req *ckreq;   /* "checkpoint DIR", or NULL */
	struct ctl_conn *next_waiter; /* "exec-wait", "start": the next one waiting */
	bool start;		      /* a "start" waiting: "ok" even when CTL_IDLE_NS ends it */
	char buf[4352];		      /* a request: "checkpoint " + a path */
};

static void conn_release(struct ctl_conn *c)
{
	if (urs_op_busy(&c->op) || urs_timer_busy(&c->idle) || c->waiting)
		return;
	struct sup *s = c->s;
	close(c->fd);
	s->conns--;
	free(c->reply);
	free(c->ckreq);
	free(c);
	sup_part_ended(s);
}

static bool exec_wait_expired(struct ctl_conn *c);

static void conn_idle_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct ctl_conn *c = container_of(t, struct ctl_conn, idle);
	if (res == 0 && exec_wait_expired(c))
		return; /* released once its reply is sent */
	if (res == 0 && urs_op_busy(&c->op))
		urs_cancel(loop, &c->op); /* too slow: its op ends with -ECANCELED */
	conn_release(c);
}

static void conn_reply(struct ctl_conn *c, const char *text)
{
	snprintf(c->buf, sizeof(c->buf), "%s", text);
	c->replying = true;
	io_uring_prep_send(urs_op_sqe(&c->op), c->fd, c->buf, strlen(c->buf) + 1, MSG_NOSIGNAL);
	urs_submit(c->s->lp, &c->op, sup_conn_cb);
}

/* the checkpointer wrote DIR/supervisor.img (or failed): the reply */
static void ckpt_done(void *ctx, int res, const char *msg)
{
	struct ctl_conn *c = ctx;
	char text[256];
	c->waiting = false;
	if (res < 0)
		snprintf(text, sizeof(text), "error: %s", msg && *msg ? msg : strerror(-res));
	conn_reply(c, res < 0 ? text : "ok");
}

/* "checkpoint DIR[\tKEYFILE]": the supervisor's state into DIR, sealed
 * under the host's checkpoint key or KEYFILE (actors/checkpointer.h) */
static void ctl_checkpoint(struct ctl_conn *c, const char *arg)
{
	struct sup *s = c->s;
	const char *tab = strchr(arg, '\t');
	size_t dlen = tab ? (size_t) (tab - arg) : strlen(arg);
	const char *key = tab ? tab + 1 : "";
	if (*arg != '/' || dlen >= sizeof(c->ckreq->dir) || (tab && *key != '/') ||
	    strlen(key) >= sizeof(c->ckreq->key_file)) {
		conn_reply(c, "error: checkpoint needs an absolute directory (and key file)");
		return;
	}
	c->ckreq = calloc(1, sizeof(*c->ckreq));
	if (!c->ckreq) {
		conn_reply(c, "error: out of memory");
		return;
	}
	snprintf(c->ckreq->dir, sizeof(c->ckreq->dir), "%.*s", (int) dlen, arg);
	snprintf(c->ckreq->key_file, sizeof(c->ckreq->key_file), "%s", key);
	c->ckreq->done = ckpt_done;
	c->ckreq->ctx = c;
	int r = urs_checkpointer_save(&s->ckpt, c->ckreq);
	if (r < 0) {
		conn_reply(c, r == -EBUSY ? "error: a checkpoint is already being written"
					  : "error: cannot start the checkpointer");
		return;
	}
	c->waiting = true;
}

/* "guard": `ursa checkpoint` holds this connection open while it has the
 * sandbox frozen; when it closes (done, or killed: the kernel closes it)
 * the cgroup v2 freezer is thawed, so that no checkpoint can leave a
 * sandbox frozen (a thaw of a thawed or gone cgroup changes nothing; a
 * checkpoint starts only from "running"). No reply, no idle timeout. */
static void ctl_guard(struct ctl_conn *c)
{
	c->guard = true;
	if (urs_timer_busy(&c->idle))
		urs_timer_cancel(c->s->lp, &c->idle);
	io_uring_prep_recv(urs_op_sqe(&c->op), c->fd, c->buf, sizeof(c->buf), 0);
	urs_submit(c->s->lp, &c->op, sup_conn_cb);
}

/* the init's end of the sync socket closed (its exec, or its end): the
 * container holds nothing of ours any more; answer who waits */
static void exec_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) res, (void) flags;
	struct sup *s = container_of(op, struct sup, exec_op);
	s->execd = true;
	if (s->sync_fd >= 0)
		close(s->sync_fd);
	s->sync_fd = -1;
	sup_exec_waiters_answer(s);
	sup_part_ended(s);
}

/* the shim's in-process start, done (once; its time limit disarmed) */
void sup_execd_done(struct sup *s)
{
	urs_hosted_done done = s->execd_done;
	if (!done)
		return;
	s->execd_done = NULL;
	if (urs_timer_busy(&s->execd_wait))
		urs_timer_cancel(s->lp, &s->execd_wait);
	done(s->execd_arg, 0, NULL);
}

void sup_exec_waiters_answer(struct sup *s)
{
	if (s->execd || !s->started || s->exited)
		sup_execd_done(s);
	while (s->exec_waiters && (s->execd || !s->started || s->exited) &&
	       (!s->paging || s->exited)) {
		struct ctl_conn *c = s->exec_waiters;
		s->exec_waiters = c->next_waiter;
		c->waiting = false;
		conn_reply(c, "ok");
	}
}

/* START sent: watch for the exec (on the loop once it runs) */
void sup_watch_exec(struct sup *s)
{
	s->started = true;
	if (s->sync_fd < 0) {
		s->execd = true;
		return;
	}
	io_uring_prep_poll_add(urs_op_sqe(&s->exec_op), s->sync_fd, POLLRDHUP | POLLHUP);
	s->exec_op.flags = URS_OPF_WEAK;
	urs_submit(s->lp, &s->exec_op, exec_cb);
}

/* "exec-wait": `ursa checkpoint` of a container started a moment ago waits
 * until its init has exec'd (before, it holds our fds: the dump would
 * refuse them), and one restored lazily until its memory is in (the dump
 * refuses memory a userfaultfd supplies); at once when it has, or was never
 * ours to start */
static void ctl_exec_wait(struct ctl_conn *c)
{
	struct sup *s = c->s;
	if ((s->execd || !s->started || s->exited) && (!s->paging || s->exited)) {
		conn_reply(c, "ok");
		return;
	}
	/* the idle timer stays: a waiter gets an error after CTL_IDLE_NS (an
	 * init hung before its exec must not pin connections) */
	c->waiting = true;
	c->next_waiter = s->exec_waiters;
	s->exec_waiters = c;
}

/* an "exec-wait" whose init has not exec'd within CTL_IDLE_NS: out of the
 * waiters, answered with an error (the command goes on and says why if
 * the dump refuses); a "start" with "ok" (its go was given: startContainer
 * hooks may take longer than that) */
static bool exec_wait_expired(struct ctl_conn *c)
{
	struct sup *s = c->s;
	for (struct ctl_conn **p = &s->exec_waiters; *p; p = &(*p)->next_waiter)
		if (*p == c) {
			*p = c->next_waiter;
			c->waiting = false;
			conn_reply(c,
				   c->start ? "ok"
				   : s->paging
					   ? "error: the container's memory is still coming in "
					     "from its lazy restore"
					   : "error: the container's process has not started yet");
			return true;
		}
	return false;
}

/*
 * The exposition into c->reply (its own buffer, freed with the connection):
 * CTL_REPLY_MIN first, doubled and rendered again while it does not fit
 * (-ENOSPC), up to CTL_REPLY_MAX; the socket's send buffer is raised to
 * carry it as one packet. Returns its length (without the NUL).
 */
static int metrics_reply(struct sup *s, struct ctl_conn *c)
{
	for (size_t len = CTL_REPLY_MIN; len <= CTL_REPLY_MAX; len *= 2) {
		char *b = realloc(c->reply, len);
		if (!b)
			return -ENOMEM;
		c->reply = b;
		int n = urs_sup_metrics_render(s->a->id, s->lp, s->cg, s->sc, b, len);
		if (n >= 0 && s->net) {
			char labels[160];
			snprintf(labels, sizeof(labels), "sandbox=\"%s\"", s->a->id);
			int m = urs_netstack_render(s->net, labels, b + n, len - (size_t) n);
			n = m < 0 ? m : n + m;
		}
		if (n >= 0)
			n = sup_gofer_metrics(s, b, n, len);
		if (n == -ENOSPC)
			continue;
		if (n >= 0 && (size_t) n + 1 > CTL_REPLY_MIN) {
			/* a SEQPACKET packet must fit the send buffer */
			int sb = n + 1 + 4096;
			if (setsockopt(c->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sb, sizeof(sb)) < 0)
				setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
		}
		return n;
	}
	return -ENOSPC;
}

void sup_conn_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) flags;
	struct ctl_conn *c = container_of(op, struct ctl_conn, op);
	struct sup *s = c->s;
	if (c->guard) { /* its checkpoint ended, or died: the workload runs */
		if (s->cg && s->cg->h[URS_CG_V2].path[0])
			urs_cg2_freeze(s->cg->h[URS_CG_V2].path, false, NULL);
		conn_release(c);
		return;
	}
	if (c->replying || res <= 0) {
		if (urs_timer_busy(&c->idle))
			urs_timer_cancel(loop, &c->idle);
		conn_release(c);
		return;
	}
	c->buf[(size_t) res < sizeof(c->buf) ? (size_t) res : sizeof(c->buf) - 1] = 0;
	uint32_t req = !strcmp(c->buf, "start")		     ? URS_REQ_START
		       : !strcmp(c->buf, "ping")	     ? URS_REQ_PING
		       : !strcmp(c->buf, "metrics")	     ? URS_REQ_METRICS
		       : !strncmp(c->buf, "checkpoint ", 11) ? URS_REQ_CHECKPOINT
							     : URS_REQ_OTHER;
	urs_metric_add(&urs_m_ctl_requests, req, 1);
	if (req == URS_REQ_METRICS) {
		int n = metrics_reply(s, c);
		if (n < 0) {
			conn_reply(c, "error: metrics do not fit");
			return;
		}
		c->replying = true;
		io_uring_prep_send(urs_op_sqe(&c->op), c->fd, c->reply, (size_t) n + 1,
				   MSG_NOSIGNAL);
		urs_submit(s->lp, &c->op, sup_conn_cb);
		return;
	}
	if (req == URS_REQ_START) {
		if (s->exited || s->started || s->sync_fd < 0) {
			conn_reply(c, "error: container not in created state");
			return;
		}
		int r = urs_sync_send(s->sync_fd, URS_SYNC_START, 0, NULL);
		if (r < 0) {
			close(s->sync_fd);
			s->sync_fd = -1;
		}
		sup_watch_exec(s);
		if (r < 0) {
			conn_reply(c, "error: the container's init is gone");
			return;
		}
		/* the reply once the process is exec'd (or the init ended): a
		 * workload that `ursa start` has returned for is its own program,
		 * with its own signal handlers, and poststart hooks run after
		 * its exec, as the spec says */
		c->start = true;
		ctl_exec_wait(c);
		return;
	}
	if (!strcmp(c->buf, "exec-wait")) {
		ctl_exec_wait(c);
		return;
	}
	if (!strcmp(c->buf, "ping")) {
		conn_reply(c, "ok");
		return;
	}
	if (req == URS_REQ_CHECKPOINT) {
		ctl_checkpoint(c, c->buf + 11);
		return;
	}
	if (!strcmp(c->buf, "guard")) {
		ctl_guard(c);
		return;
	}
	conn_reply(c, "error: unknown request");
}

static void accept_retry_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	struct sup *s = container_of(t, struct sup, accept_retry);
	if (res == 0 && !s->exited)
		sup_accept_start(s); /* (the timer is no longer busy: armed) */
	else
		sup_part_ended(s);
}

void sup_accept_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	struct sup *s = container_of(op, struct sup, accept_op);
	if (res >= 0) {
		/* one request per connection; a bounded number at once, so idle
		 * clients cannot pin our fds (the socket is root-only anyway) */
		struct ctl_conn *c = s->conns < CTL_MAX_CONNS ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			close(res);
		} else {
			s->conns++;
			c->s = s;
			c->fd = res;
			io_uring_prep_recv(urs_op_sqe(&c->op), c->fd, c->buf, sizeof(c->buf) - 1,
					   0);
			urs_submit(loop, &c->op, sup_conn_cb);
			urs_timer_start(loop, &c->idle, CTL_IDLE_NS, 0, conn_idle_cb);
		}
	}
	bool starved = res == -EMFILE || res == -ENFILE || res == -ENOMEM || res == -ENOBUFS;
	if (flags & IORING_CQE_F_MORE)
		return;
	if (res != -ECANCELED && !s->exited) {
		/* out of fds or memory: again in a while, not at once (a spin,
		 * and in a host the spin of every sandbox it serves) */
		if (!starved ||
		    urs_timer_start(loop, &s->accept_retry, CTL_RETRY_NS, 0, accept_retry_cb) < 0)
			sup_accept_start(s);
	}
	/* (a host's: freed once every part has; a late hand-over: tried again,
	 * whether the accept ended or was armed anew) */
	sup_part_ended(s);
}

void sup_accept_start(struct sup *s)
{
	/* armed already, or to be by accept_retry: once (a second arming
	 * would rewrite an op in flight) */
	if (urs_op_busy(&s->accept_op) || urs_timer_busy(&s->accept_retry))
		return;
	io_uring_prep_multishot_accept(urs_op_sqe(&s->accept_op), s->ctl_fd, NULL, NULL,
				       SOCK_CLOEXEC);
	s->accept_op.flags = URS_OPF_WEAK;
	urs_submit(s->lp, &s->accept_op, sup_accept_cb);
}

int sup_ctl_listen(const char *dir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, CTL_NAME) >=
	    (int) sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}
