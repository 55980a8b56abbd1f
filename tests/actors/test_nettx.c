/*
 * tests/actors/test_nettx.c — batched tap writes (actors/nettx.c) against a
 * pipe standing in for the tap: frames arrive intact and in order, the pool
 * starts at one slot and doubles only when a frame finds every slot in
 * flight, -EAGAIN at the limit with ready() once a slot frees, back to one
 * slot after an idle period without backlog, and one io_uring_enter per
 * turn's batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "actors/nettx.h"
#include "runtime/loop.h"

static int readies;

static void on_ready(void *ctx)
{
	(void) ctx;
	readies++;
}

static int frame(struct urs_nettx *t, unsigned char tag, size_t len)
{
	unsigned char hdr[4] = {tag, tag, tag, tag};
	unsigned char body[512];
	memset(body, tag ^ 0x5a, sizeof(body));
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {body, len - sizeof(hdr)}};
	return urs_nettx_send(t, iov, 2);
}

static void test_batch_grow_again_shrink(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int p[2];
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	struct urs_nettx t;
	readies = 0;
	urs_nettx_init(&t, &loop, p[1], 4096, 4, on_ready, NULL);
	assert_int_equal(t.active, 1);
	assert_null(t.mem); /* nothing mapped before the first frame */

	/* one frame per turn: one slot is enough */
	for (int i = 0; i < 5; i++) {
		assert_int_equal(frame(&t, (unsigned char) i, 100), 0);
		assert_int_equal(urs_loop_run_once(&loop, true), 0);
	}
	assert_int_equal(t.active, 1);
	assert_int_equal(t.grows, 0);

	/* a burst in one turn: 1 -> 2 -> 4, then -EAGAIN */
	uint64_t batches = loop.stats.batches;
	for (int i = 0; i < 4; i++)
		assert_int_equal(frame(&t, (unsigned char) (10 + i), 200), 0);
	assert_int_equal(t.active, 4);
	assert_int_equal(t.grows, 2);
	assert_int_equal(frame(&t, 99, 200), -EAGAIN);
	assert_int_equal(readies, 0);
	while (t.busy)
		assert_int_equal(urs_loop_run_once(&loop, true), 0);
	assert_int_equal(loop.stats.batches - batches, 1); /* four writes, one submit */
	assert_int_equal(readies, 1);

	/* everything arrived, in order, intact */
	unsigned char buf[4096];
	ssize_t n = read(p[0], buf, sizeof(buf));
	assert_int_equal(n, 5 * 100 + 4 * 200);
	size_t off = 0;
	for (int i = 0; i < 9; i++) {
		unsigned char tag = (unsigned char) (i < 5 ? i : 10 + i - 5);
		size_t len = i < 5 ? 100 : 200;
		assert_int_equal(buf[off], tag);
		assert_int_equal(buf[off + 3], tag);
		assert_int_equal(buf[off + 4], tag ^ 0x5a);
		assert_int_equal(buf[off + len - 1], tag ^ 0x5a);
		off += len;
	}

	/* a period with that backlog keeps the slots; a quiet one shrinks */
	urs_nettx_idle(&t);
	assert_int_equal(t.active, 4);
	urs_nettx_idle(&t);
	assert_int_equal(t.active, 1);
	assert_int_equal(t.shrinks, 1);
	urs_nettx_idle(&t);
	assert_int_equal(t.touched, 0); /* every slot's pages returned */

	/* too large for a slot */
	assert_int_equal(frame(&t, 1, 100), 0);
	unsigned char big[5000];
	struct iovec iov = {big, sizeof(big)};
	assert_int_equal(urs_nettx_send(&t, &iov, 1), -EMSGSIZE);
	while (t.busy)
		assert_int_equal(urs_loop_run_once(&loop, true), 0);
	urs_nettx_stop(&t);
	close(p[0]);
	close(p[1]);
	urs_loop_fini(&loop);
	urs_nettx_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_grow_again_shrink),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
