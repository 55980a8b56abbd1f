/*
 * ckpt/cowplan.c — what a restored child keeps of the memory it inherits
 * from its restored parent (ckpt/cowplan.h): the kept ranges, the pages
 * left shared, written over or dropped. Pure functions of the image; the
 * restorer (ckpt/restore.c) acts on them.
 */
#include "ckpt/cowplan.h"

#include "runtime/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t run_end(const struct ckpt_run *r)
{
	return r->vaddr + r->npages * CKPT_PAGE_SIZE;
}

uint32_t ckpt_runs_after(const struct ckpt_run *r, uint32_t n, uint64_t a)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (run_end(&r[mid]) <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ckpt_runs_add(struct ckpt_run **r, uint32_t *n, uint32_t *cap, uint64_t a, uint64_t b)
{
	struct ckpt_run *last = *n ? &(*r)[*n - 1] : NULL;
	if (last && run_end(last) == a) {
		last->npages += (b - a) / CKPT_PAGE_SIZE;
		return 0;
	}
	if (urs_grow((void **) r, cap, *n, sizeof(**r), 64))
		return -ENOMEM;
	(*r)[(*n)++] = (struct ckpt_run){a, (b - a) / CKPT_PAGE_SIZE, 0};
	return 0;
}

/* the first of @t's runs that ends after @a (runs are sorted, disjoint) */
static uint32_t first_run(const struct ckpt_task *t, uint64_t a)
{
	return ckpt_runs_after(t->runs, t->nruns, a);
}

static bool vdso_kind(uint32_t kind)
{
	return kind >= CKPT_VMA_VVAR && kind <= CKPT_VMA_VDSO;
}

/* May the child keep, from @a on, what it inherited of @p where its own
 * mapping is @c? The same private mapping, as it would map it itself. */
static bool same_mapping(const struct ckpt_vma *p, const struct ckpt_vma *c, uint64_t a)
{
	const struct ckpt_vma_rec *x = &p->r, *y = &c->r;
	if (x->kind != y->kind || x->flags != y->flags || x->prot != y->prot ||
	    (x->flags & CKPT_VMA_SHARED))
		return false;
	/* a stack grows down: kept only as the same mapping, never a piece */
	if ((x->flags & CKPT_VMA_STACK) && (x->start != y->start || x->end != y->end))
		return false;
	if (x->kind == CKPT_VMA_ANON)
		return true;
	if (x->kind != CKPT_VMA_FILE || !p->path || !c->path || strcmp(p->path, c->path))
		return false;
	return x->dev == y->dev && x->ino == y->ino && x->fsize == y->fsize &&
	       x->pgoff + (a - x->start) == y->pgoff + (a - y->start);
}

/* the next vdso-kind VMA of @t from *@v on, or NULL */
static const struct ckpt_vma_rec *next_vdso(const struct ckpt_task *t, uint32_t *v)
{
	for (; *v < t->nvmas; (*v)++)
		if (vdso_kind(t->vmas[*v].r.kind))
			return &t->vmas[(*v)++].r;
	return NULL;
}

/* the vdso group (vvar, its clock pages, the vdso) kept only when the
 * child's is exactly the parent's: it cannot be mapped a second time */
static bool same_vdso(const struct ckpt_task *p, const struct ckpt_task *ch)
{
	uint32_t u = 0, v = 0, n = 0;
	for (;; n++) { /* both in address order: pairwise */
		const struct ckpt_vma_rec *x = next_vdso(p, &u), *y = next_vdso(ch, &v);
		if (!x || !y)
			return !x && !y && n;
		if (x->kind != y->kind || x->start != y->start || x->end != y->end ||
		    x->prot != y->prot)
			return false;
	}
}

struct count {
	uint64_t n, max;
};

static int count_one(void *ctx, uint64_t x, uint64_t y)
{
	struct count *c = ctx;
	(void) x;
	(void) y;
	return ++c->n > c->max; /* enough: stop */
}

static int count_shared(void *ctx, uint64_t x, uint64_t y, enum ckpt_cow_piece what)
{
	if (what == CKPT_COW_SHARED)
		*(uint64_t *) ctx += (y - x) / CKPT_PAGE_SIZE;
	return 0;
}

/* pages of @ch's runs in [@a, @b) with the same bytes as @p's */
static uint64_t shared_pages(const struct ckpt_task *p, const struct ckpt_task *ch, uint64_t a,
			     uint64_t b)
{
	uint64_t n = 0;
	for (uint32_t q = first_run(ch, a); q < ch->nruns && ch->runs[q].vaddr < b; q++) {
		uint64_t x = ch->runs[q].vaddr > a ? ch->runs[q].vaddr : a;
		uint64_t y = run_end(&ch->runs[q]) < b ? run_end(&ch->runs[q]) : b;
		ckpt_cow_pieces(p, &ch->runs[q], x, y, count_shared, &n);
	}
	return n;
}

/* Is keeping range @k worth its drops (each an injected madvise)? With
 * none, yes (nothing to do); else only for pages shared, at most one drop
 * for 32 of them (but CKPT_COW_MIN_DROPS): a child that shares little or
 * nothing of a large mapping gets it mapped anew. *@shared: its shared pages */
static bool worth_keeping(const struct ckpt_task *p, const struct ckpt_task *ch,
			  const struct ckpt_cow_keep *k, uint64_t *shared)
{
	*shared = shared_pages(p, ch, k->a, k->b);
	struct count drops = {0, *shared / 32 > CKPT_COW_MIN_DROPS ? *shared / 32
								   : CKPT_COW_MIN_DROPS};
	ckpt_cow_drops(p, ch, k->a, k->b, count_one, &drops);
	return !drops.n || (*shared && drops.n <= drops.max);
}

int ckpt_cow_plan(const struct ckpt_task *p, const struct ckpt_task *ch, struct ckpt_cow_plan *plan)
{
	*plan = (struct ckpt_cow_plan){0};
	if (!p->nvmas || !ch->nvmas)
		return 0;
	plan->keep = malloc(((size_t) p->nvmas + ch->nvmas) * sizeof(*plan->keep));
	if (!plan->keep)
		return -ENOMEM;
	plan->vdso = same_vdso(p, ch);
	uint32_t u = 0, v = 0;
	while (u < p->nvmas && v < ch->nvmas) { /* both sorted and disjoint */
		const struct ckpt_vma *pm = &p->vmas[u], *cm = &ch->vmas[v];
		uint64_t a = pm->r.start > cm->r.start ? pm->r.start : cm->r.start;
		uint64_t b = pm->r.end < cm->r.end ? pm->r.end : cm->r.end;
		struct ckpt_cow_keep k = {a, b, u, v};
		uint64_t n = 0;
		bool keep = a < b && (vdso_kind(cm->r.kind) ? plan->vdso && pm->r.kind == cm->r.kind
							    : same_mapping(pm, cm, a) &&
								      worth_keeping(p, ch, &k, &n));
		if (keep) {
			plan->keep[plan->nkeep++] = k;
			plan->shared += n;
		}
		if (pm->r.end <= cm->r.end)
			u++;
		else
			v++;
	}
	return 0;
}

void ckpt_cow_plan_free(struct ckpt_cow_plan *plan)
{
	free(plan->keep);
	*plan = (struct ckpt_cow_plan){0};
}

/* @fn of [x, y) merged with what is pending in *@pa..*@pb */
static int emit(uint64_t *pa, uint64_t *pb, uint64_t x, uint64_t y,
		int (*fn)(void *, uint64_t, uint64_t), void *ctx)
{
	if (*pa < *pb && *pb == x) {
		*pb = y;
		return 0;
	}
	int r = *pa < *pb ? fn(ctx, *pa, *pb) : 0;
	*pa = x;
	*pb = y;
	return r;
}

/* do child run @c and parent run @p put the same bytes at each address? */
static bool same_bytes(const struct ckpt_run *p, const struct ckpt_run *c)
{
	return p->off - p->vaddr == c->off - c->vaddr; /* modulo 2^64: equal offsets */
}

int ckpt_cow_drops(const struct ckpt_task *p, const struct ckpt_task *ch, uint64_t a, uint64_t b,
		   int (*fn)(void *ctx, uint64_t x, uint64_t y), void *ctx)
{
	uint64_t pa = 0, pb = 0; /* pending interval, not yet given to fn */
	uint32_t k = first_run(ch, a);
	int r = 0;
	for (uint32_t q = first_run(p, a); !r && q < p->nruns && p->runs[q].vaddr < b; q++) {
		uint64_t x = p->runs[q].vaddr > a ? p->runs[q].vaddr : a;
		uint64_t y = run_end(&p->runs[q]) < b ? run_end(&p->runs[q]) : b;
		while (!r && x < y) { /* [x, y) minus the child's runs */
			while (k < ch->nruns && run_end(&ch->runs[k]) <= x)
				k++;
			if (k < ch->nruns && ch->runs[k].vaddr <= x) {
				x = run_end(&ch->runs[k]) < y ? run_end(&ch->runs[k]) : y;
				continue;
			}
			uint64_t z = k < ch->nruns && ch->runs[k].vaddr < y ? ch->runs[k].vaddr : y;
			r = emit(&pa, &pb, x, z, fn, ctx);
			x = z;
		}
	}
	return r ? r : pa < pb ? fn(ctx, pa, pb) : 0;
}

int ckpt_cow_pieces(const struct ckpt_task *p, const struct ckpt_run *run, uint64_t a, uint64_t b,
		    int (*fn)(void *ctx, uint64_t x, uint64_t y, enum ckpt_cow_piece what),
		    void *ctx)
{
	uint32_t q = first_run(p, a);
	int r = 0;
	for (uint64_t x = a; !r && x < b;) {
		while (q < p->nruns && run_end(&p->runs[q]) <= x)
			q++;
		const struct ckpt_run *pr = q < p->nruns ? &p->runs[q] : NULL;
		uint64_t y;
		enum ckpt_cow_piece what = CKPT_COW_OWN;
		if (pr && pr->vaddr <= x) {
			y = run_end(pr) < b ? run_end(pr) : b;
			what = same_bytes(pr, run) ? CKPT_COW_SHARED : CKPT_COW_OVER;
		} else {
			y = pr && pr->vaddr < b ? pr->vaddr : b;
		}
		r = fn(ctx, x, y, what);
		x = y;
	}
	return r;
}

struct shared_ctx {
	const struct ckpt_run *run;
	int (*fn)(void *, const struct ckpt_run *, uint64_t, uint64_t);
	void *ctx;
};

static int shared_one(void *ctx, uint64_t x, uint64_t y, enum ckpt_cow_piece what)
{
	struct shared_ctx *s = ctx;
	return what == CKPT_COW_SHARED ? s->fn(s->ctx, s->run, x, y) : 0;
}

/* the shared pieces of child @ch's runs in its kept anonymous ranges */
static int child_shared(const struct ckpt_task *p, const struct ckpt_task *ch,
			const struct ckpt_cow_plan *plan, struct shared_ctx *s)
{
	int r = 0;
	for (uint32_t k = 0; !r && k < plan->nkeep; k++) {
		const struct ckpt_cow_keep *kp = &plan->keep[k];
		if (ch->vmas[kp->cv].r.kind != CKPT_VMA_ANON)
			continue;
		for (uint32_t q = first_run(ch, kp->a);
		     !r && q < ch->nruns && ch->runs[q].vaddr < kp->b; q++) {
			uint64_t x = ch->runs[q].vaddr > kp->a ? ch->runs[q].vaddr : kp->a;
			uint64_t y = run_end(&ch->runs[q]) < kp->b ? run_end(&ch->runs[q]) : kp->b;
			s->run = &ch->runs[q];
			r = ckpt_cow_pieces(p, &ch->runs[q], x, y, shared_one, s);
		}
	}
	return r;
}

int ckpt_cow_shared(const struct ckpt_image *img, uint32_t j,
		    int (*fn)(void *ctx, const struct ckpt_run *run, uint64_t x, uint64_t y),
		    void *ctx)
{
	const struct ckpt_task *ch = &img->tasks[j];
	if (ch->r.parent < 0 || (uint32_t) ch->r.parent >= j || ch->r.zombie)
		return 0;
	const struct ckpt_task *p = &img->tasks[ch->r.parent];
	struct shared_ctx s = {NULL, fn, ctx};
	struct ckpt_cow_plan plan;
	int r = ckpt_cow_plan(p, ch, &plan);
	if (!r)
		r = child_shared(p, ch, &plan, &s);
	ckpt_cow_plan_free(&plan);
	return r;
}
