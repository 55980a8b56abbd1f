/*
 * actors/gofer/thread.c — the gofer volumes' own thread and its placement
 * next to the requester, with the watchdog that keeps SCHED_IDLE from
 * starving it. Why and how: actors/gofer/thread.h, docs/gofer.md "Where
 * the gofer runs".
 *
 * Locks: `mu` guards the gofers and the thread's loop (held by the gofer
 * thread except inside io_uring_enter(), taken by other threads to read
 * them); `sm` guards the placement state (mode, cpu, the watchdog's
 * counters). The gofer thread reads mode/cpu without `sm` on its fast
 * path (atomics) and takes `sm` only to change them; the watchdog never
 * takes `mu`, so stopping it from the gofer thread cannot deadlock.
 *
 * io_uring's workers for the gofer thread are created in the thread's own
 * kernel context (a submission, or task work on its way back to
 * userspace) and copy its policy and pin early in that creation, but show
 * up in /proc/self/task only at its end. A revert made meanwhile (the
 * watchdog's unfollow, or the thread undoing its own move) cannot see
 * them: it sets `refix` (the watchdog also wakes the thread through
 * `wake_efd`), and the thread, next in userspace, where any creation it
 * was in has ended, fixes the workers itself (fix_workers, no allocation).
 */
#include "actors/gofer/thread.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "host/spec.h"
#include "runtime/common.h"
#include "runtime/loop.h"
#include "runtime/timer.h"

#define GT_TICK_NS	2000000ull    /* watchdog period while following */
#define GT_STARVE_NS	1000000ull    /* run-queue wait in one tick ... */
#define GT_STARVE_REQS	8	      /* ... with fewer requests served: starved */
#define GT_REST_TICKS	10	      /* ticks without a request: stop following */
#define GT_COOLDOWN_NS	1000000000ull /* no following after a starvation */
#define GT_STACK	(1u << 20)    /* the gofer thread's stack (touched: a few pages) */
#define GT_WD_STACK	(64u << 10)
#define GT_STOP_NS	2000000000ull /* at most this for cancelled reads to complete */
#define GT_STOP_TICK_NS 10000000ull
#define GT_NAME		"ursa-gofer" /* the thread's comm, and its new workers' */
#define GT_PF_IO_WORKER 0x10u	     /* task flag (stat field 9): an io_uring worker */

/* mode: OFF never follows; SERVE/STARVED: SCHED_OTHER on the old mask
 * (STARVED: not before cooldown_until); IDLE: following, SCHED_IDLE, pinned
 * to cpu; REVERTING: the watchdog is taking it back (holds sm). */
enum { GT_OFF, GT_SERVE, GT_IDLE, GT_STARVED, GT_REVERTING };

struct urs_gofer_thread {
	pthread_mutex_t mu;
	pthread_cond_t started_cv;
	pthread_t th;
	int started; /* 0 while starting, 1 serving, -errno failed */
	int failed;
	const struct urs_gofer_vol *v; /* during start only */
	int n;
	struct urs_gofer *g[URS_GOFER_MAX];
	struct urs_loop loop;
	bool loop_ok, stopping;
	int wake_efd; /* read by wake_op: stop (stop_req) or refix */
	uint64_t wake_val;
	struct urs_op wake_op;
	_Atomic bool stop_req;
	struct urs_timer stop_tick;
	int tid;
	cpu_set_t orig; /* the thread's CPU mask before any following */

	/* placement */
	pthread_mutex_t sm;
	pthread_cond_t wd_cv;
	pthread_t wd;
	int wd_tid;
	bool wd_running, wd_quit;
	_Atomic int mode, cpu;
	_Atomic uint64_t reqs;
	_Atomic bool in_req; /* a request taken, its reply not sent yet */
	_Atomic bool refix;  /* reverted: the thread runs fix_workers itself */
	_Atomic uint64_t follows, idles;
	int last_cpu; /* gofer thread only: the previous request's CPU */
	uint64_t cooldown_until;
	struct urs_gofer_thread_stats st; /* under sm: starved, rests, colocate */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* CAP_SYS_NICE in our effective set: without it a thread that went
 * SCHED_IDLE could not come back (RLIMIT_NICE is 0 by default). */
static bool can_renice(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_SYS_NICE / 32].effective & (1u << (CAP_SYS_NICE % 32));
}

