/*
 * host/init.c — see init.h. Runs in the container's first process between
 * clone and execve; it is single-threaded and allocates nothing it frees.
 */
#include "host/init.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/keyctl.h>
#include <net/if.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "host/caps.h"
#include "host/mounts.h"
#include "runtime/common.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int urs_sync_send(int fd, uint32_t type, int32_t code, const char *msg)
{
	struct urs_sync_msg m = {.type = type, .code = code};
	if (msg)
		snprintf(m.msg, sizeof(m.msg), "%s", msg);
	size_t len = offsetof(struct urs_sync_msg, msg) + (msg ? strlen(m.msg) + 1 : 0);
	for (;;) {
		ssize_t n = send(fd, &m, len, MSG_NOSIGNAL);
		if (n >= 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

int urs_sync_recv(int fd, struct urs_sync_msg *m)
{
	for (;;) {
		memset(m, 0, sizeof(*m));
		ssize_t n = recv(fd, m, sizeof(*m), 0);
		if (n > 0)
			return 0;
		if (n == 0)
			return -EPIPE;
		if (errno != EINTR)
			return -errno;
	}
}

int urs_find_exec(const char *file, char *const env[], char *out, size_t len)
{
	if (strchr(file, '/')) {
		if (access(file, X_OK) < 0)
			return -errno;
		snprintf(out, len, "%s", file);
		return 0;
	}
	const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], "PATH=", 5))
			path = env[i] + 5;
	int last = -ENOENT;
	while (*path) {
		const char *c = strchr(path, ':');
		size_t n = c ? (size_t) (c - path) : strlen(path);
		int w = snprintf(out, len, "%.*s%s%s", (int) n, path, n ? "/" : "", file);
		if (w > 0 && (size_t) w < len) {
			struct stat sb;
			if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) {
				if (access(out, X_OK) == 0)
					return 0;
				last = -EACCES;
			}
		}
		if (!c)
			break;
		path = c + 1;
	}
	return last;
}

static int fail(const struct urs_launch *L, int code, const struct urs_err *err)
{
	urs_sync_send(L->sync_fd, URS_SYNC_ERROR, code, err->msg);
	return code;
}

static int setup_console(const struct urs_launch *L, struct urs_err *err)
{
	int master, slave;
	char name[64];
	const struct urs_process *p = L->spec->process;
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	if (p->has_console_size) {
		ws.ws_row = (unsigned short) p->console_height;
		ws.ws_col = (unsigned short) p->console_width;
	}
	if (openpty(&master, &slave, name, NULL, &ws) < 0)
		return urs_err_set(err, -errno,
				   "process.terminal: opening a pty (is /dev/pts mounted?): %m");
	/* hand the master to whoever listens on the console socket */
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = name, .iov_len = strlen(name)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &master, sizeof(int));
	if (sendmsg(L->console_fd, &mh, MSG_NOSIGNAL) < 0)
		return urs_err_set(err, -errno, "--console-socket: sending the pty master: %m");
	close(master);
	close(L->console_fd);
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		return urs_err_set(err, -errno, "process.terminal: TIOCSCTTY: %m");
	for (int fd = 0; fd < 3; fd++)
		if (dup2(slave, fd) < 0)
			return urs_err_set(err, -errno, "process.terminal: dup2: %m");
	if (slave > 2)
		close(slave);
	return 0;
}

/* A new network namespace has lo down; every user expects it up. */
static int lo_up(void)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(fd, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

static int write_file(const char *path, const char *val)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(val);
	return write(fd, val, n) == (ssize_t) n ? 0 : -errno;
}

static int apply_sysctl(const struct urs_linux *l, struct urs_err *err)
{
	for (size_t i = 0; l && i < l->n_sysctl; i++) {
		char path[PATH_MAX] = "/proc/sys/";
		size_t o = strlen(path);
		for (const char *k = l->sysctl[i].key; *k && o < sizeof(path) - 1; k++)
			path[o++] = *k == '.' ? '/' : *k;
		path[o] = 0;
		int r = write_file(path, l->sysctl[i].value);
		if (r < 0)
			return urs_err_set(err, r, "linux.sysctl[\"%s\"] = \"%s\": writing %s: %s",
					   l->sysctl[i].key, l->sysctl[i].value, path,
					   strerror(-r));
	}
	return 0;
}

