/*
 * tests/ckpt/locks.c — a workload holding a file lock on its stdout (a
 * regular file), which the checkpointer must refuse: locks are not saved,
 * and a restored process that silently lost its lock would let another
 * writer in. The argument picks the kind: flock, posix (fcntl F_SETLK) or
 * ofd (F_OFD_SETLK). Writes an incrementing line every 10 ms.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : "flock";
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	int r;
	if (!strcmp(kind, "flock"))
		r = flock(1, LOCK_EX | LOCK_NB);
	else if (!strcmp(kind, "posix"))
		r = fcntl(1, F_SETLK, &fl);
	else if (!strcmp(kind, "ofd"))
		r = fcntl(1, F_OFD_SETLK, &fl);
	else {
		fprintf(stderr, "locks: unknown kind %s (flock, posix, ofd)\n", kind);
		return 2;
	}
	if (r < 0) {
		perror(kind);
		return 1;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned long n = 1;; n++) {
		printf("%lu\n", n);
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
}
