/*
 * tests/runtime/test_bufring.c — provided-buffer rings: start with one buffer,
 * backlog signals (-ENOBUFS ends a multishot read), grow, shrink with the
 * memory really returned (mincore), refusal of foreign buffer ids, the
 * single-shot fallback when multishot read is forced off, and -EOPNOTSUPP
 * without buffer rings.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "runtime/bufring.h"
#include "runtime/compat.h"
#include "runtime/probe.h"
#include "tests/lib/skip.h"

#define BUF 65536u

static size_t resident(const struct urs_bufring *b)
{
	size_t pg = (size_t) sysconf(_SC_PAGESIZE), len = (size_t) b->size * b->max;
	size_t n = (len + pg - 1) / pg, r = 0;
	unsigned char *vec = malloc(n);
	assert_int_equal(mincore(b->mem, len, vec), 0);
	for (size_t i = 0; i < n; i++)
		r += vec[i] & 1;
	free(vec);
	return r * pg;
}

struct reader {
	struct urs_op op;
	struct urs_bufring *b;
	int fd;
	bool multishot;
	size_t bytes;
	unsigned reads, enobufs, finals;
	bool rearm;
};

static void read_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

static void arm(struct urs_loop *loop, struct reader *r)
{
	struct io_uring_sqe *sqe = urs_op_sqe(&r->op);
	if (r->multishot) {
		urs_prep_read_multishot(sqe, r->fd, 0, 0, r->b->bgid);
	} else {
		io_uring_prep_read(sqe, r->fd, NULL, r->b->size, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = r->b->bgid;
	}
	assert_int_equal(urs_submit(loop, &r->op, read_cb), 0);
}

static void read_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	struct reader *r = container_of(op, struct reader, op);
	uint16_t bid;
	unsigned char *p = urs_bufring_take(r->b, res, flags, &bid);
	if (res == -ENOBUFS)
		r->enobufs++;
	if (p) {
		assert_true(res > 0);
		/* touch the whole buffer as a real consumer might (e.g. a frame copy) */
		memset(p, 0xab, r->b->size);
		r->bytes += (size_t) res;
		r->reads++;
		urs_bufring_recycle(r->b, bid);
	}
	if (!(flags & IORING_CQE_F_MORE)) {
		r->finals++;
		if (urs_bufring_take_backlog(r->b))
			urs_bufring_grow(r->b, r->b->active * 2);
		if (r->rearm && res != -ECANCELED && res != 0)
			arm(loop, r);
	}
}

static void drive(struct urs_loop *loop, struct reader *r, size_t want)
{
	while (r->bytes < want)
		assert_int_equal(urs_loop_run_once(loop, true), 0);
}

static void grow_shrink(bool multishot)
{
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_bufring b;
	assert_int_equal(urs_bufring_init(&b, &loop, 7, BUF, 8), 0);
	assert_int_equal(b.active, 1);
	assert_int_equal(b.in_kernel, 1);
	assert_int_equal(resident(&b), 0); /* nothing touched yet */

	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_true(fcntl(p[1], F_SETPIPE_SZ, 1 << 20) >= (1 << 20));
	struct reader r = {.b = &b, .fd = p[0], .multishot = multishot, .rearm = true};
	arm(&loop, &r);

	/* 1 MiB waiting with one 64 KiB buffer: backlog, ring grows to the cap */
	static unsigned char data[1 << 20];
	memset(data, 1, sizeof(data));
	assert_int_equal(write(p[1], data, sizeof(data)), (ssize_t) sizeof(data));
	drive(&loop, &r, sizeof(data));
	if (!multishot) {
		/* one read in flight, buffer recycled before re-arming: the ring is
		 * never short, so no backlog is (rightly) reported; grow by hand */
		assert_int_equal(r.enobufs, 0);
		assert_int_equal(b.active, 1);
		assert_int_equal(r.reads, sizeof(data) / BUF);
		urs_bufring_grow(&b, 8);
	} else {
		assert_true(r.enobufs > 0);
		assert_true(b.grows >= 2);
	}
	assert_int_equal(b.active, 8);
	assert_true(resident(&b) >= (size_t) BUF);

	/* shrink: every buffer not in the kernel is retired and its memory freed
	 * now; those the kernel still holds are retired when they come back */
	assert_int_equal(urs_bufring_shrink(&b, 1), 0);
	assert_int_equal(b.active, 1);
	size_t after = resident(&b);
	size_t in_kernel_bytes = 0;
	for (uint32_t i = 1; i < b.max; i++)
		if (b.state[i] == URS_BUF_KERNEL)
			in_kernel_bytes += BUF;
	assert_true(after <= (size_t) BUF + in_kernel_bytes);

	/* push more data through: the kernel hands back its buffers, they retire */
	size_t before = r.bytes;
	assert_int_equal(write(p[1], data, sizeof(data)), (ssize_t) sizeof(data));
	drive(&loop, &r, before + sizeof(data));
	size_t kernel_high = 0;
	for (uint32_t i = 1; i < b.max; i++)
		kernel_high += b.state[i] == URS_BUF_KERNEL;
	if (!urs_bufring_take_backlog(&b) && b.active == 1) {
		/* only buffer 0 (and any still-provided high ids) can hold memory */
		assert_true(resident(&b) <= (size_t) BUF * (1 + kernel_high));
	}

	r.rearm = false;
	urs_cancel(&loop, &r.op);
	assert_int_equal(urs_loop_run(&loop), 0);
	close(p[0]);
	close(p[1]);
	urs_bufring_fini(&b);
	urs_loop_fini(&loop);
}

