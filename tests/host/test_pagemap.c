/*
 * tests/host/test_pagemap.c — host/pagemap.c on this process's own memory:
 * the runs of a huge, nearly empty reservation are exactly the pages touched
 * (through PAGEMAP_SCAN, which the kernel here has, and through the entries
 * on a range small enough to read); a private file mapping's own pages are
 * FILE, its copied-on-write page is not; both walks agree; a callback's
 * non-zero return stops the walk; the walk with frames gives each run its
 * pages' frame numbers, those urs_pagemap_pfns reads.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/pagemap.h"
#include "tests/lib/skip.h"

#define PG 4096ull

struct runs {
	struct urs_pm_run r[64];
	int n;
	int stop_after; /* return 7 from the callback after this many; 0: never */
};

static int collect(void *arg, const struct urs_pm_run *run)
{
	struct runs *rs = arg;
	assert_true(rs->n < 64);
	if (rs->n)
		assert_true(run->start >= rs->r[rs->n - 1].end); /* address order */
	rs->r[rs->n++] = *run;
	return rs->stop_after && rs->n == rs->stop_after ? 7 : 0;
}

static int open_pagemap(void)
{
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	assert_true(pm >= 0);
	return pm;
}

static void assert_run(const struct urs_pm_run *r, uint64_t start, uint64_t npages, unsigned f)
{
	assert_int_equal(r->start, start);
	assert_int_equal(r->end, start + npages * PG);
	assert_int_equal(r->flags, f);
}

/* 1 TiB reserved, 5 pages touched: the scan returns exactly those, as runs. */
static void test_sparse_reservation(void **state)
{
	(void) state;
	int pm = open_pagemap();
	if (!urs_pagemap_scan_supported(pm)) {
		close(pm);
		URS_CM_SKIP_OR_FAIL("no PAGEMAP_SCAN (Linux 6.7)");
	}
	uint64_t len = 1ull << 40;
	uint8_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(b != MAP_FAILED);
	madvise(b, len, MADV_NOHUGEPAGE);
	b[0] = b[PG] = b[2 * PG] = 1;
	b[1000 * PG] = 1;
	b[len / 2] = 1;
	uint64_t base = (uint64_t) (uintptr_t) b;
	struct runs rs = {.n = 0};
	assert_int_equal(urs_pagemap_walk(pm, base, base + len, collect, &rs), 0);
	assert_int_equal(rs.n, 3);
	assert_run(&rs.r[0], base, 3, URS_PM_PRESENT | URS_PM_WRITTEN);
	assert_run(&rs.r[1], base + 1000 * PG, 1, URS_PM_PRESENT | URS_PM_WRITTEN);
	assert_run(&rs.r[2], base + len / 2, 1, URS_PM_PRESENT | URS_PM_WRITTEN);
	/* the callback's verdict stops the walk and is returned */
	struct runs stop = {.n = 0, .stop_after = 2};
	assert_int_equal(urs_pagemap_walk(pm, base, base + len, collect, &stop), 7);
	assert_int_equal(stop.n, 2);
	munmap(b, len);
	close(pm);
}

static void walk_both(int pm, uint64_t start, uint64_t end, struct runs *scan, struct runs *entries)
{
	assert_int_equal(urs_pagemap_walk_entries(pm, start, end, collect, entries), 0);
	if (urs_pagemap_scan_supported(pm)) {
		assert_int_equal(urs_pagemap_walk(pm, start, end, collect, scan), 0);
		assert_int_equal(scan->n, entries->n);
		for (int i = 0; i < scan->n; i++)
			assert_run(&scan->r[i], entries->r[i].start,
				   (entries->r[i].end - entries->r[i].start) / PG,
				   entries->r[i].flags);
	}
}

/* 64 MiB (more than one block of entries) with touched pages across block
 * edges: both walks give the same runs. */
static void test_entries_agree(void **state)
{
	(void) state;
	int pm = open_pagemap();
	uint64_t len = 64ull << 20;
	uint8_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(b != MAP_FAILED);
	madvise(b, len, MADV_NOHUGEPAGE);    /* runs of 4 KiB pages, as touched */
	for (uint64_t p = 510; p < 515; p++) /* across the first 512-entry block */
		b[p * PG] = 1;
	b[4096 * PG] = 1;
	b[len - PG] = 1;
	uint64_t base = (uint64_t) (uintptr_t) b;
	struct runs scan = {.n = 0}, ent = {.n = 0};
	walk_both(pm, base, base + len, &scan, &ent);
	assert_int_equal(ent.n, 3);
	assert_run(&ent.r[0], base + 510 * PG, 5, URS_PM_PRESENT | URS_PM_WRITTEN);
	assert_run(&ent.r[1], base + 4096 * PG, 1, URS_PM_PRESENT | URS_PM_WRITTEN);
	assert_run(&ent.r[2], base + len - PG, 1, URS_PM_PRESENT | URS_PM_WRITTEN);
	munmap(b, len);
	close(pm);
}

struct framed {
	struct runs rs;
	uint64_t base, pfn[1024]; /* by page index from base */
};

static int collect_framed(void *arg, const struct urs_pm_run *run)
{
	struct framed *f = arg;
	assert_non_null(run->pfn);
	for (uint64_t a = run->start; a < run->end; a += PG)
		f->pfn[(a - f->base) / PG] = run->pfn[(a - run->start) / PG];
	return collect(&f->rs, run);
}

