/*
 * runtime/relay.c — splice relay between two stream sockets (see relay.h).
 *
 * Per direction d (src = fd[d], dst = fd[!d]) the pump alternates
 *   splice(src -> pipe)  while the pipe has room and src may have data,
 *   splice(pipe -> dst)  while the pipe has data and dst may take it,
 * until neither moves. EAGAIN from the first with an empty pipe means src
 * is dry (wait for POLLIN); with bytes in the pipe it may mean the pipe's
 * slots are full (partial pages), so src stays "ready" and is retried after
 * the pipe drains. EAGAIN from the second means dst is full (wait for
 * POLLOUT). The multishot poll reports wakeups, not levels: a flag is only
 * cleared on EAGAIN, after the poll was armed, so no wakeup is lost. The
 * single-shot fallback arms only for what is awaited (a level-triggered poll
 * on a readable socket whose data we cannot take yet would spin).
 */
#include "runtime/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/common.h"

#define RELAY_BUDGET	 16 /* pump rounds per direction per turn */
#define RELAY_PIPE_DEFLT (1u << 20)
#define SPLICE_FL	 (SPLICE_F_NONBLOCK | SPLICE_F_MOVE)
#define EV_IN		 (POLLIN | POLLERR | POLLHUP)
#define EV_OUT		 (POLLOUT | POLLERR | POLLHUP)

/* the kernel refused a multishot poll once (before 5.13): single-shot from now on */
static bool poll_multi_refused;

static void poll0_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);
static void poll1_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);
static void kick_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

static void set_rst(int fd)
{
	struct linger l = {1, 0};
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

static int make_pipe(struct urs_relay_dir *d, uint32_t want, uint32_t *got)
{
	int p[2];
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	int sz = fcntl(p[1], F_SETPIPE_SZ, (int) want);
	if (sz < 0)
		sz = fcntl(p[1], F_GETPIPE_SZ);
	if (sz <= 0)
		sz = 65536;
	d->pr = p[0];
	d->pw = p[1];
	if (!*got || (uint32_t) sz < *got)
		*got = (uint32_t) sz;
	return 0;
}

/* what fd[i] is awaited for (single-shot mode) */
static uint32_t want_mask(const struct urs_relay *r, int i)
{
	const struct urs_relay_dir *in = &r->dir[i], *out = &r->dir[!i];
	uint32_t m = 0;
	if (!in->eof && !in->in_ready)
		m |= POLLIN;
	if (!out->shut && out->inpipe && !out->out_ready)
		m |= POLLOUT;
	return m;
}

static void arm_poll(struct urs_relay *r, int i)
{
	struct urs_op *op = &r->poll[i];
	if (urs_op_busy(op))
		return;
	struct io_uring_sqe *sqe = urs_op_sqe(op);
	if (r->multishot) {
		io_uring_prep_poll_multishot(sqe, r->fd[i], POLLIN | POLLOUT);
	} else {
		uint32_t m = want_mask(r, i);
		if (!m)
			return;
		io_uring_prep_poll_add(sqe, r->fd[i], m);
	}
	r->ops++;
	urs_submit(r->loop, op, i ? poll1_cb : poll0_cb);
}

static void arm_kick(struct urs_relay *r)
{
	if (urs_op_busy(&r->kick))
		return;
	io_uring_prep_nop(urs_op_sqe(&r->kick));
	r->ops++;
	urs_submit(r->loop, &r->kick, kick_cb);
}

/* Close everything; @done runs from the last op's completion (the kick
 * guarantees there is one). */
static void finish(struct urs_relay *r, int res, bool reset)
{
	if (r->closing)
		return;
	r->closing = true;
	r->result = res;
	if (reset) {
		set_rst(r->fd[0]);
		set_rst(r->fd[1]);
	}
	for (int i = 0; i < 2; i++) {
		if (urs_op_busy(&r->poll[i]))
			urs_cancel(r->loop, &r->poll[i]);
		urs_closep(&r->fd[i]);
		urs_closep(&r->dir[i].pr);
		urs_closep(&r->dir[i].pw);
	}
	arm_kick(r);
}

/* 1: budget spent with work left; 0: would block or done; -errno: failed */
static int pump(struct urs_relay *r, int d)
{
	struct urs_relay_dir *x = &r->dir[d];
	int src = r->fd[d], dst = r->fd[!d];
	for (int round = 0; round < RELAY_BUDGET; round++) {
		bool moved = false;
		if (!x->eof && x->in_ready && x->inpipe < r->pipe_size) {
			ssize_t n =
				splice(src, NULL, x->pw, NULL, r->pipe_size - x->inpipe, SPLICE_FL);
			if (n > 0) {
				x->inpipe += (uint32_t) n;
				moved = true;
			} else if (n == 0) {
				x->eof = true;
			} else if (errno == EAGAIN) {
				if (!x->inpipe)
					x->in_ready = false;
			} else if (errno != EINTR) {
				return -errno;
			}
		}
		if (x->inpipe && x->out_ready) {
			ssize_t n = splice(x->pr, NULL, dst, NULL, x->inpipe, SPLICE_FL);
			if (n > 0) {
				x->inpipe -= (uint32_t) n;
				r->bytes[d] += (uint64_t) n;
				moved = true;
			} else if (n < 0 && errno == EAGAIN) {
				x->out_ready = false;
			} else if (n < 0 && errno != EINTR) {
				return -errno;
			}
		}
		if (x->eof && !x->inpipe && !x->shut) {
			x->shut = true;
			if (shutdown(dst, SHUT_WR) < 0 && errno != ENOTCONN)
				return -errno;
		}
		if (!moved)
			return 0;
	}
	return 1;
}

static void run(struct urs_relay *r)
{
	bool again = false;
	for (int d = 0; d < 2; d++) {
		int p = pump(r, d);
		if (p < 0) {
			finish(r, p == -EPIPE ? -ECONNRESET : p, true);
			return;
		}
		again |= p > 0;
	}
	if (r->dir[0].shut && r->dir[1].shut) {
		finish(r, 0, false);
		return;
	}
	if (again)
		arm_kick(r);
	if (!r->multishot) {
		arm_poll(r, 0);
		arm_poll(r, 1);
	}
}

/* the last completion of a closing relay hands it back */
static void maybe_done(struct urs_relay *r)
{
	if (r->closing && !r->ops)
		r->done(r, r->result);
}

static void poll_ev(struct urs_relay *r, int i, int32_t res, uint32_t flags)
{
	bool final = !(flags & IORING_CQE_F_MORE);
	if (final)
		r->ops--;
	if (r->closing) {
		maybe_done(r);
		return;
	}
	if (res > 0 && (res & POLLERR)) {
		int e = 0;
		socklen_t el = sizeof(e);
		if (getsockopt(r->fd[i], SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e) {
			finish(r, e == EPIPE ? -ECONNRESET : -e, true);
			maybe_done(r);
			return;
		}
	}
	if (res > 0) {
		if (res & EV_IN)
			r->dir[i].in_ready = true;
		if (res & EV_OUT)
			r->dir[!i].out_ready = true;
	} else if (res == -EINVAL && final && (r->multishot || poll_multi_refused)) {
		/* no multishot poll here: single-shot from now on */
		poll_multi_refused = true;
		r->multishot = false;
	} else if (res < 0 && res != -ECANCELED && res != -EINTR && res != -EAGAIN) {
		finish(r, res, true);
		maybe_done(r);
		return;
	}
	run(r);
	if (!r->closing && final && r->multishot)
		arm_poll(r, i);
	maybe_done(r);
}

static void poll0_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	poll_ev(container_of(op, struct urs_relay, poll[0]), 0, res, flags);
}

static void poll1_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	poll_ev(container_of(op, struct urs_relay, poll[1]), 1, res, flags);
}

