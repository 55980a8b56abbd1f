/*
 * ckpt/run.c — a running or paused container's checkpoint from its lock to
 * the last cleanup (ckpt/run.h): what `ursa checkpoint` does between its
 * flags and its exit status. The sandbox is frozen by the cgroup v2
 * freezer (or stopped with ptrace without one); a paused one stays paused.
 * A refusal leaves the sandbox as it was and no image. docs/checkpoint.md
 * has the details.
 */
#include "ckpt/run.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "ckpt/container.h"
#include "ckpt/key.h"
#include "ckpt/trace.h"
#include "host/cgroup.h"
#include "host/fs.h"
#include "host/proc.h"
#include "runtime/common.h"
#include "runtime/io.h"

void ckpt_worklog(const char *work, const char *name, const char *fmt, ...)
{
	if (!work)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", work, name);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int) sizeof(line) - 2)
		n = (int) sizeof(line) - 2;
	line[n++] = '\n';
	if (write(fd, line, (size_t) n) < 0) {
		/* a log line is best effort */
	}
}

/* An empty DIR/NAME, for clients that test for a file CRIU writes. */
static void client_marker(const char *dir, const char *name)
{
	if (!dir)
		return;
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		close(fd);
}

/* one checkpoint, from the lock to the last cleanup */
struct ckpt_run {
	const struct ckpt_run_opts *o;
	struct urs_state *st;
	struct urs_err *err;
	char sdir[PATH_MAX], dir[PATH_MAX];
	int pages_fd; /* to the store, or -1 (DIR/pages.img) */
	bool started; /* the store's start called */
	bool asked;   /* the supervisor asked for its state */
	uint8_t key[CKPT_KEY_LEN];
	struct urs_cgroup cg;
	bool have_cg;
	const char *freezer; /* the cgroup v2 directory, or NULL (ptrace stops it) */
	bool sup_apart;	     /* the supervisor is not in the freezer's cgroup */
	bool paused;	     /* it was paused, and is again when we are done */
	bool moved;	     /* its pause moved to the v2 freezer (pause_to_v2) */
	int pidfd;
	double killed_at; /* urs_now_ms() at the SIGKILL (finish) */
	int guardfd;	  /* the supervisor's guard, or -1 */
	bool masked;	  /* every signal but SIGKILL blocked (oldmask to restore) */
	sigset_t oldmask;
};

/* one checkpoint of a container at a time (a second one's refusal would
 * thaw the cgroup under the first); returns the locked state dir's fd.
 * A paused container is checkpointed too (containerd and podman pause
 * before they checkpoint), and stays paused: c->paused says so. */
static int lock_running(struct ckpt_run *c)
{
	const char *id = c->st->id;
	urs_state_path(c->sdir, sizeof(c->sdir), c->o->root, id, NULL);
	int fd = open(c->sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int r = urs_err_set(c->err, -errno, "checkpoint: container %s: %s", id,
				    fd >= 0 && errno == EWOULDBLOCK
					    ? "a checkpoint is already running"
					    : strerror(errno));
		if (fd >= 0)
			close(fd);
		return r;
	}
	enum urs_status s = urs_container_status(c->st);
	if (s != URS_ST_RUNNING && s != URS_ST_PAUSED) {
		close(fd);
		return urs_err_set(c->err, -ESRCH, "checkpoint: container %s is %s, not running",
				   id, urs_status_name(s));
	}
	c->paused = s == URS_ST_PAUSED;
	/* an init started a moment ago may not have exec'd yet: it still holds
	 * the supervisor's fds, and the dump would refuse them */
	if (!c->paused)
		c->o->sup->exec_wait(c->o->sup_ctx, c->sdir);
	return fd;
}

/* the image directory, made (0700) and resolved into c->dir; for object
 * storage, the store's stage directory and its pipe */
