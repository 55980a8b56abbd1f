/*
 * tests/host/test_seccomp.c — host/seccomp.c and the default profile.
 *
 * A loaded filter cannot be removed, so every case that loads one runs in a
 * forked child: the child sets no_new_privs, builds and loads the filter,
 * makes its syscalls and reports the first failed check through a pipe
 * (exit status 1), or dies by a signal the parent expects. Single-rule cases
 * use an ALLOW default so the sanitizers' runtimes keep working in the child.
 * Profile errors are checked without forking, by their message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/seccomp.h"
#include "runtime/common.h"

/* ---- profiles as literals ---- */

#define NAMES(...) ((char *[]){__VA_ARGS__, NULL})
#define NN(...)	   (sizeof((char *[]){__VA_ARGS__}) / sizeof(char *))
#define RULE(act, ...)                                                   \
	(struct urs_scmp_rule)                                           \
	{                                                                \
		.names = NAMES(__VA_ARGS__), .n_names = NN(__VA_ARGS__), \
		.action = URS_SCMP_ACT_##act                             \
	}

static struct urs_seccomp profile1(enum urs_scmp_action def, struct urs_scmp_rule *r, size_t n)
{
	return (struct urs_seccomp){.default_action = def, .syscalls = r, .n_syscalls = n};
}

/* ---- running a case in a child ---- */

static int report_fd = -1;

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			dprintf(report_fd, "line %d: %s (errno %d)", __LINE__, #cond, errno); \
			_exit(1);                                                             \
		}                                                                             \
	} while (0)

/* The Seccomp: field of /proc/self/status (2 = filtering). */
static int seccomp_mode(void)
{
	char line[256];
	int mode = -1;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	if (f)
		fclose(f);
	return mode;
}

/* In the child: NNP, build, load. */
static void child_load(const struct urs_seccomp *p, int *listener)
{
	struct urs_err err = {""};
	scmp_filter_ctx ctx = NULL;
	int rc;

	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	rc = urs_seccomp_build(p, &ctx, &err);
	if (rc < 0) {
		dprintf(report_fd, "build: %d %s", rc, err.msg);
		_exit(1);
	}
	rc = urs_seccomp_load(ctx, listener);
	if (rc < 0) {
		dprintf(report_fd, "load: %d", rc);
		_exit(1);
	}
	seccomp_release(ctx);
	if (p->default_action == URS_SCMP_ACT_ALLOW) /* else reading /proc may be denied */
		CHECK(seccomp_mode() == 2);
}

/* Fork, run fn(arg) in the child (exit 0 when it returns), return the wait status. */
static int run(void (*fn)(void *), void *arg)
{
	int pfd[2], status = 0;
	char msg[512] = "";
	pid_t pid;
	ssize_t n;

	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		report_fd = pfd[1];
		fn(arg);
		_exit(0);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, sizeof(msg) - 1);
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (n > 0) {
		msg[n] = 0;
		fail_msg("child: %s", msg);
	}
	return status;
}

static void expect_ok(void (*fn)(void *), void *arg)
{
	int st = run(fn, arg);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("child status %#x (signal %d)", st, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static long raw_getppid(void)
{
	return syscall(SYS_getppid);
}

/* ---- actions ---- */

static void c_errno_ret(void *arg)
{
	(void) arg;
	struct urs_scmp_rule r[] = {RULE(ERRNO, "mkdir", "mkdirat"), RULE(ERRNO, "getppid")};
	r[0].has_errno_ret = true;
	r[0].errno_ret = EACCES;
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ALLOW, r, 2);
	child_load(&p, NULL);
	errno = 0;
	CHECK(mkdir("/tmp/ursa-seccomp-never", 0700) == -1 && errno == EACCES);
	errno = 0;
	CHECK(raw_getppid() == -1 && errno == EPERM); /* ERRNO without errnoRet: EPERM */
	CHECK(getpid() > 0);
}

static void test_errno_ret(void **state)
{
	(void) state;
	expect_ok(c_errno_ret, NULL);
}

/* Deny by default: an allow-list big enough for the sanitizers, getppid left out. */
static void c_default_errno(void *arg)
{
	const uint32_t *ret = arg;
	struct urs_scmp_rule r[] = {
		RULE(ALLOW, "write", "exit", "exit_group", "rt_sigreturn", "rt_sigprocmask",
		     "rt_sigaction", "mmap", "munmap", "mprotect", "madvise", "brk", "futex",
		     "getpid", "gettid", "sched_yield", "sigaltstack", "prctl", "close"),
	};
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ERRNO, r, 1);
	if (*ret) {
		p.has_default_errno_ret = true;
		p.default_errno_ret = *ret;
	}
	child_load(&p, NULL);
	errno = 0;
	CHECK(raw_getppid() == -1 && errno == (int) (*ret ? *ret : EPERM));
	CHECK(getpid() > 0);
}

