/*
 * shim/host.c — see host.h. The listener (a multishot accept on the loop),
 * one recvmsg per connection for the hand-over and its fds, the checks
 * (root peer, the supervisor of record, a container of ours), the
 * adoption (actors/hosted.h) and the one-line answer.
 */
#include "shim/host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "actors/control.h"
#include "actors/hosted.h"
#include "host/fdpass.h"
#include "host/proc.h"
#include "host/state.h"
#include "runtime/common.h"

#define HOST_MAX_CONNS 64

struct host_conn {
	struct urs_op op;
	struct shim_host *h;
	int fd;
	struct urs_handover msg;
	struct iovec iov;
	struct msghdr mh;
	char cbuf[CMSG_SPACE(URS_HANDOVER_FDS * sizeof(int))];
};

/* the fds that came with @c's message, -1 for the rest */
/* the peer is root and the supervisor ursa's record names for @id, a
 * container of ours not yet gone; its record's cgroup in *@cg */
static int check_peer(struct host_conn *c, struct shim_ctr **ctr, char **cg, struct urs_err *err)
{
	struct shim_host *h = c->h;
	const char *id = c->msg.id;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
		return urs_err_set(err, -errno, "hand-over: peer credentials: %m");
	if (cr.uid != geteuid())
		return urs_err_set(err, -EPERM, "hand-over: peer uid %u is not ours", cr.uid);
	if (!memchr(id, 0, sizeof(c->msg.id)) || !(*ctr = shim_task_find(h->t, id)) || (*ctr)->gone)
		return urs_err_set(err, -ENOENT, "hand-over: not a container of this shim");
	struct urs_state st;
	uint64_t start = 0;
	int r = urs_state_read(h->root, id, &st, err);
	if (r < 0)
		return r;
	/* the process the record names, not one that got its pid since */
	if (st.sup_pid != cr.pid || urs_proc_start_time(cr.pid, &start) < 0 ||
	    start != st.sup_start || st.pid != c->msg.init_pid)
		r = urs_err_set(err, -EPERM, "hand-over: %s: pid %d is not its supervisor", id,
				(int) cr.pid);
	else if (st.cgroup && !(*cg = strdup(st.cgroup)))
		r = urs_err_set(err, -ENOMEM, "out of memory");
	urs_state_clear(&st);
	return r;
}

/* the fds are what they claim: a pidfd of the record's init, and the
 * listener bound at ROOT/ID/ctl.sock */
static int check_fds(struct host_conn *c, const int fds[URS_HANDOVER_FDS], struct urs_err *err)
{
	const char *id = c->msg.id;
	if (fds[0] < 0 || urs_pidfd_pid(fds[0]) != c->msg.init_pid)
		return urs_err_set(err, -EPERM, "hand-over: %s: no pidfd of its init", id);
	char want[sizeof(((struct sockaddr_un *) 0)->sun_path)];
	int r = urs_state_path(want, sizeof(want), c->h->root, id, CTL_NAME);
	struct sockaddr_un sa = {0};
	socklen_t sl = sizeof(sa);
	int listening = 0;
	socklen_t il = sizeof(listening);
	if (r < 0 || fds[1] < 0 || getsockname(fds[1], (struct sockaddr *) &sa, &sl) < 0 ||
	    sa.sun_family != AF_UNIX || strncmp(sa.sun_path, want, sizeof(sa.sun_path)) ||
	    getsockopt(fds[1], SOL_SOCKET, SO_ACCEPTCONN, &listening, &il) < 0 || !listening)
		return urs_err_set(err, -EPERM, "hand-over: %s: not its control socket", id);
	return 0;
}

