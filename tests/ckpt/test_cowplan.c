/*
 * tests/ckpt/test_cowplan.c — what a restored child keeps of its parent's
 * memory (ckpt/cowplan.c), on synthetic tasks: a mapping kept only where
 * both have the same private mapping (flags, protection, file and offset;
 * a stack whole; the vdso group only all of it where the parent's is); a
 * child whose heap grew keeps the parent's part; pieces of a child's run
 * shared only where the page-data offsets are equal; drops where the
 * parent has pages the child has not, merged; a range needing too many
 * drops not kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "ckpt/cowplan.h"

#define P    CKPT_PAGE_SIZE
#define A(n) (0x10000000ull + (uint64_t) (n) *P)

static struct ckpt_vma anon(uint64_t a, uint64_t b)
{
	return (struct ckpt_vma){
		.r = {.start = a, .end = b, .prot = PROT_READ | PROT_WRITE, .kind = CKPT_VMA_ANON}};
}

static struct ckpt_vma file(uint64_t a, uint64_t b, uint64_t pgoff, char *path)
{
	return (struct ckpt_vma){.r = {.start = a,
				       .end = b,
				       .pgoff = pgoff,
				       .dev = 8,
				       .ino = 42,
				       .fsize = 1 << 20,
				       .prot = PROT_READ,
				       .kind = CKPT_VMA_FILE},
				 .path = path};
}

static struct ckpt_task task(struct ckpt_vma *v, uint32_t nv, struct ckpt_run *r, uint32_t nr)
{
	struct ckpt_task t = {0};
	t.vmas = v;
	t.nvmas = nv;
	t.runs = r;
	t.nruns = nr;
	return t;
}

static void plan_of(struct ckpt_task *p, struct ckpt_task *c, struct ckpt_cow_plan *pl)
{
	assert_int_equal(ckpt_cow_plan(p, c, pl), 0);
}

static void test_kept_ranges(void **state)
{
	(void) state;
	char lib[] = "/lib/x.so", other[] = "/lib/y.so";
	struct ckpt_vma pv[] = {file(A(0), A(4), 0, lib), file(A(4), A(8), 4 * P, lib),
				anon(A(10), A(20)), anon(A(30), A(40)), anon(A(50), A(60))};
	struct ckpt_vma cv[] = {file(A(0), A(4), 0, lib), file(A(4), A(8), 5 * P, lib),
				anon(A(10), A(25)), anon(A(30), A(35)), anon(A(50), A(60))};
	cv[4].r.prot = PROT_READ; /* mprotected in the child */
	struct ckpt_task p = task(pv, 5, NULL, 0), c = task(cv, 5, NULL, 0);
	struct ckpt_cow_plan pl;
	plan_of(&p, &c, &pl);
	/* the same file at the same offset; the heap grown: the parent's part;
	 * a mapping cut short: what is left; another offset, another prot: no */
	assert_int_equal(pl.nkeep, 3);
	assert_true(pl.keep[0].a == A(0) && pl.keep[0].b == A(4) && pl.keep[0].cv == 0);
	assert_true(pl.keep[1].a == A(10) && pl.keep[1].b == A(20) && pl.keep[1].cv == 2 &&
		    pl.keep[1].pv == 2);
	assert_true(pl.keep[2].a == A(30) && pl.keep[2].b == A(35) && pl.keep[2].cv == 3);
	assert_false(pl.vdso);
	ckpt_cow_plan_free(&pl);

	cv[0].path = other; /* another file */
	cv[2].r.flags = CKPT_VMA_NORESERVE;
	plan_of(&p, &c, &pl);
	assert_int_equal(pl.nkeep, 1);
	assert_true(pl.keep[0].a == A(30));
	ckpt_cow_plan_free(&pl);
}

