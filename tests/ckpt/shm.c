/*
 * tests/ckpt/shm.c — the shared memory checkpoint workload (static): a parent
 * and a forked child share memory through every kind of shmem mapping the
 * checkpoint saves —
 *   anon   MAP_SHARED|MAP_ANONYMOUS, 4 pages with the second unmapped (two
 *          mappings of one object, the second at offset 2 pages),
 *   zero   a shared mapping of /dev/zero (fd closed),
 *   memfd  a memfd of odd size (2 pages + 100 bytes) mapped over 3 pages,
 *          then sealed (shrink, grow, future write, seal: 0x17; fd closed),
 *   kept   a memfd never mapped, its fd kept open (inherited by the child):
 *          "hello memfd", sealed shrink + grow, the position at 6.
 * The child bumps a counter in each (anon at both mappings) every 2 ms and
 * copies the parent's sequence number back ("echo"). Every 10 ms the parent
 * appends to OUT/out.txt:
 *   N anon tail zero memfd echo tid seals kept
 * N counts from 1; tid is 1 while prctl(PR_GET_TID_ADDRESS) is still the
 * address it gave set_tid_address(2) at start; seals: the memfd's seals
 * (F_GET_SEALS through /proc/self/map_files); kept: 1 while the kept fd
 * has its position, size, bytes and seals. A restore that maps private
 * copies freezes the child's counters as the parent sees them (and echo);
 * one that loses clear_child_tid shows tid 0. Once OUT/go exists, the parent
 * forks one more child that writes into the anon and memfd objects and
 * exits; the parent then writes "late OK" (it saw both writes) or "late
 * FAIL" to OUT/late.txt: mappings stay shared with children forked later.
 *   shm OUT
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PG 4096

struct cell {
	volatile uint64_t child, parent, echo, late;
};

static int tidword;

static void nap(long ms)
{
	struct timespec ts = {0, ms * 1000 * 1000};
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	syscall(SYS_close_range, 3, ~0u, 0);
	syscall(SYS_set_tid_address, &tidword);
	char path[4096];
	snprintf(path, sizeof(path), "%s/out.txt", argv[1]);
	int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint8_t *anon =
		mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int zfd = open("/dev/zero", O_RDWR | O_CLOEXEC);
	uint8_t *zero = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, zfd, 0);
	int mfd = (int) syscall(SYS_memfd_create, "ckpt-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (out < 0 || anon == MAP_FAILED || zfd < 0 || zero == MAP_FAILED || mfd < 0 ||
	    ftruncate(mfd, 2 * PG + 100) < 0)
		return 1;
	uint8_t *mem = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (mem == MAP_FAILED || munmap(anon + PG, PG) < 0 ||
	    fcntl(mfd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL))
		return 1;
	char mf[128];
	snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx", (unsigned long) mem,
		 (unsigned long) (mem + 3 * PG));
	close(zfd);
	close(mfd);
	int kfd = (int) syscall(SYS_memfd_create, "ckpt-kept", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (kfd < 0 || write(kfd, "hello memfd", 11) != 11 ||
	    fcntl(kfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) || lseek(kfd, 6, SEEK_SET) != 6)
		return 1;
	struct cell *a = (struct cell *) anon, *tail = (struct cell *) (anon + 3 * PG);
	struct cell *z = (struct cell *) zero, *m = (struct cell *) (mem + 2 * PG + 16);
	memset(anon + 2 * PG, 0x5a, PG); /* data the restore must bring back as is */
	pid_t kid = fork();
	if (kid < 0)
		return 1;
	if (kid == 0) {
		for (;;) {
			a->child++;
			tail->child++;
			z->child++;
			m->child++;
			a->echo = a->parent;
			nap(2);
		}
	}
	snprintf(path, sizeof(path), "%s/go", argv[1]);
	int late_done = 0;
	for (uint64_t n = 1;; n++) {
		a->parent = n;
		int *tp = NULL;
		int tid = prctl(PR_GET_TID_ADDRESS, &tp) == 0 && tp == &tidword;
		if (anon[2 * PG + 100] != 0x5a)
			tid = -1; /* the untouched page came back wrong */
		int sfd = open(mf, O_RDONLY | O_CLOEXEC),
		    seals = sfd < 0 ? -1 : fcntl(sfd, F_GET_SEALS);
		if (sfd >= 0)
			close(sfd);
		char kb[8] = {0};
		struct stat kst;
		int kept = lseek(kfd, 0, SEEK_CUR) == 6 && pread(kfd, kb, 5, 6) == 5 &&
			   !memcmp(kb, "memfd", 5) && !fstat(kfd, &kst) && kst.st_size == 11 &&
			   fcntl(kfd, F_GET_SEALS) == (F_SEAL_SHRINK | F_SEAL_GROW);
		char line[256];
		int len = snprintf(line, sizeof(line), "%llu %llu %llu %llu %llu %llu %d %d %d\n",
				   (unsigned long long) n, (unsigned long long) a->child,
				   (unsigned long long) tail->child, (unsigned long long) z->child,
				   (unsigned long long) m->child, (unsigned long long) a->echo, tid,
				   seals, kept);
		if (write(out, line, (size_t) len) != len)
			return 1;
		struct stat st;
		if (!late_done && stat(path, &st) == 0) {
			late_done = 1;
			pid_t l = fork();
			if (l == 0) {
				a->late = 4242;
				m->late = 4343;
				_exit(0);
			}
			int ws;
			waitpid(l, &ws, 0);
			char lp[4096];
			snprintf(lp, sizeof(lp), "%s/late.txt", argv[1]);
			int lf = open(lp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			const char *msg =
				a->late == 4242 && m->late == 4343 ? "late OK\n" : "late FAIL\n";
			if (lf < 0 || write(lf, msg, strlen(msg)) < 0)
				return 1;
			close(lf);
		}
		nap(10);
	}
}
