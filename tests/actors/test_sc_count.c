/*
 * tests/actors/test_sc_count.c — counted seccomp denials of one sandbox
 * (actors/sc_count.c), as a host keeps them for each sandbox it serves:
 * a real child loads a filter that notifies on getpgid(2) and hands the
 * listener over; the counter, fed a copy of an errno table, answers on a
 * loop with the table's errno (an exception's, not the base's), counts
 * the denial under its syscall, and renders it. A table too large to copy
 * is refused.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <poll.h>
#include <seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/fdpass.h"
#include "actors/hosted.h"
#include "actors/sc_count.h"
#include "runtime/loop.h"
#include "runtime/timer.h"

#define CALLS 100 /* > URS_SC_BURST: paced */

#include "tests/lib/deadline.h" /* the waits below */

/* the child: getpgid notifies; @calls of them, then it exits 0 if each got
 * EACCES (the exception), or waits to be killed (@calls 0) */
static void child(int sock, int calls)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves nothing */
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(getpgid), 0) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_load(ctx) < 0)
		_exit(2);
	if (urs_send_fd(sock, "l", 1, seccomp_notify_fd(ctx)) < 0)
		_exit(3);
	if (!calls)
		for (;;)
			pause();
	for (int i = 0; i < calls; i++) {
		long r = syscall(SYS_getpgid, 0);
		if (r != -1 || errno != EACCES)
			_exit(1);
	}
	_exit(0);
}

/* a child with its listener in *@listener */
static pid_t spawn(int calls, int *listener)
{
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sp[0]);
		child(sp[1], calls);
	}
	close(sp[1]);
	char c;
	assert_int_equal(urs_recv_fd(sp[0], &c, 1, listener), 1);
	close(sp[0]);
	assert_true(*listener >= 0);
	return pid;
}

static bool child_ended;
static void exit_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) op, (void) res, (void) flags;
	child_ended = true;
}

static void test_answer_count_render(void **state)
{
	(void) state;
	int listener;
	pid_t pid = spawn(CALLS, &listener);

	/* the table goes away after the take: the counter keeps a copy */
	struct urs_seccomp_deny_exc *exc = calloc(1, sizeof(*exc));
	exc[0] = (struct urs_seccomp_deny_exc){seccomp_arch_native(), SYS_getpgid, EACCES};
	struct urs_seccomp_denials d = {
		.base_errno = EPERM, .n_exc = 1, .native_arch = seccomp_arch_native(), .exc = exc};
	struct urs_sc_count *c = calloc(1, sizeof(*c));
	c->fd = -1;
	assert_int_equal(urs_sc_take(c, listener, &d, true), 0);
	free(exc);

	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	/* a window long enough for a burst on any host: pacing is certain */
	c->pace_window_ns = 2000ull * 1000 * 1000; /* (2 s: even under load and ASan) */
	assert_int_equal(urs_sc_start(c, &loop), 0);
	int st = -1;
	bool paced = false;
	/* the child's exit wakes the loop: its filter (and the listener's
	 * hang-up) goes only when it is reaped */
	int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	struct urs_op exit_op = {0};
	child_ended = false;
	io_uring_prep_poll_add(urs_op_sqe(&exit_op), pidfd, POLLIN);
	assert_int_equal(urs_submit(&loop, &exit_op, exit_cb), 0);
	deadline_arm(&loop, 20);
	while (!child_ended && !expired) {
		/* until a notification, a pacing timer or the child's exit */
		assert_int_equal(urs_loop_run_once(&loop, true), 0);
		paced |= urs_timer_busy(&c->pace);
	}
	deadline_off(&loop);
	assert_true(child_ended);
	close(pidfd);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0); /* answered with the exception's errno */
	assert_int_equal(c->denied[SYS_getpgid], CALLS);
	assert_true(paced); /* a storm waits for the next window, past the burst */

	char buf[4096];
	int n = urs_sc_render(c, "sandbox=\"t\"", buf, sizeof(buf));
	assert_true(n > 0);
	assert_non_null(
		strstr(buf, "ursa_seccomp_denied_total{sandbox=\"t\",syscall=\"getpgid\"} 100\n"));
	assert_int_equal(urs_sc_render(c, "x", buf, 64), -ENOSPC);

	urs_sc_stop(c, &loop);
	for (int i = 0; i < 1000 && urs_sc_busy(c); i++)
		assert_int_equal(urs_loop_run_once(&loop, false), 0);
	assert_false(urs_sc_busy(c));
	assert_int_equal(c->fd, -1);
	urs_loop_fini(&loop);
	free(c);
}

static void test_table_too_large(void **state)
{
	(void) state;
	struct urs_seccomp_deny_exc exc[URS_SC_EXC_MAX + 1] = {{0}};
	struct urs_seccomp_denials d = {.n_exc = URS_SC_EXC_MAX + 1, .exc = exc};
	struct urs_sc_count *c = calloc(1, sizeof(*c));
	c->fd = -1;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(urs_sc_take(c, p[0], &d, true), -E2BIG);
	assert_int_equal(c->fd, -1); /* nothing taken: the caller still owns it */
	close(p[0]);
	close(p[1]);
	free(c);
}

/* a host serving a sandbox with counted denials frees it once the init is
 * gone, although the listener's op is the last thing to end */
static void test_hosted_with_listener(void **state)
{
	(void) state;
	char root[] = "/tmp/ursa-sc.XXXXXX", dir[64], cmd[96];
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/h1", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	int listener;
	pid_t pid = spawn(0, &listener);
	int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl.sock", dir);
	int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *) &sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	struct urs_handover h = {
		.magic = URS_HANDOVER_MAGIC, .init_pid = pid, .started = 1, .execd = 1, .sc = 1};
	snprintf(h.id, sizeof(h.id), "h1");
	h.sc_table.base_errno = EACCES;
	h.sc_table.native_arch = seccomp_arch_native();
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_adopt o = {.h = &h, .fds = {pidfd, lfd, listener, -1}, .root = root};
	struct urs_err err = {{0}};
	int r = urs_sup_adopt(&loop, &o, &err);
	if (r)
		fail_msg("adopt: %s", err.msg);
	assert_int_equal(urs_sup_adopted(), 1);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	deadline_arm(&loop, 10);
	while (urs_sup_adopted() && !expired)
		assert_int_equal(urs_loop_run_once(&loop, true), 0);
	deadline_off(&loop);
	assert_int_equal(urs_sup_adopted(), 0);
	urs_loop_fini(&loop);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answer_count_render),
		cmocka_unit_test(test_table_too_large),
		cmocka_unit_test(test_hosted_with_listener),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
