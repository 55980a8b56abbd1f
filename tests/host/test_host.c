/*
 * tests/host/test_host.c — host/ pieces that need no container: container
 * records (id rules, atomic write/read, "does not exist"), process identity
 * (start time, pid reuse guard), resolution inside a rootfs (symlinks that
 * point out of it must stay in it), hooks (stdin, exit status, timeout),
 * the supervisor's OOM score (lowered, never raised; children get the old
 * one back).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/caps.h"
#include "host/hooks.h"
#include "host/mounts.h"
#include "host/oom.h"
#include "host/proc.h"
#include "host/state.h"

static char tmpdir[PATH_MAX];

static int setup(void **state)
{
	(void) state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ursa-host-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void) state;
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_ids(void **state)
{
	(void) state;
	struct urs_err err;
	assert_int_equal(urs_id_valid("abc-1.2_3+x", &err), 0);
	assert_int_equal(urs_id_valid("", &err), -EINVAL);
	assert_int_equal(urs_id_valid("-x", &err), -EINVAL);
	assert_int_equal(urs_id_valid("a/b", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'/'"));
	assert_int_equal(urs_id_valid("..", &err), -EINVAL);
	char longid[300];
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = 0;
	assert_int_equal(urs_id_valid(longid, &err), -EINVAL);
}

static void test_state_roundtrip(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s/root/nested", tmpdir);
	assert_int_equal(urs_state_dir_create(root, "c1", &err), 0);
	assert_int_equal(urs_state_dir_create(root, "c1", &err), -EEXIST);
	assert_non_null(strstr(err.msg, "already exists"));
	struct urs_state st = {.exit_status = -1, .pid = 1234, .pid_start = 99, .started = true};
	snprintf(st.id, sizeof(st.id), "c1");
	snprintf(st.bundle, sizeof(st.bundle), "/b \"quoted\"");
	urs_rfc3339_now(st.created, sizeof(st.created));
	st.cgroup = strdup("mode=hybrid;memory=1:/x");
	st.annotations = strdup("{\"k\":\"v\"}");
	urs_proc_stdio_ids(0, st.stdio_dev, st.stdio_ino); /* ours, as fstat sees them */
	struct stat io[3];
	for (int k = 0; k < 3; k++)
		if (fstat(k, &io[k]) < 0)
			io[k].st_dev = io[k].st_ino = 0;
	assert_int_equal(urs_state_write(root, &st, &err), 0);
	struct urs_state got;
	assert_int_equal(urs_state_read(root, "c1", &got, &err), 0);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(got.stdio_dev[k], io[k].st_dev);
		assert_int_equal(got.stdio_ino[k], io[k].st_ino);
	}
	assert_string_equal(got.bundle, st.bundle);
	assert_int_equal(got.pid, 1234);
	assert_int_equal(got.pid_start, 99);
	assert_true(got.started);
	assert_string_equal(got.cgroup, st.cgroup);
	assert_non_null(strstr(got.annotations, "\"k\""));
	/* RFC 3339 with nanoseconds, UTC */
	assert_int_equal(strlen(got.created), strlen("2026-01-01T00:00:00.000000000Z"));
	assert_int_equal(got.created[strlen(got.created) - 1], 'Z');
	urs_state_clear(&got);
	urs_state_clear(&st);
	/* no temp file left behind */
	char tmp[PATH_MAX];
	urs_state_path(tmp, sizeof(tmp), root, "c1", ".state.json.tmp");
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(urs_state_read(root, "nope", &got, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "does not exist"));
	assert_int_equal(urs_state_remove(root, "c1"), 0);
	assert_int_equal(urs_state_read(root, "c1", &got, &err), -ENOENT);
	assert_int_equal(urs_state_remove(root, "c1"), 0); /* idempotent */
}

static void test_oci_state_json(void **state)
{
	(void) state;
	char buf[512];
	assert_true(urs_oci_state_json(buf, sizeof(buf), "x", "created", 42, "/b",
				       "{\"a\":\"1\"}") > 0);
	assert_non_null(strstr(buf, "\"status\":\"created\""));
	assert_non_null(strstr(buf, "\"pid\":42"));
	assert_non_null(strstr(buf, "\"annotations\":{\"a\":\"1\"}"));
	assert_int_equal(urs_oci_state_json(buf, 10, "x", "created", 42, "/b", NULL), -ENOSPC);
}

static void test_proc_identity(void **state)
{
	(void) state;
	uint64_t me;
	assert_int_equal(urs_proc_start_time(getpid(), &me), 0);
	assert_true(urs_proc_alive(getpid(), me));
	assert_false(urs_proc_alive(getpid(), me + 1)); /* a reused pid is not us */
	assert_int_equal(urs_pidfd_open_checked(getpid(), me + 1), -ESRCH);
	int fd = urs_pidfd_open_checked(getpid(), me);
	assert_true(fd >= 0);
	assert_int_equal(urs_pidfd_pid(fd), getpid()); /* what the pidfd names */
	close(fd);
	assert_int_equal(urs_proc_ppid(getpid()), getppid());
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(urs_pidfd_pid(p[0]), -EINVAL); /* not a pidfd */
	close(p[0]);
	close(p[1]);
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	uint64_t cs = 0;
	urs_proc_start_time(c, &cs);
	fd = urs_pidfd_open_checked(c, cs);
	assert_true(fd >= 0);
	waitpid(c, NULL, 0);
	assert_int_equal(urs_pidfd_pid(fd), -ESRCH); /* reaped: the pidfd names none */
	close(fd);
	assert_false(urs_proc_alive(c, cs));
	assert_int_equal(urs_proc_start_time(c, &cs), -ESRCH);
	assert_int_equal(urs_proc_ppid(c), -ESRCH);
}

