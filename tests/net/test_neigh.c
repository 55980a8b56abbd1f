/*
 * tests/net/test_neigh.c — the neighbor cache: no memory before the first
 * insert, growth on demand, the 512-entry bound under 4x512 distinct
 * addresses with LRU eviction order, lookups refreshing recency, updates in
 * place, IPv4 and IPv6 keys kept apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "net/neigh.h"

static void addr_of(uint32_t i, uint8_t a[4])
{
	uint32_t be = htonl(0x0a000000u | i);
	memcpy(a, &be, 4);
}

static void test_empty_and_growth(void **state)
{
	(void) state;
	struct urs_neigh t;
	urs_neigh_init(&t, URS_NEIGH_MAX);
	assert_int_equal(urs_neigh_mem(&t), 0);
	assert_null(t.ents);
	assert_null(t.buckets);
	uint8_t a[4], mac[6] = {2, 0, 0, 0, 0, 1};
	addr_of(1, a);
	assert_null(urs_neigh_lookup(&t, AF_INET, a));
	assert_int_equal(urs_neigh_mem(&t), 0);
	assert_int_equal(urs_neigh_update(&t, AF_INET, a, mac), 0);
	size_t m1 = urs_neigh_mem(&t);
	assert_true(m1 > 0 && m1 < 1024); /* small first step, not the bound */
	assert_memory_equal(urs_neigh_lookup(&t, AF_INET, a), mac, 6);
	/* update in place */
	mac[5] = 9;
	assert_int_equal(urs_neigh_update(&t, AF_INET, a, mac), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(urs_neigh_lookup(&t, AF_INET, a)[5], 9);
	/* the same bytes as IPv6 are a different key */
	uint8_t a6[16] = {0};
	memcpy(a6, a, 4);
	assert_null(urs_neigh_lookup(&t, AF_INET6, a6));
	urs_neigh_fini(&t);
	assert_int_equal(urs_neigh_mem(&t), 0);
}

static void test_fill_4x512_lru(void **state)
{
	(void) state;
	struct urs_neigh t;
	urs_neigh_init(&t, URS_NEIGH_MAX);
	uint8_t a[4], mac[6] = {2, 0, 0, 0, 0, 0};
	size_t peak = 0;
	for (uint32_t i = 0; i < 4 * 512; i++) {
		addr_of(i, a);
		memcpy(mac + 2, &i, 4);
		assert_int_equal(urs_neigh_update(&t, AF_INET, a, mac), 0);
		assert_true(t.n <= 512);
		if (urs_neigh_mem(&t) > peak)
			peak = urs_neigh_mem(&t);
		/* keep entry 0 hot: it must survive every eviction */
		uint8_t z[4];
		addr_of(0, z);
		assert_non_null(urs_neigh_lookup(&t, AF_INET, z));
	}
	assert_int_equal(t.n, 512);
	assert_int_equal(urs_neigh_mem(&t), peak); /* bounded: no growth after the cap */
	assert_true(peak <= 512 * 64);
	/* the most recent is entry 0 (just looked up), then 2047, 2046, ... */
	uint8_t z[4];
	addr_of(0, z);
	assert_memory_equal(&urs_neigh_rank(&t, 0)->addr, z, 4);
	for (uint32_t r = 1; r < 512; r++) {
		addr_of(2048 - r, a);
		assert_memory_equal(&urs_neigh_rank(&t, r)->addr, a, 4);
	}
	assert_null(urs_neigh_rank(&t, 512));
	/* the 511 newest others are present, everything older is gone */
	for (uint32_t i = 1; i < 2048; i++) {
		addr_of(i, a);
		const uint8_t *m = urs_neigh_lookup(&t, AF_INET, a);
		if (i >= 2048 - 511) {
			assert_non_null(m);
			uint32_t got;
			memcpy(&got, m + 2, 4);
			assert_int_equal(got, i);
		} else {
			assert_null(m);
		}
	}
	urs_neigh_fini(&t);
}

static void test_lru_touch(void **state)
{
	(void) state;
	struct urs_neigh t;
	urs_neigh_init(&t, 4);
	uint8_t a[4], mac[6] = {2};
	for (uint32_t i = 0; i < 4; i++) {
		addr_of(i, a);
		urs_neigh_update(&t, AF_INET, a, mac);
	}
	addr_of(0, a);
	assert_non_null(urs_neigh_lookup(&t, AF_INET, a)); /* 0 becomes most recent */
	addr_of(9, a);
	urs_neigh_update(&t, AF_INET, a, mac); /* evicts 1, the least recent */
	addr_of(1, a);
	assert_null(urs_neigh_lookup(&t, AF_INET, a));
	uint32_t keep[] = {0, 2, 3, 9};
	for (size_t k = 0; k < 4; k++) {
		addr_of(keep[k], a);
		assert_non_null(urs_neigh_lookup(&t, AF_INET, a));
	}
	urs_neigh_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_and_growth),
		cmocka_unit_test(test_fill_4x512_lru),
		cmocka_unit_test(test_lru_touch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
