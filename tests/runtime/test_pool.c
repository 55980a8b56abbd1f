/*
 * tests/runtime/test_pool.c — the fixed-size object pool: lazy growth, the cap,
 * reuse, and frees from another thread.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "runtime/pool.h"

static void test_lazy_and_cap(void **state)
{
	(void) state;
	struct urs_pool p;
	urs_pool_init(&p, 40, 100);
	assert_null(p.slabs); /* nothing allocated at init */
	assert_int_equal(p.obj_size, 48);
	void *objs[100];
	for (int i = 0; i < 100; i++) {
		objs[i] = urs_pool_get(&p);
		assert_non_null(objs[i]);
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(objs[i], objs[j]);
	}
	assert_null(urs_pool_get(&p)); /* cap reached */
	assert_int_equal(p.total, 100);
	urs_pool_put(&p, objs[7]);
	assert_ptr_equal(urs_pool_get(&p), objs[7]);
	urs_pool_fini(&p);
}

struct remote_args {
	struct urs_pool *p;
	void **objs;
	int n;
};

static void *remote_free(void *arg)
{
	struct remote_args *a = arg;
	for (int i = 0; i < a->n; i++)
		urs_pool_put_remote(a->p, a->objs[i]);
	return NULL;
}

static void test_remote_free(void **state)
{
	(void) state;
	struct urs_pool p;
	urs_pool_init(&p, 64, 1000);
	void *objs[1000];
	for (int i = 0; i < 1000; i++)
		objs[i] = urs_pool_get(&p);
	assert_null(urs_pool_get(&p));
	struct remote_args a1 = {&p, objs, 500}, a2 = {&p, objs + 500, 500};
	pthread_t t1, t2;
	pthread_create(&t1, NULL, remote_free, &a1);
	pthread_create(&t2, NULL, remote_free, &a2);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	/* every remotely freed object comes back exactly once, no growth */
	int seen = 0;
	void *got[1000];
	for (void *o; (o = urs_pool_get(&p));)
		got[seen++] = o;
	assert_int_equal(seen, 1000);
	assert_int_equal(p.total, 1000);
	for (int i = 0; i < 1000; i++) {
		int hits = 0;
		for (int j = 0; j < 1000; j++)
			hits += got[j] == objs[i];
		assert_int_equal(hits, 1);
	}
	urs_pool_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lazy_and_cap),
		cmocka_unit_test(test_remote_free),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
