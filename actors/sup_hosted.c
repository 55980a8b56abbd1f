/*
 * actors/sup_hosted.c — the hand-over of a sandbox's supervision to the
 * process hosting it (actors/hosted.h): the supervisor's side (connect,
 * send the fds, ROOT/ID/hosted, exit) and the host's (a `struct sup` on
 * the host's loop per adopted sandbox, freed once its init ended and its
 * last control connection closed).
 */
#include "actors/sup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "actors/hosted.h"
#include "actors/metrics.h"
#include "actors/netstack.h"
#include "actors/nettx.h"
#include "host/cgroup.h"
#include "host/fdpass.h"
#include "host/proc.h"
#include "runtime/common.h"
#include "runtime/io.h"

/* ---- the supervisor's side ---- */

/* The network goes with the sandbox: none, or a netstack not started yet
 * whose tap and forwards are all open */
static bool net_can_go(const struct sup *s)
{
	const struct urs_netopts *o = s->a->net;
	if (s->net)
		return false;
	if (!o || o->mode != URS_NET_SANDBOX)
		return s->tapfd < 0 && (!o || o->n_fwd == 0);
	if (s->tapfd < 0 || o->n_fwd > URS_NET_MAX_FWD)
		return false;
	for (unsigned i = 0; i < o->n_fwd; i++)
		if (o->fwd[i].fd < 0)
			return false;
	return true;
}

/* Nothing but the control socket, the checkpointer, the netstack and the
 * init's exit to serve: what a host runs (the rest stays in a supervisor
 * process). */
static bool can_hand_over(const struct sup *s)
{
	const struct urs_sup_args *a = s->a;
	/* a restore: without user-mode network (its saved tables are applied
	 * by the supervisor's netstack: s->net once it runs, which
	 * net_can_go refuses) or gofer volumes, and a lazy one only once its
	 * pager is gone (sup_hand_over_late) */
	bool restore_ok = !a->restore_dir || (!s->late && s->tapfd < 0);
	return a->host_socket && a->state_dir && net_can_go(s) && a->launch.n_gofer == 0 &&
	       restore_ok && !s->lazy && !a->profile &&
	       (urs_sup_seccomp_fd() < 0 ||
		(a->seccomp_count && a->seccomp_count->n_exc <= URS_SC_EXC_MAX)) &&
	       s->pidfd >= 0 && s->ctl_fd >= 0 && !s->exited;
}

/* ROOT/ID/hosted: "PID START\n" of the host, complete or absent */
static int write_hosted(const char *dir, pid_t pid, uint64_t start)
{
	char tmp[4096], path[4096], val[64];
	if (snprintf(path, sizeof(path), "%s/%s", dir, URS_HOSTED_FILE) >= (int) sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, URS_HOSTED_FILE) >= (int) sizeof(tmp))
		return -ENAMETOOLONG;
	int n = snprintf(val, sizeof(val), "%d %" PRIu64 "\n", (int) pid, start);
	return urs_write_file_atomic(path, tmp, val, (size_t) n, 0600);
}

static void unlink_hosted(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, URS_HOSTED_FILE);
	unlink(path);
}

/* Where each fd of a hand-over is, from its message (both sides): the
 * init's pidfd at 0, the control socket's listener at 1, then the sync
 * socket unless execd, the seccomp listener with sc, the tap and each
 * forward with net (-1: absent); end: how many. */
struct fd_layout {
	int sync, sc, tap, end;
};

static struct fd_layout fd_layout(const struct urs_handover *m)
{
	struct fd_layout l = {-1, -1, -1, 2};
	if (!m->execd)
		l.sync = l.end++;
	if (m->sc)
		l.sc = l.end++;
	if (m->net) {
		l.tap = l.end;
		l.end += 1 + (int) m->net_part.o.n_fwd;
	}
	return l;
}

