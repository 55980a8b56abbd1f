/*
 * ckpt/cowplan.h — a restored tree shares memory again the way it did at
 * the checkpoint. A forked child shares its parent's pages copy-on-write
 * until one of them writes; the dumper stores such a page once (ckpt/
 * framemap.h) and both processes' runs point at that copy. The restorer
 * rebuilds a parent's memory before it clones the parent's children, so
 * each child inherits it; this plan says, from the image alone, what of
 * the inherited memory a child keeps and what it must change:
 *
 *   - the kept ranges: where a parent's and a child's mappings overlap
 *     and are the same mapping (private anonymous with the same flags and
 *     protection, or the same private file at the same offset; the vdso's
 *     group only when it is where the parent's is). Everything else the
 *     child inherited is unmapped, and its own mappings there made anew;
 *   - in a kept range, a child page whose run points at the same bytes of
 *     the page data as the parent's at that address is left shared; a
 *     page of its own is written over (the write breaks the sharing for
 *     the child only); a page the parent has and the child has not is
 *     dropped (MADV_DONTNEED: zero again, or the file's page).
 *
 * In a lazy restore (ckpt/lazy.h) the parent's pages that a child shares
 * are written before the child is cloned (they cannot be shared once they
 * come in later, into one address space), and so is a child's own page
 * over one the parent holds (a deferred page must be missing when it
 * comes); its own pages elsewhere are deferred as any task's.
 *
 * Sharing depends only on equal page-data offsets, whatever made them
 * equal, so it changes where a page's bytes come from, never what they
 * are. Pure functions over ckpt_image.c's checked invariants: VMAs and
 * runs sorted and disjoint, each run inside one private VMA.
 */
#ifndef URSA_CKPT_COWPLAN_H
#define URSA_CKPT_COWPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "ckpt/image.h"

/* a kept range [a, b) of the child's VMA cv (the parent's pv) */
struct ckpt_cow_keep {
	uint64_t a, b;
	uint32_t pv, cv;
};

struct ckpt_cow_plan {
	struct ckpt_cow_keep *keep; /* sorted by address, disjoint */
	uint32_t nkeep;
	bool vdso;	 /* the vdso group is kept (no ARCH_MAP_VDSO_64 in the child) */
	uint64_t shared; /* pages left shared in the kept ranges */
};

/* what the parent has where a child's run has a page */
enum ckpt_cow_piece {
	CKPT_COW_OWN,	 /* nothing: the page is the child's alone */
	CKPT_COW_OVER,	 /* a page with other bytes: the child's is written over it */
	CKPT_COW_SHARED, /* the same bytes: left shared */
};

/* a range that needs drops (each an injected madvise) is kept only for
 * pages it shares, at most max(CKPT_COW_MIN_DROPS, shared pages / 32) */
#define CKPT_COW_MIN_DROPS 8u

/**
 * ckpt_runs_after() - the first of @n sorted, disjoint runs @r that ends
 *                     after @a (@n if none)
 * @r: the runs
 * @n: how many
 * @a: an address
 *
 * Return: its index.
 */
uint32_t ckpt_runs_after(const struct ckpt_run *r, uint32_t n, uint64_t a);

/**
 * ckpt_runs_add() - append [@a, @b) to a list of ranges in address order,
 *                   merged into the last when they touch (off unused)
 * @r: the list (grown with urs_grow)
 * @n: its length
 * @cap: its capacity
 * @a: start, at or after the last range's end
 * @b: end
 *
 * Return: 0, or -ENOMEM.
 */
int ckpt_runs_add(struct ckpt_run **r, uint32_t *n, uint32_t *cap, uint64_t a, uint64_t b);

/**
 * ckpt_cow_plan() - what child @ch keeps of the memory it inherits from @p
 * @p: the parent's task in the image, its memory restored
 * @ch: the child's
 * @plan: gets the kept ranges (ckpt_cow_plan_free() them)
 *
 * Return: 0, or -ENOMEM.
 */
int ckpt_cow_plan(const struct ckpt_task *p, const struct ckpt_task *ch,
		  struct ckpt_cow_plan *plan);

/**
 * ckpt_cow_plan_free() - free what ckpt_cow_plan() allocated
 * @plan: the plan
 */
void ckpt_cow_plan_free(struct ckpt_cow_plan *plan);

/**
 * ckpt_cow_drops() - the pages of [@a, @b) that @p has and @ch has not
 * @p: the parent's task
 * @ch: the child's
 * @a: start of a kept range
 * @b: its end
 * @fn: called with each maximal interval [x, y), in address order, until
 *      it returns nonzero
 * @ctx: @fn's
 *
 * Return: 0, or what @fn returned.
 */
int ckpt_cow_drops(const struct ckpt_task *p, const struct ckpt_task *ch, uint64_t a, uint64_t b,
		   int (*fn)(void *ctx, uint64_t x, uint64_t y), void *ctx);

/**
 * ckpt_cow_pieces() - [@a, @b) of a child's @run split by what the parent
 *                     has at each address
 * @p: the parent's task
 * @run: a run of the child
 * @a: start, inside @run and a kept range
 * @b: end
 * @fn: called with each piece [x, y) in address order and what the parent
 *      has there (shared: its run has the same page-data offset), until it
 *      returns nonzero
 * @ctx: @fn's
 *
 * Return: 0, or what @fn returned.
 */
int ckpt_cow_pieces(const struct ckpt_task *p, const struct ckpt_run *run, uint64_t a, uint64_t b,
		    int (*fn)(void *ctx, uint64_t x, uint64_t y, enum ckpt_cow_piece what),
		    void *ctx);

/**
 * ckpt_cow_shared() - the pages task @j shares with its parent in its kept
 *                     anonymous ranges (those a lazy restore writes in the
 *                     parent before cloning it)
 * @img: the image
 * @j: the child's index (the root or a zombie: none)
 * @fn: called with a run of @j and each shared piece [x, y) of it (at the
 *      same address in the parent, the same bytes), in address order,
 *      until it returns nonzero
 * @ctx: @fn's
 *
 * Return: 0, -ENOMEM, or what @fn returned.
 */
int ckpt_cow_shared(const struct ckpt_image *img, uint32_t j,
		    int (*fn)(void *ctx, const struct ckpt_run *run, uint64_t x, uint64_t y),
		    void *ctx);

#endif
