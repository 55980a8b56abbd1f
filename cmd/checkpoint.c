/*
 * cmd/checkpoint.c — `ursa checkpoint --image-path DIR [--leave-running]
 * [--work-path DIR] ID` (runc-compatible): the container locked and found
 * running, its supervisor asked for its own state, the image made by the
 * ckpt/ library (ckpt_container_checkpoint: the frozen tree, its files, the
 * record, the manifest), then the container thawed (--leave-running) or
 * killed and deleted. Driven from the CLI, synchronously: the supervisor sits in the
 * same cgroup and is frozen with the tree for the few milliseconds it takes.
 * A refusal (an unsupported resource, named with its pid) leaves the sandbox
 * running as before and no image. docs/checkpoint.md has the details.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "actors/checkpointer.h"
#include "actors/supervisor.h"
#include "ckpt/container.h"
#include "ckpt/trace.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/remote.h"
#include "host/cgroup.h"
#include "host/fs.h"
#include "host/proc.h"
#include "runtime/common.h"
#include "runtime/io.h"

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

/* A line in --work-path/NAME (containerd shows these logs on failure). */
void urs_ckpt_worklog(const char *work, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void urs_ckpt_worklog(const char *work, const char *name, const char *fmt, ...)
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

/* The supervisor's answer to "checkpoint DIR" (asked at @asked): its state
 * is in DIR/supervisor.img. Closes *ctlfd (-1 after). */
static int sup_state_wait(int *ctlfd, const struct urs_state *st, const char *work,
			  const struct timespec *asked, struct urs_err *err)
{
	char reply[512];
	int r = *ctlfd < 0 ? *ctlfd : urs_ctl_recv(*ctlfd, reply, sizeof(reply));
	*ctlfd = -1; /* closed by urs_ctl_recv */
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ckpt_trace("cli: supervisor state written");
	urs_debug("checkpoint %s: waited %.3f ms for the supervisor's state", st->id,
		  (double) (now.tv_sec - asked->tv_sec) * 1e3 +
			  (now.tv_nsec - asked->tv_nsec) / 1e6);
	if (r == 0 && !strcmp(reply, "error: unknown request")) {
		/* a supervisor started by an older ursa: an image without its
		 * state (restore then starts its counters from zero) */
		urs_ckpt_worklog(work, "dump.log",
				 "supervisor state: not supported by its supervisor");
		return 0;
	}
	if (r < 0)
		return urs_err_set(err, r, "the supervisor's state: %s", strerror(-r));
	if (strncmp(reply, "ok", 2))
		return urs_err_set(err, -EIO, "the supervisor's state: %s", reply);
	return 0;
}

/* The error, and where: a full or read-only file system names only the
 * file (pages.img, core.img), so the image directory is added. */
static void say_failure(const char *id, const char *dir, const struct urs_err *err)
{
	if (strstr(err->msg, dir))
		urs_error("checkpoint %s: %s", id, err->msg);
	else
		urs_error("checkpoint %s: %s (image directory %s)", id, err->msg, dir);
}

/* the supervisor's state, asked before the freeze (ckpt_container_ckpt.sup_wait) */
struct sup_ask {
	int ctlfd; /* -2 not asked, -1 answered (or failed), else waiting */
	const struct urs_state *st;
	const char *work;
	struct timespec asked;
};

static int sup_wait_cb(void *ctx, struct urs_err *err)
{
	struct sup_ask *a = ctx;
	return a->ctlfd == -1 ? 0 : sup_state_wait(&a->ctlfd, a->st, a->work, &a->asked, err);
}

/* the runc/CRIU options ursa cannot honour */
static bool refused(const char *cgmode, bool lazy, bool pre, const char *parent,
		    const char *page_server, int status_fd, size_t external)
{
	if (lazy || pre || parent || page_server || status_fd >= 0 || external) {
		urs_error("checkpoint: --%s is not supported", external	     ? "external"
							       : lazy	     ? "lazy-pages"
							       : pre	     ? "pre-dump"
							       : parent	     ? "parent-path"
							       : page_server ? "page-server"
									     : "status-fd");
		return true;
	}
	if (cgmode && strcmp(cgmode, "soft") && strcmp(cgmode, "full") &&
	    strcmp(cgmode, "strict") && strcmp(cgmode, "ignore")) {
		urs_error("checkpoint: --manage-cgroups-mode %s: unknown mode", cgmode);
		return true;
	}
	return false;
}

/* A container started a moment ago (run -d, start) may have an init that
 * has not exec'd its process yet: it still holds the supervisor's fds, and
 * the dump would refuse them. Its supervisor answers "exec-wait" once it
 * has (an older supervisor: "unknown request", and we go on). */
static void wait_exec(const char *sdir)
{
	char reply[64];
	int fd = urs_ctl_send(sdir, "exec-wait");
	if (fd >= 0)
		urs_ctl_recv(fd, reply, sizeof(reply)); /* closes fd; 10 s at most */
}

/* one checkpoint of a container at a time (a second one's refusal would
 * thaw the cgroup under the first); returns the locked state dir's fd.
 * A paused container is checkpointed too (containerd and podman pause
 * before they checkpoint), and stays paused: *paused says so. */
static int lock_running(const struct urs_state *st, char *sdir, size_t len, bool *paused)
{
	urs_state_path(sdir, len, G.root, st->id, NULL);
	int fd = open(sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		urs_error("checkpoint: container %s: %s", st->id,
			  fd >= 0 && errno == EWOULDBLOCK ? "a checkpoint is already running"
							  : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	enum urs_status s = urs_container_status(st);
	if (s != URS_ST_RUNNING && s != URS_ST_PAUSED) {
		urs_error("checkpoint: container %s is %s, not running", st->id,
			  urs_status_name(s));
		close(fd);
		return -1;
	}
	*paused = s == URS_ST_PAUSED;
	if (!*paused)
		wait_exec(sdir);
	return fd;
}

/* a pause moved to v2 (pause_to_v2) back: paused again by the v1 freezer,
 * then thawed in v2 */
static int pause_back(struct urs_cgroup *cg, const char *freezer, struct urs_err *err)
{
	int r = urs_cg_freeze(cg, true, err);
	return r < 0 ? r : urs_cg2_freeze(freezer, false, err);
}

/* A paused container is frozen by the v1 freezer on hybrid hosts; the dump
 * needs the v2 one. The v2 freeze is asked first, then the v1 thaw: each
 * task goes from one freezer into the other without running. */
static int pause_to_v2(const struct urs_state *st, struct urs_cgroup *cg, const char *freezer)
{
	struct urs_err err = {{0}};
	if (!freezer) {
		urs_error("checkpoint: container %s is paused, and a paused container is "
			  "checkpointed only with the cgroup v2 freezer (this host has none)",
			  st->id);
		return -1;
	}
	if (!cg->h[URS_CG_FREEZER].path[0])
		return 0; /* unified: paused by the freezer the dump uses */
	if (urs_cg2_freeze_write(freezer, true, &err) < 0 || urs_cg_freeze(cg, false, &err) < 0 ||
	    urs_cg2_wait_frozen(freezer, &err) < 0) {
		urs_error("checkpoint %s: moving its pause to the cgroup v2 freezer: %s", st->id,
			  err.msg);
		pause_back(cg, freezer, NULL);
		return -1;
	}
	return 0;
}

struct ckpt_args {
	const char *image, *work, *profile;
	char key_file[PATH_MAX]; /* the key: --key-file or the host's, absolute */
	bool leave, precopy;
};

/* the key, --key-file or the host's (ckpt_key_path), made absolute (the
 * supervisor seals its state with it) and handed to ursa-store as restore
 * hands its own ($URSA_CKPT_KEY) */
static int key_file_arg(const char *arg, char *out, size_t len)
{
	char host[PATH_MAX], cwd[PATH_MAX];
	if (!arg && ckpt_key_path(host, sizeof(host)) == 0)
		arg = host;
	int n = !arg			   ? -1
		: arg[0] == '/'		   ? snprintf(out, len, "%s", arg)
		: getcwd(cwd, sizeof(cwd)) ? snprintf(out, len, "%s/%s", cwd, arg)
					   : -1;
	if (n < 0 || (size_t) n >= len || strpbrk(out, "\t\n")) {
		urs_error("checkpoint: key file %s: not a usable path", arg ? arg : "(too long)");
		return -1;
	}
	if (setenv("URSA_CKPT_KEY", out, 1) < 0) {
		urs_error("checkpoint: --key-file: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* one checkpoint, from the lock to the last cleanup */
struct ckpt_run {
	struct urs_state *st;
	const struct ckpt_args *a;
	char sdir[4096], dir[4096];
	struct urs_remote_job job;
	uint8_t key[URS_CKPT_KEY_LEN]; /* made at the first checkpoint */
	struct sup_ask ask;
	struct urs_cgroup cg;
	bool have_cg;
	const char *freezer; /* the cgroup v2 directory, or NULL (ptrace stops it) */
	bool sup_apart;	     /* the supervisor is not in the freezer's cgroup */
	bool paused;	     /* it was paused, and is again when we are done */
	bool moved;	     /* its pause moved to the v2 freezer (pause_to_v2) */
	int pidfd;
	int guardfd; /* the supervisor's guard (ctl_guard), or -1 */
	bool masked; /* every signal but SIGKILL blocked (oldmask to restore) */
	sigset_t oldmask;
};

/* Interrupted halfway, the tasks would go on with injected registers, stay
 * frozen, or lose their pause: nothing but SIGKILL stops us from the first
 * freeze to the last cleanup (the guard covers SIGKILL). */
static void mask_signals(struct ckpt_run *c)
{
	if (c->masked)
		return;
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &c->oldmask);
	c->masked = true;
}

/* the sandbox as it was before the checkpoint: thawed, or paused again */
static int unfreeze(struct ckpt_run *c, struct urs_err *err)
{
	if (!c->paused)
		return c->freezer ? urs_cg2_freeze(c->freezer, false, err) : 0;
	if (!c->moved)
		return 0;
	c->moved = false;
	return pause_back(&c->cg, c->freezer, err);
}

/* after a complete image: as it was (--leave-running), or killed while
 * still frozen, so it runs no further than the image, and deleted */
static int finish(struct ckpt_run *c, bool leave)
{
	struct urs_err err = {{0}};
	const char *id = c->st->id;
	if (leave) {
		if (unfreeze(c, &err) < 0) {
			urs_error("checkpoint %s: %s: %s", id, c->paused ? "pausing" : "thawing",
				  err.msg);
			return 1;
		}
		return 0;
	}
	/* the pid namespace dies with its init (a frozen task still dies of SIGKILL) */
	urs_pidfd_signal(c->pidfd, SIGKILL);
	/* the thaw (~0.15 ms) is only for a supervisor frozen with it (unified
	 * hosts); the cgroup goes with the container */
	if (c->freezer && !c->sup_apart)
		urs_cg2_freeze(c->freezer, false, NULL);
	ckpt_trace("cli: killed and thawed");
	if (urs_container_remove(c->st, true, &err) < 0) {
		/* a cgroup left behind must not stay frozen: a later sandbox
		 * with the same cgroupsPath would reuse it */
		if (c->freezer && c->sup_apart)
			urs_cg2_freeze(c->freezer, false, NULL);
		urs_error("checkpoint %s: the image is complete, but deleting the container "
			  "failed: %s",
			  id, err.msg);
		return 1;
	}
	return 0;
}

/* what the dump did, in --work-path/dump.log */
static void dump_log(const char *work, const struct ckpt_dump_stats *ds, double pause)
{
	urs_ckpt_worklog(work, "dump.log",
			 "dumped %u tasks, %llu pages (%llu zero pages skipped), %llu bytes in "
			 "%.3f ms",
			 ds->ntasks, (unsigned long long) ds->pages,
			 (unsigned long long) ds->zero_pages, (unsigned long long) ds->image_bytes,
			 ds->ms);
	if (pause > 0)
		urs_ckpt_worklog(work, "dump.log",
				 "paused %.3f ms; %llu pages copied before, in %u rounds and %.3f "
				 "ms, %llu of them unwritten since",
				 pause, (unsigned long long) ds->precopy_pages, ds->precopy_rounds,
				 ds->precopy_ms, (unsigned long long) ds->precopy_reused);
}

/* the image directory, made (0700) and resolved into c->dir; for object
 * storage, a stage directory for the small files and ursa-store started */
static int image_dir(struct ckpt_run *c)
{
	const struct ckpt_args *a = c->a;
	if (urs_is_remote(a->image)) {
		struct urs_err err = {{0}};
		int r = a->work ? urs_mkdir_p(a->work, 0700) : 0;
		if (r < 0) {
			urs_error("checkpoint: creating %s: %s", a->work, strerror(-r));
			return -1;
		}
		if (urs_remote_put_start(a->image, G.root, a->profile, &c->job, &err) < 0) {
			urs_error("checkpoint: %s: %s", a->image, err.msg);
			return -1;
		}
		snprintf(c->dir, sizeof(c->dir), "%s", c->job.stage);
		return 0;
	}
	int r = urs_mkdir_p(a->image, 0700);
	if (r == 0 && a->work)
		r = urs_mkdir_p(a->work, 0700);
	if (r < 0 || !realpath(a->image, c->dir)) {
		urs_error("checkpoint: creating %s: %s", a->image, strerror(r < 0 ? -r : errno));
		return -1;
	}
	return 0;
}

/* the image in object storage once its last object is up; a failure leaves
 * the sandbox as it was (it runs on, no image) */
static int remote_commit(struct ckpt_run *c, bool frozen)
{
	struct urs_err err = {{0}};
	if (urs_remote_put_commit(&c->job, &err) == 0)
		return 0;
	urs_error("checkpoint %s: %s: %s", c->st->id, c->a->image, err.msg);
	if (frozen)
		unfreeze(c, NULL);
	return -1;
}

/* the supervisor asked for its own state (metrics, netstack tables,
 * config) into DIR/supervisor.img, sealed under the image's key, by its
 * checkpointer actor: answered while we prepare (and, when it is not in
 * the frozen cgroup, dump) */
static int ask_supervisor(struct ckpt_run *c)
{
	char req[4352];
	snprintf(req, sizeof(req), "%s/%s", c->dir, URS_SUPSTATE_FILE);
	unlink(req); /* an older image's: never sealed into this one */
	int n = snprintf(req, sizeof(req), "checkpoint %s\t%s", c->dir, c->a->key_file);
	if (n < 0 || (size_t) n >= sizeof(req) || strpbrk(c->dir, "\t\n")) {
		urs_error("checkpoint %s: the image directory %s (with the key file %s) is too "
			  "long or holds a tab or newline",
			  c->st->id, c->dir, c->a->key_file);
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &c->ask.asked);
	c->ask.ctlfd = urs_ctl_send(c->sdir, req);
	return 0;
}

/* the key, the cgroup and its freezer, the init's pidfd, the guard, the
 * supervisor asked for its state, a paused sandbox's pause moved: all but
 * the dump */
static int prepare(struct ckpt_run *c)
{
	struct urs_err err = {{0}};
	struct urs_state *st = c->st;
	if (urs_ckpt_key(c->a->key_file, true, c->key, &err) < 0) {
		urs_error("checkpoint %s: %s", st->id, err.msg);
		return -1;
	}
	if (st->cgroup && *st->cgroup) {
		if (urs_cmd_cgroup("checkpoint", st, &c->cg) < 0)
			return -1;
		c->have_cg = true;
		/* the cgroup v2 freezer (hybrid hosts have one beside the v1
		 * hierarchies); without it the dumper stops the tasks with ptrace */
		if (c->cg.h[URS_CG_V2].path[0])
			c->freezer = c->cg.h[URS_CG_V2].path;
	}
	if (c->paused && !c->have_cg) {
		urs_error("checkpoint: container %s is paused but has no cgroup", st->id);
		return -1;
	}
	if ((c->pidfd = urs_pidfd_open_checked(st->pid, st->pid_start)) < 0) {
		urs_error("checkpoint: container %s: its init is gone", st->id);
		return -1;
	}
	/* A supervisor in the freezer's cgroup must have written its state
	 * before the freeze. Out of it (hybrid hosts: actors/supervisor.c,
	 * join_v2_later; or one that could not lower its OOM score) it writes
	 * while we dump. */
	c->sup_apart = c->freezer && !urs_cg_v2_has(&c->cg, st->sup_pid);
	bool hybrid = c->have_cg && c->cg.h[URS_CG_FREEZER].path[0];
	/* The guard thaws the v2 freezer when we end, killed or not: kept for
	 * a running sandbox, and for a paused one whose pause moves to v2; not
	 * for one paused by v2 itself (unified hosts), which it would resume. */
	if (!c->paused || hybrid)
		c->guardfd = urs_ctl_send(c->sdir, "guard");
	/* a supervisor paused with its sandbox (unified hosts) cannot write its
	 * state: the image goes without it, as from an older supervisor */
	if (c->paused && !c->sup_apart) {
		c->ask.ctlfd = -1;
		urs_ckpt_worklog(c->a->work, "dump.log",
				 "supervisor state: not saved (the supervisor is paused with "
				 "its sandbox)");
	} else if (ask_supervisor(c) < 0) {
		return -1;
	}
	if (c->paused) {
		mask_signals(c);
		if (pause_to_v2(st, &c->cg, c->freezer) < 0)
			return -1;
		c->moved = hybrid;
	}
	ckpt_trace("cli: prepared");
	if (c->ask.ctlfd != -1 && (!c->sup_apart || c->ask.ctlfd < 0) &&
	    sup_state_wait(&c->ask.ctlfd, st, c->a->work, &c->ask.asked, &err) < 0) {
		urs_error("checkpoint %s: %s", st->id, err.msg);
		urs_ckpt_worklog(c->a->work, "dump.log", "error: %s", err.msg);
		return -1;
	}
	return 0;
}

/* the image made, committed, and the sandbox let go or killed */
static int dump(struct ckpt_run *c)
{
	const struct ckpt_args *a = c->a;
	struct urs_err err = {{0}};
	struct ckpt_container_ckpt o = {.dir = c->dir,
					.state_root = G.root,
					.record = c->st,
					.freezer = c->freezer,
					.key = c->key,
					.seccomp_replace = urs_ckpt_seccomp_replace,
					.seccomp_ctx = c->st,
					.sup_wait = c->sup_apart ? sup_wait_cb : NULL,
					.sup_ctx = &c->ask,
					.pages_stream = c->job.pid > 0,
					.pages_fd = c->job.pages_fd,
					.precopy = a->leave || a->precopy,
					.thaw_early = a->leave,
					.paused = c->paused};
	struct ckpt_dump_stats ds;
	int r = ckpt_container_checkpoint(&o, &ds, &err);
	struct urs_err why = {{0}};
	if (r == -EPIPE && c->job.pid > 0 && urs_remote_put_why(&c->job, &why) < 0) {
		/* the store stopped first: its reason, then the dump's */
		urs_error("checkpoint %s: %s: %s (the dump stopped: %s)", c->st->id, a->image,
			  why.msg, err.msg);
		urs_ckpt_worklog(a->work, "dump.log", "error: %s", why.msg);
		return 1;
	}
	if (r < 0) {
		say_failure(c->st->id, c->job.pid > 0 ? a->image : c->dir, &err);
		urs_ckpt_worklog(a->work, "dump.log", "error: %s", err.msg);
		return 1;
	}
	/* --leave-running: the image holds all it needs (its page data is
	 * written, or in ursa-store's hands): the sandbox runs on at once */
	double pause = 0;
	int rc = 0;
	if (a->leave && (rc = finish(c, true)) == 0 && !c->paused)
		pause = (ds.thawed_at ? ds.thawed_at : urs_now_ms()) - ds.frozen_at;
	if (c->job.pid > 0 && remote_commit(c, !a->leave) < 0)
		return 1;
	dump_log(a->work, &ds, pause);
	/* the files CRIU's clients look for: podman restores only an image
	 * holding CRIU's inventory.img (it stats it) and exports the work
	 * directory's stats-dump with it; empty, ursa's restore reads neither */
	client_marker(c->job.pid > 0 ? NULL : c->dir, "inventory.img");
	client_marker(a->work, "stats-dump");
	if (!a->leave && (rc = finish(c, false)) == 0 && ds.frozen_at)
		urs_ckpt_worklog(
			a->work, "dump.log",
			"frozen %.3f ms until killed; %llu pages copied before, in %u rounds",
			urs_now_ms() - ds.frozen_at, (unsigned long long) ds.precopy_pages,
			ds.precopy_rounds);
	return rc ? 2 : 0; /* 2: failed, with the image complete */
}

/* no image: none of the supervisor's state either (once it is written, if
 * the request is still being answered) */
static void forget_sup_state(struct ckpt_run *c)
{
	char reply[512], sup_img[4200];
	if (c->ask.ctlfd >= 0)
		urs_ctl_recv(c->ask.ctlfd, reply, sizeof(reply));
	snprintf(sup_img, sizeof(sup_img), "%s/%s", c->dir, URS_SUPSTATE_FILE);
	unlink(sup_img);
}

static int checkpoint_run(struct urs_state *st, const struct ckpt_args *a)
{
	if (!a->image) {
		urs_error("checkpoint: --image-path is required");
		return 1;
	}
	struct ckpt_run c = {.st = st,
			     .a = a,
			     .job = {.pid = -1, .pages_fd = -1, .ctl_fd = -1, .reply_fd = -1},
			     .ask = {.ctlfd = -2, .st = st, .work = a->work},
			     .pidfd = -1,
			     .guardfd = -1};
	_cleanup_close_ int lockfd = lock_running(st, c.sdir, sizeof(c.sdir), &c.paused);
	if (lockfd < 0 || image_dir(&c) < 0)
		return 1;
	int rc = 1;
	if (prepare(&c) == 0) {
		mask_signals(&c);
		rc = dump(&c);
	}
	if (rc == 1 && c.ask.ctlfd != -2)
		forget_sup_state(&c);
	if (rc == 1 && c.paused)
		unfreeze(&c, NULL); /* a refusal leaves it paused */
	urs_remote_job_end(&c.job); /* uncommitted: ursa-store removes what it wrote */
	explicit_bzero(c.key, sizeof(c.key));
	if (c.pidfd >= 0)
		close(c.pidfd);
	if (c.have_cg)
		urs_cg_close(&c.cg);
	/* the guard last: if we are killed before, the supervisor sees it
	 * closed and thaws the v2 freezer (actors/supervisor.c, ctl_guard) */
	if (c.guardfd >= 0)
		close(c.guardfd);
	if (c.masked)
		sigprocmask(SIG_SETMASK, &c.oldmask, NULL);
	return rc ? 1 : 0;
}

int cmd_checkpoint(int argc, char **argv)
{
	const char *image = NULL, *work = NULL, *profile = NULL, *parent = NULL, *cgmode = NULL,
		   *page_server = NULL, *key_file = NULL;
	bool leave = false, precopy = false, tcp = false, unix_sk = false, locks = false,
	     shell = false, lazy = false, pre = false, dedup = false;
	int status_fd = -1;
	struct urs_strlist empty_ns = {0}, external = {0};
	const struct urs_opt opts[] = {
		{"image-path", 0, URS_OPT_STR, &image,
		 "directory for the image (created), or s3://BUCKET/PREFIX"},
		{"key-file", 0, URS_OPT_STR, &key_file,
		 "the key that seals the image (default " CKPT_KEY_PATH ", made at first use)"},
		{"s3-profile", 0, URS_OPT_STR, &profile,
		 "profile of /etc/ursa/s3.conf for s3:// (default: $AWS_PROFILE, default)"},
		{"work-path", 0, URS_OPT_STR, &work, "directory for dump.log"},
		{"leave-running", 0, URS_OPT_FLAG, &leave,
		 "keep the container running afterwards (its memory is copied while it runs)"},
		{"pre-copy", 0, URS_OPT_FLAG, &precopy,
		 "copy memory while it runs before the freeze and kill too (migration)"},
		{"tcp-established", 0, URS_OPT_FLAG, &tcp, "(accepted: TCP is closed)"},
		{"ext-unix-sk", 0, URS_OPT_FLAG, &unix_sk, "(accepted; refused at dump)"},
		{"shell-job", 0, URS_OPT_FLAG, &shell, "(accepted: a tty on stdio is external)"},
		{"file-locks", 0, URS_OPT_FLAG, &locks,
		 "(accepted: locks are not saved, a process holding one is refused)"},
		{"manage-cgroups-mode", 0, URS_OPT_STR, &cgmode,
		 "(accepted: restore re-creates the cgroup)"},
		{"empty-ns", 0, URS_OPT_LIST, &empty_ns, "(accepted: only pid state is saved)"},
		{"lazy-pages", 0, URS_OPT_FLAG, &lazy, "refused"},
		{"pre-dump", 0, URS_OPT_FLAG, &pre, "refused"},
		{"parent-path", 0, URS_OPT_STR, &parent, "refused"},
		{"page-server", 0, URS_OPT_STR, &page_server, "refused"},
		{"status-fd", 0, URS_OPT_INT, &status_fd, "refused"},
		{"auto-dedup", 0, URS_OPT_FLAG, &dedup, "(accepted)"},
		{"external", 0, URS_OPT_LIST, &external, "refused: namespaces are not saved"},
		{NULL, 0, 0, NULL, NULL},
	};
	struct urs_state st;
	int rc = urs_cmd_open("checkpoint", "--image-path DIR [options] ID", argc, argv, opts, &st,
			      NULL);
	if (rc >= 0)
		return rc;
	ckpt_trace("cli: checkpoint opened");
	struct ckpt_args a = {.image = image,
			      .work = work,
			      .leave = leave,
			      .profile = profile,
			      .precopy = precopy};
	if (key_file_arg(key_file, a.key_file, sizeof(a.key_file)) < 0) {
		urs_state_clear(&st);
		return 1;
	}
	rc = refused(cgmode, lazy, pre, parent, page_server, status_fd, external.n)
		     ? 1
		     : checkpoint_run(&st, &a);
	urs_state_clear(&st);
	ckpt_trace("cli: checkpoint done");
	return rc;
}
