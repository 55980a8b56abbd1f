/*
 * tests/host/test_seccomp_count.c — counted seccomp denials (host/seccomp.c
 * count mode, host/seccomp_bpf.c's listener load and answers, the programs
 * host/gen_seccomp_bpf.c generates).
 *
 * The core property: a counting filter decides exactly like the plain one,
 * except that where the plain one returns ERRNO(e) the counting one may
 * return USER_NOTIF and the table must then say e. It is checked by running
 * both BPF programs in a small classic-BPF interpreter over every syscall
 * number of three ABIs and a set of argument vectors (so arg-conditional
 * rules are exercised too). Then for real: a forked child loads a counting
 * filter with a listener, the parent answers, and the child sees the
 * profile's errnos; and a task killed while waiting gives -ENOENT.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/fdpass.h"
#include "host/seccomp.h"
#include "host/seccomp_bpf.h"
#include "runtime/common.h"

/* ---- a classic BPF interpreter for seccomp programs ---- */

static uint32_t run_bpf(const struct sock_filter *f, unsigned len, const struct seccomp_data *d)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {0};
	const unsigned char *data = (const void *) d;
	for (unsigned pc = 0; pc < len; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t k = i->k, src = BPF_SRC(i->code) == BPF_X ? X : k;
		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
			if (i->code == (BPF_LD | BPF_W | BPF_ABS)) {
				assert_true(k + 4 <= sizeof(*d));
				memcpy(&A, data + k, 4);
			} else if (i->code == (BPF_LD | BPF_MEM)) {
				A = M[k];
			} else if (i->code == (BPF_LD | BPF_IMM)) {
				A = k;
			} else {
				fail_msg("unsupported LD %#x", i->code);
			}
			break;
		case BPF_LDX:
			X = BPF_MODE(i->code) == BPF_MEM ? M[k] : k;
			break;
		case BPF_ST:
			M[k] = A;
			break;
		case BPF_STX:
			M[k] = X;
			break;
		case BPF_ALU:
			switch (BPF_OP(i->code)) {
			case BPF_AND:
				A &= src;
				break;
			case BPF_OR:
				A |= src;
				break;
			case BPF_ADD:
				A += src;
				break;
			case BPF_SUB:
				A -= src;
				break;
			case BPF_LSH:
				A <<= src;
				break;
			case BPF_RSH:
				A >>= src;
				break;
			default:
				fail_msg("unsupported ALU %#x", i->code);
			}
			break;
		case BPF_JMP:
			if (BPF_OP(i->code) == BPF_JA) {
				pc += k;
				break;
			}
			bool t = BPF_OP(i->code) == BPF_JEQ   ? A == src
				 : BPF_OP(i->code) == BPF_JGT ? A > src
				 : BPF_OP(i->code) == BPF_JGE ? A >= src
							      : (A & src) != 0;
			pc += t ? i->jt : i->jf;
			break;
		case BPF_RET:
			return BPF_RVAL(i->code) == BPF_A ? A : k;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				X = A;
			else
				A = X;
			break;
		default:
			fail_msg("unsupported class %#x", i->code);
		}
	}
	fail_msg("fell off the program");
	return 0;
}

static const uint64_t argsets[][6] = {
	{0, 0, 0, 0, 0, 0},
	{0x10000000 /* CLONE_NEWUSER */, 0, 0, 0, 0, 0},
	{0x11, 0x8, 0, 0, 0, 0},
	{1, 2, 3, 4, 5, 6},
	{0xffffffff, 0xffffffffffffffffull, 0, 0, 0, 0},
	{0x20000, 0, 0, 0, 0, 0},
	{40 /* AF_VSOCK */, 1, 0, 0, 0, 0},
};

/* Every (arch, nr, args): the counting program agrees with the plain one. */
static unsigned check_equivalent(const struct sock_fprog *plain, const struct sock_fprog *count,
				 const struct urs_seccomp_denials *d)
{
	/* x86_64, i386, and x32 (x86_64's arch with the x32 bit in nr) */
	static const uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_X86_64};
	unsigned notified = 0;
	for (size_t a = 0; a < URS_ARRAY_SIZE(arches); a++) {
		for (int nr = 0; nr < 600; nr++) {
			for (size_t s = 0; s < URS_ARRAY_SIZE(argsets); s++) {
				struct seccomp_data sd = {.nr = a == 2 ? (int) (0x40000000 | nr)
								       : nr,
							  .arch = arches[a]};
				memcpy(sd.args, argsets[s], sizeof(sd.args));
				uint32_t p = run_bpf(plain->filter, plain->len, &sd);
				uint32_t c = run_bpf(count->filter, count->len, &sd);
				if (c == SECCOMP_RET_USER_NOTIF) {
					notified++;
					uint16_t e = urs_seccomp_denial_errno(d, sd.arch, sd.nr);
					if (p != (SECCOMP_RET_ERRNO | e))
						fail_msg("arch %#x nr %d args %zu: plain %#x, "
							 "counted "
							 "answers errno %u",
							 sd.arch, sd.nr, s, p, e);
				} else if (c != p) {
					fail_msg("arch %#x nr %d args %zu: plain %#x, counting %#x",
						 sd.arch, sd.nr, s, p, c);
				}
			}
		}
	}
	return notified;
}

