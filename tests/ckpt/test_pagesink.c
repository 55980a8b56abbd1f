/*
 * tests/ckpt/test_pagesink.c — pages.img through batched io_uring writes
 * (ckpt/pagesink.c behind ckpt_pages_*): an image larger than the
 * buffer ring (every buffer in flight, reused) comes out byte-exact with
 * the header page at offset 0 and the CRC32C of what was appended; the
 * same bytes with the pwrite(2) fallback; a tiny image (one partial
 * buffer); abort removes pages.img; a stale core.img is removed at open;
 * a loop the thread already had is current again afterwards.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckpt/image.h"
#include "ckpt/pagesink.h"
#include "runtime/loop.h"

static char dir[64];
static int dirfd_;

static int setup(void **state)
{
	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/ursa-pagesink.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	dirfd_ = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return dirfd_ < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void) state;
	unlinkat(dirfd_, "pages.img", 0);
	unlinkat(dirfd_, "core.img", 0);
	close(dirfd_);
	rmdir(dir);
	return 0;
}

static void fill_page(uint8_t *pg, uint64_t i)
{
	for (unsigned k = 0; k < CKPT_PAGE_SIZE; k += 8) {
		uint64_t v = i * 0x9e3779b97f4a7c15ull + k;
		memcpy(pg + k, &v, 8);
	}
}

static const struct ckpt_seal seal_ = {.key = "pagesink-test-key-of-32-bytes..."};
static const uint8_t id_[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* write @npages pages, then check the file: header page, data, CRC, and
 * one chunk MAC per MiB */
static void write_and_check(uint64_t npages, bool uring)
{
	struct ckpt_pages_writer w;
	struct urs_err err = {{0}};
	uint8_t pg[CKPT_PAGE_SIZE];
	assert_int_equal(ckpt_pages_open(&w, dirfd_, &seal_, id_, &err), 0);
	uint32_t crc = 0;
	for (uint64_t i = 0; i < npages; i++) {
		fill_page(pg, i);
		uint64_t off;
		assert_int_equal(ckpt_pages_append(&w, pg, sizeof(pg), &off, &err), 0);
		assert_int_equal(off, i * CKPT_PAGE_SIZE);
		crc = ckpt_crc32c(crc, pg, sizeof(pg));
	}
	assert_int_equal(w.off, npages * CKPT_PAGE_SIZE);
	/* the ring exists once a buffer filled (not for an image below one) */
	assert_int_equal(ckpt_pagesink_uring(&w), uring);
	assert_int_equal(w.crc, crc);
	const uint8_t *id = id_;
	assert_int_equal(ckpt_pages_finish(&w, id, &err), 0);
	assert_int_equal(w.fd, -1);
	assert_int_equal(w.macs.n, ckpt_seal_nchunks(npages * CKPT_PAGE_SIZE));
	ckpt_pagemacs_free(&w.macs);

	int fd = openat(dirfd_, "pages.img", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, (off_t) ((npages + 1) * CKPT_PAGE_SIZE));
	assert_int_equal(sb.st_mode & 0777, 0600);
	uint8_t got[CKPT_PAGE_SIZE];
	assert_int_equal(pread(fd, got, sizeof(got), 0), (ssize_t) sizeof(got));
	assert_memory_equal(got, "URSAPAGE", 8);
	assert_memory_equal(got + 16, id, 16);
	uint64_t len;
	memcpy(&len, got + 32, 8);
	assert_int_equal(len, npages * CKPT_PAGE_SIZE);
	uint32_t hcrc;
	memcpy(&hcrc, got + 40, 4);
	assert_int_equal(hcrc, crc);
	for (uint64_t i = 0; i < npages; i++) {
		assert_int_equal(pread(fd, got, sizeof(got), (off_t) ((i + 1) * CKPT_PAGE_SIZE)),
				 (ssize_t) sizeof(got));
		fill_page(pg, i);
		if (memcmp(got, pg, sizeof(pg)))
			fail_msg("page %llu differs", (unsigned long long) i);
	}
	close(fd);
}

static void test_large(void **state)
{
	(void) state;
	/* 3.5 rings' worth: every buffer goes out and comes back several times */
	uint64_t n = (uint64_t) CKPT_SINK_NBUFS * CKPT_SINK_BUFSIZE / CKPT_PAGE_SIZE * 7 / 2 + 3;
	write_and_check(n, true);
}

static void test_small(void **state)
{
	(void) state;
	write_and_check(1, false);
	write_and_check(0, false);
	write_and_check(CKPT_SINK_BUFSIZE / CKPT_PAGE_SIZE - 1, false);
}

static void test_pwrite_fallback(void **state)
{
	(void) state;
	setenv("URSA_CKPT_NO_URING", "1", 1);
	write_and_check((uint64_t) CKPT_SINK_BUFSIZE / CKPT_PAGE_SIZE * 5 + 1, false);
	unsetenv("URSA_CKPT_NO_URING");
}

static void test_abort_and_stale_core(void **state)
{
	(void) state;
	int fd = openat(dirfd_, "core.img", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	struct ckpt_pages_writer w;
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_pages_open(&w, dirfd_, &seal_, id_, &err), 0);
	assert_int_equal(faccessat(dirfd_, "core.img", F_OK, 0), -1); /* stale one removed */
	uint8_t pg[CKPT_PAGE_SIZE];
	for (int i = 0; i < 200; i++) {
		uint64_t off;
		fill_page(pg, (uint64_t) i);
		assert_int_equal(ckpt_pages_append(&w, pg, sizeof(pg), &off, &err), 0);
	}
	ckpt_pages_abort(&w, dirfd_);
	assert_int_equal(w.fd, -1);
	assert_int_equal(faccessat(dirfd_, "pages.img", F_OK, 0), -1);
}

static void test_thread_loop_kept(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	assert_ptr_equal(urs_loop_current(), &loop);
	write_and_check(100, true);
	assert_ptr_equal(urs_loop_current(), &loop);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_small, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pwrite_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_and_stale_core, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thread_loop_kept, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
