/*
 * tests/ckpt/counter.c — the checkpoint test workload (static): every 10 ms it
 * writes "N F\n" to stdout and to the file named by argv[1], where N counts
 * from 1 and F = N / 2 is carried across each sleep in %xmm8, so a restore
 * that loses the FPU/SSE state shows up as a wrong F, and one that loses
 * memory or file offsets shows up as a reset, a gap or a duplicate N.
 * With a second argument "seccomp" it first sets no_new_privs and installs a
 * seccomp filter that kills the process on sigaltstack(2) — a syscall the
 * checkpointer injects — so the test sees that filters are suspended while
 * dumping and come back after a restore. It runs with transparent huge
 * pages off (PR_SET_THP_DISABLE), which a restore must give back: the
 * restorer's own setting is the other one.
 */
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* nanosleep(10 ms) as a raw syscall, with x live in xmm8 across it */
static double sleep_with_xmm(double x)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	register double v __asm__("xmm8") = x;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret), "+x"(v)
			 : "0"((long) SYS_nanosleep), "D"(&ts), "S"(0L)
			 : "rcx", "r11", "memory");
	(void) ret; /* -EINTR after a restore is fine: we just go on */
	return v;
}

static int install_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sigaltstack, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s FILE [seccomp]\n", argv[0]);
		return 2;
	}
	if (argc == 3 && install_filter() < 0) {
		perror("seccomp");
		return 1;
	}
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0) {
		perror("PR_SET_THP_DISABLE");
		return 1;
	}
	/* like a sandbox's init, start from a clean fd table (no inherited pipes) */
	syscall(SYS_close_range, 3, ~0u, 0);
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	double half = 0;
	for (unsigned long n = 1;; n++) {
		half += 0.5;
		char line[64];
		int len = snprintf(line, sizeof(line), "%lu %.1f\n", n, half);
		if (write(1, line, (size_t) len) != len || write(fd, line, (size_t) len) != len)
			return 1;
		half = sleep_with_xmm(half);
	}
}
