/*
 * cmd/delete.c — `ursa delete [--force] ID`: remove a stopped (or, with
 * --force, any) container: its processes, supervisor, cgroups and record.
 * A created container is deleted without --force, as runc does.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/layer.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/cgroup.h"
#include "host/proc.h"
#include "host/teardown.h"
#include "runtime/common.h"

/* Give @pid @grace_ms to exit by itself, then SIGKILL it and wait up to @ms. */
static void kill_and_wait(pid_t pid, uint64_t start, int grace_ms, int ms)
{
	_cleanup_close_ int fd = urs_pidfd_open_checked(pid, start);
	if (fd < 0)
		return;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (grace_ms && poll(&p, 1, grace_ms) == 1)
		return;
	urs_pidfd_signal(fd, SIGKILL);
	poll(&p, 1, ms);
}

/* Remove @cg while the supervisor finishes: a few tries within ~1 ms,
 * stopping as soon as it has exited (urs_cg_destroy then does the rest). */
static void rm_early(struct urs_cgroup *cg, pid_t sup, uint64_t start)
{
	_cleanup_close_ int fd = urs_pidfd_open_checked(sup, start);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	for (int i = 0; i < 20 && fd >= 0; i++) {
		if (urs_cg_destroy_now(cg))
			return;
		if (ppoll(&p, 1, &(struct timespec){0, 50000}, NULL) == 1)
			return;
	}
}

int urs_container_delete(const char *id, bool force, struct urs_err *err)
{
	struct urs_state st;
	int r = urs_state_read(G.root, id, &st, err);
	char rec[PATH_MAX];
	/* A create or restore that died before its record: only the directory
	 * is left, and its supervisor, if it still runs, is removing what it
	 * made (actors/sup_report.c) and may add a file meanwhile (rmdir:
	 * ENOTEMPTY) or still write the record. Retried for up to 2 s, taking
	 * the record's path if one appears. */
	for (int i = 0; i < 200 && r == -EIO && force &&
			urs_state_path(rec, sizeof(rec), G.root, id, "state.json") == 0 &&
			access(rec, F_OK) < 0 && errno == ENOENT;
	     i++) {
		int rr = urs_state_remove(G.root, id);
		if (rr != -ENOTEMPTY)
			return rr < 0 ? urs_err_set(err, rr, "container %s: removing %s: %s", id,
						    rec, strerror(-rr))
				      : 0;
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
		r = urs_state_read(G.root, id, &st, err);
	}
	if (r < 0)
		return r;
	r = urs_container_remove(&st, force, err);
	urs_state_clear(&st);
	return r;
}

int urs_container_remove(const struct urs_state *rec, bool force, struct urs_err *err)
{
	const struct urs_state st = *rec; /* by value: fields, not ownership */
	const char *id = st.id;
	int r;
	enum urs_status s = urs_container_status(&st);
	char why[600];
	if (urs_sup_gone(&st, why, sizeof(why)))
		urs_warn(why);
	if (urs_sandbox_killed(&st, why, sizeof(why)))
		urs_warn(why);
	if (s != URS_ST_STOPPED && s != URS_ST_CREATED && s != URS_ST_CREATING && !force)
		return urs_err_set(err, -EBUSY,
				   "cannot delete container %s that is not stopped: %s", id,
				   urs_status_name(s));
	struct urs_cgroup cg;
	bool have_cg = st.cgroup && urs_cg_from_string(&cg, st.cgroup, NULL) == 0;
	/* a frozen task cannot die: thawed whatever the status says (a pause
	 * killed half-way leaves a cgroup FREEZING, not FROZEN) */
	if (have_cg)
		urs_cg_freeze(&cg, false, NULL);
	if (s != URS_ST_STOPPED) {
		if (have_cg)
			urs_cg_kill_all(&cg, SIGKILL, NULL);
		kill_and_wait(st.pid, st.pid_start, 0, 2000);
	}
	/* the supervisor leaves as soon as the init is reaped, and first goes
	 * back to its caller's v1 cgroups (actors/supervisor.c): the sandbox's
	 * can usually go while it still cleans up */
	if (have_cg)
		rm_early(&cg, st.sup_pid, st.sup_start);
	kill_and_wait(st.sup_pid, st.sup_start, 1000, 2000);
	urs_sandbox_hooks(G.root, &st, NULL, URS_HOOK_POSTSTOP, "stopped", urs_warn);
	if (have_cg && (r = urs_cg_destroy(&cg, err)) < 0)
		return r;
	/* no mount namespace of its own: its mounts are on the host, under the
	 * rootfs bound onto itself (host/mounts.c): detaching that bind takes
	 * them all, and leaves what was there before (a shim's rootfs mount) */
	if (st.host_mnt && st.rootfs[0] && umount2(st.rootfs, MNT_DETACH) < 0 && errno != EINVAL)
		urs_warn("delete: detaching the container's mounts under its rootfs failed");
	/* a registered `ursa do` sandbox's writable layer (ckpt/layer.c) */
	if (ckpt_layer_of(G.root, id, st.bundle))
		ckpt_layer_remove(G.root, id, NULL);
	return urs_state_remove(G.root, id);
}

