/*
 * tests/lib/failsys.c — `failsys SYSCALL ERRNO CMD [ARG...]`: CMD run with
 * every call of SYSCALL answered -ERRNO (a seccomp filter, libseccomp), so
 * a test can take a program down a failure path the kernel will not take
 * it on by itself (tests/store/remote.sh: io_uring_enter failing under
 * ursa-store). The filter is installed just before the exec: the exec
 * itself and everything after it see it.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: failsys SYSCALL ERRNO CMD [ARG...]\n");
		return 2;
	}
	int nr = seccomp_syscall_resolve_name(argv[1]);
	int e = atoi(argv[2]);
	if (nr == __NR_SCMP_ERROR || e <= 0 || e > 4095) {
		fprintf(stderr, "failsys: %s or %s: unknown system call or bad errno\n", argv[1],
			argv[2]);
		return 2;
	}
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	int r = f ? seccomp_rule_add(f, SCMP_ACT_ERRNO((unsigned) e), nr, 0) : -ENOMEM;
	if (r == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = -errno;
	if (r == 0)
		r = seccomp_load(f);
	if (r < 0) {
		fprintf(stderr, "failsys: the filter: %s\n", strerror(-r));
		return 2;
	}
	seccomp_release(f);
	execvp(argv[3], argv + 3);
	fprintf(stderr, "failsys: %s: %s\n", argv[3], strerror(errno));
	return 127;
}
