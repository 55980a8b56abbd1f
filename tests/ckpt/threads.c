/*
 * tests/ckpt/threads.c — a multi-threaded workload that the checkpointer must
 * refuse: a second thread spins on sleeps while main writes an incrementing
 * line to stdout every 10 ms (so the test can see it keeps running).
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void *idle(void *arg)
{
	(void) arg;
	for (;;)
		pause();
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, idle, NULL))
		return 1;
	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned long n = 1;; n++) {
		printf("%lu\n", n);
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
}
