/*
 * actors/supervisor.c — see supervisor.h.
 *
 * Boot order matters for memory and latency: the fd table is prewarmed to 256
 * slots while we are single-threaded (io_uring's io-wq workers share it later,
 * and growing a shared table costs an RCU grace period — seed 004), the init is
 * cloned before the ring exists, and nothing is allocated for the loop until
 * the init is READY.
 */
#include "actors/control.h"
#include "actors/supervisor.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <malloc.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actors/checkpointer.h"
#include "actors/gofer/gofer.h"
#include "actors/gofer/thread.h"
#include "actors/metrics.h"
#include "actors/netstack.h"
#include "host/cgroup.h"
#include "ckpt/dump.h"
#include "ckpt/restore.h"
#include "host/oom.h"
#include "ckpt/tmpfs.h"
#include "ckpt/trace.h"
#include "host/fdpass.h"
#include "host/hooks.h"
#include "host/proc.h"
#include "host/state.h"
#include "runtime/loop.h"
#include "runtime/timer.h"
#include "supstate_types.h"

#define CTL_MAX_CONNS 32
/* metrics replies: a buffer of CTL_REPLY_MIN, doubled while the exposition
 * does not fit, up to CTL_REPLY_MAX (16 gofer volumes need ~200 KiB) */
#define CTL_REPLY_MIN (64u << 10)
#define CTL_REPLY_MAX (2u << 20)
#define CTL_IDLE_NS   (2ull * 1000000000ull) /* a request and its reply, at most */

static const int fwd_signals[] = {SIGHUP,  SIGINT,   SIGQUIT, SIGTERM, SIGUSR1,
				  SIGUSR2, SIGWINCH, SIGCONT, SIGALRM, SIGPWR};

struct sup {
	struct urs_loop loop;
	struct urs_sup_args *a;
	pid_t init_pid;
	int pidfd, sync_fd, ctl_fd, sig_fd;
	int status; /* wait status */
	bool exited;
	unsigned conns;	       /* open control connections (capped) */
	struct urs_cgroup *cg; /* for metrics, NULL without cgroups */
	int tapfd;	       /* the sandbox's NIC (networking on), else -1 */
	struct urs_net_cfg netcfg;
	struct urs_netstack *net;
	struct urs_op pid_op, accept_op, sig_op;
	struct urs_gofer *gofer[URS_GOFER_MAX]; /* mediated volumes (docs/gofer.md) */
	struct urs_gofer_thread *gt;		/* their thread: look at them under its lock */
	struct urs_gofer_budget gofer_fds;	/* their shared fd caps (docs/gofer.md "Inodes") */
	struct signalfd_siginfo si;
	/* checkpoint: the actor writing our state (actors/checkpointer.h), and
	 * at restore the state file read before anything was created */
	struct urs_checkpointer ckpt;
	struct urs_ckpt_src ckpt_src;
	struct urs_supstate saved;
	/* gofer volumes at restore (docs/gofer.md "Checkpoint and restore"):
	 * their saved state, by volume index; the restore runs after they
	 * serve (late), on a thread */
	struct urs_gofer_state gsaved[URS_GOFER_MAX];
	uint64_t gfuse_dev[URS_GOFER_MAX]; /* saved FUSE st_dev, 0 = none */
	bool gsaved_any, late;
	const char *gdest[URS_GOFER_MAX], *gsrc[URS_GOFER_MAX];
	/* the init's exec: after START its end of the sync socket (close on
	 * exec) closes once every task of the container has exec'd or closed
	 * what it inherited from us; "exec-wait" requests wait for that */
	bool started, execd;
	struct urs_op exec_op;
	struct ctl_conn *exec_waiters;
};

/* Append the gofer volumes' ursa_gofer_* series to the @n bytes at @buf
 * (@len in all). */
static int gofer_metrics(struct sup *s, char *buf, int n, size_t len);

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
	struct ctl_conn *next_waiter; /* "exec-wait": the next one waiting */
	char buf[4352];		      /* a request: "checkpoint " + a path */
};

static void conn_release(struct ctl_conn *c)
{
	if (urs_op_busy(&c->op) || urs_timer_busy(&c->idle) || c->waiting)
		return;
	close(c->fd);
	c->s->conns--;
	free(c->reply);
	free(c->ckreq);
	free(c);
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

static void remove_made(struct urs_sup_args *a);

/* URS_SUP_CGROUP_MADE: the parent learns the cgroup before anything can
 * kill us (ignored by a parent that has gone: then remove_made does it) */
static void progress_cgroup(struct urs_sup_args *a, const char *cg)
{
	static struct urs_sup_report r;
	r.code = URS_SUP_CGROUP_MADE;
	snprintf(r.cgroup, sizeof(r.cgroup), "%s", cg);
	if (a->report_fd >= 0)
		send(a->report_fd, &r, sizeof(r), MSG_NOSIGNAL);
}

static __attribute__((noinline)) void report(struct urs_sup_args *a, int code, pid_t pid,
					     const char *cg, const char *msg)
{
	struct urs_sup_report r = {.code = code, .init_pid = pid};
	if (cg)
		snprintf(r.cgroup, sizeof(r.cgroup), "%s", cg);
	if (msg)
		snprintf(r.msg, sizeof(r.msg), "%s", msg);
	if (a->report_fd >= 0) {
		ssize_t n = send(a->report_fd, &r, sizeof(r), MSG_NOSIGNAL);
		if (code == 0)
			return; /* kept: the parent says when its record is written */
		if (n < 0)	/* a failure, and nobody to clean up after it */
			remove_made(a);
		close(a->report_fd);
		a->report_fd = -1;
	}
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

/* ---- the init's exit ---- */

/* Has the init ended? Then its status is in s->status. It is not our child
 * (CLONE_PARENT): its reaper gets the status; we read it from its pidfd. */
static bool init_ended(struct sup *s)
{
	int st;
	int r = urs_pidfd_exit_status(s->pidfd, s->init_pid, &st);
	if (r == -EAGAIN)
		return false;
	s->status = r < 0 ? 255 << 8 : st; /* gone, status unknown: 255 */
	s->exited = true;
	return true;
}

/* The init killed during setup, and dead (not reaped: its reaper does
 * that) before we report, so that its cgroups can go. */
static void kill_init(struct sup *s)
{
	if (s->pidfd < 0)
		return;
	urs_pidfd_signal(s->pidfd, SIGKILL);
	struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
}

static void pid_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) op;
	(void) flags;
	struct sup *s = container_of(loop, struct sup, loop);
	if (res < 0 && res != -ECANCELED)
		return;
	if (init_ended(s))
		urs_loop_stop(loop);
}

/* ---- forwarded signals ---- */

static void sig_arm(struct sup *s);

static void sig_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct sup *s = container_of(op, struct sup, sig_op);
	if (res == (int32_t) sizeof(s->si) && !s->exited) {
		urs_pidfd_signal(s->pidfd, (int) s->si.ssi_signo);
		urs_metric_add(&urs_m_signals, 0, 1);
	}
	if (res != -ECANCELED)
		sig_arm(s);
}

static void sig_arm(struct sup *s)
{
	io_uring_prep_read(urs_op_sqe(&s->sig_op), s->sig_fd, &s->si, sizeof(s->si), 0);
	s->sig_op.flags = URS_OPF_WEAK;
	urs_submit(&s->loop, &s->sig_op, sig_cb);
}

/* ---- control socket ---- */

static void conn_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

