/*
 * bench/remote/hog.c — a workload for the remote-image benchmark and
 * tests: `hog MIB [THREADS] [DIR]` fills MIB MiB with a pattern no
 * compressor or zero-page skip can shrink (xorshift64 of the page's
 * index), writes DIR/ready (default /tmp), then each thread rewrites one
 * word of a page of its share every millisecond and DIR/tick-T with its
 * count (the host watches those files for stalls). SIGUSR1 makes every
 * thread check its whole share against the pattern (the rewritten word
 * excepted) and write DIR/check-T: "ok" or the first bad offset.
 * Static, no libc beyond what busybox rootfs gives.
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
static volatile sig_atomic_t check_req;

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

static void check(int t)
{
	char res[64] = "ok\n";
	for (size_t p = (size_t) t * pages_per; p < (size_t) (t + 1) * pages_per; p++) {
		uint64_t *w = (uint64_t *) (mem + p * PAGE);
		for (size_t k = 1; k < PAGE / 8; k++) /* word 0 is the one rewritten */
			if (w[k] != pat(p * (PAGE / 8) + k)) {
				snprintf(res, sizeof(res), "bad page %zu word %zu\n", p, k);
				put("check", t, res);
				return;
			}
	}
	put("check", t, res);
}

static void *run(void *arg)
{
	int t = (int) (intptr_t) arg;
	uint64_t n = 0, seen = 0;
	char buf[32];
	struct timespec ms = {0, 1000000};
	for (;;) {
		size_t p = (size_t) t * pages_per + (size_t) (n % pages_per);
		*(volatile uint64_t *) (mem + p * PAGE) = ++n;
		snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long) n);
		put("tick", t, buf);
		if (check_req != (sig_atomic_t) seen) {
			seen = (uint64_t) check_req;
			check(t);
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

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	if (argc > 3)
		dir = argv[3];
	if (threads < 1)
		threads = 1;
	size_t pages = mib * 256;
	pages_per = pages / (size_t) threads;
	mem = aligned_alloc(PAGE, pages * PAGE);
	if (!mem || !pages_per)
		return 1;
	for (size_t p = 0; p < pages; p++)
		fill(mem + p * PAGE, p);
	signal(SIGUSR1, on_usr1);
	pthread_t th;
	for (int t = 1; t < threads; t++)
		pthread_create(&th, NULL, run, (void *) (intptr_t) t);
	put("ready", 0, "ready\n");
	run(0);
}
