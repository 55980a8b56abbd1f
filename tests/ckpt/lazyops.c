/*
 * tests/ckpt/lazyops.c — a workload for the lazy restore's address-space
 * events (tests/ckpt/lazy.sh): what a restored process does to its memory
 * while the pager is still bringing it in must not give it a wrong page.
 *   lazyops MIB DIR
 * maps five regions (xorshift pattern, distinct per region), writes
 * DIR/ready, then on SIGUSR1, at once:
 *   fork   a child checks region A (MIB MiB) as it was, exits 0 or 1;
 *   DONTNEED  region C must then read as zeros;
 *   munmap + a new mapping at region B: zeros;
 *   mremap region D elsewhere: its pattern at the new address;
 *   region A checked in the parent; region E written, then checked;
 * and writes DIR/result: "ok missing=N" (N: pages of A not yet in at the
 * fork, from mincore: how lazy the run was) or the first difference.
 */
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE  4096ul
#define SMALL (4ul << 20)

static uint64_t pat(uint64_t seed, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	return x;
}

static uint64_t *region(size_t len, uint64_t seed)
{
	uint64_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(3);
	for (size_t k = 0; k < len / 8; k++)
		p[k] = pat(seed, k);
	return p;
}

/* "" or the first word that differs */
static const char *check(const uint64_t *p, size_t len, uint64_t seed, bool zero)
{
	static char why[128];
	for (size_t k = 0; k < len / 8; k++) {
		uint64_t want = zero ? 0 : pat(seed, k);
		if (p[k] != want) {
			snprintf(why, sizeof(why), "seed %llu word %zu: %#llx, not %#llx",
				 (unsigned long long) seed, k, (unsigned long long) p[k],
				 (unsigned long long) want);
			return why;
		}
	}
	return "";
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[256], tmp[300];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		exit(4);
	fprintf(f, "%s\n", text);
	fclose(f);
	rename(tmp, path);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	size_t big = strtoul(argv[1], NULL, 10) << 20;
	/* mmap goes down: the small ones are above A, prefetched last */
	uint64_t *b = region(SMALL, 2), *c = region(SMALL, 3), *d = region(SMALL, 4);
	uint64_t *e = region(SMALL, 5), *a = region(big, 1);
	/* SIGUSR1 blocked and taken by sigwaitinfo: one sent while a dump's
	 * ptrace stop interrupts the wait stays pending, and the restarted
	 * wait takes it (a handler setting a flag before pause() could lose
	 * it between the flag's test and the restarted call) */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	put(argv[2], "ready", "ready");
	while (sigwaitinfo(&usr1, NULL) != SIGUSR1)
		;
	unsigned char *vec = malloc(big / PAGE);
	size_t missing = 0;
	if (vec && mincore(a, big, vec) == 0)
		for (size_t k = 0; k < big / PAGE; k++)
			missing += !(vec[k] & 1);
	pid_t kid = fork();
	if (kid == 0)
		_exit(*check(a, big, 1, false) ? 1 : 0);
	const char *why = "";
	madvise(c, SMALL, MADV_DONTNEED);
	if (!*why && *(why = check(c, SMALL, 3, true)))
		why = "DONTNEED";
	munmap(b, SMALL);
	uint64_t *nb = mmap(b, SMALL, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (!*why && (nb == MAP_FAILED || *(why = check(nb, SMALL, 2, true))))
		why = "munmap and map again";
	uint64_t *nd =
		mremap(d, SMALL, SMALL, MREMAP_MAYMOVE | MREMAP_FIXED, (char *) a - 64 * SMALL);
	if (!*why && (nd == MAP_FAILED || *(why = check(nd, SMALL, 4, false))))
		why = nd == MAP_FAILED ? "mremap failed" : why;
	if (!*why)
		why = check(a, big, 1, false);
	for (size_t k = 0; !*why && k < SMALL / 8; k += 512)
		e[k] = ~pat(5, k);
	for (size_t k = 0; !*why && k < SMALL / 8; k++)
		if (e[k] != (k % 512 ? pat(5, k) : ~pat(5, k)))
			why = "region E after writes";
	int st = 0;
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st))
		why = *why ? why : "the fork's child saw a wrong page";
	char res[256];
	if (*why)
		snprintf(res, sizeof(res), "FAIL %s", why);
	else
		snprintf(res, sizeof(res), "ok missing=%zu", missing);
	put(argv[2], "result", res);
	for (;;)
		pause();
}
