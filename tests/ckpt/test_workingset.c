/*
 * tests/ckpt/test_workingset.c — ckpt/workingset.c: a recorded working set
 * written and read back; of another image (stale); one bit altered
 * anywhere; truncated or extended; another key; another page-data length;
 * bits past the last block refused; the file in a directory, missing, stale,
 * replaced; the hot set's kind kept apart from it; an image's hot set
 * computed from its runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckpt/workingset.h"

static const struct ckpt_seal key = {.key = "a checkpoint key of 32 bytes...."};
static const uint8_t id[16] = "image id 16 byte";
#define LEN ((uint64_t) 40 * CKPT_WS_BLOCK + 4096) /* 41 blocks: 6 bytes of bitmap */

static long make(uint8_t *out, uint8_t *bits)
{
	memset(bits, 0, ckpt_ws_nbytes(LEN));
	bits[0] = 0x81;
	bits[5] = 0x01; /* block 40, the last */
	return ckpt_ws_encode(CKPT_WS_REC, &key, id, LEN, bits, out);
}

static void test_round_trip(void **state)
{
	(void) state;
	uint8_t out[256], bits[8], back[8];
	struct urs_err err = {{0}};
	long n = make(out, bits);
	assert_int_equal(n, (long) ckpt_ws_file_len(LEN));
	assert_int_equal(ckpt_ws_nbytes(LEN), 6);
	assert_int_equal(ckpt_ws_count(bits, LEN), 3);
	assert_int_equal(ckpt_ws_decode(CKPT_WS_REC, &key, id, LEN, out, (size_t) n, back, &err),
			 3);
	assert_memory_equal(bits, back, 6);
}

static void test_refused(void **state)
{
	(void) state;
	uint8_t out[256], bits[8], back[8];
	struct urs_err err = {{0}};
	long n = make(out, bits);
	uint8_t other[16];
	memcpy(other, id, 16);
	other[3] ^= 1;
	assert_int_equal(ckpt_ws_decode(CKPT_WS_REC, &key, other, LEN, out, (size_t) n, back, &err),
			 -ESTALE);
	for (long i = 0; i < n; i++) { /* one bit anywhere */
		out[i] ^= 0x10;
		long r = ckpt_ws_decode(CKPT_WS_REC, &key, id, LEN, out, (size_t) n, back, &err);
		assert_true(r == -EBADMSG || (r == -ESTALE && i >= 8 && i < 24));
		out[i] ^= 0x10;
	}
	for (long k = 0; k < n; k++) /* truncated */
		assert_true(ckpt_ws_decode(CKPT_WS_REC, &key, id, LEN, out, (size_t) k, back,
					   &err) < 0);
	out[n] = 0; /* extended */
	assert_int_equal(
		ckpt_ws_decode(CKPT_WS_REC, &key, id, LEN, out, (size_t) n + 1, back, &err),
		-EBADMSG);
	struct ckpt_seal k2 = key;
	k2.key[0] ^= 1;
	assert_int_equal(ckpt_ws_decode(CKPT_WS_REC, &k2, id, LEN, out, (size_t) n, back, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "fails authentication"));
	assert_int_equal(ckpt_ws_decode(CKPT_WS_REC, &key, id, LEN + CKPT_WS_BLOCK, out, (size_t) n,
					back, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "does not fit its image"));
}

static void test_past_the_end(void **state)
{
	(void) state;
	uint8_t out[256], bits[8], back[8];
	struct urs_err err = {{0}};
	make(out, bits);
	bits[5] = 0xff; /* blocks 41..47 do not exist */
	long n = ckpt_ws_encode(CKPT_WS_REC, &key, id, LEN, bits, out);
	assert_int_equal(ckpt_ws_decode(CKPT_WS_REC, &key, id, LEN, out, (size_t) n, back, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "malformed"));
}

/* a fresh directory @dir (a mkdtemp template), opened */
static int dir_make(char *dir)
{
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	return dfd;
}

/* @file removed, then @dir, which must be empty: no temporary file left */
static void dir_done(const char *dir, int dfd, const char *file)
{
	char path[64];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	assert_int_equal(unlink(path), 0);
	close(dfd);
	assert_int_equal(rmdir(dir), 0);
}

