/*
 * tests/ckpt/cow.c — a process tree that shares most of its memory
 * copy-on-write, for tests/ckpt/cow.sh:
 *   cow MIB KIDS DIR
 * fills MIB MiB of anonymous private memory with a pattern no compressor
 * or zero-page skip can shrink (a mix of each word's index), then forks
 * KIDS children: every page nobody writes after the fork stays one frame
 * mapped by all KIDS + 1 processes, which a checkpoint should store once.
 * Process i (the parent is 0) then rewrites page 5 with the pattern xored
 * with its own constant (one address, a different content in each
 * process: a dedupe that mixed them up shows), and each child page 100 + i
 * (a page only it has); each writes DIR/ready-i and then waits on a pipe
 * of its own, counting in page 5's first word at every wake-up.
 * SIGUSR1 to the parent: it passes the signal to its children (their pids
 * kept from the fork: a restore keeps pids), then every process checks its
 * whole memory — the pattern, its own page 5 and page 100 + i, its count —
 * and writes DIR/check-i: "ok" or the first bad word. SIGTERM and SIGKILL
 * do what they do by default. Static, for a busybox rootfs.
 * With three children or more, child 2 unmaps pages 300-309 (a hole in
 * what it inherited: they must stay unmapped) and child 3 drops pages
 * 500-503 (MADV_DONTNEED: zero from then on, where the others keep the
 * pattern) and makes pages 600-609 read-only (they must stay so). The
 * parent makes pages 700-709 read-only before the fork, child 1 makes them
 * writable again (its mapping one where the parent's is three), and maps
 * 16 pages of its own just below the memory and fills them.
 *   cow MIB KIDS DIR grand
 * also has child 1 fork a grandchild (process KIDS + 1) once it did: the
 * grandchild shares with child 1 what child 1 shares with the parent, and
 * child 1's own 16 pages; it rewrites its page 100 + i too.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE	4096u
#define WORDS	(PAGE / 8)
#define SHARED	5   /* the page every process rewrites, and counts in */
#define OWN	100 /* child i rewrites page OWN + i */
#define MAXKIDS 64
#define HOLE	300 /* child 2 unmaps pages HOLE..HOLE + 9 */
#define ZEROED	500 /* child 3 drops pages ZEROED..ZEROED + 3 */
#define RDONLY	600 /* child 3 makes pages RDONLY..RDONLY + 9 read-only */
#define GROWN	16  /* child 1 maps GROWN pages below the memory */
#define RELAXED 700 /* read-only in the parent, writable again in child 1 */

static uint64_t *mem;
static size_t npages;
static const char *dir;
static int me; /* 0: the parent; 1..KIDS: a child */
static int kids;
static pid_t pids[MAXKIDS + 1]; /* the parent's children, by index */
static pid_t grand;		/* child 1's child, or 0 */
static uint64_t *grown;		/* child 1's (and its child's) own pages, or NULL */
static volatile sig_atomic_t check_req;

/* splitmix64's finalizer of the index: a bijection, zero only for one
 * index near 2^64, never reached here */
static uint64_t pat(uint64_t i)
{
	uint64_t z = i + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* what this process keeps in word @k of page @p (page 5's word 0 aside:
 * the count) */
static uint64_t want(size_t p, size_t k)
{
	if (me == 3 && p >= ZEROED && p < ZEROED + 4)
		return 0;
	uint64_t v = pat(p * WORDS + k);
	if (p == SHARED || (me && p == OWN + (size_t) me))
		v ^= 0x1111111111111111ull * (uint64_t) (me + 1);
	return v;
}

static void rewrite(size_t p)
{
	for (size_t k = 0; k < WORDS; k++)
		mem[p * WORDS + k] = want(p, k);
}

static void put(const char *name, const char *text)
{
	char path[256], tmp[300];
	snprintf(path, sizeof(path), "%s/%s-%d", dir, name, me);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, strlen(text)) < 0) {
		/* the test sees no file and says so */
	}
	close(fd);
	rename(tmp, path);
}

/* every word as want() says, page 5's word 0 the last count @n written */
/* child 2's hole still unmapped, child 3's read-only pages still so (the
 * kernel's write into them fails) */
static const char *check_maps(void)
{
	for (size_t k = 0; grown && k < GROWN * WORDS; k++)
		if (grown[k] != pat((1ull << 40) + k))
			return "bad: a page mapped below the memory\n";
	for (size_t p = HOLE; me == 2 && p < HOLE + 10; p++)
		if (msync(&mem[p * WORDS], PAGE, MS_ASYNC) == 0 || errno != ENOMEM)
			return "bad: a page of the hole is mapped\n";
	for (size_t p = RDONLY; me == 3 && p < RDONLY + 10; p++)
		if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &mem[p * WORDS]) == 0 ||
		    errno != EFAULT)
			return "bad: a read-only page is writable\n";
	/* writable again in child 1 (and its child): the kernel writes there
	 * (read-only: EFAULT), then the words are put back */
	for (size_t p = RELAXED; (me == 1 || me == kids + 1) && p < RELAXED + 10; p++) {
		uint64_t keep[2] = {mem[p * WORDS], mem[p * WORDS + 1]};
		if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &mem[p * WORDS]) != 0)
			return "bad: a page made writable again is not\n";
		mem[p * WORDS] = keep[0];
		mem[p * WORDS + 1] = keep[1];
	}
	return NULL;
}

