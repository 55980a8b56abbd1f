/*
 * tests/actors/test_profile.c — `ursa --profile` (actors/metrics.c's profiler
 * on runtime/actor.c's hooks): nothing exists until urs_sup_profile_init();
 * afterwards every actor handler call and every op callback that goes through
 * urs_op_dispatch() is counted, timed and its heap growth seen, by name, in
 * the supervisor's exposition (heap growth: glibc's malloc only, so not
 * checked under ASan). The profiler is process-wide and one-shot, so
 * this is one ordered test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actors/metrics.h"
#include "runtime/actor.h"
#include "runtime/loop.h"

static void *kept[64];
static int nkept;

static void alloc_fn(struct urs_actor *self, struct urs_msg *m)
{
	(void) self;
	(void) m;
	kept[nkept++] = malloc(4096); /* kept: the heap grows on every call */
}

static void noop_fn(struct urs_actor *self, struct urs_msg *m)
{
	(void) self;
	(void) m;
}

static void slow_fn(struct urs_actor *self, struct urs_msg *m)
{
	(void) self;
	(void) m;
	struct timespec ts = {0, 2000000}; /* 2 ms */
	nanosleep(&ts, NULL);
}

static int op_calls;
static void op_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) op;
	(void) res;
	(void) flags;
	op_calls++;
}

static char out[64 << 10];

static void render(struct urs_loop *loop)
{
	int n = urs_sup_metrics_render("t", loop, NULL, NULL, out, sizeof(out));
	assert_true(n > 0);
}

/* The value of the sample starting with @prefix (name{labels}), or -1. */
static long long value(const char *prefix)
{
	const char *p = out;
	size_t n = strlen(prefix);
	while ((p = strstr(p, prefix))) {
		if ((p == out || p[-1] == '\n') && p[n] == ' ')
			return atoll(p + n + 1);
		p += n;
	}
	return -1;
}

static void send_n(struct urs_loop *loop, struct urs_actor *a, int n)
{
	for (int i = 0; i < n; i++) {
		struct urs_msg *m = urs_msg_alloc(loop, 1);
		assert_non_null(m);
		assert_int_equal(urs_send(a, m), 0);
	}
	while (loop->ready_head)
		assert_true(urs_loop_run_once(loop, false) >= 0);
}

static void test_profile(void **state)
{
	(void) state;
	struct urs_loop loop;
	struct urs_loop_opts lo = {.entries = 8};
	assert_int_equal(urs_loop_init(&loop, &lo), 0);
	assert_int_equal(urs_sup_metrics_init(), 0);
	struct urs_actor a, b, c;
	urs_actor_init(&a, &loop, alloc_fn);
	urs_actor_init(&b, &loop, noop_fn);
	urs_actor_init(&c, &loop, slow_fn);

	/* off: handlers run, nothing is measured or exposed */
	send_n(&loop, &b, 3);
	render(&loop);
	assert_null(strstr(out, "ursa_profile_"));
	assert_null(strstr(out, "ursa_seccomp_")); /* no listener taken */
	assert_null(urs_prof_actor);
	assert_null(urs_prof_op);

	/* on */
	const struct urs_prof_name names[] = {
		{(const void *) alloc_fn, "alloc"},
		{(const void *) noop_fn, "noop"},
		{(const void *) slow_fn, "slow"},
		{(const void *) op_cb, "op"},
	};
	assert_int_equal(urs_sup_profile_init(names, 4), 0);
	assert_int_equal(urs_sup_profile_init(names, 4), -EALREADY);
	send_n(&loop, &a, 10);
	send_n(&loop, &b, 20);
	send_n(&loop, &c, 2);
	struct urs_op op = {.cb = op_cb};
	for (int i = 0; i < 5; i++)
		urs_op_dispatch(&loop, &op, 0, 0);
	assert_int_equal(op_calls, 5);
	assert_int_equal(nkept, 10);

	render(&loop);
	assert_int_equal(value("ursa_profile_handler_calls_total{sandbox=\"t\",handler=\"alloc\"}"),
			 10);
	assert_int_equal(value("ursa_profile_handler_calls_total{sandbox=\"t\",handler=\"noop\"}"),
			 20);
	assert_int_equal(value("ursa_profile_handler_calls_total{sandbox=\"t\",handler=\"op\"}"),
			 5);
	assert_int_equal(value("ursa_profile_handler_calls_total{sandbox=\"t\",handler=\"other\"}"),
			 0);
#ifndef __SANITIZE_ADDRESS__ /* ASan's allocator is invisible to mallinfo2() */
	assert_int_equal(
		value("ursa_profile_handler_heap_growths_total{sandbox=\"t\",handler=\"alloc\"}"),
		10);
	assert_true(value("ursa_profile_handler_heap_grown_bytes_total{sandbox=\"t\",handler="
			  "\"alloc\"}") >= 10 * 4096);
	assert_int_equal(
		value("ursa_profile_handler_heap_growths_total{sandbox=\"t\",handler=\"noop\"}"),
		0);
#endif
	long long slow = value("ursa_profile_handler_nanoseconds_total{sandbox=\"t\",handler="
			       "\"slow\"}");
	long long slow_max = value("ursa_profile_handler_max_nanoseconds{sandbox=\"t\",handler="
				   "\"slow\"}");
	assert_true(slow >= 4000000);
	assert_true(slow_max >= 2000000 && slow_max <= slow);
	assert_non_null(strstr(out, "# TYPE ursa_profile_handler_calls_total counter"));
	assert_non_null(strstr(out, "# TYPE ursa_profile_handler_max_nanoseconds gauge"));

	for (int i = 0; i < nkept; i++)
		free(kept[i]);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