static void test_default_errno(void **state)
{
	(void) state;
	uint32_t ret = 0;
	expect_ok(c_default_errno, &ret);
	ret = ENOTSUP;
	expect_ok(c_default_errno, &ret);
}

static void c_kill(void *arg)
{
	struct urs_scmp_rule r[] = {RULE(KILL, "getppid")};
	r[0].action = *(enum urs_scmp_action *) arg;
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ALLOW, r, 1);
	child_load(&p, NULL);
	raw_getppid();
	CHECK(!"still alive after getppid");
}

static void test_kill(void **state)
{
	(void) state;
	enum urs_scmp_action acts[] = {URS_SCMP_ACT_KILL_PROCESS, URS_SCMP_ACT_KILL,
				       URS_SCMP_ACT_KILL_THREAD};
	for (size_t i = 0; i < URS_ARRAY_SIZE(acts); i++) {
		int st = run(c_kill, &acts[i]);
		assert_true(WIFSIGNALED(st));
		assert_int_equal(WTERMSIG(st), SIGSYS);
	}
}

static volatile sig_atomic_t trapped_nr = -1, trapped_code = -1;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void) sig;
	(void) uc;
	trapped_nr = si->si_syscall;
	trapped_code = si->si_code;
}

static void c_trap(void *arg)
{
	(void) arg;
	struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
	struct urs_scmp_rule r[] = {RULE(TRAP, "getppid")};
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ALLOW, r, 1);
	CHECK(sigaction(SIGSYS, &sa, NULL) == 0);
	child_load(&p, NULL);
	raw_getppid();
	CHECK(trapped_nr == SYS_getppid);
	CHECK(trapped_code == 1 /* SYS_SECCOMP */);
}

static void test_trap(void **state)
{
	(void) state;
	expect_ok(c_trap, NULL);
}

static void c_log_trace(void *arg)
{
	(void) arg;
	pid_t ppid = getppid();
	struct urs_scmp_rule r[] = {RULE(LOG, "getppid"), RULE(TRACE, "getpgrp")};
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ALLOW, r, 2);
	child_load(&p, NULL);
	CHECK(raw_getppid() == ppid); /* logged, allowed */
	errno = 0;
	CHECK(syscall(SYS_getpgrp) == -1 && errno == ENOSYS); /* TRACE with no tracer */
}

static void test_log_trace(void **state)
{
	(void) state;
	expect_ok(c_log_trace, NULL);
}

