/*
 * actors/gofer_thread.c — the gofer volumes' own thread and its placement
 * next to the requester, with the watchdog that keeps SCHED_IDLE from
 * starving it. Why and how: actors/gofer_thread.h, docs/gofer.md "Where
 * the gofer runs".
 *
 * Locks: `mu` guards the gofers and the thread's loop (held by the gofer
 * thread except inside io_uring_enter(), taken by other threads to read
 * them); `sm` guards the placement state (mode, cpu, the watchdog's
 * counters). The gofer thread reads mode/cpu without `sm` on its fast
 * path (atomics) and takes `sm` only to change them; the watchdog never
 * takes `mu`, so stopping it from the gofer thread cannot deadlock.
 */
#include "actors/gofer_thread.h"

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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "host/spec.h"
#include "runtime/common.h"
#include "runtime/loop.h"

#define GT_TICK_NS     2000000ull    /* watchdog period while following */
#define GT_STARVE_NS   1000000ull    /* run-queue wait in one tick that means starved */
#define GT_REST_TICKS  10	     /* ticks without a request: stop following */
#define GT_COOLDOWN_NS 1000000000ull /* no following after a starvation */
#define GT_STACK       (1u << 20)    /* the gofer thread's stack (touched: a few pages) */
#define GT_WD_STACK    (64u << 10)
#define GT_STOP_TURNS  1000 /* loop turns for cancelled reads to complete at stop */

enum { GT_OFF, GT_SERVE, GT_IDLE, GT_STARVED };

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
	int stop_efd;
	uint64_t stop_val;
	struct urs_op stop_op;
	int tid;
	cpu_set_t orig; /* the thread's CPU mask before any following */

	/* placement */
	pthread_mutex_t sm;
	pthread_cond_t wd_cv;
	pthread_t wd;
	bool wd_running, wd_quit;
	_Atomic int mode, cpu;
	_Atomic uint64_t reqs, turns; /* requests seen; times the thread woke */
	int last_cpu;		      /* gofer thread only: the previous request's CPU */
	uint64_t cooldown_until;
	struct urs_gofer_thread_stats st; /* under sm */
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

static bool colocate_allowed(void)
{
	const char *e = getenv("URSA_GOFER_COLOCATE");
	return !(e && !strcmp(e, "0")) && can_renice();
}

/* ---- the watchdog ---- */

/* Time @tid has spent runnable but waiting for a CPU (ns), or 0. */
static uint64_t run_delay(int fd)
{
	char buf[96];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	unsigned long long run, delay;
	return sscanf(buf, "%llu %llu", &run, &delay) == 2 ? delay : 0;
}

/* Requests (or completions of host I/O) wait for the gofer thread. */
static bool work_waiting(struct urs_gofer_thread *gt)
{
	if (__atomic_load_n(gt->loop.ring.sq.kflags, __ATOMIC_RELAXED) & IORING_SQ_TASKRUN)
		return true;
	for (int i = 0; i < gt->n; i++)
		if (gt->g[i] && urs_gofer_pending(gt->g[i]))
			return true;
	return false;
}

/* Under sm: the gofer thread back to SCHED_OTHER on its old CPUs. */
static void unfollow(struct urs_gofer_thread *gt, int mode)
{
	struct sched_param p = {0};
	if (sched_setscheduler(gt->tid, SCHED_OTHER, &p) < 0 ||
	    sched_setaffinity(gt->tid, sizeof(gt->orig), &gt->orig) < 0) {
		fprintf(stderr, "ursa: gofer: leaving SCHED_IDLE: %s\n", strerror(errno));
		mode = GT_OFF;
	}
	atomic_store(&gt->cpu, -1);
	atomic_store(&gt->mode, mode);
	gt->st.cpu = -1;
}