static void conn_reply(struct ctl_conn *c, const char *text)
{
	snprintf(c->buf, sizeof(c->buf), "%s", text);
	c->replying = true;
	io_uring_prep_send(urs_op_sqe(&c->op), c->fd, c->buf, strlen(c->buf) + 1, MSG_NOSIGNAL);
	urs_submit(&c->s->loop, &c->op, conn_cb);
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

static struct urs_net *ckpt_engine(void *ctx)
{
	struct sup *s = ctx;
	return s->net ? urs_netstack_engine(s->net) : NULL;
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
		urs_timer_cancel(&c->s->loop, &c->idle);
	io_uring_prep_recv(urs_op_sqe(&c->op), c->fd, c->buf, sizeof(c->buf), 0);
	urs_submit(&c->s->loop, &c->op, conn_cb);
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
	while (s->exec_waiters) {
		struct ctl_conn *c = s->exec_waiters;
		s->exec_waiters = c->next_waiter;
		c->waiting = false;
		conn_reply(c, "ok");
	}
}

/* START sent: watch for the exec (on the loop once it runs) */
static void watch_exec(struct sup *s)
{
	s->started = true;
	if (s->sync_fd < 0) {
		s->execd = true;
		return;
	}
	io_uring_prep_poll_add(urs_op_sqe(&s->exec_op), s->sync_fd, POLLRDHUP | POLLHUP);
	s->exec_op.flags = URS_OPF_WEAK;
	urs_submit(&s->loop, &s->exec_op, exec_cb);
}

/* "exec-wait": `ursa checkpoint` of a container started a moment ago waits
 * until its init has exec'd (before, it holds our fds: the dump would
 * refuse them); at once when it has, or was never ours to start */
static void ctl_exec_wait(struct ctl_conn *c)
{
	struct sup *s = c->s;
	if (s->execd || !s->started || s->exited) {
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
 * the dump refuses) */
static bool exec_wait_expired(struct ctl_conn *c)
{
	struct sup *s = c->s;
	for (struct ctl_conn **p = &s->exec_waiters; *p; p = &(*p)->next_waiter)
		if (*p == c) {
			*p = c->next_waiter;
			c->waiting = false;
			conn_reply(c, "error: the container's process has not started yet");
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
		int n = urs_sup_metrics_render(s->a->id, &s->loop, s->cg, b, len);
		if (n >= 0 && s->net) {
			char labels[160];
			snprintf(labels, sizeof(labels), "sandbox=\"%s\"", s->a->id);
			int m = urs_netstack_render(s->net, labels, b + n, len - (size_t) n);
			n = m < 0 ? m : n + m;
		}
		if (n >= 0)
			n = gofer_metrics(s, b, n, len);
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

static void conn_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
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
		urs_submit(&s->loop, &c->op, conn_cb);
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
		watch_exec(s);
		conn_reply(c, r < 0 ? "error: the container's init is gone" : "ok");
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

static void accept_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
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
			urs_submit(loop, &c->op, conn_cb);
			urs_timer_start(loop, &c->idle, CTL_IDLE_NS, 0, conn_idle_cb);
		}
	}
	if (!(flags & IORING_CQE_F_MORE) && res != -ECANCELED && !s->exited) {
		io_uring_prep_multishot_accept(urs_op_sqe(&s->accept_op), s->ctl_fd, NULL, NULL,
					       SOCK_CLOEXEC);
		s->accept_op.flags = URS_OPF_WEAK;
		urs_submit(loop, &s->accept_op, accept_cb);
	}
}

static int ctl_listen(const char *dir)
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

/*
 * linux.seccomp.listenerPath: hand the notification fd to the agent, with
 * the container process state (runtime-spec "containerProcessState") as the
 * message, over SCM_RIGHTS.
 */
static int notify_agent(struct urs_sup_args *a, pid_t pid, int listener, char *msg, size_t len)
{
	const struct urs_seccomp *sc = a->launch.spec->lnx->seccomp;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (!sc->listener_path || snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
					   sc->listener_path) >= (int) sizeof(sa.sun_path)) {
		snprintf(msg, len, "linux.seccomp.listenerPath: missing or too long");
		return -EINVAL;
	}
	char state[2048], body[4096];
	if (urs_oci_state_json(state, sizeof(state), a->id, "creating", pid, a->bundle, NULL) < 0)
		state[0] = 0;
	int n = snprintf(body, sizeof(body),
			 "{\"ociVersion\":\"1.0.2\",\"fds\":[\"seccompFd\"],\"pid\":%d,"
			 "\"metadata\":\"%s\",\"state\":%s}",
			 (int) pid, sc->listener_metadata ? sc->listener_metadata : "",
			 state[0] ? state : "{}");
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		snprintf(msg, len, "linux.seccomp.listenerPath %s: connect: %s", sa.sun_path,
			 strerror(errno));
		return -errno;
	}
	int r = urs_send_fd(fd, body, (size_t) n, listener);
	if (r < 0) {
		snprintf(msg, len, "linux.seccomp.listenerPath %s: sending the listener: %s",
			 sa.sun_path, strerror(-r));
		return r;
	}
	return 0;
}

/* ---- boot ---- */

/* linux.resources (spec) -> the cgroup module's resources */
/* memory, pids, cpu: the scalars, applied or refused naming the field */
static void res_scalars(struct urs_cg_resources *r, const struct urs_resources *res)
{
	if (res->memory.has_limit)
		r->mem_limit = res->memory.limit;
	if (res->memory.has_reservation)
		r->mem_reservation = res->memory.reservation;
	if (res->memory.has_swap)
		r->mem_swap = res->memory.swap;
	if (res->memory.has_swappiness)
		r->mem_swappiness = (int64_t) res->memory.swappiness;
	r->disable_oom_killer = res->memory.disable_oom_killer;
	if (res->pids.has_limit)
		r->pids_limit = res->pids.limit ? res->pids.limit : -1;
	if (res->cpu.has_shares)
		r->cpu_shares = res->cpu.shares;
	if (res->cpu.has_quota)
		r->cpu_quota = res->cpu.quota;
	if (res->cpu.has_period)
		r->cpu_period = res->cpu.period;
	r->cpus = res->cpu.cpus;
	r->mems = res->cpu.mems;
	/* the rest: applied, or refused naming the field (never dropped) */
	if (res->memory.has_kernel)
		r->mem_kernel = res->memory.kernel;
	if (res->memory.has_kernel_tcp)
		r->mem_kernel_tcp = res->memory.kernel_tcp;
	r->has_cpu_burst = res->cpu.has_burst;
	r->cpu_burst = res->cpu.burst;
	r->has_cpu_idle = res->cpu.has_idle;
	r->cpu_idle = res->cpu.idle;
	r->cpu_rt_runtime = res->cpu.has_rt_runtime ? res->cpu.rt_runtime : 0;
	r->cpu_rt_period = res->cpu.has_rt_period ? res->cpu.rt_period : 0;
	r->blkio_weight = res->block_io.has_weight ? res->block_io.weight : 0;
	r->blkio_leaf_weight = res->block_io.has_leaf_weight ? res->block_io.leaf_weight : 0;
	r->has_net_classid = res->network.has_class_id;
	r->net_classid = res->network.class_id;
	r->n_net_prio = res->network.n_priorities;
	r->rdma = res->has_rdma;
}

/* blockIO's device lists into @bd (@cap entries): weightDevice twice
 * (weight, leafWeight), then the throttle lists */
static int res_blkio(struct urs_cg_resources *r, const struct urs_resources *res,
		     struct urs_cg_blkio_dev *bd, size_t cap, struct urs_err *err)
{
	size_t nb = 0;
	for (int l = 0; l < 2 + URS_CG_THR__N; l++) {
		const struct urs_blkio_device *src =
			l < 2 ? res->block_io.weight_devices : res->block_io.throttle[l - 2];
		size_t n = l < 2 ? res->block_io.n_weight_devices : res->block_io.n_throttle[l - 2];
		size_t *dn = l == 0   ? &r->n_blkio_weight_dev
			     : l == 1 ? &r->n_blkio_leaf_weight_dev
				      : &r->n_blkio_throttle[l - 2];
		*(l == 0   ? &r->blkio_weight_dev
		  : l == 1 ? &r->blkio_leaf_weight_dev
			   : &r->blkio_throttle[l - 2]) = bd + nb;
		for (size_t i = 0; i < n; i++) {
			uint64_t v = l == 0   ? src[i].weight
				     : l == 1 ? src[i].leaf_weight
					      : src[i].rate;
			if (l < 2 && !v)
				continue; /* a weight of 0 is "not set" (runc) */
			if (nb == cap)
				return urs_err_set(err, -E2BIG,
						   "linux.resources.blockIO: more than %zu devices",
						   cap);
			bd[nb++] = (struct urs_cg_blkio_dev){src[i].major, src[i].minor, v};
			(*dn)++;
		}
	}
	return 0;
}

/* the device rules, into *@out (the caller frees it): the spec's (a new
 * sandbox always gets a policy, like runc: deny all first when the spec has
 * no rule, or the v1 devices cgroup inherits "allow all" from its parent),
 * what every container gets (runc's AllowedDevices), and the nodes
 * linux.devices asks ursa to create (a privileged container: every node of
 * the host's /dev) */
static int res_devices(struct urs_cg_resources *r, const struct urs_resources *res,
		       const struct urs_linux *created, struct urs_cg_device **out,
		       struct urs_err *err)
{
	static const struct urs_cg_device dflt[] = {
		{true, 'c', -1, -1, "m"}, {true, 'b', -1, -1, "m"},    {true, 'c', 1, 3, "rwm"},
		{true, 'c', 1, 8, "rwm"}, {true, 'c', 1, 7, "rwm"},    {true, 'c', 5, 0, "rwm"},
		{true, 'c', 1, 5, "rwm"}, {true, 'c', 1, 9, "rwm"},    {true, 'c', 136, -1, "rwm"},
		{true, 'c', 5, 2, "rwm"}, {true, 'c', 10, 200, "rwm"},
	};
	size_t nd = 0, want = res->n_devices + 1 + URS_ARRAY_SIZE(dflt);
	for (size_t i = 0; created && i < created->n_devices; i++)
		want += created->devices[i].type != 'p';
	struct urs_cg_device *devs = *out = calloc(want, sizeof(*devs));
	if (!devs)
		return urs_err_set(err, -ENOMEM, "linux.resources.devices: out of memory");
	bool any = res->n_devices > 0 || created;
	if (created && !res->n_devices)
		devs[nd++] = (struct urs_cg_device){false, 'a', -1, -1, "rwm"};
	for (size_t i = 0; i < res->n_devices; i++, nd++) {
		devs[nd] = (struct urs_cg_device){.allow = res->devices[i].allow,
						  .type = res->devices[i].type,
						  .major = res->devices[i].major,
						  .minor = res->devices[i].minor};
		memcpy(devs[nd].access, res->devices[i].access, sizeof(devs[nd].access));
	}
	for (size_t i = 0; any && i < URS_ARRAY_SIZE(dflt); i++)
		devs[nd++] = dflt[i];
	for (size_t i = 0; created && i < created->n_devices; i++) {
		const struct urs_device *d = &created->devices[i];
		if (d->type == 'p')
			continue;
		devs[nd++] = (struct urs_cg_device){true, d->type == 'b' ? 'b' : 'c', d->major,
						    d->minor, "rwm"};
	}
	r->devices = devs;
	r->n_devices = nd;
	return 0;
}

