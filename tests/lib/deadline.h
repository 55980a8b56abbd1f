/*
 * tests/lib/deadline.h — a deadline for loop-driven unit tests: the loop
 * sleeps in io_uring_enter until its next completion (the armed timer keeps
 * it waiting, and ends the wait at the latest). Include after cmocka.h and
 * runtime/timer.h; one deadline per test program.
 */
#ifndef URSA_TESTS_DEADLINE_H
#define URSA_TESTS_DEADLINE_H

static struct urs_timer deadline;
static bool expired;

static void deadline_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop, (void) t;
	expired = res == 0;
}

/* arm it @s seconds from now; expired turns true when it fires */
static void deadline_arm(struct urs_loop *loop, uint64_t s)
{
	expired = false;
	assert_int_equal(urs_timer_start(loop, &deadline, s * 1000000000ull, 0, deadline_cb), 0);
}

/* cancel it and wait for its final callback */
static void deadline_off(struct urs_loop *loop)
{
	if (urs_timer_busy(&deadline))
		urs_timer_cancel(loop, &deadline);
	while (urs_timer_busy(&deadline))
		assert_int_equal(urs_loop_run_once(loop, false), 0);
}

#endif
