/*
 * tests/runtime/test_loop.c — the event loop: completions, callbacks never run
 * inside submit, SQ-full overflow, cancellation (queued and in flight,
 * resources freed only on the final completion), multishot ops, and the
 * ring-setup fallbacks.
 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "runtime/loop.h"
#include "runtime/probe.h"

static int in_submit;
static int calls;
static int32_t last_res;

static void count_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) op;
	(void) flags;
	assert_int_equal(in_submit, 0); /* never called from inside urs_submit() */
	calls++;
	last_res = res;
}

static void submit_nop(struct urs_loop *loop, struct urs_op *op, urs_op_cb cb)
{
	io_uring_prep_nop(urs_op_sqe(op));
	in_submit = 1;
	assert_int_equal(urs_submit(loop, op, cb), 0);
	in_submit = 0;
}

static void test_nop(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_op op = {0};
	calls = 0;
	submit_nop(&loop, &op, count_cb);
	assert_int_equal(urs_submit(&loop, &op, count_cb), -EBUSY);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(calls, 1);
	assert_int_equal(last_res, 0);
	assert_false(urs_op_busy(&op));
	assert_int_equal(loop.live, 0);
	urs_loop_fini(&loop);
}

/* A callback that submits again: chains run one per completion, not nested. */
static struct urs_op chain_op;
static int chain_left;
static void chain_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	count_cb(loop, op, res, flags);
	if (--chain_left > 0)
		submit_nop(loop, op, chain_cb);
}

static void test_resubmit_from_callback(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	calls = 0;
	chain_left = 100;
	submit_nop(&loop, &chain_op, chain_cb);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(calls, 100);
	urs_loop_fini(&loop);
}

static void test_sq_full_overflow(void **state)
{
	(void) state;
	struct urs_loop loop;
	struct urs_loop_opts o = {.entries = 8};
	assert_int_equal(urs_loop_init(&loop, &o), 0);
	enum { N = 5000 };
	struct urs_op *ops = calloc(N, sizeof(*ops));
	calls = 0;
	for (int i = 0; i < N; i++)
		submit_nop(&loop, &ops[i], count_cb);
	assert_true(loop.stats.overflowed >= N - 8); /* nothing failed, they queued */
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(calls, N);
	for (int i = 0; i < N; i++)
		assert_false(urs_op_busy(&ops[i]));
	free(ops);
	urs_loop_fini(&loop);
}

/* Overflowed ops are submitted in FIFO order. */
static int order_next;
static void order_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) res;
	(void) flags;
	assert_int_equal((int) op->sqe.off, order_next);
	order_next++;
}

static void test_overflow_order(void **state)
{
	(void) state;
	struct urs_loop loop;
	struct urs_loop_opts o = {.entries = 4};
	assert_int_equal(urs_loop_init(&loop, &o), 0);
	enum { N = 200 };
	struct urs_op ops[N];
	order_next = 0;
	for (int i = 0; i < N; i++) {
		struct io_uring_sqe *sqe = urs_op_sqe(&ops[i]);
		io_uring_prep_nop(sqe);
		sqe->off = (uint64_t) i; /* our marker; ignored by NOP */
		ops[i].state = 0;
		ops[i].flags = 0;
		/* NOPs complete inline, in submission order */
		assert_int_equal(urs_submit(&loop, &ops[i], order_cb), 0);
	}
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(order_next, N);
	urs_loop_fini(&loop);
}

/* Heap-allocated op freed in its final callback: ASan catches any later use. */
struct heap_op {
	struct urs_op op;
	char buf[16];
	int *finals;
};

static void heap_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	struct heap_op *h = container_of(op, struct heap_op, op);
	assert_false(flags & IORING_CQE_F_MORE);
	assert_int_equal(res, -ECANCELED);
	(*h->finals)++;
	free(h);
}

static void test_cancel_inflight(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	int finals = 0;
	enum { N = 64 };
	struct heap_op *hs[N];
	for (int i = 0; i < N; i++) {
		hs[i] = calloc(1, sizeof(*hs[i]));
		hs[i]->finals = &finals;
		io_uring_prep_read(urs_op_sqe(&hs[i]->op), p[0], hs[i]->buf, sizeof(hs[i]->buf), 0);
		assert_int_equal(urs_submit(&loop, &hs[i]->op, heap_cb), 0);
	}
	assert_int_equal(urs_loop_run_once(&loop, false), 0); /* now in the kernel */
	for (int i = 0; i < N; i++)
		assert_int_equal(urs_cancel(&loop, &hs[i]->op), 0);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(finals, N);
	assert_int_equal(loop.live, 0);
	close(p[0]);
	close(p[1]);
	urs_loop_fini(&loop);
}