static void test_grow_shrink_multishot(void **state)
{
	(void) state;
	if (!urs_has(URS_FEAT_READ_MSHOT | URS_FEAT_BUF_RING))
		URS_CM_NEED_FEATURE("no multishot read or buffer rings (kernel)");
	grow_shrink(true);
}

static void test_grow_shrink_singleshot_fallback(void **state)
{
	(void) state;
	if (!urs_has(URS_FEAT_BUF_RING))
		URS_CM_NEED_FEATURE("no io_uring buffer rings (kernel)");
	grow_shrink(false);
}

/* Shrink's memory return, measured on buffers the caller holds. */
static void test_shrink_returns_memory(void **state)
{
	(void) state;
	if (!urs_has(URS_FEAT_BUF_RING))
		URS_CM_NEED_FEATURE("no io_uring buffer rings (kernel)");
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_bufring b;
	assert_int_equal(urs_bufring_init(&b, &loop, 3, BUF, 16), 0);
	assert_int_equal(urs_bufring_grow(&b, 16), 0);
	/* fill every buffer as the kernel would, then pretend they came back */
	for (uint16_t i = 0; i < 16; i++) {
		memset(urs_bufring_addr(&b, i), 0x5a, BUF);
		uint16_t bid;
		void *p = urs_bufring_take(
			&b, (int32_t) BUF,
			IORING_CQE_F_BUFFER | ((uint32_t) i << IORING_CQE_BUFFER_SHIFT), &bid);
		assert_non_null(p);
		assert_int_equal(bid, i);
	}
	assert_int_equal(b.in_kernel, 0);
	assert_true(urs_bufring_take_backlog(&b)); /* all 16 used: backlog */
	assert_int_equal(resident(&b), 16 * (size_t) BUF);
	assert_int_equal(urs_bufring_shrink(&b, 1), 0);
	for (uint16_t i = 0; i < 16; i++)
		urs_bufring_recycle(&b, i);
	assert_int_equal(b.in_kernel, 1);
	assert_true(resident(&b) <= (size_t) BUF);
	assert_int_equal(b.state[0], URS_BUF_KERNEL);
	for (uint16_t i = 1; i < 16; i++)
		assert_int_equal(b.state[i], URS_BUF_RETIRED);
	/* grow again: retired buffers come back into service */
	assert_int_equal(urs_bufring_grow(&b, 4), 0);
	assert_int_equal(b.in_kernel, 4);
	urs_bufring_fini(&b);
	urs_loop_fini(&loop);
}

static void test_foreign_ids(void **state)
{
	(void) state;
	if (!urs_has(URS_FEAT_BUF_RING))
		URS_CM_NEED_FEATURE("no io_uring buffer rings (kernel)");
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_bufring b;
	assert_int_equal(urs_bufring_init(&b, &loop, 1, 4096, 4), 0);
	uint16_t bid = 0xffff;
	/* an id we never provided, an id out of range, no buffer flag */
	assert_null(urs_bufring_take(&b, 10, IORING_CQE_F_BUFFER | (2u << 16), &bid));
	assert_null(urs_bufring_take(&b, 10, IORING_CQE_F_BUFFER | (9u << 16), &bid));
	assert_null(urs_bufring_take(&b, 10, 0, &bid));
	assert_int_equal(bid, 0xffff);
	urs_bufring_recycle(&b, 3); /* not held: ignored */
	assert_int_equal(b.in_kernel, 1);
	assert_int_equal(urs_bufring_init(&(struct urs_bufring){0}, &loop, 2, 4096, 40000),
			 -EINVAL);
	urs_bufring_fini(&b);
	urs_loop_fini(&loop);
}

static void test_no_buf_ring(void **state)
{
	(void) state;
	struct urs_loop loop;
	struct urs_loop_opts o = {.no_feat = URS_FEAT_BUF_RING};
	assert_int_equal(urs_loop_init(&loop, &o), 0);
	struct urs_bufring b;
	assert_int_equal(urs_bufring_init(&b, &loop, 1, 4096, 4), -EOPNOTSUPP);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_shrink_multishot),
		cmocka_unit_test(test_grow_shrink_singleshot_fallback),
		cmocka_unit_test(test_shrink_returns_memory),
		cmocka_unit_test(test_foreign_ids),
		cmocka_unit_test(test_no_buf_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