static int image_dir(struct ckpt_run *c)
{
	const struct ckpt_run_opts *o = c->o;
	int r = o->work ? urs_mkdir_p(o->work, 0700) : 0;
	if (r < 0)
		return urs_err_set(c->err, r, "checkpoint: creating %s: %s", o->work, strerror(-r));
	if (o->store) {
		r = o->store->start(o->store_ctx, c->dir, sizeof(c->dir), &c->pages_fd, c->err);
		if (r < 0)
			return urs_err_wrap(c->err, r, "checkpoint: %s", o->image);
		c->started = true;
		return 0;
	}
	r = urs_mkdir_p(o->image, 0700);
	if (r < 0 || !realpath(o->image, c->dir))
		return urs_err_set(c->err, r < 0 ? r : -errno, "checkpoint: creating %s: %s",
				   o->image, strerror(r < 0 ? -r : errno));
	return 0;
}

/* Interrupted halfway, the tasks would go on with injected registers, stay
 * frozen, or lose their pause: nothing but SIGKILL stops us from the first
 * freeze to the last cleanup (the guard covers SIGKILL). */
static void mask_signals(struct ckpt_run *c)
{
	if (c->masked)
		return;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &c->oldmask);
	c->masked = true;
}

/* a pause moved to v2 (pause_to_v2) back: paused again by the v1 freezer,
 * then thawed in v2 */
static int pause_back(struct ckpt_run *c, struct urs_err *err)
{
	int r = urs_cg_freeze(&c->cg, true, err);
	return r < 0 ? r : urs_cg2_freeze(c->freezer, false, err);
}

/* A paused container is frozen by the v1 freezer on hybrid hosts; the dump
 * needs the v2 one. The v2 freeze is asked first, then the v1 thaw: each
 * task goes from one freezer into the other without running. */
static int pause_to_v2(struct ckpt_run *c)
{
	struct urs_err err = {{0}};
	const char *id = c->st->id;
	if (!c->freezer)
		return urs_err_set(c->err, -ENOTSUP,
				   "checkpoint: container %s is paused, and a paused container is "
				   "checkpointed only with the cgroup v2 freezer (this host has "
				   "none)",
				   id);
	if (!c->cg.h[URS_CG_FREEZER].path[0])
		return 0; /* unified: paused by the freezer the dump uses */
	int r;
	if ((r = urs_cg2_freeze_write(c->freezer, true, &err)) < 0 ||
	    (r = urs_cg_freeze(&c->cg, false, &err)) < 0 ||
	    (r = urs_cg2_wait_frozen(c->freezer, &err)) < 0) {
		urs_err_set(c->err, r,
			    "checkpoint %s: moving its pause to the cgroup v2 freezer: %s", id,
			    err.msg);
		pause_back(c, NULL);
		return r;
	}
	c->moved = true;
	return 0;
}

/* the sandbox as it was before the checkpoint: thawed, or paused again */
static int unfreeze(struct ckpt_run *c, struct urs_err *err)
{
	if (!c->paused)
		return c->freezer ? urs_cg2_freeze(c->freezer, false, err) : 0;
	if (!c->moved)
		return 0;
	c->moved = false;
	return pause_back(c, err);
}

/* the cgroup and its freezer, the init's pidfd */
static int open_sandbox(struct ckpt_run *c)
{
	struct urs_state *st = c->st;
	if (st->cgroup && *st->cgroup) {
		int r = urs_cg_from_string(&c->cg, st->cgroup, c->err);
		if (r < 0)
			return urs_err_wrap(c->err, r, "checkpoint");
		c->have_cg = true;
		/* the cgroup v2 freezer (hybrid hosts have one beside the v1
		 * hierarchies); without it the dumper stops the tasks with ptrace */
		if (c->cg.h[URS_CG_V2].path[0])
			c->freezer = c->cg.h[URS_CG_V2].path;
	}
	if (c->paused && !c->have_cg)
		return urs_err_set(c->err, -ENOTSUP,
				   "checkpoint: container %s is paused but has no cgroup", st->id);
	if ((c->pidfd = urs_pidfd_open_checked(st->pid, st->pid_start)) < 0)
		return urs_err_set(c->err, -ESRCH, "checkpoint: container %s: its init is gone",
				   st->id);
	/* A supervisor in the freezer's cgroup must have written its state
	 * before the freeze. Out of it (hybrid hosts: actors/sup_cgself.c,
	 * sup_join_v2_setup; or one that could not lower its OOM score) it writes
	 * while we dump. */
	pid_t sup = urs_state_sup_live(st); /* 0: handed over to a host, or gone */
	c->sup_apart = c->freezer && !(sup && urs_cg_v2_has(&c->cg, sup));
	return 0;
}

