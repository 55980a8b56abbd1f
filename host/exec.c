/*
 * host/exec.c — see exec.h.
 */
#include "host/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/init.h"
#include "host/process.h"
#include "host/proc.h"
#include "runtime/common.h"

static const struct {
	const char *name;
	int flag;
} nss[] = {
	{"user", CLONE_NEWUSER},     {"mnt", CLONE_NEWNS},  {"pid", CLONE_NEWPID},
	{"ipc", CLONE_NEWIPC},	     {"uts", CLONE_NEWUTS}, {"net", CLONE_NEWNET},
	{"cgroup", CLONE_NEWCGROUP},
};

/* The namespaces in which @pid differs from us. */
static int differing_ns(pid_t pid)
{
	int flags = 0;
	for (size_t i = 0; i < URS_ARRAY_SIZE(nss); i++) {
		char a[64], b[64];
		struct stat sa, sb;
		snprintf(a, sizeof(a), "/proc/self/ns/%s", nss[i].name);
		snprintf(b, sizeof(b), "/proc/%d/ns/%s", (int) pid, nss[i].name);
		if (stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
		    (sa.st_ino != sb.st_ino || sa.st_dev != sb.st_dev))
			flags |= nss[i].flag;
	}
	return flags;
}

static void child_fail(int fd, int code, const struct urs_err *err)
{
	urs_sync_send(fd, URS_SYNC_ERROR, code, err->msg);
	_exit(127);
}

/* The final process, already the spec's process (see below): a session,
 * the terminal, execve. */
static void finish_exec(const struct urs_exec_opts *o, const char *exe, int rep)
{
	struct urs_err err = {{0}};
	const struct urs_process *p = o->process;
	int r;
	setsid();
	if (p->terminal && o->console_fd >= 0 &&
	    (r = urs_console_setup(o->console_fd, p, &err)) < 0)
		child_fail(rep, r, &err);
	/* rep is close-on-exec: the caller sees EOF once execve succeeded */
	r = urs_process_execve(p, exe, &err);
	child_fail(rep, r, &err);
}

/* The helper, in the child: into the container's cgroups and namespaces
 * and root, becomes the spec's process, then clones the process that
 * execs into the container's pid namespace and reports its pid on @fd. */
static __attribute__((noreturn)) void helper_main(const struct urs_exec_opts *o, bool into, int fd)
{
	struct urs_err e = {{0}};
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	int pfd = urs_pidfd_open_checked(o->init_pid, o->init_start);
	if (pfd < 0) {
		urs_err_set(&e, -ESRCH, "container not running");
		child_fail(fd, -ESRCH, &e);
	}
	if (o->cg) {
		int r = urs_cg_enter_self_v1(o->cg, &e);
		if (r == -EBUSY)
			r = urs_cg_enter(o->cg, getpid(), &e);
		else if (r == 0 && !into)
			r = urs_cg_enter_v2(o->cg, getpid(), &e);
		if (r < 0)
			child_fail(fd, -EPERM, &e);
	}
	int flags = differing_ns(o->init_pid);
	/* a container without a mount namespace of its own (the host's,
	 * chrooted, as runc does it): joining its namespaces keeps our root,
	 * so its root is taken from the init (opened before the setns, while
	 * /proc is ours) */
	int rootfd = -1;
	if (!(flags & CLONE_NEWNS)) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/root", (int) o->init_pid);
		if ((rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
			urs_err_set(&e, -errno, "exec: the container's root (%s): %m", path);
			child_fail(fd, -errno, &e);
		}
	}
	/* one setns through the pidfd joins them all at once */
	if (flags && setns(pfd, flags) < 0) {
		urs_err_set(&e, -errno, "exec: joining the container's namespaces: %m");
		child_fail(fd, -errno, &e);
	}
	close(pfd);
	if (rootfd >= 0 && (fchdir(rootfd) < 0 || chroot(".") < 0)) {
		urs_err_set(&e, -errno, "exec: entering the container's root: %m");
		child_fail(fd, -errno, &e);
	}
	if (rootfd >= 0)
		close(rootfd);
	/* Become the spec's process HERE, before the final fork: this helper
	 * is not in the container's pid namespace (setns applies to children),
	 * so nothing in the container can see or ptrace it while it still
	 * holds our capabilities. The child inherits identity, capabilities,
	 * rlimits, cwd, no_new_privs and the seccomp filter, and only has to
	 * exec. (plain clone: the container's profile may refuse clone3, as
	 * Docker's does.) */
	char exe[PATH_MAX];
	int r = urs_process_prepare(o->process, o->preserve_fds, o->seccomp, o->load_seccomp, exe,
				    sizeof(exe), &e);
	if (r < 0 ||
	    (r = urs_process_seccomp_late(o->process, o->seccomp, o->load_seccomp, &e)) < 0)
		child_fail(fd, r, &e);
	pid_t c2 = (pid_t) syscall(SYS_clone, CLONE_PARENT, NULL, NULL, NULL, 0);
	if (c2 == 0)
		finish_exec(o, exe, fd);
	if (c2 < 0) {
		urs_err_set(&e, -errno, "exec: clone into the pid namespace: %m");
		child_fail(fd, -errno, &e);
	}
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", (int) c2);
	urs_sync_send(fd, URS_SYNC_READY, 0, buf);
	_exit(0);
}