static void test_directory(void **state)
{
	(void) state;
	char dir[] = "/tmp/ursa-ws.XXXXXX";
	int dfd = dir_make(dir);
	uint8_t out[256], bits[8], back[8];
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_ws_load(CKPT_WS_REC, dir, &key, id, LEN, back, &err), -ENOENT);
	long n = make(out, bits);
	assert_int_equal(ckpt_ws_store(CKPT_WS_REC, dfd, out, (size_t) n), 0);
	assert_int_equal(ckpt_ws_load(CKPT_WS_REC, dir, &key, id, LEN, back, &err), 3);
	uint8_t other[16] = {0};
	assert_int_equal(ckpt_ws_load(CKPT_WS_REC, dir, &key, other, LEN, back, &err),
			 -ENOENT); /* stale */
	bits[1] = 0xff;
	n = ckpt_ws_encode(CKPT_WS_REC, &key, id, LEN, bits, out);
	assert_int_equal(ckpt_ws_store(CKPT_WS_REC, dfd, out, (size_t) n), 0); /* replaced */
	assert_int_equal(ckpt_ws_load(CKPT_WS_REC, dir, &key, id, LEN, back, &err), 11);
	out[n - 1] ^= 1;
	assert_int_equal(ckpt_ws_store(CKPT_WS_REC, dfd, out, (size_t) n), 0);
	assert_int_equal(ckpt_ws_load(CKPT_WS_REC, dir, &key, id, LEN, back, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, dir));
	dir_done(dir, dfd, CKPT_WS_FILE);
}

/* the two kinds: each refused as the other (magic and MAC), each its own
 * file beside the other */
static void test_hot_kind(void **state)
{
	(void) state;
	char dir[] = "/tmp/ursa-ws.XXXXXX";
	int dfd = dir_make(dir);
	uint8_t out[256], bits[8], back[8];
	struct urs_err err = {{0}};
	long n = make(out, bits);
	long h = ckpt_ws_encode(CKPT_WS_HOT, &key, id, LEN, bits, out + 128);
	assert_int_equal(h, n);
	assert_memory_not_equal(out, out + 128, (size_t) n);
	assert_int_equal(
		ckpt_ws_decode(CKPT_WS_HOT, &key, id, LEN, out + 128, (size_t) h, back, &err), 3);
	assert_int_equal(
		ckpt_ws_decode(CKPT_WS_REC, &key, id, LEN, out + 128, (size_t) h, back, &err),
		-EBADMSG);
	assert_int_equal(ckpt_ws_decode(CKPT_WS_HOT, &key, id, LEN, out, (size_t) n, back, &err),
			 -EBADMSG);
	memcpy(out + 128, "URSAWS1\n", 8); /* a hot set's MAC under the other magic */
	assert_int_equal(
		ckpt_ws_decode(CKPT_WS_REC, &key, id, LEN, out + 128, (size_t) h, back, &err),
		-EBADMSG);
	assert_non_null(strstr(err.msg, "fails authentication"));
	h = ckpt_ws_encode(CKPT_WS_HOT, &key, id, LEN, bits, out + 128);
	assert_int_equal(ckpt_ws_store(CKPT_WS_HOT, dfd, out + 128, (size_t) h), 0);
	assert_int_equal(ckpt_ws_load(CKPT_WS_REC, dir, &key, id, LEN, back, &err), -ENOENT);
	assert_int_equal(ckpt_ws_load(CKPT_WS_HOT, dir, &key, id, LEN, back, &err), 3);
	dir_done(dir, dfd, CKPT_HOT_FILE);
}

/* the hot set of an image: the runs written at or after `from`, and the
 * first CKPT_HOT_NEXT blocks of the run that follows each in its task's
 * address space; not a run elsewhere, nor one that does not follow */
static void test_hot_bits(void **state)
{
	(void) state;
	const uint64_t B = CKPT_WS_BLOCK, P = CKPT_PAGE_SIZE;
	struct ckpt_run runs[] = {
		/* pre-copied, 10 blocks at 0; the freeze's page at block 20 */
		{.vaddr = 0x100000, .npages = 10 * B / P, .off = 0},
		{.vaddr = 0x100000 + 10 * B, .npages = 1, .off = 20 * B},
		/* follows it: pre-copied at block 12, 6 blocks long */
		{.vaddr = 0x100000 + 10 * B + P, .npages = 6 * B / P, .off = 12 * B},
		/* the freeze's, at block 21; what comes after it is elsewhere */
		{.vaddr = 0x900000, .npages = 2, .off = 21 * B},
		{.vaddr = 0xa00000, .npages = 16, .off = 18 * B},
	};
	struct ckpt_task t = {.runs = runs, .nruns = 5};
	struct ckpt_image img = {.tasks = &t, .ntasks = 1, .pages_len = 40 * B};
	uint8_t bits[8] = {0};
	uint32_t k = ckpt_hot_bits(&img, 20 * B, bits);
	/* blocks 20, 21 (the freeze's) and 12..15 (the first 4 of the run
	 * after the one at block 20) */
	uint8_t want[8] = {0};
	for (int b = 12; b <= 15; b++)
		want[b / 8] |= (uint8_t) (1u << (b % 8));
	want[20 / 8] |= 1u << (20 % 8) | 1u << (21 % 8);
	assert_memory_equal(bits, want, sizeof(want));
	assert_int_equal(k, 6);
	memset(bits, 0, sizeof(bits));
	assert_int_equal(ckpt_hot_bits(&img, 40 * B, bits), 0); /* nothing frozen */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_refused),
		cmocka_unit_test(test_past_the_end), cmocka_unit_test(test_directory),
		cmocka_unit_test(test_hot_kind),     cmocka_unit_test(test_hot_bits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
