/*
 * tests/state/test_codec.c — round trips of every field kind through the
 * generated codecs (tests/state/tst.ursc), pointer identity, cycles, NULL,
 * interior references, unions, maps, hooks, the zero-value rule on zeroed
 * and initialized destinations, schema evolution (tst2.ursc → tst3.ursc and
 * back, references inside skipped fields and objects included), streaming
 * output through a sink, decoder errors on truncated or corrupted input and
 * on a reference table that does not match, the identity table (two types
 * at one address, epoch wrap, growth mid-save), the range table (sorted and
 * unsorted registration), u32 vecs eight at a time, arena allocations per
 * load and statistics only when asked.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tst_types.h"
#include "tst2_types.h"
#include "tst3_types.h"

static int saving_calls, loaded_calls;

void tst_all_saving(struct all *obj)
{
	(void) obj;
	saving_calls++;
}

void tst_node_loaded(struct node *obj)
{
	obj->loaded = 1;
	loaded_calls++;
}

uint64_t tst_fd_save(const int *v)
{
	return (uint64_t) (int64_t) *v ^ 0x55;
}

void tst_fd_load(int *v, uint64_t x)
{
	*v = (int) (int64_t) (x ^ 0x55);
}

static struct node N[5];
static uint32_t NUMS[] = {0, 1, 300, 70000, UINT32_MAX};
static int16_t SNUMS[] = {-32768, -1, 0, 1, 32767};
static uint8_t DATA[1000];
static struct inner INV[3] = {{1, -1}, {0, 0}, {65535, INT32_MIN}};
static struct node *NODEV[4];
static struct circle CIRC = {2.5};

static void fill(struct all *a)
{
	memset(a, 0, sizeof(*a));
	memset(N, 0, sizeof(N));
	for (int i = 0; i < 5; i++) {
		N[i].id = 100 + i;
		N[i].next = &N[(i + 1) % 5]; /* a cycle through all five */
		for (int j = 0; j < 4; j++)
			N[i].slots[j] = 10 * i + j;
	}
	N[1].iref = &N[3].slots[2]; /* interior, into another node */
	N[2].iref = &N[2].slots[0]; /* interior, into itself */
	for (size_t i = 0; i < sizeof(DATA); i++)
		DATA[i] = (uint8_t) (i * 7);
	a->u8v = 255;
	a->u16v = 65535;
	a->u32v = 123456789;
	a->u64v = UINT64_MAX;
	a->i8v = -128;
	a->i16v = -2;
	a->i32v = INT32_MIN;
	a->i64v = INT64_MIN;
	a->b = true;
	a->f = -0.0; /* bits != 0: saved */
	for (int i = 0; i < 16; i++)
		a->raw[i] = (uint8_t) (i ? i : 0);
	a->arr[1] = 7;
	a->sarr[0] = -5;
	a->sarr[2] = INT64_MAX;
	a->nums = NUMS;
	a->nums_len = 5;
	a->snums = SNUMS;
	a->snums_len = 5;
	a->data = DATA;
	a->data_len = sizeof(DATA);
	a->name = "ursa state";
	a->head = &N[0];
	a->nodes[0] = &N[2];
	a->nodes[2] = &N[2]; /* same object twice */
	NODEV[0] = &N[4];
	NODEV[1] = NULL;
	NODEV[2] = &N[0];
	NODEV[3] = &N[4];
	a->nodev = NODEV;
	a->nodev_len = 4;
	a->into = &N[4].slots[3];
	a->whole = &N[1];
	a->in = (struct inner){42, -42};
	a->ins[1] = (struct inner){1, 2};
	a->inv = INV;
	a->inv_len = 3;
	a->sh.tag = SHAPE_CIRCLE;
	a->sh.circle = &CIRC;
	urs_map_put(&a->byid, 7, (uint64_t) (uintptr_t) &N[3]);
	urs_map_put(&a->byid, 1ull << 40, (uint64_t) (uintptr_t) &N[0]);
	for (uint64_t k = 0; k < 50; k++)
		urs_map_put(&a->counts, k * 3, k * k);
	a->fd = 9;
	a->scratch = 77;
}

static int idx(const struct node *base, const struct node *p)
{
	(void) base;
	return (int) (p - base);
}