/* The helper forked: born in the container's v2 cgroup (CLONE_INTO_CGROUP,
 * *@into) when it can be, else plainly. It moves itself into the v1 ones:
 * no cgroup.procs write, so no wait for the kernel's global migration lock
 * (host/cgroup.c). Returns its pid, or a negative errno (@err set). */
static pid_t fork_helper(const struct urs_exec_opts *o, bool *into, struct urs_err *err)
{
	int cgfd = o->cg ? urs_cg_open_v2(o->cg, NULL) : -1;
	pid_t c1 = -1;
	*into = false;
	if (cgfd >= 0) {
		struct clone_args ca = {.flags = CLONE_INTO_CGROUP,
					.exit_signal = SIGCHLD,
					.cgroup = (uint64_t) cgfd};
		c1 = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
		*into = c1 >= 0;
		int e = errno;
		close(cgfd); /* both sides */
		if (c1 < 0 && e != EINVAL && e != E2BIG && e != ENOSYS && e != EOPNOTSUPP)
			return urs_err_set(err, -e, "exec: clone3 into %s: %s",
					   o->cg->h[URS_CG_V2].path, strerror(e));
	}
	if (!*into && (c1 = fork()) < 0)
		return urs_err_set(err, -errno, "exec: fork: %m");
	return c1;
}

/* The helper's report: the pid, then EOF once the process has exec'd, or
 * a message if it failed before. Closes @fd. */
static int wait_helper(pid_t c1, int fd, pid_t *pid, struct urs_err *err)
{
	int st;
	while (waitpid(c1, &st, 0) < 0 && errno == EINTR)
		;
	struct urs_sync_msg m;
	int r = urs_sync_recv(fd, &m);
	if (r < 0 || m.type != URS_SYNC_READY) {
		close(fd);
		return urs_err_set(err, r < 0 ? -EIO : (m.code ? m.code : -EIO), "%s",
				   r < 0 ? "exec: the helper process died" : m.msg);
	}
	*pid = (pid_t) atoi(m.msg);
	r = urs_sync_recv(fd, &m);
	close(fd);
	if (r == 0 && m.type == URS_SYNC_ERROR) {
		waitpid(*pid, NULL, 0);
		return urs_err_set(err, m.code ? m.code : -EIO, "%s", m.msg);
	}
	return 0;
}

int urs_exec_spawn(const struct urs_exec_opts *o, pid_t *pid, struct urs_err *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return urs_err_set(err, -errno, "exec: socketpair: %m");
	int keep = 3 + (o->preserve_fds > 0 ? o->preserve_fds : 0);
	if (sv[1] < keep) { /* must survive the close-on-exec sweep's range start */
		int hi = fcntl(sv[1], F_DUPFD_CLOEXEC, keep);
		close(sv[1]);
		sv[1] = hi;
	}
	bool into;
	pid_t c1 = fork_helper(o, &into, err);
	if (c1 < 0) {
		close(sv[0]);
		close(sv[1]);
		return c1;
	}
	if (c1 == 0) {
		close(sv[0]);
		helper_main(o, into, sv[1]);
	}
	close(sv[1]);
	return wait_helper(c1, sv[0], pid, err);
}
