/*
 * host/init.c — see init.h. Runs in the container's first process between
 * clone and execve; it is single-threaded and allocates nothing it frees.
 * Also the minimal init of `ursa do` (URS_ANN_INIT): this process forks the
 * command and stays pid 1, forwarding signals and reaping.
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
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "host/caps.h"
#include "host/fdpass.h"
#include "host/hooks.h"
#include "host/process.h"
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

int urs_sync_send_fd(int fd, uint32_t type, int passed)
{
	struct urs_sync_msg m = {.type = type};
	return urs_send_fd(fd, &m, offsetof(struct urs_sync_msg, msg), passed);
}

int urs_sync_recv_fd(int fd, struct urs_sync_msg *m, int *passed)
{
	memset(m, 0, sizeof(*m));
	ssize_t n = urs_recv_fd(fd, m, sizeof(*m), passed);
	return n < 0 ? (int) n : 0;
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

static int fail(const struct urs_launch *L, int code, const struct urs_err *err)
{
	urs_sync_send(L->sync_fd, URS_SYNC_ERROR, code, err->msg);
	return code;
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

static const struct urs_spec *hook_spec;
static const struct urs_launch *notify_launch;
static int notify_fd = -1;

/* load_seccomp hook for NOTIFY filters: keep the listener */
static int load_notify(void *filter, struct urs_err *err)
{
	return notify_launch->load_seccomp_notify(filter, &notify_fd, err);
}

static int run_create_container_hooks(void *ctx, struct urs_err *err)
{
	return urs_hooks_run(hook_spec, URS_HOOK_CREATE_CONTAINER, ctx, err);
}

/* sysctl goes after pivot_root (the container's /proc) and before the
 * read-only paths (which include /proc/sys) */
static int after_pivot(void *ctx, struct urs_err *err)
{
	(void) ctx;
	return apply_sysctl(hook_spec->lnx, err);
}

/* Right before READY: no more parent-death signal (urs_launch.leash). If
 * the command died meanwhile, the supervisor cannot report READY to it and
 * kills us. (getppid() cannot tell: it is 0 in a new pid namespace.) */