static void check(const struct all *a, const struct all *o, bool scratch_kept)
{
	assert_int_equal(o->u8v, a->u8v);
	assert_int_equal(o->u16v, a->u16v);
	assert_int_equal(o->u32v, a->u32v);
	assert_true(o->u64v == a->u64v);
	assert_int_equal(o->i8v, a->i8v);
	assert_int_equal(o->i16v, a->i16v);
	assert_int_equal(o->i32v, a->i32v);
	assert_true(o->i64v == a->i64v);
	assert_int_equal(o->b, a->b);
	assert_memory_equal(&o->f, &a->f, 8);
	assert_memory_equal(o->raw, a->raw, 16);
	assert_memory_equal(o->arr, a->arr, sizeof(a->arr));
	assert_memory_equal(o->sarr, a->sarr, sizeof(a->sarr));
	assert_int_equal(o->nums_len, 5);
	assert_memory_equal(o->nums, NUMS, sizeof(NUMS));
	assert_int_equal(o->snums_len, 5);
	assert_memory_equal(o->snums, SNUMS, sizeof(SNUMS));
	assert_int_equal(o->data_len, sizeof(DATA));
	assert_memory_equal(o->data, DATA, sizeof(DATA));
	assert_string_equal(o->name, "ursa state");
	/* graph: identity and the cycle */
	struct node *h = o->head;
	assert_non_null(h);
	struct node *m[5];
	for (int i = 0; i < 5; i++) {
		m[i] = h;
		assert_int_equal(h->id, 100 + i);
		for (int j = 0; j < 4; j++)
			assert_int_equal(h->slots[j], 10 * i + j);
		assert_int_equal(h->loaded, 1); /* after_load ran */
		h = h->next;
	}
	assert_ptr_equal(h, m[0]);
	assert_ptr_equal(o->nodes[0], m[2]);
	assert_null(o->nodes[1]);
	assert_ptr_equal(o->nodes[2], m[2]);
	assert_int_equal(o->nodev_len, 4);
	assert_ptr_equal(o->nodev[0], m[4]);
	assert_null(o->nodev[1]);
	assert_ptr_equal(o->nodev[2], m[0]);
	assert_ptr_equal(o->nodev[3], m[4]);
	assert_ptr_equal(m[1]->iref, &m[3]->slots[2]);
	assert_ptr_equal(m[2]->iref, &m[2]->slots[0]);
	assert_null(m[0]->iref);
	assert_ptr_equal(o->into, &m[4]->slots[3]);
	assert_ptr_equal(o->whole, m[1]);
	assert_int_equal(o->in.a, 42);
	assert_int_equal(o->in.b, -42);
	assert_int_equal(o->ins[0].a, 0);
	assert_int_equal(o->ins[1].b, 2);
	assert_int_equal(o->inv_len, 3);
	assert_memory_equal(o->inv, INV, sizeof(INV));
	assert_int_equal(o->sh.tag, SHAPE_CIRCLE);
	assert_true(o->sh.circle->r == 2.5);
	assert_int_equal(o->byid.len, 2);
	assert_ptr_equal(urs_map_get(&o->byid, 7)->val.p, m[3]);
	assert_ptr_equal(urs_map_get(&o->byid, 1ull << 40)->val.p, m[0]);
	assert_int_equal(o->counts.len, 50);
	for (uint64_t k = 0; k < 50; k++)
		assert_true(urs_map_get(&o->counts, k * 3)->val.u == k * k);
	assert_int_equal(o->fd, 9);
	if (scratch_kept)
		assert_int_equal(o->scratch, 1234);
	else
		assert_int_equal(o->scratch, 0);
	(void) idx;
}