int urs_resources_apply(struct urs_cgroup *cg, const struct urs_resources *res,
			const struct urs_linux *created, struct urs_err *err)
{
	struct urs_cg_resources r = URS_CG_RESOURCES_INIT;
	_cleanup_free_ struct urs_cg_device *devs = NULL;
	struct urs_cg_kv kv[64];
	struct urs_cg_blkio_dev bd[256];
	struct urs_cg_hugepage hp[16];
	res_scalars(&r, res);
	int e = res_blkio(&r, res, bd, URS_ARRAY_SIZE(bd), err);
	if (e < 0)
		return e;
	if (res->n_hugepage_limits > URS_ARRAY_SIZE(hp))
		return urs_err_set(err, -E2BIG, "linux.resources.hugepageLimits: more than %zu",
				   URS_ARRAY_SIZE(hp));
	for (size_t i = 0; i < res->n_hugepage_limits; i++)
		hp[i] = (struct urs_cg_hugepage){res->hugepage_limits[i].page_size,
						 res->hugepage_limits[i].limit};
	r.hugepages = hp;
	r.n_hugepages = res->n_hugepage_limits;
	if (created && created->has_intel_rdt)
		return urs_err_set(err, -EOPNOTSUPP,
				   "linux.intelRdt: not supported by ursa (Intel RDT / resctrl)");
	if ((e = res_devices(&r, res, created, &devs, err)) < 0)
		return e;
	if (res->n_unified > URS_ARRAY_SIZE(kv))
		return urs_err_set(err, -E2BIG, "linux.resources.unified: more than %zu keys",
				   URS_ARRAY_SIZE(kv));
	for (size_t i = 0; i < res->n_unified; i++)
		kv[i] = (struct urs_cg_kv){res->unified[i].key, res->unified[i].value};
	r.unified = kv;
	r.n_unified = res->n_unified;
	return urs_cg_apply(cg, &r, err);
}

#define apply_resources urs_resources_apply

/* Close every fd from 3 up except those in @keep (-1 entries ignored). */
static void close_all_but(int *keep, size_t n)
{
	for (size_t i = 1; i < n; i++) /* insertion sort: n is tiny */
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned from = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int) from)
			continue;
		if ((unsigned) keep[i] > from)
			syscall(SYS_close_range, from, (unsigned) keep[i] - 1, 0);
		from = (unsigned) keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0u, 0);
}

static void prewarm_fd_table(void)
{
	/* Grow the table to 256 slots now, while single-threaded; keep every fd
	 * we open below 256 afterwards. */
	int fd = fcntl(0, F_DUPFD_CLOEXEC, 255);
	if (fd < 0)
		fd = fcntl(open("/dev/null", O_RDONLY | O_CLOEXEC), F_DUPFD_CLOEXEC, 255);
	if (fd >= 0)
		close(fd);
}

static int write_id_map(pid_t pid, const char *file, const struct urs_idmap *m, size_t n)
{
	char path[64], buf[4096];
	size_t o = 0;
	for (size_t i = 0; i < n && o < sizeof(buf); i++)
		o += (size_t) snprintf(buf + o, sizeof(buf) - o, "%u %u %u\n", m[i].container_id,
				       m[i].host_id, m[i].size);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return write(fd, buf, o) == (ssize_t) o ? 0 : -errno;
}

/* ---- gofer volumes (docs/gofer.md) ----
 * Before the clone: /dev/fuse and the host directory for each "ursa-gofer"
 * mount (the init mounts the former and closes both). After the loop
 * exists: one gofer per volume on it. At exit: stopped before the loop. */

static int gofer_open(struct urs_sup_args *a, char *msg, size_t len)
{
	const struct urs_spec *spec = a->launch.spec;
	struct urs_launch *L = &a->launch;
	L->n_gofer = 0;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct urs_mount *m = &spec->mounts[i];
		if (!m->gofer)
			continue;
		if (L->n_gofer >= URS_GOFER_MAX) {
			snprintf(msg, len, "mounts[%zu]: too many \"ursa-gofer\" volumes", i);
			return -E2BIG;
		}
		int dir = open(m->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0) {
			int r = -errno;
			snprintf(msg, len, "mounts[%zu]: gofer volume source %s: %s", i, m->source,
				 strerror(-r));
			return r;
		}
		int fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
		if (fuse < 0) {
			int r = -errno;
			close(dir);
			snprintf(msg, len, "mounts[%zu]: gofer volume: opening /dev/fuse: %s", i,
				 strerror(-r));
			return r;
		}
		L->gofer_dir[L->n_gofer] = dir;
		L->gofer_fuse[L->n_gofer] = fuse;
		L->n_gofer++;
	}
	return 0;
}

static void gofer_close_fds(struct urs_launch *L)
{
	for (int i = 0; i < L->n_gofer; i++) {
		if (L->gofer_dir[i] >= 0)
			close(L->gofer_dir[i]);
		if (L->gofer_fuse[i] >= 0)
			close(L->gofer_fuse[i]);
		L->gofer_dir[i] = L->gofer_fuse[i] = -1;
	}
	L->n_gofer = 0;
}

/* fds all the gofer volumes may hold at once, besides 3 per volume (fuse,
 * root, mount fds): cached inode fds (split), open files, pinned inodes */
#define GOFER_FDS_CACHE	 64u
#define GOFER_FDS_OPEN	 96u
#define GOFER_FDS_PINNED 64u

/* READY given: serve each volume, on the gofer thread (actors/
 * gofer/thread.h). A volume that cannot be served would hang every access
 * to it: the sandbox is stopped instead. */
static int gofer_start(struct sup *s)
{
	struct urs_launch *L = &s->a->launch;
	if (!L->n_gofer)
		return 0;
	/* the supervisor's fd table stays small whatever the sandbox does:
	 * open files and pinned inodes share caps, the fd caches split 64 */
	s->gofer_fds = (struct urs_gofer_budget){.max_open = GOFER_FDS_OPEN,
						 .max_pinned = GOFER_FDS_PINNED};
	uint32_t cache = GOFER_FDS_CACHE / (uint32_t) L->n_gofer;
	struct urs_gofer_vol v[URS_GOFER_MAX];
	const char *dest[URS_GOFER_MAX];
	for (int i = 0, k = 0; i < L->n_gofer; i++) {
		while (!s->a->launch.spec->mounts[k].gofer)
			k++;
		const struct urs_mount *m = &s->a->launch.spec->mounts[k++];
		v[i] = (struct urs_gofer_vol){.fuse_fd = L->gofer_fuse[i],
					      .root_fd = L->gofer_dir[i],
					      .opts = {.rdonly = (m->flags & MS_RDONLY) != 0,
						       .quota_bytes = m->gofer_quota_bytes,
						       .quota_inodes = m->gofer_quota_inodes,
						       .fd_cache = cache < 4 ? 4 : cache,
						       .budget = &s->gofer_fds}};
		dest[i] = m->destination;
		s->gdest[i] = m->destination; /* checkpoint/restore */
		s->gsrc[i] = m->source;
		L->gofer_fuse[i] = -1; /* the gofer's (closed by it, even on failure) */
	}
	int failed;
	int r = urs_gofer_thread_start(v, L->n_gofer, s->gofer, &s->gt, &failed);
	for (int i = 0; i < L->n_gofer; i++) { /* the roots: the gofers keep copies */
		close(L->gofer_dir[i]);
		L->gofer_dir[i] = -1;
	}
	if (r < 0)
		fprintf(stderr, "ursa: gofer volume%s%s: %s\n", failed >= 0 ? " " : "s",
			failed >= 0 ? dest[failed] : "", strerror(-r));
	return r;
}

static void gofer_stop(struct sup *s)
{
	urs_gofer_thread_stop(s->gt, s->gofer);
	s->gt = NULL;
}

/* The volumes in the order of s->gofer[]: their destinations label them. */
static int gofer_metrics(struct sup *s, char *buf, int n, size_t len)
{
	const char *vols[URS_GOFER_MAX];
	uint32_t nv = 0;
	const struct urs_spec *sp = s->a->launch.spec;
	for (size_t k = 0; sp && k < sp->n_mounts && nv < URS_GOFER_MAX; k++)
		if (sp->mounts[k].gofer)
			vols[nv++] = sp->mounts[k].destination;
	if (!nv)
		return n;
	char labels[160];
	snprintf(labels, sizeof(labels), "sandbox=\"%s\"", s->a->id);
	if (s->gt)
		urs_gofer_thread_lock(s->gt);
	int m = urs_gofer_metrics_render(s->gofer, vols, nv, labels, buf + n, len - (size_t) n);
	if (s->gt)
		urs_gofer_thread_unlock(s->gt);
	return m < 0 ? m : n + m;
}

/* ---- end of gofer volumes */

/* ---- gofer volumes through checkpoint/restore (docs/gofer.md
 * "Checkpoint and restore", actors/gofer/state.c) */

/* Restore, before anything is created: each saved volume must be a gofer
 * volume of this configuration on the same host directory (st_dev, st_ino
 * of its root), else the restore is refused. */
