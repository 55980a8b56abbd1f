/*
 * tests/shim/test_logger.c — containerd's logging binaries (shim/logger.c):
 * a URI's path and %-escaped query become the program and its arguments,
 * the program gets stdout on fd 3, stderr on fd 4 and only CONTAINER_ID and
 * CONTAINER_NAMESPACE in its environment, and is waited for on the loop
 * until it closes fd 5 or writes to it; one that does neither by the
 * deadline is reported (-ETIMEDOUT, naming it) while the loop went on
 * serving; a relative path, a bad escape and a missing program are refused
 * naming the URI or the program, with no fd or child left.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/common.h"
#include "runtime/loop.h"
#include "runtime/timer.h"
#include "shim/logger.h"

static int count_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* -- the wait on a loop -- */

struct waited {
	bool done;
	int err, ticks;
	char msg[256];
};

static void waited_cb(void *arg, int err, const char *msg)
{
	struct waited *w = arg;
	w->done = true;
	w->err = err;
	snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "");
}

/* the wait and a periodic timer on the same loop; at its @go_at-th tick
 * the timer writes a line to @go (a FIFO the logger reads before it says
 * it is ready): a wait that blocked the loop never sees it ready */
struct side {
	struct urs_timer tick;
	struct waited w;
	int go, go_at;
};

static void tick_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	struct side *s = container_of(t, struct side, tick);
	if (res == 0 && ++s->w.ticks == s->go_at)
		assert_int_equal(write(s->go, "go\n", 3), 3);
}

/* await @ready on a loop that also runs a 10 ms periodic timer (what the
 * shim serves meanwhile) until the logger's answer */
static void await(int ready, const char *uri, unsigned ms, int go, struct waited *out)
{
	struct side s = {.go = go, .go_at = go >= 0 ? 3 : 0};
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	assert_int_equal(urs_timer_start(&loop, &s.tick, 10000000, 10000000, tick_cb), 0);
	assert_int_equal(shim_logger_await(&loop, ready, uri, ms, waited_cb, &s.w), 0);
	assert_false(s.w.done); /* never inside the call */
	while (!s.w.done)
		assert_true(urs_loop_run_once(&loop, true) >= 0);
	urs_timer_cancel(&loop, &s.tick);
	while (loop.live)
		urs_loop_run_once(&loop, true);
	urs_loop_fini(&loop);
	*out = s.w;
}

static void refused(const char *uri, int code, const char *text)
{
	int fds = count_fds(), out = -1, err = -1, ready = -1;
	pid_t pid = -1;
	struct urs_err e = {{0}};
	assert_int_equal(shim_logger_spawn(uri, "c1", "ns1", &out, &err, &ready, &pid, &e), code);
	assert_non_null(strstr(e.msg, text));
	assert_int_equal(count_fds(), fds);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no child left */
}

static void test_refused(void **state)
{
	(void) state;
	refused("binary://relative/logger", -EINVAL, "binary://relative/logger");
	refused("binary:///bin/sh?a=%zz", -EINVAL, "bad %-escape");
	refused("binary:///nonexistent/logger", -ENOENT, "/nonexistent/logger");
}

static void test_start(void **state)
{
	(void) state;
	char dir[] = "/tmp/ursa-test-logger.XXXXXX", want[256], got[512] = "";
	assert_non_null(mkdtemp(dir));
	/* sh -c SCRIPT ARG0 ARG1: the script copies fd 3, writes its own
	 * environment and $1, then closes fd 5 */
	char script[512], uri[2048];
	snprintf(script, sizeof(script),
		 "/bin/cat <&3 >%s/out 5>&- & /usr/bin/tr '\\0' ' ' </proc/$$/environ >%s/env; "
		 "echo \"$1|$2|$3|$#\" >>%s/env; exec 5>&-; wait",
		 dir, dir, dir);
	int n = snprintf(uri, sizeof(uri), "binary:///bin/sh?-c=");
	for (const char *c = script; *c; c++)
		n += snprintf(uri + n, sizeof(uri) - (size_t) n,
			      *c == ' '			    ? "+"
			      : isalnum((unsigned char) *c) ? "%c"
							    : "%%%02X",
			      (unsigned char) *c);
	snprintf(uri + n, sizeof(uri) - (size_t) n, "&arg0=x+y&&arg0=again&bare");
	int out = -1, err = -1, ready = -1;
	pid_t pid = -1;
	struct urs_err e = {{0}};
	assert_int_equal(shim_logger_spawn(uri, "c1", "ns1", &out, &err, &ready, &pid, &e), 0);
	struct waited w = {0};
	await(ready, uri, 10000, -1, &w);
	assert_int_equal(w.err, 0);
	assert_int_equal(write(out, "hello\n", 6), 6);
	close(out);
	close(err);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(want, sizeof(want), "%s/out", dir);
	FILE *f = fopen(want, "r");
	assert_non_null(f);
	assert_non_null(fgets(got, sizeof(got), f));
	fclose(f);
	assert_string_equal(got, "hello\n");
	snprintf(want, sizeof(want), "%s/env", dir);
	f = fopen(want, "r");
	assert_non_null(f);
	assert_non_null(fgets(got, sizeof(got), f));
	fclose(f);
	/* only the two variables; "arg0" is $0, "x y" $1 ('+' a space), the
	 * repeated key and the empty pair dropped, the bare key "bare" "" */
	assert_string_equal(got, "CONTAINER_ID=c1 CONTAINER_NAMESPACE=ns1 x y|bare||3\n");
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* one that keeps fd 5 open and silent: not ready at the deadline, named
 * by its path (not its query); one that closes fd 5 once the loop's timer
 * has written to its FIFO: ready (a blocking wait would time out) */
static void test_not_ready(void **state)
{
	(void) state;
	int fds = count_fds();
	char dir[] = "/tmp/ursa-test-logger.XXXXXX", fifo[64], gated[256];
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/go", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	int go = open(fifo, O_RDWR | O_CLOEXEC); /* a writer from the start: no open blocks */
	assert_true(go >= 0);
	snprintf(gated, sizeof(gated),
		 "binary:///bin/sh?-c=read+x+%%3C%s%%3B+exec+5%%3E%%26-+sleep+1000", fifo);
	const char *uris[] = {"binary:///bin/sh?-c=exec+sleep+1000", gated};
	for (int i = 0; i < 2; i++) {
		int out = -1, err = -1, ready = -1;
		pid_t pid = -1;
		struct urs_err e = {{0}};
		assert_int_equal(
			shim_logger_spawn(uris[i], "c1", "ns1", &out, &err, &ready, &pid, &e), 0);
		struct waited w = {0};
		await(ready, uris[i], i ? 10000 : 100, i ? go : -1, &w);
		if (i == 0) {
			assert_int_equal(w.err, -ETIMEDOUT);
			assert_non_null(
				strstr(w.msg, "logging binary /bin/sh: not ready after 100 ms"));
			assert_null(strstr(w.msg, "sleep")); /* its arguments are not shown */
		} else {
			assert_int_equal(w.err, 0);
			assert_true(w.ticks >= 3);
		}
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, NULL, 0), pid);
		close(out);
		close(err);
	}
	close(go);
	unlink(fifo);
	rmdir(dir);
	assert_int_equal(count_fds(), fds); /* the ready pipes closed too */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_start),
		cmocka_unit_test(test_not_ready),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