static void test_roundtrip(void **state)
{
	(void) state;
	struct all a;
	fill(&a);
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	saving_calls = 0;
	assert_int_equal(tst_save_all(&e, &a), 0);
	assert_int_equal(saving_calls, 1);
	assert_int_equal(e.nobjs, 1 + 5 + 1); /* all, five nodes, the circle */
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);

	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct all *o;
	loaded_calls = 0;
	int r = tst_load_all(&d, buf, len, NULL, &o);
	if (r)
		fail_msg("%s", d.msg);
	assert_int_equal(loaded_calls, 5);
	check(&a, o, false);

	/* the same again, into a caller-owned destination */
	struct all dst;
	memset(&dst, 0xa5, sizeof(dst));
	dst.scratch = 1234;
	r = tst_load_all(&d, buf, len, &dst, NULL);
	if (r)
		fail_msg("%s", d.msg);
	check(&a, &dst, true);

	/* the encoder is reusable and deterministic */
	uint8_t *copy = malloc(len);
	memcpy(copy, buf, len);
	assert_int_equal(tst_save_all(&e, &a), 0);
	size_t len2;
	buf = urs_st_enc_data(&e, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(buf, copy, len);
	free(copy);
	urs_map_free(&a.byid);
	urs_map_free(&a.counts);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

struct sink_buf {
	uint8_t *p;
	size_t len, calls;
};

static int sink(void *ctx, const void *buf, size_t len)
{
	struct sink_buf *s = ctx;
	s->p = realloc(s->p, s->len + len);
	memcpy(s->p + s->len, buf, len);
	s->len += len;
	s->calls++;
	return 0;
}

static void test_sink(void **state)
{
	(void) state;
	struct all a;
	fill(&a);
	struct urs_st_enc e, m;
	struct sink_buf s = {0};
	assert_int_equal(urs_st_enc_init(&e, 100, sink, &s), 0);
	assert_int_equal(urs_st_enc_init(&m, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&e, &a), 0);
	assert_int_equal(tst_save_all(&m, &a), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&m, &len);
	assert_int_equal(s.len, len);
	assert_memory_equal(s.p, buf, len);
	assert_true(s.calls > 5);
	free(s.p);
	urs_map_free(&a.byid);
	urs_map_free(&a.counts);
	urs_st_enc_free(&e);
	urs_st_enc_free(&m);
}

/*
 * The zero-value rule: a saved field whose value was zero is elided from the
 * image, and loading it writes zero into the destination, whatever the
 * destination held (the image is the truth). Fields the image does not
 * carry (nosave, or added since) are left untouched.
 */
static void test_zero_rule(void **state)
{
	(void) state;
	struct all z;
	memset(&z, 0, sizeof(z));
	z.fd = 0x55; /* custom: saves as 0 */
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&e, &z), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	/* every field elided except the embedded structs (never elided): the
	 * object body is the bitmap + in + ins[2], past the type table (~430 B) */
	assert_true(len < 460);

	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	for (int init = 0; init < 2; init++) {
		struct all dst;
		if (init) {
			fill(&dst);
			dst.scratch = 1234;
		} else {
			memset(&dst, 0, sizeof(dst));
		}
		struct urs_map m1 = dst.byid, m2 = dst.counts;
		int r = tst_load_all(&d, buf, len, &dst, NULL);
		if (r)
			fail_msg("%s", d.msg);
		assert_int_equal(dst.u8v, 0);
		assert_int_equal(dst.u16v, 0);
		assert_int_equal(dst.u32v, 0);
		assert_true(dst.u64v == 0);
		assert_int_equal(dst.i8v, 0);
		assert_int_equal(dst.i16v, 0);
		assert_int_equal(dst.i32v, 0);
		assert_true(dst.i64v == 0);
		assert_false(dst.b);
		assert_true(urs_st_f64bits(dst.f) == 0);
		assert_true(urs_st_allzero(dst.raw, sizeof(dst.raw))); /* byte array */
		assert_true(urs_st_allzero(dst.arr, sizeof(dst.arr)));
		assert_true(urs_st_allzero(dst.sarr, sizeof(dst.sarr)));
		assert_null(dst.nums);
		assert_int_equal(dst.nums_len, 0);
		assert_null(dst.snums);
		assert_null(dst.data);
		assert_int_equal(dst.data_len, 0);
		assert_null(dst.name);
		assert_null(dst.head);
		assert_null(dst.nodes[0]);
		assert_null(dst.nodes[2]);
		assert_null(dst.nodev);
		assert_int_equal(dst.nodev_len, 0);
		assert_null(dst.into);
		assert_null(dst.whole);
		assert_int_equal(dst.in.a, 0);
		assert_int_equal(dst.ins[1].b, 0);
		assert_null(dst.inv);
		assert_int_equal(dst.sh.tag, 0);
		assert_null(dst.sh.ptr);
		assert_int_equal(dst.byid.len, 0);
		assert_int_equal(dst.counts.len, 0);
		assert_int_equal(dst.fd, 0x55);
		assert_int_equal(dst.scratch, init ? 1234 : 0); /* nosave: untouched */
		urs_map_free(&m1);
		urs_map_free(&m2);
	}
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

static void evolve_check(const struct v2_rec *o, bool init)
{
	assert_int_equal(o->a, 5);
	assert_string_equal(o->s, "hello");
	assert_int_equal(o->blob_len, 3);
	assert_memory_equal(o->blob, "xyz", 3);
	assert_int_equal(o->keep[0], 1);
	assert_int_equal(o->keep[1], 2);
	assert_int_equal(o->added, init ? 99 : 0); /* not in the image: untouched */
	if (init)
		assert_string_equal(o->retyped, "init");
	else
		assert_null(o->retyped);
	assert_non_null(o->lf);
	assert_int_equal(o->lf->x, 11);
	assert_int_equal(o->lf->y, 12);
	assert_true(o->lf->z == 0);
	assert_int_equal(o->leaves_len, 2);
	assert_int_equal(o->leaves[1].x, 21);
	assert_int_equal(o->leaves[1].y, 22);
	/* references after skipped ones (gone_ref, the `old` object's r) */
	assert_ptr_equal(o->kept_ref, &o->lf->y);
	assert_non_null(o->lf->lr); /* into gone_leaf's x: decoded, unreachable */
	assert_int_equal(*o->lf->lr, 13);
	assert_null(o->leaves[1].lr);
}

static void test_evolution(void **state)
{
	(void) state;
	struct v1_leaf l1 = {11, 12, NULL}, l2 = {13, 14, NULL},
		       lv[2] = {{1, 2, NULL}, {21, 22, NULL}};
	struct v1_old old = {.q = 3, .r = &l1.x};
	l1.lr = &l2.x;
	struct v1_rec r = {.gone_old = &old,
			   .gone_ref = &l1.x,
			   .kept_ref = &l1.y,
			   .a = 5,
			   .s = "hello",
			   .gone = 1ull << 50,
			   .blob = (uint8_t *) "xyz",
			   .blob_len = 3,
			   .keep = {1, 2},
			   .retyped = 77,
			   .gone_leaf = &l2,
			   .lf = &l1,
			   .leaves = lv,
			   .leaves_len = 2};
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst2_save_rec(&e, &r), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct v2_rec *o;
	int rc = tst3_load_rec(&d, buf, len, NULL, &o);
	if (rc)
		fail_msg("%s", d.msg);
	evolve_check(o, false);
	struct v2_rec dst = {.added = 99, .retyped = "init", .a = 1000};
	rc = tst3_load_rec(&d, buf, len, &dst, NULL);
	if (rc)
		fail_msg("%s", d.msg);
	evolve_check(&dst, true);

	/* and back: v2 image into v1 */
	struct v2_leaf m = {.x = 3, .y = 4, .z = 5};
	struct v2_rec r2 = {
		.lf = &m, .added = 8, .retyped = "s", .a = 6, .s = "back", .kept_ref = &m.x};
	assert_int_equal(tst3_save_rec(&e, &r2), 0);
	buf = urs_st_enc_data(&e, &len);
	struct v1_rec *b;
	rc = tst2_load_rec(&d, buf, len, NULL, &b);
	if (rc)
		fail_msg("%s", d.msg);
	assert_int_equal(b->a, 6);
	assert_string_equal(b->s, "back");
	assert_int_equal(b->lf->x, 3);
	assert_int_equal(b->lf->y, 4);
	assert_int_equal(b->retyped, 0);
	assert_null(b->gone_leaf);
	assert_null(b->gone_old);
	assert_null(b->gone_ref);
	assert_ptr_equal(b->kept_ref, &b->lf->x);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

static void test_errors(void **state)
{
	(void) state;
	struct all a;
	fill(&a);
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&e, &a), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct all *o;
	/* every truncation fails cleanly, with a message */
	for (size_t n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1);
		memcpy(cut, buf, n);
		int r = tst_load_all(&d, cut, n, NULL, &o);
		assert_true(r < 0);
		assert_true(d.msg[0] != 0);
		free(cut);
	}
	/* every single-byte corruption: an error or a valid load, never a crash */
	uint8_t *mut = malloc(len);
	int errors = 0;
	for (size_t i = 0; i < len; i++) {
		memcpy(mut, buf, len);
		mut[i] ^= 0xff;
		if (tst_load_all(&d, mut, len, NULL, &o) < 0)
			errors++;
	}
	assert_true(errors > 0);
	/* a message says where: the footer of a truncated stream ... */
	memcpy(mut, buf, len);
	int r = tst_load_all(&d, mut, len - 1, NULL, &o);
	assert_true(r < 0);
	assert_non_null(strstr(d.msg, "footer"));
	/* ... and an object body cut short (the last byte before the tail
	 * removed, the footer's tail offset moved with it) names the object */
	uint64_t tail = 0;
	for (int k = 0; k < 8; k++)
		tail |= (uint64_t) buf[len - 8 + (size_t) k] << (8 * k);
	if (tail == 0 || tail >= len - 8) {
		fail_msg("tail offset %llu out of range", (unsigned long long) tail);
		return;
	}
	memcpy(mut, buf, tail - 1);
	memcpy(mut + tail - 1, buf + tail, len - 8 - tail);
	for (int k = 0; k < 8; k++)
		mut[len - 9 + (size_t) k] = (uint8_t) ((tail - 1) >> (8 * k));
	r = tst_load_all(&d, mut, len - 1, NULL, &o);
	assert_true(r < 0);
	assert_non_null(strstr(d.msg, "object 7"));
	/* the intact copy still loads */
	memcpy(mut, buf, len);
	r = tst_load_all(&d, mut, len, NULL, &o);
	assert_int_equal(r, 0);
	/* limits */
	urs_st_dec_free(&d);
	urs_st_dec_init(&d, &(struct urs_st_limits){.max_count = 10});
	r = tst_load_all(&d, buf, len, NULL, &o);
	assert_int_equal(r, -E2BIG);
	assert_non_null(strstr(d.msg, "limit"));
	free(mut);
	urs_map_free(&a.byid);
	urs_map_free(&a.counts);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

static void test_bad_refs(void **state)
{
	(void) state;
	struct all a;
	memset(&a, 0, sizeof(a));
	uint32_t outside = 5;
	a.into = &outside; /* not inside any saved object */
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&e, &a), -EINVAL);
	assert_non_null(e.err_field);
	urs_st_enc_free(&e);
}

