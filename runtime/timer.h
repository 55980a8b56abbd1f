/*
 * runtime/timer.h — one-shot and periodic timers: a heap in user space,
 * driven by ONE io_uring timeout per loop.
 *
 * A kernel timeout per timer costs a hrtimer interrupt per expiry and an
 * ASYNC_CANCEL round trip per cancellation (measured: ~15 us and ~1 us on
 * these VMs, 16x libuv). So timers live in a binary heap ordered by
 * deadline, and the loop keeps a single IORING_OP_TIMEOUT (absolute,
 * CLOCK_MONOTONIC) armed for the earliest one. A new timer earlier than the
 * armed deadline cancels that timeout with IORING_OP_ASYNC_CANCEL; its final
 * completion fires whatever is due and re-arms for the new earliest deadline.
 * Starting and cancelling a timer are heap operations: no syscall, no
 * allocation (the heap array grows by doubling and is kept).
 *
 * Contract: the callback runs with 0 each time the timer fires. After
 * urs_timer_cancel() returns 0 it runs exactly once more, with -ECANCELED,
 * from the top of the loop (never inside urs_timer_cancel()), and only then
 * may the record be freed or reused (urs_timer_busy() turns false). Periodic
 * timers re-arm at start + k * period, skipping ticks missed while late.
 * A timer holds its loop alive (urs_loop_run) until its final callback.
 */
#ifndef URSA_RUNTIME_TIMER_H
#define URSA_RUNTIME_TIMER_H

#include <stdint.h>

#include "runtime/loop.h"

struct urs_timer;

/* res: 0 when the timer fired; -ECANCELED (final) after cancellation. */
typedef void (*urs_timer_cb)(struct urs_loop *loop, struct urs_timer *t, int res);

enum urs_timer_state { URS_TIMER_IDLE = 0, URS_TIMER_ARMED, URS_TIMER_CANCELLING };

struct urs_timer {
	uint64_t deadline_ns; /* absolute CLOCK_MONOTONIC */
	uint64_t period_ns;   /* 0 = one-shot */
	uint64_t fired;
	urs_timer_cb cb;
	struct urs_timer *next_final; /* pending -ECANCELED list */
	uint32_t heap_idx;	      /* position in the loop's heap while armed */
	uint8_t state;
};

uint64_t urs_now_ns(void);

/* Arm @t to fire after @delay_ns, then every @period_ns if non-zero.
 * -EBUSY if armed or its cancellation is still pending; -ENOMEM if the heap
 * could not grow. */
int urs_timer_start(struct urs_loop *loop, struct urs_timer *t, uint64_t delay_ns,
		    uint64_t period_ns, urs_timer_cb cb);
/* -ENOENT if idle; 0 otherwise (also when already cancelling). */
int urs_timer_cancel(struct urs_loop *loop, struct urs_timer *t);

static inline bool urs_timer_busy(const struct urs_timer *t)
{
	return t->state != URS_TIMER_IDLE;
}

/* Internal (loop.c): deliver pending -ECANCELED callbacks; free the heap. */
void urs_timers_run_finals(struct urs_loop *loop);
void urs_timers_fini(struct urs_loop *loop);

#endif