/* The whole of a small /proc file at @fd, NUL-terminated: its length, or -1. */
static ssize_t read_proc(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* Time a thread has spent runnable but waiting for a CPU (ns), or -1. */
static int64_t run_delay(int fd)
{
	char buf[96];
	if (read_proc(fd, buf, sizeof(buf)) < 0)
		return -1;
	unsigned long long run, delay;
	return sscanf(buf, "%llu %llu", &run, &delay) == 2 ? (int64_t) delay : -1;
}

static int open_schedstat(int tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && run_delay(fd) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Following needs: not opted out, CAP_SYS_NICE, and schedstat (the
 * watchdog tells a starved thread from a sleeping one by its run delay). */
static bool colocate_allowed(int tid)
{
	const char *e = getenv("URSA_GOFER_COLOCATE");
	if ((e && !strcmp(e, "0")) || !can_renice())
		return false;
	int fd = open_schedstat(tid);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int num_threads(int fd)
{
	char buf[1024];
	if (read_proc(fd, buf, sizeof(buf)) < 0)
		return -1;
	const char *p = strrchr(buf, ')'); /* comm may hold spaces */
	int field = 2, v = -1;
	for (; p && *p && field < 20; p++)
		if (*p == ' ')
			field++;
	if (p && field == 20)
		v = atoi(p);
	return v;
}

static int back_to_other(struct urs_gofer_thread *gt, int tid);

/* Is thread @tid of ours an io_uring worker of the gofer thread? Its task
 * flags say io_uring worker (PF_IO_WORKER) and its name is iou-wrk-TID or,
 * until it first runs and names itself (a SCHED_IDLE one pinned behind a
 * busy task may take long), the name it copied from its creator, the gofer
 * thread. */
static bool gofer_worker(const struct urs_gofer_thread *gt, int tid)
{
	char path[64], buf[512], want[32];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read_proc(fd, buf, sizeof(buf));
	close(fd);
	char *c = n > 0 ? strchr(buf, '(') : NULL, *e = n > 0 ? strrchr(buf, ')') : NULL;
	unsigned flags;
	if (!c || !e || e < c || sscanf(e + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) != 1 ||
	    !(flags & GT_PF_IO_WORKER))
		return false;
	*e = 0;
	snprintf(want, sizeof(want), "iou-wrk-%d", gt->tid);
	return !strcmp(c + 1, want) || !strcmp(c + 1, GT_NAME);
}

/* io_uring's worker threads for the gofer thread start with its policy
 * and CPU mask: those born while it followed are put back to SCHED_OTHER
 * on its old mask (IORING_REGISTER_IOWQ_AFF does not reach workers
 * already made or, on 6.18, new ones: measured). No allocation
 * (getdents64 into the stack, not opendir): the gofer thread runs it too. */
static void fix_workers(struct urs_gofer_thread *gt)
{
	int dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	_Alignas(8) char buf[2048];
	for (long n; (n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0;) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 {
				uint64_t d_ino;
				int64_t d_off;
				unsigned short d_reclen;
				unsigned char d_type;
				char d_name[];
			} *e = (void *) (buf + off);
			off += e->d_reclen;
			int tid = atoi(e->d_name);
			if (tid <= 0 || tid == gt->tid || !gofer_worker(gt, tid))
				continue;
			cpu_set_t cs;
			if (sched_getscheduler(tid) != SCHED_OTHER ||
			    sched_getaffinity(tid, sizeof(cs), &cs) < 0 ||
			    !CPU_EQUAL(&cs, &gt->orig))
				back_to_other(gt, tid);
		}
	}
	close(dfd);
}

static void all_cpus(cpu_set_t *cs)
{
	CPU_ZERO(cs);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, cs);
}

/* Thread @tid (0: the caller) back to SCHED_OTHER on the old mask (or on
 * every CPU the cpuset allows, if the old mask is not possible any more). */
static int back_to_other(struct urs_gofer_thread *gt, int tid)
{
	struct sched_param p = {0};
	int r = sched_setscheduler(tid, SCHED_OTHER, &p) < 0 ? -errno : 0;
	if (sched_setaffinity(tid, sizeof(gt->orig), &gt->orig) < 0) {
		cpu_set_t cs;
		all_cpus(&cs);
		if (sched_setaffinity(tid, sizeof(cs), &cs) < 0 && !r)
			r = -errno;
	}
	return r;
}

/* ---- the watchdog ---- */

/* Work waits for the gofer thread: a request it took and has not answered,
 * or completions queued for its loop's ring (requests over io_uring reach
 * that ring too, through the eventfd the FUSE rings signal). */
static bool work_waiting(struct urs_gofer_thread *gt)
{
	return atomic_load(&gt->in_req) ||
	       (__atomic_load_n(gt->loop.ring.sq.kflags, __ATOMIC_RELAXED) & IORING_SQ_TASKRUN);
}

/* Under sm: the gofer thread back to SCHED_OTHER, then @mode. A worker it
 * is creating meanwhile may have copied SCHED_IDLE and the pin and not be
 * listed yet: the thread looks again once back in userspace (refix; woken
 * in case it sleeps in io_uring_enter(), where task work creates them). */
static void unfollow(struct urs_gofer_thread *gt, int mode)
{
	atomic_store(&gt->mode, GT_REVERTING);
	int r = back_to_other(gt, gt->tid);
	fix_workers(gt);
	atomic_store(&gt->refix, true);
	uint64_t one = 1;
	if (write(gt->wake_efd, &one, sizeof(one)) != sizeof(one))
		fprintf(stderr, "ursa: gofer: wake: %s\n", strerror(errno)); /* cannot happen */
	if (r < 0) {
		fprintf(stderr, "ursa: gofer: leaving SCHED_IDLE: %s\n", strerror(-r));
		mode = GT_OFF;
	}
	atomic_store(&gt->cpu, -1);
	atomic_store(&gt->mode, mode);
}

static void *wd_main(void *arg)
{
	struct urs_gofer_thread *gt = arg;
	prctl(PR_SET_NAME, "ursa-gofer-wd", 0, 0, 0);
	int fd = open_schedstat(gt->tid);
	int sfd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	pthread_mutex_lock(&gt->sm);
	gt->wd_tid = (int) syscall(SYS_gettid);
	for (;;) {
		while (!gt->wd_quit && atomic_load(&gt->mode) != GT_IDLE)
			pthread_cond_wait(&gt->wd_cv, &gt->sm);
		if (gt->wd_quit)
			break;
		int64_t d0 = fd >= 0 ? run_delay(fd) : -1;
		uint64_t r0 = atomic_load(&gt->reqs);
		int nthr0 = num_threads(sfd), quiet = 0;
		fix_workers(gt);
		while (!gt->wd_quit && atomic_load(&gt->mode) == GT_IDLE) {
			pthread_mutex_unlock(&gt->sm);
			struct timespec ts = {0, (long) GT_TICK_NS};
			nanosleep(&ts, NULL);
			int64_t d1 = fd >= 0 ? run_delay(fd) : -1;
			uint64_t r1 = atomic_load(&gt->reqs);
			int nthr = num_threads(sfd);
			pthread_mutex_lock(&gt->sm);
			if (gt->wd_quit || atomic_load(&gt->mode) != GT_IDLE)
				break;
			if (nthr != nthr0) { /* perhaps a new io_uring worker */
				fix_workers(gt);
				nthr0 = nthr;
			}
			/* Starved: work waits for it (a request taken and not
			 * answered, or requests/completions queued for its loop),
			 * it waited for a CPU for most of the tick (run delay grew
			 * by > 1 ms) and served almost nothing. A gofer sharing its
			 * CPU with a busy requester waits as long, but serves
			 * dozens of requests a tick; one preempted after its reply
			 * while the requester computes waits too, with no work;
			 * sleeping in io_uring_enter() adds no run delay. Without
			 * a readable schedstat (gone?) the first two suffice. */
			if (r1 - r0 < GT_STARVE_REQS && work_waiting(gt) &&
			    (d0 < 0 || d1 < 0 || d1 - d0 > (int64_t) GT_STARVE_NS)) {
				unfollow(gt, GT_STARVED);
				gt->cooldown_until = now_ns() + GT_COOLDOWN_NS;
				gt->st.starved++;
				break;
			}
			quiet = r1 == r0 ? quiet + 1 : 0;
			if (quiet >= GT_REST_TICKS) {
				unfollow(gt, GT_SERVE);
				gt->st.rests++;
				break;
			}
			d0 = d1;
			r0 = r1;
		}
	}
	pthread_mutex_unlock(&gt->sm);
	if (fd >= 0)
		close(fd);
	if (sfd >= 0)
		close(sfd);
	return NULL;
}

/* ---- following (on the gofer thread) ---- */

/* The gofer thread itself back to SCHED_OTHER after a move it made raced
 * with the watchdog taking it back (mode no longer IDLE afterwards). A
 * worker created on the way back from those syscalls copied the move and
 * the watchdog may not look any more: refix, done after this loop turn. */
static void undo_follow(struct urs_gofer_thread *gt)
{
	if (back_to_other(gt, 0) < 0) {
		fprintf(stderr, "ursa: gofer: leaving SCHED_IDLE: %s\n", strerror(errno));
		atomic_store(&gt->mode, GT_OFF);
	}
	atomic_store(&gt->refix, true);
}

/* Pin the calling (gofer) thread to @cpu; with @idle also SCHED_IDLE. */
static int pin(int cpu, bool idle)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		return -errno;
	struct sched_param p = {0};
	if (idle && sched_setscheduler(0, SCHED_IDLE, &p) < 0)
		return -errno;
	return 0;
}