static int send_handover(int fd, const struct sup *s)
{
	struct urs_handover h = {.magic = URS_HANDOVER_MAGIC,
				 .init_pid = s->init_pid,
				 .started = s->started,
				 .execd = s->execd || s->sync_fd < 0};
	snprintf(h.id, sizeof(h.id), "%s", s->a->id);
	const struct urs_seccomp_denials *d = s->a->seccomp_count;
	if (urs_sup_seccomp_fd() >= 0 && d) { /* counted denials: checked to fit */
		h.sc = 1;
		h.sc_table.base_errno = d->base_errno;
		h.sc_table.n_exc = d->n_exc;
		h.sc_table.converted = d->converted;
		h.sc_table.native_arch = d->native_arch;
		memcpy(h.sc_table.exc, d->exc, d->n_exc * sizeof(*d->exc));
	}
	if (s->tapfd >= 0) { /* the netstack's: checked by net_can_go */
		h.net = 1;
		h.net_part.cfg = s->netcfg;
		h.net_part.o = *s->a->net;
	}
	struct fd_layout l = fd_layout(&h);
	int fds[URS_HANDOVER_FDS] = {s->pidfd, s->ctl_fd};
	if (l.sync >= 0)
		fds[l.sync] = s->sync_fd;
	if (l.sc >= 0)
		fds[l.sc] = urs_sup_seccomp_fd();
	if (l.tap >= 0)
		fds[l.tap] = s->tapfd;
	for (unsigned i = 0; h.net && i < h.net_part.o.n_fwd; i++) {
		fds[l.tap + 1 + (int) i] = h.net_part.o.fwd[i].fd;
		h.net_part.o.fwd[i].fd = -1; /* (they travel as fds) */
	}
	size_t nfd = (size_t) l.end;
	return urs_send_fds(fd, &h, sizeof(h), fds, nfd);
}

/* The host is who ran `ursa create`: our parent's parent, or our parent
 * once that command exited (the host is a subreaper) — not whoever else
 * could listen at the path. */
static bool is_our_host(pid_t peer)
{
	pid_t pp = getppid();
	if (peer == pp || peer == urs_proc_ppid(pp))
		return true;
	/* the command may have exited (and been reaped) between the two
	 * looks: then the host, its subreaper, is our parent now */
	return peer == getppid();
}

int sup_hand_over(struct sup *s)
{
	if (!can_hand_over(s))
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->a->host_socket) >=
	    (int) sizeof(sa.sun_path))
		return 0;
	/* connect and send may wait for a busy host, not forever: meanwhile
	 * nobody accepts on the control socket */
	struct timeval tv = {.tv_sec = 5};
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
		return 0; /* no host: we serve it ourselves */
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	uint64_t start;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != geteuid() ||
	    !is_our_host(cr.pid) || urs_proc_start_time(cr.pid, &start) < 0)
		return 0;
	/* before the host serves: never a moment with us gone and no word of it */
	if (write_hosted(s->a->state_dir, cr.pid, start) < 0)
		return 0;
	char reply[64];
	ssize_t n = -1;
	/* after the send, the host's answer is the commit point: no receive
	 * timeout (a late "ok" after we took the sandbox back would make two
	 * servers) */
	if (send_handover(fd, s) == 0)
		do
			n = recv(fd, reply, sizeof(reply) - 1, 0);
		while (n < 0 && errno == EINTR);
	if (n == 2 && !memcmp(reply, "ok", 2))
		return 1; /* the host serves it: ours are closed by our exit */
	unlink_hosted(s->a->state_dir);
	return 0;
}

/* The late hand-over: tried again as each of the supervisor's parts ends
 * (its part_ended). The accept is cancelled only while no connection is
 * open, and armed again if one came meanwhile: a client that holds one
 * connection while it waits for an answer on another (a checkpoint's
 * guard) is never left in the backlog. It blocks the loop while the host
 * answers, as the eager one blocks the boot (the host's adopt is a few
 * syscalls); a host that refuses leaves us serving, for good. Taken:
 * nothing more of ours may run (a loop turn could answer on a socket the
 * host serves now), so the process ends here. */