static void test_cancel_queued(void **state)
{
	(void) state;
	struct urs_loop loop;
	struct urs_loop_opts o = {.entries = 2};
	assert_int_equal(urs_loop_init(&loop, &o), 0);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	int finals = 0;
	enum { N = 10 };
	struct heap_op *hs[N];
	for (int i = 0; i < N; i++) {
		hs[i] = calloc(1, sizeof(*hs[i]));
		hs[i]->finals = &finals;
		io_uring_prep_read(urs_op_sqe(&hs[i]->op), p[0], hs[i]->buf, sizeof(hs[i]->buf), 0);
		assert_int_equal(urs_submit(&loop, &hs[i]->op, heap_cb), 0);
	}
	/* 2 in the SQ, 8 queued: cancel all before anything reaches the kernel */
	assert_int_equal(hs[N - 1]->op.state, URS_OP_QUEUED);
	for (int i = 0; i < N; i++)
		assert_int_equal(urs_cancel(&loop, &hs[i]->op), 0);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(finals, N);
	close(p[0]);
	close(p[1]);
	urs_loop_fini(&loop);
}

static void test_cancel_idle(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_op op = {0};
	assert_int_equal(urs_cancel(&loop, &op), -ENOENT);
	urs_loop_fini(&loop);
}

/* Multishot poll: F_MORE completions keep the op in flight. */
static int mshot_more, mshot_final;
static void mshot_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	if (flags & IORING_CQE_F_MORE) {
		assert_true(res & POLLIN);
		assert_true(urs_op_busy(op));
		mshot_more++;
	} else {
		assert_false(urs_op_busy(op));
		mshot_final++;
	}
}

static void test_multishot(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	struct urs_op op = {0};
	io_uring_prep_poll_multishot(urs_op_sqe(&op), p[0], POLLIN);
	assert_int_equal(urs_submit(&loop, &op, mshot_cb), 0);
	char c = 'x', sink[8];
	for (int i = 0; i < 3; i++) {
		assert_int_equal(write(p[1], &c, 1), 1);
		while (mshot_more <= i)
			assert_int_equal(urs_loop_run_once(&loop, true), 0);
		assert_int_equal(read(p[0], sink, sizeof(sink)), 1);
	}
	assert_int_equal(loop.live, 1);
	assert_int_equal(urs_cancel(&loop, &op), 0);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(mshot_final, 1);
	assert_int_equal(loop.live, 0);
	close(p[0]);
	close(p[1]);
	urs_loop_fini(&loop);
}

/* Forced fallbacks: the loop still works on a plain ring. */
static void test_setup_fallback(void **state)
{
	(void) state;
	struct urs_loop loop;
	struct urs_loop_opts o = {.no_feat = URS_FEAT_DEFER_TASKRUN | URS_FEAT_SINGLE_ISSUER |
					     URS_FEAT_COOP_TASKRUN | URS_FEAT_CQE_SKIP};
	assert_int_equal(urs_loop_init(&loop, &o), 0);
	assert_int_equal(loop.setup_flags, 0);
	assert_false(loop.feat & URS_FEAT_DEFER_TASKRUN);
	struct urs_op ops[100];
	calls = 0;
	for (int i = 0; i < 100; i++) {
		ops[i] = (struct urs_op){0};
		submit_nop(&loop, &ops[i], count_cb);
	}
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(calls, 100);
	urs_loop_fini(&loop);

	/* COOP only */
	o.no_feat = URS_FEAT_DEFER_TASKRUN;
	assert_int_equal(urs_loop_init(&loop, &o), 0);
	if (urs_has(URS_FEAT_COOP_TASKRUN))
		assert_true(loop.setup_flags & IORING_SETUP_COOP_TASKRUN);
	assert_false(loop.setup_flags & IORING_SETUP_DEFER_TASKRUN);
	calls = 0;
	submit_nop(&loop, &ops[0], count_cb);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(calls, 1);
	urs_loop_fini(&loop);
}

static void test_preferred_setup(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	if (urs_has(URS_FEAT_DEFER_TASKRUN))
		assert_int_equal(loop.setup_flags &
					 (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN),
				 IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nop),
		cmocka_unit_test(test_resubmit_from_callback),
		cmocka_unit_test(test_sq_full_overflow),
		cmocka_unit_test(test_overflow_order),
		cmocka_unit_test(test_cancel_inflight),
		cmocka_unit_test(test_cancel_queued),
		cmocka_unit_test(test_cancel_idle),
		cmocka_unit_test(test_multishot),
		cmocka_unit_test(test_setup_fallback),
		cmocka_unit_test(test_preferred_setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