/* the key, the sandbox opened, the guard, the supervisor asked for its
 * state, a paused sandbox's pause moved: all but the dump */
static int prepare(struct ckpt_run *c)
{
	const struct ckpt_run_opts *o = c->o;
	const char *id = c->st->id;
	int r = ckpt_key_file(o->key_file, true, c->key, c->err);
	if (r < 0)
		return urs_err_wrap(c->err, r, "checkpoint %s", id);
	if ((r = open_sandbox(c)) < 0)
		return r;
	bool hybrid = c->have_cg && c->cg.h[URS_CG_FREEZER].path[0];
	/* an older image's supervisor state: never sealed into this one */
	o->sup->forget(o->sup_ctx, c->dir);
	/* The guard thaws the v2 freezer when we end, killed or not: kept for
	 * a running sandbox, and for a paused one whose pause moves to v2; not
	 * for one paused by v2 itself (unified hosts), which it would resume. */
	if (!c->paused || hybrid)
		c->guardfd = o->sup->guard(o->sup_ctx, c->sdir);
	/* a supervisor paused with its sandbox (unified hosts) cannot write its
	 * state: the image goes without it, as from an older supervisor */
	if (c->paused && !c->sup_apart) {
		ckpt_worklog(o->work, "dump.log",
			     "supervisor state: not saved (the supervisor is paused with its "
			     "sandbox)");
	} else {
		c->asked = true;
		if ((r = o->sup->ask(o->sup_ctx, c->sdir, c->dir, o->key_file, c->err)) < 0)
			goto failed;
	}
	if (c->paused) {
		mask_signals(c);
		if ((r = pause_to_v2(c)) < 0)
			return r;
	}
	ckpt_trace("cli: prepared");
	if (c->asked && !c->sup_apart && (r = o->sup->wait(o->sup_ctx, c->err)) < 0)
		goto failed;
	return 0;
failed:
	ckpt_worklog(o->work, "dump.log", "error: %s", c->err->msg);
	return urs_err_wrap(c->err, r, "checkpoint %s", id);
}

/* after a complete image: as it was (--leave-running), or killed while
 * still frozen, so it runs no further than the image, and removed */
static int finish(struct ckpt_run *c, bool leave)
{
	struct urs_err err = {{0}};
	const char *id = c->st->id;
	int r;
	if (leave) {
		if ((r = unfreeze(c, &err)) < 0)
			return urs_err_set(c->err, r, "checkpoint %s: %s: %s", id,
					   c->paused ? "pausing" : "thawing", err.msg);
		return 0;
	}
	/* the pid namespace dies with its init (a frozen task still dies of SIGKILL) */
	urs_pidfd_signal(c->pidfd, SIGKILL);
	c->killed_at = urs_now_ms();
	/* the thaw (~0.15 ms) is only for a supervisor frozen with it (unified
	 * hosts); the cgroup goes with the container */
	if (c->freezer && !c->sup_apart)
		urs_cg2_freeze(c->freezer, false, NULL);
	ckpt_trace("cli: killed and thawed");
	if ((r = c->o->remove(c->st, &err)) < 0) {
		/* a cgroup left behind must not stay frozen: a later sandbox
		 * with the same cgroupsPath would reuse it */
		if (c->freezer && c->sup_apart)
			urs_cg2_freeze(c->freezer, false, NULL);
		return urs_err_set(c->err, r,
				   "checkpoint %s: the image is complete, but deleting the "
				   "container failed: %s",
				   id, err.msg);
	}
	ckpt_trace("cli: container removed");
	return 0;
}