static void kick_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) res;
	(void) flags;
	struct urs_relay *r = container_of(op, struct urs_relay, kick);
	r->ops--;
	if (!r->closing)
		run(r);
	maybe_done(r);
}

int urs_relay_start(struct urs_relay *r, struct urs_loop *loop, int a, int b,
		    const struct urs_relay_opts *o, urs_relay_done_fn done)
{
	memset(r, 0, sizeof(*r));
	r->loop = loop;
	r->done = done;
	r->fd[0] = a;
	r->fd[1] = b;
	for (int d = 0; d < 2; d++) {
		r->dir[d].pr = r->dir[d].pw = -1;
		r->dir[d].in_ready = r->dir[d].out_ready = true;
	}
	uint32_t want = o && o->pipe_size ? o->pipe_size : RELAY_PIPE_DEFLT;
	for (int d = 0; d < 2; d++) {
		int e = make_pipe(&r->dir[d], want, &r->pipe_size);
		if (e < 0) {
			for (int k = 0; k < 2; k++) {
				urs_closep(&r->dir[k].pr);
				urs_closep(&r->dir[k].pw);
			}
			return e;
		}
	}
	r->multishot = !poll_multi_refused && !(o && o->no_multishot);
	if (r->multishot) {
		arm_poll(r, 0);
		arm_poll(r, 1);
	}
	/* the first pump runs from the loop, like every later one */
	arm_kick(r);
	return 0;
}

void urs_relay_close(struct urs_relay *r, bool reset)
{
	finish(r, -ECANCELED, reset);
}