static void test_stats(void **state)
{
	(void) state;
	struct all a;
	fill(&a);
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_null(e.stats); /* off unless asked */
	assert_int_equal(urs_st_enc_stats(&e, true), 0);
	assert_int_equal(tst_save_all(&e, &a), 0);
	assert_int_equal(e.stats[TST_T_NODE].count, 5);
	assert_int_equal(e.stats[TST_T_ALL].count, 1);
	assert_int_equal(e.stats[TST_T_CIRCLE].count, 1);
	assert_true(e.stats[TST_T_NODE].ns + e.stats[TST_T_ALL].ns + e.stats[TST_T_CIRCLE].ns > 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	assert_null(d.stats);
	assert_int_equal(urs_st_dec_stats(&d, true), 0);
	struct all *o;
	assert_int_equal(tst_load_all(&d, buf, len, NULL, &o), 0);
	assert_int_equal(d.stats[TST_T_NODE].count, 5);
	urs_map_free(&a.byid);
	urs_map_free(&a.counts);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

/* Interior references when the objects are registered in address order
 * (the root below a node array, a chain through it): the range table skips
 * its sort; references into the first, the last and a middle node. */
static void test_sorted_refs(void **state)
{
	(void) state;
	enum { M = 3001 };
	struct blk {
		struct all a;
		struct node ns[M];
	} *b = calloc(1, sizeof(*b));
	assert_non_null(b);
	uint64_t r = 88172645463325252ull;
	for (uint32_t i = 0; i < M; i++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		b->ns[i].id = i;
		b->ns[i].next = i + 1 < M ? &b->ns[i + 1] : NULL;
		b->ns[i].slots[i % 4] = i;
		b->ns[i].iref = (r & 1) ? &b->ns[r % M].slots[(r >> 20) % 4] : NULL;
	}
	b->ns[0].iref = &b->ns[M - 1].slots[3];
	b->ns[M - 1].iref = &b->ns[0].slots[0];
	b->a.head = &b->ns[0];
	b->a.into = &b->ns[M / 2].slots[2];
	b->a.whole = &b->ns[7];
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&e, &b->a), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct all *o;
	assert_int_equal(tst_load_all(&d, buf, len, NULL, &o), 0);
	struct node **out = calloc(M, sizeof(*out));
	uint32_t n = 0;
	for (struct node *p = o->head; p; p = p->next)
		out[n++] = p;
	assert_int_equal(n, M);
	for (uint32_t i = 0; i < M; i++) {
		const struct node *src = &b->ns[i];
		if (!src->iref) {
			assert_null(out[i]->iref);
			continue;
		}
		size_t off = (size_t) ((const uint8_t *) src->iref - (const uint8_t *) b->ns);
		uint32_t t = (uint32_t) (off / sizeof(struct node));
		uint32_t k = (uint32_t) (src->iref - b->ns[t].slots);
		assert_ptr_equal(out[i]->iref, &out[t]->slots[k]);
	}
	assert_ptr_equal(o->into, &out[M / 2]->slots[2]);
	assert_ptr_equal(o->whole, out[7]);
	free(out);
	free(b);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

/* Allocations per load: decoded objects, vec storage, byte arrays and maps
 * come from arena blocks; a cold load of 20 000 objects (with byte arrays)
 * takes at most one allocation per 1 000 objects (the arena blocks + the ID
 * table), a warm one (same decoder) none. */
static void test_arena_allocs(void **state)
{
	(void) state;
	enum { M = 20000 };
	struct node *ns = calloc(M, sizeof(*ns));
	struct node **vec = calloc(M, sizeof(*vec));
	static uint8_t blob[200];
	struct all a;
	memset(&a, 0, sizeof(a));
	for (uint32_t i = 0; i < M; i++) {
		ns[i].id = i;
		ns[i].next = &ns[(i + 1) % M];
		vec[i] = &ns[i];
	}
	a.nodev = vec;
	a.nodev_len = M;
	a.data = blob;
	a.data_len = sizeof(blob);
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&e, &a), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct all *o;
	assert_int_equal(tst_load_all(&d, buf, len, NULL, &o), 0);
	uint32_t cold = d.arena.nblocks + 1; /* + the ID table */
	assert_true(cold <= (M + 1) / 1000);
	assert_int_equal(o->nodev_len, M);
	assert_ptr_equal(o->nodev[M - 1]->next, o->nodev[0]);
	assert_int_equal(tst_load_all(&d, buf, len, NULL, &o), 0);
	assert_int_equal(d.arena.nblocks + 1, cold); /* warm: blocks reused */
	free(ns);
	free(vec);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

/* Identity across saves and its table: one address reached as two types is
 * refused; 70 000 saves with one encoder wrap the table's 16-bit epoch (the
 * slots of old saves must still read as empty); a save much larger than the
 * previous one grows the table mid-save. */
static void test_identity_table(void **state)
{
	(void) state;
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	struct all a;
	memset(&a, 0, sizeof(a));
	static struct circle c = {1.0};
	a.head = (struct node *) (void *) &c; /* same address as a node ... */
	a.sh.tag = SHAPE_CIRCLE;
	a.sh.circle = &c; /* ... and as a circle */
	assert_int_equal(tst_save_all(&e, &a), -EINVAL);
	assert_non_null(strstr(e.err_field, "two types"));

	static struct node n2[2];
	memset(&a, 0, sizeof(a));
	a.nodes[0] = &n2[0];
	a.nodes[1] = &n2[1];
	a.nodes[2] = &n2[0];
	n2[0].next = &n2[1];
	n2[1].next = &n2[0];
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	for (uint32_t i = 0; i < 70000; i++) {
		n2[0].id = i;
		assert_int_equal(tst_save_all(&e, &a), 0);
		if (i % 9999 && i != 65534 && i != 65535 && i != 65536)
			continue;
		assert_int_equal(e.nobjs, 3);
		size_t len;
		const uint8_t *buf = urs_st_enc_data(&e, &len);
		struct all *o;
		assert_int_equal(tst_load_all(&d, buf, len, NULL, &o), 0);
		assert_ptr_equal(o->nodes[0], o->nodes[2]);
		assert_ptr_equal(o->nodes[0]->next, o->nodes[1]);
		assert_ptr_equal(o->nodes[1]->next, o->nodes[0]);
		assert_int_equal(o->nodes[0]->id, i);
	}
	/* a much larger graph after small ones: the table grows while saving */
	enum { M = 5000 };
	struct node *ns = calloc(M, sizeof(*ns));
	/* a chain visiting every node in the order 0, 7, 14, ... (mod M) */
	for (uint32_t j = 0; j < M; j++) {
		uint32_t i = j * 7 % M;
		ns[i].id = i;
		ns[i].next = j + 1 < M ? &ns[(j + 1) * 7 % M] : NULL;
	}
	a.nodes[1] = &ns[0];
	assert_int_equal(tst_save_all(&e, &a), 0);
	assert_int_equal(e.nobjs, 3 + M); /* all, n2[0], n2[1] (via next), the chain */
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	struct all *o;
	assert_int_equal(tst_load_all(&d, buf, len, NULL, &o), 0);
	struct node *p = o->nodes[1];
	for (uint32_t j = 0; j < M; j++) {
		assert_int_equal(p->id, j * 7 % M);
		p = p->next;
	}
	assert_null(p);
	free(ns);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

/* vec u32 goes eight at a time (SSSE3 when the CPU has it) below 2^14 and
 * falls back per group: groups all < 128, mixed 1/2-byte, one with a
 * larger value, a partial tail. */
static void test_u32_groups(void **state)
{
	(void) state;
	uint32_t v[8 * 6 + 5];
	for (uint32_t i = 0; i < 8; i++) {
		v[i] = i * 15;				   /* < 128 */
		v[8 + i] = i & 1 ? 128 + i * 2000 : i;	   /* 1 and 2 bytes */
		v[16 + i] = i == 5 ? 16384 : 16383 - i;	   /* one at 2^14 */
		v[24 + i] = i == 0 ? UINT32_MAX : 127 + i; /* 5 bytes */
		v[32 + i] = 16383;			   /* all 2 bytes */
		v[40 + i] = i == 7 ? 1u << 28 : 0;	   /* zeros and a large */
	}
	for (uint32_t i = 48; i < 53; i++)
		v[i] = i * 1000;
	struct all a;
	memset(&a, 0, sizeof(a));
	struct urs_st_enc e;
	struct urs_st_dec d;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	urs_st_dec_init(&d, NULL);
	for (uint32_t n = 0; n <= 53; n++) {
		a.nums = v;
		a.nums_len = n;
		assert_int_equal(tst_save_all(&e, &a), 0);
		size_t len;
		const uint8_t *buf = urs_st_enc_data(&e, &len);
		struct all *o;
		assert_int_equal(tst_load_all(&d, buf, len, NULL, &o), 0);
		assert_int_equal(o->nums_len, n);
		if (n)
			assert_memory_equal(o->nums, v, n * sizeof(uint32_t));
	}
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

/* The reference table must match the references in the objects: one entry
 * fewer (the tail's count decremented) is refused, with a message. */
static void test_ref_table(void **state)
{
	(void) state;
	struct all a;
	fill(&a);
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&e, &a), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	uint64_t tail = 0;
	for (int k = 0; k < 8; k++)
		tail |= (uint64_t) buf[len - 8 + (size_t) k] << (8 * k);
	/* tail = nobjects (7), nrefs (4: two irefs, into, whole), entries */
	assert_int_equal(buf[tail], 7);
	assert_int_equal(buf[tail + 1], 4);
	uint8_t *mut = malloc(len);
	memcpy(mut, buf, len);
	mut[tail + 1] = 3;
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct all *o;
	assert_int_equal(tst_load_all(&d, mut, len, NULL, &o), -EBADMSG);
	assert_non_null(strstr(d.msg, "reference"));
	mut[tail + 1] = 5;
	assert_int_equal(tst_load_all(&d, mut, len, NULL, &o), -EBADMSG);
	assert_non_null(strstr(d.msg, "reference"));
	free(mut);
	urs_map_free(&a.byid);
	urs_map_free(&a.counts);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

/* writes the fuzz seed corpus: test_codec --corpus DIR */
static int write_corpus(const char *dir)
{
	struct all a;
	fill(&a);
	struct urs_st_enc e;
	if (urs_st_enc_init(&e, 0, NULL, NULL) || tst_save_all(&e, &a))
		return 1;
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	char path[512];
	snprintf(path, sizeof(path), "%s/full", dir);
	FILE *f = fopen(path, "wb");
	if (!f)
		return 1;
	fwrite(buf, 1, len, f);
	fclose(f);
	struct all z;
	memset(&z, 0, sizeof(z));
	z.head = &N[0];
	if (tst_save_all(&e, &z))
		return 1;
	buf = urs_st_enc_data(&e, &len);
	snprintf(path, sizeof(path), "%s/cycle", dir);
	f = fopen(path, "wb");
	if (!f)
		return 1;
	fwrite(buf, 1, len, f);
	fclose(f);
	urs_st_enc_free(&e);
	return 0;
}

/* Many objects and interior refs: objects registered out of address order
 * (a vec of the nodes in a scrambled order, then a chain through them: every
 * node is reached twice, and NULLs in between), so the range table is
 * radix-sorted; its bucket index and the search inside a bucket; references
 * into the first and the last object. */
static void test_many_refs(void **state)
{
	(void) state;
	enum { M = 1237 };
	static struct node ns[M];
	static struct node *vec[M];
	struct all a;
	memset(&a, 0, sizeof(a));
	memset(ns, 0, sizeof(ns));
	uint64_t r = 88172645463325252ull;
	for (uint32_t i = 0; i < M; i++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		ns[i].id = i;
		ns[i].next = i + 1 < M ? &ns[i + 1] : NULL;
		for (int k = 0; k < 4; k++)
			ns[i].slots[k] = i * 4 + (uint32_t) k;
		ns[i].iref = (r & 3) ? &ns[r % M].slots[(r >> 20) % 4] : NULL;
		vec[i] = (i % 7) ? &ns[(i * 31) % M] : NULL;
	}
	/* one into the very first and the very last object */
	ns[0].iref = &ns[M - 1].slots[3];
	ns[M - 1].iref = &ns[0].slots[0];
	a.head = &ns[0];
	a.nodev = vec;
	a.nodev_len = M;
	a.into = &ns[M / 2].slots[1];
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	for (int round = 0; round < 2; round++) { /* second save reuses the tables */
		assert_int_equal(tst_save_all(&e, &a), 0);
		size_t len;
		const uint8_t *buf = urs_st_enc_data(&e, &len);
		struct urs_st_dec d;
		urs_st_dec_init(&d, NULL);
		struct all *o;
		assert_int_equal(tst_load_all(&d, buf, len, NULL, &o), 0);
		struct node *out[M];
		uint32_t n = 0;
		for (struct node *p = o->head; p; p = p->next)
			out[n++] = p;
		assert_int_equal(n, M);
		for (uint32_t i = 0; i < M; i++) {
			assert_int_equal(out[i]->id, i);
			if (!ns[i].iref) {
				assert_null(out[i]->iref);
				continue;
			}
			size_t off = (size_t) (ns[i].iref - ns[0].slots);
			uint32_t t = (uint32_t) (off * sizeof(uint32_t) / sizeof(struct node));
			uint32_t k = (uint32_t) (ns[i].iref - ns[t].slots);
			assert_ptr_equal(out[i]->iref, &out[t]->slots[k]);
		}
		for (uint32_t i = 0; i < M; i++) {
			if (!vec[i])
				assert_null(o->nodev[i]);
			else
				assert_ptr_equal(o->nodev[i], out[vec[i]->id]);
		}
		assert_ptr_equal(o->into, &out[M / 2]->slots[1]);
		urs_st_dec_free(&d);
	}
	urs_st_enc_free(&e);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--corpus"))
		return write_corpus(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),      cmocka_unit_test(test_sink),
		cmocka_unit_test(test_zero_rule),      cmocka_unit_test(test_evolution),
		cmocka_unit_test(test_errors),	       cmocka_unit_test(test_bad_refs),
		cmocka_unit_test(test_many_refs),      cmocka_unit_test(test_stats),
		cmocka_unit_test(test_identity_table), cmocka_unit_test(test_u32_groups),
		cmocka_unit_test(test_ref_table),      cmocka_unit_test(test_sorted_refs),
		cmocka_unit_test(test_arena_allocs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
