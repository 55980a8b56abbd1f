/*
 * tests/ckpt/mthreads.c — a multi-threaded workload the checkpoint saves
 * (static): main and three threads. Each thread bumps its own counter every
 * 2 ms and checks, every time, what is its own and must survive a restore:
 * a __thread value (fs_base), a double carried in %xmm8 across its sleep
 * (FPU state), its alternate signal stack (thread 2 has one, the others
 * none), its clear_child_tid (prctl(PR_GET_TID_ADDRESS), set by
 * pthread_create), its robust list head, its rseq registration (if glibc
 * made one: registering it again must fail), and its blocked mask
 * (thread 1 blocks SIGUSR1 and has one pending, sent to itself). Thread 3
 * forks a child process that sleeps (a child of a thread other than main).
 * Every 10 ms main appends to OUT:
 *   N c1 c2 c3 OK      or   N c1 c2 c3 FAIL:<thread>:<what>
 * N counts from 1. Threads are named w1..w3.
 *   mthreads OUT
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern __attribute__((weak)) const unsigned int __rseq_size;
extern __attribute__((weak)) const ptrdiff_t __rseq_offset;

static volatile uint64_t count[4];
static volatile const char *fail_what;
static volatile int fail_thread, started;
static __thread uint64_t mine;

/* nanosleep(2 ms) as a raw syscall, with x live in xmm8 across it */
static double sleep_with_xmm(double x)
{
	struct timespec ts = {0, 2 * 1000 * 1000};
	register double v __asm__("xmm8") = x;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret), "+x"(v)
			 : "0"((long) SYS_nanosleep), "D"(&ts), "S"(0L)
			 : "rcx", "r11", "memory");
	(void) ret;
	return v;
}

static void fail(int n, const char *what)
{
	if (!fail_what) {
		fail_thread = n;
		fail_what = what;
	}
}

static void *worker(void *arg)
{
	int n = (int) (intptr_t) arg;
	char name[8];
	snprintf(name, sizeof(name), "w%d", n);
	prctl(PR_SET_NAME, name);
	mine = 1000u * (uint64_t) n;
	static uint8_t altstack[3][65536];
	if (n == 2) {
		stack_t ss = {.ss_sp = altstack[n - 1], .ss_size = sizeof(altstack[0])};
		sigaltstack(&ss, NULL);
	}
	if (n == 1) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &s, NULL);
		syscall(SYS_tgkill, getpid(), (pid_t) syscall(SYS_gettid), SIGUSR1);
	}
	int *ctid0 = NULL;
	prctl(PR_GET_TID_ADDRESS, &ctid0);
	void *rh0 = NULL;
	size_t rl0 = 0;
	syscall(SYS_get_robust_list, 0, &rh0, &rl0);
	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	volatile double expect = 0.25 * n; /* in memory: not in a register */
	double x = expect;
	for (;;) {
		count[n]++;
		x = sleep_with_xmm(x);
		if (x != expect)
			fail(n, "xmm8");
		if (mine != 1000u * (uint64_t) n)
			fail(n, "tls");
		stack_t ss;
		sigaltstack(NULL, &ss);
		if ((n == 2) != !(ss.ss_flags & SS_DISABLE) ||
		    (n == 2 && ss.ss_sp != altstack[n - 1]))
			fail(n, "sigaltstack");
		int *ctid = NULL;
		prctl(PR_GET_TID_ADDRESS, &ctid);
		if (ctid != ctid0 || !ctid)
			fail(n, "clear_child_tid");
		void *rh = NULL;
		size_t rl = 0;
		syscall(SYS_get_robust_list, 0, &rh, &rl);
		if (rh != rh0 || rl != rl0)
			fail(n, "robust_list");
		if (&__rseq_size && __rseq_size) {
			void *area = (char *) __builtin_thread_pointer() + __rseq_offset;
			long r = syscall(SYS_rseq, area, __rseq_size < 32 ? 32 : __rseq_size, 0,
					 0x53053053);
			if (r == 0) /* it was not registered any more */
				fail(n, "rseq");
		}
		sigset_t cur;
		pthread_sigmask(SIG_BLOCK, NULL, &cur);
		if (sigismember(&cur, SIGUSR1) != (n == 1))
			fail(n, "sigmask");
	}
	return NULL;
}

static void *forker(void *arg)
{
	pid_t kid = fork();
	if (kid == 0) {
		for (;;)
			pause();
	}
	return worker(arg);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT\n", argv[0]);
		return 2;
	}
	syscall(SYS_close_range, 3, ~0u, 0);
	int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0)
		return 1;
	pthread_t t[3];
	for (int n = 1; n <= 3; n++)
		if (pthread_create(&t[n - 1], NULL, n == 3 ? forker : worker,
				   (void *) (intptr_t) n))
			return 1;
	while (started < 3)
		usleep(1000);
	for (uint64_t n = 1;; n++) {
		char line[256], st[64] = "OK";
		if (fail_what)
			snprintf(st, sizeof(st), "FAIL:%d:%s", fail_thread,
				 (const char *) fail_what);
		int len =
			snprintf(line, sizeof(line), "%llu %llu %llu %llu %s\n",
				 (unsigned long long) n, (unsigned long long) count[1],
				 (unsigned long long) count[2], (unsigned long long) count[3], st);
		if (write(out, line, (size_t) len) != len)
			return 1;
		usleep(10 * 1000);
	}
}
