/*
 * actors/gofer/thread.h — the thread the gofer volumes of a process run on,
 * and where that thread runs: next to the requester (docs/gofer.md,
 * "Where the gofer runs").
 *
 * Every FUSE request is a round trip: the requester sleeps, the gofer
 * wakes, answers, the requester wakes. When the two are on different CPUs
 * each wake-up is a cross-CPU wake of a sleeping (on a VM: halted) CPU,
 * and that, not the gofer's work, is most of the round trip (11 us on one
 * CPU, 45-100 us across, on the 2-vCPU machines here). The scheduler keeps
 * a waking task off a busy CPU, so a gofer that simply runs somewhere puts
 * the pair on two CPUs whenever one is idle.
 *
 * So the volumes get a thread of their own (not the supervisor's loop
 * thread, which the netstack and the rest keep), and with FUSE over
 * io_uring, which says which CPU each request came from, that thread:
 *  - follows the requester: it pins itself to the CPU of the requests'
 *    queue (after two requests in a row from it), so the request wakes it
 *    on the requester's own CPU;
 *  - runs as SCHED_IDLE while it follows, so that the CPU counts as idle
 *    when its answer wakes the requester and the requester stays there,
 *    taking the CPU back at once.
 * SCHED_IDLE has a price: a thread of that class gets almost nothing of a
 * CPU a normal task wants. A watchdog thread (normal class; started at the
 * first follow, asleep when nothing follows) looks every 2 ms while the
 * gofer follows: if work waited for the thread (a request not answered
 * yet, or completions queued for its ring), it served almost nothing and
 * its run-queue wait (schedstat) grew by more than 1 ms, it is starved:
 * it goes back to SCHED_OTHER and its old CPU mask at once and
 * does not follow for a second; after 20 ms without a request it goes back
 * too, so that it never sleeps for long as SCHED_IDLE. io_uring's worker
 * threads born while it followed (they inherit policy and mask) are put
 * back to SCHED_OTHER on the old mask by the watchdog, and by the thread
 * itself after each revert (a worker it was creating meanwhile is listed
 * only once that creation ends). Without
 * FUSE over io_uring, without CAP_SYS_NICE (to leave SCHED_IDLE again) or
 * schedstat, or with URSA_GOFER_COLOCATE=0, the thread just serves.
 *
 * Other threads look at the gofers (metrics, checkpoint, restore) only
 * between urs_gofer_thread_lock() and _unlock(); the gofer thread holds
 * that lock except while it sleeps in io_uring_enter().
 */
#ifndef URSA_ACTORS_GOFER_THREAD_H
#define URSA_ACTORS_GOFER_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include "actors/gofer/gofer.h"

struct urs_gofer_thread;

/* One volume to serve: @fuse_fd (mounted, O_NONBLOCK) becomes the gofer's
 * (closed even on failure); @root_fd stays the caller's (the gofer keeps a
 * copy). @opts as for urs_gofer_start() (req_cpu and weak are set here). */
struct urs_gofer_vol {
	int fuse_fd, root_fd;
	struct urs_gofer_opts opts;
};

struct urs_gofer_thread_stats {
	uint64_t follows; /* moves to the requester's CPU */
	uint64_t idles;	  /* switches to SCHED_IDLE */
	uint64_t starved; /* watchdog: starved, back to SCHED_OTHER for 1 s */
	uint64_t rests;	  /* watchdog: 20 ms without a request, back to SCHED_OTHER */
	int cpu;	  /* CPU followed now, or -1 */
	bool colocate;	  /* following is possible and allowed */
	bool cooling;	  /* in the 1 s after a starvation: no following yet */
};

/*
 * Start the thread and the @n volumes' gofers on it (urs_gofer_start, on
 * the thread). On success *out and @gofers[0..n) are set; the gofers belong
 * to the thread (touch them only under its lock). On failure, -errno, the
 * volume's index in *failed (-1: the thread itself), every fuse fd closed
 * and nothing left running.
 */
int urs_gofer_thread_start(const struct urs_gofer_vol *v, int n, struct urs_gofer **gofers,
			   struct urs_gofer_thread **out, int *failed);

void urs_gofer_thread_lock(struct urs_gofer_thread *gt);
void urs_gofer_thread_unlock(struct urs_gofer_thread *gt);

/* True once every gofer is done (its connection gone). Takes the lock. */
bool urs_gofer_thread_done(struct urs_gofer_thread *gt);

void urs_gofer_thread_stats(struct urs_gofer_thread *gt, struct urs_gofer_thread_stats *st);

/* Thread id of the gofer thread (tests). */
int urs_gofer_thread_tid(const struct urs_gofer_thread *gt);

/*
 * Stop: the gofers stop serving (their in-flight reads are cancelled), are
 * freed, the threads exit and are joined, @gt is freed. @gofers (as given
 * to start) is cleared. NULL is fine.
 */
void urs_gofer_thread_stop(struct urs_gofer_thread *gt, struct urs_gofer **gofers);

#endif