/* Right before replies to requests go to the kernel (see req_cpu). */
static void req_replied(void *arg)
{
	struct urs_gofer_thread *gt = arg;
	atomic_store_explicit(&gt->in_req, false, memory_order_relaxed);
}

/*
 * Called for every FUSE-over-io_uring request with its queue's CPU. The
 * thread takes sm only while it is SCHED_OTHER (mode SERVE/STARVED, or
 * after waiting for the watchdog to finish REVERTING), so a starved
 * SCHED_IDLE thread never holds what the watchdog needs; its own moves
 * are published before they are made and checked after (see unfollow).
 */
static void req_cpu(void *arg, unsigned cpu)
{
	struct urs_gofer_thread *gt = arg;
	atomic_fetch_add_explicit(&gt->reqs, 1, memory_order_relaxed);
	atomic_store_explicit(&gt->in_req, true, memory_order_relaxed);
	int mode = atomic_load(&gt->mode);
	if (mode == GT_OFF || (mode == GT_IDLE && (int) cpu == atomic_load(&gt->cpu)))
		return;
	if ((int) cpu != gt->last_cpu) { /* two requests in a row from it */
		gt->last_cpu = (int) cpu;
		return;
	}
	if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &gt->orig))
		return;	       /* not ours to run on (cpuset) */
	if (mode == GT_IDLE) { /* already SCHED_IDLE: just move */
		atomic_store(&gt->cpu, (int) cpu);
		if (pin((int) cpu, false) < 0) {
			undo_follow(gt);
			atomic_store(&gt->mode, GT_OFF); /* cannot: stop trying */
			return;
		}
		atomic_fetch_add(&gt->follows, 1); /* moved, if only until the undo */
		if (atomic_load(&gt->mode) != GT_IDLE)
			undo_follow(gt); /* the watchdog took it back meanwhile */
		return;
	}
	pthread_mutex_lock(&gt->sm); /* REVERTING: waits for the watchdog */
	mode = atomic_load(&gt->mode);
	bool go = !(mode == GT_OFF || mode == GT_IDLE ||
		    (mode == GT_STARVED && now_ns() < gt->cooldown_until));
	if (go && !gt->wd_running) {
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, GT_WD_STACK);
		int e = pthread_create(&gt->wd, &at, wd_main, gt);
		pthread_attr_destroy(&at);
		if (e) { /* no watchdog, no SCHED_IDLE */
			atomic_store(&gt->mode, GT_OFF);
			go = false;
		} else {
			gt->wd_running = true;
		}
	}
	if (go) {
		atomic_store(&gt->cpu, (int) cpu);
		atomic_store(&gt->mode, GT_IDLE);
		pthread_cond_signal(&gt->wd_cv);
	}
	pthread_mutex_unlock(&gt->sm);
	if (!go)
		return;
	if (pin((int) cpu, true) < 0) {
		undo_follow(gt);
		atomic_store(&gt->mode, GT_OFF); /* cannot: stop trying */
		return;
	}
	/* Moved and SCHED_IDLE: counted even if the watchdog took it back
	 * meanwhile (starved right after the pin, before this line). */
	atomic_fetch_add(&gt->follows, 1);
	atomic_fetch_add(&gt->idles, 1);
	if (atomic_load(&gt->mode) != GT_IDLE)
		undo_follow(gt); /* the watchdog took it back meanwhile */
}

