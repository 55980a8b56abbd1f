/*
 * tests/gofer/thread_test.c — the gofer thread and its placement next to
 * the requester (actors/gofer/thread.c). As root, with the fuse module's
 * enable_uring parameter on for the test (old value restored at exit), in
 * a private mount namespace on a private tmpfs, one volume served by
 * urs_gofer_thread_start():
 *   - creates/stats from a child, kept going until the thread is seen
 *     SCHED_IDLE on a single CPU (/proc, polled); the counters say it
 *     followed (counted only after a pin that worked); the files are right
 *     on the host;
 *   - after the burst it goes back to SCHED_OTHER on its old CPUs, not
 *     following, through a rest or the starvation path (polled);
 *   - starvation: the requester pinned to a CPU with a busy normal-class
 *     hog: 600 creates complete, the thread followed there and the
 *     watchdog counted a starvation (a SCHED_IDLE thread pinned behind the
 *     hog gets a sliver of that CPU: without the watchdog this takes 8-10 s
 *     here; timing goals are bench/gofer's);
 *   - the lock: while another thread holds it, with the requester blocked
 *     in a FUSE request and the gofer thread blocked on the lock
 *     (/proc wchan), nothing is served and the requester makes no
 *     progress; after the unlock it does; stop while still mounted
 *     (cancelled reads, threads joined, no thread left); with
 *     URSA_GOFER_COLOCATE=0 no following at all;
 *   - io_uring workers born while following (fsync on a volume without
 *     passthrough) end up SCHED_OTHER on every CPU;
 *   - a volume that cannot start: error, its fuse fd closed, no thread.
 * Nothing waits on a fixed sleep: every wait polls a state with a deadline
 * (WAIT_S) far above the expected time (ms), and the 1 s without following
 * after a starvation is waited for through the stats' `cooling`.
 * Exit 77 (skip) without root, /dev/fuse, a writable enable_uring or 2 CPUs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actors/gofer/gofer.h"
#include "actors/gofer/thread.h"
#include "host/fuse_mount.h"
#include "tests/gofer/tap.h"

#define DIE(what) tap_die("thread_test", what)

/* Deadline for every wait (s): what is waited for takes milliseconds here
 * (the cooldown 1 s); only a broken thread reaches it. */
#define WAIT_S 15.0

static char base[256], src[300], mnt[300];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* fork(): the pid in the parent; 0 in the child, which dies with us. */
static pid_t child(void)
{
	pid_t p = fork();
	if (p < 0)
		DIE("fork");
	if (p == 0)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	return p;
}

/* Policy and allowed-CPU count of thread @tid of this process. */
static void thread_sched(int tid, int *policy, int *ncpus)
{
	*policy = sched_getscheduler(tid);
	cpu_set_t cs;
	*ncpus = sched_getaffinity(tid, sizeof(cs), &cs) == 0 ? CPU_COUNT(&cs) : -1;
}

/* /proc/@path/wchan: where the task sleeps ("0" when running), or "". */
static void wchan(const char *path, char *buf, size_t len)
{
	char p[96];
	snprintf(p, sizeof(p), "/proc/%s/wchan", path);
	buf[0] = 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
}

/* What a requester and the parent share (MAP_SHARED): files created so
 * far, and when to stop. */
struct shared {
	_Atomic long ops;
	_Atomic bool stop;
};
static struct shared *sh;

/* Child: create and stat files named PFX%d in @dir (on @cpu if >= 0),
 * counting them in sh->ops, until sh->stop is set and at least @n are
 * made (at most 200 000); then unlink them all; exit 0 when all
 * succeeded. */
static pid_t requester(const char *dir, const char *pfx, int n, int cpu)
{
	pid_t p = child();
	if (p)
		return p;
	if (cpu >= 0) {
		cpu_set_t cs;
		CPU_ZERO(&cs);
		CPU_SET(cpu, &cs);
		if (sched_setaffinity(0, sizeof(cs), &cs) < 0)
			_exit(3);
	}
	char path[512];
	struct stat st;
	int k = 0;
	for (; k < 200000 && (k < n || !atomic_load(&sh->stop)); k++) {
		snprintf(path, sizeof(path), "%s/%s%d", dir, pfx, k);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd) < 0 || stat(path, &st) < 0)
			_exit(1);
		atomic_fetch_add(&sh->ops, 1);
	}
	for (int i = 0; i < k; i++) {
		snprintf(path, sizeof(path), "%s/%s%d", dir, pfx, i);
		if (unlink(path) < 0)
			_exit(2);
	}
	_exit(0);
}