static void *wd_main(void *arg)
{
	struct urs_gofer_thread *gt = arg;
	prctl(PR_SET_NAME, "ursa-gofer-wd", 0, 0, 0);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", gt->tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	pthread_mutex_lock(&gt->sm);
	for (;;) {
		while (!gt->wd_quit && atomic_load(&gt->mode) != GT_IDLE)
			pthread_cond_wait(&gt->wd_cv, &gt->sm);
		if (gt->wd_quit)
			break;
		uint64_t d0 = fd >= 0 ? run_delay(fd) : 0, r0 = atomic_load(&gt->reqs);
		uint64_t t0 = atomic_load(&gt->turns);
		bool waiting0 = false;
		int quiet = 0;
		while (!gt->wd_quit && atomic_load(&gt->mode) == GT_IDLE) {
			pthread_mutex_unlock(&gt->sm);
			struct timespec ts = {0, (long) GT_TICK_NS};
			nanosleep(&ts, NULL);
			uint64_t d1 = fd >= 0 ? run_delay(fd) : 0, r1 = atomic_load(&gt->reqs);
			uint64_t t1 = atomic_load(&gt->turns);
			pthread_mutex_lock(&gt->sm);
			if (gt->wd_quit || atomic_load(&gt->mode) != GT_IDLE)
				break;
			/* Starved: work was waiting a tick ago and still is, the
			 * thread has not run since, and it spent most of the tick
			 * on a run queue (without schedstat, no CONFIG_SCHED_INFO,
			 * the first two suffice). Work waiting for a moment is the
			 * normal case: the requester has just queued a request and
			 * runs on until it sleeps, with the gofer runnable behind. */
			bool waiting = work_waiting(gt);
			if (waiting && waiting0 && t1 == t0 && (fd < 0 || d1 - d0 > GT_STARVE_NS)) {
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
			t0 = t1;
			waiting0 = waiting;
		}
	}
	pthread_mutex_unlock(&gt->sm);
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* ---- following (on the gofer thread) ---- */

static void req_cpu(void *arg, unsigned cpu)
{
	struct urs_gofer_thread *gt = arg;
	atomic_fetch_add_explicit(&gt->reqs, 1, memory_order_relaxed);
	int mode = atomic_load_explicit(&gt->mode, memory_order_relaxed);
	if (mode == GT_OFF ||
	    (mode == GT_IDLE && (int) cpu == atomic_load_explicit(&gt->cpu, memory_order_relaxed)))
		return;
	if ((int) cpu != gt->last_cpu) { /* two requests in a row from it */
		gt->last_cpu = (int) cpu;
		return;
	}
	if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &gt->orig))
		return; /* not ours to run on (cpuset) */
	pthread_mutex_lock(&gt->sm);
	mode = atomic_load(&gt->mode);
	if (mode == GT_OFF || (mode == GT_STARVED && now_ns() < gt->cooldown_until))
		goto out;
	if (!gt->wd_running) {
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, GT_WD_STACK);
		int e = pthread_create(&gt->wd, &at, wd_main, gt);
		pthread_attr_destroy(&at);
		if (e) { /* no watchdog, no SCHED_IDLE */
			atomic_store(&gt->mode, GT_OFF);
			goto out;
		}
		gt->wd_running = true;
	}
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0) {
		atomic_store(&gt->mode, GT_OFF);
		goto out;
	}
	if (mode != GT_IDLE) {
		struct sched_param p = {0};
		if (sched_setscheduler(0, SCHED_IDLE, &p) < 0) {
			sched_setaffinity(0, sizeof(gt->orig), &gt->orig);
			atomic_store(&gt->mode, GT_OFF);
			goto out;
		}
		gt->st.idles++;
	}
	gt->st.follows++;
	gt->st.cpu = (int) cpu;
	atomic_store(&gt->cpu, (int) cpu);
	atomic_store(&gt->mode, GT_IDLE);
	pthread_cond_signal(&gt->wd_cv);
out:
	pthread_mutex_unlock(&gt->sm);
}

/* ---- the gofer thread ---- */

static void block_hook(void *arg, bool blocking)
{
	struct urs_gofer_thread *gt = arg;
	if (blocking) {
		pthread_mutex_unlock(&gt->mu);
	} else {
		pthread_mutex_lock(&gt->mu);
		atomic_fetch_add_explicit(&gt->turns, 1, memory_order_relaxed);
	}
}