static int apply_rlimits(const struct urs_process *p, struct urs_err *err)
{
	for (size_t i = 0; i < p->n_rlimits; i++) {
		struct rlimit rl = {.rlim_cur = p->rlimits[i].soft, .rlim_max = p->rlimits[i].hard};
		if (setrlimit(p->rlimits[i].resource, &rl) < 0)
			return urs_err_set(err, -errno, "process.rlimits[%zu]: setrlimit: %m", i);
	}
	return 0;
}

int urs_init_run(const struct urs_launch *L)
{
	struct urs_err err = {{0}};
	const struct urs_spec *spec = L->spec;
	const struct urs_process *p = spec->process;
	struct urs_sync_msg m;
	int r;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* Until execve, nothing in the container may open /proc/1/exe (our
	 * binary on the host) or ptrace us: stay non-dumpable. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	if (L->new_ns & (1u << URS_NS_USER)) {
		if ((r = urs_sync_recv(L->sync_fd, &m)) < 0 || m.type != URS_SYNC_MAPPED)
			return -EPIPE; /* the supervisor is gone: nothing to report to */
		if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
			urs_err_set(&err, -errno,
				    "linux.uidMappings: becoming root in the user namespace (is 0 "
				    "mapped?): %m");
			return fail(L, -EPERM, &err);
		}
	}
	/* join namespaces given by path (the pid namespace was joined by the
	 * supervisor before cloning us; the user namespace first) */
	const struct urs_linux *l = spec->lnx;
	for (int pass = 0; l && pass < 2; pass++) {
		for (size_t i = 0; i < l->n_namespaces; i++) {
			const struct urs_namespace *ns = &l->namespaces[i];
			if (!ns->path || ns->type == URS_NS_PID ||
			    (pass == 0) != (ns->type == URS_NS_USER))
				continue;
			_cleanup_close_ int fd = open(ns->path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || setns(fd, urs_ns_clone_flag(ns->type)) < 0) {
				urs_err_set(&err, -errno,
					    "linux.namespaces[%zu]: joining %s namespace %s: %m", i,
					    urs_ns_name(ns->type), ns->path);
				return fail(L, -errno, &err);
			}
		}
	}
	if (setsid() < 0 && errno != EPERM) {
		urs_err_set(&err, -errno, "setsid: %m");
		return fail(L, -errno, &err);
	}
	if (!L->no_new_keyring)
		syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL); /* best effort, like runc */

	char rootfs[PATH_MAX];
	snprintf(rootfs, sizeof(rootfs), "%s", L->rootfs);
	if (L->overlay_scratch &&
	    (r = urs_rootfs_host_overlay(L->overlay_scratch, rootfs, sizeof(rootfs), &err)) < 0)
		return fail(L, r, &err);
	struct urs_rootfs_opts ro = {
		.rootfs = rootfs,
		.no_pivot = L->no_pivot,
		.userns = urs_spec_has_ns(spec, URS_NS_USER),
		.cgroupns = urs_spec_has_ns(spec, URS_NS_CGROUP),
	};
	if (!urs_spec_has_ns(spec, URS_NS_MOUNT)) {
		urs_err_set(&err, -EINVAL, "linux.namespaces: a mount namespace is required");
		return fail(L, -EINVAL, &err);
	}
	if ((r = urs_rootfs_setup(spec, &ro, &err)) < 0)
		return fail(L, r, &err);

	if (urs_spec_has_ns(spec, URS_NS_UTS)) {
		if (spec->hostname && sethostname(spec->hostname, strlen(spec->hostname)) < 0) {
			urs_err_set(&err, -errno, "hostname \"%s\": %m", spec->hostname);
			return fail(L, -errno, &err);
		}
		if (spec->domainname &&
		    setdomainname(spec->domainname, strlen(spec->domainname)) < 0) {
			urs_err_set(&err, -errno, "domainname \"%s\": %m", spec->domainname);
			return fail(L, -errno, &err);
		}
	} else if (spec->hostname && *spec->hostname) {
		urs_err_set(&err, -EINVAL, "hostname: needs a new uts namespace");
		return fail(L, -EINVAL, &err);
	}
	if ((L->new_ns & (1u << URS_NS_NETWORK)) && (r = lo_up()) < 0) {
		urs_err_set(&err, r, "network namespace: bringing lo up: %s", strerror(-r));
		return fail(L, r, &err);
	}
	if ((r = apply_sysctl(l, &err)) < 0)
		return fail(L, r, &err);
	if (p->terminal && L->console_fd >= 0 && (r = setup_console(L, &err)) < 0)
		return fail(L, r, &err);
	if ((r = apply_rlimits(p, &err)) < 0)
		return fail(L, r, &err);
	if (p->has_oom_score_adj) {
		char v[16];
		snprintf(v, sizeof(v), "%d", p->oom_score_adj);
		if ((r = write_file("/proc/self/oom_score_adj", v)) < 0) {
			urs_err_set(&err, r, "process.oomScoreAdj %d: %s", p->oom_score_adj,
				    strerror(-r));
			return fail(L, r, &err);
		}
	}
	if (p->user.has_umask)
		umask(p->user.umask);
	else
		umask(022);

	/* identity and capabilities */
	struct urs_capsets cs = {~0ull, ~0ull, ~0ull, ~0ull, 0};
	if (p->caps.present)
		cs = (struct urs_capsets){p->caps.bounding, p->caps.effective, p->caps.inheritable,
					  p->caps.permitted, p->caps.ambient};
	if ((r = urs_caps_bound(cs.bounding, &err)) < 0)
		return fail(L, r, &err);
	if (L->seccomp && !p->no_new_privileges && (r = L->load_seccomp(L->seccomp, &err)) < 0)
		return fail(L, r, &err); /* without NNP loading needs CAP_SYS_ADMIN: load now */
	if ((r = urs_caps_apply(&cs, p->user.uid, p->user.gid, p->user.additional_gids,
				p->user.n_additional_gids, &err)) < 0)
		return fail(L, r, &err);
	if (chdir(p->cwd) < 0) {
		urs_err_set(&err, -errno, "process.cwd %s: %m", p->cwd);
		return fail(L, -errno, &err);
	}
	char exe[PATH_MAX];
	if ((r = urs_find_exec(p->args[0], p->env, exe, sizeof(exe))) < 0) {
		urs_err_set(&err, r, "process.args[0]: exec: \"%s\": %s", p->args[0],
			    r == -ENOENT ? "executable file not found in $PATH" : strerror(-r));
		return fail(L, r, &err);
	}
	if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		urs_err_set(&err, -errno, "process.noNewPrivileges: %m");
		return fail(L, -errno, &err);
	}

	/* nothing of ours survives execve but stdio and the preserved fds */
	int keep = 3 + (L->preserve_fds > 0 ? L->preserve_fds : 0);
	syscall(SYS_close_range, (unsigned) keep, ~0u, CLOSE_RANGE_CLOEXEC);
	if (L->sync_fd < keep) /* cannot happen: the supervisor places it above */
		return -EBADF;

	urs_sync_send(L->sync_fd, URS_SYNC_READY, 0, NULL);
	if (urs_sync_recv(L->sync_fd, &m) < 0 || m.type != URS_SYNC_START)
		return -EPIPE; /* deleted before start */
	if (L->seccomp && p->no_new_privileges && (r = L->load_seccomp(L->seccomp, &err)) < 0)
		return fail(L, r, &err);
	execve(exe, p->args, p->env);
	r = -errno;
	urs_err_set(&err, r, "exec %s: %m", exe);
	dprintf(2, "ursa: %s\n", err.msg);
	return fail(L, r, &err);
}
