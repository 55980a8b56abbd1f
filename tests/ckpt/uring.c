/*
 * tests/ckpt/uring.c — a workload holding an io_uring instance, which the
 * checkpointer must refuse; writes an incrementing line every 10 ms. With
 * the argument "maponly" it maps the submission ring and closes the fd, so
 * only the mapping is left to give the ring away.
 */
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	int fd = (int) syscall(SYS_io_uring_setup, 8, &p);
	if (fd < 0) {
		perror("io_uring_setup");
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "maponly")) {
		size_t len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
		if (mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
			 IORING_OFF_SQ_RING) == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		close(fd);
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned long n = 1;; n++) {
		printf("%lu\n", n);
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
}