static void conn_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct host_conn *c = container_of(op, struct host_conn, op);
	struct urs_err err = {{0}};
	int fds[URS_HANDOVER_FDS];
	urs_take_fds(&c->mh, fds, URS_HANDOVER_FDS);
	struct shim_ctr *ctr = NULL;
	_cleanup_free_ char *cg = NULL;
	int r = res == (int32_t) sizeof(c->msg) && !(c->mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
			? check_peer(c, &ctr, &cg, &err)
			: urs_err_set(&err, -EPROTO, "hand-over: a short or truncated message");
	if (r == 0)
		r = check_fds(c, fds, &err);
	if (r == 0) {
		struct urs_adopt o = {
			.h = &c->msg, .root = c->h->root, .bundle = ctr->bundle, .cgroup = cg};
		memcpy(o.fds, fds, sizeof(fds));
		r = urs_sup_adopt(c->h->loop, &o, &err); /* takes the fds */
	} else {
		for (int i = 0; i < URS_HANDOVER_FDS; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	if (r == 0)
		c->h->taken++;
	else if (res != -ECANCELED) { /* (not the shim closing) to containerd's
				       * log: why a pod keeps a supervisor */
		c->h->refused++;
		fprintf(stderr, "containerd-shim-ursa-v2: %s (its supervisor serves it)\n",
			err.msg);
	}
	/* one line, taken at once: a SEQPACKET socket that was just written to */
	const char *ans = r == 0 ? "ok" : err.msg;
	if (send(c->fd, ans, strlen(ans), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the supervisor is gone: what it handed over is ours or closed */
	}
	close(c->fd);
	c->h->conns--;
	free(c);
}

static void accept_arm(struct shim_host *h);

static void accept_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	struct shim_host *h = container_of(op, struct shim_host, accept_op);
	/* a bounded number at once: a peer that connects and never sends pins
	 * one of them, not the shim's memory */
	struct host_conn *c = res >= 0 && h->conns < HOST_MAX_CONNS ? calloc(1, sizeof(*c)) : NULL;
	if (c) {
		h->conns++;
		c->h = h;
		c->fd = res;
		c->iov = (struct iovec){.iov_base = &c->msg, .iov_len = sizeof(c->msg)};
		c->mh = (struct msghdr){.msg_iov = &c->iov,
					.msg_iovlen = 1,
					.msg_control = c->cbuf,
					.msg_controllen = sizeof(c->cbuf)};
		io_uring_prep_recvmsg(urs_op_sqe(&c->op), c->fd, &c->mh, MSG_CMSG_CLOEXEC);
		c->op.flags = URS_OPF_WEAK;
		urs_submit(loop, &c->op, conn_cb);
	} else if (res >= 0) {
		close(res);
	}
	if (res == -EMFILE || res == -ENFILE || res == -ENOMEM) {
		/* out of fds: stop taking sandboxes (their supervisors serve them
		 * themselves) rather than spin on an accept that fails */
		shim_host_close(h);
		return;
	}
	if (!(flags & IORING_CQE_F_MORE) && res != -ECANCELED && h->fd >= 0)
		accept_arm(h);
}

static void accept_arm(struct shim_host *h)
{
	io_uring_prep_multishot_accept(urs_op_sqe(&h->accept_op), h->fd, NULL, NULL, SOCK_CLOEXEC);
	h->accept_op.flags = URS_OPF_WEAK;
	urs_submit(h->loop, &h->accept_op, accept_cb);
}

int shim_host_init(struct shim_host *h, struct urs_loop *loop, struct shim_task *t,
		   const char *root, const char *path)
{
	*h = (struct shim_host){.loop = loop, .t = t, .root = root, .fd = -1};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >= (int) sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path); /* a killed shim's of this group */
	if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(fd, 64) < 0) {
		int r = -errno;
		close(fd);
		unlink(path);
		return r;
	}
	h->fd = fd;
	snprintf(h->path, sizeof(h->path), "%s", path);
	accept_arm(h);
	return 0;
}

void shim_host_close(struct shim_host *h)
{
	if (h->fd < 0)
		return;
	unlink(h->path);
	if (urs_op_busy(&h->accept_op))
		urs_cancel(h->loop, &h->accept_op);
	close(h->fd); /* the cancelled accept's completion does not re-arm */
	h->fd = -1;
}
