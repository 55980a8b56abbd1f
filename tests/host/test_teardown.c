/*
 * tests/host/test_teardown.c — ROOT/.teardown (host/teardown.h): a record
 * put is taken whole by exactly one taker (the other gets -ENOENT), given
 * back, dropped; a wait returns at once when nothing is pending, is woken by
 * the record's removal (a child drops it once the wait sleeps), and times
 * out while it stays.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/teardown.h"

static char root[64];

static int setup(void **state)
{
	(void) state;
	snprintf(root, sizeof(root), "/tmp/ursa-td-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	(void) state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

static bool exists(const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/" URS_TEARDOWN_DIR "/%s", root, name);
	return access(p, F_OK) == 0;
}

static void test_take_once(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	char got[128];
	assert_int_equal(urs_teardown_take(root, "a", URS_TEARDOWN_ADOPT, got, sizeof(got)),
			 -ENOENT);
	assert_int_equal(urs_teardown_put(root, "a", "mode=hybrid;memory=1:/x", &err), 0);
	assert_true(exists("a"));
	assert_false(exists("a@new"));
	assert_int_equal(urs_teardown_take(root, "a", URS_TEARDOWN_ADOPT, got, sizeof(got)), 0);
	assert_string_equal(got, "mode=hybrid;memory=1:/x");
	/* the reaper, after: nothing for it */
	assert_int_equal(urs_teardown_take(root, "a", URS_TEARDOWN_REAPING, got, sizeof(got)),
			 -ENOENT);
	assert_true(exists("a@adopt"));
	urs_teardown_give_back(root, "a", URS_TEARDOWN_ADOPT);
	assert_true(exists("a"));
	assert_int_equal(urs_teardown_take(root, "a", URS_TEARDOWN_REAPING, got, sizeof(got)), 0);
	urs_teardown_drop(root, "a", URS_TEARDOWN_REAPING);
	assert_false(exists("a@reaping"));
	assert_false(exists("a"));
	assert_false(exists("")); /* the directory went with its last record */
	/* too long for the caller's buffer: refused, and left for another */
	assert_int_equal(urs_teardown_put(root, "b", "0123456789", &err), 0);
	assert_int_equal(urs_teardown_take(root, "b", URS_TEARDOWN_ADOPT, got, 8), -EFBIG);
	assert_true(exists("b"));
	urs_teardown_drop(root, "b", NULL);
}

static void test_wait(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	char got[128];
	assert_int_equal(urs_teardown_wait("/nonexistent-ursa-root", "a", 10, NULL), 0);
	assert_int_equal(urs_teardown_wait(root, "c", 10, NULL), 0);
	assert_int_equal(urs_teardown_put(root, "c", "x", &err), 0);
	assert_int_equal(urs_teardown_wait(root, "c", 50, NULL), -ETIMEDOUT);
	/* a reaper at work, then done: the wait wakes on its removal */
	assert_int_equal(urs_teardown_take(root, "c", URS_TEARDOWN_REAPING, got, sizeof(got)), 0);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* once the parent is asleep in its wait (its wchan says poll) */
		char c, path[64], w[64] = "";
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		snprintf(path, sizeof(path), "/proc/%d/wchan", (int) getppid());
		while (!strstr(w, "poll")) {
			FILE *f = fopen(path, "r");
			if (!f || !fgets(w, sizeof(w), f))
				w[0] = '\0';
			if (f)
				fclose(f);
		}
		urs_teardown_drop(root, "c", URS_TEARDOWN_REAPING);
		_exit(0);
	}
	close(p[0]);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(urs_teardown_wait(root, "c", 10000, NULL), 0);
	assert_false(exists("c@reaping"));
	close(p[1]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_once),
		cmocka_unit_test(test_wait),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