/* Start a requester: sh->ops from 0; with @n_only it stops after @n. */
static pid_t start_requester(const char *pfx, int n, int cpu, bool n_only)
{
	atomic_store(&sh->ops, 0);
	atomic_store(&sh->stop, n_only);
	return requester(mnt, pfx, n, cpu);
}

/* A busy loop on @cpu; returns once it runs there. */
static pid_t hog(int cpu)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		DIE("pipe");
	pid_t p = child();
	if (p) {
		char c;
		close(pfd[1]);
		if (read(pfd[0], &c, 1) != 1)
			DIE("hog did not start");
		close(pfd[0]);
		return p;
	}
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(cpu, &cs);
	if (sched_setaffinity(0, sizeof(cs), &cs) < 0 || write(pfd[1], "h", 1) != 1)
		_exit(1);
	for (volatile unsigned long x = 0;; x++)
		;
}

static int wait_rc(pid_t p)
{
	int st;
	if (waitpid(p, &st, 0) != p)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* The thread count back at @n (a joined thread, or an io_uring worker
 * of a ring just closed, can take a moment to leave the list); the count. */
static int threads_back_to(int n)
{
	int c = count_threads();
	for (double end = now() + WAIT_S; c != n && now() < end; c = count_threads())
		sleep_ms(1);
	return c;
}

/* Poll the gofer thread's stats until @cooling is false: the 1 s after a
 * starvation without following is over. */
static bool wait_not_cooling(struct urs_gofer_thread *gt)
{
	struct urs_gofer_thread_stats ts;
	urs_gofer_thread_stats(gt, &ts);
	for (double end = now() + WAIT_S; ts.cooling && now() < end;) {
		sleep_ms(10);
		urs_gofer_thread_stats(gt, &ts);
	}
	return !ts.cooling;
}

static struct urs_gofer_thread *serve_opts(struct urs_gofer **g, const struct urs_gofer_opts *o)
{
	struct urs_fuse_mount_opts mo = {0};
	int fd = urs_fuse_mount(mnt, &mo);
	if (fd < 0) {
		errno = -fd;
		DIE("fuse mount");
	}
	int rfd = open(src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		DIE("open src");
	struct urs_gofer_vol v = {.fuse_fd = fd, .root_fd = rfd, .opts = *o};
	struct urs_gofer_thread *gt;
	int failed;
	int r = urs_gofer_thread_start(&v, 1, g, &gt, &failed);
	close(rfd);
	if (r < 0) {
		errno = -r;
		DIE("urs_gofer_thread_start");
	}
	return gt;
}

static struct urs_gofer_thread *serve(struct urs_gofer **g)
{
	struct urs_gofer_opts o = {0};
	return serve_opts(g, &o);
}

/* Child: write+fsync one file, counting the fsyncs in sh->ops, until
 * sh->stop (fsync goes to io_uring's workers when the gofer serves data
 * itself). */
static pid_t syncer(const char *dir)
{
	pid_t p = child();
	if (p)
		return p;
	char path[512];
	snprintf(path, sizeof(path), "%s/sync", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		_exit(1);
	while (!atomic_load(&sh->stop)) {
		if (pwrite(fd, "0123456789", 10, 0) != 10 || fsync(fd) < 0)
			_exit(2);
		atomic_fetch_add(&sh->ops, 1);
	}
	close(fd);
	_exit(unlink(path) < 0 ? 3 : 0);
}

/* io_uring workers (iou-wrk-*) of this process: how many, how many of
 * them SCHED_IDLE or not allowed on every CPU of @all. */
static char wdesc[512]; /* "tid:comm:policy:cpus" of each, for a failure's line */

static void workers(const cpu_set_t *all, int *n, int *idle, int *pinned)
{
	*n = *idle = *pinned = 0;
	wdesc[0] = 0;
	DIR *d = opendir("/proc/self/task");
	for (struct dirent *e; d && (e = readdir(d));) {
		int tid = atoi(e->d_name);
		char path[64], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
		int fd = tid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		if (fd < 0)
			continue;
		ssize_t r = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (r <= 0 || strncmp(comm, "iou-wrk-", 8))
			continue;
		int pol, cpus;
		thread_sched(tid, &pol, &cpus);
		(*n)++;
		comm[strcspn(comm, "\n")] = 0;
		size_t l = strlen(wdesc);
		snprintf(wdesc + l, sizeof(wdesc) - l, " %d:%s:%d:%d", tid, comm, pol, cpus);
		*idle += pol == SCHED_IDLE;
		*pinned += cpus != CPU_COUNT(all);
	}
	if (d)
		closedir(d);
}

static void unserve(struct urs_gofer_thread *gt, struct urs_gofer **g)
{
	umount2(mnt, MNT_DETACH);
	for (double end = now() + WAIT_S; !urs_gofer_thread_done(gt) && now() < end;)
		sleep_ms(1);
	urs_gofer_thread_stop(gt, g);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) < 0) {
		printf("1..0 # SKIP needs root and /dev/fuse\n");
		return 77;
	}
	cpu_set_t all;
	if (sched_getaffinity(0, sizeof(all), &all) < 0 || CPU_COUNT(&all) < 2) {
		printf("1..0 # SKIP needs 2 CPUs\n");
		return 77;
	}
	if (!tap_uring_param('1'))
		return 77;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		DIE("mmap");
	if (unshare(CLONE_NEWNS) < 0)
		DIE("unshare");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		DIE("make / private");
	snprintf(base, sizeof(base), "/tmp/ursa-gthread-test-XXXXXX");
	if (!mkdtemp(base))
		DIE("mkdtemp");
	if (mount("tmpfs", base, "tmpfs", 0, "size=256m,mode=0755") < 0)
		DIE("tmpfs");
	snprintf(src, sizeof(src), "%s/src", base);
	snprintf(mnt, sizeof(mnt), "%s/mnt", base);
	if (mkdir(src, 0755) < 0 || mkdir(mnt, 0755) < 0)
		DIE("mkdir");
	int threads0 = count_threads();
	struct urs_gofer *g = NULL;
	struct urs_gofer_thread *gt;
	struct urs_gofer_thread_stats ts;
	int rc, tid, nt;

	/* 1. a burst: following, SCHED_IDLE on one CPU while it lasts. The
	 * requester goes on until that is seen (or the deadline), at least
	 * 3000 files: the thread is SCHED_IDLE for as long as requests come
	 * from one CPU (after a starvation, again 1 s later). */
	gt = serve(&g);
	tid = urs_gofer_thread_tid(gt);
	urs_gofer_thread_stats(gt, &ts);
	tap_report(ts.colocate, "placement is possible here (CAP_SYS_NICE, io_uring)");
	pid_t rq = start_requester("f", 3000, -1, false);
	bool one_cpu_seen = false;
	int pol = -1, n = -1, samples = 0;
	for (double end = now() + WAIT_S; !one_cpu_seen && now() < end; samples++) {
		thread_sched(tid, &pol, &n);
		one_cpu_seen = pol == SCHED_IDLE && n == 1;
		if (!one_cpu_seen)
			sleep_ms(1);
	}
	atomic_store(&sh->stop, true);
	rc = wait_rc(rq);
	long made = atomic_load(&sh->ops);
	tap_report(rc == 0 && made >= 3000,
		   "%ld creates and stats, then unlinks, through the volume (rc %d)", made, rc);
	tap_report(one_cpu_seen, "seen SCHED_IDLE on a single CPU during the burst (%d samples)",
		   samples);
	urs_gofer_thread_stats(gt, &ts);
	tap_report(ts.follows >= 1 && ts.idles >= 1,
		   "the thread followed the requester (%llu follows, %llu to SCHED_IDLE: counted "
		   "after the pin)",
		   (unsigned long long) ts.follows, (unsigned long long) ts.idles);
	DIR *d = opendir(src);
	int left = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		left += e->d_name[0] != '.';
	if (d)
		closedir(d);
	tap_report(d && left == 0, "the host directory is empty again (%d left)", left);

	/* 2. after the burst: back to SCHED_OTHER on every CPU, not following,
	 * by a rest (20 ms without a request) or a starvation. The thread's
	 * policy and mask first: the watchdog counts under the lock the stats
	 * take, after it restored them. */
	bool back = false;
	double t0 = now();
	for (double end = t0 + WAIT_S; !back && now() < end;) {
		thread_sched(tid, &pol, &n);
		urs_gofer_thread_stats(gt, &ts);
		back = pol == SCHED_OTHER && n == CPU_COUNT(&all) && ts.cpu == -1 &&
		       ts.rests + ts.starved >= 1;
		if (!back)
			sleep_ms(1);
	}
	tap_report(back,
		   "after the burst: SCHED_OTHER on %d CPUs (policy %d), not following (cpu %d), "
		   "%llu rests + %llu starvations (%.0f ms)",
		   n, pol, ts.cpu, (unsigned long long) ts.rests, (unsigned long long) ts.starved,
		   (now() - t0) * 1000);

	/* 3. starvation: the requester shares its CPU with a busy task (after
	 * any earlier starvation's 1 s without following) */
	tap_report(wait_not_cooling(gt), "no cooldown left from a starvation before");
	urs_gofer_thread_stats(gt, &ts);
	uint64_t follows0 = ts.follows, starved0 = ts.starved;
	int cpu = -1;
	for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
		if (CPU_ISSET(c, &all))
			cpu = c;
	pid_t h = hog(cpu);
	t0 = now();
	rq = start_requester("s", 600, cpu, true);
	rc = wait_rc(rq);
	double dt = now() - t0;
	kill(h, SIGKILL);
	wait_rc(h);
	urs_gofer_thread_stats(gt, &ts);
	tap_report(rc == 0,
		   "600 creates/stats/unlinks next to a busy task complete (rc %d; %.2f s)", rc,
		   dt);
	tap_report(ts.follows > follows0 && ts.starved > starved0,
		   "it followed the requester there and the watchdog ended the starvation "
		   "(%llu follows, %llu starvations)",
		   (unsigned long long) (ts.follows - follows0),
		   (unsigned long long) (ts.starved - starved0));

	/* 4. the lock excludes serving: taken while a requester creates; held
	 * until the requester is blocked in a FUSE request and the gofer
	 * thread on the lock */
	char gpath[64], rpath[32], gw[64] = "", rw[64] = "";
	rq = start_requester("l", 0, -1, false);
	snprintf(gpath, sizeof(gpath), "self/task/%d", tid);
	snprintf(rpath, sizeof(rpath), "%d", (int) rq);
	for (double end = now() + WAIT_S; atomic_load(&sh->ops) < 20 && now() < end;)
		sleep_ms(1);
	long ops0 = atomic_load(&sh->ops);
	urs_gofer_thread_lock(gt);
	struct urs_gofer_stats gs0, gs1;
	urs_gofer_get_stats(g, &gs0);
	bool blocked = false;
	for (double end = now() + WAIT_S; !blocked && now() < end;) {
		wchan(rpath, rw, sizeof(rw));
		wchan(gpath, gw, sizeof(gw));
		blocked = (strstr(rw, "fuse") || strstr(rw, "request_wait_answer")) &&
			  strstr(gw, "futex");
		if (!blocked)
			sleep_ms(1);
	}
	long ops1 = atomic_load(&sh->ops);
	urs_gofer_get_stats(g, &gs1);
	wchan(rpath, rw, sizeof(rw));
	long ops2 = atomic_load(&sh->ops);
	urs_gofer_thread_unlock(gt);
	bool moved = false;
	for (double end = now() + WAIT_S; !moved && now() < end;) {
		moved = atomic_load(&sh->ops) > ops2;
		if (!moved)
			sleep_ms(1);
	}
	atomic_store(&sh->stop, true);
	rc = wait_rc(rq);
	tap_report(ops0 >= 20 && blocked && gs1.requests == gs0.requests && ops2 == ops1 &&
			   (strstr(rw, "fuse") || strstr(rw, "request_wait_answer")),
		   "while another thread held the lock nothing was served: requester in %s, gofer "
		   "thread in %s, %llu requests, %ld files made meanwhile",
		   rw, gw, (unsigned long long) (gs1.requests - gs0.requests), ops2 - ops1);
	tap_report(moved && rc == 0, "after the unlock the requester went on (rc %d, %ld files)",
		   rc, (long) atomic_load(&sh->ops));
	/* stop while still mounted */
	urs_gofer_thread_stop(gt, &g);
	nt = threads_back_to(threads0);
	tap_report(g == NULL && nt == threads0,
		   "stopped while mounted: gofer cleared, no thread left (%d threads, %d before)",
		   nt, threads0);
	umount2(mnt, MNT_DETACH);

	/* 5. the opt-out */
	setenv("URSA_GOFER_COLOCATE", "0", 1);
	gt = serve(&g);
	rq = start_requester("o", 500, -1, true);
	rc = wait_rc(rq);
	urs_gofer_thread_stats(gt, &ts);
	tap_report(rc == 0 && !ts.colocate && ts.follows == 0,
		   "URSA_GOFER_COLOCATE=0: served (rc %d), never followed", rc);
	unserve(gt, &g);
	unsetenv("URSA_GOFER_COLOCATE");

	/* 6. io_uring workers born while following: SCHED_OTHER, every CPU
	 * (the watchdog fixes them within a tick, and when it stops following).
	 * The syncer goes on until the thread followed it and 100 fsyncs more. */
	struct urs_gofer_opts io = {.no_passthrough = true};
	gt = serve_opts(&g, &io);
	tid = urs_gofer_thread_tid(gt);
	tap_report(wait_not_cooling(gt), "a new gofer thread: no cooldown");
	atomic_store(&sh->ops, 0);
	atomic_store(&sh->stop, false);
	rq = syncer(mnt);
	int nw = 0, widle = 0, wpinned = 0, seen_idle = 0;
	long until_ops = -1;
	for (double end = now() + WAIT_S; now() < end; sleep_ms(2)) {
		workers(&all, &nw, &widle, &wpinned);
		seen_idle += widle;
		urs_gofer_thread_stats(gt, &ts);
		if (until_ops < 0 && ts.follows >= 1)
			until_ops = atomic_load(&sh->ops) + 100;
		if ((until_ops >= 0 && atomic_load(&sh->ops) >= until_ops) ||
		    waitpid(rq, &rc, WNOHANG) == rq)
			break;
	}
	atomic_store(&sh->stop, true);
	rc = wait_rc(rq);
	bool clean = false;
	for (double end = now() + WAIT_S; !clean && now() < end;) {
		workers(&all, &nw, &widle, &wpinned);
		clean = nw > 0 && widle == 0 && wpinned == 0;
		if (!clean)
			sleep_ms(1);
	}
	urs_gofer_thread_stats(gt, &ts);
	tap_report(rc == 0 && ts.follows >= 1 && clean,
		   "%ld write+fsync (rc %d) while following (%llu follows): %d io_uring workers, "
		   "none SCHED_IDLE (%d now; %d samples saw one) or pinned (%d now; "
		   "tid:comm:policy:cpus%s; gofer thread %d)",
		   (long) atomic_load(&sh->ops), rc, (unsigned long long) ts.follows, nw, widle,
		   seen_idle, wpinned, wdesc, tid);
	unserve(gt, &g);

	/* 7. a volume that cannot start: fuse fd closed, no thread left */
	int ffd = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	struct urs_gofer_vol bad = {.fuse_fd = ffd, .root_fd = -1};
	struct urs_gofer_thread *bgt = NULL;
	int failed = -2;
	int r = urs_gofer_thread_start(&bad, 1, &g, &bgt, &failed);
	nt = threads_back_to(threads0);
	tap_report(r < 0 && !bgt && failed == 0 && fcntl(ffd, F_GETFD) < 0 && nt == threads0,
		   "a volume that cannot start: %s, volume %d, its fuse fd closed, no thread "
		   "left (%d threads)",
		   strerror(-r), failed, nt);

	umount2(base, MNT_DETACH);
	rmdir(base);
	return tap_done();
}
