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

/**
 * urs_now_ns() - CLOCK_MONOTONIC in nanoseconds, the timers' clock
 *
 * Return: nanoseconds since an unspecified start.
 */
uint64_t urs_now_ns(void);

/**
 * urs_timer_start() - arm @t to fire after @delay_ns
 * @loop: the loop, on its thread
 * @t: an idle timer; stays at its address until its final callback
 * @delay_ns: from now to the first expiry
 * @period_ns: then every @period_ns if non-zero (0: one-shot)
 * @cb: called with 0 at each expiry, from the loop's top level
 *
 * A heap push, no syscall: only when @t becomes the earliest deadline is
 * the loop's one kernel timeout re-armed (or cancelled, to re-arm earlier)
 * with its next submission. No allocation unless the heap has to double.
 * Holds the loop alive until the timer's final callback.
 *
 * Return: 0; -EBUSY if armed or its cancellation is still pending; -ENOMEM
 * if the heap could not grow.
 */
int urs_timer_start(struct urs_loop *loop, struct urs_timer *t, uint64_t delay_ns,
		    uint64_t period_ns, urs_timer_cb cb);

/**
 * urs_timer_cancel() - stop an armed timer
 * @loop: the loop it was started on
 * @t: the timer
 *
 * Its callback runs exactly once more, with -ECANCELED, from the top of the
 * loop (never inside this call); only then may @t be freed or reused.
 *
 * Return: -ENOENT if idle; 0 otherwise (also when already cancelling).
 */
int urs_timer_cancel(struct urs_loop *loop, struct urs_timer *t);

/**
 * urs_timer_busy() - is @t armed or waiting for its -ECANCELED callback?
 * @t: the timer
 *
 * Return: false once the record may be freed or reused.
 */
static inline bool urs_timer_busy(const struct urs_timer *t)
{
	return t->state != URS_TIMER_IDLE;
}

/**
 * urs_timers_run_finals() - deliver pending -ECANCELED callbacks (internal,
 *                           loop.c)
 * @loop: the loop, at the top of a turn
 *
 * Each cancelled timer turns idle and drops its loop reference before its
 * callback runs, so the callback may start it again.
 */
void urs_timers_run_finals(struct urs_loop *loop);

/**
 * urs_timers_fini() - free the timer heap (internal, loop.c)
 * @loop: the loop being torn down; armed timers are forgotten, their
 *        callbacks never run
 */
void urs_timers_fini(struct urs_loop *loop);

#endif