/* NOTIFY: the child holds the listener and answers for a grandchild. */
static void c_notify(void *arg)
{
	(void) arg;
	struct urs_scmp_rule r[] = {RULE(NOTIFY, "getppid")};
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ALLOW, r, 1);
	struct seccomp_notif *req = NULL;
	struct seccomp_notif_resp *resp = NULL;
	int lfd = -1, st = 0;
	pid_t pid;

	child_load(&p, &lfd);
	CHECK(lfd >= 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(raw_getppid() == 4242 ? 0 : 1);
	CHECK(seccomp_notify_alloc(&req, &resp) == 0);
	CHECK(seccomp_notify_receive(lfd, req) == 0);
	CHECK(req->pid == (uint32_t) pid && req->data.nr == SYS_getppid);
	resp->id = req->id;
	resp->val = 4242;
	resp->error = 0;
	resp->flags = 0;
	CHECK(seccomp_notify_respond(lfd, resp) == 0);
	seccomp_notify_free(req, resp);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_notify(void **state)
{
	(void) state;
	expect_ok(c_notify, NULL);
}

/* ---- argument conditions ---- */

static void c_args(void *arg)
{
	(void) arg;
	struct urs_scmp_arg inet6 = {.index = 0, .value = AF_INET6, .op = URS_SCMP_CMP_EQ};
	/* MASKED_EQ: value is the mask, valueTwo the datum — openat with O_CREAT */
	struct urs_scmp_arg creat = {
		.index = 2, .value = O_CREAT, .value_two = O_CREAT, .op = URS_SCMP_CMP_MASKED_EQ};
	/* two conditions on one index: runc makes them two rules (OR) */
	struct urs_scmp_arg prio[] = {{.index = 0, .value = PRIO_PGRP, .op = URS_SCMP_CMP_EQ},
				      {.index = 0, .value = PRIO_USER, .op = URS_SCMP_CMP_EQ}};
	/* distinct indexes: AND (kill(0, 0) only) */
	struct urs_scmp_arg kill0[] = {{.index = 0, .value = 0, .op = URS_SCMP_CMP_EQ},
				       {.index = 1, .value = 0, .op = URS_SCMP_CMP_EQ}};
	struct urs_scmp_rule r[] = {RULE(ERRNO, "socket"), RULE(ERRNO, "openat"),
				    RULE(ERRNO, "getpriority"), RULE(ERRNO, "kill")};
	r[0].has_errno_ret = r[1].has_errno_ret = r[3].has_errno_ret = true;
	r[0].errno_ret = EAFNOSUPPORT;
	r[1].errno_ret = EROFS;
	r[3].errno_ret = ESRCH;
	r[0].args = &inet6, r[0].n_args = 1;
	r[1].args = &creat, r[1].n_args = 1;
	r[2].args = prio, r[2].n_args = 2;
	r[3].args = kill0, r[3].n_args = 2;
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ALLOW, r, 4);
	child_load(&p, NULL);

	errno = 0;
	CHECK(socket(AF_INET6, SOCK_STREAM, 0) == -1 && errno == EAFNOSUPPORT);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	close(fd);

	errno = 0;
	CHECK(syscall(SYS_openat, AT_FDCWD, "/tmp/ursa-seccomp-never", O_CREAT | O_WRONLY, 0600) ==
		      -1 &&
	      errno == EROFS);
	fd = (int) syscall(SYS_openat, AT_FDCWD, "/proc/self/stat", O_RDONLY);
	CHECK(fd >= 0);
	close(fd);

	errno = 0;
	CHECK(syscall(SYS_getpriority, PRIO_PGRP, 0) == -1 && errno == EPERM);
	errno = 0;
	CHECK(syscall(SYS_getpriority, PRIO_USER, 0) == -1 && errno == EPERM);
	CHECK(syscall(SYS_getpriority, PRIO_PROCESS, 0) >= 0);

	errno = 0;
	CHECK(kill(0, 0) == -1 && errno == ESRCH);
	CHECK(kill(getpid(), 0) == 0); /* arg0 differs */
}

static void test_args(void **state)
{
	(void) state;
	expect_ok(c_args, NULL);
}

/* ---- translation details and errors (no load) ---- */

static void test_unknown_and_redundant(void **state)
{
	(void) state;
	struct urs_scmp_rule r[] = {RULE(ERRNO, "no_such_syscall_xyz", "getppid"),
				    RULE(ALLOW, "getpid")};
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ALLOW, r, 2);
	struct urs_seccomp_stats st;
	struct urs_seccomp_opts o = {.stats = &st};
	struct urs_err err = {""};
	scmp_filter_ctx ctx = NULL;

	assert_int_equal(urs_seccomp_build_opts(&p, &o, &ctx, &err), 0);
	assert_non_null(ctx);
	assert_int_equal(st.unknown_names, 1);
	assert_string_equal(st.unknown[0], "no_such_syscall_xyz");
	assert_int_equal(st.redundant_rules, 1);
	assert_int_equal(st.rules_added, 1);
	seccomp_release(ctx);
}

