/*
 * tests/gofer/thread_test.c — the gofer thread and its placement next to
 * the requester (actors/gofer_thread.c). As root, with the fuse module's
 * enable_uring parameter on for the test (old value restored at exit), in
 * a private mount namespace on a private tmpfs, one volume served by
 * urs_gofer_thread_start():
 *   - a burst of creates/stats/unlinks from a child: the thread followed
 *     the requester and was SCHED_IDLE on one CPU while it did (sampled
 *     from outside, /proc), the files are right on the host;
 *   - 20 ms after the burst it is SCHED_OTHER on its old CPUs again;
 *   - starvation: the requester pinned to a CPU with a busy normal-class
 *     hog: 600 creates finish in bounded time (the watchdog took the
 *     thread out of SCHED_IDLE: counted), where a SCHED_IDLE thread pinned
 *     behind the hog would get a sliver of that CPU;
 *   - the lock: while another thread holds it nothing is served; stop
 *     while still mounted (cancelled reads, threads joined, no thread
 *     left); with URSA_GOFER_COLOCATE=0 no following at all;
 *   - io_uring workers born while following (fsync on a volume without
 *     passthrough) end up SCHED_OTHER on every CPU;
 *   - a volume that cannot start: error, its fuse fd closed, no thread.
 * Exit 77 (skip) without root, /dev/fuse, a writable enable_uring or 2 CPUs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actors/gofer.h"
#include "actors/gofer_thread.h"
#include "host/fuse_mount.h"
#include "tests/gofer/tap.h"

#define DIE(what) tap_die("thread_test", what)

static char base[256], src[300], mnt[300];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
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

/* Child: create, stat and unlink @n files named PFX%d in @dir (on @cpu if
 * >= 0); exit 0 when all succeeded. */
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
	for (int k = 0; k < n; k++) {
		snprintf(path, sizeof(path), "%s/%s%d", dir, pfx, k);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd) < 0 || stat(path, &st) < 0)
			_exit(1);
	}
	for (int k = 0; k < n; k++) {
		snprintf(path, sizeof(path), "%s/%s%d", dir, pfx, k);
		if (unlink(path) < 0)
			_exit(2);
	}
	_exit(0);
}

