/*
 * runtime/timer.c — see timer.h: a binary min-heap of caller-owned timers
 * and the loop's single io_uring timeout.
 */
#include "runtime/timer.h"
#include "runtime/common.h"

#include <stdlib.h>
#include <time.h>

uint64_t urs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* ---- heap (indices from 0; heap_idx is the index) ---- */

static inline void heap_set(struct urs_timers *T, uint32_t i, struct urs_timer *t)
{
	T->heap[i] = t;
	t->heap_idx = i;
}

static void sift_up(struct urs_timers *T, uint32_t i)
{
	struct urs_timer *t = T->heap[i];
	while (i) {
		uint32_t p = (i - 1) / 2;
		if (T->heap[p]->deadline_ns <= t->deadline_ns)
			break;
		heap_set(T, i, T->heap[p]);
		i = p;
	}
	heap_set(T, i, t);
}

static void sift_down(struct urs_timers *T, uint32_t i)
{
	struct urs_timer *t = T->heap[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= T->n)
			break;
		if (c + 1 < T->n && T->heap[c + 1]->deadline_ns < T->heap[c]->deadline_ns)
			c++;
		if (t->deadline_ns <= T->heap[c]->deadline_ns)
			break;
		heap_set(T, i, T->heap[c]);
		i = c;
	}
	heap_set(T, i, t);
}

static int heap_push(struct urs_timers *T, struct urs_timer *t)
{
	if (urs_grow((void **) &T->heap, &T->cap, T->n, sizeof(*T->heap), 16))
		return -ENOMEM;
	T->heap[T->n] = t;
	sift_up(T, T->n++);
	return 0;
}

static void heap_remove(struct urs_timers *T, struct urs_timer *t)
{
	uint32_t i = t->heap_idx;
	struct urs_timer *last = T->heap[--T->n];
	if (i == T->n)
		return;
	heap_set(T, i, last);
	if (i && T->heap[(i - 1) / 2]->deadline_ns > last->deadline_ns)
		sift_up(T, i);
	else
		sift_down(T, i);
}

/* ---- the kernel timeout ---- */

static void tmo_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

static void rearm(struct urs_loop *loop)
{
	struct urs_timers *T = &loop->timers;
	if (!T->n)
		return;
	uint64_t due = T->heap[0]->deadline_ns;
	if (urs_op_busy(&T->tmo)) {
		/* armed later than needed: cancel; the final completion re-arms */
		if (due < T->armed_ns)
			urs_cancel(loop, &T->tmo);
		return;
	}
	T->ts.tv_sec = (long long) (due / 1000000000ull);
	T->ts.tv_nsec = (long long) (due % 1000000000ull);
	T->armed_ns = due;
	io_uring_prep_timeout(urs_op_sqe(&T->tmo), &T->ts, 0, IORING_TIMEOUT_ABS);
	T->tmo.flags = URS_OPF_WEAK; /* the timers themselves hold the loop */
	urs_submit(loop, &T->tmo, tmo_cb);
}

static void fire_due(struct urs_loop *loop)
{
	struct urs_timers *T = &loop->timers;
	uint64_t now = urs_now_ns();
	/* Bound the pass so a periodic timer with a tiny period cannot keep us
	 * here: what is not fired now fires on the next wake-up. */
	for (uint32_t budget = T->n + 1; T->n && budget; budget--) {
		struct urs_timer *t = T->heap[0];
		if (t->deadline_ns > now)
			break;
		t->fired++;
		if (t->period_ns) {
			uint64_t next = t->deadline_ns + t->period_ns;
			if (next <= now) /* fell behind: skip missed ticks */
				next = now + t->period_ns - (now - next) % t->period_ns;
			t->deadline_ns = next;
			sift_down(T, 0);
		} else {
			heap_remove(T, t);
			t->state = URS_TIMER_IDLE;
			urs_loop_unref(loop);
		}
		t->cb(loop, t, 0);
	}
}

static void tmo_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) op;
	(void) res; /* -ETIME, -ECANCELED (re-arm earlier) or 0: all mean "look" */
	(void) flags;
	loop->timers.armed_ns = 0;
	fire_due(loop);
	rearm(loop);
}

/* ---- API ---- */

int urs_timer_start(struct urs_loop *loop, struct urs_timer *t, uint64_t delay_ns,
		    uint64_t period_ns, urs_timer_cb cb)
{
	if (t->state != URS_TIMER_IDLE)
		return -EBUSY;
	t->cb = cb;
	t->period_ns = period_ns;
	t->fired = 0;
	t->next_final = NULL;
	t->deadline_ns = urs_now_ns() + delay_ns;
	int r = heap_push(&loop->timers, t);
	if (r < 0)
		return r;
	t->state = URS_TIMER_ARMED;
	urs_loop_ref(loop);
	if (t->heap_idx == 0)
		rearm(loop);
	return 0;
}

int urs_timer_cancel(struct urs_loop *loop, struct urs_timer *t)
{
	struct urs_timers *T = &loop->timers;
	switch (t->state) {
	case URS_TIMER_IDLE:
		return -ENOENT;
	case URS_TIMER_CANCELLING:
		return 0;
	}
	heap_remove(T, t);
	t->state = URS_TIMER_CANCELLING;
	t->next_final = NULL;
	if (T->finals_tail)
		T->finals_tail->next_final = t;
	else
		T->finals_head = t;
	T->finals_tail = t;
	/* The kernel timeout may now be early for what is left: it fires,
	 * finds nothing due and re-arms. Not worth an ASYNC_CANCEL. */
	return 0;
}

void urs_timers_run_finals(struct urs_loop *loop)
{
	struct urs_timers *T = &loop->timers;
	struct urs_timer *t = T->finals_head;
	T->finals_head = T->finals_tail = NULL;
	while (t) {
		struct urs_timer *next = t->next_final;
		t->state = URS_TIMER_IDLE;
		urs_loop_unref(loop);
		t->cb(loop, t, -ECANCELED);
		t = next;
	}
}

void urs_timers_fini(struct urs_loop *loop)
{
	free(loop->timers.heap);
	loop->timers.heap = NULL;
	loop->timers.n = loop->timers.cap = 0;
}
