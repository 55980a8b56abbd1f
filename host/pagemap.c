/*
 * host/pagemap.c — runs of populated pages of a process, through the
 * PAGEMAP_SCAN ioctl where the kernel has it and pagemap entries elsewhere
 * (host/pagemap.h says why both).
 */
#include "host/pagemap.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "runtime/common.h"

#define PAGE 4096ull

/* linux/fs.h of 6.7; Debian 12's headers are 6.1 */
struct urs_page_region {
	uint64_t start, end, categories;
};
struct urs_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define URS_PAGEMAP_SCAN    _IOWR('f', 16, struct urs_pm_scan_arg)
#define URS_PAGE_IS_WRITTEN (1ull << 1)
#define URS_PAGE_IS_FILE    (1ull << 2)
#define URS_PAGE_IS_PRESENT (1ull << 3)
#define URS_PAGE_IS_SWAPPED (1ull << 4)

/* pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) */
#define PME_PRESENT (1ull << 63)
#define PME_SWAP    (1ull << 62)
#define PME_FILE    (1ull << 61)
#define PME_UFFD_WP (1ull << 57)
#define PME_EXCL    (1ull << 56) /* mapped once (PM_MMAP_EXCLUSIVE) */
#define PME_PFN	    ((1ull << 55) - 1)

#define SCAN_VEC 128 /* runs per ioctl */
#define ENTRIES	 512 /* pagemap entries per read */

static _Atomic int scan_state; /* 0 unknown, 1 yes, -1 no */

#define URS_PM_SCAN_WP_MATCHING	  (1ull << 0)
#define URS_PM_SCAN_CHECK_WPASYNC (1ull << 1)

/* take: write-protect what matches (PM_SCAN_WP_MATCHING); WRITTEN_ONLY:
 * only pages written since they were protected */
enum { SCAN_READ, SCAN_TAKE_WRITTEN, SCAN_PROTECT };

static int scan_call(int pm, struct urs_pm_scan_arg *a, struct urs_page_region *vec, uint64_t start,
		     uint64_t end, int mode)
{
	*a = (struct urs_pm_scan_arg){
		.flags = mode ? URS_PM_SCAN_WP_MATCHING | URS_PM_SCAN_CHECK_WPASYNC : 0,
		.category_mask = mode == SCAN_TAKE_WRITTEN ? URS_PAGE_IS_WRITTEN : 0,
		.size = sizeof(*a),
		.start = start,
		.end = end,
		.vec = (uint64_t) (uintptr_t) vec,
		.vec_len = SCAN_VEC,
		.category_anyof_mask = URS_PAGE_IS_PRESENT | URS_PAGE_IS_SWAPPED,
		.return_mask = URS_PAGE_IS_PRESENT | URS_PAGE_IS_SWAPPED | URS_PAGE_IS_FILE |
			       URS_PAGE_IS_WRITTEN,
	};
	int n = ioctl(pm, URS_PAGEMAP_SCAN, a);
	return n < 0 ? -errno : n;
}

bool urs_pagemap_scan_supported(int pm)
{
	int s = atomic_load(&scan_state);
	if (s)
		return s > 0;
	struct urs_pm_scan_arg a;
	struct urs_page_region vec[SCAN_VEC];
	/* an empty range answers without walking anything */
	int r = scan_call(pm, &a, vec, 0, 0, SCAN_READ);
	s = r >= 0 ? 1 : (r == -ENOTTY || r == -EINVAL || r == -EOPNOTSUPP) ? -1 : 0;
	if (s)
		atomic_store(&scan_state, s);
	return s > 0;
}

static unsigned flags_of_categories(uint64_t c)
{
	return ((c & URS_PAGE_IS_PRESENT) ? URS_PM_PRESENT : 0) |
	       ((c & URS_PAGE_IS_SWAPPED) ? URS_PM_SWAPPED : 0) |
	       ((c & URS_PAGE_IS_FILE) ? URS_PM_FILE : 0) |
	       ((c & URS_PAGE_IS_WRITTEN) ? URS_PM_WRITTEN : 0);
}

static int walk_scan(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg, int mode)
{
	struct urs_page_region vec[SCAN_VEC];
	struct urs_pm_scan_arg a;
	while (start < end) {
		int n = scan_call(pm, &a, vec, start, end, mode);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			struct urs_pm_run run = {vec[i].start, vec[i].end,
						 flags_of_categories(vec[i].categories), NULL};
			int r = fn(arg, &run);
			if (r)
				return r;
		}
		if (a.walk_end <= start) /* no progress: never loop */
			return -EIO;
		start = a.walk_end;
	}
	return 0;
}

