/*
 * tests/host/test_teardown.c — ROOT/.teardown (host/teardown.h): a record
 * put is taken whole, under a lock: while its taker lives another process
 * waits and times out; a record whose taker is gone (its lock closed) is
 * taken again; given back, it is taken as it was; dropped, it is gone with
 * its directory; a taker waiting is woken by a give-back in another
 * process at once (not by its timeout); a record too long is refused and
 * left.
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
#include <time.h>
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

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void test_take_locked(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	char got[128];
	assert_int_equal(urs_teardown_take(root, "a", URS_TEARDOWN_ADOPT, got, sizeof(got), 0),
			 -ENOENT);
	assert_int_equal(urs_teardown_put(root, "a", "mode=hybrid;memory=1:/x", &err), 0);
	assert_true(exists("a"));
	assert_false(exists("a@new"));
	int fd = urs_teardown_take(root, "a", URS_TEARDOWN_ADOPT, got, sizeof(got), 0);
	assert_true(fd >= 0);
	assert_string_equal(got, "mode=hybrid;memory=1:/x");
	assert_true(exists("a@adopt"));
	/* held by a live taker: another process waits, and times out */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(urs_teardown_take(root, "a", URS_TEARDOWN_REAPING, got, sizeof(got), 60) ==
		      -ETIMEDOUT);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	/* given back: taken as it was */
	urs_teardown_give_back(root, "a", URS_TEARDOWN_ADOPT, fd);
	assert_true(exists("a"));
	fd = urs_teardown_take(root, "a", URS_TEARDOWN_REAPING, got, sizeof(got), 0);
	assert_true(fd >= 0);
	/* its taker gone without a word (the lock closed): taken from it */
	close(fd);
	assert_true(exists("a@reaping"));
	fd = urs_teardown_take(root, "a", URS_TEARDOWN_ADOPT, got, sizeof(got), 0);
	assert_true(fd >= 0);
	assert_string_equal(got, "mode=hybrid;memory=1:/x");
	assert_false(exists("a@reaping"));
	urs_teardown_drop(root, "a", URS_TEARDOWN_ADOPT, fd);
	assert_false(exists("a@adopt"));
	assert_false(exists("")); /* the directory went with its last record */
	/* too long for the caller's buffer: refused, and left for another */
	assert_int_equal(urs_teardown_put(root, "b", "0123456789", &err), 0);
	assert_int_equal(urs_teardown_take(root, "b", URS_TEARDOWN_ADOPT, got, 8, 0), -EFBIG);
	assert_true(exists("b"));
	fd = urs_teardown_take(root, "b", URS_TEARDOWN_ADOPT, got, sizeof(got), 0);
	assert_true(fd >= 0);
	urs_teardown_drop(root, "b", URS_TEARDOWN_ADOPT, fd);
}

/* a waiting taker is woken by the give-back, once it waits (its wchan
 * says poll; looked at a bounded number of times) */
static void test_woken(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	char got[128];
	assert_int_equal(urs_teardown_put(root, "c", "x", &err), 0);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char path[64], w[64] = "";
		int fd = urs_teardown_take(root, "c", URS_TEARDOWN_ADOPT, got, sizeof(got), 0);
		if (fd < 0 || write(p[1], "x", 1) != 1)
			_exit(1);
		close(p[1]);
		snprintf(path, sizeof(path), "/proc/%d/wchan", (int) getppid());
		for (int i = 0; i < 1000000 && !strstr(w, "poll"); i++) {
			FILE *f = fopen(path, "r");
			if (!f || !fgets(w, sizeof(w), f))
				w[0] = '\0';
			if (f)
				fclose(f);
		}
		urs_teardown_give_back(root, "c", URS_TEARDOWN_ADOPT, fd);
		_exit(0);
	}
	close(p[1]);
	char c;
	assert_int_equal(read(p[0], &c, 1), 1); /* the child holds it */
	close(p[0]);
	double t0 = now_ms();
	int fd = urs_teardown_take(root, "c", URS_TEARDOWN_REAPING, got, sizeof(got), 10000);
	assert_true(fd >= 0);
	assert_true(now_ms() - t0 < 5000); /* woken, not timed out */
	urs_teardown_drop(root, "c", URS_TEARDOWN_REAPING, fd);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(urs_teardown_take("/nonexistent-ursa-root", "a", URS_TEARDOWN_ADOPT, got,
					   sizeof(got), 10),
			 -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_locked),
		cmocka_unit_test(test_woken),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