/* The reaper: once the killed sandbox's tasks are gone, its cgroups, unless
 * a new sandbox of its ID took them over (host/teardown.h): waited for
 * while one holds them, until it runs (or dies: then taken from it). */
static void reap(const char *root, const char *id, int initfd)
{
	struct pollfd p = {.fd = initfd, .events = POLLIN};
	while (poll(&p, 1, 60000) < 0 && errno == EINTR) {
	}
	char cgs[URS_CG_STRING_MAX];
	int fd = urs_teardown_take(root, id, URS_TEARDOWN_REAPING, cgs, sizeof(cgs), 30000);
	if (fd < 0)
		return; /* adopted, or kept by a live sandbox past 30 s: its own then */
	struct urs_cgroup cg;
	if (urs_cg_from_string(&cg, cgs, NULL) == 0 && urs_cg_destroy(&cg, NULL) < 0) {
		/* still busy: the next sandbox of this ID tries again */
		urs_teardown_give_back(root, id, URS_TEARDOWN_REAPING, fd);
		return;
	}
	urs_teardown_drop(root, id, URS_TEARDOWN_REAPING, fd);
}

/* A process of its own (a session of its own, in /, all signals open),
 * holding nothing of ours but the init's pidfd (a caller reading our
 * output to its end is not kept waiting), that we do not wait for: 0 once
 * it is set up, told through a pipe. */
static int spawn_reaper(const char *id, int initfd)
{
	char root[PATH_MAX];
	int ready[2];
	if (!realpath(G.root, root) || pipe2(ready, O_CLOEXEC) < 0)
		return -errno;
	pid_t p = fork();
	if (p == 0) {
		pid_t g = fork();
		if (g != 0)
			_exit(g < 0);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setsid();
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		/* (above 0-4, which the dup2s below replace) */
		int fd = fcntl(initfd, F_DUPFD_CLOEXEC, 10),
		    w = fcntl(ready[1], F_DUPFD_CLOEXEC, 10);
		if (nul < 0 || fd < 0 || w < 0 || chdir("/") < 0 || dup2(nul, 0) < 0 ||
		    dup2(nul, 1) < 0 || dup2(nul, 2) < 0 || dup2(fd, 3) < 0 || dup2(w, 4) < 0)
			_exit(1);
		if (syscall(SYS_close_range, 5u, ~0u, 0u) < 0)
			for (int k = 5; k < 1024; k++)
				close(k);
		if (write(4, "", 1) != 1)
			_exit(1);
		close(4);
		reap(root, id, 3);
		_exit(0);
	}
	int status, r = p < 0 ? -errno : 0;
	close(ready[1]);
	while (p > 0 && waitpid(p, &status, 0) < 0)
		if (errno != EINTR) {
			r = -errno;
			break;
		}
	char c;
	if (!r && (read(ready[0], &c, 1) != 1 || !WIFEXITED(status) || WEXITSTATUS(status)))
		r = -ECHILD;
	close(ready[0]);
	return r;
}