static int gofer_saved_check(struct sup *s, struct urs_err *err)
{
	const struct sst_root *st = s->saved.root;
	const struct urs_spec *spec = s->a->launch.spec;
	for (uint32_t v = 0; st && v < st->volumes_len; v++) {
		const struct sst_volume *sv = &st->volumes[v];
		int idx = 0;
		const struct urs_mount *m = NULL;
		for (size_t k = 0; spec && k < spec->n_mounts; k++) {
			if (!spec->mounts[k].gofer)
				continue;
			if (sv->destination &&
			    !strcmp(spec->mounts[k].destination, sv->destination)) {
				m = &spec->mounts[k];
				break;
			}
			idx++;
		}
		if (!m || idx >= URS_GOFER_MAX)
			return urs_err_set(err, -ENOENT,
					   "restore: gofer volume %s of the checkpoint is not in "
					   "this configuration",
					   sv->destination ? sv->destination : "?");
		int r = urs_gofer_state_from_sst(sv, &s->gsaved[idx]);
		if (r < 0)
			return urs_err_set(err, r, "restore: out of memory");
		s->gfuse_dev[idx] = sv->fuse_dev;
		s->gsaved_any = true;
		_cleanup_close_ int dir = open(m->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
		r = dir < 0 ? -errno : urs_gofer_state_check_root(&s->gsaved[idx], dir);
		if (r == -ESTALE)
			return urs_err_set(err, r,
					   "restore: gofer volume %s: host directory %s is not the "
					   "one checkpointed (%s; device/inode of its root differ: "
					   "replaced?)",
					   m->destination, m->source,
					   sv->host_path ? sv->host_path : "?");
		if (r < 0)
			return urs_err_set(err, r, "restore: gofer volume %s: %s: %s",
					   m->destination, m->source, strerror(-r));
	}
	return 0;
}

/* Devices the files of a restore may have moved to (ckpt_restore_opts.dev_map):
 * gofer volumes, tmpfs mounts, the writable layer of `ursa do --id`. */
#define SUP_DEV_MAP (URS_GOFER_MAX + 40)

/*
 * Before the processes come back: the files of the sandbox's tmpfs mounts
 * (ckpt/tmpfs.h), each mount's old device mapped to its new one; and
 * for `ursa do --id`, whose writable layer the CLI unpacked into the bundle
 * (ckpt/layer.c), the device its files showed (DIR/layer.dev: a file and
 * its old st_dev) to the one the same file shows now. Their files are new:
 * any inode.
 */
static int join_v2_now(void *ctx);

static int restore_files(struct sup *s, struct ckpt_dev_map *map, uint32_t *n, struct urs_err *err)
{
	struct urs_sup_args *a = s->a;
	/* the tmpfs contents we write are charged to our memory cgroup */
	int r = ckpt_tmpfs_has_content(a->restore_dir) ? join_v2_now(NULL) : 0;
	if (r < 0)
		return urs_err_set(err, r, "restore: joining the sandbox's cgroup: %s",
				   strerror(-r));
	r = ckpt_tmpfs_restore(s->init_pid, a->restore_dir, map, SUP_DEV_MAP - 1, n, err);
	if (r < 0)
		return r;
	char p[PATH_MAX + 16], line[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/layer.dev", a->restore_dir);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t len = read(fd, line, sizeof(line) - 1);
	line[len > 0 ? len : 0] = 0;
	char *tab = strchr(line, '\t'), *nl = strchr(line, '\n'), *end;
	unsigned long long old = strtoull(line, &end, 16);
	if (!tab || !nl || end != tab || tab[1] != '/')
		return urs_err_set(err, -EINVAL, "restore: %s: malformed", p);
	*nl = 0;
	snprintf(p, sizeof(p), "/proc/%d/root", (int) s->init_pid);
	_cleanup_close_ int rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int f =
		rootfd < 0 ? -1 : (int) syscall(SYS_openat2, rootfd, tab + 1, &how, sizeof(how));
	struct stat st;
	if (f < 0 || fstat(f, &st) < 0)
		return urs_err_set(err, -errno, "restore: the writable layer's %s: %m", tab + 1);
	map[(*n)++] = (struct ckpt_dev_map){.from = old, .to = st.st_dev, .any_ino = true};
	return 0;
}

struct late_restore {
	struct sup *s;
	uint8_t key[URS_CKPT_KEY_LEN]; /* ro.key */
	const char *dir;
	pid_t init;
	struct ckpt_restore_opts ro;
	struct ckpt_dev_map *map; /* ro.dev_map, filled on by restore_files */
	uint32_t nmap;
	struct urs_err err;
	int r, efd;
	struct urs_op op;
	uint64_t val;
	bool done;
};

static void *late_restore_thread(void *p)
{
	struct late_restore *lr = p;
	ckpt_trace("sup: restoring (gofer volumes served)");
	/* here too: reaching a tmpfs may cross a volume, answered by the loop */
	lr->r = restore_files(lr->s, lr->map, &lr->nmap, &lr->err);
	lr->ro.n_dev_map = lr->nmap;
	if (lr->r >= 0)
		lr->r = ckpt_restore_ex(lr->dir, &lr->ro, &(pid_t){0}, NULL, &lr->err);
	uint64_t one = 1;
	if (write(lr->efd, &one, sizeof(one)) < 0) {
		/* the eventfd cannot fail this way */
	}
	return NULL;
}

static void late_done_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) res, (void) flags;
	container_of(op, struct late_restore, op)->done = true;
}

/*
 * ursa restore with gofer volumes: the restored processes re-open their
 * files and working directories on the volumes by path, through the NEW
 * FUSE mounts, which only answer once their gofers serve on our loop. So
 * the restore runs here, after gofer_start, on a thread of its own (the
 * ptrace tracer) while this thread serves the loop; READY is reported
 * after it. Files saved on the old FUSE device are accepted on the new one
 * (dev_map; inodes are the host's, checked).
 */
static int late_restore(struct sup *s, struct urs_err *err)
{
	struct urs_sup_args *a = s->a;
	static struct late_restore lr;
	static struct ckpt_dev_map map[SUP_DEV_MAP];
	uint32_t nmap = 0;
	for (int i = 0; i < URS_GOFER_MAX; i++) {
		if (!s->gdest[i] || !s->gfuse_dev[i])
			continue;
		uint64_t now = urs_gofer_mount_dev(s->init_pid, s->gdest[i]);
		if (now)
			map[nmap++] = (struct ckpt_dev_map){.from = s->gfuse_dev[i], .to = now};
	}
	lr = (struct late_restore){
		.s = s, .dir = a->restore_dir, .init = s->init_pid, .map = map, .nmap = nmap};
	lr.ro = (struct ckpt_restore_opts){.policy = a->restore_policy,
					   .puppet = s->init_pid,
					   .dev_map = map,
					   .n_dev_map = nmap,
					   .before_charged = join_v2_now};
	int r = urs_ckpt_key(NULL, false, lr.key, err);
	if (r < 0)
		return r;
	lr.ro.key = lr.key;
	lr.efd = eventfd(0, EFD_CLOEXEC);
	if (lr.efd < 0) {
		explicit_bzero(lr.key, sizeof(lr.key));
		return urs_err_set(err, -errno, "restore: eventfd: %m");
	}
	pthread_t th;
	r = pthread_create(&th, NULL, late_restore_thread, &lr);
	if (r) {
		explicit_bzero(lr.key, sizeof(lr.key));
		close(lr.efd);
		return urs_err_set(err, -r, "restore: thread: %s", strerror(r));
	}
	io_uring_prep_read(urs_op_sqe(&lr.op), lr.efd, &lr.val, sizeof(lr.val), 0);
	urs_submit(&s->loop, &lr.op, late_done_cb);
	while (!lr.done)
		if (urs_loop_run_once(&s->loop, true) < 0)
			break;
	pthread_join(th, NULL);
	close(lr.efd);
	explicit_bzero(lr.key, sizeof(lr.key));
	if (lr.r < 0)
		return urs_err_set(err, lr.r, "%s", lr.err.msg);
	return 0;
}

/* Restored: each volume continues from its saved state (checks; quota
 * accounting goes on from the host's usage, a difference is said). */
static void gofer_import(struct sup *s)
{
	if (s->gt)
		urs_gofer_thread_lock(s->gt);
	for (int i = 0; i < URS_GOFER_MAX; i++) {
		if (!s->gofer[i] || !s->gdest[i] || !s->gsaved_any)
			continue;
		char msg[256];
		int r = urs_gofer_state_import(s->gofer[i], &s->gsaved[i], msg, sizeof(msg));
		if (r < 0 || msg[0])
			fprintf(stderr, "ursa: restore: gofer volume %s: %s\n", s->gdest[i], msg);
	}
	if (s->gt)
		urs_gofer_thread_unlock(s->gt);
	for (int i = 0; i < URS_GOFER_MAX; i++)
		urs_gofer_state_free(&s->gsaved[i]);
}

/* ---- end of gofer volumes through checkpoint/restore */

/* ursa restore: DIR/supervisor.img, verified with this host's key; none is
 * fine (older image) */
static int supstate_load(struct sup *s, struct urs_err *err)
{
	const struct urs_sup_args *a = s->a;
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", a->restore_dir, URS_SUPSTATE_FILE);
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	uint8_t key[URS_CKPT_KEY_LEN];
	int r = urs_ckpt_key(NULL, false, key, err);
	if (r < 0) {
		char m[sizeof(err->msg)];
		snprintf(m, sizeof(m), "%s", err->msg);
		return urs_err_set(err, r, "supervisor state %s refused: %s", path, m);
	}
	r = urs_supstate_read(a->restore_dir, key, sizeof(key), &s->saved, err);
	explicit_bzero(key, sizeof(key));
	return r == -ENOENT ? 0 : r;
}