static void test_default_programs_equivalent(void **state)
{
	(void) state;
	struct sock_fprog plain = {urs_default_bpf_len, (struct sock_filter *) urs_default_bpf};
	struct sock_fprog count = {urs_default_count_bpf_len,
				   (struct sock_filter *) urs_default_count_bpf};
	unsigned n = check_equivalent(&plain, &count, &urs_default_denials);
	assert_true(n > 1000); /* Docker's profile denies most of the number space */
	assert_int_equal(urs_default_denials.base_errno, EPERM);
	/* clone3 → ENOSYS without CAP_SYS_ADMIN (so glibc falls back to clone) */
	assert_int_equal(
		urs_seccomp_denial_errno(&urs_default_denials, AUDIT_ARCH_X86_64, __NR_clone3),
		ENOSYS);
	assert_int_equal(
		urs_seccomp_denial_errno(&urs_default_denials, AUDIT_ARCH_X86_64, __NR_mount),
		EPERM);
}

/* ---- profiles built at run time ---- */

#define NAMES(...) ((char *[]){__VA_ARGS__, NULL})
#define NN(...)	   (sizeof((char *[]){__VA_ARGS__}) / sizeof(char *))
#define RULE(act, ...)                                                   \
	(struct urs_scmp_rule)                                           \
	{                                                                \
		.names = NAMES(__VA_ARGS__), .n_names = NN(__VA_ARGS__), \
		.action = URS_SCMP_ACT_##act                             \
	}

static struct urs_scmp_rule errno_rule(struct urs_scmp_rule r, uint32_t e)
{
	r.has_errno_ret = true;
	r.errno_ret = e;
	return r;
}

static struct urs_scmp_rule with_arg(struct urs_scmp_rule r, struct urs_scmp_arg *a)
{
	r.args = a;
	r.n_args = 1;
	return r;
}

