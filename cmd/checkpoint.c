/*
 * cmd/checkpoint.c — `ursa checkpoint --image-path DIR [--leave-running]
 * [--work-path DIR] ID` (runc-compatible): freeze the sandbox's cgroup, dump
 * its init's process tree into DIR (ckpt/dump.h), keep the container's
 * record and config.json beside it (DIR/container/, what `ursa restore`
 * rebuilds the sandbox from), then thaw it (--leave-running) or kill and
 * delete it. Driven from the CLI, synchronously: the supervisor sits in the
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

#include "ckpt/layer.h"
#include "actors/checkpointer.h"
#include "actors/supervisor.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/cgroup.h"
#include "ckpt/dump.h"
#include "ckpt/image.h"
#include "ckpt/manifest.h"
#include "ckpt/tmpfs.h"
#include "ckpt/trace.h"
#include "host/proc.h"
#include "runtime/common.h"
#include "host/fs.h"

/* the image's copy of the record and config.json: DIR/container/ */
#define CKPT_REC_ID "container"

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

/* DIR/container/{state.json,config.json}: the record under the fixed id */
static int save_record(const char *dir, const struct urs_state *st, struct urs_err *err)
{
	struct urs_state copy = *st;
	snprintf(copy.id, sizeof(copy.id), "%s", CKPT_REC_ID);
	urs_state_remove(dir, CKPT_REC_ID); /* an older image's */
	int r = urs_state_dir_create(dir, CKPT_REC_ID, err);
	if (r < 0)
		return r;
	if ((r = urs_state_write(dir, &copy, err)) < 0)
		return r;
	char cfg[4096];
	urs_state_path(cfg, sizeof(cfg), G.root, st->id, "config.json");
	if ((r = urs_state_save_config(dir, CKPT_REC_ID, cfg)) < 0)
		return urs_err_set(err, r, "checkpoint: copying %s: %s", cfg, strerror(-r));
	return 0;
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

int cmd_checkpoint(int argc, char **argv)
{
	const char *image = NULL, *work = NULL, *parent = NULL, *cgmode = NULL, *page_server = NULL;
	bool leave = false, tcp = false, unix_sk = false, locks = false, shell = false,
	     lazy = false, pre = false, dedup = false;
	int status_fd = -1;
	uint8_t key[URS_CKPT_KEY_LEN] = {0}; /* the host's: authenticates the image */
	struct urs_strlist empty_ns = {0}, external = {0};
	const struct urs_opt opts[] = {
		{"image-path", 0, URS_OPT_STR, &image, "directory for the image (created)"},
		{"work-path", 0, URS_OPT_STR, &work, "directory for dump.log"},
		{"leave-running", 0, URS_OPT_FLAG, &leave, "keep the container running afterwards"},
		{"tcp-established", 0, URS_OPT_FLAG, &tcp, "(accepted: TCP is closed)"},
		{"ext-unix-sk", 0, URS_OPT_FLAG, &unix_sk, "(accepted; refused at dump)"},
		{"shell-job", 0, URS_OPT_FLAG, &shell, "(accepted: a tty on stdio is external)"},
		{"file-locks", 0, URS_OPT_FLAG, &locks, "refused: locks are not saved"},
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
	struct urs_err err = {{0}};
	struct urs_state st;
	int rc = urs_cmd_open("checkpoint", "--image-path DIR [options] ID", argc, argv, opts, &st,
			      NULL);
	if (rc >= 0)
		return rc;
	ckpt_trace("cli: checkpoint opened");
	rc = 1;
	_cleanup_close_ int pidfd = -1;
	_cleanup_close_ int lockfd = -1;
	_cleanup_close_ int guardfd = -1; /* closed last: the supervisor then thaws */
	int ctlfd = -2;			  /* the supervisor's state: -2 not asked, else asked */
	sigset_t oldmask;
	bool masked = false;
	struct urs_cgroup cg;
	bool have_cg = false;
	const char *freezer = NULL;
	char dir[4096];
	if (lazy || pre || parent || page_server || status_fd >= 0 || locks || external.n) {
		urs_error("checkpoint: --%s is not supported",
			  external.n	? "external"
			  : lazy	? "lazy-pages"
			  : pre		? "pre-dump"
			  : parent	? "parent-path"
			  : page_server ? "page-server"
			  : locks	? "file-locks (file locks are not checkpointed)"
					: "status-fd");
		goto out;
	}
	if (cgmode && strcmp(cgmode, "soft") && strcmp(cgmode, "full") &&
	    strcmp(cgmode, "strict") && strcmp(cgmode, "ignore")) {
		urs_error("checkpoint: --manage-cgroups-mode %s: unknown mode", cgmode);
		goto out;
	}
	if (!image) {
		urs_error("checkpoint: --image-path is required");
		goto out;
	}
	/* one checkpoint of a container at a time (a second one's refusal would
	 * thaw the cgroup under the first) */
	char sdir[4096];
	urs_state_path(sdir, sizeof(sdir), G.root, st.id, NULL);
	lockfd = open(sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
		urs_error("checkpoint: container %s: %s", st.id,
			  lockfd >= 0 && errno == EWOULDBLOCK ? "a checkpoint is already running"
							      : strerror(errno));
		goto out;
	}
	enum urs_status s = urs_container_status(&st);
	if (s != URS_ST_RUNNING) {
		urs_error("checkpoint: container %s is %s, not running", st.id, urs_status_name(s));
		goto out;
	}
	/* held open until we return: if we are killed with the sandbox frozen,
	 * its supervisor sees it closed and thaws it (actors/supervisor.c,
	 * ctl_guard) */
	if ((guardfd = urs_ctl_send(sdir, "guard")) < 0)
		guardfd = -1; /* an older supervisor: as before */
	int r = urs_mkdir_p(image, 0700);
	if (r == 0 && work)
		r = urs_mkdir_p(work, 0700);
	if (r < 0 || !realpath(image, dir)) {
		urs_error("checkpoint: creating %s: %s", image, strerror(r < 0 ? -r : errno));
		goto out;
	}
	/* an older image here is no longer complete from now on */
	char old_manifest[4200];
	snprintf(old_manifest, sizeof(old_manifest), "%s/%s", dir, CKPT_MANIFEST);
	unlink(old_manifest);
	/* made at the first checkpoint; core.img, pages.img and supervisor.img
	 * authenticate under it (ckpt/seal.h) */
	struct urs_err kerr = {{0}};
	if (urs_ckpt_key(G.root, true, key, &kerr) < 0) {
		urs_error("checkpoint %s: %s", st.id, kerr.msg);
		goto out;
	}
	/* the supervisor's own state (metrics, netstack tables, config) into
	 * DIR/supervisor.img, written by its checkpointer actor
	 * (actors/checkpointer.h): asked now, answered while we prepare (and,
	 * when it is not in the frozen cgroup, dump) */
	char req[4200], reply[512];
	snprintf(req, sizeof(req), "checkpoint %s", dir);
	struct timespec ts0;
	clock_gettime(CLOCK_MONOTONIC, &ts0);
	ctlfd = urs_ctl_send(sdir, req);
	if (st.cgroup && *st.cgroup) {
		if (urs_cmd_cgroup("checkpoint", &st, &cg) < 0)
			goto out;
		have_cg = true;
		/* the cgroup v2 freezer (hybrid hosts have one beside the v1
		 * hierarchies); without it the dumper stops the tasks with ptrace */
		if (cg.h[URS_CG_V2].path[0])
			freezer = cg.h[URS_CG_V2].path;
	}
	pidfd = urs_pidfd_open_checked(st.pid, st.pid_start);
	if (pidfd < 0) {
		urs_error("checkpoint: container %s: its init is gone", st.id);
		goto out;
	}
	ckpt_trace("cli: prepared");
	/* A supervisor in the freezer's cgroup must have written its state
	 * before the freeze. On hybrid hosts it stays out of the v2 cgroup
	 * (actors/supervisor.c, join_v2_later): there it writes while we dump. */
	bool sup_apart = freezer && cg.mode != URS_CG_UNIFIED && !urs_cg_v2_has(&cg, st.sup_pid);
	if ((!sup_apart || ctlfd < 0) && sup_state_wait(&ctlfd, &st, work, &ts0, &err) < 0) {
		urs_error("checkpoint %s: %s", st.id, err.msg);
		urs_ckpt_worklog(work, "dump.log", "error: %s", err.msg);
		goto out;
	}
	struct ckpt_dump_opts dopts = {.freezer = freezer,
				       .outside = st.sup_pid,
				       .seccomp_replace = urs_ckpt_seccomp_replace,
				       .seccomp_ctx = &st,
				       .key = key};
	struct ckpt_dump_stats ds;
	/* interrupted halfway, the tasks would go on with injected registers or
	 * stay frozen: nothing but SIGKILL stops us until they are thawed or
	 * killed (unblocked at the end) */
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &oldmask);
	masked = true;
	r = ckpt_dump(st.pid, dir, &dopts, &ds, &err);
	ckpt_trace("cli: dumped");
	/* a registered `ursa do` sandbox: its writable layer too, still frozen */
	bool dumped = r == 0;
	char stale[4200]; /* an older image's layer: not this sandbox's */
	snprintf(stale, sizeof(stale), "%s/layer.img", dir);
	unlink(stale);
	snprintf(stale, sizeof(stale), "%s/layer.dev", dir);
	unlink(stale);
	if (r == 0 && ckpt_layer_of(G.root, st.id, st.bundle))
		r = freezer ? ckpt_layer_save(G.root, st.id, st.pid, dir, NULL, &err)
			    : urs_err_set(
				      &err, -ENOTSUP,
				      "its writable layer cannot be saved consistently without the "
				      "cgroup v2 freezer (the sandbox runs on while it is read)");
	/* files on its tmpfs mounts (/tmp, /dev/shm...): nowhere else */
	if (r == 0 && (r = ckpt_tmpfs_save(st.pid, dir, freezer != NULL, &err)) > 0)
		r = 0;
	ckpt_trace("cli: tmpfs contents saved");
	if (sup_apart && ctlfd >= 0) {
		struct urs_err e2 = {{0}};
		int rs = sup_state_wait(&ctlfd, &st, work, &ts0, &e2);
		if (rs < 0 && r == 0) {
			r = rs;
			err = e2;
		}
	}
	if (r == 0)
		r = save_record(dir, &st, &err);
	if (r == 0) {
		/* before anything is killed: the image must load back (every
		 * check a restore makes of it), or the workload would be lost */
		struct urs_err e2 = {{0}};
		struct ckpt_seal seal;
		memcpy(seal.key, key, sizeof(seal.key));
		r = ckpt_image_check_core(dir, &seal, &e2);
		if (r < 0)
			urs_err_set(&err, r, "the image does not load back (%s)", e2.msg);
		ckpt_trace("cli: image loaded back");
		/* the commit: the sealed list of every other file, written last */
		if (r == 0)
			r = ckpt_manifest_write(dir, &seal, &err);
		explicit_bzero(&seal, sizeof(seal));
	}
	if (r < 0 && dumped) {
		/* no core.img: not an image (the dumper removes its files itself
		 * when it fails) */
		static const char *const files[] = {"core.img", "pages.img", "layer.img",
						    "layer.dev", CKPT_MANIFEST};
		for (size_t k = 0; k < URS_ARRAY_SIZE(files); k++) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/%s", dir, files[k]);
			unlink(path);
		}
		ckpt_tmpfs_forget(dir);
	}
	if (r < 0) {
		if (freezer)
			urs_cg2_freeze(freezer, false, NULL); /* a refusal leaves it as it was */
		say_failure(st.id, dir, &err);
		urs_ckpt_worklog(work, "dump.log", "error: %s", err.msg);
		goto out;
	}
	urs_ckpt_worklog(work, "dump.log",
			 "dumped %u tasks, %llu pages (%llu zero pages skipped), %llu bytes in "
			 "%.3f ms",
			 ds.ntasks, (unsigned long long) ds.pages,
			 (unsigned long long) ds.zero_pages, (unsigned long long) ds.image_bytes,
			 ds.ms);
	urs_debug("checkpoint %s: %u tasks, %llu bytes, %.3f ms", st.id, ds.ntasks,
		  (unsigned long long) ds.image_bytes, ds.ms);
	/* the files CRIU's clients look for: podman restores only an image
	 * holding CRIU's inventory.img (it stats it) and exports the work
	 * directory's stats-dump with it; empty, ursa's restore reads neither */
	client_marker(dir, "inventory.img");
	client_marker(work, "stats-dump");
	if (leave) {
		if (freezer && urs_cg2_freeze(freezer, false, &err) < 0) {
			urs_error("checkpoint %s: thawing: %s", st.id, err.msg);
			goto out;
		}
		rc = 0;
		goto out;
	}
	/* killed while still frozen, so it runs no further than the image: the
	 * pid namespace dies with its init (a frozen task still dies of SIGKILL) */
	ckpt_trace("cli: record saved");
	urs_pidfd_signal(pidfd, SIGKILL);
	/* A frozen task dies of SIGKILL (cgroup v2), and the cgroup goes with
	 * the container: the thaw (~0.15 ms) is only for a supervisor frozen
	 * with it (unified hosts) */
	if (freezer && !sup_apart)
		urs_cg2_freeze(freezer, false, NULL);
	ckpt_trace("cli: killed and thawed");
	if (urs_container_remove(&st, true, &err) < 0) {
		/* a cgroup left behind must not stay frozen: a later sandbox
		 * with the same cgroupsPath would reuse it */
		if (freezer && sup_apart)
			urs_cg2_freeze(freezer, false, NULL);
		urs_error("checkpoint %s: the image is complete, but deleting the container "
			  "failed: %s",
			  st.id, err.msg);
		goto out;
	}
	rc = 0;
out:
	if (rc && ctlfd != -2) {
		/* no image: none of the supervisor's state either (once it is
		 * written, if the request is still being answered) */
		char sup_img[4200];
		if (ctlfd >= 0)
			urs_ctl_recv(ctlfd, reply, sizeof(reply));
		snprintf(sup_img, sizeof(sup_img), "%s/%s", dir, URS_SUPSTATE_FILE);
		unlink(sup_img);
	}
	explicit_bzero(key, sizeof(key));
	if (masked)
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
	if (have_cg)
		urs_cg_close(&cg);
	urs_state_clear(&st);
	ckpt_trace("cli: checkpoint done");
	return rc;
}