static void late_try(struct sup *s)
{
	if (s->conns) { /* theirs are ours to answer: when the last ends */
		if (!s->exited)
			sup_accept_start(s); /* (unless armed, or to be) */
		return;
	}
	if (urs_op_busy(&s->accept_op)) {
		urs_cancel(s->lp, &s->accept_op); /* (once asked, asked) */
		return;
	}
	s->part_ended = NULL;
	if (sup_hand_over(s)) {
		fflush(NULL);
		_exit(0);
	}
	if (!s->exited) /* not taken: we go on serving */
		sup_accept_start(s);
}

void sup_hand_over_late(struct sup *s)
{
	if (s->hosted || !s->a->host_socket || !can_hand_over(s))
		return;
	/* new clients wait in the listener's backlog meanwhile: the host
	 * takes it with the listener */
	s->part_ended = late_try;
	late_try(s);
}

/* ---- the host's side ---- */

struct hosted {
	struct sup s;
	struct urs_sup_args a;
	struct urs_cgroup cg;
	struct urs_netopts *net; /* with a netstack: its options (a.net, for checkpoints) */
	struct hosted *next;
};

static struct hosted *adopted; /* every one not freed yet */

/* the sandbox of @id served now (its init not ended), or NULL */
static struct hosted *serving(const char *id)
{
	for (struct hosted *h = adopted; h; h = h->next)
		if (!h->s.exited && !strcmp(h->a.id, id))
			return h;
	return NULL;
}

unsigned urs_sup_adopted(void)
{
	unsigned n = 0;
	for (struct hosted *h = adopted; h; h = h->next)
		n++;
	return n;
}

static void hosted_free(struct hosted *h)
{
	urs_netstack_stop(h->s.net); /* (it frees itself) */
	free(h->net);
	if (h->s.sc)
		urs_sc_stop(h->s.sc, h->s.lp);
	free(h->s.sc);
	urs_closep(&h->s.state_dfd);
	free((char *) h->a.id);
	free((char *) h->a.bundle);
	free((char *) h->a.state_dir);
	free(h);
}

void sup_hosted_release(struct sup *s)
{
	if (!s->exited || urs_op_busy(&s->pid_op) || urs_op_busy(&s->accept_op) ||
	    urs_op_busy(&s->exec_op) || urs_timer_busy(&s->accept_retry) ||
	    urs_timer_busy(&s->execd_wait) || s->conns || urs_checkpointer_busy(&s->ckpt) ||
	    (s->sc && urs_sc_busy(s->sc)))
		return;
	struct hosted *h = container_of(s, struct hosted, s);
	for (struct hosted **p = &adopted; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			break;
		}
	urs_closep(&s->pidfd);
	urs_closep(&s->ctl_fd);
	urs_closep(&s->sync_fd);
	if (s->cg) /* (h->cg is all zeros otherwise: its fds would read as 0) */
		urs_cg_close(&h->cg);
	hosted_free(h);
}

/* the init has ended: its status written, the cgroup thawed (a checkpoint
 * that died frozen), the control socket closed once its accept is off */
static void hosted_end(struct sup *s)
{
	if (s->cg && s->cg->h[URS_CG_V2].path[0])
		urs_cg2_freeze(s->cg->h[URS_CG_V2].path, false, NULL);
	sup_write_exit(s);
	if (urs_op_busy(&s->accept_op))
		urs_cancel(s->lp, &s->accept_op);
	if (urs_timer_busy(&s->accept_retry))
		urs_timer_cancel(s->lp, &s->accept_retry);
	if (urs_op_busy(&s->exec_op))
		urs_cancel(s->lp, &s->exec_op);
	if (s->sc)
		urs_sc_stop(s->sc, s->lp);
	urs_netstack_stop(s->net); /* its forwards' ports free now, as with a supervisor's exit */
	s->net = NULL;
	sup_exec_waiters_answer(s);
	sup_hosted_release(s);
}

