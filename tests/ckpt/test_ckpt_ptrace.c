/*
 * tests/ckpt/test_ckpt_ptrace.c — unit tests for ckpt/ptrace.c against a
 * real child: seize + interrupt, find a `syscall` instruction in its vdso,
 * inject syscalls (getpid/getppid answer from the child's point of view,
 * errors come back as -errno, an injected mmap is usable through
 * /proc/PID/mem), FPU state round trip, and detach leaves the child running
 * exactly where it was (it keeps answering on its pipe afterwards). One-stop
 * injection (trap_after: `syscall; int3` written into the child, as the
 * restorer's blob) gives the same answers, mixes with two-stop injection,
 * and leaves the child as it was. Single-step injection (step, the
 * dumper's one-stop mode) too, with every signal blocked: the mask is
 * blocked again after each stop, nothing stays queued, and a SIGTRAP
 * someone sent the stopped child is reported (trap_foreign) with its
 * siginfo rather than lost.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/ptrace.h"

static pid_t child;
static int to_child[2], from_child[2];

/* The child echoes every byte it reads, incremented. */
static int setup(void **state)
{
	(void) state;
	if (pipe(to_child) || pipe(from_child))
		return -1;
	child = fork();
	if (child < 0)
		return -1;
	if (child == 0) {
		char b;
		while (read(to_child[0], &b, 1) == 1) {
			b++;
			if (write(from_child[1], &b, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	return 0;
}

static int teardown(void **state)
{
	(void) state;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}

static char ping(char c)
{
	char r = 0;
	assert_int_equal(write(to_child[1], &c, 1), 1);
	assert_int_equal(read(from_child[0], &r, 1), 1);
	return r;
}

static void find_vdso(pid_t pid, uint64_t *s, uint64_t *e)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	*s = *e = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &a, &b) == 2) {
			*s = a;
			*e = b;
		}
	}
	fclose(f);
	assert_true(*e > *s);
}

/* Seize the child and point injections at its vdso's `syscall`. */
static void seize_child(struct ckpt_tracee *t)
{
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_seize(t, child, 0, &err), 0);
	uint64_t s, e;
	find_vdso(child, &s, &e);
	assert_int_equal(ckpt_find_syscall_insn(child, s, e, &t->syscall_ip), 0);
}