/* ---- memory at boot (bench/RESULTS.md, "Memory") ----
 * We are a fork of the CLI: its freed heap and the stack pages its deep
 * calls touched (config parsing, seccomp compilation, PATH_MAX buffers) are
 * ours too, private and dirty, for the sandbox's whole life. Once the boot
 * is done they are dead: give them back before the loop starts. */

#define SUP_STACK_KEEP (1u << 10) /* below our frame: the loop's own calls */

/* the lowest address of the [stack] mapping, or 0 */
static uintptr_t stack_low(void)
{
	_cleanup_close_ int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	char buf[512];
	size_t have = 0;
	while (fd >= 0) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return 0;
		have += (size_t) n;
		buf[have] = 0;
		char *line = buf, *nl;
		for (; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = 0;
			if (nl - line > 7 && !strcmp(nl - 7, "[stack]"))
				return (uintptr_t) strtoull(line, NULL, 16);
		}
		have = strlen(line); /* a partial line, carried over */
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* no line is that long: skip it */
	}
	return 0;
}

static __attribute__((noinline)) void release_boot_memory(void)
{
	malloc_trim(0); /* free heap pages, the CLI's included */
	char here;
	uintptr_t pg = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t top = ((uintptr_t) &here - SUP_STACK_KEEP) & ~(pg - 1);
	uintptr_t low = stack_low();
	/* dead frames only: everything below our caller's, less a margin;
	 * they fault in again, zeroed, if a deeper call wants them */
	if (low && low < top)
		madvise((void *) low, top - low, MADV_DONTNEED);
}

/* ---- end of memory at boot */

/*
 * Unified hosts keep the controllers (memory, pids...) in the v2 hierarchy,
 * so there the supervisor joins the sandbox's v2 cgroup too and is charged
 * with it, as before. But a cgroup.procs write takes the kernel's global
 * migration lock (an RCU grace period when idle; host/cgroup.c) that no
 * `ursa run` or restore should wait for: we join on a thread, once the
 * sandbox runs (until then our boot memory is charged where the caller's
 * is), retrying a few times. Except before a restore writes data the
 * kernel charges to the writer (tmpfs contents, shared memory): then we
 * join first, synchronously (join_v2_now), or the workload's memory would
 * be charged outside its cgroup on every restore. Hybrid and legacy hosts
 * have the controllers in v1, entered at start; there we stay out of the
 * v2 cgroup, so that checkpoint's freezer stops the workload only.
 */
static struct {
	char procs[URS_CG_PATH_MAX + 16]; /* the v2 cgroup's cgroup.procs */
	bool needed, joined;
	bool later_off; /* no join once running (we could not lower our OOM score) */
	/* we could not lower our OOM score: back to the caller's v1 memory
	 * cgroup once running ("The supervisor and the OOM killer") */
	struct urs_cgroup *mem_home;
} j2;

static int join_v2_write(void)
{
	char pid[24];
	snprintf(pid, sizeof(pid), "%d", (int) getpid());
	int fd = open(j2.procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write(fd, pid, strlen(pid)) < 0 ? -errno : 0;
	close(fd);
	if (r == 0)
		j2.joined = true;
	return r;
}

/* ckpt_restore_opts.before_charged, and before tmpfs contents */
static int join_v2_now(void *ctx)
{
	(void) ctx;
	/* later_off (unified, no CAP_SYS_RESOURCE): we stay out for good, so
	 * the restore's writes are charged to the caller, not the tenant (the
	 * price of not being the tenant's OOM victim; docs/sandbox.md) */
	return !j2.needed || j2.joined || j2.later_off ? 0 : join_v2_write();
}

static void *join_v2_thread(void *arg)
{
	(void) arg;
	for (int i = 0; i < 5 && join_v2_write() < 0; i++)
		usleep(20000 << i); /* 20 ms .. 320 ms */
	return NULL;
}

static void join_v2_setup(const struct urs_cgroup *cg, bool init_placed)
{
	/* URSA_CG_JOIN_V2=1: as if unified (tests of this path on hybrid hosts) */
	const char *force = getenv("URSA_CG_JOIN_V2");
	j2.needed = init_placed && (cg->mode == URS_CG_UNIFIED || (force && !strcmp(force, "1"))) &&
		    cg->h[URS_CG_V2].path[0];
	if (j2.needed)
		snprintf(j2.procs, sizeof(j2.procs), "%s/cgroup.procs", cg->h[URS_CG_V2].path);
}

/* Without CAP_SYS_RESOURCE we cannot lower our OOM score, and in the
 * sandbox's memory cgroup a tenant could make us its OOM killer's victim:
 * once the sandbox runs (a restore's writes charged to it first) we go
 * back to the caller's memory cgroup (v1; on unified hosts we do not join
 * the v2 cgroup once running). */
static void oom_fallback(struct urs_cgroup *cg, struct urs_cgroup *home)
{
	if (cg->mode == URS_CG_UNIFIED)
		j2.later_off = true;
	else if (home->mode && home->h[URS_CG_MEMORY].path[0] && cg->h[URS_CG_MEMORY].path[0] &&
		 cg->h[URS_CG_MEMORY].alias < 0)
		j2.mem_home = home;
}

/* back to the caller's memory cgroup (oom_fallback): the main thread's
 * self-migration, without the kernel's global migration lock (a
 * cgroup.procs write would hold every fork and exit on the host for an
 * RCU grace period: +8 ms on a restore); the main thread owns the address
 * space, which is what v1 charges and the OOM killer looks at */
static void memory_leave(void)
{
	struct urs_err err = {{0}};
	int r = getpid() == (pid_t) syscall(SYS_gettid)
			? urs_cg_enter_thread_v1(j2.mem_home, 1u << URS_CG_MEMORY, &err)
			: urs_cg_enter_only(j2.mem_home, getpid(), 1u << URS_CG_MEMORY, &err);
	if (r < 0)
		fprintf(stderr,
			"ursa: warning: supervisor: leaving the sandbox's memory cgroup: %s\n",
			err.msg);
	j2.mem_home = NULL;
}

/* The join's thread opens and closes a file: started only once boot has
 * closed the fds it does not keep (close_all_but) and the loop has its
 * ring. Started earlier, its open file could be closed under it by
 * close_all_but, the ring made with the same number, and the thread's
 * close() then closed the ring: the supervisor's next turn failed with
 * EBADF and it wound down with its sandbox (seen: 1 checkpoint in 15
 * right after `run -d` under URSA_CG_JOIN_V2=1). */
static void join_v2_start(void)
{
	if (!j2.needed || j2.joined || j2.later_off)
		return;
	pthread_attr_t at;
	pthread_t th;
	if (pthread_attr_init(&at))
		return;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 64 << 10);
	int e = pthread_create(&th, &at, join_v2_thread, NULL);
	if (e) /* we stay where we are, charged to the caller: say so */
		fprintf(stderr, "ursa: warning: supervisor: joining %s: a thread: %s\n", j2.procs,
			strerror(e));
	pthread_attr_destroy(&at);
}

/* READY to the `ursa` command, then its word that the record (and the pid
 * file) is written: 0, or -EPIPE if it died before saying so. */
static int ready_recorded(struct sup *s, const char *cgstr)
{
	struct urs_sup_args *a = s->a;
	report(a, 0, s->init_pid, cgstr, NULL);
	if (j2.mem_home)
		memory_leave();
	char ack;
	ssize_t n;
	do
		n = recv(a->report_fd, &ack, 1, 0);
	while (n < 0 && errno == EINTR);
	close(a->report_fd);
	a->report_fd = -1;
	return n == 1 ? 0 : -EPIPE;
}

/* The sandbox's cgroups once made, and the caller's own (v1), for
 * remove_made(). */
static struct urs_cgroup *made_cg, *made_home;

/* The `ursa` command died while it made this sandbox (killed, say): nobody
 * has a record of it or could find it, or will remove what it made: the
 * cgroups (we leave them first: no lock, as we came) and ROOT/ID. */
static void remove_made(struct urs_sup_args *a)
{
	fprintf(stderr, "ursa: %s: the command creating it is gone: removed\n",
		a->id ? a->id : "sandbox");
	if (made_cg) {
		if (made_home && made_home->mode && urs_cg_enter_self_v1(made_home, NULL) == -EBUSY)
			urs_cg_enter(made_home, getpid(), NULL); /* threads of ours: the slow way */
		urs_cg_destroy(made_cg, NULL);
	}
	if (a->state_dir) {
		char root[4096];
		snprintf(root, sizeof(root), "%s", a->state_dir);
		char *slash = strrchr(root, '/');
		if (slash && slash != root) {
			*slash = 0;
			urs_state_remove(root, slash + 1);
		}
	}
}

/* READY was not taken: the init goes too. */
static void abandon(struct sup *s)
{
	kill_init(s);
	remove_made(s->a);
}

/* The supervisor is none of the container's tasks (runc's count, which
 * podman's --pids-limit and stats assume): on hosts with a v1 pids cgroup
 * it leaves that one for its caller's once the init is born there (a
 * self-migration: no global lock), and only then is the limit written, so
 * that pids.max 1 holds the init alone. Its memory stays charged to the
 * sandbox (docs/sandbox.md). Unified hosts: the limit was written with the
 * rest, and the supervisor joins the sandbox's v2 cgroup later. */
