/*
 * tests/shim/test_oom.c — OOM kills seen by shim/oom.c: a child in a memory
 * cgroup of its own (made beneath the test's cgroup by host/cgroup.c, with
 * a 16 MiB limit and no swap) touches 256 MiB and is OOM-killed; the watch
 * calls back once the kill happened, and stops cleanly. cgroup v1 (the
 * memory hierarchy's eventfd) or v2 (memory.events), whichever the host has.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/cgroup.h"
#include "runtime/loop.h"
#include "shim/oom.h"

static int ooms;

static void on_oom(void *arg)
{
	(void) arg;
	ooms++;
}

static void write_file(const char *dir, const char *name, const char *v)
{
	char p[URS_CG_PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* memsw where swap accounting is off */
	assert_int_equal(write(fd, v, strlen(v)), (ssize_t) strlen(v));
	close(fd);
}

static void test_oom_kill_seen(void **state)
{
	(void) state;
	if (geteuid() != 0)
		skip();
	struct urs_cgroup cg;
	struct urs_err err = {{0}};
	char id[64];
	snprintf(id, sizeof(id), "ursa-test-oom-%d", getpid());
	assert_int_equal(urs_cg_create(&cg, id, id, 0, &err), 0);
	bool v2 = cg.mode == URS_CG_UNIFIED;
	const char *dir = cg.h[v2 ? URS_CG_V2 : URS_CG_MEMORY].path;
	if (v2) {
		write_file(dir, "memory.max", "16777216");
		write_file(dir, "memory.swap.max", "0");
	} else {
		write_file(dir, "memory.limit_in_bytes", "16777216");
		write_file(dir, "memory.memsw.limit_in_bytes", "16777216");
	}
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct shim_oom *o = shim_oom_watch(&loop, &cg, on_oom, NULL);
	assert_non_null(o);

	int go[2];
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		size_t len = 256u << 20;
		char *m =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		for (size_t i = 0; m != MAP_FAILED && i < len; i += 4096)
			m[i] = 1;
		_exit(3); /* not killed: the limit did not hold */
	}
	assert_int_equal(urs_cg_enter(&cg, pid, &err), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	while (ooms == 0) /* the kill happened: its event is there to read */
		assert_true(urs_loop_run_once(&loop, true) >= 0);
	assert_true(ooms >= 1);

	shim_oom_stop(o);
	while (loop.live)
		urs_loop_run_once(&loop, true);
	urs_loop_run_once(&loop, false); /* the cancelled read: the record goes */
	close(go[0]);
	close(go[1]);
	urs_loop_fini(&loop);
	assert_int_equal(urs_cg_destroy(&cg, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oom_kill_seen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