/* ---- the gofer thread ---- */

static void block_hook(void *arg, bool blocking)
{
	struct urs_gofer_thread *gt = arg;
	if (blocking)
		pthread_mutex_unlock(&gt->mu);
	else
		pthread_mutex_lock(&gt->mu);
}

static int wake_arm(struct urs_gofer_thread *gt);

/* wake_efd was written: a stop, or the watchdog's refix (seen by gt_main
 * after this turn); read again until the stop. */
static void wake_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct urs_gofer_thread *gt = container_of(op, struct urs_gofer_thread, wake_op);
	if (atomic_load(&gt->stop_req) || res == -ECANCELED || wake_arm(gt) < 0)
		gt->stopping = true;
}

static int wake_arm(struct urs_gofer_thread *gt)
{
	io_uring_prep_read(urs_op_sqe(&gt->wake_op), gt->wake_efd, &gt->wake_val,
			   sizeof(gt->wake_val), 0);
	return urs_submit(&gt->loop, &gt->wake_op, wake_cb);
}

static void stop_tick_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	(void) t;
	(void) res; /* only wakes the loop while winding down */
}

/* Wait (bounded) until thread @tid of ours is really gone: pthread_join()
 * returns before the kernel has taken it out of the thread group, and a
 * v1 self-migration right after would still count it. */
