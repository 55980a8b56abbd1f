/*
 * tests/integration/seccomp_probe.c — a static probe for counted seccomp
 * denials (tests/integration/seccomp_count.sh, bench/seccomp/run). It runs
 * inside a sandbox with nothing but itself in the rootfs:
 *   seccomp_probe call NR N    raw syscall(NR) N times (no arguments); prints
 *                              "nr=NR calls=N ok=K errno=E:COUNT ..."
 *   seccomp_probe time NR N    the same N times, timed: "nr=NR ns_per_call=X"
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: seccomp_probe call|time NR N\n");
		return 2;
	}
	long nr = strtol(argv[2], NULL, 10), n = strtol(argv[3], NULL, 10);
	if (argv[1][0] == 't') {
		for (long i = 0; i < n / 10 + 1; i++) /* warm up */
			syscall(nr);
		long t0 = now_ns();
		for (long i = 0; i < n; i++)
			syscall(nr);
		long dt = now_ns() - t0;
		printf("nr=%ld calls=%ld ns_per_call=%.1f\n", nr, n, (double) dt / (double) n);
		return 0;
	}
	static long by_errno[4096];
	long ok = 0;
	for (long i = 0; i < n; i++) {
		errno = 0;
		if (syscall(nr) >= 0)
			ok++;
		else if (errno > 0 && errno < 4096)
			by_errno[errno]++;
	}
	printf("nr=%ld calls=%ld ok=%ld", nr, n, ok);
	for (int e = 1; e < 4096; e++)
		if (by_errno[e])
			printf(" errno=%d:%ld", e, by_errno[e]);
	printf("\n");
	return 0;
}
