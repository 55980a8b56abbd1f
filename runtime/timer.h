/*
 * runtime/timer.h — one-shot and periodic timers as io_uring timeouts.
 *
 * A timer is a caller-owned record holding its op and its deadline. Periodic
 * timers re-arm at absolute CLOCK_MONOTONIC deadlines (start + k * period), so
 * they do not drift with callback latency. urs_timer_cancel() goes through
 * IORING_OP_ASYNC_CANCEL; the callback then runs once more with -ECANCELED,
 * and only after that may the record be freed or reused (urs_timer_busy()).
 */
#ifndef URSA_RUNTIME_TIMER_H
#define URSA_RUNTIME_TIMER_H

#include <stdint.h>

#include "runtime/loop.h"

struct urs_timer;

/* res: 0 when the timer fired; -ECANCELED (final) after cancellation;
 * another negative errno if the kernel refused the timeout. */
typedef void (*urs_timer_cb)(struct urs_loop *loop, struct urs_timer *t, int res);

struct urs_timer {
	struct urs_op op;
	struct __kernel_timespec ts; /* absolute deadline */
	uint64_t period_ns;	     /* 0 = one-shot */
	uint64_t fired;
	urs_timer_cb cb;
	bool cancelled; /* the next callback is the final -ECANCELED one */
};

uint64_t urs_now_ns(void);

/* Arm @t to fire after @delay_ns, then every @period_ns if non-zero. */
int urs_timer_start(struct urs_loop *loop, struct urs_timer *t, uint64_t delay_ns,
		    uint64_t period_ns, urs_timer_cb cb);
int urs_timer_cancel(struct urs_loop *loop, struct urs_timer *t);

static inline bool urs_timer_busy(const struct urs_timer *t)
{
	return urs_op_busy(&t->op);
}

#endif