/* what the dump did, in --work-path/dump.log */
static void dump_log(const char *work, const struct ckpt_dump_stats *ds, double pause)
{
	ckpt_worklog(work, "dump.log",
		     "dumped %u tasks, %llu pages (%llu zero pages skipped) in %llu pages of "
		     "data, %llu bytes in %.3f ms",
		     ds->ntasks, (unsigned long long) ds->pages,
		     (unsigned long long) ds->zero_pages, (unsigned long long) ds->data_pages,
		     (unsigned long long) ds->image_bytes, ds->ms);
	if (pause > 0)
		ckpt_worklog(work, "dump.log",
			     "paused %.3f ms; %llu pages copied before, in %u rounds and %.3f ms, "
			     "%llu of them unwritten since; hot set %u blocks",
			     pause, (unsigned long long) ds->precopy_pages, ds->precopy_rounds,
			     ds->precopy_ms, (unsigned long long) ds->precopy_reused,
			     ds->hot_blocks);
}

static int sup_wait_cb(void *ctx, struct urs_err *err)
{
	const struct ckpt_run_opts *o = ctx;
	return o->sup->wait(o->sup_ctx, err);
}

/* the dump's failure, and where: a full or read-only file system names
 * only the file (pages.img, core.img), so the image's location is added;
 * a store that stopped first gives its reason */
static int dump_failed(struct ckpt_run *c, int r)
{
	const struct ckpt_run_opts *o = c->o;
	const char *id = c->st->id, *where = o->store ? o->image : c->dir;
	struct urs_err why = {{0}}, inner = *c->err;
	if (r == -EPIPE && o->store && o->store->why(o->store_ctx, &why) < 0) {
		ckpt_worklog(o->work, "dump.log", "error: %s", why.msg);
		return urs_err_set(c->err, r, "checkpoint %s: %s: %s (the dump stopped: %s)", id,
				   o->image, why.msg, inner.msg);
	}
	ckpt_worklog(o->work, "dump.log", "error: %s", inner.msg);
	if (strstr(inner.msg, where))
		return urs_err_wrap(c->err, r, "checkpoint %s", id);
	return urs_err_set(c->err, r, "checkpoint %s: %s (image directory %s)", id, inner.msg,
			   where);
}

/* the image made, committed, and the sandbox let go or killed; 1: failed
 * with the image complete; @trk: the pre-copy's write tracking, still on */