static int unleash(const struct urs_launch *L)
{
	if (!L->leash && prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

/* ---- the minimal init (`ursa do`) ----------------------------------------
 * pid 1 of a pid namespace ignores every signal it has no handler for, so a
 * command that is pid 1 does not end on SIGTERM/SIGINT/SIGHUP as on the
 * host, and cannot die of a signal at all. With URS_ANN_INIT the init forks
 * the command instead of becoming it, and stays: non-dumpable, holding no
 * fd, under the same seccomp filter, credentials and capabilities. Its
 * handlers do all the work (async-signal-safe calls only), so nothing is
 * lost between a check and a sleep: a forwarded signal is kill()ed on to
 * the command, SIGCHLD reaps every child and ends the init with the
 * command's code, or 128 + N when it died of signal N. Plain sigaction
 * handlers and a nanosleep: what the checkpoint dumper saves and restores
 * (a restored nanosleep returns EINTR, so the loop runs again at once). */

static volatile pid_t mi_cmd;	     /* the command (its process group too) */
static volatile sig_atomic_t mi_tty; /* its stdin is a terminal */

/* On a terminal, the signals a terminal sends to its foreground process
 * group go to the command's group (Ctrl-C reaches a whole pipeline, as on
 * the host); the others, and every signal without a terminal, to the
 * command alone (as `kill PID` on the host). */
static bool mi_group_sig(int sig)
{
	return mi_tty && (sig == SIGINT || sig == SIGQUIT || sig == SIGHUP || sig == SIGWINCH ||
			  sig == SIGTSTP || sig == SIGCONT);
}

static void mi_forward(int sig)
{
	int e = errno;
	pid_t c = mi_cmd;
	if (c > 0 && (!mi_group_sig(sig) || kill(-c, sig) < 0 || getpgid(c) != c))
		kill(c, sig);
	errno = e;
}

static void mi_reap(int sig)
{
	(void) sig;
	int e = errno, st;
	pid_t p;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		if (p == mi_cmd)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	errno = e;
}

/* Signals the init keeps as they are: uncatchable, its own faults (and the
 * checkpoint's SIGTRAP), the terminal's background-job stops. */
static bool mi_own_sig(int sig)
{
	return sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD || sig == SIGSEGV ||
	       sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT ||
	       sig == SIGTRAP || sig == SIGSYS || sig == SIGTTIN || sig == SIGTTOU;
}

static _Noreturn void mi_loop(void)
{
	struct sigaction sa = {.sa_handler = mi_forward};
	sigfillset(&sa.sa_mask); /* handlers never nest */
	for (int sig = 1; sig < NSIG; sig++)
		if (!mi_own_sig(sig))
			sigaction(sig, &sa, NULL); /* glibc's own (32, 33) are refused */
	sa.sa_handler = mi_reap;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (;;) {
		/* again after every wake-up: a restore may have set it */
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		sigset_t chld;
		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		sigprocmask(SIG_BLOCK, &chld, NULL);
		mi_reap(SIGCHLD); /* a SIGCHLD merged or lost across a checkpoint */
		sigprocmask(SIG_UNBLOCK, &chld, NULL);
		struct timespec t = {.tv_sec = 1 << 30};
		nanosleep(&t, NULL);
	}
}

/* The command, forked: its own process group (the foreground one when
 * stdin is our controlling terminal), the signal mask and dispositions the
 * init had, then execve. */
static _Noreturn void mi_child(const struct urs_launch *L, const char *exe, const sigset_t *mask)
{
	struct urs_err err = {{0}};
	setpgid(0, 0);
	if (mi_tty && tcgetsid(0) == getsid(0))
		tcsetpgrp(0, getpid()); /* SIGTTOU is blocked */
	sigprocmask(SIG_SETMASK, mask, NULL);
	int r = urs_process_execve(L->spec->process, exe, &err);
	dprintf(2, "ursa: %s\n", err.msg);
	fail(L, r, &err);
	_exit(127);
}

/* Fork the command and become its init; returns only on failure. */
static int mini_init(const struct urs_launch *L, const char *exe, struct urs_err *err)
{
	const struct urs_process *p = L->spec->process;
	int r;
	/* the filter first: the init is confined as the command is */
	if (!L->seccomp_notify &&
	    (r = urs_process_seccomp_late(p, L->seccomp, L->load_seccomp, err)) < 0)
		return r;
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old); /* until the handlers are in place */
	mi_tty = isatty(0);
	/* named before the command exists: it may look at /proc/1/comm at once */
	prctl(PR_SET_NAME, "ursa-init", 0, 0, 0);
	pid_t pid = fork();
	if (pid < 0) {
		r = urs_err_set(err, -errno, "fork (the minimal init's command): %m");
		sigprocmask(SIG_SETMASK, &old, NULL);
		return r;
	}
	if (pid == 0)
		mi_child(L, exe, &old);
	mi_cmd = pid;
	/* the command has its fds: the init keeps none, nor a cwd */
	if (syscall(SYS_close_range, 0u, ~0u, 0u) < 0) {
		struct rlimit rl = {.rlim_cur = 1024};
		getrlimit(RLIMIT_NOFILE, &rl);
		for (rlim_t fd = 0; fd < rl.rlim_cur && fd < (1u << 20); fd++)
			close((int) fd);
	}
	if (chdir("/") < 0) {
		/* nothing to do about it */
	}
	mi_loop();
}

static bool want_mini_init(const struct urs_spec *spec)
{
	for (size_t i = 0; i < spec->n_annotations; i++)
		if (!strcmp(spec->annotations[i].key, URS_ANN_INIT))
			return !strcmp(spec->annotations[i].value, "minimal");
	return false;
}

/* root in a new user namespace, the namespaces given by path joined (the
 * user one first; the pid one the supervisor joined before cloning us), a
 * session, a session keyring */
static int init_namespaces(const struct urs_launch *L, struct urs_err *err)
{
	if ((L->new_ns & (1u << URS_NS_USER)) &&
	    (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)) {
		urs_err_set(
			err, -errno,
			"linux.uidMappings: becoming root in the user namespace (is 0 mapped?): "
			"%m");
		return fail(L, -EPERM, err);
	}
	const struct urs_linux *l = L->spec->lnx;
	for (int pass = 0; l && pass < 2; pass++) {
		for (size_t i = 0; i < l->n_namespaces; i++) {
			const struct urs_namespace *ns = &l->namespaces[i];
			if (!ns->path || ns->type == URS_NS_PID ||
			    (pass == 0) != (ns->type == URS_NS_USER))
				continue;
			_cleanup_close_ int fd = open(ns->path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || setns(fd, urs_ns_clone_flag(ns->type)) < 0) {
				urs_err_set(err, -errno,
					    "linux.namespaces[%zu]: joining %s namespace %s: %m", i,
					    urs_ns_name(ns->type), ns->path);
				return fail(L, -errno, err);
			}
		}
	}
	if (setsid() < 0 && errno != EPERM) {
		urs_err_set(err, -errno, "setsid: %m");
		return fail(L, -errno, err);
	}
	if (!L->no_new_keyring)
		syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL); /* best effort, like runc */
	return 0;
}