static void wait_gone(int tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
	struct stat st;
	for (int k = 0; tid > 0 && k < 200 && stat(path, &st) == 0; k++)
		usleep(500);
}

/* On the gofer thread, mu held: the watchdog joined, the thread back to
 * SCHED_OTHER, every gofer stopped and (once its cancelled reads completed,
 * within GT_STOP_NS) freed, the loop closed. */
static void wind_down(struct urs_gofer_thread *gt)
{
	pthread_mutex_lock(&gt->sm);
	gt->wd_quit = true;
	pthread_cond_signal(&gt->wd_cv);
	pthread_mutex_unlock(&gt->sm);
	if (gt->wd_running) {
		pthread_join(gt->wd, NULL);
		wait_gone(gt->wd_tid);
	}
	gt->wd_running = false;
	if (atomic_load(&gt->mode) != GT_OFF)
		back_to_other(gt, 0);
	atomic_store(&gt->mode, GT_OFF);
	bool busy = false;
	for (int i = 0; i < gt->n; i++)
		if (gt->g[i]) {
			urs_gofer_stop(gt->g[i]);
			busy = true;
		}
	if (busy && gt->loop_ok) /* so that a stuck host operation cannot hold us */
		urs_timer_start(&gt->loop, &gt->stop_tick, GT_STOP_TICK_NS, GT_STOP_TICK_NS,
				stop_tick_cb);
	uint64_t until = now_ns() + GT_STOP_NS;
	while (busy && gt->loop_ok && now_ns() < until) {
		busy = false;
		for (int i = 0; i < gt->n; i++)
			busy |= gt->g[i] && !urs_gofer_done(gt->g[i]);
		if (busy && urs_loop_run_once(&gt->loop, true) < 0)
			break;
	}
	for (int i = 0; i < gt->n; i++) {
		if (gt->g[i] && urs_gofer_done(gt->g[i]))
			urs_gofer_free(gt->g[i]);
		gt->g[i] = NULL; /* else left to the process's exit */
	}
	if (gt->loop_ok) {
		if (urs_timer_busy(&gt->stop_tick))
			urs_timer_cancel(&gt->loop, &gt->stop_tick);
		urs_loop_set_block_hook(&gt->loop, NULL, NULL);
		urs_loop_fini(&gt->loop);
	}
	gt->loop_ok = false;
}