static int dump_commit(struct ckpt_run *c, struct ckpt_precopy **trk)
{
	const struct ckpt_run_opts *o = c->o;
	struct ckpt_container_ckpt co = {
		.dir = c->dir,
		.state_root = o->root,
		.record = c->st,
		.freezer = c->freezer,
		.key = c->key,
		.seccomp_replace = o->seccomp_replace,
		.seccomp_ctx = c->st,
		.sup_wait = c->asked && c->sup_apart ? sup_wait_cb : NULL,
		.sup_ctx = (void *) o,
		.pages_stream = c->pages_fd >= 0,
		.pages_fd = c->pages_fd,
		.precopy = o->leave || o->precopy,
		/* migration: the pre-copy committed while it runs
		 * (--leave-running thaws before the upload ends) */
		.pages_cut = o->store && !o->leave && !c->paused ? o->store->cut : NULL,
		.cut_ctx = o->store_ctx,
		.thaw_early = o->leave,
		.paused = c->paused,
		.tracking = trk};
	struct ckpt_dump_stats ds;
	int r = ckpt_container_checkpoint(&co, &ds, c->err);
	if (r < 0)
		return dump_failed(c, r);
	/* --leave-running: the image holds all it needs (its page data is
	 * written, or in the store's hands): the sandbox runs on at once */
	double pause = 0;
	if (o->leave && (r = finish(c, true)) == 0 && !c->paused)
		pause = (ds.thawed_at ? ds.thawed_at : urs_now_ms()) - ds.frozen_at;
	struct urs_err left = *c->err; /* finish's failure, if it failed */
	int rc = o->store ? o->store->commit(o->store_ctx, c->err) : 0;
	if (rc < 0) {
		/* a failure leaves the sandbox as it was: it runs on, no image */
		if (!o->leave)
			unfreeze(c, NULL);
		urs_err_wrap(c->err, rc, "checkpoint %s: %s", c->st->id, o->image);
		if (r < 0) { /* and the thaw (or the pause) failed before: say both */
			size_t n = strnlen(c->err->msg, sizeof(c->err->msg));
			snprintf(c->err->msg + n, sizeof(c->err->msg) - n, "; before that: %s",
				 left.msg);
		}
		return rc;
	}
	dump_log(o->work, &ds, pause);
	/* the files CRIU's clients look for: podman restores only an image
	 * holding CRIU's inventory.img (it stats it) and exports the work
	 * directory's stats-dump with it; empty, ursa's restore reads neither */
	client_marker(o->store ? NULL : c->dir, "inventory.img");
	client_marker(o->work, "stats-dump");
	if (r == 0 && !o->leave && (r = finish(c, false)) == 0 && ds.frozen_at)
		ckpt_worklog(o->work, "dump.log",
			     "frozen %.3f ms until killed; %llu pages copied before, in %u rounds; "
			     "hot set %u blocks",
			     c->killed_at - ds.frozen_at, (unsigned long long) ds.precopy_pages,
			     ds.precopy_rounds, ds.hot_blocks);
	return r < 0 ? 1 : 0;
}

/* dump_commit, the write tracking ended once the sandbox runs again or is
 * killed: never inside the freeze */
static int dump(struct ckpt_run *c)
{
	struct ckpt_precopy *trk = NULL;
	int r = dump_commit(c, &trk);
	ckpt_dump_tracking_end(trk);
	ckpt_trace("dump: tracking off");
	return r;
}

/* whatever the outcome: the store let go, the key wiped, fds closed, the
 * guard last (if we are killed before, the supervisor sees it closed and
 * thaws the v2 freezer) */
static void release(struct ckpt_run *c)
{
	if (c->started)
		c->o->store->end(c->o->store_ctx); /* uncommitted: it removes what it wrote */
	explicit_bzero(c->key, sizeof(c->key));
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->have_cg)
		urs_cg_close(&c->cg);
	if (c->guardfd >= 0)
		close(c->guardfd);
	if (c->masked)
		pthread_sigmask(SIG_SETMASK, &c->oldmask, NULL);
}

int ckpt_run_checkpoint(const struct ckpt_run_opts *o, struct urs_err *err)
{
	if (!o->image)
		return urs_err_set(err, -EINVAL, "checkpoint: --image-path is required");
	struct ckpt_run c = {
		.o = o, .st = o->st, .err = err, .pages_fd = -1, .pidfd = -1, .guardfd = -1};
	_cleanup_close_ int lockfd = lock_running(&c);
	if (lockfd < 0)
		return lockfd;
	int r = image_dir(&c);
	if (r == 0 && (r = prepare(&c)) == 0) {
		mask_signals(&c);
		r = dump(&c);
	}
	/* r > 0: failed with the image complete; < 0: no image */
	if (r < 0 && c.asked)
		o->sup->forget(o->sup_ctx, c.dir);
	if (r < 0 && c.paused)
		unfreeze(&c, NULL); /* a refusal leaves it paused */
	release(&c);
	return r > 0 ? -EIO : r;
}