static void hosted_pid_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) flags;
	struct sup *s = container_of(op, struct sup, pid_op);
	if (s->exited || sup_init_ended(s)) {
		hosted_end(s);
		return;
	}
	if (res == -ECANCELED)
		return;
	io_uring_prep_poll_add(urs_op_sqe(&s->pid_op), s->pidfd, POLLIN);
	s->pid_op.flags = URS_OPF_WEAK;
	urs_submit(loop, &s->pid_op, hosted_pid_cb);
}

static int adopt_fill(struct hosted *h, struct urs_loop *loop, const struct urs_adopt *o, int sync,
		      struct urs_err *err)
{
	struct sup *s = &h->s;
	char dir[4096];
	int r = urs_state_path(dir, sizeof(dir), o->root, o->h->id, NULL);
	if (r < 0)
		return urs_err_set(err, r, "%s: state directory: %s", o->h->id, strerror(-r));
	s->state_dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->state_dfd < 0)
		return urs_err_set(err, -errno, "%s: %s: %m", o->h->id, dir);
	h->a.id = strdup(o->h->id);
	h->a.state_dir = strdup(dir);
	h->a.bundle = strdup(o->bundle ? o->bundle : "");
	if (!h->a.id || !h->a.state_dir || !h->a.bundle)
		return urs_err_set(err, -ENOMEM, "%s: out of memory", o->h->id);
	if (o->cgroup && *o->cgroup) {
		if ((r = urs_cg_from_string(&h->cg, o->cgroup, err)) < 0)
			return r;
		s->cg = &h->cg;
	}
	s->a = &h->a;
	s->lp = loop;
	s->hosted = true;
	s->part_ended = sup_hosted_release;
	s->init_pid = o->h->init_pid;
	s->pidfd = o->fds[0];
	s->ctl_fd = o->fds[1];
	s->sync_fd = sync;
	s->sig_fd = s->tapfd = -1;
	s->started = o->h->started;
	s->execd = o->h->execd;
	return 0;
}

/* The fds as they came (fd_layout): the sync socket and the seccomp
 * listener in @sync and @sc, the index of the tap in *@net (0: none); any
 * after the last closed. -EBADF if one is missing. */
static int map_fds(const struct urs_handover *m, int fds[URS_HANDOVER_FDS], int *sync, int *sc,
		   int *net)
{
	struct fd_layout l = fd_layout(m); /* (within URS_HANDOVER_FDS: net_sane) */
	*sync = l.sync >= 0 ? fds[l.sync] : -1;
	*sc = l.sc >= 0 ? fds[l.sc] : -1;
	*net = l.tap >= 0 ? l.tap : 0;
	bool ok = true;
	for (int i = 0; i < l.end; i++)
		ok &= fds[i] >= 0;
	for (int i = l.end; i < URS_HANDOVER_FDS; i++)
		urs_closep(&fds[i]);
	return ok ? 0 : -EBADF;
}

static void sc_ended(void *arg)
{
	sup_hosted_release(arg);
}

/* the seccomp listener and its errno table, counted on @s's own counters */
static int adopt_sc(struct sup *s, const struct urs_handover *m, int fd, struct urs_err *err)
{
	if (m->sc_table.n_exc > URS_SC_EXC_MAX)
		return urs_err_set(err, -E2BIG, "%s: seccomp table too large", m->id);
	if (!(s->sc = calloc(1, sizeof(*s->sc))))
		return urs_err_set(err, -ENOMEM, "%s: out of memory", m->id);
	s->sc->fd = -1;
	s->sc->ended = sc_ended; /* its op's end may be the last we wait for */
	s->sc->ended_arg = s;
	struct urs_seccomp_denials d = {.base_errno = m->sc_table.base_errno,
					.n_exc = m->sc_table.n_exc,
					.converted = m->sc_table.converted,
					.native_arch = m->sc_table.native_arch,
					.exc = m->sc_table.exc};
	return urs_sc_take(s->sc, fd, &d, true);
}

