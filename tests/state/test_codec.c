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
#include "tst4_types.h"

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
static uint32_t BAGXS[3] = {5, 6, 7};

/* a 13-byte flow key (proto, two IPv4 addresses, two ports) */
static void flow_key(uint8_t k[13], uint32_t i)
{
	memset(k, 0, 13);
	k[0] = 6;
	memcpy(k + 1, &i, 4);
	k[5] = 10;
	k[8] = (uint8_t) i;
	k[9] = (uint8_t) (i >> 8);
	k[11] = 0x1f;
	k[12] = (uint8_t) (i * 7);
}

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
	for (uint32_t i = 0; i < 40; i++) {
		uint8_t k[13];
		flow_key(k, i * 1000003u);
		urs_bmap_put(&a->flows, 13, k, (uint64_t) i << 33);
	}
	urs_smap_put(&a->byname, "zero", (uint64_t) (uintptr_t) &N[0]);
	urs_smap_put(&a->byname, "three", (uint64_t) (uintptr_t) &N[3]);
	urs_smap_put(&a->byname, "", (uint64_t) (uintptr_t) &N[4]); /* empty key */
	urs_smap_put(&a->byname, "null", 0);
	a->into_vec = &SNUMS[3];       /* a vec element */
	a->into_nested = &a->ins[1].b; /* a field of an embedded array element */
	a->into_inv = &INV[2];	       /* a vec-of-struct element */
	a->into_inv_b = &INV[1].b;     /* a field inside one */
	a->bg.tag = 1;
	a->bg.xs = BAGXS;
	a->bg.xs_len = 3;
	a->into_bag = &BAGXS[2]; /* a vec inside an embedded struct */
	N[3].iref = &NUMS[4];	 /* from a later object into the root's vec */
}