/* Build plain and counting filters for @p and compare them. */
static unsigned build_and_compare(const struct urs_seccomp *p, struct urs_seccomp_denials **den,
				  const char **why)
{
	struct urs_err err = {{0}};
	scmp_filter_ctx a = NULL, b = NULL;
	struct urs_bpf pa, pb;
	struct urs_seccomp_opts o = {.count = den, .why = why};
	if (urs_seccomp_build(p, &a, &err) < 0 || urs_seccomp_build_opts(p, &o, &b, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(urs_seccomp_compile(a, &pa, &err), 0);
	assert_int_equal(urs_seccomp_compile(b, &pb, &err), 0);
	unsigned n = 0;
	if (*den)
		n = check_equivalent(&pa.prog, &pb.prog, *den);
	else
		assert_memory_equal(pa.prog.filter, pb.prog.filter,
				    pa.prog.len * sizeof(struct sock_filter));
	seccomp_release(a);
	seccomp_release(b);
	urs_bpf_release(&pa);
	urs_bpf_release(&pb);
	return n;
}

static char *arches[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};

static void test_mixed_errnos(void **state)
{
	(void) state;
	struct urs_scmp_arg a0 = {.index = 0, .value = 5, .op = URS_SCMP_CMP_EQ};
	struct urs_scmp_rule rules[] = {
		RULE(ALLOW, "read", "write", "getppid", "personality"),
		/* unconditional, another errno: converted, an exception */
		errno_rule(RULE(ERRNO, "ustat"), ENOTTY),
		/* conditional with another errno: it may also fall through to the
		 * default's EPERM, so it must stay ERRNO */
		errno_rule(with_arg(RULE(ERRNO, "sysfs"), &a0), EACCES),
		/* conditional ALLOW: the rest falls to the (counted) default */
		with_arg(RULE(ALLOW, "getpriority"), &a0),
		/* two errnos for one syscall: stays ERRNO */
		errno_rule(RULE(ERRNO, "acct"), EIO),
		errno_rule(with_arg(RULE(ERRNO, "acct"), &a0), EBUSY),
		/* a large errno (libseccomp refuses more than MAX_ERRNO) */
		errno_rule(RULE(ERRNO, "syslog"), 4000),
	};
	struct urs_seccomp p = {.default_action = URS_SCMP_ACT_ERRNO,
				.syscalls = rules,
				.n_syscalls = URS_ARRAY_SIZE(rules),
				.architectures = arches,
				.n_architectures = 3};
	struct urs_seccomp_denials *d = NULL;
	const char *why = NULL;
	unsigned n = build_and_compare(&p, &d, &why);
	assert_non_null(d);
	assert_null(why);
	assert_true(n > 100);
	assert_int_equal(urs_seccomp_denial_errno(d, AUDIT_ARCH_X86_64, __NR_ustat), ENOTTY);
	assert_int_equal(urs_seccomp_denial_errno(d, AUDIT_ARCH_X86_64, __NR_syslog), 4000);
	assert_int_equal(urs_seccomp_denial_errno(d, AUDIT_ARCH_X86_64, __NR_mount), EPERM);
	free(d);
}

static void test_allow_default(void **state)
{
	(void) state;
	struct urs_scmp_arg a0 = {.index = 0, .value = 5, .op = URS_SCMP_CMP_EQ};
	struct urs_scmp_rule rules[] = {
		errno_rule(RULE(ERRNO, "ustat"), ENOTTY),
		errno_rule(with_arg(RULE(ERRNO, "sysfs"), &a0), EACCES),
		RULE(ERRNO, "acct"),
		RULE(KILL, "syslog"),
	};
	struct urs_seccomp p = {.default_action = URS_SCMP_ACT_ALLOW,
				.syscalls = rules,
				.n_syscalls = URS_ARRAY_SIZE(rules)};
	struct urs_seccomp_denials *d = NULL;
	const char *why = NULL;
	unsigned n = build_and_compare(&p, &d, &why);
	assert_non_null(d);
	assert_int_equal(d->converted, 3);
	assert_true(n > 0);
	assert_int_equal(urs_seccomp_denial_errno(d, AUDIT_ARCH_X86_64, __NR_sysfs), EACCES);
	assert_int_equal(urs_seccomp_denial_errno(d, AUDIT_ARCH_X86_64, __NR_acct), EPERM);
	free(d);
}

static void test_not_counted(void **state)
{
	(void) state;
	struct urs_seccomp_denials *d = NULL;
	const char *why = NULL;
	/* NOTIFY rules: the listener is the agent's */
	struct urs_scmp_rule r1[] = {RULE(NOTIFY, "mkdir"), RULE(ERRNO, "acct")};
	struct urs_seccomp p1 = {
		.default_action = URS_SCMP_ACT_ALLOW, .syscalls = r1, .n_syscalls = 2};
	build_and_compare(&p1, &d, &why);
	assert_null(d);
	assert_non_null(why);
	/* nothing to count */
	struct urs_scmp_rule r2[] = {RULE(KILL, "acct")};
	struct urs_seccomp p2 = {
		.default_action = URS_SCMP_ACT_ALLOW, .syscalls = r2, .n_syscalls = 1};
	why = NULL;
	build_and_compare(&p2, &d, &why);
	assert_null(d);
	assert_non_null(why);
	/* an init syscall (sendmsg) reachable by the ERRNO default through
	 * conditional rules only: cannot be kept out of the notifier */
	struct urs_scmp_arg a0 = {.index = 0, .value = 5, .op = URS_SCMP_CMP_EQ};
	struct urs_scmp_rule r3[] = {with_arg(RULE(ALLOW, "sendmsg"), &a0)};
	struct urs_seccomp p3 = {
		.default_action = URS_SCMP_ACT_ERRNO, .syscalls = r3, .n_syscalls = 1};
	why = NULL;
	build_and_compare(&p3, &d, &why);
	assert_null(d);
	assert_non_null(why);
}

/* Init syscalls stay ERRNO: denied ones never notify. */
static void test_init_syscalls_not_notified(void **state)
{
	(void) state;
	struct urs_scmp_rule rules[] = {RULE(ALLOW, "read", "write"), RULE(ERRNO, "chdir")};
	struct urs_seccomp p = {.default_action = URS_SCMP_ACT_ERRNO,
				.syscalls = rules,
				.n_syscalls = URS_ARRAY_SIZE(rules)};
	struct urs_seccomp_denials *d = NULL;
	const char *why = NULL;
	struct urs_err err = {{0}};
	scmp_filter_ctx b = NULL;
	struct urs_bpf pb;
	struct urs_seccomp_opts o = {.count = &d, .why = &why};
	assert_int_equal(urs_seccomp_build_opts(&p, &o, &b, &err), 0);
	assert_int_equal(urs_seccomp_compile(b, &pb, &err), 0);
	assert_non_null(d);
	static const int init_nrs[] = {__NR_chdir,	__NR_sendmsg, __NR_sendto,
				       __NR_exit_group, __NR_capset,  __NR_close};
	for (size_t i = 0; i < URS_ARRAY_SIZE(init_nrs); i++) {
		struct seccomp_data sd = {.nr = init_nrs[i], .arch = AUDIT_ARCH_X86_64};
		assert_int_equal(run_bpf(pb.prog.filter, pb.prog.len, &sd),
				 SECCOMP_RET_ERRNO | EPERM);
	}
	struct seccomp_data sd = {.nr = __NR_acct, .arch = AUDIT_ARCH_X86_64};
	assert_int_equal(run_bpf(pb.prog.filter, pb.prog.len, &sd), SECCOMP_RET_USER_NOTIF);
	seccomp_release(b);
	urs_bpf_release(&pb);
	free(d);
}

/* ---- for real: listener, answers, a task that goes away ---- */

/* The child: load @bpf with a listener, pass it over @sock, then call
 * @nr @n times and report the errnos back over @sock as two ints. */
static void child(int sock, struct urs_bpf *bpf, long nr, int n)
{
	struct urs_err err = {{0}};
	int listener = -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    urs_bpf_load_notify_hook(bpf, &listener, &err) < 0)
		_exit(10);
	char c = 'L';
	if (urs_send_fd(sock, &c, 1, listener) < 0)
		_exit(11);
	close(listener);
	int res[2] = {0, 0}; /* calls that failed with the expected errno, others */
	for (int i = 0; i < n; i++) {
		errno = 0;
		long r = syscall(nr);
		res[r < 0 && errno == ENOTTY ? 0 : 1]++;
	}
	if (write(sock, res, sizeof(res)) != sizeof(res))
		_exit(12);
	_exit(0);
}

static void test_live_answers(void **state)
{
	(void) state;
	struct urs_scmp_rule rules[] = {errno_rule(RULE(ERRNO, "ustat"), ENOTTY)};
	struct urs_seccomp p = {
		.default_action = URS_SCMP_ACT_ALLOW, .syscalls = rules, .n_syscalls = 1};
	struct urs_seccomp_denials *d = NULL;
	struct urs_err err = {{0}};
	scmp_filter_ctx ctx = NULL;
	struct urs_bpf bpf;
	struct urs_seccomp_opts o = {.count = &d};
	assert_int_equal(urs_seccomp_build_opts(&p, &o, &ctx, &err), 0);
	assert_int_equal(urs_seccomp_compile(ctx, &bpf, &err), 0);
	assert_non_null(d);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	const int n = 50;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		child(sv[1], &bpf, __NR_ustat, n);
	}
	close(sv[1]);
	char c;
	int listener = -1;
	assert_true(urs_recv_fd(sv[0], &c, 1, &listener) == 1);
	assert_true(listener >= 0);
	assert_int_equal(urs_seccomp_notify_setup(listener), 0);
	int answered = 0;
	while (answered < n) {
		struct pollfd pf = {.fd = listener, .events = POLLIN};
		assert_int_equal(poll(&pf, 1, 10000), 1);
		uint32_t arch;
		int32_t nr;
		assert_int_equal(urs_seccomp_notify_answer(listener, d, &arch, &nr), 0);
		assert_int_equal(nr, __NR_ustat);
		answered++;
	}
	int res[2];
	assert_int_equal(read(sv[0], res, sizeof(res)), sizeof(res));
	assert_int_equal(res[0], n);
	assert_int_equal(res[1], 0);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* no task left on the filter: the listener hangs up */
	struct pollfd pf = {.fd = listener, .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 10000), 1);
	assert_true(pf.revents & POLLHUP);

	/* a task killed while its notification waits: answering says ENOENT */
	close(listener);
	close(sv[0]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		child(sv[1], &bpf, __NR_ustat, 1);
	}
	close(sv[1]);
	listener = -1;
	assert_true(urs_recv_fd(sv[0], &c, 1, &listener) == 1);
	struct pollfd pw = {.fd = listener, .events = POLLIN};
	assert_int_equal(poll(&pw, 1, 10000), 1); /* the child waits in ustat */
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	uint32_t arch;
	int32_t nr;
	int r = urs_seccomp_notify_answer(listener, d, &arch, &nr);
	assert_int_equal(r, -ENOENT);
	close(listener);
	close(sv[0]);
	seccomp_release(ctx);
	urs_bpf_release(&bpf);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_programs_equivalent),
		cmocka_unit_test(test_mixed_errnos),
		cmocka_unit_test(test_allow_default),
		cmocka_unit_test(test_not_counted),
		cmocka_unit_test(test_init_syscalls_not_notified),
		cmocka_unit_test(test_live_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