static void stop_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) res;
	(void) flags;
	struct urs_gofer_thread *gt = container_of(op, struct urs_gofer_thread, stop_op);
	gt->stopping = true;
}

/* On the gofer thread, mu held: the watchdog joined, every gofer stopped
 * and (once its cancelled reads completed) freed, the loop closed. */
static void wind_down(struct urs_gofer_thread *gt)
{
	pthread_mutex_lock(&gt->sm);
	gt->wd_quit = true;
	pthread_cond_signal(&gt->wd_cv);
	pthread_mutex_unlock(&gt->sm);
	if (gt->wd_running)
		pthread_join(gt->wd, NULL);
	gt->wd_running = false;
	bool busy = false;
	for (int i = 0; i < gt->n; i++)
		if (gt->g[i]) {
			urs_gofer_stop(gt->g[i]);
			busy = true;
		}
	for (int k = 0; busy && gt->loop_ok && k < GT_STOP_TURNS; k++) {
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
		urs_loop_set_block_hook(&gt->loop, NULL, NULL);
		urs_loop_fini(&gt->loop);
	}
	gt->loop_ok = false;
}

static void *gt_main(void *arg)
{
	struct urs_gofer_thread *gt = arg;
	prctl(PR_SET_NAME, "ursa-gofer", 0, 0, 0);
	gt->tid = (int) syscall(SYS_gettid);
	pthread_mutex_lock(&gt->mu);
	bool colocate =
		colocate_allowed() && sched_getaffinity(0, sizeof(gt->orig), &gt->orig) == 0;
	atomic_store(&gt->mode, colocate ? GT_SERVE : GT_OFF);
	gt->st.colocate = colocate;
	int r = urs_loop_init(&gt->loop, NULL), i = 0;
	if (r == 0) {
		gt->loop_ok = true;
		urs_loop_set_block_hook(&gt->loop, block_hook, gt);
		io_uring_prep_read(urs_op_sqe(&gt->stop_op), gt->stop_efd, &gt->stop_val,
				   sizeof(gt->stop_val), 0);
		r = urs_submit(&gt->loop, &gt->stop_op, stop_cb);
	}
	for (; r == 0 && i < gt->n; i++) {
		struct urs_gofer_opts o = gt->v[i].opts;
		o.weak = false; /* the stop request ends this loop, not idleness */
		o.req_cpu = colocate ? req_cpu : NULL;
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
	while (!gt->stopping)
		if (urs_loop_run_once(&gt->loop, true) < 0)
			break;
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
	gt->stop_efd = eventfd(0, EFD_CLOEXEC);
	if (gt->stop_efd < 0) {
		r = -errno;
		goto fail;
	}
	pthread_mutex_init(&gt->mu, NULL);
	pthread_mutex_init(&gt->sm, NULL);
	pthread_cond_init(&gt->started_cv, NULL);
	pthread_cond_init(&gt->wd_cv, NULL);
	atomic_init(&gt->cpu, -1);
	gt->st.cpu = -1;
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
		goto fail_sync;
	}
	*out = gt;
	return 0;
fail_sync:
	pthread_cond_destroy(&gt->wd_cv);
	pthread_cond_destroy(&gt->started_cv);
	pthread_mutex_destroy(&gt->sm);
	pthread_mutex_destroy(&gt->mu);
	close(gt->stop_efd);
	free(gt);
	return r;
fail:
	if (gt && gt->stop_efd >= 0)
		close(gt->stop_efd);
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
	pthread_mutex_unlock(&gt->sm);
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
	if (write(gt->stop_efd, &one, sizeof(one)) != sizeof(one))
		fprintf(stderr, "ursa: gofer: stop: %s\n", strerror(errno)); /* cannot happen */
	pthread_join(gt->th, NULL);
	for (int i = 0; gofers && i < gt->n; i++)
		gofers[i] = NULL;
	pthread_cond_destroy(&gt->wd_cv);
	pthread_cond_destroy(&gt->started_cv);
	pthread_mutex_destroy(&gt->sm);
	pthread_mutex_destroy(&gt->mu);
	close(gt->stop_efd);
	free(gt);
}