/* A rootfs with hostile symlinks: /evil -> /, /dev -> /etc, /proc -> ../../.. */
static void test_open_in_root(void **state)
{
	(void) state;
	char root[PATH_MAX], p[PATH_MAX];
	snprintf(root, sizeof(root), "%s/rootfs", tmpdir);
	assert_int_equal(mkdir(root, 0755), 0);
	snprintf(p, sizeof(p), "%s/evil", root);
	assert_int_equal(symlink("/", p), 0);
	snprintf(p, sizeof(p), "%s/up", root);
	assert_int_equal(symlink("../../../../..", p), 0);
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(rfd >= 0);
	/* creating under a symlink to "/" lands inside the rootfs, not on the host */
	int fd = urs_open_in_root(rfd, "/evil/ursa-escape-test/dir", O_PATH, true, false);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(access("/ursa-escape-test", F_OK), -1);
	snprintf(p, sizeof(p), "%s/ursa-escape-test/dir", root);
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	/* ".." past the root stays at the root */
	fd = urs_open_in_root(rfd, "/up/etc-in-root", O_PATH, false, true);
	assert_true(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/etc-in-root", root);
	assert_int_equal(access(p, F_OK), 0);
	/* a missing path without create is -ENOENT */
	assert_int_equal(urs_open_in_root(rfd, "/no/such", O_PATH, false, false), -ENOENT);
	close(rfd);
}

static void test_hooks(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	char out[PATH_MAX], script[PATH_MAX * 2];
	snprintf(out, sizeof(out), "%s/hook.out", tmpdir);
	snprintf(script, sizeof(script), "cat > %s; exit 0", out);
	char *args[] = {"sh", "-c", script, NULL};
	char *env[] = {"A=1", NULL};
	struct urs_hook h = {.path = "/bin/sh", .args = args, .n_args = 3, .env = env, .n_env = 1};
	assert_int_equal(urs_hook_run(&h, URS_HOOK_POSTSTART, 0, "{\"id\":\"x\"}", &err), 0);
	FILE *f = fopen(out, "r");
	char buf[64] = "";
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "{\"id\":\"x\"}");

	char *fail_args[] = {"sh", "-c", "exit 3", NULL};
	h.args = fail_args;
	assert_int_equal(urs_hook_run(&h, URS_HOOK_PRESTART, 2, "{}", &err), -EIO);
	assert_non_null(strstr(err.msg, "hooks.prestart[2]"));
	assert_non_null(strstr(err.msg, "status 3"));

	char *slow_args[] = {"sh", "-c", "sleep 10", NULL};
	h.args = slow_args;
	h.has_timeout = true;
	h.timeout = 1;
	assert_int_equal(urs_hook_run(&h, URS_HOOK_POSTSTOP, 0, "{}", &err), -ETIMEDOUT);
	assert_non_null(strstr(err.msg, "timed out"));
}

static void test_caps_last(void **state)
{
	(void) state;
	assert_true(urs_cap_last() >= 36); /* CAP_AUDIT_READ and newer */
	assert_true(urs_cap_last() < 64);
}

static int read_adj(void)
{
	FILE *f = fopen("/proc/self/oom_score_adj", "re");
	int v = -2000;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -2000;
		fclose(f);
	}
	return v;
}

/* In a child (the score is the process's): from 300 (raising needs no
 * privilege), lowered to 100 and remembered; a higher target is a no-op; a
 * child forked after it gets 300 back. Values >= 0 need no CAP_SYS_RESOURCE. */
static void test_oom_score(void **state)
{
	(void) state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *f = fopen("/proc/self/oom_score_adj", "we");
		if (!f || fprintf(f, "300\n") < 0 || fclose(f) != 0 || read_adj() != 300)
			_exit(10);
		struct urs_err err;
		if (urs_oom_protect_self(100, &err) < 0 || read_adj() != 100)
			_exit(11);
		if (urs_oom_protect_self(200, &err) < 0 || read_adj() != 100)
			_exit(12);
		pid_t c = fork();
		if (c == 0)
			_exit(urs_oom_child_reset() == 0 && read_adj() == 300 ? 0 : 1);
		int st;
		if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st))
			_exit(13);
		_exit(read_adj() == 100 ? 0 : 14);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_state_roundtrip),
		cmocka_unit_test(test_oci_state_json),
		cmocka_unit_test(test_proc_identity),
		cmocka_unit_test(test_open_in_root),
		cmocka_unit_test(test_hooks),
		cmocka_unit_test(test_caps_last),
		cmocka_unit_test(test_oom_score),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
