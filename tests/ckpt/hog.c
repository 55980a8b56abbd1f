/*
 * tests/ckpt/hog.c — a workload for the checkpoint tests and the
 * remote-image benchmarks (bench/remote/run, bench/remote/pause):
 *   hog MIB [THREADS] [DIR] [MARKER]
 * fills MIB MiB with a pattern no compressor or zero-page skip can shrink
 * (xorshift64 of each word's index), keeps MARKER-42 in its heap (built
 * here, so it is in no file: tests look for it in stored images), writes
 * DIR/ready-0 (default /tmp), then each thread rewrites one word of a page
 * of its share and DIR/tick-T with its count, in place, once a
 * millisecond: the rate the pause benchmark specifies (the host watches
 * those files for stalls); it is the workload's pace, no test waits on it.
 * SIGUSR1 makes every thread check its whole share — the pattern, and in
 * each page's first word the last count it wrote there — and write
 * DIR/check-T: "ok" or the first bad word. SIGUSR2 is a request: thread 0
 * reads a hot region (every 4th page of the 16 MiB at three quarters of
 * the memory: the working set bench/remote/ws records) and writes
 * DIR/answer-0, "ok" or the first bad page. Static, for a busybox rootfs.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u

static uint8_t *mem;
static size_t pages_per;
static const char *dir = "/tmp";
static size_t npages;
static volatile sig_atomic_t check_req, answer_req;

static uint64_t pat(uint64_t i)
{
	uint64_t x = i * 0x9e3779b97f4a7c15ull + 1;
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	return x;
}

static void fill(uint8_t *p, size_t page)
{
	uint64_t *w = (uint64_t *) p;
	for (size_t k = 0; k < PAGE / 8; k++)
		w[k] = pat(page * (PAGE / 8) + k);
}

static void put(const char *name, int t, const char *text)
{
	char path[256], tmp[300];
	snprintf(path, sizeof(path), "%s/%s-%d", dir, name, t);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, strlen(text)) < 0) {
	}
	close(fd);
	rename(tmp, path);
}

/* every word of the share as the pattern says, and each page's word 0 the
 * last count written to it (value v goes to page (v - 1) % pages_per of
 * the share): a stale page anywhere in a restored image shows */
static void check(int t, uint64_t n)
{
	char res[96] = "ok\n";
	for (size_t j = 0; j < pages_per; j++) {
		size_t p = (size_t) t * pages_per + j;
		uint64_t *w = (uint64_t *) (mem + p * PAGE);
		int64_t d = n ? ((int64_t) (n - 1) - (int64_t) j) % (int64_t) pages_per : -1;
		if (d < 0 && n)
			d += (int64_t) pages_per;
		int64_t v = n ? (int64_t) n - d : 0;
		uint64_t want0 = v >= 1 ? (uint64_t) v : pat(p * (PAGE / 8));
		for (size_t k = 0; k < PAGE / 8; k++)
			if (w[k] != (k ? pat(p * (PAGE / 8) + k) : want0)) {
				snprintf(res, sizeof(res), "bad page %zu word %zu: %llu\n", p, k,
					 (unsigned long long) w[k]);
				put("check", t, res);
				return;
			}
	}
	put("check", t, res);
}

/* the hot region: its pages' pattern words (word 0 is the ticks') */
static void answer(void)
{
	size_t from = npages / 4 * 3, to = from + 16 * 256 < npages ? from + 16 * 256 : npages;
	char res[96] = "ok\n";
	for (size_t p = from; p < to; p += 4) {
		const uint64_t *w = (const uint64_t *) (mem + p * PAGE);
		if (w[1] != pat(p * (PAGE / 8) + 1)) {
			snprintf(res, sizeof(res), "bad page %zu\n", p);
			break;
		}
	}
	put("answer", 0, res);
}

static void *run(void *arg)
{
	int t = (int) (intptr_t) arg;
	uint64_t n = 0, seen = 0;
	char buf[32], path[256];
	struct timespec ms = {0, 1000000};
	/* one fd kept open, rewritten in place: a checkpoint at any moment
	 * finds it at its path */
	snprintf(path, sizeof(path), "%s/tick-%d", dir, t);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (;;) {
		size_t p = (size_t) t * pages_per + (size_t) (n % pages_per);
		*(volatile uint64_t *) (mem + p * PAGE) = ++n;
		int len = snprintf(buf, sizeof(buf), "%20llu\n", (unsigned long long) n);
		if (pwrite(fd, buf, (size_t) len, 0) < 0) {
		}
		if (check_req != (sig_atomic_t) seen) {
			seen = (uint64_t) check_req;
			check(t, n);
		}
		if (!t && answer_req) {
			answer_req = 0;
			answer();
		}
		nanosleep(&ms, NULL);
	}
	return NULL;
}

static void on_usr1(int s)
{
	(void) s;
	check_req++;
}

static void on_usr2(int s)
{
	(void) s;
	answer_req = 1;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	if (argc > 3)
		dir = argv[3];
	static char *volatile marker; /* kept reachable: never optimized away */
	if (argc > 4 && (marker = malloc(strlen(argv[4]) + 8)))
		sprintf(marker, "%s-%d", argv[4], 6 * 7);
	if (threads < 1)
		threads = 1;
	size_t pages = npages = mib * 256;
	pages_per = pages / (size_t) threads;
	mem = aligned_alloc(PAGE, pages * PAGE);
	if (!mem || !pages_per)
		return 1;
	for (size_t p = 0; p < pages; p++)
		fill(mem + p * PAGE, p);
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	pthread_t th;
	for (int t = 1; t < threads; t++)
		pthread_create(&th, NULL, run, (void *) (intptr_t) t);
	put("ready", 0, "ready\n");
	run(0);
}