/* Every task of @cg but the supervisor @sup SIGKILLed one by one (not by
 * cgroup.kill: a task cloned into the v2 cgroup before they are all gone
 * would be killed too), each first reniced to 10: their exit (freeing
 * their memory) then leaves most of a shared CPU to what runs next, a
 * restore of the same sandbox first. */
static void kill_reniced(struct urs_cgroup *cg, pid_t sup)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;
	if (urs_cg_pids(cg, &pids, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (pids[i] == sup)
			continue;
		urs_proc_renice(pids[i], 10);
		kill(pids[i], SIGKILL);
	}
}

/* @pid is in a pid namespace of its own (not ours): when it dies, every
 * task of its namespace is killed and none can fork any more */
static bool own_pid_ns(pid_t pid)
{
	char p[64];
	struct stat a, b;
	snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int) pid);
	return stat(p, &a) == 0 && stat("/proc/self/ns/pid", &b) == 0 &&
	       (a.st_ino != b.st_ino || a.st_dev != b.st_dev);
}

int urs_container_remove_killed(const struct urs_state *rec, struct urs_err *err)
{
	const struct urs_state st = *rec;
	struct urs_cgroup cg;
	bool poststop = st.hooks < 0 || (st.hooks & (1 << URS_HOOK_POSTSTOP));
	/* the old way where more is to be done once its tasks are gone */
	if (poststop || st.host_mnt || !st.cgroup || ckpt_layer_of(G.root, st.id, st.bundle) ||
	    urs_cg_from_string(&cg, st.cgroup, NULL) < 0)
		return urs_container_remove(rec, true, err);
	_cleanup_close_ int initfd = urs_pidfd_open_checked(st.pid, st.pid_start);
	if (initfd < 0 || !own_pid_ns(st.pid)) {
		urs_cg_close(&cg);
		return urs_container_remove(rec, true, err);
	}
	/* thawed (a checkpoint freezes by v2, and a v1 freezer may hold it
	 * too), every task killed (none can fork out: their namespace's init
	 * is dead), the supervisor gone (it would write to ROOT/ID, a new
	 * sandbox's once ours is removed) */
	urs_cg_freeze(&cg, false, NULL);
	if (cg.h[URS_CG_V2].path[0])
		urs_cg2_freeze_write(cg.h[URS_CG_V2].path, false, NULL);
	kill_reniced(&cg, st.sup_pid);
	urs_cg_close(&cg);
	kill_and_wait(st.sup_pid, st.sup_start, 0, 2000);
	char cgs[URS_CG_STRING_MAX];
	if (urs_teardown_put(G.root, st.id, st.cgroup, NULL) < 0)
		return urs_container_remove(rec, true, err);
	if (spawn_reaper(st.id, initfd) < 0) {
		/* nobody else can take it: ROOT/ID still holds the name */
		int fd =
			urs_teardown_take(G.root, st.id, URS_TEARDOWN_REAPING, cgs, sizeof(cgs), 0);
		if (fd >= 0)
			urs_teardown_drop(G.root, st.id, URS_TEARDOWN_REAPING, fd);
		return urs_container_remove(rec, true, err);
	}
	int r = urs_state_remove(G.root, st.id);
	if (r < 0)
		return urs_err_set(err, r, "container %s: removing its record: %s", st.id,
				   strerror(-r));
	return 0;
}

int cmd_delete(int argc, char **argv)
{
	bool force = false;
	const struct urs_opt opts[] = {
		{"force", 'f', URS_OPT_FLAG, &force, "kill it first if it is still running"},
		{NULL, 0, 0, NULL, NULL},
	};
	int i = urs_parse("delete", "[--force] ID", argc, argv, opts);
	if (i < 0)
		return i == -2 ? 0 : 1;
	const char *id = urs_require_id("delete", argc, argv, i);
	if (!id)
		return 1;
	struct urs_err err = {{0}};
	int r = urs_container_delete(id, force, &err);
	if (r == -ENOENT && force)
		return 0;
	if (r < 0) {
		urs_error("%s", err.msg);
		return 1;
	}
	return 0;
}