static int pids_leave(struct urs_cgroup *cg, struct urs_cgroup *home, const struct urs_spec *spec,
		      struct urs_err *err)
{
	if (cg->mode == URS_CG_UNIFIED || !cg->h[URS_CG_PIDS].path[0])
		return 0;
	if (home->mode && home->h[URS_CG_PIDS].path[0] && cg->h[URS_CG_PIDS].alias < 0) {
		int r = urs_cg_enter_self_v1_only(home, 1u << URS_CG_PIDS, err);
		if (r < 0 && r != -EBUSY) /* several threads: we entered the old way */
			return r;
	}
	const struct urs_resources *res =
		spec->lnx && spec->lnx->has_resources ? &spec->lnx->resources : NULL;
	if (!res || !res->pids.has_limit)
		return 0;
	struct urs_cg_resources r = URS_CG_RESOURCES_INIT;
	r.pids_limit = res->pids.limit ? res->pids.limit : -1;
	return urs_cg_apply(cg, &r, err);
}

/* The init, born in the v2 cgroup @cgfd (>= 0: CLONE_INTO_CGROUP, which
 * needs no global migration lock; host/cgroup.c). Where the kernel refuses
 * the flag we join the v2 cgroup ourselves (the slow way) and clone
 * without it. CLONE_PARENT: the init is our caller's child, not ours (the
 * `ursa` command that forked us; once it exits, its subreaper's: the shim,
 * conmon), which reaps it and gets its status, as with runc. We watch it
 * through its pidfd (docs/sandbox.md, "Processes"). */
static pid_t clone_init(struct urs_sup_args *a, uint64_t flags, int *pidfd, int cgfd, int sup_end,
			struct urs_cgroup *cg, bool *into, struct urs_err *err)
{
	*into = cgfd >= 0;
	struct clone_args ca = {
		.flags = flags | CLONE_PIDFD | CLONE_PARENT | (cgfd >= 0 ? CLONE_INTO_CGROUP : 0),
		.pidfd = (uint64_t) (uintptr_t) pidfd,
		.exit_signal = 0, /* CLONE_PARENT: our own exit signal (SIGCHLD) */
		.cgroup = cgfd >= 0 ? (uint64_t) cgfd : 0,
	};
	pid_t pid = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && cgfd >= 0 && (errno == EINVAL || errno == E2BIG || errno == EOPNOTSUPP)) {
		int r = urs_cg_enter_v2(cg, getpid(), err);
		if (r < 0)
			return r;
		ca.flags &= ~(uint64_t) CLONE_INTO_CGROUP;
		ca.cgroup = 0;
		*into = false;
		pid = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
	}
	if (pid == 0) {
		/* our ends of the sync and report sockets are ours alone: the
		 * init outlives us (it is not our child), and holding them it
		 * would never see us gone, nor let the command see it */
		close(sup_end);
		if (a->report_fd >= 0)
			close(a->report_fd);
		int r = urs_init_run(&a->launch);
		_exit(r == -EPIPE ? 0 : 127);
	}
	return pid < 0 ? urs_err_set(err, -errno, "clone3: %s", strerror(errno)) : pid;
}

/* ---- the boot sequence: urs_supervisor_main and its steps -------------------
 * Each step reports its own failure to the `ursa` command and returns
 * nonzero: fail_msg before the init exists, fail_kill after (the init is
 * killed; the caller reaps it). */

static struct urs_cgroup sup_cg, sup_home; /* the sandbox's; the caller's own (v1) */
static char sup_cgstr[URS_CG_STRING_MAX];
static char sup_msg[600];

static int fail_msg(struct sup *s, int r)
{
	report(s->a, r, 0, sup_cgstr, sup_msg);
	return 1;
}

static int fail_kill(struct sup *s, int r)
{
	if (s->tapfd >= 0)
		close(s->tapfd);
	if (s->a->net)
		urs_netfwd_close(s->a->net);
	kill_init(s);
	report(s->a, r, s->init_pid, sup_cgstr, sup_msg); /* the caller reaps it */
	return 1;
}

/* the process itself: fd table, session, name, death signal, dumpability */
static int boot_self(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	s->sync_fd = s->ctl_fd = s->sig_fd = s->pidfd = s->tapfd = -1;
	ckpt_trace("sup: start");
	if (!a->no_prewarm)
		prewarm_fd_table();
	setsid();
	prctl(PR_SET_NAME, "ursa-sup", 0, 0, 0);
	if (!a->state_dir) {
		/* `ursa do`: no record, nothing else can find or stop this sandbox,
		 * so it ends with the command that made it (the init dies with us) */
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getppid() != a->parent)
			return 128 + SIGKILL;
	}
	/* A container sharing our pid namespace must not reach our binary
	 * through /proc/PID/exe, nor ptrace us: stay non-dumpable. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (a->state_dir) /* a fault leaves a word for `ursa state` and the log */
		urs_sup_crash_arm(a->state_dir, a->id, a->log, a->log_json);
	return 0;
}

/* what must hold before anything is created */
static int boot_checks(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	int r;
	/* ursa restore: the image's supervisor state is verified before anything
	 * is created (a tampered, truncated or foreign file: refused) */
	if (a->restore_dir && (r = supstate_load(s, &err)) < 0) {
		report(a, r, 0, NULL, err.msg);
		return 1;
	}
	/* gofer volumes: the same host directories as at the checkpoint */
	if (a->restore_dir && (r = gofer_saved_check(s, &err)) < 0) {
		report(a, r, 0, NULL, err.msg);
		return 1;
	}
	/* gofer volumes: /dev/fuse is opened before we enter the sandbox's
	 * device cgroup (which denies it); mounted by the init (docs/gofer.md) */
	if ((r = gofer_open(a, sup_msg, sizeof(sup_msg))) < 0) {
		report(a, r, 0, NULL, sup_msg);
		return 1;
	}
	return 0;
}

/* cgroup first: the init is cloned inside it; *cgv2 gets the v2 cgroup's
 * directory (for CLONE_INTO_CGROUP) or -1 */
static int boot_cgroup(struct sup *s, int *cgv2)
{
	struct urs_sup_args *a = s->a;
	const struct urs_spec *spec = a->launch.spec;
	struct urs_err err = {{0}};
	ckpt_trace("sup: cgroup create");
	int r = urs_cg_create(&sup_cg, a->cgroup_path, a->id, 0, &err);
	ckpt_trace("sup: cgroup created");
	if (r < 0) {
		report(a, r, 0, NULL, err.msg);
		return 1;
	}
	/* From here on every report carries the cgroup: the parent removes
	 * it once we are gone (we sit inside it, so we cannot), or, if the
	 * parent is gone, we do (remove_made) */
	urs_cg_to_string(&sup_cg, sup_cgstr, sizeof(sup_cgstr));
	made_cg = &sup_cg;
	progress_cgroup(a, sup_cgstr);
	static const struct urs_resources none;
	const struct urs_resources *res =
		spec->lnx && spec->lnx->has_resources ? &spec->lnx->resources : &none;
	static const struct urs_linux nolnx;
	/* v1: we move ourselves in ("0" to tasks: no global lock); v2: the
	 * init is cloned into it (host/cgroup.c, "without the kernel's
	 * global migration lock"). Not single-threaded: the old way. */
	/* where we come from: we go back there once the init is gone */
	if (urs_cg_home_v1(&sup_home, &sup_cg, NULL) < 0)
		sup_home.mode = 0;
	made_home = &sup_home;
	r = urs_cg_enter_self_v1(&sup_cg, &err);
	if (r == -EBUSY)
		r = urs_cg_enter(&sup_cg, getpid(), &err);
	else if (r == 0 && (*cgv2 = urs_cg_open_v2(&sup_cg, &err)) < 0) {
		r = *cgv2 == -ENOENT ? 0 : *cgv2; /* legacy host: no v2 */
		*cgv2 = -1;
	}
	/* pids.max once we left (pids_leave): it counts the container alone */
	struct urs_resources now = *res;
	now.pids.has_limit = now.pids.has_limit && sup_cg.mode == URS_CG_UNIFIED;
	if (r < 0 ||
	    (ckpt_trace("sup: cgroup entered"),
	     r = apply_resources(&sup_cg, &now, spec->lnx ? spec->lnx : &nolnx, &err)) < 0) {
		report(a, r, 0, sup_cgstr, err.msg);
		return 1;
	}
	ckpt_trace("sup: resources applied");
	return 0;
}

/* the sync socket: our end in s->sync_fd, the init's (above stdio and the
 * preserved fds) in a->launch.sync_fd */
static int boot_sync(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		int r = -errno;
		snprintf(sup_msg, sizeof(sup_msg), "supervisor setup: %s", strerror(-r));
		return fail_msg(s, r);
	}
	int keep = 3 + (a->launch.preserve_fds > 0 ? a->launch.preserve_fds : 0);
	if (sv[1] < keep) {
		int hi = fcntl(sv[1], F_DUPFD_CLOEXEC, keep);
		close(sv[1]);
		sv[1] = hi;
	}
	s->sync_fd = sv[0];
	a->launch.sync_fd = sv[1];
	return 0;
}

/* the namespaces to make (clone flags) and the pid namespace to join (an
 * fd in *join_pid_ns, entered already) */
