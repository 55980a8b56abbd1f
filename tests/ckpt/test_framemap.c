/*
 * tests/ckpt/test_framemap.c — page data stored once per frame
 * (ckpt/framemap.c): SipHash against the reference vectors of its
 * authors (SipHash-2-4; SipHash-1-3 is the same code with fewer rounds);
 * through a real page writer, a shared frame with the same contents is
 * stored once, the same frame with other contents (a frame reused) is
 * stored again and remembered so, an unshared or unknown frame is always
 * appended, and a map grown past its first size still finds every frame;
 * the file then holds exactly the pages appended, in order.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckpt/framemap.h"
#include "ckpt/image.h"
#include "host/pagemap.h"

static char dir[64];
static int dirfd_;
static const struct ckpt_seal seal_ = {.key = "framemap-test-key-of-32-bytes..."};
static const uint8_t id_[16] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};

static int setup(void **state)
{
	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/ursa-framemap.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	dirfd_ = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return dirfd_ < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void) state;
	unlinkat(dirfd_, "pages.img", 0);
	close(dirfd_);
	rmdir(dir);
	return 0;
}

static void test_siphash_vectors(void **state)
{
	(void) state;
	/* key 00..0f; messages 00.., of length 0 and 15 (the paper's example) */
	uint64_t key[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
	uint8_t msg[64];
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t) i;
	assert_true(ckpt_siphash(key, msg, 0, 2, 4) == 0x726fdb47dd0e0e31ull);
	assert_true(ckpt_siphash(key, msg, 15, 2, 4) == 0xa129ca6149be45e5ull);
	/* 1-3 differs from 2-4 and depends on every byte and on the key */
	uint8_t pg[CKPT_PAGE_SIZE] = {0};
	uint64_t h = ckpt_page_hash(key, pg);
	assert_true(h != ckpt_siphash(key, pg, sizeof(pg), 2, 4));
	assert_true(h == ckpt_siphash(key, pg, sizeof(pg), 1, 3));
	pg[CKPT_PAGE_SIZE - 1] = 1;
	assert_true(ckpt_page_hash(key, pg) != h);
	key[1] ^= 1;
	assert_true(ckpt_page_hash(key, pg) !=
		    ckpt_siphash((uint64_t[2]){key[0], key[1] ^ 1}, pg, sizeof(pg), 1, 3));
}

static void fill(uint8_t *pg, uint64_t v)
{
	for (unsigned k = 0; k < CKPT_PAGE_SIZE; k += 8) {
		uint64_t w = v * 0x9e3779b97f4a7c15ull + k + 1;
		memcpy(pg + k, &w, 8);
	}
}

/* append @v's page as frame @frame: its offset; *@stored as said */
static uint64_t put(struct ckpt_pages_writer *w, uint64_t v, uint64_t frame, bool *stored)
{
	uint8_t pg[CKPT_PAGE_SIZE];
	struct urs_err err = {{0}};
	uint64_t off = UINT64_MAX;
	fill(pg, v);
	assert_int_equal(ckpt_pages_append_frame(w, pg, frame, &off, stored, &err), 0);
	return off;
}

static void test_stored_once(void **state)
{
	(void) state;
	struct ckpt_pages_writer w;
	struct urs_err err = {{0}};
	bool st;
	const uint64_t S = URS_PFN_SHARED, P = CKPT_PAGE_SIZE;
	assert_int_equal(ckpt_pages_open(&w, dirfd_, &seal_, id_, &err), 0);
	/* not shared: appended every time, no map made */
	assert_int_equal(put(&w, 1, 77, &st), 0);
	assert_false(st);
	assert_int_equal(put(&w, 1, 77, &st), P);
	assert_false(st);
	assert_int_equal(put(&w, 1, 0, &st), 2 * P);
	assert_int_equal(put(&w, 1, S, &st), 3 * P); /* frame 0: unknown */
	assert_false(st);
	assert_null(w.frames);
	/* shared, same frame and bytes: stored once */
	assert_int_equal(put(&w, 2, 100 | S, &st), 4 * P);
	assert_false(st);
	assert_non_null(w.frames);
	assert_int_equal(put(&w, 2, 100 | S, &st), 4 * P);
	assert_true(st);
	/* the same bytes in another frame: a copy of its own */
	assert_int_equal(put(&w, 2, 101 | S, &st), 5 * P);
	assert_false(st);
	/* the frame reused for other bytes: stored again, remembered so */
	assert_int_equal(put(&w, 3, 100 | S, &st), 6 * P);
	assert_false(st);
	assert_int_equal(put(&w, 3, 100 | S, &st), 6 * P);
	assert_true(st);
	assert_int_equal(put(&w, 2, 100 | S, &st), 7 * P);
	assert_false(st);
	/* an unshared mapping of a remembered frame is appended */
	assert_int_equal(put(&w, 2, 100, &st), 8 * P);
	assert_false(st);
	/* past the first table: 20000 frames, then each found again */
	uint64_t base = w.off;
	for (uint64_t i = 0; i < 20000; i++)
		assert_int_equal(put(&w, 1000 + i, (5000 + i * 4099) | S, &st), base + i * P);
	for (uint64_t i = 0; i < 20000; i++) {
		assert_int_equal(put(&w, 1000 + i, (5000 + i * 4099) | S, &st), base + i * P);
		assert_true(st);
	}
	uint64_t end = w.off;
	assert_int_equal(end, base + 20000 * P);
	assert_int_equal(ckpt_pages_finish(&w, id_, &err), 0);
	ckpt_pagemacs_free(&w.macs);
	ckpt_pages_frames_free(&w);
	assert_null(w.frames);
	/* the file: the header page, then exactly what was appended */
	int fd = openat(dirfd_, "pages.img", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, (off_t) (end + P));
	uint8_t got[CKPT_PAGE_SIZE], want[CKPT_PAGE_SIZE];
	const uint64_t order[] = {1, 1, 1, 1, 2, 2, 3, 2, 2};
	for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		assert_int_equal(pread(fd, got, P, (off_t) ((i + 1) * P)), (ssize_t) P);
		fill(want, order[i]);
		assert_memory_equal(got, want, P);
	}
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash_vectors),
		cmocka_unit_test_setup_teardown(test_stored_once, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
