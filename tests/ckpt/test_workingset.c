/*
 * tests/ckpt/test_workingset.c — ckpt/workingset.c: a recorded working set
 * written and read back; of another image (stale); one bit altered
 * anywhere; truncated or extended; another key; another page-data length;
 * bits past the last block refused; the file in a directory, missing, stale,
 * replaced.
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
	return ckpt_ws_encode(&key, id, LEN, bits, out);
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
	assert_int_equal(ckpt_ws_decode(&key, id, LEN, out, (size_t) n, back, &err), 3);
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
	assert_int_equal(ckpt_ws_decode(&key, other, LEN, out, (size_t) n, back, &err), -ESTALE);
	for (long i = 0; i < n; i++) { /* one bit anywhere */
		out[i] ^= 0x10;
		long r = ckpt_ws_decode(&key, id, LEN, out, (size_t) n, back, &err);
		assert_true(r == -EBADMSG || (r == -ESTALE && i >= 8 && i < 24));
		out[i] ^= 0x10;
	}
	for (long k = 0; k < n; k++) /* truncated */
		assert_true(ckpt_ws_decode(&key, id, LEN, out, (size_t) k, back, &err) < 0);
	out[n] = 0; /* extended */
	assert_int_equal(ckpt_ws_decode(&key, id, LEN, out, (size_t) n + 1, back, &err), -EBADMSG);
	struct ckpt_seal k2 = key;
	k2.key[0] ^= 1;
	assert_int_equal(ckpt_ws_decode(&k2, id, LEN, out, (size_t) n, back, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "fails authentication"));
	assert_int_equal(ckpt_ws_decode(&key, id, LEN + CKPT_WS_BLOCK, out, (size_t) n, back, &err),
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
	long n = ckpt_ws_encode(&key, id, LEN, bits, out);
	assert_int_equal(ckpt_ws_decode(&key, id, LEN, out, (size_t) n, back, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "malformed"));
}

static void test_directory(void **state)
{
	(void) state;
	char dir[] = "/tmp/ursa-ws.XXXXXX", path[64];
	assert_non_null(mkdtemp(dir));
	uint8_t out[256], bits[8], back[8];
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_ws_load(dir, &key, id, LEN, back, &err), -ENOENT);
	long n = make(out, bits);
	assert_int_equal(ckpt_ws_store(dir, out, (size_t) n), 0);
	assert_int_equal(ckpt_ws_load(dir, &key, id, LEN, back, &err), 3);
	uint8_t other[16] = {0};
	assert_int_equal(ckpt_ws_load(dir, &key, other, LEN, back, &err), -ENOENT); /* stale */
	bits[1] = 0xff;
	n = ckpt_ws_encode(&key, id, LEN, bits, out);
	assert_int_equal(ckpt_ws_store(dir, out, (size_t) n), 0); /* replaced */
	assert_int_equal(ckpt_ws_load(dir, &key, id, LEN, back, &err), 11);
	out[n - 1] ^= 1;
	assert_int_equal(ckpt_ws_store(dir, out, (size_t) n), 0);
	assert_int_equal(ckpt_ws_load(dir, &key, id, LEN, back, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, dir));
	snprintf(path, sizeof(path), "%s/%s", dir, CKPT_WS_FILE);
	unlink(path);
	assert_int_equal(rmdir(dir), 0); /* no temporary file left */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_past_the_end),
		cmocka_unit_test(test_directory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
