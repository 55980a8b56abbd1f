/*
 * tests/runtime/test_timer.c — one-shot and periodic timers, cancellation before
 * and after firing (exactly one final -ECANCELED, record freed only then),
 * churn of many timers through a small ring, a waiting turn ended by a
 * final callback. No wall-clock upper bound: a
 * timer must fire (or its cancel complete) before a 30 s guard timer, far
 * above the milliseconds expected and far below the hour a missed re-arm
 * or a cancel that waits for the expiry would take.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/timer.h"

static int fires, finals;

static void cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	(void) t;
	if (res == 0)
		fires++;
	else {
		assert_int_equal(res, -ECANCELED);
		finals++;
	}
}

#define GUARD_NS (30ull * 1000000000ull)
#define HOUR_NS	 (3600ull * 1000000000ull)

static int guard_fired;
static void guard_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	(void) t;
	guard_fired += res == 0;
}

/* Turn @loop until *@n >= @want or a guard timer (GUARD_NS, started now)
 * fires; the guard is gone again on return. True if *@n got there first. */
static bool run_until(struct urs_loop *loop, const int *n, int want)
{
	struct urs_timer guard = {0};
	guard_fired = 0;
	assert_int_equal(urs_timer_start(loop, &guard, GUARD_NS, 0, guard_cb), 0);
	while (*n < want && !guard_fired)
		assert_int_equal(urs_loop_run_once(loop, true), 0);
	bool first = *n >= want;
	if (urs_timer_busy(&guard))
		assert_int_equal(urs_timer_cancel(loop, &guard), 0);
	while (urs_timer_busy(&guard)) /* its final, at the top of a turn */
		assert_int_equal(urs_loop_run_once(loop, false), 0);
	return first;
}

static void test_oneshot(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_timer t = {0};
	fires = finals = 0;
	uint64_t t0 = urs_now_ns();
	assert_int_equal(urs_timer_start(&loop, &t, 20 * 1000000ull, 0, cb), 0);
	assert_int_equal(urs_timer_start(&loop, &t, 1, 0, cb), -EBUSY);
	assert_true(run_until(&loop, &fires, 1)); /* fires, before the guard */
	uint64_t dt = urs_now_ns() - t0;
	assert_int_equal(urs_loop_run(&loop), 0); /* nothing else comes */
	assert_int_equal(fires, 1);
	assert_int_equal(finals, 0);
	assert_true(dt >= 20 * 1000000ull); /* never early */
	assert_false(urs_timer_busy(&t));
	urs_loop_fini(&loop);
}

static struct urs_timer periodic;
static void periodic_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	cb(loop, t, res);
	if (res == 0 && fires == 5) {
		assert_int_equal(urs_timer_cancel(loop, t), 0);
		assert_int_equal(urs_timer_cancel(loop, t), 0); /* twice is harmless */
	}
}

static void test_periodic_then_cancel(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	fires = finals = 0;
	uint64_t t0 = urs_now_ns();
	assert_int_equal(urs_timer_start(&loop, &periodic, 2000000, 2000000, periodic_cb), 0);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(fires, 5);
	assert_int_equal(finals, 1);
	assert_true(urs_now_ns() - t0 >= 10 * 1000000ull);
	assert_false(urs_timer_busy(&periodic));
	urs_loop_fini(&loop);
}

static void test_cancel_before_fire(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_timer t = {0};
	fires = finals = 0;
	assert_int_equal(urs_timer_start(&loop, &t, HOUR_NS, 0, cb), 0);
	assert_int_equal(urs_loop_run_once(&loop, false), 0);
	assert_int_equal(urs_timer_cancel(&loop, &t), 0);
	/* the final completion comes before the guard: not at the hour */
	assert_true(run_until(&loop, &finals, 1));
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(fires, 0);
	assert_int_equal(finals, 1);
	/* reusable after the final completion */
	assert_int_equal(urs_timer_start(&loop, &t, 1000, 0, cb), 0);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(fires, 1);
	urs_loop_fini(&loop);
}

static void never_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) op, (void) res, (void) flags;
}

/* A cancel's final callback is that turn's event: a waiting turn returns
 * after it, though a strong op that never completes keeps the loop live
 * (a caller turning the loop until the final's effect must see it, not
 * block until something else comes: here the 30 s guard) */
static void test_final_ends_the_wait(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct urs_op op = {0};
	io_uring_prep_poll_add(urs_op_sqe(&op), p[0], POLLIN); /* never readable */
	assert_int_equal(urs_submit(&loop, &op, never_cb), 0);
	struct urs_timer t = {0}, guard = {0};
	fires = finals = guard_fired = 0;
	assert_int_equal(urs_timer_start(&loop, &t, HOUR_NS, 0, cb), 0);
	assert_int_equal(urs_timer_start(&loop, &guard, GUARD_NS, 0, guard_cb), 0);
	assert_int_equal(urs_loop_run_once(&loop, false), 0);
	assert_int_equal(urs_timer_cancel(&loop, &t), 0);
	assert_int_equal(urs_loop_run_once(&loop, true), 0);
	assert_int_equal(finals, 1);
	assert_int_equal(guard_fired, 0); /* returned at the final, not at the guard */
	assert_int_equal(urs_timer_cancel(&loop, &guard), 0);
	urs_cancel(&loop, &op);
	while (urs_op_busy(&op) || urs_timer_busy(&guard))
		assert_int_equal(urs_loop_run_once(&loop, true), 0);
	close(p[0]);
	close(p[1]);
	urs_loop_fini(&loop);
}

