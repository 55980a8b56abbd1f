/*
 * host/pagemap.h — which pages of a process's address range hold something,
 * from its /proc/PID/pagemap.
 *
 * A dump must visit only the pages a process has touched, and a range can be
 * huge and nearly empty: a sanitizer's shadow (terabytes reserved with
 * MAP_NORESERVE), a JVM or Go heap reservation, a wasm runtime's guard
 * regions. Reading one 8-byte pagemap entry per page walks such a range page
 * by page (16 TiB is 32 GiB of entries); the PAGEMAP_SCAN ioctl (Linux 6.7)
 * walks the page tables and skips what was never populated, returning runs of
 * pages. It is used where the kernel has it; elsewhere the entries are read
 * in blocks and folded into the same runs.
 */
#ifndef URSA_HOST_PAGEMAP_H
#define URSA_HOST_PAGEMAP_H

#include <stdbool.h>
#include <stdint.h>

/* What a run of pages is (all pages of a run are alike). */
enum {
	URS_PM_PRESENT = 1u << 0, /* in memory */
	URS_PM_SWAPPED = 1u << 1, /* in swap */
	URS_PM_FILE = 1u << 2,	  /* a page of a file or of shared memory, not a private copy */
	/* not write-protected by a userfaultfd: written since it was
	 * protected, or never protected (ckpt/wptrack.h) */
	URS_PM_WRITTEN = 1u << 3,
};

struct urs_pm_run {
	uint64_t start, end; /* [start, end), page aligned */
	unsigned flags;	     /* URS_PM_* */
	/* urs_pagemap_walk_pfns: each page's frame number (0: not present),
	 * valid during the call; else NULL */
	const uint64_t *pfn;
};

/* Called for each run, in address order; a non-zero return stops the walk
 * and is returned by it. */
typedef int (*urs_pm_fn)(void *arg, const struct urs_pm_run *run);

/**
 * urs_pagemap_walk() - call @fn for every run of present or swapped pages
 * @pm: an open /proc/PID/pagemap
 * @start: page-aligned start of the range
 * @end: page-aligned end of the range
 * @fn: called once per run; pages neither present nor swapped are never passed
 * @arg: passed to @fn
 *
 * Uses PAGEMAP_SCAN when the kernel has it (probed once per process), else
 * reads the pagemap entries. Allocates nothing.
 *
 * Return: 0, @fn's non-zero return, or a negative errno from reading @pm.
 */
int urs_pagemap_walk(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg);

/**
 * urs_pagemap_walk_entries() - urs_pagemap_walk() by reading the entries
 * @pm: an open /proc/PID/pagemap
 * @start: page-aligned start of the range
 * @end: page-aligned end of the range
 * @fn: called once per run
 * @arg: passed to @fn
 *
 * The fallback, exported for tests that compare it with the scan.
 *
 * Return: as urs_pagemap_walk().
 */
int urs_pagemap_walk_entries(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg);

/**
 * urs_pagemap_walk_pfns() - urs_pagemap_walk() by reading the entries,
 *                           each run with its pages' frame numbers
 * @pm: an open /proc/PID/pagemap
 * @start: page-aligned start of the range
 * @end: page-aligned end of the range
 * @fn: called once per run (runs end at least every 512 pages), with
 *      run->pfn set
 * @arg: passed to @fn
 *
 * One pass over the page tables for a caller that needs the runs and the
 * frames (a dump checking which pre-copied pages it may reuse), where a
 * walk and then urs_pagemap_pfns() would make two. But an entry is read
 * for every page of the range, holes included (urs_pagemap_walk skips
 * them): for ranges of bounded size only. Allocates nothing.
 *
 * Return: as urs_pagemap_walk().
 */
int urs_pagemap_walk_pfns(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg);

/**
 * urs_pagemap_scan_supported() - does this kernel answer PAGEMAP_SCAN
 * @pm: an open /proc/PID/pagemap
 *
 * Return: true if it does (the answer is kept for the process's lifetime).
 */
bool urs_pagemap_scan_supported(int pm);

/**
 * urs_pagemap_take_written() - the runs of pages written since they were
 *                              write-protected, protected again at once
 * @pm: an open /proc/PID/pagemap
 * @start: page-aligned start of a range registered with a userfaultfd in
 *         async write-protect mode (ckpt/wptrack.h)
 * @end: its page-aligned end
 * @fn: called once per run of written pages (URS_PM_WRITTEN set)
 * @arg: passed to @fn
 *
 * PAGEMAP_SCAN with PM_SCAN_WP_MATCHING: finding and protecting are one
 * step, so a write after it shows in the next call.
 *
 * Return: 0, @fn's non-zero return, -EOPNOTSUPP (no PAGEMAP_SCAN), -EPERM
 * (part of the range is not so registered), or another negative errno.
 */
int urs_pagemap_take_written(int pm, uint64_t start, uint64_t end, urs_pm_fn fn, void *arg);

/**
 * urs_pagemap_protect() - write-protect the populated pages of a range
 * @pm: an open /proc/PID/pagemap
 * @start: page-aligned start of a range registered with a userfaultfd in
 *         async write-protect mode
 * @end: its page-aligned end
 *
 * PAGEMAP_SCAN with PM_SCAN_WP_MATCHING over the present and swapped
 * pages only: UFFDIO_WRITEPROTECT over a range allocates every page table
 * of it, holes included (a sanitizer's terabytes of shadow, a JVM's
 * reserved heap), where this skips what was never touched. A page touched
 * later is not protected: it reads as written.
 *
 * Return: 0, -EOPNOTSUPP, -EPERM (not so registered), or a negative errno.
 */
int urs_pagemap_protect(int pm, uint64_t start, uint64_t end);

/**
 * urs_pagemap_pfns() - the page frame numbers behind @n pages
 * @pm: an open /proc/PID/pagemap (the frame numbers read as 0 without
 *      CAP_SYS_ADMIN)
 * @start: page-aligned address of the first page
 * @n: pages
 * @pfn: gets one number per page; 0 for a page not in memory
 *
 * Return: 0 or a negative errno.
 */
int urs_pagemap_pfns(int pm, uint64_t start, uint64_t n, uint64_t *pfn);

/* urs_pagemap_frames: the frame may be mapped more than once (above any
 * frame number, which takes 55 bits) */
#define URS_PFN_SHARED (1ull << 63)

/**
 * urs_pagemap_frames() - urs_pagemap_pfns(), each frame marked when other
 *                        mappings may share it
 * @pm: an open /proc/PID/pagemap (as for urs_pagemap_pfns)
 * @start: page-aligned address of the first page
 * @n: pages
 * @pfn: gets one number per page: its frame, with URS_PFN_SHARED set unless
 *       the kernel reports the page mapped exclusively (a page a fork
 *       shares copy-on-write, a KSM page, a file page); 0 for a page not in
 *       memory, and for every page when frame numbers are hidden (no
 *       CAP_SYS_ADMIN), as urs_pagemap_pfns() reads them
 *
 * Return: 0 or a negative errno.
 */
int urs_pagemap_frames(int pm, uint64_t start, uint64_t n, uint64_t *pfn);

#endif