static void free_maps(struct all *a)
{
	urs_map_free(&a->byid);
	urs_map_free(&a->counts);
	urs_bmap_free(&a->flows);
	urs_smap_free(&a->byname);
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
	/* maps with byte and string keys */
	assert_int_equal(o->flows.len, 40);
	assert_int_equal(o->flows.ksize, 13);
	for (uint32_t i = 0; i < 40; i++) {
		uint8_t k[13];
		flow_key(k, i * 1000003u);
		union urs_map_val *v = urs_bmap_get(&o->flows, k);
		assert_non_null(v);
		assert_true(v->u == (uint64_t) i << 33);
	}
	uint8_t nk[13] = {0};
	assert_null(urs_bmap_get(&o->flows, nk));
	assert_int_equal(o->byname.len, 4);
	assert_ptr_equal(urs_smap_get(&o->byname, "zero")->val.p, m[0]);
	assert_ptr_equal(urs_smap_get(&o->byname, "three")->val.p, m[3]);
	assert_ptr_equal(urs_smap_get(&o->byname, "")->val.p, m[4]);
	assert_null(urs_smap_get(&o->byname, "null")->val.p);
	assert_null(urs_smap_get(&o->byname, "thre"));
	/* interior references through vecs and embedded structs */
	assert_ptr_equal(o->into_vec, &o->snums[3]);
	assert_ptr_equal(o->into_nested, &o->ins[1].b);
	assert_ptr_equal(o->into_inv, &o->inv[2]);
	assert_ptr_equal(o->into_inv_b, &o->inv[1].b);
	assert_int_equal(o->bg.tag, 1);
	assert_int_equal(o->bg.xs_len, 3);
	assert_memory_equal(o->bg.xs, BAGXS, sizeof(BAGXS));
	assert_ptr_equal(o->into_bag, &o->bg.xs[2]);
	assert_ptr_equal(m[3]->iref, &o->nums[4]);
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
	free_maps(&a);
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
	free_maps(&a);
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
	 * object body is the bitmap + in + ins[2] + bg, past the type table
	 * (~500 B) */
	assert_true(len < 545);

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
		struct all keep = dst; /* the initialized maps, freed below */
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
		assert_int_equal(dst.flows.len, 0);
		assert_null(dst.flows.ents);
		assert_int_equal(dst.byname.len, 0);
		assert_null(dst.byname.ents);
		assert_null(dst.into_vec);
		assert_null(dst.into_nested);
		assert_null(dst.into_inv);
		assert_null(dst.into_inv_b);
		assert_null(dst.into_bag);
		assert_null(dst.bg.xs);
		assert_int_equal(dst.bg.tag, 0);
		assert_int_equal(dst.fd, 0x55);
		assert_int_equal(dst.scratch, init ? 1234 : 0); /* nosave: untouched */
		free_maps(&keep);
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
	/* a path through a vec element into a moved field */
	assert_ptr_equal(o->vref, &o->leaves[1].y);
	/* maps: kept (6-byte keys), retyped key (not in the image: untouched) */
	assert_int_equal(o->macs.len, 2);
	static const uint8_t mac1[6] = {2, 0, 0, 0, 0, 1},
			     mac2[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	assert_true(urs_bmap_get(&o->macs, mac1)->u == 11);
	assert_true(urs_bmap_get(&o->macs, mac2)->u == 22);
	if (init) {
		assert_int_equal(o->addrs.len, 1);
		assert_true(urs_smap_get(&o->addrs, "kept")->val.u == 5);
	} else {
		assert_int_equal(o->addrs.len, 0);
	}
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
			   .leaves_len = 2,
			   .vref = &lv[1].y};
	static const uint8_t mac1[6] = {2, 0, 0, 0, 0, 1},
			     mac2[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t ip[4] = {10, 0, 0, 1};
	assert_int_equal(urs_bmap_put(&r.macs, 6, mac1, 11), 0);
	assert_int_equal(urs_bmap_put(&r.macs, 6, mac2, 22), 0);
	assert_int_equal(urs_bmap_put(&r.macs, 4, ip, 1), -EINVAL); /* other key size */
	assert_int_equal(urs_smap_put(&r.gone_names, "eth0", 3), 0);
	assert_int_equal(urs_bmap_put(&r.addrs, 4, ip, 7), 0);
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
	assert_int_equal(urs_smap_put(&dst.addrs, "kept", 5), 0);
	struct urs_smap init_addrs = dst.addrs;
	rc = tst3_load_rec(&d, buf, len, &dst, NULL);
	if (rc)
		fail_msg("%s", d.msg);
	evolve_check(&dst, true);
	urs_smap_free(&init_addrs);

	/* and back: v2 image into v1 */
	struct v2_leaf m = {.x = 3, .y = 4, .z = 5};
	struct v2_rec r2 = {
		.lf = &m, .added = 8, .retyped = "s", .a = 6, .s = "back", .kept_ref = &m.x};
	assert_int_equal(urs_smap_put(&r2.addrs, "10.0.0.1", 1), 0);
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
	assert_int_equal(b->macs.len, 0);
	assert_int_equal(b->addrs.len, 0); /* string keys in the image: skipped */
	urs_smap_free(&r2.addrs);
	urs_bmap_free(&r.macs);
	urs_smap_free(&r.gone_names);
	urs_bmap_free(&r.addrs);
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
	free_maps(&a);
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

/* replace the first @n bytes equal to @from in @buf with @to */
static bool patch(uint8_t *buf, size_t len, const void *from, const void *to, size_t n)
{
	for (size_t i = 0; i + n <= len; i++)
		if (!memcmp(buf + i, from, n)) {
			memcpy(buf + i, to, n);
			return true;
		}
	return false;
}

/* Map keys: a table whose key size differs from the schema's is refused on
 * save; duplicate keys (bytes and string) and a NUL inside a string key are
 * refused on load, with a message naming the field. */
static void test_map_keys(void **state)
{
	(void) state;
	struct all a;
	memset(&a, 0, sizeof(a));
	uint8_t k4[4] = {1, 2, 3, 4};
	assert_int_equal(urs_bmap_put(&a.flows, 4, k4, 1), 0);
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&e, &a), -EINVAL);
	assert_non_null(strstr(e.err_field, "flows"));
	urs_bmap_free(&a.flows);

	uint8_t f1[13], f2[13];
	memset(f1, 0xa5, 13);
	memset(f2, 0xa5, 13);
	f2[12] = 0x5a;
	assert_int_equal(urs_bmap_put(&a.flows, 13, f1, 1), 0);
	assert_int_equal(urs_bmap_put(&a.flows, 13, f2, 2), 0);
	assert_int_equal(urs_bmap_put(&a.flows, 13, f2, 3), 0); /* replaces */
	assert_int_equal(a.flows.len, 2);
	assert_int_equal(urs_smap_put(&a.byname, "eth0", 0), 0);
	assert_int_equal(urs_smap_put(&a.byname, "eth1", 0), 0);
	assert_int_equal(tst_save_all(&e, &a), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	uint8_t *mut = malloc(len);
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct all *o;
	assert_int_equal(tst_load_all(&d, buf, len, NULL, &o), 0);
	assert_true(urs_bmap_get(&o->flows, f2)->u == 3);
	assert_non_null(urs_smap_get(&o->byname, "eth1"));
	/* f2 → f1: a duplicate byte key */
	memcpy(mut, buf, len);
	assert_true(patch(mut, len, f2, f1, 13));
	assert_int_equal(tst_load_all(&d, mut, len, NULL, &o), -EBADMSG);
	assert_non_null(strstr(d.msg, "flows"));
	assert_non_null(strstr(d.msg, "duplicate"));
	/* eth1 → eth0: a duplicate string key; eth\0: a NUL inside */
	memcpy(mut, buf, len);
	assert_true(patch(mut, len, "eth1", "eth0", 4));
	assert_int_equal(tst_load_all(&d, mut, len, NULL, &o), -EBADMSG);
	assert_non_null(strstr(d.msg, "byname"));
	assert_non_null(strstr(d.msg, "duplicate"));
	memcpy(mut, buf, len);
	assert_true(patch(mut, len, "eth1", "eth\0", 4));
	assert_int_equal(tst_load_all(&d, mut, len, NULL, &o), -EBADMSG);
	assert_non_null(strstr(d.msg, "NUL"));
	free(mut);
	free_maps(&a);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

/* A version-2 stream (interior references as one (field, element) step
 * without a length) still loads: written here from a v3 one by rewriting
 * its version and reference table. */
static void test_v2_stream(void **state)
{
	(void) state;
	struct all a;
	fill(&a);
	free_maps(&a);
	struct all z;
	memset(&z, 0, sizeof(z));
	N[3].iref = NULL; /* only one-step references: into node slots */
	z.head = &N[0];
	z.into = &N[4].slots[1];
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&e, &z), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	uint64_t tail = 0;
	for (int k = 0; k < 8; k++)
		tail |= (uint64_t) buf[len - 8 + (size_t) k] << (8 * k);
	uint8_t *v2 = malloc(len);
	memcpy(v2, buf, tail);
	assert_int_equal(v2[4], 3);
	v2[4] = 2;
	/* tail: nobjects, nrefs, entries; all values here are one byte */
	size_t i = tail, o = tail;
	v2[o++] = buf[i++];
	uint8_t nrefs = buf[i];
	v2[o++] = buf[i++];
	assert_int_equal(nrefs, 3);
	for (uint8_t r = 0; r < nrefs; r++) {
		uint8_t v = buf[i++];
		assert_true(v < 0x80 && (v & 1));
		v2[o++] = v;
		v2[o++] = buf[i++];	       /* stored type */
		assert_int_equal(buf[i++], 1); /* path length: dropped */
		v2[o++] = buf[i++];
		v2[o++] = buf[i++];
	}
	assert_int_equal(i, len - 8);
	for (int k = 0; k < 8; k++)
		v2[o++] = (uint8_t) (tail >> (8 * k));
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct all *out;
	int rc = tst_load_all(&d, v2, o, NULL, &out);
	if (rc)
		fail_msg("%s", d.msg);
	struct node *m[5];
	m[0] = out->head;
	for (int k = 1; k < 5; k++)
		m[k] = m[k - 1]->next;
	assert_ptr_equal(m[1]->iref, &m[3]->slots[2]);
	assert_ptr_equal(m[2]->iref, &m[2]->slots[0]);
	assert_ptr_equal(out->into, &m[4]->slots[1]);
	/* and a version beyond the loader's is refused */
	v2[4] = URS_ST_VERSION + 1;
	assert_int_equal(tst_load_all(&d, v2, o, NULL, &out), -EBADMSG);
	assert_non_null(strstr(d.msg, "version"));
	free(v2);
	urs_st_dec_free(&d);
	urs_st_enc_free(&e);
}

/* Interior paths are at most URS_ST_MAX_PATH steps: 8 steps through
 * embedded structs round-trip; 11 are refused on save, and a stream whose
 * entry claims 9 is refused on load. */
static void test_path_limit(void **state)
{
	(void) state;
	static struct droot r;
	memset(&r, 0, sizeof(r));
	r.mid.a.a.a.a.a.a.x = 6;
	r.top.a.a.a.a.a.a.a.a.a.x = 9;
	r.shallow = &r.mid.a.a.a.a.a.a.x;
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 0, NULL, NULL), 0);
	assert_int_equal(tst4_save_droot(&e, &r), 0);
	size_t len;
	const uint8_t *buf = urs_st_enc_data(&e, &len);
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct droot *o;
	int rc = tst4_load_droot(&d, buf, len, NULL, &o);
	if (rc)
		fail_msg("%s", d.msg);
	assert_ptr_equal(o->shallow, &o->mid.a.a.a.a.a.a.x);
	assert_int_equal(*o->shallow, 6);
	assert_int_equal(o->top.a.a.a.a.a.a.a.a.a.x, 9);
	/* the entry: 1 object, 1 reference, (1 << 1) | 1, stored type, 8 steps */
	uint64_t tail = 0;
	for (int k = 0; k < 8; k++)
		tail |= (uint64_t) buf[len - 8 + (size_t) k] << (8 * k);
	assert_int_equal(buf[tail + 2], 3);
	assert_int_equal(buf[tail + 4], 8);
	uint8_t *mut = malloc(len);
	memcpy(mut, buf, len);
	mut[tail + 4] = 9;
	assert_int_equal(tst4_load_droot(&d, mut, len, NULL, &o), -EBADMSG);
	assert_non_null(strstr(d.msg, "deeper than the limit"));
	free(mut);
	r.deep = &r.top.a.a.a.a.a.a.a.a.a.x;
	assert_int_equal(tst4_save_droot(&e, &r), -EINVAL);
	assert_non_null(strstr(e.err_field, "deeper than the limit"));
	urs_st_dec_free(&d);
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
	free_maps(&a);
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
	/* tail = nobjects (7), nrefs (10: three irefs, into, whole, into_vec,
	 * into_nested, into_inv, into_inv_b, into_bag), entries */
	assert_int_equal(buf[tail], 7);
	assert_int_equal(buf[tail + 1], 10);
	uint8_t *mut = malloc(len);
	memcpy(mut, buf, len);
	mut[tail + 1] = 9;
	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct all *o;
	assert_int_equal(tst_load_all(&d, mut, len, NULL, &o), -EBADMSG);
	assert_non_null(strstr(d.msg, "reference"));
	mut[tail + 1] = 5;
	assert_int_equal(tst_load_all(&d, mut, len, NULL, &o), -EBADMSG);
	assert_non_null(strstr(d.msg, "reference"));
	free(mut);
	free_maps(&a);
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
	N[3].iref = NULL; /* into a's vec: not saved here */
	if (tst_save_all(&e, &z))
		return 1;
	buf = urs_st_enc_data(&e, &len);
	snprintf(path, sizeof(path), "%s/cycle", dir);
	f = fopen(path, "wb");
	if (!f)
		return 1;
	fwrite(buf, 1, len, f);
	fclose(f);
	/* maps with byte and string keys, references through vecs and
	 * embedded structs, nothing else */
	struct all m;
	memset(&m, 0, sizeof(m));
	static uint32_t xs[4] = {1, 2, 3, 4};
	static struct inner iv[2] = {{1, 2}, {3, 4}};
	m.bg.xs = xs;
	m.bg.xs_len = 4;
	m.inv = iv;
	m.inv_len = 2;
	m.into_bag = &xs[3];
	m.into_inv = &iv[1];
	m.into_inv_b = &iv[0].b;
	m.into_nested = &m.ins[0].b;
	uint8_t k[13] = {6, 10, 0, 0, 1};
	int r = urs_bmap_put(&m.flows, 13, k, 7);
	k[12] = 1;
	r |= urs_bmap_put(&m.flows, 13, k, 8);
	r |= urs_smap_put(&m.byname, "a", 0);
	r |= urs_smap_put(&m.byname, "bc", (uint64_t) (uintptr_t) &N[1]);
	N[1].next = NULL;
	N[1].iref = &xs[0];
	r |= tst_save_all(&e, &m);
	urs_bmap_free(&m.flows);
	urs_smap_free(&m.byname);
	if (r)
		return 1;
	buf = urs_st_enc_data(&e, &len);
	snprintf(path, sizeof(path), "%s/maps-paths", dir);
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
		cmocka_unit_test(test_arena_allocs),   cmocka_unit_test(test_map_keys),
		cmocka_unit_test(test_v2_stream),      cmocka_unit_test(test_path_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