static void test_arches_flags(void **state)
{
	(void) state;
	char *arches[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64",
			  NULL};
	char *flags[] = {"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
			 "SECCOMP_FILTER_FLAG_SPEC_ALLOW", NULL};
	struct urs_scmp_rule r[] = {RULE(ERRNO, "socket", "mount")};
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ALLOW, r, 1);
	struct urs_err err = {""};
	_cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
	uint32_t v = 0;

	p.architectures = arches;
	p.n_architectures = 4;
	p.flags = flags;
	p.n_flags = 3;
	assert_int_equal(urs_seccomp_build(&p, &ctx, &err), 0);
	assert_int_equal(seccomp_arch_exist(ctx, SCMP_ARCH_X86), 0);
	assert_int_equal(seccomp_arch_exist(ctx, SCMP_ARCH_X32), 0);
	assert_int_equal(seccomp_arch_exist(ctx, SCMP_ARCH_AARCH64), 0);
	assert_int_equal(seccomp_attr_get(ctx, SCMP_FLTATR_CTL_TSYNC, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(seccomp_attr_get(ctx, SCMP_FLTATR_CTL_LOG, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(seccomp_attr_get(ctx, SCMP_FLTATR_CTL_SSB, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(seccomp_attr_get(ctx, SCMP_FLTATR_CTL_NNP, &v), 0);
	assert_int_equal(v, 0); /* the init sets no_new_privs itself */
}

/* Build p, expect rc and exactly msg. */
static void expect_err(const struct urs_seccomp *p, int rc, const char *msg)
{
	struct urs_err err = {""};
	scmp_filter_ctx ctx = (scmp_filter_ctx) 1;

	assert_int_equal(urs_seccomp_build(p, &ctx, &err), rc);
	assert_null(ctx);
	assert_string_equal(err.msg, msg);
}

static void test_errors(void **state)
{
	(void) state;
	struct urs_scmp_arg a7 = {.index = 7, .value = 1, .op = URS_SCMP_CMP_EQ};
	struct urs_scmp_arg bad_op = {.index = 0, .value = 1, .op = (enum urs_scmp_op) 42};
	struct urs_scmp_rule r[4] = {RULE(ALLOW, "getpid"), RULE(ALLOW, "read", "write"),
				     RULE(ERRNO, "getppid"), RULE(ERRNO, "mount")};
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ERRNO, r, 4);

	r[3].args = &a7, r[3].n_args = 1;
	expect_err(&p, -EINVAL,
		   "seccomp: syscalls[3] (names: [\"mount\"]): invalid argument index 7");
	r[3].args = &bad_op;
	expect_err(&p, -EINVAL,
		   "seccomp: syscalls[3] (names: [\"mount\"]): args[0]: invalid operator 42");
	r[3].n_args = 0;

	r[1].action = (enum urs_scmp_action) 99;
	expect_err(&p, -EINVAL,
		   "seccomp: syscalls[1] (names: [\"read\", \"write\"]): invalid action 99");
	r[1].action = URS_SCMP_ACT_NOTIFY;
	expect_err(&p, -EINVAL,
		   "seccomp: syscalls[1] (names: [\"read\", \"write\"]): SCMP_ACT_NOTIFY cannot be "
		   "used for the write syscall");
	r[1].action = URS_SCMP_ACT_ALLOW;

	r[2].has_errno_ret = true;
	r[2].errno_ret = 70000;
	expect_err(&p, -EINVAL,
		   "seccomp: syscalls[2] (names: [\"getppid\"]): errnoRet 70000 out of range "
		   "(0..65535)");
	r[2].has_errno_ret = false;

	char *bad_arch[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_VAX", NULL};
	p.architectures = bad_arch;
	p.n_architectures = 2;
	expect_err(&p, -EINVAL,
		   "seccomp: architectures[1]: unknown architecture \"SCMP_ARCH_VAX\" (libseccomp "
		   "2.5.4)");
	p.n_architectures = 0;

	char *bad_flag[] = {"SECCOMP_FILTER_FLAG_BOGUS", NULL};
	p.flags = bad_flag;
	p.n_flags = 1;
	expect_err(&p, -EINVAL, "seccomp: unknown flag \"SECCOMP_FILTER_FLAG_BOGUS\"");
#if SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR < 6
	char *wk[] = {"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", NULL};
	p.flags = wk;
	expect_err(&p, -EOPNOTSUPP,
		   "seccomp: flag SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV needs libseccomp >= 2.6 "
		   "(built with 2.5.4)");
#endif
	p.n_flags = 0;

	p.default_action = URS_SCMP_ACT_NOTIFY;
	expect_err(&p, -EINVAL, "seccomp: SCMP_ACT_NOTIFY cannot be used as default action");
	p.default_action = (enum urs_scmp_action) 17;
	expect_err(&p, -EINVAL, "seccomp: invalid default action 17");
	p.default_action = URS_SCMP_ACT_ERRNO;

	/* and the fixed profile builds */
	scmp_filter_ctx ctx = NULL;
	struct urs_err err = {""};
	assert_int_equal(urs_seccomp_build(&p, &ctx, &err), 0);
	seccomp_release(ctx);
}

/* A rule with many names is cut in the message, not overflowed. */
static void test_error_long_names(void **state)
{
	(void) state;
	char *names[64];
	struct urs_scmp_arg a9 = {.index = 9, .op = URS_SCMP_CMP_EQ};
	for (size_t i = 0; i < 63; i++)
		names[i] = "a_rather_long_syscall_name";
	names[63] = NULL;
	struct urs_scmp_rule r = {.names = names,
				  .n_names = 63,
				  .action = URS_SCMP_ACT_ERRNO,
				  .args = &a9,
				  .n_args = 1};
	struct urs_seccomp p = profile1(URS_SCMP_ACT_ALLOW, &r, 1);
	struct urs_err err = {""};
	scmp_filter_ctx ctx = NULL;
	assert_int_equal(urs_seccomp_build(&p, &ctx, &err), -EINVAL);
	assert_non_null(strstr(err.msg, ", ...]): invalid argument index 9"));
}

/* ---- the default profile ---- */

static const struct urs_scmp_rule *find_rule(const struct urs_seccomp *p, const char *name,
					     enum urs_scmp_action act)
{
	for (size_t i = 0; i < p->n_syscalls; i++)
		for (size_t k = 0; k < p->syscalls[i].n_names; k++)
			if (strcmp(p->syscalls[i].names[k], name) == 0 &&
			    p->syscalls[i].action == act)
				return &p->syscalls[i];
	return NULL;
}

static void test_default_profile_shape(void **state)
{
	(void) state;
	_cleanup_free_ struct urs_seccomp *p = NULL;
	_cleanup_free_ struct urs_seccomp *admin = NULL;
	const struct urs_scmp_rule *r;

	assert_int_equal(urs_seccomp_default_profile(URS_SECCOMP_DOCKER_CAPS, &p), 0);
	assert_int_equal(p->default_action, URS_SCMP_ACT_ERRNO);
	assert_true(p->has_default_errno_ret);
	assert_int_equal(p->default_errno_ret, EPERM);
	assert_true(p->syscalls[0].n_names > 300);
	assert_non_null(find_rule(p, "chroot", URS_SCMP_ACT_ALLOW)); /* CAP_SYS_CHROOT */
	assert_null(find_rule(p, "mount", URS_SCMP_ACT_ALLOW));
	assert_null(find_rule(p, "reboot", URS_SCMP_ACT_ALLOW));
	r = find_rule(p, "clone", URS_SCMP_ACT_ALLOW);
	assert_non_null(r);
	assert_int_equal(r->n_args, 1);
	assert_int_equal(r->args[0].op, URS_SCMP_CMP_MASKED_EQ);
	assert_int_equal(r->args[0].value, 0x7E020000);
	r = find_rule(p, "clone3", URS_SCMP_ACT_ERRNO);
	assert_non_null(r);
	assert_int_equal(r->errno_ret, ENOSYS);
#if defined(__x86_64__)
	assert_int_equal(p->n_architectures, 3);
	assert_non_null(find_rule(p, "arch_prctl", URS_SCMP_ACT_ALLOW));
	assert_non_null(find_rule(p, "modify_ldt", URS_SCMP_ACT_ALLOW));
	assert_null(find_rule(p, "s390_runtime_instr", URS_SCMP_ACT_ALLOW));
#endif

	/* with CAP_SYS_ADMIN: namespaces and mounts allowed, clone unrestricted */
	assert_int_equal(urs_seccomp_default_profile(
				 URS_SECCOMP_DOCKER_CAPS | URS_CAP(CAP_SYS_ADMIN), &admin),
			 0);
	r = find_rule(admin, "clone", URS_SCMP_ACT_ALLOW);
	assert_non_null(r);
	assert_int_equal(r->n_args, 0);
	assert_non_null(find_rule(admin, "unshare", URS_SCMP_ACT_ALLOW));
	assert_non_null(find_rule(admin, "clone3", URS_SCMP_ACT_ALLOW));
	assert_null(find_rule(admin, "clone3", URS_SCMP_ACT_ERRNO));

	/* both build, with nothing but newer-than-libseccomp names skipped */
	struct urs_seccomp_stats st;
	struct urs_seccomp_opts o = {.stats = &st};
	struct urs_err err = {""};
	scmp_filter_ctx ctx = NULL;
	assert_int_equal(urs_seccomp_build_opts(p, &o, &ctx, &err), 0);
	seccomp_release(ctx);
	assert_true(st.rules_added > 300);
	assert_true(st.unknown_names < 12);
	assert_int_equal(urs_seccomp_build_opts(admin, &o, &ctx, &err), 0);
	seccomp_release(ctx);
}

static void *thread_fn(void *arg)
{
	return (char *) arg + 1;
}

static void c_default_profile(void *arg)
{
	(void) arg;
	struct urs_err err = {""};
	scmp_filter_ctx ctx = NULL;
	char path[] = "/tmp/ursa-seccomp-XXXXXX", buf[16] = "";
	pthread_t t;
	void *ret = NULL;
	int fd, rc;

	/* before the filter: mkstemp's file to play with */
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);

	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	rc = urs_seccomp_build_default(URS_SECCOMP_DOCKER_CAPS, &ctx, &err);
	if (rc < 0) {
		dprintf(report_fd, "build: %d %s", rc, err.msg);
		_exit(1);
	}
	CHECK(seccomp_mode() == 0);
	CHECK(urs_seccomp_load(ctx, NULL) == 0);
	seccomp_release(ctx);
	CHECK(seccomp_mode() == 2);

	/* a normal program */
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK(write(fd, "hello", 5) == 5);
	CHECK(pread(fd, buf, sizeof(buf), 0) == 5 && memcmp(buf, "hello", 5) == 0);
	close(fd);
	CHECK(unlink(path) == 0);
	void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	memset(m, 1, 1 << 20);
	CHECK(munmap(m, 1 << 20) == 0);
	CHECK(pthread_create(&t, NULL, thread_fn, buf) == 0); /* clone3 → ENOSYS → clone */
	CHECK(pthread_join(t, &ret) == 0 && ret == buf + 1);
	CHECK(personality(0xffffffff) >= 0);
	int us = socket(AF_UNIX, SOCK_DGRAM, 0);
	CHECK(us >= 0);
	close(us);

	/* what Docker's profile denies */
	errno = 0;
	CHECK(unshare(CLONE_NEWUSER) == -1 && errno == EPERM);
	errno = 0;
	CHECK(mount("none", "/tmp", "tmpfs", 0, NULL) == -1 && errno == EPERM);
	errno = 0;
	CHECK(syscall(SYS_kexec_load, 0, 0, 0, 0) == -1 && errno == EPERM);
	errno = 0;
	CHECK(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0) == -1 && errno == EPERM);
	errno = 0;
	CHECK(syscall(SYS_clone3, NULL, 0) == -1 && errno == ENOSYS);
	errno = 0; /* clone with a namespace flag */
	CHECK(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0) == -1 && errno == EPERM);
	errno = 0;
	CHECK(personality(ADDR_NO_RANDOMIZE) == -1 && errno == EPERM);
	errno = 0;
	CHECK(socket(40 /* AF_VSOCK */, SOCK_STREAM, 0) == -1 && errno == EPERM);
	errno = 0;
	CHECK(syscall(SYS_reboot, 0, 0, 0, 0) == -1 && errno == EPERM);
}

static void test_default_profile(void **state)
{
	(void) state;
	expect_ok(c_default_profile, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errno_ret),
		cmocka_unit_test(test_default_errno),
		cmocka_unit_test(test_kill),
		cmocka_unit_test(test_trap),
		cmocka_unit_test(test_log_trace),
		cmocka_unit_test(test_notify),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_unknown_and_redundant),
		cmocka_unit_test(test_arches_flags),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_error_long_names),
		cmocka_unit_test(test_default_profile_shape),
		cmocka_unit_test(test_default_profile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