static unsigned flags_of_entry(uint64_t e)
{
	unsigned f = ((e & PME_PRESENT) ? URS_PM_PRESENT : 0) |
		     ((e & PME_SWAP) ? URS_PM_SWAPPED : 0) | ((e & PME_FILE) ? URS_PM_FILE : 0);
	return f ? f | ((e & PME_UFFD_WP) ? 0 : URS_PM_WRITTEN) : 0;
}

/* the entries read ENTRIES at a time; @pfns: runs cut at each read's end,
 * with the frame numbers of their pages */
static int walk_entries(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg, bool pfns)
{
	uint64_t pme[ENTRIES], pfn[ENTRIES];
	struct urs_pm_run run = {0, 0, 0, NULL};
	if (start % PAGE || end % PAGE)
		return -EINVAL; /* page-aligned ranges only: k would be 0 */
	for (uint64_t a = start; a < end;) {
		uint64_t k = (end - a) / PAGE;
		k = k > ENTRIES ? ENTRIES : k;
		ssize_t got = pread(pm, pme, k * 8, (off_t) (a / PAGE * 8));
		if (got != (ssize_t) (k * 8))
			return got < 0 ? -errno : -EIO;
		for (uint64_t i = 0; i < k; i++, a += PAGE) {
			unsigned f = flags_of_entry(pme[i]);
			pfn[i] = (pme[i] & PME_PRESENT) ? pme[i] & PME_PFN : 0;
			if (run.end == a && f == run.flags && f) {
				run.end += PAGE;
				continue;
			}
			if (run.flags) {
				int r = fn(arg, &run);
				if (r)
					return r;
			}
			run = (struct urs_pm_run){a, a + PAGE, f, pfns ? &pfn[i] : NULL};
		}
		if (pfns && run.flags) { /* (the frames are this read's) */
			int r = fn(arg, &run);
			if (r)
				return r;
			run.flags = 0;
		}
	}
	return run.flags ? fn(arg, &run) : 0;
}

int urs_pagemap_walk_entries(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg)
{
	return walk_entries(pm, start, end, fn, arg, false);
}

int urs_pagemap_walk_pfns(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg)
{
	return walk_entries(pm, start, end, fn, arg, true);
}

int urs_pagemap_walk(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg)
{
	if (urs_pagemap_scan_supported(pm))
		return walk_scan(pm, start, end, fn, arg, SCAN_READ);
	return urs_pagemap_walk_entries(pm, start, end, fn, arg);
}

static int read_frames(int pm, uint64_t start, uint64_t n, uint64_t *pfn, bool mark)
{
	if (start % PAGE)
		return -EINVAL;
	for (uint64_t done = 0; done < n;) {
		uint64_t k = n - done > ENTRIES ? ENTRIES : n - done;
		uint64_t pme[ENTRIES];
		ssize_t got = pread(pm, pme, k * 8, (off_t) ((start / PAGE + done) * 8));
		if (got != (ssize_t) (k * 8))
			return got < 0 ? -errno : -EIO;
		for (uint64_t i = 0; i < k; i++)
			pfn[done + i] = !(pme[i] & PME_PRESENT) || !(pme[i] & PME_PFN) ? 0
					: mark && !(pme[i] & PME_EXCL)
						? (pme[i] & PME_PFN) | URS_PFN_SHARED
						: pme[i] & PME_PFN;
		done += k;
	}
	return 0;
}

int urs_pagemap_pfns(int pm, uint64_t start, uint64_t n, uint64_t *pfn)
{
	return read_frames(pm, start, n, pfn, false);
}

int urs_pagemap_frames(int pm, uint64_t start, uint64_t n, uint64_t *pfn)
{
	return read_frames(pm, start, n, pfn, true);
}

int urs_pagemap_take_written(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg)
{
	if (!urs_pagemap_scan_supported(pm))
		return -EOPNOTSUPP;
	return walk_scan(pm, start, end, fn, arg, SCAN_TAKE_WRITTEN);
}

static int nothing(void *arg, const struct urs_pm_run *run)
{
	(void) arg, (void) run;
	return 0;
}

int urs_pagemap_protect(int pm, uint64_t start, uint64_t end)
{
	if (!urs_pagemap_scan_supported(pm))
		return -EOPNOTSUPP;
	return walk_scan(pm, start, end, nothing, NULL, SCAN_PROTECT);
}