/* Heap timers freed in their final callback; ASan flags any use after. */
struct htimer {
	struct urs_timer t;
	int id;
};
static int h_done, h_fired;

static void heap_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	if (res == 0)
		h_fired++;
	h_done++;
	free(container_of(t, struct htimer, t));
}

static void test_churn(void **state)
{
	(void) state;
	struct urs_loop loop;
	struct urs_loop_opts o = {.entries = 16};
	assert_int_equal(urs_loop_init(&loop, &o), 0);
	enum { N = 20000 };
	h_done = h_fired = 0;
	for (int round = 0; round < 4; round++) {
		struct htimer *hs[N / 4];
		for (int i = 0; i < N / 4; i++) {
			hs[i] = calloc(1, sizeof(*hs[i]));
			/* half far in the future (cancelled), half at ~0 (fire) */
			uint64_t delay = (i & 1) ? 3600ull * 1000000000ull : (uint64_t) (i % 97);
			assert_int_equal(urs_timer_start(&loop, &hs[i]->t, delay, 0, heap_cb), 0);
		}
		for (int i = 1; i < N / 4; i += 2)
			assert_int_equal(urs_timer_cancel(&loop, &hs[i]->t), 0);
		assert_int_equal(urs_loop_run(&loop), 0);
	}
	assert_int_equal(h_done, N);
	assert_int_equal(h_fired, N / 2);
	assert_int_equal(loop.live, 0);
	urs_loop_fini(&loop);
}

/* A later timer arms the kernel timeout; an earlier one must cancel it and
 * re-arm (ASYNC_CANCEL path), or it would wait an hour. */
static void test_earlier_timer_rearms(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_timer late = {0}, soon = {0};
	fires = finals = 0;
	assert_int_equal(urs_timer_start(&loop, &late, HOUR_NS, 0, cb), 0);
	assert_int_equal(urs_loop_run_once(&loop, false), 0); /* kernel timeout armed */
	uint64_t t0 = urs_now_ns();
	assert_int_equal(urs_timer_start(&loop, &soon, 5 * 1000000ull, 0, cb), 0);
	/* soon fires before the guard (started after it, so soon alone
	 * re-armed the kernel timeout), not in an hour */
	assert_true(run_until(&loop, &fires, 1));
	uint64_t dt = urs_now_ns() - t0;
	assert_int_equal(fires, 1);
	assert_true(dt >= 5 * 1000000ull); /* never early */
	assert_false(urs_timer_busy(&soon));
	assert_true(urs_timer_busy(&late));
	/* the final callback never runs inside cancel */
	assert_int_equal(urs_timer_cancel(&loop, &late), 0);
	assert_int_equal(finals, 0);
	assert_true(urs_timer_busy(&late));
	assert_int_equal(urs_timer_start(&loop, &late, 1, 0, cb), -EBUSY);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(finals, 1);
	assert_false(urs_timer_busy(&late));
	urs_loop_fini(&loop);
}

/* Timers fire in deadline order whatever the order they were started in. */
static uint64_t last_deadline;
static int in_order;
static void order_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	if (res == -ECANCELED) {
		assert_int_equal(t->fired, 0);
		return;
	}
	assert_int_equal(res, 0);
	if (t->deadline_ns < last_deadline)
		in_order = 0;
	last_deadline = t->deadline_ns;
}

static void test_deadline_order(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	enum { N = 3000 };
	struct urs_timer *ts = calloc(N, sizeof(*ts));
	uint32_t x = 12345;
	for (int i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		assert_int_equal(urs_timer_start(&loop, &ts[i], (x >> 8) % 20000000u, 0, order_cb),
				 0);
	}
	/* cancel every third one */
	for (int i = 0; i < N; i += 3)
		assert_int_equal(urs_timer_cancel(&loop, &ts[i]), 0);
	last_deadline = 0;
	in_order = 1;
	fires = 0;
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(in_order, 1);
	for (int i = 0; i < N; i++) {
		assert_false(urs_timer_busy(&ts[i]));
		assert_int_equal(ts[i].fired, i % 3 ? 1 : 0);
	}
	free(ts);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oneshot),
		cmocka_unit_test(test_periodic_then_cancel),
		cmocka_unit_test(test_cancel_before_fire),
		cmocka_unit_test(test_final_ends_the_wait),
		cmocka_unit_test(test_churn),
		cmocka_unit_test(test_earlier_timer_rearms),
		cmocka_unit_test(test_deadline_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