static void check(uint64_t n)
{
	char res[96] = "ok\n";
	const char *maps = check_maps();
	if (maps) {
		put("check", maps);
		return;
	}
	for (size_t p = 0; p < npages; p++)
		for (size_t k = 0; k < WORDS && (me != 2 || p < HOLE || p >= HOLE + 10); k++) {
			uint64_t w = mem[p * WORDS + k];
			if (w != (p == SHARED && !k ? n : want(p, k))) {
				snprintf(res, sizeof(res), "bad page %zu word %zu: %#llx\n", p, k,
					 (unsigned long long) w);
				put("check", res);
				return;
			}
		}
	put("check", res);
}

static int wake_fd = -1; /* this process's own pipe: a byte per SIGUSR1 */

static void on_usr1(int s)
{
	(void) s;
	check_req++;
	if (write(wake_fd, "", 1) < 0) {
		/* full: a wake-up is pending already */
	}
}

/* Waits on its own pipe (made after the fork: a byte is this process's),
 * counting in page 5 at each wake-up: no clock, so nothing here depends
 * on time */
static _Noreturn void run(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		perror("cow: pipe");
		_exit(1);
	}
	wake_fd = p[1];
	int fl = fcntl(p[0], F_GETFL);
	fcntl(p[0], F_SETFL, fl & ~O_NONBLOCK); /* the reads block, the handler never */
	volatile uint64_t *count = &mem[SHARED * WORDS];
	/* the count goes on from the word's own pattern: different in each
	 * process, like the rest of its page 5 */
	uint64_t n = *count, seen = 0;
	char buf[64];
	for (;;) {
		*count = ++n;
		if ((uint64_t) check_req != seen) {
			seen = (uint64_t) check_req;
			for (int i = 1; !me && i <= kids; i++)
				kill(pids[i], SIGUSR1);
			if (grand)
				kill(grand, SIGUSR1);
			check(n);
		}
		if (read(p[0], buf, sizeof(buf)) < 0 && errno != EINTR) {
			perror("cow: read");
			_exit(1);
		}
	}
}

/* child 1's pages below the memory: one mapping with it */
static int grow(void)
{
	void *g = mmap((char *) mem - GROWN * PAGE, GROWN * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (g == MAP_FAILED)
		return -1;
	grown = g;
	for (size_t k = 0; k < GROWN * WORDS; k++)
		grown[k] = pat((1ull << 40) + k);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 && (argc != 5 || strcmp(argv[4], "grand"))) {
		fprintf(stderr, "usage: cow MIB KIDS DIR [grand]\n");
		return 2;
	}
	size_t mib = strtoul(argv[1], NULL, 10);
	kids = atoi(argv[2]);
	dir = argv[3];
	npages = mib * 256;
	if (kids < 0 || kids >= MAXKIDS || npages <= OWN + (size_t) kids + 1 ||
	    npages <= RELAXED + 10) {
		fprintf(stderr, "cow: KIDS 0..%d, and MIB large enough for page %d\n", MAXKIDS,
			OWN + kids + 1 > RELAXED + 10 ? OWN + kids + 1 : RELAXED + 10);
		return 2;
	}
	void *m = mmap(NULL, npages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (m == MAP_FAILED) {
		perror("cow: mmap");
		return 1;
	}
	mem = m;
	for (size_t p = 0; p < npages; p++)
		for (size_t k = 0; k < WORDS; k++)
			mem[p * WORDS + k] = pat(p * WORDS + k);
	if (mprotect(&mem[RELAXED * WORDS], 10 * PAGE, PROT_READ) < 0) {
		perror("cow: mprotect");
		return 1;
	}
	struct sigaction sa = {.sa_handler = on_usr1};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 1; i <= kids; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("cow: fork");
			return 1;
		}
		if (!pid) {
			me = i;
			break;
		}
		pids[i] = pid;
	}
	rewrite(SHARED);
	if (me)
		rewrite(OWN + (size_t) me);
	if ((me == 2 && munmap(&mem[HOLE * WORDS], 10 * PAGE) < 0) ||
	    (me == 3 && madvise(&mem[ZEROED * WORDS], 4 * PAGE, MADV_DONTNEED) < 0) ||
	    (me == 3 && mprotect(&mem[RDONLY * WORDS], 10 * PAGE, PROT_READ) < 0) ||
	    (me == 1 && mprotect(&mem[RELAXED * WORDS], 10 * PAGE, PROT_READ | PROT_WRITE) < 0) ||
	    (me == 1 && grow() < 0)) {
		perror("cow: child's own mappings");
		return 1;
	}
	if (me == 1 && argc == 5 && (grand = fork()) < 0) {
		perror("cow: fork");
		return 1;
	}
	if (me == 1 && argc == 5 && !grand) { /* its own page 5 and page 100 + i; 101 as it was */
		me = kids + 1;
		rewrite(SHARED);
		rewrite(OWN + 1);
		rewrite(OWN + (size_t) me);
	}
	put("ready", "ready\n");
	run();
}
