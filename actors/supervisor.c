/*
 * actors/supervisor.c — see supervisor.h. urs_supervisor_main, which reads
 * as the boot sequence (its steps: actors/sup_boot.c), then the loop until
 * the init exits: its pidfd, forwarded signals and the control socket
 * (actors/sup_control.c) are its actors; then our way out. The other parts
 * of the supervisor, one concern each, are listed in actors/sup_int.h.
 *
 * Boot order matters for memory and latency: the fd table is prewarmed to 256
 * slots while we are single-threaded (io_uring's io-wq workers share it later,
 * and growing a shared table costs an RCU grace period — seed 004), the init is
 * cloned before the ring exists, and nothing is allocated for the loop until
 * the init is READY.
 */
#include "actors/sup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actors/checkpointer.h"
#include "actors/metrics.h"
#include "actors/netstack.h"
#include "ckpt/lazy.h"
#include "host/cgroup.h"
#include "host/proc.h"
#include "runtime/loop.h"

/* ---- the init's exit ---- */

/* Has the init ended? Then its status is in s->status. It is not our child
 * (CLONE_PARENT): its reaper gets the status; we read it from its pidfd. */
bool sup_init_ended(struct sup *s)
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
void sup_kill_init(struct sup *s)
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
	struct sup *s = container_of(op, struct sup, pid_op);
	if (res < 0 && res != -ECANCELED)
		return;
	if (sup_init_ended(s))
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
	urs_submit(s->lp, &s->sig_op, sig_cb);
}

/* until the init has ended: its pidfd, our signals, the control socket */
static void run_loop(struct sup *s)
{
	io_uring_prep_poll_add(urs_op_sqe(&s->pid_op), s->pidfd, POLLIN);
	urs_submit(s->lp, &s->pid_op, pid_cb);
	if (s->started && !s->execd) /* run/do: START went before the loop ran */
		sup_watch_exec(s);
	if (s->sig_fd >= 0)
		sig_arm(s);
	sup_lazy_watch(s); /* a lazy restore's end of paging (once: a late restore's may run) */
	if (s->ctl_fd >= 0)
		sup_accept_start(s);
	sup_release_boot_memory();
	while (!s->exited) {
		if (urs_loop_run(s->lp) < 0)
			break;
		if (!s->exited && !sup_init_ended(s) && !urs_op_busy(&s->pid_op)) {
			/* woken without an exit: watch again */
			io_uring_prep_poll_add(urs_op_sqe(&s->pid_op), s->pidfd, POLLIN);
			urs_submit(s->lp, &s->pid_op, pid_cb);
		}
	}
	/* a start or exec-wait still waiting as the init ended (its exec's HUP
	 * and its exit reaped in one turn) is answered, and the replies queued
	 * are submitted before the loop goes: a small send on a unix socket
	 * completes as it is submitted */
	sup_exec_waiters_answer(s);
	urs_loop_flush(s->lp);
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
	sup_gofer_stop(s); /* gofer volumes */
	/* a lazy restore's pager: its address spaces are gone with the init
	 * (its pid namespace), so it has ended or ends at its next copy */
	ckpt_lazy_free(s->lazy);
	s->lazy = NULL;
	if (sup_home.mode)
		urs_cg_enter_self_v1(&sup_home, NULL);
	/* the loop ends next, so its cancels never complete: s->net stays
	 * unfreed (and unused) until our exit */
	urs_netstack_stop(s->net);
	urs_loop_fini(s->lp);
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

/* ROOT/ID/exit: the init's wait status, our last act */
int sup_write_exit(struct sup *s)
{
	if (s->a->state_dir) {
		char path[4096], val[32];
		snprintf(path, sizeof(path), "%s/exit", s->a->state_dir);
		snprintf(val, sizeof(val), "%d\n", s->status);
		/* a host writes into the directory it adopted: once `ursa delete`
		 * removed it, into nothing (never a new container's of that id) */
		int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
		int fd = s->state_dfd >= 0 ? openat(s->state_dfd, "exit", flags, 0600)
					   : open(path, flags, 0600);
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
		{(const void *) sup_accept_cb, "control-accept"},
		{(const void *) sup_conn_cb, "control"},
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
	s->lp = &s->loop;
	s->state_dfd = -1;
	if ((r = sup_boot_self(s)) || (r = sup_boot_checks(s)))
		return r;
	if (!a->no_cgroup && (r = sup_boot_cgroup(s, &cgv2)))
		return r;
	a->launch.cgroup = sup_cgstr;
	r = sup_boot_sync(s);
	if (!r)
		r = sup_boot_init(s, cgv2);
	if (cgv2 >= 0)
		close(cgv2);
	if (r || (r = sup_boot_setup(s)))
		return r;
	s->late = a->restore_dir && a->launch.n_gofer > 0;
	if ((a->restore_dir && !s->late && (r = sup_boot_restore(s))) || (r = sup_boot_ready(s)))
		return r;
	sup_boot_let_go(s);
	if (sup_hand_over(s))
		return 0; /* its host serves it now (actors/hosted.h) */
	s->cg = a->no_cgroup ? NULL : &sup_cg;
	urs_sup_metrics_init(); /* before the loop, as the metrics rules want */
	if (s->saved.root && urs_supstate_apply_metrics(&s->saved, &err) < 0)
		fprintf(stderr, "ursa: restore: %s\n", err.msg); /* counters restart */
	if (a->profile)
		profile_init();
	struct urs_loop_opts lo = {.entries = 16};
	if (urs_loop_init(s->lp, &lo) < 0) {
		/* no loop: still be a correct parent */
		urs_sup_seccomp_take(-1, NULL);	 /* nobody answers: denied calls get ENOSYS */
		sup_gofer_close_fds(&a->launch); /* gofer volumes: unserved, accesses fail */
		struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
		while (!sup_init_ended(s))
			poll(&p, 1, -1);
		return sup_write_exit(s);
	}
	sup_start_actors(s);
	sup_join_v2_start(); /* (after sup_close_all_but and the ring: see there) */
	if (s->late && (r = sup_late_ready(s)))
		return r;
	run_loop(s);
	wind_down(s);
	return sup_write_exit(s);
}