static void test_stack_and_vdso(void **state)
{
	(void) state;
	struct ckpt_vma pv[] = {anon(A(0), A(8)), anon(A(100), A(101)), anon(A(101), A(103)),
				anon(A(103), A(104))};
	struct ckpt_vma cv[] = {anon(A(0), A(8)), anon(A(100), A(101)), anon(A(101), A(103)),
				anon(A(103), A(104))};
	pv[0].r.flags = cv[0].r.flags = CKPT_VMA_STACK;
	pv[1].r.kind = cv[1].r.kind = CKPT_VMA_VVAR;
	pv[2].r.kind = cv[2].r.kind = CKPT_VMA_VVAR_VCLOCK;
	pv[3].r.kind = cv[3].r.kind = CKPT_VMA_VDSO;
	struct ckpt_task p = task(pv, 4, NULL, 0), c = task(cv, 4, NULL, 0);
	struct ckpt_cow_plan pl;
	plan_of(&p, &c, &pl);
	assert_true(pl.vdso);
	assert_int_equal(pl.nkeep, 4);
	ckpt_cow_plan_free(&pl);
	/* a stack that grew is not kept in part; a vdso group moved at all is
	 * not kept at all */
	cv[0].r.start = A(0) - 2 * P;
	cv[3].r.start = A(103) + P;
	cv[3].r.end = A(105);
	plan_of(&p, &c, &pl);
	assert_false(pl.vdso);
	assert_int_equal(pl.nkeep, 0);
	ckpt_cow_plan_free(&pl);
}

struct rec {
	uint64_t x[16], y[16];
	enum ckpt_cow_piece what[16];
	int n;
};

static int rec_drop(void *ctx, uint64_t x, uint64_t y)
{
	struct rec *r = ctx;
	assert_true(r->n < 16);
	r->x[r->n] = x;
	r->y[r->n++] = y;
	return 0;
}

static int rec_piece(void *ctx, uint64_t x, uint64_t y, enum ckpt_cow_piece what)
{
	struct rec *r = ctx;
	r->what[r->n] = what;
	return rec_drop(ctx, x, y);
}

static void test_pieces_and_drops(void **state)
{
	(void) state;
	struct ckpt_vma pv[] = {anon(A(0), A(64))}, cv[] = {anon(A(0), A(64))};
	/* the parent: pages 0-9 at offset 0, 20-29 at 100 P */
	struct ckpt_run pr[] = {{A(0), 10, 0}, {A(20), 10, 100 * P}};
	/* the child: 0-3 the same, 4-5 its own, 8-11 the same then past the
	 * parent's, 22-23 the same as the parent's 22-23 */
	struct ckpt_run cr[] = {
		{A(0), 4, 0}, {A(4), 2, 500 * P}, {A(8), 4, 8 * P}, {A(22), 2, 102 * P}};
	struct ckpt_task p = task(pv, 1, pr, 2), c = task(cv, 1, cr, 4);
	struct rec r = {0};
	assert_int_equal(ckpt_cow_pieces(&p, &cr[2], A(8), A(12), rec_piece, &r), 0);
	assert_int_equal(r.n, 2);
	assert_true(r.x[0] == A(8) && r.y[0] == A(10) && r.what[0] == CKPT_COW_SHARED);
	assert_true(r.x[1] == A(10) && r.y[1] == A(12) && r.what[1] == CKPT_COW_OWN);
	r = (struct rec){0};
	assert_int_equal(ckpt_cow_pieces(&p, &cr[1], A(4), A(6), rec_piece, &r), 0);
	assert_true(r.n == 1 && r.what[0] == CKPT_COW_OVER);
	/* a piece of a run over a gap of the parent's and into its next run */
	struct ckpt_run long_run = {A(12), 10, 92 * P}; /* at page 20: offset 100 P */
	r = (struct rec){0};
	assert_int_equal(ckpt_cow_pieces(&p, &long_run, A(12), A(22), rec_piece, &r), 0);
	assert_int_equal(r.n, 2);
	assert_true(r.y[0] == A(20) && r.what[0] == CKPT_COW_OWN && r.x[1] == A(20) &&
		    r.what[1] == CKPT_COW_SHARED);

	/* drops: the parent's 6-7, 20-21, 24-29 (4-5 are the child's own) */
	r = (struct rec){0};
	assert_int_equal(ckpt_cow_drops(&p, &c, A(0), A(64), rec_drop, &r), 0);
	assert_int_equal(r.n, 3);
	assert_true(r.x[0] == A(6) && r.y[0] == A(8));
	assert_true(r.x[1] == A(20) && r.y[1] == A(22));
	assert_true(r.x[2] == A(24) && r.y[2] == A(30));
	/* clipped to the range asked */
	r = (struct rec){0};
	assert_int_equal(ckpt_cow_drops(&p, &c, A(7), A(25), rec_drop, &r), 0);
	assert_int_equal(r.n, 3);
	assert_true(r.x[0] == A(7) && r.y[2] == A(25));
	/* adjacent runs of the parent give one drop */
	struct ckpt_run pr2[] = {{A(0), 2, 0}, {A(2), 2, 50 * P}};
	struct ckpt_task p2 = task(pv, 1, pr2, 2), none = task(cv, 1, NULL, 0);
	r = (struct rec){0};
	assert_int_equal(ckpt_cow_drops(&p2, &none, A(0), A(64), rec_drop, &r), 0);
	assert_true(r.n == 1 && r.x[0] == A(0) && r.y[0] == A(4));
}

