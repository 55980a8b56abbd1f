/*
 * runtime/timer.c — see timer.h.
 */
#include "runtime/timer.h"

#include <time.h>

uint64_t urs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void set_deadline(struct urs_timer *t, uint64_t ns)
{
	t->ts.tv_sec = (long long) (ns / 1000000000ull);
	t->ts.tv_nsec = (long long) (ns % 1000000000ull);
}

static uint64_t deadline(const struct urs_timer *t)
{
	return (uint64_t) t->ts.tv_sec * 1000000000ull + (uint64_t) t->ts.tv_nsec;
}

static void timer_op_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

static int arm(struct urs_loop *loop, struct urs_timer *t)
{
	struct io_uring_sqe *sqe = urs_op_sqe(&t->op);
	io_uring_prep_timeout(sqe, &t->ts, 0, IORING_TIMEOUT_ABS);
	return urs_submit(loop, &t->op, timer_op_cb);
}

static void timer_op_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) flags;
	struct urs_timer *t = container_of(op, struct urs_timer, op);
	if (t->cancelled) { /* fired or not, a cancelled timer ends here */
		t->cancelled = false;
		t->cb(loop, t, -ECANCELED);
		return;
	}
	if (res == -ETIME) {
		t->fired++;
		if (t->period_ns) {
			uint64_t next = deadline(t) + t->period_ns;
			uint64_t now = urs_now_ns();
			if (next <= now) /* we fell behind: skip missed ticks */
				next = now + t->period_ns - (now - next) % t->period_ns;
			set_deadline(t, next);
			arm(loop, t); /* cannot fail: the op is idle again */
		}
		t->cb(loop, t, 0);
		return;
	}
	t->cb(loop, t, res == 0 ? -ECANCELED : res);
}

int urs_timer_start(struct urs_loop *loop, struct urs_timer *t, uint64_t delay_ns,
		    uint64_t period_ns, urs_timer_cb cb)
{
	if (urs_op_busy(&t->op))
		return -EBUSY;
	t->cb = cb;
	t->period_ns = period_ns;
	t->fired = 0;
	t->cancelled = false;
	set_deadline(t, urs_now_ns() + delay_ns);
	return arm(loop, t);
}

int urs_timer_cancel(struct urs_loop *loop, struct urs_timer *t)
{
	int r = urs_cancel(loop, &t->op);
	if (r == 0)
		t->cancelled = true;
	return r;
}
