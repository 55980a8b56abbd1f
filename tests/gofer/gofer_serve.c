/*
 * tests/gofer/gofer_serve.c — a standalone gofer for benchmarks and manual
 * testing (not the product: the product's gofer lives in the supervisor).
 *
 *   gofer_serve [--ro] [--no-passthrough] [--no-readdirplus] [--no-xattr] [--sync-rw]
 *               [--trace] SRC MNT
 *       mount a gofer volume of SRC on MNT (in the caller's mount namespace),
 *       served on a gofer thread as in the supervisor (actors/gofer/thread.c),
 *       print "ready" and serve until MNT is unmounted; then print the
 *       gofer thread's placement counters, the gofer's stats (with FUSE over
 *       io_uring: the requests through it) and
 *       the process's CPU time (user, sys seconds).
 *   gofer_serve meta DIR N
 *       metadata benchmark: create, stat and unlink N files in DIR; prints
 *       "create X/s stat Y/s unlink Z/s".
 */
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "actors/gofer/gofer.h"
#include "actors/gofer/thread.h"
#include "host/fuse_mount.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int meta(const char *dir, int n)
{
	char p[4096];
	double t0 = now();
	for (int k = 0; k < n; k++) {
		snprintf(p, sizeof(p), "%s/f%06d", dir, k);
		int fd = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0) {
			perror(p);
			return 1;
		}
		close(fd);
	}
	double t1 = now();
	struct stat st;
	for (int k = 0; k < n; k++) {
		snprintf(p, sizeof(p), "%s/f%06d", dir, k);
		if (stat(p, &st) < 0) {
			perror(p);
			return 1;
		}
	}
	double t2 = now();
	for (int k = 0; k < n; k++) {
		snprintf(p, sizeof(p), "%s/f%06d", dir, k);
		if (unlink(p) < 0) {
			perror(p);
			return 1;
		}
	}
	double t3 = now();
	printf("create %.0f/s stat %.0f/s unlink %.0f/s\n", n / (t1 - t0), n / (t2 - t1),
	       n / (t3 - t2));
	return 0;
}

static struct urs_gofer *g;

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "meta"))
		return meta(argv[2], atoi(argv[3]));
	struct urs_gofer_opts o = {0};
	int i = 1;
	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--ro"))
			o.rdonly = true;
		else if (!strcmp(argv[i], "--no-passthrough"))
			o.no_passthrough = true;
		else if (!strcmp(argv[i], "--sync-rw"))
			o.sync_rw = true;
		else if (!strcmp(argv[i], "--no-xattr"))
			o.no_xattr = true;
		else if (!strcmp(argv[i], "--no-readdirplus"))
			o.no_readdirplus = true;
		else if (!strcmp(argv[i], "--trace"))
			o.trace = true;
		else {
			fprintf(stderr, "unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: gofer_serve [--ro] [--no-passthrough] "
				"[--no-readdirplus] [--no-xattr] [--sync-rw] "
				"[--trace] SRC MNT | "
				"gofer_serve meta DIR N\n");
		return 2;
	}
	int rfd = open(argv[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		perror(argv[i]);
		return 1;
	}
	struct urs_fuse_mount_opts mo = {.rdonly = o.rdonly};
	int fd = urs_fuse_mount(argv[i + 1], &mo);
	if (fd < 0) {
		fprintf(stderr, "mount %s: %s\n", argv[i + 1], strerror(-fd));
		return 1;
	}
	/* served as in the supervisor: on a gofer thread of its own */
	struct urs_gofer_vol v = {.fuse_fd = fd, .root_fd = rfd, .opts = o};
	struct urs_gofer_thread *gt;
	int failed;
	int r = urs_gofer_thread_start(&v, 1, &g, &gt, &failed);
	close(rfd);
	if (r < 0) {
		fprintf(stderr, "gofer: %s\n", strerror(-r));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (!urs_gofer_thread_done(gt)) {
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
	}
	struct urs_gofer_thread_stats ts;
	urs_gofer_thread_stats(gt, &ts);
	printf("colocate %s follows %llu idles %llu starved %llu rests %llu\n",
	       ts.colocate ? "yes" : "no", (unsigned long long) ts.follows,
	       (unsigned long long) ts.idles, (unsigned long long) ts.starved,
	       (unsigned long long) ts.rests);
	urs_gofer_thread_lock(gt);
	struct urs_gofer_stats st;
	urs_gofer_get_stats(g, &st);
	printf("requests %llu errors %llu passthrough %s reads %llu writes %llu grows %llu "
	       "shrinks %llu drained %llu\n",
	       (unsigned long long) st.requests, (unsigned long long) st.errors,
	       st.passthrough ? "yes" : "no", (unsigned long long) st.by_op[FUSE_READ],
	       (unsigned long long) st.by_op[FUSE_WRITE], (unsigned long long) st.grows,
	       (unsigned long long) st.shrinks, (unsigned long long) st.drained);
	{
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		printf("cpu user %.3f sys %.3f\n",
		       (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6,
		       (double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6);
	}
	if (st.uring)
		printf("uring requests %llu\n", (unsigned long long) st.uring_requests);
	printf("by opcode:");
	for (unsigned k = 0; k < 64; k++)
		if (st.by_op[k])
			printf(" %u:%llu", k, (unsigned long long) st.by_op[k]);
	printf("\n");
	urs_gofer_thread_unlock(gt);
	urs_gofer_thread_stop(gt, &g);
	return 0;
}
