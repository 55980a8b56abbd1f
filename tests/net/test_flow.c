/*
 * tests/net/test_flow.c — the flow table: nothing allocated until the
 * first record, insert/find/remove by the full key (every field matters),
 * duplicate keys refused, growth past many buckets, the max_flows bound,
 * and trimming back to zero bytes once empty.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "net/flow.h"

struct rec {
	struct urs_flow_node node;
	uint32_t id;
};

static void key_of(struct urs_flow_key *k, uint32_t i)
{
	memset(k, 0, sizeof(*k));
	k->proto = 6;
	k->family = 2;
	k->lport = (uint16_t) (1000 + i % 50000);
	k->rport = 80;
	uint32_t a = 0x01020300 + i / 50000;
	memcpy(&k->raddr, &a, 4);
}

static void test_basic(void **state)
{
	(void) state;
	struct urs_flowtab t;
	urs_flowtab_init(&t, sizeof(struct rec), 100000);
	assert_int_equal(urs_flowtab_mem(&t), 0);
	struct urs_flow_key k;
	key_of(&k, 1);
	assert_null(urs_flowtab_find(&t, &k));
	struct rec *r = urs_flowtab_alloc(&t);
	assert_non_null(r);
	assert_true(urs_flowtab_mem(&t) > 0);
	r->node.key = k;
	r->id = 1;
	assert_int_equal(urs_flowtab_insert(&t, &r->node), 0);
	assert_ptr_equal(urs_flowtab_find(&t, &k), &r->node);
	/* each key field matters */
	struct urs_flow_key k2 = k;
	k2.rport = 81;
	assert_null(urs_flowtab_find(&t, &k2));
	k2 = k;
	k2.proto = 17;
	assert_null(urs_flowtab_find(&t, &k2));
	k2 = k;
	k2.kind = 1;
	assert_null(urs_flowtab_find(&t, &k2));
	k2 = k;
	((uint8_t *) &k2.raddr)[15] = 1;
	assert_null(urs_flowtab_find(&t, &k2));
	/* duplicates refused */
	struct rec *d = urs_flowtab_alloc(&t);
	d->node.key = k;
	assert_int_equal(urs_flowtab_insert(&t, &d->node), -EEXIST);
	urs_flowtab_free(&t, d);
	urs_flowtab_remove(&t, &r->node);
	urs_flowtab_remove(&t, &r->node); /* twice is harmless */
	assert_null(urs_flowtab_find(&t, &k));
	urs_flowtab_free(&t, r);
	urs_flowtab_trim(&t);
	assert_int_equal(urs_flowtab_mem(&t), 0);
	urs_flowtab_fini(&t);
}

static void test_many_and_bound(void **state)
{
	(void) state;
	enum { N = 5000 };
	struct urs_flowtab t;
	urs_flowtab_init(&t, sizeof(struct rec), N);
	static struct rec *rs[N];
	for (uint32_t i = 0; i < N; i++) {
		rs[i] = urs_flowtab_alloc(&t);
		assert_non_null(rs[i]);
		key_of(&rs[i]->node.key, i);
		rs[i]->id = i;
		assert_int_equal(urs_flowtab_insert(&t, &rs[i]->node), 0);
	}
	assert_null(urs_flowtab_alloc(&t)); /* the bound */
	assert_true(t.nb >= N);		    /* the index grew */
	for (uint32_t i = 0; i < N; i++) {
		struct urs_flow_key k;
		key_of(&k, i);
		struct urs_flow_node *n = urs_flowtab_find(&t, &k);
		assert_non_null(n);
		assert_int_equal(((struct rec *) n)->id, i);
	}
	/* remove the even ones */
	for (uint32_t i = 0; i < N; i += 2) {
		urs_flowtab_remove(&t, &rs[i]->node);
		urs_flowtab_free(&t, rs[i]);
	}
	for (uint32_t i = 0; i < N; i++) {
		struct urs_flow_key k;
		key_of(&k, i);
		assert_true((urs_flowtab_find(&t, &k) != NULL) == (i & 1));
	}
	/* trim refuses while records are out */
	size_t m = urs_flowtab_mem(&t);
	urs_flowtab_trim(&t);
	assert_int_equal(urs_flowtab_mem(&t), m);
	for (uint32_t i = 1; i < N; i += 2) {
		urs_flowtab_remove(&t, &rs[i]->node);
		urs_flowtab_free(&t, rs[i]);
	}
	urs_flowtab_trim(&t);
	assert_int_equal(urs_flowtab_mem(&t), 0);
	/* usable again after trimming */
	struct rec *r = urs_flowtab_alloc(&t);
	assert_non_null(r);
	key_of(&r->node.key, 7);
	assert_int_equal(urs_flowtab_insert(&t, &r->node), 0);
	urs_flowtab_remove(&t, &r->node);
	urs_flowtab_free(&t, r);
	urs_flowtab_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_many_and_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