/* the root (an `ursa do` overlay first), mounts, pivot; gofer volumes
 * mounted and their fds given back */
static int init_root(const struct urs_launch *L, char *state_json, struct urs_err *err)
{
	const struct urs_spec *spec = L->spec;
	char rootfs[PATH_MAX];
	int r;
	snprintf(rootfs, sizeof(rootfs), "%s", L->rootfs);
	if (L->overlay_scratch &&
	    (r = urs_rootfs_host_overlay(L->overlay_scratch, L->overlay_prepared, rootfs,
					 sizeof(rootfs), err)) < 0)
		return fail(L, r, err);
	struct urs_rootfs_opts ro = {
		.rootfs = rootfs,
		.no_pivot = L->no_pivot,
		.userns = urs_spec_has_ns(spec, URS_NS_USER),
		.cgroupns = urs_spec_has_ns(spec, URS_NS_CGROUP),
		.before_pivot = run_create_container_hooks,
		.after_pivot = after_pivot,
		.ctx = (void *) state_json,
		.cgroup = L->cgroup,
		.gofer_fuse = L->gofer_fuse,
		.n_gofer = L->n_gofer,
	};
	r = urs_rootfs_setup(spec, &ro, err);
	for (int i = 0; i < L->n_gofer; i++) /* mounted (or not): the supervisor serves them */
		if (L->gofer_fuse[i] >= 0)
			close(L->gofer_fuse[i]);
	return r < 0 ? fail(L, r, err) : 0;
}

/* hostname and domainname, lo up, the console */
static int init_host(const struct urs_launch *L, struct urs_err *err)
{
	const struct urs_spec *spec = L->spec;
	int r;
	if (urs_spec_has_ns(spec, URS_NS_UTS)) {
		if (spec->hostname && sethostname(spec->hostname, strlen(spec->hostname)) < 0) {
			urs_err_set(err, -errno, "hostname \"%s\": %m", spec->hostname);
			return fail(L, -errno, err);
		}
		if (spec->domainname &&
		    setdomainname(spec->domainname, strlen(spec->domainname)) < 0) {
			urs_err_set(err, -errno, "domainname \"%s\": %m", spec->domainname);
			return fail(L, -errno, err);
		}
	} else if (spec->hostname && *spec->hostname) {
		urs_err_set(err, -EINVAL, "hostname: needs a new uts namespace");
		return fail(L, -EINVAL, err);
	}
	if ((L->new_ns & (1u << URS_NS_NETWORK)) && (r = lo_up()) < 0) {
		urs_err_set(err, r, "network namespace: bringing lo up: %s", strerror(-r));
		return fail(L, r, err);
	}
	if (spec->process->terminal && L->console_fd >= 0 &&
	    (r = urs_console_setup(L->console_fd, spec->process, err)) < 0)
		return fail(L, r, err);
	return 0;
}

/* restore target: the image brings credentials, limits, seccomp and
 * memory; what the restorer needs is default signal handling, no
 * alternate stack, and this process blocked right here */