static void test_inject(void **state)
{
	(void) state;
	assert_int_equal(ping('a'), 'b');
	struct ckpt_tracee t;
	seize_child(&t);
	long ret;
	assert_int_equal(ckpt_inject(&t, SYS_getpid, 0, 0, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, child);
	assert_int_equal(ckpt_inject(&t, SYS_getppid, 0, 0, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, getpid());
	assert_int_equal(ckpt_inject(&t, 100000, 0, 0, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, -ENOSYS);
	assert_int_equal(ckpt_inject(&t, SYS_close, 9999, 0, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, -EBADF);
	/* an injected mmap, written and read back through /proc/PID/mem */
	assert_int_equal(ckpt_inject(&t, SYS_mmap, 0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
				     (uint64_t) -1, 0, &ret),
			 0);
	assert_true(ret > 0);
	int mfd = ckpt_open_mem(child);
	assert_true(mfd >= 0);
	/* read-only mapping: /proc/PID/mem writes with FOLL_FORCE (what restore relies on) */
	assert_int_equal(ckpt_mem_write(mfd, (uint64_t) ret, "hello", 5), 0);
	char buf[6] = {0};
	assert_int_equal(ckpt_mem_read(mfd, (uint64_t) ret, buf, 5), 0);
	assert_string_equal(buf, "hello");
	close(mfd);
	long r2;
	assert_int_equal(ckpt_inject(&t, SYS_munmap, (uint64_t) ret, 4096, 0, 0, 0, 0, &r2), 0);
	assert_int_equal(r2, 0);
	/* FPU state: read, write back unchanged */
	uint8_t x[16384];
	uint32_t len = sizeof(x);
	assert_int_equal(ckpt_get_xsave(child, x, &len), 0);
	assert_true(len >= 576);
	assert_int_equal(ckpt_set_xsave(child, x, len), 0);
	assert_int_equal(ckpt_detach(&t), 0);
	/* the child resumes its interrupted read() as if nothing happened */
	assert_int_equal(ping('x'), 'y');
	assert_int_equal(ping('1'), '2');
}

static void test_inject_trap(void **state)
{
	(void) state;
	assert_int_equal(ping('c'), 'd');
	struct ckpt_tracee t;
	seize_child(&t);
	uint64_t vdso_ip = t.syscall_ip;
	long blob, ret;
	assert_int_equal(ckpt_inject(&t, SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t) -1, 0, &blob),
			 0);
	assert_true(blob > 0);
	int mfd = ckpt_open_mem(child);
	assert_true(mfd >= 0);
	assert_int_equal(ckpt_mem_write(mfd, (uint64_t) blob, "\x0f\x05\xcc", 3), 0);
	close(mfd);
	assert_int_equal(ckpt_inject(&t, SYS_mprotect, (uint64_t) blob, 4096, PROT_READ | PROT_EXEC,
				     0, 0, 0, &ret),
			 0);
	assert_int_equal(ret, 0);
	t.syscall_ip = (uint64_t) blob;
	t.trap_after = 1;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ckpt_inject(&t, SYS_getpid, 0, 0, 0, 0, 0, 0, &ret), 0);
		assert_int_equal(ret, child);
		assert_int_equal(ckpt_inject(&t, SYS_getppid, 0, 0, 0, 0, 0, 0, &ret), 0);
		assert_int_equal(ret, getpid());
	}
	assert_int_equal(ckpt_inject(&t, 100000, 0, 0, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, -ENOSYS);
	assert_int_equal(t.in_syscall_stop, 0);
	/* the int3 stop: its SIGTRAP is never delivered (the child would die of it) */
	t.trap_after = 0;
	assert_int_equal(ckpt_inject(&t, SYS_getpid, 0, 0, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, child);
	/* as the restorer ends: the page with the int3 goes in a two-stop injection */
	assert_int_equal(ckpt_inject(&t, SYS_munmap, (uint64_t) blob, 4096, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, 0);
	t.syscall_ip = vdso_ip;
	assert_int_equal(ckpt_detach(&t), 0);
	assert_int_equal(ping('p'), 'q');
}

static uint64_t sigmask_of(pid_t pid)
{
	uint64_t m = 0;
	assert_true(ptrace(PTRACE_GETSIGMASK, pid, (void *) 8, &m) == 0);
	return m;
}

static void test_inject_step(void **state)
{
	(void) state;
	assert_int_equal(ping('e'), 'f');
	struct ckpt_tracee t;
	seize_child(&t);
	uint64_t old = sigmask_of(child), all = ~0ull;
	assert_true(ptrace(PTRACE_SETSIGMASK, child, (void *) 8, &all) == 0);
	t.step = 1;
	long ret;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ckpt_inject(&t, SYS_getpid, 0, 0, 0, 0, 0, 0, &ret), 0);
		assert_int_equal(ret, child);
		assert_int_equal(t.sig_stop, 1);
		/* the forced SIGTRAP unblocked SIGTRAP; ckpt_inject blocked it again */
		assert_true(sigmask_of(child) & (1ull << (SIGTRAP - 1)));
	}
	assert_int_equal(ckpt_inject(&t, SYS_close, 9999, 0, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, -EBADF);
	/* mixes with two-stop injection */
	t.step = 0;
	assert_int_equal(ckpt_inject(&t, SYS_getppid, 0, 0, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, getpid());
	assert_int_equal(t.sig_stop, 0);
	t.step = 1;
	/* a SIGTRAP sent to the stopped thread merges into the next step's */
	assert_int_equal(t.trap_foreign, 0);
	assert_int_equal(syscall(SYS_tgkill, child, child, SIGTRAP), 0);
	assert_int_equal(ckpt_inject(&t, SYS_getpid, 0, 0, 0, 0, 0, 0, &ret), 0);
	assert_int_equal(ret, child);
	assert_int_equal(t.trap_foreign, 1);
	siginfo_t si;
	memcpy(&si, t.trap_info, sizeof(si));
	assert_int_equal(si.si_signo, SIGTRAP);
	assert_int_equal(si.si_code, SI_TKILL);
	assert_int_equal(si.si_pid, getpid());
	/* nothing queued: neither the step's SIGTRAP nor the merged one */
	struct __ptrace_peeksiginfo_args a = {.off = 0, .flags = 0, .nr = 1};
	uint8_t buf[128];
	assert_int_equal(ptrace(PTRACE_PEEKSIGINFO, child, &a, buf), 0);
	assert_true(ptrace(PTRACE_SETSIGMASK, child, (void *) 8, &old) == 0);
	t.step = 0;
	assert_int_equal(ckpt_detach(&t), 0);
	assert_int_equal(ping('r'), 's');
}

static void test_seize_errors(void **state)
{
	(void) state;
	struct ckpt_tracee t;
	struct urs_err err = {{0}};
	/* a pid that cannot exist (beyond pid_max) */
	assert_int_not_equal(ckpt_seize(&t, 0x7ffffff0, 0, &err), 0);
	assert_non_null(strstr(err.msg, "PTRACE_SEIZE"));
	assert_int_equal(ckpt_find_syscall_insn(child, 0x1000, 0x1000, &t.syscall_ip), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inject),
		cmocka_unit_test(test_inject_trap),
		cmocka_unit_test(test_inject_step),
		cmocka_unit_test(test_seize_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