static void *gt_main(void *arg)
{
	struct urs_gofer_thread *gt = arg;
	prctl(PR_SET_NAME, GT_NAME, 0, 0, 0);
	gt->tid = (int) syscall(SYS_gettid);
	pthread_mutex_lock(&gt->mu);
	bool colocate =
		colocate_allowed(gt->tid) && sched_getaffinity(0, sizeof(gt->orig), &gt->orig) == 0;
	int r = urs_loop_init(&gt->loop, NULL), i = 0;
	if (r == 0) {
		gt->loop_ok = true;
		urs_loop_set_block_hook(&gt->loop, block_hook, gt);
		r = wake_arm(gt);
		if (r == 0)
			r = urs_loop_flush(&gt->loop);
	}
	atomic_store(&gt->mode, colocate ? GT_SERVE : GT_OFF);
	gt->st.colocate = colocate;
	for (; r == 0 && i < gt->n; i++) {
		struct urs_gofer_opts o = gt->v[i].opts;
		o.weak = false; /* the stop request ends this loop, not idleness */
		o.req_cpu = colocate ? req_cpu : NULL;
		o.req_replied = colocate ? req_replied : NULL;
		o.req_cpu_arg = gt;
		r = urs_gofer_start(&gt->loop, gt->v[i].fuse_fd, gt->v[i].root_fd, &o, &gt->g[i]);
		if (r < 0)
			gt->failed = i;
	}
	for (int k = i; k < gt->n; k++) /* not started: their connections end */
		if (gt->v[k].fuse_fd >= 0)
			close(gt->v[k].fuse_fd);
	gt->v = NULL;
	if (r < 0) {
		wind_down(gt);
		gt->started = r;
		pthread_cond_broadcast(&gt->started_cv);
		pthread_mutex_unlock(&gt->mu);
		return NULL;
	}
	gt->started = 1;
	pthread_cond_broadcast(&gt->started_cv);
	while (!gt->stopping) {
		if ((r = urs_loop_run_once(&gt->loop, true)) < 0)
			break;
		if (atomic_load_explicit(&gt->refix, memory_order_relaxed) &&
		    atomic_exchange(&gt->refix, false))
			fix_workers(gt); /* in userspace: no creation of ours under way */
	}
	if (!gt->stopping) {
		/* the loop failed: the volumes stop being served (accesses
		 * fail once the connection is aborted at stop), but the gofers
		 * stay allocated for other threads' pointers until the stop */
		fprintf(stderr, "ursa: gofer thread: loop: %s\n", strerror(-r));
		pthread_mutex_unlock(&gt->mu);
		uint64_t v;
		while (!atomic_load(&gt->stop_req))
			if (read(gt->wake_efd, &v, sizeof(v)) < 0 && errno != EINTR)
				break;
		pthread_mutex_lock(&gt->mu);
	}
	wind_down(gt);
	pthread_mutex_unlock(&gt->mu);
	return NULL;
}