/* the message's network part within the engine's and the options' bounds */
static bool net_sane(const struct urs_handover *m)
{
	const struct urs_netopts *o = &m->net_part.o;
	const struct urs_net_cfg *c = &m->net_part.cfg;
	return !m->net || (o->mode == URS_NET_SANDBOX && o->n_fwd <= URS_NET_MAX_FWD &&
			   o->n_allow <= URS_NET_MAX_ALLOW && c->n_dns <= URS_NET_MAX_DNS &&
			   c->n_allow <= URS_NET_MAX_ALLOW && c->max_flows <= URS_NET_MAX_FLOWS &&
			   o->max_flows <= URS_NET_MAX_FLOWS && o->max_slots <= URS_NETTX_MAX &&
			   (o->idle_ms == 0 || o->idle_ms >= 100) && o->splice_max <= 65536);
}

/* the netstack on our loop, with the tap and the forwards from fds[@at]
 * on (taken, -1 in @fds from here, closed on failure too) */
static int adopt_net(struct hosted *h, const struct urs_handover *m, int fds[URS_HANDOVER_FDS],
		     int at, struct urs_err *err)
{
	struct sup *s = &h->s;
	int tap = fds[at];
	fds[at] = -1;
	if (!(h->net = malloc(sizeof(*h->net)))) {
		close(tap);
		return urs_err_set(err, -ENOMEM, "%s: out of memory", m->id);
	}
	*h->net = m->net_part.o;
	h->net->sandbox_pid = m->init_pid; /* whose namespace the splices enter */
	for (unsigned i = 0; i < h->net->n_fwd; i++) {
		h->net->fwd[i].fd = fds[at + 1 + (int) i];
		fds[at + 1 + (int) i] = -1;
	}
	s->netcfg = m->net_part.cfg;
	h->a.net = h->net;
	return urs_netstack_start(&s->net, s->lp, tap, &s->netcfg, h->net, err);
}

static void adopt_start(struct hosted *h, struct urs_loop *loop)
{
	static bool metrics;
	struct sup *s = &h->s;
	h->next = adopted;
	adopted = h;
	if (!metrics) /* the host's process-wide counters: once */
		metrics = urs_sup_metrics_init() == 0;
	sup_start_checkpointer(s);
	io_uring_prep_poll_add(urs_op_sqe(&s->pid_op), s->pidfd, POLLIN);
	s->pid_op.flags = URS_OPF_WEAK;
	urs_submit(loop, &s->pid_op, hosted_pid_cb);
	if (s->started && !s->execd)
		sup_watch_exec(s);
	sup_accept_start(s);
	/* unanswered, denied syscalls would fail with ENOSYS instead of the
	 * profile's errno: not a way to run the workload (as a supervisor) */
	if (s->sc && urs_sc_start(s->sc, loop) < 0)
		urs_pidfd_signal(s->pidfd, SIGKILL);
}

int urs_sup_adopt(struct urs_loop *loop, const struct urs_adopt *o, struct urs_err *err)
{
	int fds[URS_HANDOVER_FDS], sync = -1, scfd = -1, net = 0;
	memcpy(fds, o->fds, sizeof(fds));
	struct hosted *h = calloc(1, sizeof(*h));
	int r = h ? 0 : urs_err_set(err, -ENOMEM, "%s: out of memory", o->h->id);
	if (h)
		h->s.state_dfd = -1;
	if (!r && (o->h->magic != URS_HANDOVER_MAGIC || !net_sane(o->h)))
		r = urs_err_set(err, -EPROTO, "%.64s: not a hand-over message", o->h->id);
	if (!r && map_fds(o->h, fds, &sync, &scfd, &net) < 0)
		r = urs_err_set(err, -EBADF, "%.64s: the hand-over lacks its fds", o->h->id);
	if (!r && (!memchr(o->h->id, 0, sizeof(o->h->id)) || serving(o->h->id)))
		r = urs_err_set(err, -EEXIST, "%.64s: already served here", o->h->id);
	if (!r)
		r = adopt_fill(h, loop, o, sync, err);
	if (!r && net)
		r = adopt_net(h, o->h, fds, net, err);
	if (!r && o->h->sc && (r = adopt_sc(&h->s, o->h, scfd, err)) == 0)
		scfd = -1; /* its own now */
	if (r < 0) {
		for (int i = 0; i < URS_HANDOVER_FDS; i++)
			urs_closep(&fds[i]);
		if (h && h->s.sc && h->s.sc->fd == scfd)
			h->s.sc->fd = -1; /* closed above */
		if (h)
			hosted_free(h);
		return r;
	}
	adopt_start(h, loop);
	return 0;
}