static pid_t hog(int cpu)
{
	pid_t p = child();
	if (p)
		return p;
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(cpu, &cs);
	sched_setaffinity(0, sizeof(cs), &cs);
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

/* Child: write+fsync one file for @ms milliseconds (fsync goes to
 * io_uring's workers when the gofer serves data itself). */
static pid_t syncer(const char *dir, int ms)
{
	pid_t p = child();
	if (p)
		return p;
	char path[512];
	snprintf(path, sizeof(path), "%s/sync", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		_exit(1);
	double end = now() + ms / 1000.0;
	while (now() < end)
		if (pwrite(fd, "0123456789", 10, 0) != 10 || fsync(fd) < 0)
			_exit(2);
	close(fd);
	_exit(unlink(path) < 0 ? 3 : 0);
}

/* Child: creates and unlinks for @ms milliseconds; reports its slowest
 * pair (ms) through @wfd. */
static pid_t timed_creates(const char *dir, int ms, int wfd)
{
	pid_t p = child();
	if (p)
		return p;
	char path[512];
	double end = now() + ms / 1000.0, worst = 0;
	for (int k = 0; now() < end; k++) {
		snprintf(path, sizeof(path), "%s/t%d", dir, k);
		double t = now();
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			_exit(1);
		close(fd);
		if (unlink(path) < 0)
			_exit(3);
		if (now() - t > worst)
			worst = now() - t;
	}
	int w = (int) (worst * 1000);
	_exit(write(wfd, &w, sizeof(w)) == sizeof(w) ? 0 : 2);
}

/* io_uring workers (iou-wrk-*) of this process: how many, how many of
 * them SCHED_IDLE or not allowed on every CPU of @all. */
static void workers(const cpu_set_t *all, int *n, int *idle, int *pinned)
{
	*n = *idle = *pinned = 0;
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
		*idle += pol == SCHED_IDLE;
		*pinned += cpus != CPU_COUNT(all);
	}
	if (d)
		closedir(d);
}

static void unserve(struct urs_gofer_thread *gt, struct urs_gofer **g)
{
	umount2(mnt, MNT_DETACH);
	for (int k = 0; k < 200 && !urs_gofer_thread_done(gt); k++)
		usleep(10000);
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

	/* 1. a burst: following, SCHED_IDLE on one CPU while it lasts */
	struct urs_gofer *g = NULL;
	struct urs_gofer_thread *gt = serve(&g);
	int tid = urs_gofer_thread_tid(gt);
	struct urs_gofer_thread_stats ts;
	urs_gofer_thread_stats(gt, &ts);
	tap_report(ts.colocate, "placement is possible here (CAP_SYS_NICE, io_uring)");
	pid_t rq = requester(mnt, "f", 3000, -1);
	int idle_seen = 0, one_cpu_seen = 0, samples = 0;
	for (;;) {
		int st;
		if (waitpid(rq, &st, WNOHANG) == rq) {
			tap_report(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				   "3000 creates, stats and unlinks through the volume (status %d)",
				   st);
			break;
		}
		int pol, n;
		thread_sched(tid, &pol, &n);
		samples++;
		idle_seen += pol == SCHED_IDLE;
		one_cpu_seen += pol == SCHED_IDLE && n == 1;
		usleep(2000);
	}
	urs_gofer_thread_stats(gt, &ts);
	tap_report(ts.follows >= 1 && ts.idles >= 1,
		   "the thread followed the requester (%llu follows)",
		   (unsigned long long) ts.follows);
	tap_report(one_cpu_seen > 0,
		   "seen SCHED_IDLE on a single CPU during the burst (%d of %d samples, %d idle)",
		   one_cpu_seen, samples, idle_seen);
	DIR *d = opendir(src);
	int left = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		left += e->d_name[0] != '.';
	if (d)
		closedir(d);
	tap_report(d && left == 0, "the host directory is empty again (%d left)", left);

	/* 2. rest: back to SCHED_OTHER on every CPU */
	usleep(100000);
	int pol, n;
	thread_sched(tid, &pol, &n);
	urs_gofer_thread_stats(gt, &ts);
	tap_report(pol == SCHED_OTHER && n == CPU_COUNT(&all) && ts.rests >= 1,
		   "100 ms after the burst: SCHED_OTHER on %d CPUs (policy %d, %llu rests)", n, pol,
		   (unsigned long long) ts.rests);

	/* 3. starvation: the requester shares its CPU with a busy task (after
	 * any earlier starvation's 1 s without following) */
	usleep(1100000);
	urs_gofer_thread_stats(gt, &ts);
	uint64_t follows0 = ts.follows, starved0 = ts.starved;
	int cpu = -1;
	for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
		if (CPU_ISSET(c, &all))
			cpu = c;
	pid_t h = hog(cpu);
	usleep(20000);
	double t0 = now();
	rq = requester(mnt, "s", 600, cpu);
	int rc = wait_rc(rq);
	double dt = now() - t0;
	kill(h, SIGKILL);
	wait_rc(h);
	urs_gofer_thread_stats(gt, &ts);
	tap_report(rc == 0 && dt < 2.5,
		   "600 creates/stats/unlinks next to a busy task: rc %d in %.2f s (bound 2.5 s; "
		   "8-10 s here without the watchdog)",
		   rc, dt);
	tap_report(ts.follows > follows0 && ts.starved > starved0,
		   "it followed the requester there and the watchdog ended the starvation "
		   "(%llu follows, %llu starvations)",
		   (unsigned long long) (ts.follows - follows0),
		   (unsigned long long) (ts.starved - starved0));

	/* 4. the lock excludes serving: held 150 ms while a requester creates */
	int pfd2[2];
	if (pipe(pfd2) < 0)
		DIE("pipe");
	rq = timed_creates(mnt, 400, pfd2[1]);
	usleep(100000);
	urs_gofer_thread_lock(gt);
	struct urs_gofer_stats gs0, gs1;
	urs_gofer_get_stats(g, &gs0);
	usleep(150000);
	urs_gofer_get_stats(g, &gs1);
	urs_gofer_thread_unlock(gt);
	rc = wait_rc(rq);
	int worst = -1;
	if (read(pfd2[0], &worst, sizeof(worst)) != sizeof(worst))
		worst = -1;
	close(pfd2[0]);
	close(pfd2[1]);
	tap_report(rc == 0 && worst >= 120 && gs1.requests == gs0.requests,
		   "while another thread held the lock for 150 ms nothing was served (%llu "
		   "requests; slowest create+unlink %d ms, rc %d)",
		   (unsigned long long) (gs1.requests - gs0.requests), worst, rc);
	/* stop while still mounted */
	urs_gofer_thread_stop(gt, &g);
	tap_report(g == NULL && count_threads() == threads0,
		   "stopped while mounted: gofer cleared, no thread left (%d threads, %d before)",
		   count_threads(), threads0);
	umount2(mnt, MNT_DETACH);

	/* 5. the opt-out */
	setenv("URSA_GOFER_COLOCATE", "0", 1);
	gt = serve(&g);
	rq = requester(mnt, "o", 500, -1);
	rc = wait_rc(rq);
	urs_gofer_thread_stats(gt, &ts);
	tap_report(rc == 0 && !ts.colocate && ts.follows == 0,
		   "URSA_GOFER_COLOCATE=0: served (rc %d), never followed", rc);
	unserve(gt, &g);
	unsetenv("URSA_GOFER_COLOCATE");

	/* 6. io_uring workers born while following: SCHED_OTHER, every CPU */
	struct urs_gofer_opts io = {.no_passthrough = true};
	gt = serve_opts(&g, &io);
	usleep(1100000); /* no earlier cooldown */
	rq = syncer(mnt, 300);
	int nw = 0, widle = 0, wpinned = 0, seen_idle = 0;
	while (waitpid(rq, &rc, WNOHANG) != rq) {
		usleep(5000);
		workers(&all, &nw, &widle, &wpinned);
		seen_idle += widle;
	}
	usleep(50000);
	workers(&all, &nw, &widle, &wpinned);
	urs_gofer_thread_stats(gt, &ts);
	tap_report(WIFEXITED(rc) && WEXITSTATUS(rc) == 0 && ts.follows >= 1 && nw > 0 &&
			   widle == 0 && wpinned == 0,
		   "write+fsync while following: %d io_uring workers, none SCHED_IDLE (%d "
		   "samples saw one, fixed within a tick) or pinned (%d)",
		   nw, seen_idle, wpinned);
	unserve(gt, &g);

	/* 7. a volume that cannot start: fuse fd closed, no thread left */
	int ffd = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	struct urs_gofer_vol bad = {.fuse_fd = ffd, .root_fd = -1};
	struct urs_gofer_thread *bgt = NULL;
	int failed = -2;
	int r = urs_gofer_thread_start(&bad, 1, &g, &bgt, &failed);
	tap_report(r < 0 && !bgt && failed == 0 && fcntl(ffd, F_GETFD) < 0 &&
			   count_threads() == threads0,
		   "a volume that cannot start: %s, volume %d, its fuse fd closed, no thread "
		   "left",
		   strerror(-r), failed);

	umount2(base, MNT_DETACH);
	rmdir(base);
	return tap_done();
}