static int boot_namespaces(struct sup *s, uint64_t *flags, int *join_pid_ns)
{
	struct urs_sup_args *a = s->a;
	const struct urs_spec *spec = a->launch.spec;
	a->launch.new_ns = 0;
	for (size_t i = 0; spec->lnx && i < spec->lnx->n_namespaces; i++) {
		const struct urs_namespace *ns = &spec->lnx->namespaces[i];
		if (!ns->path) {
			*flags |= (uint64_t) urs_ns_clone_flag(ns->type);
			a->launch.new_ns |= 1u << ns->type;
		} else if (ns->type == URS_NS_PID) {
			*join_pid_ns = open(ns->path, O_RDONLY | O_CLOEXEC);
			if (*join_pid_ns < 0 || setns(*join_pid_ns, CLONE_NEWPID) < 0) {
				int r = -errno;
				snprintf(sup_msg, sizeof(sup_msg),
					 "linux.namespaces: joining pid namespace %s: %s", ns->path,
					 strerror(-r));
				return fail_msg(s, r);
			}
		}
	}
	bool early_hooks =
		spec->hooks[URS_HOOK_PRESTART].n || spec->hooks[URS_HOOK_CREATE_RUNTIME].n;
	a->launch.wait_go = (a->launch.new_ns & (1u << URS_NS_USER)) || early_hooks ||
			    spec->hooks[URS_HOOK_CREATE_CONTAINER].n ||
			    spec->hooks[URS_HOOK_START_CONTAINER].n;
	a->launch.leash = !a->state_dir; /* `ursa do`: dies with its command */
	return 0;
}

/* the init: cloned into the namespaces and the v2 cgroup; then our OOM
 * score, the v2 join to come, the pids cgroup left */
static int boot_init(struct sup *s, int cgv2)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	uint64_t flags = 0;
	int join_pid_ns = -1;
	int r = boot_namespaces(s, &flags, &join_pid_ns);
	if (r) {
		if (join_pid_ns >= 0)
			close(join_pid_ns);
		return r;
	}
	bool into_v2;
	s->init_pid = clone_init(a, flags, &s->pidfd, cgv2, s->sync_fd, &sup_cg, &into_v2, &err);
	ckpt_trace("sup: init cloned");
	/* the container keeps the caller's OOM score (and gives it to what a
	 * restore clones from it); we are the last task of the cgroup to go */
	struct urs_err oerr;
	r = s->init_pid > 0 ? urs_oom_protect_self(URS_OOM_SUPERVISOR_ADJ, &oerr) : 0;
	if (r < 0 && r != -EACCES) /* EACCES: no CAP_SYS_RESOURCE here (docs/sandbox.md) */
		fprintf(stderr, "ursa: warning: supervisor: %s\n", oerr.msg);
	join_v2_setup(&sup_cg, into_v2);
	if (r == -EACCES && !a->no_cgroup)
		oom_fallback(&sup_cg, &sup_home);
	close(a->launch.sync_fd);
	if (join_pid_ns >= 0)
		close(join_pid_ns); /* our own children after this are none */
	if (s->init_pid < 0) {
		snprintf(sup_msg, sizeof(sup_msg),
			 "cloning the container's init (namespaces %#llx): %s",
			 (unsigned long long) flags, err.msg);
		return fail_msg(s, s->init_pid);
	}
	if (!a->no_cgroup && (r = pids_leave(&sup_cg, &sup_home, a->launch.spec, &err)) < 0) {
		snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
		return fail_kill(s, r);
	}
	return 0;
}

/* the init's READY (the root built, the process about to exec), and the
 * seccomp listener it may send first */
static int boot_wait_ready(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_sync_msg m;
	int listener = -1;
	int r = urs_sync_recv_fd(s->sync_fd, &m, &listener);
	if (listener >= 0 && a->seccomp_count) {
		/* counted seccomp denials: the listener is ours, answered on the
		 * loop (actors/metrics.c); there is no agent */
		urs_sup_seccomp_take(listener, a->seccomp_count);
		listener = -1;
	}
	if (listener >= 0) {
		r = notify_agent(a, s->init_pid, listener, sup_msg, sizeof(sup_msg));
		close(listener);
		if (r < 0)
			return fail_kill(s, r);
	}
	if (r < 0 || m.type != URS_SYNC_READY) {
		snprintf(sup_msg, sizeof(sup_msg), "%s",
			 r < 0 ? "the container's init died during setup" : m.msg);
		if (r >= 0)
			r = m.code ? m.code : -EINVAL;
		return fail_kill(s, r);
	}
	return 0;
}

/* before the init builds the root: id maps, the tap, prestart and
 * createRuntime hooks; then its READY (and a seccomp listener) */
static int boot_setup(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	const struct urs_spec *spec = a->launch.spec;
	struct urs_err err = {{0}};
	int r;
	if (a->launch.new_ns & (1u << URS_NS_USER)) {
		const struct urs_linux *l = spec->lnx;
		if ((r = write_id_map(s->init_pid, "uid_map", l->uid_mappings, l->n_uid_mappings)) <
			    0 ||
		    (r = write_id_map(s->init_pid, "gid_map", l->gid_mappings, l->n_gid_mappings)) <
			    0) {
			snprintf(sup_msg, sizeof(sup_msg),
				 "linux.uidMappings/gidMappings: writing the maps: %s",
				 strerror(-r));
			return fail_kill(s, r);
		}
	}
	/* networking: the tap inside the new net namespace, the forwards bound,
	 * before anything in the sandbox runs */
	if (URSA_HAVE_NETSTACK && a->net && a->net->mode == URS_NET_SANDBOX &&
	    (a->launch.new_ns & (1u << URS_NS_NETWORK))) {
		if ((r = urs_netstack_prepare(a->net, s->init_pid, &s->netcfg, &s->tapfd, &err)) <
		    0) {
			snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
			return fail_kill(s, r);
		}
	}
	if (a->launch.wait_go) {
		static char json[4096];
		/* "created", as crun and the runtime-tools suite (hooks_stdin) have
		 * it (runc 1.1 says "creating") */
		if (urs_oci_state_json(json, sizeof(json), a->id, "created", s->init_pid, a->bundle,
				       a->annotations) < 0)
			urs_oci_state_json(json, sizeof(json), a->id, "created", s->init_pid,
					   a->bundle, NULL);
		/* prestart (deprecated) and createRuntime: runtime namespace, after
		 * the namespaces exist, before the init builds the root */
		if ((r = urs_hooks_run(spec, URS_HOOK_PRESTART, json, &err)) < 0 ||
		    (r = urs_hooks_run(spec, URS_HOOK_CREATE_RUNTIME, json, &err)) < 0) {
			snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
			return fail_kill(s, r);
		}
		urs_sync_send(s->sync_fd, URS_SYNC_GO, 0, json);
	}
	return boot_wait_ready(s);
}

/* ursa restore (docs/checkpoint.md): the init is the restore target; with
 * gofer volumes later, once they serve (late_restore) */
static int boot_restore(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	static struct ckpt_dev_map map[SUP_DEV_MAP];
	uint32_t nmap = 0;
	struct ckpt_restore_opts ro = {.policy = a->restore_policy,
				       .puppet = s->init_pid,
				       .dev_map = map,
				       .before_charged = join_v2_now};
	pid_t restored;
	ckpt_trace("sup: init ready, restoring");
	int r = restore_files(s, map, &nmap, &err);
	if (r < 0) {
		snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
		return fail_kill(s, r);
	}
	ro.n_dev_map = nmap;
	uint8_t key[URS_CKPT_KEY_LEN];
	ro.key = key;
	if ((r = urs_ckpt_key(NULL, false, key, &err)) < 0 ||
	    (r = ckpt_restore_ex(a->restore_dir, &ro, &restored, NULL, &err)) < 0) {
		explicit_bzero(key, sizeof(key));
		snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
		return fail_kill(s, r);
	}
	explicit_bzero(key, sizeof(key));
	ckpt_trace("sup: restored");
	return 0;
}

/* the control socket, READY to the command, the start of run/do */
static int boot_ready(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	int r;
	if (a->state_dir && (s->ctl_fd = ctl_listen(a->state_dir)) < 0) {
		r = s->ctl_fd;
		snprintf(sup_msg, sizeof(sup_msg), "control socket in %s: %s", a->state_dir,
			 strerror(-r));
		return fail_kill(s, r);
	}
	if (!s->late && ready_recorded(s, sup_cgstr) < 0) {
		abandon(s);
		return 1;
	}
	if (a->start_now && !s->late) {
		/* run/do: no separate start, but not before the parent has written
		 * the record (a workload that is quick to act would otherwise be
		 * unknown to `ursa kill` for a moment) */
		if (!a->restore_dir) { /* a restored init runs already */
			urs_sync_send(s->sync_fd, URS_SYNC_START, 0, NULL);
			s->started = true; /* its exec is watched once the loop runs */
		} else {
			close(s->sync_fd);
			s->sync_fd = -1;
			s->started = s->execd = true;
		}
	}
	return 0;
}

/* Let go of everything the caller gave us (stdio, preserved fds, a console
 * socket, whatever else it had open): the init has its own copies, and a
 * caller reading our pipes to EOF must not wait on us. Then our signals. */