#define START_WAIT_NS (2ull * 1000000000ull) /* at most, as the control "start" */

/* an in-process start whose init has not exec'd within START_WAIT_NS: done
 * all the same, as a control "start" is answered "ok" then (the go was
 * given; its exec may hang on its root file system, which a Kill ends) */
static void start_wait_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	struct sup *s = container_of(t, struct sup, execd_wait);
	if (res == 0)
		sup_execd_done(s);
	sup_hosted_release(s);
}

/* the init told to go, the record marked started (as `ursa start` does);
 * @done told once it has exec'd (sup_exec_waiters_answer) or START_WAIT_NS
 * passed, or at once when startContainer hooks run first */
static int start_now(struct sup *s, const char *root, struct urs_state *st, urs_hosted_done done,
		     void *arg, struct urs_err *err)
{
	int r = urs_sync_send(s->sync_fd, URS_SYNC_START, 0, NULL);
	if (r < 0)
		urs_closep(&s->sync_fd);
	sup_watch_exec(s); /* started either way, as the control "start" has it */
	if (r < 0)
		return urs_err_set(err, r, "start %s: the container's init is gone", st->id);
	st->started = true;
	if ((r = urs_state_write(root, st, err)) < 0)
		return r;
	if ((st->hooks & (1 << URS_HOOK_START_CONTAINER)) ||
	    urs_timer_start(s->lp, &s->execd_wait, START_WAIT_NS, 0, start_wait_cb) < 0) {
		done(arg, 0, NULL); /* (no timer: not waited for) */
		return 0;
	}
	s->execd_done = done, s->execd_arg = arg;
	return 0;
}

int urs_sup_hosted_start(const char *root, const char *id, urs_hosted_done done, void *arg,
			 struct urs_err *err)
{
	struct hosted *h = serving(id);
	if (!h)
		return -ENOENT;
	struct sup *s = &h->s;
	struct urs_state st;
	int r = urs_state_read(root, id, &st, err);
	if (r < 0)
		return r;
	enum urs_status now = urs_container_status(&st);
	if (st.hooks < 0 || (st.hooks & (1 << URS_HOOK_POSTSTART)))
		r = -EAGAIN; /* `ursa start` runs them */
	else if (st.pid != s->init_pid)
		r = urs_err_set(err, -ESRCH, "start %s: its record names another init", id);
	else if (now == URS_ST_STOPPED)
		r = urs_err_set(err, -EINVAL, "cannot start a container that has stopped");
	else if (now != URS_ST_CREATED || s->started || s->sync_fd < 0)
		r = urs_err_set(err, -EINVAL, "cannot start an already running container");
	else
		r = start_now(s, root, &st, done, arg, err);
	urs_state_clear(&st);
	return r;
}

int urs_hosted_read(const char *state_dir, pid_t *pid, uint64_t *start)
{
	char path[4096], buf[64];
	if (snprintf(path, sizeof(path), "%s/%s", state_dir, URS_HOSTED_FILE) >= (int) sizeof(path))
		return -ENAMETOOLONG;
	ssize_t n = urs_read_small(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENODATA ? -EINVAL : (int) n;
	int p;
	uint64_t t;
	if (sscanf(buf, "%d %" SCNu64, &p, &t) != 2 || p <= 0)
		return -EINVAL;
	*pid = p;
	*start = t;
	return 0;
}
