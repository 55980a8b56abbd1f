/* seccomp_probe: try syscalls a default (Docker-like) profile must refuse;
 * prints one line per probe: "name ALLOWED|blocked (errno)". Exit status =
 * number of dangerous syscalls that were allowed. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int bad;

static void report(const char *name, long r, int err, int dangerous)
{
	if (r >= 0 || (err != EPERM && err != ENOSYS && err != EACCES)) {
		printf("%-34s ALLOWED (ret %ld, %s)%s\n", name, r, r >= 0 ? "ok" : strerror(err),
		       dangerous ? "  <-- should be blocked" : "");
		bad += dangerous;
	} else {
		printf("%-34s blocked (%s)\n", name, strerror(err));
	}
}

#define TRY(name, dangerous, call)                  \
	do {                                        \
		errno = 0;                          \
		long _r = (call);                   \
		report(name, _r, errno, dangerous); \
	} while (0)

/* run f in a child so that a successful namespace change does not stick */
static long inchild(long (*f)(void))
{
	pid_t p = fork();
	if (p == 0) {
		long r = f();
		_exit(r >= 0 ? 0 : errno);
	}
	int st;
	waitpid(p, &st, 0);
	int e = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
	/* killed by SIGSYS (a filter's kill action, e.g. for a foreign arch)
	 * or SIGSEGV/SIGILL (int $0x80 on a kernel without IA32 emulation):
	 * the call never ran. Counted as refused, said as such. */
	if (WIFSIGNALED(st) &&
	    (WTERMSIG(st) == SIGSYS || WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGILL)) {
		printf("(the child was killed by signal %d before the call ran)\n", WTERMSIG(st));
		e = ENOSYS;
	}
	errno = e;
	return e ? -1 : 0;
}
static long f_userns(void)
{
	return unshare(CLONE_NEWUSER);
}
static long f_mntns(void)
{
	return unshare(CLONE_NEWNS);
}
static long f_clone3(void)
{
	struct clone_args ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
	long r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r == 0)
		_exit(0);
	return r;
}
static long f_clone(void)
{
	long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (r == 0)
		_exit(0);
	return r;
}
static long f_x32_unshare(void)
{
	return syscall(0x40000000 | 272, CLONE_NEWUSER);
}
static long f_i386_unshare(void)
{
	long r;
	/* i386 unshare = 310 through int $0x80 */
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(310), "b"(CLONE_NEWUSER) : "memory");
	if (r < 0) {
		errno = (int) -r;
		return -1;
	}
	return r;
}
static long f_i386_mount(void)
{
	long r;
	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "a"(21), "b"("none"), "c"("/tmp"), "d"("tmpfs"), "S"(0), "D"(0)
			 : "memory");
	if (r < 0) {
		errno = (int) -r;
		return -1;
	}
	return r;
}

int main(void)
{
	TRY("unshare(CLONE_NEWUSER)", 1, inchild(f_userns));
	TRY("unshare(CLONE_NEWNS)", 1, inchild(f_mntns));
	TRY("clone(CLONE_NEWUSER)", 1, inchild(f_clone));
	TRY("clone3(CLONE_NEWUSER)", 1, inchild(f_clone3));
	TRY("x32 unshare(CLONE_NEWUSER)", 1, inchild(f_x32_unshare));
	TRY("i386 int80 unshare(CLONE_NEWUSER)", 1, inchild(f_i386_unshare));
	TRY("i386 int80 mount(tmpfs)", 1, inchild(f_i386_mount));
	TRY("mount(tmpfs)", 1, syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, 0));
	TRY("umount2(/proc)", 1, syscall(SYS_umount2, "/proc", 2));
	TRY("keyctl(GET_KEYRING_ID)", 1, syscall(SYS_keyctl, 0, -3, 0));
	TRY("add_key", 1, syscall(SYS_add_key, "user", "x", "y", 1, -3));
	TRY("io_uring_setup", 1, syscall(SYS_io_uring_setup, 4, (char[120]){0}));
	TRY("personality(READ_IMPLIES_EXEC)", 1, syscall(SYS_personality, 0x0400000));
	TRY("personality(ADDR_NO_RANDOMIZE)", 1, syscall(SYS_personality, 0x0040000));
	TRY("userfaultfd", 1, syscall(SYS_userfaultfd, 0));
	TRY("bpf(PROG_LOAD junk)", 1, syscall(SYS_bpf, 5, (char[128]){0}, 128));
	TRY("perf_event_open", 1, syscall(SYS_perf_event_open, (char[128]){0}, 0, -1, -1, 0));
	TRY("setns(-1)", 1, syscall(SYS_setns, 0, 0));
	TRY("open_by_handle_at", 1, syscall(SYS_open_by_handle_at, -100, (char[64]){8}, 0));
	TRY("init_module", 1, syscall(SYS_init_module, 0, 0, ""));
	TRY("kexec_load", 1, syscall(SYS_kexec_load, 0, 0, 0, 0));
	TRY("fsopen(tmpfs)", 1, syscall(SYS_fsopen, "tmpfs", 0));
	TRY("open_tree", 1, syscall(SYS_open_tree, -100, "/", 1));
	TRY("socket(AF_VSOCK)", 1, syscall(SYS_socket, 40, 1, 0));
	TRY("ptrace(TRACEME) [allowed by moby >=4.8]", 0, 0L);
	printf("dangerous syscalls allowed: %d\n", bad);
	return bad;
}