/* urs_pagemap_walk_pfns: the entries' runs, cut where a read of 512
 * entries ends, each with its pages' frames, the frames urs_pagemap_pfns
 * reads */
static void test_walk_pfns(void **state)
{
	(void) state;
	int pm = open_pagemap();
	uint64_t len = 1024 * PG;
	uint8_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(b != MAP_FAILED);
	madvise(b, len, MADV_NOHUGEPAGE);
	for (uint64_t p = 510; p < 515; p++)
		b[p * PG] = 1;
	b[1000 * PG] = b[1023 * PG] = 1;
	static struct framed f;
	f.base = (uint64_t) (uintptr_t) b;
	f.rs.n = 0;
	assert_int_equal(urs_pagemap_walk_pfns(pm, f.base, f.base + len, collect_framed, &f), 0);
	unsigned pw = URS_PM_PRESENT | URS_PM_WRITTEN;
	assert_int_equal(f.rs.n, 4);
	assert_run(&f.rs.r[0], f.base + 510 * PG, 2, pw); /* the first read's end */
	assert_run(&f.rs.r[1], f.base + 512 * PG, 3, pw);
	assert_run(&f.rs.r[2], f.base + 1000 * PG, 1, pw);
	assert_run(&f.rs.r[3], f.base + 1023 * PG, 1, pw);
	uint64_t want[1024];
	assert_int_equal(urs_pagemap_pfns(pm, f.base, 1024, want), 0);
	for (uint64_t p = 0; p < 1024; p++) {
		bool touched = (p >= 510 && p < 515) || p == 1000 || p == 1023;
		if (touched)
			assert_int_equal(f.pfn[p], want[p]);
		if (touched && geteuid() == 0) /* (frames read as 0 without CAP_SYS_ADMIN) */
			assert_true(f.pfn[p] != 0);
	}
	munmap(b, len);
	close(pm);
}

/* urs_pagemap_frames: a page a forked child still shares is marked
 * shared, with the frame urs_pagemap_pfns reads; once the child wrote its
 * copy, both are their own (as root: frames are 0 without CAP_SYS_ADMIN,
 * and then every page reads 0, as from urs_pagemap_pfns) */
static void test_frames_shared(void **state)
{
	(void) state;
	uint8_t *b = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(b != MAP_FAILED);
	madvise(b, 2 * PG, MADV_NOHUGEPAGE);
	b[0] = b[PG] = 1;
	int go[2], done[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) { /* writes its copy of the second page when told, then waits */
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) == 1)
			b[PG] = 2;
		if (write(done[1], "x", 1) == 1 && read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	int pm = open_pagemap();
	uint64_t base = (uint64_t) (uintptr_t) b, fr[2], pf[2];
	assert_int_equal(urs_pagemap_frames(pm, base, 2, fr), 0);
	assert_int_equal(urs_pagemap_pfns(pm, base, 2, pf), 0);
	if (geteuid() == 0) {
		for (int i = 0; i < 2; i++) {
			assert_true(fr[i] & URS_PFN_SHARED);
			assert_int_equal(fr[i] & ~URS_PFN_SHARED, pf[i]);
			assert_true(pf[i] != 0);
		}
	} else {
		assert_int_equal(fr[0], 0);
		assert_int_equal(fr[1], 0);
	}
	char c;
	assert_int_equal(write(go[1], "x", 1), 1);
	assert_int_equal(read(done[0], &c, 1), 1);
	assert_int_equal(urs_pagemap_frames(pm, base, 2, fr), 0);
	if (geteuid() == 0) {
		assert_true(fr[0] & URS_PFN_SHARED);  /* still the child's too */
		assert_false(fr[1] & URS_PFN_SHARED); /* the child has its own now */
		assert_int_equal(fr[1], pf[1]);
	}
	close(go[1]); /* the child's last read ends: it exits */
	int st;
	assert_int_equal(waitpid(kid, &st, 0), kid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(go[0]), close(done[0]), close(done[1]);
	munmap(b, 2 * PG);
	close(pm);
}

/* A private file mapping: the file's pages are FILE, the page copied on
 * write is not (that one is the process's own memory). */
static void test_private_file(void **state)
{
	(void) state;
	char path[] = "/tmp/ursa-pagemap-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	uint8_t page[PG];
	memset(page, 'x', sizeof(page));
	for (int i = 0; i < 4; i++)
		assert_int_equal(write(fd, page, PG), (ssize_t) PG);
	volatile uint8_t *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	assert_true(m != MAP_FAILED);
	for (int i = 0; i < 4; i++)
		(void) m[i * PG];
	m[PG] = 'y';
	int pm = open_pagemap();
	uint64_t base = (uint64_t) (uintptr_t) m;
	struct runs scan = {.n = 0}, ent = {.n = 0};
	walk_both(pm, base, base + 4 * PG, &scan, &ent);
	assert_int_equal(ent.n, 3);
	assert_run(&ent.r[0], base, 1, URS_PM_PRESENT | URS_PM_FILE | URS_PM_WRITTEN);
	assert_run(&ent.r[1], base + PG, 1, URS_PM_PRESENT | URS_PM_WRITTEN);
	assert_run(&ent.r[2], base + 2 * PG, 2, URS_PM_PRESENT | URS_PM_FILE | URS_PM_WRITTEN);
	munmap((void *) m, 4 * PG);
	close(pm);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_reservation), cmocka_unit_test(test_entries_agree),
		cmocka_unit_test(test_private_file),	   cmocka_unit_test(test_walk_pfns),
		cmocka_unit_test(test_frames_shared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