int urs_gofer_thread_start(const struct urs_gofer_vol *v, int n, struct urs_gofer **gofers,
			   struct urs_gofer_thread **out, int *failed)
{
	*out = NULL;
	*failed = -1;
	int r = -EINVAL;
	struct urs_gofer_thread *gt = NULL;
	if (n < 0 || n > URS_GOFER_MAX)
		goto fail;
	r = -ENOMEM;
	gt = calloc(1, sizeof(*gt));
	if (!gt)
		goto fail;
	gt->wake_efd = eventfd(0, EFD_CLOEXEC);
	if (gt->wake_efd < 0) {
		r = -errno;
		goto fail;
	}
	pthread_mutex_init(&gt->mu, NULL);
	pthread_mutex_init(&gt->sm, NULL);
	pthread_cond_init(&gt->started_cv, NULL);
	pthread_cond_init(&gt->wd_cv, NULL);
	atomic_init(&gt->cpu, -1);
	gt->last_cpu = -1;
	gt->v = v;
	gt->n = n;
	gt->failed = -1;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, GT_STACK);
	int e = pthread_create(&gt->th, &at, gt_main, gt);
	pthread_attr_destroy(&at);
	if (e) {
		r = -e;
		for (int i = 0; i < n; i++) /* never reached the thread */
			if (v[i].fuse_fd >= 0)
				close(v[i].fuse_fd);
		goto fail_sync;
	}
	pthread_mutex_lock(&gt->mu);
	while (!gt->started)
		pthread_cond_wait(&gt->started_cv, &gt->mu);
	r = gt->started < 0 ? gt->started : 0;
	*failed = gt->failed;
	if (r == 0)
		for (int i = 0; i < n; i++)
			gofers[i] = gt->g[i];
	pthread_mutex_unlock(&gt->mu);
	if (r < 0) {
		pthread_join(gt->th, NULL);
		wait_gone(gt->tid);
		goto fail_sync;
	}
	*out = gt;
	return 0;
fail_sync:
	pthread_cond_destroy(&gt->wd_cv);
	pthread_cond_destroy(&gt->started_cv);
	pthread_mutex_destroy(&gt->sm);
	pthread_mutex_destroy(&gt->mu);
	close(gt->wake_efd);
	free(gt);
	return r;
fail:
	if (gt && gt->wake_efd >= 0)
		close(gt->wake_efd);
	free(gt);
	for (int i = 0; i < n; i++)
		if (v[i].fuse_fd >= 0)
			close(v[i].fuse_fd);
	return r;
}

void urs_gofer_thread_lock(struct urs_gofer_thread *gt)
{
	pthread_mutex_lock(&gt->mu);
}

void urs_gofer_thread_unlock(struct urs_gofer_thread *gt)
{
	pthread_mutex_unlock(&gt->mu);
}

bool urs_gofer_thread_done(struct urs_gofer_thread *gt)
{
	pthread_mutex_lock(&gt->mu);
	bool done = true;
	for (int i = 0; i < gt->n; i++)
		done &= !gt->g[i] || urs_gofer_done(gt->g[i]);
	pthread_mutex_unlock(&gt->mu);
	return done;
}

void urs_gofer_thread_stats(struct urs_gofer_thread *gt, struct urs_gofer_thread_stats *st)
{
	pthread_mutex_lock(&gt->sm);
	*st = gt->st;
	st->cooling = atomic_load(&gt->mode) == GT_STARVED && now_ns() < gt->cooldown_until;
	pthread_mutex_unlock(&gt->sm);
	st->follows = atomic_load(&gt->follows);
	st->idles = atomic_load(&gt->idles);
	st->cpu = atomic_load(&gt->mode) == GT_IDLE ? atomic_load(&gt->cpu) : -1;
}

int urs_gofer_thread_tid(const struct urs_gofer_thread *gt)
{
	return gt->tid;
}

void urs_gofer_thread_stop(struct urs_gofer_thread *gt, struct urs_gofer **gofers)
{
	if (!gt)
		return;
	uint64_t one = 1;
	atomic_store(&gt->stop_req, true);
	if (write(gt->wake_efd, &one, sizeof(one)) != sizeof(one))
		fprintf(stderr, "ursa: gofer: stop: %s\n", strerror(errno)); /* cannot happen */
	pthread_join(gt->th, NULL);
	wait_gone(gt->tid);
	for (int i = 0; gofers && i < gt->n; i++)
		gofers[i] = NULL;
	pthread_cond_destroy(&gt->wd_cv);
	pthread_cond_destroy(&gt->started_cv);
	pthread_mutex_destroy(&gt->sm);
	pthread_mutex_destroy(&gt->mu);
	close(gt->wake_efd);
	free(gt);
}
