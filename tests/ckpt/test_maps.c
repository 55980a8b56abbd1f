/*
 * tests/ckpt/test_maps.c — a process's mappings for the dumper
 * (ckpt/maps.c) on a real child: its lines are /proc/PID/maps' and a
 * MAP_NORESERVE mapping carries the flag (from smaps); read again with an
 * earlier reading while nothing changed, the earlier flags are taken
 * (maps alone, no smaps); once the child maps something new, smaps is
 * read again and the new line is there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/maps.h"

static pid_t child;
static int to_child, from_child;
static uintptr_t nores, plain;

/* the child: maps a new page for each byte it reads, answers each */
static void child_main(int in, int out)
{
	char b;
	while (read(in, &b, 1) == 1) {
		mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (write(out, &b, 1) != 1)
			break;
	}
	_exit(0);
}

static int setup(void **state)
{
	(void) state;
	/* one of each, far apart: distinct lines in the child's maps */
	void *a = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	void *b = mmap(NULL, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED || b == MAP_FAILED)
		return -1;
	nores = (uintptr_t) a, plain = (uintptr_t) b;
	int p1[2], p2[2];
	if (pipe(p1) < 0 || pipe(p2) < 0)
		return -1;
	child = fork();
	if (child == 0) {
		close(p1[1]), close(p2[0]);
		child_main(p1[0], p2[1]);
	}
	close(p1[0]), close(p2[1]);
	to_child = p1[1], from_child = p2[0];
	return child > 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void) state;
	close(to_child);
	waitpid(child, NULL, 0);
	return 0;
}

/* the flags of the line that starts at @start, or -1 */
static int flags_at(const struct ckpt_maps *m, uintptr_t start)
{
	char want[32];
	int n = snprintf(want, sizeof(want), "%lx-", (unsigned long) start);
	const char *line = m->text;
	for (uint32_t i = 0; i < m->n; i++) {
		if (!strncmp(line, want, (size_t) n))
			return m->flags[i];
		line = strchr(line, '\n') + 1;
	}
	return -1;
}

static void mappings(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	struct ckpt_maps m0, m1, m2;
	assert_int_equal(ckpt_maps_read(child, NULL, &m0, &err), 0);
	/* the lines are maps' own: as many as maps has, each ending in '\n' */
	char path[64], buf[65536];
	snprintf(path, sizeof(path), "/proc/%d/maps", child);
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	assert_int_equal(m0.len, n);
	assert_memory_equal(m0.text, buf, n);
	uint32_t lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	assert_int_equal(m0.n, lines);
	assert_int_equal(flags_at(&m0, nores), CKPT_VMF_NORESERVE);
	assert_int_equal(flags_at(&m0, plain), 0);

	/* nothing changed: the earlier flags stand (marked, to see them come) */
	m0.flags[0] |= 0x80;
	assert_int_equal(ckpt_maps_read(child, &m0, &m1, &err), 0);
	assert_int_equal(m1.n, m0.n);
	assert_int_equal(m1.flags[0], m0.flags[0]);
	assert_int_equal(flags_at(&m1, nores), CKPT_VMF_NORESERVE);
	ckpt_maps_free(&m1);

	/* a new mapping: smaps again, the mark gone, one line more */
	char b = 'x';
	assert_int_equal(write(to_child, &b, 1), 1);
	assert_int_equal(read(from_child, &b, 1), 1);
	assert_int_equal(ckpt_maps_read(child, &m0, &m2, &err), 0);
	assert_true(m2.n == m0.n + 1 || m2.n == m0.n); /* (or merged with a neighbour) */
	assert_false(m2.len == m0.len && !memcmp(m2.text, m0.text, m0.len));
	assert_int_equal(m2.flags[0] & 0x80, 0);
	assert_int_equal(flags_at(&m2, nores), CKPT_VMF_NORESERVE);
	ckpt_maps_free(&m2);
	ckpt_maps_free(&m0);
	assert_null(m0.text);

	/* a process that is gone: the error names it */
	assert_int_equal(ckpt_maps_read(999999999, NULL, &m0, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "pid 999999999"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(mappings)};
	return cmocka_run_group_tests(tests, setup, teardown);
}
