/*
 * tests/runtime/test_mem.c — settling (runtime/mem.h): the stack pages a
 * deep call touched and the heap's freed pages are resident before and
 * gone after urs_mem_settle(), as /proc/self/smaps counts them (the heap's
 * only with glibc's allocator: not under ASan); the caller's own frame
 * survives; a settler settles once per burst, its delay after the burst's
 * last call, and not at all once off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/mem.h"

/* Rss in kB of the mapping named @name ("[stack]", "[heap]") */
static long rss_kb(const char *name)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	assert_non_null(f);
	char line[512];
	bool in = false;
	long kb = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) /* a mapping's first line */
			in = strstr(line, name) != NULL;
		if (in && !strncmp(line, "Rss:", 4)) {
			kb = strtol(line + 4, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb;
}

/* touch @kb of stack below this frame, then return */
static __attribute__((noinline)) int deep(unsigned kb)
{
	volatile char buf[1024];
	memset((char *) buf, (int) kb, sizeof(buf));
	return kb ? deep(kb - 1) + buf[kb % sizeof(buf)] : 0;
}

static void test_stack(void **state)
{
	(void) state;
	volatile char mine[64];
	memset((char *) mine, 7, sizeof(mine));
	deep(200);
	long before = rss_kb("[stack]");
	assert_true(before >= 200);
	assert_true(urs_mem_settle() > 0);
	long after = rss_kb("[stack]");
	assert_true(after >= 0);
	assert_true(before - after >= 150);
	for (size_t i = 0; i < sizeof(mine); i++) /* the caller's frame is kept */
		assert_int_equal(mine[i], 7);
}

static __attribute__((unused)) void test_heap(void **state)
{
	(void) state;
	enum { N = 2000 };
	void **p = malloc(N * sizeof(*p));
	assert_non_null(p);
	for (int i = 0; i < N; i++) {
		p[i] = malloc(256 + (size_t) (i % 7) * 64);
		assert_non_null(p[i]);
		memset(p[i], 1, 256);
	}
	/* every 50th kept: the freed ones make holes of ~20 KiB that neither
	 * reach the heap's top nor are trimmed by free() itself */
	for (int i = 0; i < N; i++)
		if (i % 50 != 49)
			free(p[i]);
	long before = rss_kb("[heap]");
	urs_mem_settle();
	long after = rss_kb("[heap]");
	assert_true(before > 0 && after >= 0);
	assert_true(before - after >= 400); /* of ~880 KiB freed */
	for (int i = 49; i < N; i += 50)
		free(p[i]);
	free(p);
}

static struct urs_mem_settler *again;
static uint64_t again_ns;
static void again_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) t;
	if (res == 0) {			 /* a call in the middle of the burst */
		again_ns = urs_now_ns(); /* before: the settle's own stamp is later */
		urs_mem_settle_soon(loop, again);
	}
}

static void test_settler(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_mem_settler s = {.delay_ns = 40 * 1000000ull};
	struct urs_timer mid = {0};
	again = &s;
	again_ns = 0;
	urs_mem_settle_soon(&loop, &s);
	assert_true(urs_timer_busy(&s.t));
	assert_int_equal(urs_timer_start(&loop, &mid, s.delay_ns / 2, 0, again_cb), 0);
	while (!s.settled)
		assert_int_equal(urs_loop_run_once(&loop, true), 0);
	/* once, and not before the delay had passed since the last call */
	assert_true(again_ns != 0);
	assert_true(urs_now_ns() - again_ns >= s.delay_ns);
	assert_false(urs_timer_busy(&s.t));
	assert_int_equal(s.settled, 1);
	urs_mem_settle_soon(&loop, &s); /* a new burst */
	urs_mem_settle_off(&loop, &s);
	while (urs_timer_busy(&s.t)) /* its final -ECANCELED */
		assert_int_equal(urs_loop_run_once(&loop, true), 0);
	assert_int_equal(s.settled, 1);
	urs_mem_settle_soon(&loop, &s); /* off: nothing armed */
	assert_false(urs_timer_busy(&s.t));
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stack),
#ifndef __SANITIZE_ADDRESS__ /* ASan's allocator is not glibc's [heap]: nothing to trim */
		cmocka_unit_test(test_heap),
#endif
		cmocka_unit_test(test_settler),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
