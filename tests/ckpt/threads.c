/*
 * tests/ckpt/threads.c — a multi-threaded workload that the checkpointer must
 * refuse: its second thread installs a seccomp filter of its own (allow
 * everything, with no_new_privs), so its threads do not share their seccomp
 * state — something a restore cannot rebuild as one process. That thread
 * then sleeps while main writes an incrementing line to stdout every 10 ms
 * (so the test can see it keeps running). Supported multi-threaded
 * processes are tests/ckpt/mthreads.c.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int ready;

static void *idle(void *arg)
{
	(void) arg;
	struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog prog = {1, f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		_exit(3);
	ready = 1;
	for (;;)
		pause();
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, idle, NULL))
		return 1;
	while (!ready)
		nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned long n = 1;; n++) {
		printf("%lu\n", n);
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
}