static int init_restore_target(const struct urs_launch *L, struct urs_err *err)
{
	const struct urs_process *p = L->spec->process;
	char adj[16];
	int r;
	snprintf(adj, sizeof(adj), "%d", p->oom_score_adj);
	if (p->has_oom_score_adj && (r = write_file("/proc/self/oom_score_adj", adj)) < 0) {
		urs_err_set(err, r, "process.oomScoreAdj %d: %s", p->oom_score_adj, strerror(-r));
		return fail(L, r, err);
	}
	/* the configuration's bounding set (the restore policy holds the
	 * image's capabilities to it): dropped here once, so the restorer,
	 * whose tasks all descend from this one, does not inject one prctl
	 * per capability into each task (~27 x 15 us for the default set).
	 * Effective and permitted sets stay: the restorer needs them. */
	if ((r = urs_caps_bound(p->caps.present ? p->caps.bounding : 0, err)) < 0)
		return fail(L, r, err);
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	stack_t ss = {.ss_flags = SS_DISABLE};
	sigaltstack(&ss, NULL);
	if ((r = unleash(L)) < 0)
		return r;
	struct urs_sync_msg m;
	urs_sync_send(L->sync_fd, URS_SYNC_READY, 0, NULL);
	urs_sync_recv(L->sync_fd, &m);
	return -EPIPE; /* not restored: the supervisor is gone or gave up */
}

/* READY once everything but the exec is done, START, startContainer
 * hooks, then the process (or the minimal init that forks it) */
static int init_exec(const struct urs_launch *L, const char *state_json, struct urs_err *err)
{
	const struct urs_spec *spec = L->spec;
	const struct urs_process *p = spec->process;
	struct urs_sync_msg m;
	char exe[PATH_MAX];
	int r;
	notify_launch = L;
	if ((r = urs_process_prepare(p, L->preserve_fds, L->seccomp,
				     L->seccomp_notify ? load_notify : L->load_seccomp, exe,
				     sizeof(exe), err)) < 0)
		return fail(L, r, err);
	if (L->sync_fd < 3 + (L->preserve_fds > 0 ? L->preserve_fds : 0))
		return -EBADF; /* cannot happen: the supervisor places it above */
	/* A NOTIFY filter is loaded now (runc does the same): its listener goes
	 * to the supervisor, which hands it to the agent at listenerPath. */
	if (L->seccomp_notify && notify_fd < 0 &&
	    (r = urs_process_seccomp_late(p, L->seccomp, load_notify, err)) < 0)
		return fail(L, r, err);
	if ((r = unleash(L)) < 0)
		return r;
	urs_sync_send_fd(L->sync_fd, URS_SYNC_READY, notify_fd);
	if (notify_fd >= 0)
		close(notify_fd);
	if (urs_sync_recv(L->sync_fd, &m) < 0 || m.type != URS_SYNC_START)
		return -EPIPE; /* deleted before start */
	if (spec->hooks[URS_HOOK_START_CONTAINER].n &&
	    (r = urs_hooks_run(spec, URS_HOOK_START_CONTAINER, state_json, err)) < 0) {
		dprintf(2, "ursa: %s\n", err->msg);
		return r;
	}
	if (want_mini_init(spec))
		r = mini_init(L, exe, err);
	else
		r = L->seccomp_notify ? urs_process_execve(p, exe, err)
				      : urs_process_exec(p, exe, L->seccomp, L->load_seccomp, err);
	dprintf(2, "ursa: %s\n", err->msg);
	return fail(L, r, err);
}

int urs_init_run(const struct urs_launch *L)
{
	struct urs_err err = {{0}};
	struct urs_sync_msg m;
	int r;
	hook_spec = L->spec;
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* gofer volumes: the host directories are the supervisor's alone */
	for (int i = 0; i < L->n_gofer; i++)
		if (L->gofer_dir[i] >= 0)
			close(L->gofer_dir[i]);
	/* Until execve, nothing in the container may open /proc/1/exe (our
	 * binary on the host) or ptrace us: stay non-dumpable. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	static char state_json[sizeof(m.msg)];
	if (L->wait_go) {
		if ((r = urs_sync_recv(L->sync_fd, &m)) < 0 || m.type != URS_SYNC_GO)
			return -EPIPE; /* the supervisor is gone: nothing to report to */
		memcpy(state_json, m.msg, sizeof(state_json));
	}
	if ((r = init_namespaces(L, &err)) || (r = init_root(L, state_json, &err)) ||
	    (r = init_host(L, &err)))
		return r;
	return L->restore ? init_restore_target(L, &err) : init_exec(L, state_json, &err);
}
