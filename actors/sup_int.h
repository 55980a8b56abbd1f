/*
 * actors/sup_int.h — the supervisor's own header, for its files only (the
 * public side is actors/supervisor.h): struct sup, the one supervisor of
 * the process, and what each of its files gives the others. Every name
 * that crosses files starts with sup_. The files, by concern:
 *
 *   supervisor.c     urs_supervisor_main, which reads as the boot sequence;
 *                    the loop, the init's exit, forwarded signals, our exit
 *   sup_boot.c       the boot steps, until READY and the loop
 *   sup_report.c     what the `ursa` command that forked us is told
 *   sup_footprint.c  our own fd table and boot memory, kept small
 *   sup_cgself.c     where the supervisor itself sits in the cgroups
 *   sup_resources.c  linux.resources onto the sandbox's cgroups
 *   sup_control.c    the control socket, server side
 *   sup_actors.c     the actors on the loop, started and stopped
 *   sup_gofer.c      the gofer volumes' hooks
 *   sup_restore.c    `ursa restore`'s hooks
 *   sup_crash.c      the last word when dying of a fault
 */
#ifndef URSA_ACTORS_SUP_INT_H
#define URSA_ACTORS_SUP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/types.h>

#include "actors/checkpointer.h"
#include "actors/gofer/gofer.h"
#include "actors/gofer/thread.h"
#include "actors/hosted.h"
#include "actors/netstack.h"
#include "actors/supervisor.h"
#include "host/cgroup.h"
#include "runtime/err.h"
#include "runtime/loop.h"
#include "runtime/timer.h"

struct ctl_conn;
struct ckpt_dev_map;

/* The supervisor: one per process (urs_supervisor_main's), its loop and
 * everything on it. */
struct sup {
	struct urs_loop loop; /* its own (a supervisor process) */
	struct urs_loop *lp;  /* the one it runs on: &loop, or its host's */
	bool hosted;	      /* adopted by a host (actors/sup_hosted.c) */
	/* an op, timer or connection of it has ended: a host frees it once all
	 * have; in a supervisor process NULL (it exits instead), or, while a
	 * late hand-over waits for its connections, that hand-over's next try */
	void (*part_ended)(struct sup *s);
	int state_dfd;		 /* a host's: ROOT/ID, held (-1: by path, a->state_dir) */
	struct urs_sc_count *sc; /* a host's: its counted seccomp denials, or NULL */
	struct urs_sup_args *a;
	pid_t init_pid;
	uint64_t stdio_dev[3], stdio_ino[3]; /* what the init was given as 0-2, told with READY */
	int pidfd, sync_fd, ctl_fd, sig_fd;
	int status; /* wait status */
	bool exited;
	unsigned conns;	       /* open control connections (capped) */
	struct urs_cgroup *cg; /* for metrics, NULL without cgroups */
	int tapfd;	       /* the sandbox's NIC (networking on), else -1 */
	struct urs_net_cfg netcfg;
	struct urs_netstack *net;
	struct urs_op pid_op, accept_op, sig_op;
	struct urs_timer accept_retry;		/* accept again later: out of fds, memory */
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
	/* the shim's in-process start (urs_sup_hosted_start), told then too,
	 * or when execd_wait ends first (as a "start" waits at most) */
	urs_hosted_done execd_done;
	void *execd_arg;
	struct urs_timer execd_wait;
	/* a lazy restore's pager (ckpt/lazy.h), its memory still coming in
	 * while paging: "exec-wait" waits for that too (a dump would refuse) */
	struct ckpt_lazy *lazy;
	bool paging, lazy_watched;
	struct urs_op lazy_op;
	uint64_t lazy_val;
};

/* ---- supervisor.c ---- */

/* The init killed (during setup) and waited for, not reaped. */
void sup_kill_init(struct sup *s);
/* Has the init ended? Then its wait status is in s->status. */
bool sup_init_ended(struct sup *s);
/* ROOT/ID/exit: the init's wait status; returns the exit code it means. */
int sup_write_exit(struct sup *s);

/* Something of @s that kept it alive has ended (see part_ended). */
static inline void sup_part_ended(struct sup *s)
{
	if (s->part_ended)
		s->part_ended(s);
}

/* ---- sup_hosted.c ---- */