static int rec_shared(void *ctx, const struct ckpt_run *run, uint64_t x, uint64_t y)
{
	assert_true(run->vaddr <= x && y <= run->vaddr + run->npages * P);
	return rec_drop(ctx, x, y);
}

/* what a lazy restore writes in the parent: the pieces its live children
 * share in kept anonymous ranges (a zombie's and a file mapping's not) */
static void test_shared(void **state)
{
	(void) state;
	char lib[] = "/lib/x.so";
	struct ckpt_vma pv[] = {anon(A(0), A(64)), file(A(64), A(68), 0, lib)};
	struct ckpt_vma c1v[] = {anon(A(0), A(64)), file(A(64), A(68), 0, lib)};
	struct ckpt_vma c2v[] = {anon(A(0), A(64))};
	struct ckpt_run pr[] = {{A(0), 10, 0}, {A(64), 2, 10 * P}};
	struct ckpt_run c1r[] = {{A(2), 2, 2 * P}, {A(5), 1, 99 * P}, {A(64), 2, 10 * P}};
	struct ckpt_run c2r[] = {{A(3), 3, 3 * P}};
	struct ckpt_task t[4] = {task(pv, 2, pr, 2), task(c1v, 2, c1r, 3), task(c2v, 1, c2r, 1),
				 task(c2v, 1, c2r, 1)};
	t[1].r.parent = t[2].r.parent = t[3].r.parent = 0;
	t[0].r.parent = -1;
	t[3].r.zombie = 1;
	struct ckpt_image img = {0};
	img.tasks = t;
	img.ntasks = 4;
	struct rec r = {0};
	for (uint32_t j = 0; j < 4; j++) /* child 1's 2-3, child 2's 3-5 */
		assert_int_equal(ckpt_cow_shared(&img, j, rec_shared, &r), 0);
	assert_int_equal(r.n, 2);
	assert_true(r.x[0] == A(2) && r.y[0] == A(4));
	assert_true(r.x[1] == A(3) && r.y[1] == A(6));
}

/* the parent's pages every other page, the child sharing the first S of
 * them and missing the rest: kept only while the drops (4096 - S) are at
 * most max(8, S / 32); with no drops at all, kept whatever it shares */
static void test_scattered(void **state)
{
	(void) state;
	enum { N = 4096 };
	static struct ckpt_run pr[N];
	struct ckpt_vma pv[] = {anon(A(0), A(2 * N))}, cv[] = {anon(A(0), A(2 * N))};
	for (uint32_t k = 0; k < N; k++)
		pr[k] = (struct ckpt_run){A(2 * k), 1, (uint64_t) k * P};
	struct ckpt_task p = task(pv, 1, pr, N), c = task(cv, 1, pr, 0);
	struct ckpt_cow_plan pl;
	const struct {
		uint32_t s;
		uint32_t kept;
	} cases[] = {{0, 0}, {3969, 0}, {3972, 1}, {4088, 1}, {N, 1}};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c.nruns = cases[i].s; /* the parent's own first runs: the same bytes */
		plan_of(&p, &c, &pl);
		assert_int_equal(pl.nkeep, cases[i].kept);
		assert_int_equal(pl.shared, cases[i].kept ? cases[i].s : 0);
		ckpt_cow_plan_free(&pl);
	}
	p.nruns = 0; /* nothing to drop: kept, sharing nothing */
	plan_of(&p, &c, &pl);
	assert_true(pl.nkeep == 1 && pl.shared == 0);
	ckpt_cow_plan_free(&pl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_ranges),	 cmocka_unit_test(test_stack_and_vdso),
		cmocka_unit_test(test_pieces_and_drops), cmocka_unit_test(test_scattered),
		cmocka_unit_test(test_shared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