static void boot_let_go(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	urs_cg_close(&sup_cg);	 /* cached cgroup directory fds: not needed any more */
	urs_cg_close(&sup_home); /* (reopened when we go back: close_all_but below) */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && null >= 0; fd++)
		dup2(null, fd);
	if (null > 2)
		close(null);
	int keepfds[3 + 1 + 1 + URS_NET_MAX_FWD + 2 * URS_GOFER_MAX + 1] = {s->sync_fd, s->pidfd,
									    s->ctl_fd, s->tapfd};
	size_t nkeep = 4;
	if (s->late) /* READY is reported after the restore */
		keepfds[nkeep++] = a->report_fd;
	for (int i = 0; i < a->launch.n_gofer; i++) { /* gofer volumes */
		keepfds[nkeep++] = a->launch.gofer_fuse[i];
		keepfds[nkeep++] = a->launch.gofer_dir[i];
	}
	for (unsigned i = 0; a->net && i < a->net->n_fwd; i++)
		keepfds[nkeep++] = a->net->fwd[i].fd;
	keepfds[nkeep++] = urs_sup_seccomp_fd(); /* counted seccomp denials, or -1 */
	close_all_but(keepfds, nkeep);

	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < URS_ARRAY_SIZE(fwd_signals); i++)
		sigaddset(&set, fwd_signals[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	s->sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
	/* A peer's reset must cost a connection, never the supervisor: splice(2)
	 * into a socket (the forward relay) cannot pass MSG_NOSIGNAL. The init
	 * was cloned above with the default; later children (hooks) reset it. */
	signal(SIGPIPE, SIG_IGN);
}

/* the actors on the loop: metrics, netstack, checkpointer, seccomp
 * counting, gofer volumes */
static void start_actors(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	int r;
	if (s->tapfd >= 0) {
		/* the engine owns the tap and the forwards from here; failing now
		 * leaves the sandbox without network: say so, and stop it */
		r = urs_netstack_start(&s->net, &s->loop, s->tapfd, &s->netcfg, a->net, &err);
		s->tapfd = -1;
		if (r < 0) {
			fprintf(stderr, "ursa: %s\n", err.msg);
			urs_pidfd_signal(s->pidfd, SIGKILL);
		}
	}
	if (s->saved.root) { /* restored: the netstack's tables and counters */
		if (urs_supstate_apply_net(&s->saved, ckpt_engine(s), &err) < 0)
			fprintf(stderr, "ursa: restore: %s\n", err.msg);
		urs_supstate_free(&s->saved);
	}
	s->ckpt_src = (struct urs_ckpt_src){.id = a->id,
					    .bundle = a->bundle,
					    .state_dir = a->state_dir,
					    .net = a->net,
					    .engine = ckpt_engine,
					    .engine_ctx = s,
					    .loop = &s->loop,
					    .gofers = s->gofer,
					    .gofer_thread = &s->gt,
					    .gofer_dest = s->gdest,
					    .gofer_src = s->gsrc,
					    .init_pid = s->init_pid};
	urs_checkpointer_init(&s->ckpt, &s->loop, &s->ckpt_src);
	if ((r = urs_sup_seccomp_start(&s->loop)) < 0) {
		/* unanswered, denied syscalls would fail with ENOSYS instead of
		 * the profile's errno: do not run the workload like that */
		fprintf(stderr, "ursa: counting seccomp denials: %s\n", strerror(-r));
		urs_pidfd_signal(s->pidfd, SIGKILL);
	}
	if (gofer_start(s) < 0) /* gofer volumes: unserved, every access would hang */
		urs_pidfd_signal(s->pidfd, SIGKILL);
}

static void stop_actors(struct sup *s)
{
	if (s->net)
		urs_netstack_stop(s->net);
	gofer_stop(s);
	urs_loop_fini(&s->loop);
}

/* ursa restore with gofer volumes: now that they serve; READY after it */
static int late_ready(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	int r = late_restore(s, &err);
	if (r < 0) {
		kill_init(s);
		report(a, r, s->init_pid, sup_cgstr, err.msg);
		stop_actors(s);
		return 1;
	}
	gofer_import(s);
	if (ready_recorded(s, sup_cgstr) < 0) {
		stop_actors(s);
		abandon(s);
		return 1;
	}
	if (a->start_now) { /* as above: the record first; the init runs already */
		close(s->sync_fd);
		s->sync_fd = -1;
	}
	s->started = s->execd = true; /* restored: it runs already */
	return 0;
}

/* until the init has ended: its pidfd, our signals, the control socket */
static void run_loop(struct sup *s)
{
	io_uring_prep_poll_add(urs_op_sqe(&s->pid_op), s->pidfd, POLLIN);
	urs_submit(&s->loop, &s->pid_op, pid_cb);
	if (s->started && !s->execd) /* run/do: START went before the loop ran */
		watch_exec(s);
	if (s->sig_fd >= 0)
		sig_arm(s);
	if (s->ctl_fd >= 0) {
		io_uring_prep_multishot_accept(urs_op_sqe(&s->accept_op), s->ctl_fd, NULL, NULL,
					       SOCK_CLOEXEC);
		s->accept_op.flags = URS_OPF_WEAK;
		urs_submit(&s->loop, &s->accept_op, accept_cb);
	}
	release_boot_memory();
	while (!s->exited) {
		if (urs_loop_run(&s->loop) < 0)
			break;
		if (!s->exited && !init_ended(s) && !urs_op_busy(&s->pid_op)) {
			/* woken without an exit: watch again */
			io_uring_prep_poll_add(urs_op_sqe(&s->pid_op), s->pidfd, POLLIN);
			urs_submit(&s->loop, &s->pid_op, pid_cb);
		}
	}
}

/* The init is gone, and with its mount namespace the gofer volumes'
 * connections: their thread ends first, then back to the caller's v1
 * cgroups (no lock, as we came), so that `ursa delete` can remove the
 * sandbox's while we still clean up. Threads of ours (io-wq workers) would
 * stay behind: then we stay too, and delete waits for our exit as before. */
static void wind_down(struct sup *s)
{
	/* A checkpoint that killed the init and died before its own thaw
	 * leaves the (now empty) cgroup frozen, and its guard's close may come
	 * after we stop listening: thaw on the way out (nothing is left in it
	 * to run; faults-cli-kill, 3 of 40 checkpoint trials under load) */
	if (s->exited && s->cg && s->cg->h[URS_CG_V2].path[0]) /* not a paused, live one */
		urs_cg2_freeze(s->cg->h[URS_CG_V2].path, false, NULL);
	gofer_stop(s); /* gofer volumes */
	if (sup_home.mode)
		urs_cg_enter_self_v1(&sup_home, NULL);
	if (s->net)
		urs_netstack_stop(s->net);
	urs_loop_fini(&s->loop);
}

/* ROOT/ID/exit: the init's wait status, our last act */
static int write_exit(struct sup *s)
{
	if (s->a->state_dir) {
		char path[4096], val[32];
		snprintf(path, sizeof(path), "%s/exit", s->a->state_dir);
		snprintf(val, sizeof(val), "%d\n", s->status);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			if (write(fd, val, strlen(val)) < 0) {
				/* nothing to do: state falls back to "stopped" without a code */
			}
			close(fd);
		}
	}
	return exit_code(s->status);
}

/* --profile: without it nothing of the profiler exists */
static void profile_init(void)
{
	const struct urs_prof_name names[] = {
		{(const void *) pid_cb, "init-exit"},
		{(const void *) sig_cb, "signals"},
		{(const void *) accept_cb, "control-accept"},
		{(const void *) conn_cb, "control"},
	};
	urs_sup_profile_init(names, URS_ARRAY_SIZE(names));
}

int urs_supervisor_main(struct urs_sup_args *a)
{
	static struct sup S;
	struct sup *s = &S;
	struct urs_err err = {{0}};
	int cgv2 = -1, r;
	s->a = a;
	if ((r = boot_self(s)) || (r = boot_checks(s)))
		return r;
	if (!a->no_cgroup && (r = boot_cgroup(s, &cgv2)))
		return r;
	a->launch.cgroup = sup_cgstr;
	r = boot_sync(s);
	if (!r)
		r = boot_init(s, cgv2);
	if (cgv2 >= 0)
		close(cgv2);
	if (r || (r = boot_setup(s)))
		return r;
	s->late = a->restore_dir && a->launch.n_gofer > 0;
	if ((a->restore_dir && !s->late && (r = boot_restore(s))) || (r = boot_ready(s)))
		return r;
	boot_let_go(s);
	s->cg = a->no_cgroup ? NULL : &sup_cg;
	urs_sup_metrics_init(); /* before the loop, as the metrics rules want */
	if (s->saved.root && urs_supstate_apply_metrics(&s->saved, &err) < 0)
		fprintf(stderr, "ursa: restore: %s\n", err.msg); /* counters restart */
	if (a->profile)
		profile_init();
	struct urs_loop_opts lo = {.entries = 16};
	if (urs_loop_init(&s->loop, &lo) < 0) {
		/* no loop: still be a correct parent */
		urs_sup_seccomp_take(-1, NULL); /* nobody answers: denied calls get ENOSYS */
		gofer_close_fds(&a->launch);	/* gofer volumes: unserved, accesses fail */
		struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
		while (!init_ended(s))
			poll(&p, 1, -1);
		return write_exit(s);
	}
	start_actors(s);
	join_v2_start(); /* (after close_all_but and the ring: see there) */
	if (s->late && (r = late_ready(s)))
		return r;
	run_loop(s);
	wind_down(s);
	return write_exit(s);
}