/* Hand the sandbox over to a host (--host-socket): 1 done (exit now), 0
 * serve it ourselves (not one to hand over, or no host took it). */
int sup_hand_over(struct sup *s);
/* The same once a lazy restore's paging is done (its pager freed), from the
 * loop: the control socket's accept cancelled, its open connections
 * answered first; if a host takes it, the process exits there. */
void sup_hand_over_late(struct sup *s);
/* Something of an adopted @s ended: freed if it was the last. */
void sup_hosted_release(struct sup *s);

/* ---- sup_boot.c: the boot steps, in the order urs_supervisor_main takes
 * them. Each reports its own failure to the `ursa` command and returns
 * nonzero (the init, if there is one, killed). */

extern struct urs_cgroup sup_cg, sup_home; /* the sandbox's; the caller's own (v1) */
extern char sup_cgstr[URS_CG_STRING_MAX];  /* sup_cg serialized, for the reports */
extern char sup_msg[600];		   /* the failing step's message */

/* The process itself: fd table, session, name, death signal, dumpability. */
int sup_boot_self(struct sup *s);
/* What must hold before anything is created (a restore's saved state,
 * gofer volumes). */
int sup_boot_checks(struct sup *s);
/* The sandbox's cgroup, made and entered, its resources applied; *@cgv2:
 * the v2 cgroup's directory for CLONE_INTO_CGROUP, or -1. */
int sup_boot_cgroup(struct sup *s, int *cgv2);
/* The sync socket between us and the init. */
int sup_boot_sync(struct sup *s);
/* The init, cloned into its namespaces and the v2 cgroup @cgv2. */
int sup_boot_init(struct sup *s, int cgv2);
/* Before the init builds the root (id maps, the tap, early hooks), until
 * its READY. */
int sup_boot_setup(struct sup *s);
/* `ursa restore` without gofer volumes: the init becomes the image. */
int sup_boot_restore(struct sup *s);
/* The control socket, READY to the command, the start of run/do. */
int sup_boot_ready(struct sup *s);
/* Let go of the caller's fds and stdio; our signals into a signalfd. */
void sup_boot_let_go(struct sup *s);

/* ---- sup_report.c ---- */

/* The sandbox's cgroups once made, and the caller's own (v1). */
extern struct urs_cgroup *sup_made_cg, *sup_made_home;

/* URS_SUP_CGROUP_MADE to the parent: the cgroup @cg exists. */
void sup_progress_cgroup(struct urs_sup_args *a, const char *cg);
/* READY (@code 0) or an error to the parent. */
void sup_report(struct urs_sup_args *a, int code, pid_t pid, const char *cg, const char *msg);
/* what the init has as fds 0-2 now, told with READY (the record's stdio) */
void sup_report_stdio(struct sup *s);
/* READY, then the parent's word that its record is written (-EPIPE: none). */
int sup_ready_recorded(struct sup *s, const char *cgstr);
/* the record of a killed predecessor whose cgroups this sandbox took over,
 * dropped once the sandbox is recorded (actors/sup_boot.c) */
void sup_adopt_done(const struct urs_sup_args *a);
/* ROOT of the sandbox's record ROOT/ID (a->state_dir) into @root: 0, or
 * -EINVAL where it has none (`ursa do`) */
int sup_state_root(const struct urs_sup_args *a, char *root, size_t len);
/* READY was not taken: the init and what was made go. */
void sup_abandon(struct sup *s);

/* ---- sup_footprint.c ---- */

/* Close every fd from 3 up except those in @keep (-1 entries ignored). */
void sup_close_all_but(int *keep, size_t n);
/* The fd table grown to 256 slots while we are single-threaded. */
void sup_prewarm_fd_table(void);
/* The boot's dead heap and stack pages back to the kernel. */
void sup_release_boot_memory(void);

/* ---- sup_cgself.c ---- */

/* The supervisor's join of the sandbox's v2 cgroup, and its way back to
 * the caller's memory cgroup (the why: actors/sup_cgself.c). */
struct sup_join_v2 {
	char procs[URS_CG_PATH_MAX + 16]; /* the v2 cgroup's cgroup.procs */
	bool needed, joined;
	bool later_off; /* no join once running (we could not lower our OOM score) */
	/* we could not lower our OOM score: back to the caller's v1 memory
	 * cgroup once running ("The supervisor and the OOM killer") */
	struct urs_cgroup *mem_home;
};
extern struct sup_join_v2 sup_j2;

