/*
 * bench/remote/watch.c — the longest stall of a workload seen from the
 * host: `watch FILE...` re-reads each file (tests/ckpt/hog.c's tick-T,
 * rewritten in place every millisecond) every 100 us and, on SIGTERM or
 * SIGINT, prints the longest time any file went without changing, in ms,
 * and how many changes it saw. With WATCH_LOG set, each stall over 5 ms
 * goes to stderr with the wall-clock time it ended (to line up with
 * URSA_CKPT_TRACE's phases). Clocks inside a frozen sandbox stop with
 * it; this one does not.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXF 16

static volatile sig_atomic_t done;

static void on_term(int s)
{
	(void) s;
	done = 1;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec * 1e3 + (double) t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int n = argc - 1 < MAXF ? argc - 1 : MAXF, fd[MAXF];
	char last[MAXF][32];
	double since[MAXF], worst = 0;
	unsigned long changes = 0;
	int verbose = getenv("WATCH_LOG") != NULL;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	for (int i = 0; i < n; i++) {
		fd[i] = open(argv[i + 1], O_RDONLY);
		if (fd[i] < 0) {
			perror(argv[i + 1]);
			return 1;
		}
		memset(last[i], 0, sizeof(last[i]));
		since[i] = now_ms();
	}
	struct timespec nap = {0, 100000};
	while (!done) {
		double t = now_ms();
		for (int i = 0; i < n; i++) {
			char buf[32] = {0};
			if (pread(fd[i], buf, sizeof(buf) - 1, 0) <= 0 || !memcmp(buf, last[i], 32))
				continue;
			memcpy(last[i], buf, 32);
			if (t - since[i] > worst && changes >= (unsigned long) n)
				worst = t - since[i];
			if (verbose && t - since[i] > 5) {
				struct timespec rt;
				clock_gettime(CLOCK_REALTIME, &rt);
				fprintf(stderr, "stall %.1f ms on %d ending at %ld.%06ld\n",
					t - since[i], i, (long) rt.tv_sec, rt.tv_nsec / 1000);
			}
			since[i] = t;
			changes++;
		}
		nanosleep(&nap, NULL);
	}
	double t = now_ms();
	for (int i = 0; i < n; i++)
		if (t - since[i] > worst)
			worst = t - since[i];
	printf("%.1f %lu\n", worst, changes);
	return 0;
}
