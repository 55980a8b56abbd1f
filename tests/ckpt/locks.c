/*
 * tests/ckpt/locks.c — a workload holding a file lock on its stdout (a
 * regular file), which the checkpointer must refuse: locks are not saved,
 * and a restored process that silently lost its lock would let another
 * writer in. The argument picks the kind: flock, posix (fcntl F_SETLK) or
 * ofd (F_OFD_SETLK). It writes "1" once locked, then the next number each
 * time it gets SIGUSR1 (no pace of its own: the test drives it, and a line
 * after a refused dump shows it was let go, not left stopped).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
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
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned long n = 1;; n++) {
		printf("%lu\n", n);
		int sig;
		if (sigwait(&usr1, &sig) != 0)
			return 1;
	}
}
