/*
 * tests/host/test_kill.c — signalling a container from its record
 * (host/kill.h): the init is signalled through a pidfd checked against its
 * start time, so a record whose start time is not the live process's (a
 * reused pid) signals nobody and says "container not running", as does a
 * record whose init is gone.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/kill.h"
#include "host/proc.h"

static pid_t sleeper(uint64_t *start)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	assert_int_equal(urs_proc_start_time(pid, start), 0);
	return pid;
}

static void test_kill(void **state)
{
	(void) state;
	struct urs_state st = {.started = true, .exit_status = -1};
	uint64_t start;
	st.pid = sleeper(&start);
	struct urs_err err = {{0}};

	st.pid_start = start + 1; /* another process's record: nobody is signalled */
	assert_int_equal(urs_state_kill(&st, SIGTERM, false, &err), -ESRCH);
	assert_non_null(strstr(err.msg, "container not running"));
	int status;
	assert_int_equal(waitpid(st.pid, &status, WNOHANG), 0); /* alive */

	st.pid_start = start;
	assert_int_equal(urs_state_kill(&st, SIGTERM, false, &err), 0);
	assert_int_equal(waitpid(st.pid, &status, 0), st.pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);

	memset(&err, 0, sizeof(err)); /* gone: stopped */
	assert_int_equal(urs_state_kill(&st, SIGKILL, false, &err), -ESRCH);
	assert_non_null(strstr(err.msg, "container not running"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
