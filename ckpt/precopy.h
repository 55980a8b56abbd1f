/*
 * ckpt/precopy.h — the memory of a running process tree copied into the
 * image before it is frozen, so that the freeze only copies what was
 * written since (ckpt_dump_opts.precopy; --leave-running).
 *
 * Each process's writable private anonymous memory is write-tracked
 * (ckpt/wptrack.h), then copied page by page into the page data while the
 * tree runs; each page is recorded with its address, its place in the page
 * data (or "zero") and its page frame number. Then, while it runs, the
 * pages written meanwhile are copied again (found and protected again in
 * one step: urs_pagemap_take_written), round after round, until few are
 * left or their number stops halving. Frozen, the dumper reuses a
 * page's copy only if the page is still write-protected (not written since
 * the tracking began) and still the same frame (a page moved by mremap,
 * migrated, swapped or merged is a different frame: copied again). What
 * a later round or the freeze copies again stays in the page data
 * unreferenced: the image grows by the pages written during the copy.
 */
#ifndef URSA_CKPT_PRECOPY_H
#define URSA_CKPT_PRECOPY_H

#include <stdint.h>
#include <sys/types.h>

#include "ckpt/image.h"
#include "ckpt/wptrack.h"
#include "runtime/err.h"

#define CKPT_PRECOPY_ZERO   UINT64_MAX /* a page read as all zeros: not stored */
#define CKPT_PRECOPY_ROUNDS 5	       /* copies of what was written meanwhile, at most */
#define CKPT_PRECOPY_SMALL  128	       /* pages: written during a round, few enough to stop */

struct ckpt_precopy_page {
	uint64_t vaddr, off, pfn;
};

struct ckpt_precopy_proc {
	pid_t pid;
	struct ckpt_wptrack wp;
	struct ckpt_precopy_page *pages; /* in address order */
	uint32_t n, cap;
};

/**
 * struct ckpt_precopy - a tree's pre-copied memory
 * @procs: one per process tracked and copied
 * @n: how many
 * @pages: pages stored
 * @zero_pages: pages read as zeros
 * @shared_pages: pages not stored again: a copy of the same frame and
 *                contents (another process's, mapped by both) stood for them
 * @rounds: rounds made: the whole memory, then each time what was written
 *          during the round before
 * @ms: how long the copy took (the tree running)
 */
struct ckpt_precopy {
	struct ckpt_precopy_proc *procs;
	uint32_t n, rounds;
	uint64_t pages, zero_pages;
	uint64_t shared_pages;
	double ms;
};

/**
 * ckpt_precopy_run() - track and copy the memory of the tree at @root
 * @pc: filled (ckpt_precopy_free releases it, whatever this returned)
 * @root: the tree's root process
 * @pw: the image's page writer, open
 * @chunk: a buffer of @chunk_pages pages
 * @chunk_pages: its size in pages
 * @err: what failed
 *
 * A process that cannot be tracked (a kernel without WP_ASYNC, a process
 * gone or changing under the walk) is left out: the freeze copies it
 * whole. Only a failure to write the page data fails the run.
 *
 * Return: 0 or the page writer's negative errno.
 */
int ckpt_precopy_run(struct ckpt_precopy *pc, pid_t root, struct ckpt_pages_writer *pw,
		     uint8_t *chunk, uint32_t chunk_pages, struct urs_err *err);

/**
 * ckpt_precopy_more() - more rounds after ckpt_precopy_run()
 * @pc: the pre-copy (tracking still on)
 * @pw: the image's page writer, open
 * @chunk: a buffer of @chunk_pages pages
 * @chunk_pages: its size in pages
 * @err: what failed
 *
 * What was written since the last round, again and again until it is small
 * or stops shrinking (the same rule, up to CKPT_PRECOPY_ROUNDS more): after
 * a pause in the copying (the pre-copied data being committed).
 *
 * Return: 0 or the page writer's negative errno.
 */
int ckpt_precopy_more(struct ckpt_precopy *pc, struct ckpt_pages_writer *pw, uint8_t *chunk,
		      uint32_t chunk_pages, struct urs_err *err);

/**
 * ckpt_precopy_proc() - a process's pre-copy
 * @pc: the pre-copy
 * @pid: the process
 *
 * Return: it, or NULL (not copied: copy everything).
 */
const struct ckpt_precopy_proc *ckpt_precopy_proc(const struct ckpt_precopy *pc, pid_t pid);

/**
 * ckpt_precopy_page() - the pre-copied page at @vaddr
 * @p: a process's pre-copy
 * @vaddr: a page address
 *
 * Return: the record, or NULL.
 */
const struct ckpt_precopy_page *ckpt_precopy_page(const struct ckpt_precopy_proc *p,
						  uint64_t vaddr);

/**
 * ckpt_precopy_page_from() - ckpt_precopy_page() for addresses asked in
 *                            ascending order
 * @p: a process's pre-copy
 * @vaddr: a page address, not below the one asked before with @cursor
 * @cursor: where the last lookup ended (start at 0)
 *
 * Return: the record, or NULL.
 */
const struct ckpt_precopy_page *ckpt_precopy_page_from(const struct ckpt_precopy_proc *p,
						       uint64_t vaddr, uint32_t *cursor);

/**
 * ckpt_precopy_free() - stop tracking and release
 * @pc: the pre-copy
 */
void ckpt_precopy_free(struct ckpt_precopy *pc);

#endif