/* Join the v2 cgroup now if we are to join it (before a restore's charged
 * writes); ckpt_restore_opts.before_charged. */
int sup_join_v2_now(void *ctx);
/* Whether we join the v2 cgroup of @cg (only if the init was born there). */
void sup_join_v2_setup(const struct urs_cgroup *cg, bool init_placed);
/* The v2 join, on a thread (after sup_close_all_but and the loop's ring). */
void sup_join_v2_start(void);
/* We could not lower our OOM score: once running, out of the sandbox's
 * memory cgroup (back to @home's, v1) or no v2 join (unified). */
void sup_oom_fallback(struct urs_cgroup *cg, struct urs_cgroup *home);
/* Back to the caller's memory cgroup (sup_oom_fallback). */
void sup_memory_leave(void);
/* Out of the sandbox's v1 pids cgroup, then its pids limit written. */
int sup_pids_leave(struct urs_cgroup *cg, struct urs_cgroup *home, const struct urs_spec *spec,
		   struct urs_err *err);

/* ---- sup_control.c ---- */

/* Accept on the control socket (once the loop exists). */
void sup_accept_start(struct sup *s);

/* The control socket DIR/ctl.sock, listening: its fd or -errno. */
int sup_ctl_listen(const char *dir);
/* The loop's callback for accepted control connections. */
void sup_accept_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);
/* The loop's callback for a control connection's request and reply. */
void sup_conn_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);
/* START sent: watch for the init's exec. */
void sup_watch_exec(struct sup *s);
/* The shim's in-process start done (once; its time limit disarmed). */
void sup_execd_done(struct sup *s);
/* The "exec-wait"s answered, if the init has exec'd and no page is to come. */
void sup_exec_waiters_answer(struct sup *s);

/* ---- sup_actors.c ---- */

/* The actors on the loop, once it exists. */
void sup_start_actors(struct sup *s);
/* The checkpointer alone (sup_start_actors', a host's). */
void sup_start_checkpointer(struct sup *s);
/* ... stopped, and the loop with them. */
void sup_stop_actors(struct sup *s);

/* ---- sup_gofer.c ---- */

/* Before the clone: /dev/fuse and the host directory of each volume. */
int sup_gofer_open(struct urs_sup_args *a, struct urs_err *err);
/* Those fds closed, unserved. */
void sup_gofer_close_fds(struct urs_launch *L);
/* READY given: each volume served on the gofer thread. */
int sup_gofer_start(struct sup *s);
/* The gofer thread stopped. */
void sup_gofer_stop(struct sup *s);
/* Append the gofer volumes' ursa_gofer_* series to the @n bytes at @buf
 * (@len in all). */
int sup_gofer_metrics(struct sup *s, char *buf, int n, size_t len);
/* Restore: the saved volumes checked against this configuration. */
int sup_gofer_saved_check(struct sup *s, struct urs_err *err);
/* Restored: each volume continues from its saved state. */
void sup_gofer_import(struct sup *s);

/* ---- sup_restore.c ---- */

/* Devices the files of a restore may have moved to (ckpt_restore_opts.dev_map):
 * gofer volumes, tmpfs mounts, the writable layer of `ursa do --id`. */
#define SUP_DEV_MAP (URS_GOFER_MAX + 40)

/* `ursa restore`: DIR/supervisor.img read and verified. */
int sup_supstate_load(struct sup *s, struct urs_err *err);
/* The files of tmpfs mounts and of a writable layer, before the processes;
 * their devices mapped in @map (*@n entries). */
int sup_restore_files(struct sup *s, struct ckpt_dev_map *map, uint32_t *n, struct urs_err *err);
/* `ursa restore` with gofer volumes, once they serve; READY after it. */
int sup_late_ready(struct sup *s);
struct ckpt_restore_opts;
/* A restore's options for --lazy-pages (a->restore_lazy): the pager into s->lazy. */
void sup_lazy_opts(struct sup *s, struct ckpt_restore_opts *ro);
/* On the loop: the end of paging awaited (s->paging until then). */
void sup_lazy_watch(struct sup *s);

#endif
