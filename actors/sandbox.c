/*
 * actors/sandbox.c — see sandbox.h.
 */
#include "actors/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actors/supervisor.h"
#include "host/hooks.h"
#include "host/proc.h"
#include "runtime/common.h"

int urs_write_pid_file(const char *path, pid_t pid, struct urs_err *err)
{
	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int) getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return urs_err_set(err, -errno, "--pid-file %s: %m", path);
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d", (int) pid);
	bool ok = write(fd, buf, (size_t) n) == n;
	close(fd);
	if (!ok || rename(tmp, path) < 0) {
		int r = -errno;
		unlink(tmp);
		return urs_err_set(err, r ? r : -EIO, "--pid-file %s: %s", path,
				   strerror(r ? -r : EIO));
	}
	return 0;
}

static int console_connect(const char *path, struct urs_err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >= (int) sizeof(sa.sun_path))
		return urs_err_set(err, -ENAMETOOLONG, "--console-socket %s: path too long", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return urs_err_set(err, -errno, "--console-socket: socket: %m");
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return urs_err_set(err, r, "--console-socket %s: connect: %s", path, strerror(-r));
	}
	return fd;
}

void urs_sandbox_cgroup_remove(const char *cgroup)
{
	struct urs_cgroup cg;
	if (cgroup && *cgroup && urs_cg_from_string(&cg, cgroup, NULL) == 0)
		urs_cg_destroy(&cg, NULL);
}

/* The console the init gets into *console: a dup of the caller's, a pty
 * master sent to --console-socket, or none (-1). */
static int open_console(const struct urs_sandbox_opts *o, int *console, struct urs_err *err)
{
	const struct urs_process *p = o->spec->process;
	*console = -1;
	if (p->terminal && o->use_console_fd) {
		if ((*console = fcntl(o->console_fd, F_DUPFD_CLOEXEC, 3)) < 0)
			return urs_err_set(err, -errno, "console: %m");
	} else if (p->terminal) {
		if (!o->console_socket) {
			if (o->root) /* runc: a terminal needs somewhere to send it */
				return urs_err_set(err, -EINVAL,
						   "process.terminal is true but no "
						   "--console-socket was given");
		} else {
			int fd = console_connect(o->console_socket, err);
			if (fd < 0)
				return fd;
			*console = fd;
		}
	}
	return 0;
}

/* The annotations as one JSON object (for the record and the hooks), or NULL */
static char *annotations_json(const struct urs_spec *spec)
{
	if (!spec->n_annotations)
		return NULL;
	const char *k[256], *v[256];
	size_t n = spec->n_annotations < 256 ? spec->n_annotations : 256;
	for (size_t i = 0; i < n; i++) {
		k[i] = spec->annotations[i].key;
		v[i] = spec->annotations[i].value;
	}
	return urs_json_object_kv(k, v, n);
}

/* In the forked child: the supervisor. */
static __attribute__((noreturn)) void run_supervisor(const struct urs_sandbox_opts *o,
						     const char *dir, int report_fd,
						     const char *annotations, int console,
						     pid_t parent)
{
	struct urs_sup_args a = {
		.state_dir = o->root ? dir : NULL,
		.report_fd = report_fd,
		.cgroup_path = o->spec->lnx ? o->spec->lnx->cgroups_path : NULL,
		.id = o->id,
		.bundle = o->bundle,
		.annotations = annotations,
		.no_prewarm = o->no_prewarm,
		.start_now = o->autostart,
		.no_cgroup = o->no_cgroup,
		.net = o->net,
		.parent = parent,
		.seccomp_count = o->seccomp_count,
		.profile = o->profile,
		.restore_dir = o->restore_dir,
		.restore_policy = o->restore_policy,
		.restore_lazy = o->restore_lazy,
		.restore_remote = o->restore_remote,
		.restore_unshared = o->restore_unshared,
		.restore_src = o->restore_src,
		.log = o->log,
		.log_json = o->log_json,
		.host_socket = o->host_socket,
	};
	a.launch = (struct urs_launch){
		.spec = o->spec,
		.overlay_scratch = o->overlay_scratch,
		.overlay_prepared = o->overlay_prepared,
		.no_pivot = o->no_pivot,
		.no_new_keyring = o->no_new_keyring,
		.console_fd = console,
		.preserve_fds = o->preserve_fds,
		.sync_fd = -1,
		.seccomp = o->seccomp,
		.load_seccomp = o->load_seccomp,
		.seccomp_notify = o->seccomp_notify,
		.load_seccomp_notify = o->load_seccomp_notify,
		.restore = o->restore_dir != NULL,
	};
	snprintf(a.launch.rootfs, sizeof(a.launch.rootfs), "%s", o->rootfs ? o->rootfs : "");
	_exit(urs_supervisor_main(&a));
}

/* The supervisor's READY (in @rp), after any "cgroup made" progress
 * reports; on anything else, the supervisor and the init are killed and
 * reaped and the cgroup removed. */
static int wait_ready(int fd, pid_t pid, struct urs_sup_report *rp, struct urs_err *err)
{
	ssize_t n;
	char made[URS_CG_STRING_MAX] = ""; /* the cgroup, once the supervisor made it */
	memset(rp, 0, sizeof(*rp));
	for (;;) {
		do
			n = recv(fd, rp, sizeof(*rp), 0);
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t) sizeof(*rp) || rp->code != URS_SUP_CGROUP_MADE)
			break;
		snprintf(made, sizeof(made), "%s", rp->cgroup);
	}
	if (n == (ssize_t) sizeof(*rp) && rp->code == 0)
		return 0;
	int r = n == (ssize_t) sizeof(*rp)
			? urs_err_set(err, rp->code < 0 ? rp->code : -EINVAL, "%s", rp->msg)
			: urs_err_set(err, -EPIPE,
				      "the supervisor died before the container was ready");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* the init is our child (CLONE_PARENT), killed and dead by now */
	if (n == (ssize_t) sizeof(*rp) && rp->init_pid > 0)
		waitpid(rp->init_pid, NULL, 0);
	urs_sandbox_cgroup_remove(n == (ssize_t) sizeof(*rp) && rp->cgroup[0] ? rp->cgroup : made);
	return r;
}

/* The record of a sandbox the supervisor @pid reported ready. */
static void fill_record(const struct urs_sandbox_opts *o, pid_t pid,
			const struct urs_sup_report *rp, struct urs_state *st)
{
	memset(st, 0, sizeof(*st));
	st->exit_status = -1;
	snprintf(st->id, sizeof(st->id), "%s", o->id ? o->id : "");
	snprintf(st->bundle, sizeof(st->bundle), "%s", o->bundle ? o->bundle : "");
	snprintf(st->rootfs, sizeof(st->rootfs), "%s", o->rootfs ? o->rootfs : "");
	urs_rfc3339_now(st->created, sizeof(st->created));
	st->owner = getuid();
	st->pid = rp->init_pid;
	urs_proc_start_time(st->pid, &st->pid_start);
	st->sup_pid = pid;
	urs_proc_start_time(pid, &st->sup_start);
	st->started = o->autostart;
	st->cgroup = rp->cgroup[0] ? strdup(rp->cgroup) : NULL;
	st->host_mnt = !urs_spec_has_ns(o->spec, URS_NS_MOUNT);
	st->hooks = 0;
	for (int k = 0; k < URS_HOOK__COUNT; k++)
		if (o->spec->hooks[k].n)
			st->hooks |= 1 << k;
	memcpy(st->stdio_dev, rp->stdio_dev, sizeof(st->stdio_dev));
	memcpy(st->stdio_ino, rp->stdio_ino, sizeof(st->stdio_ino));
}

/* The record and config.json in ROOT/ID, the pid file: what the
 * supervisor waits for before it lets the sandbox run. */
static int write_record(const struct urs_sandbox_opts *o, struct urs_state *st, struct urs_err *err)
{
	int r;
	if (o->root) {
		if ((r = urs_state_write(o->root, st, err)) < 0)
			return r;
		char cfg[PATH_MAX];
		snprintf(cfg, sizeof(cfg), "%s/config.json", o->bundle);
		if ((r = urs_state_save_config(o->root, o->id, cfg)) < 0)
			return urs_err_set(err, r, "saving %s in the container's state: %s", cfg,
					   strerror(-r));
	}
	/* the container's init, as runc writes it: clients enter the container
	 * through /proc/PID/ns and /proc/PID/root */
	if (o->pid_file && (r = urs_write_pid_file(o->pid_file, st->pid, err)) < 0)
		return r;
	return 0;
}

int urs_sandbox_create(const struct urs_sandbox_opts *o, pid_t *sup, struct urs_state *st,
		       struct urs_err *err)
{
	int r;
	char dir[PATH_MAX] = "";
	if (!o->spec->process)
		return urs_err_set(err, -EINVAL, "config.json: process: missing (nothing to run)");
	if (o->root) {
		if ((r = urs_state_dir_create(o->root, o->id, err)) < 0)
			return r;
		urs_state_path(dir, sizeof(dir), o->root, o->id, NULL);
	}
	_cleanup_close_ int console = -1;
	_cleanup_free_ char *annotations = NULL;
	int rep[2];
	if ((r = open_console(o, &console, err)) < 0)
		goto fail_dir;
	annotations = annotations_json(o->spec);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rep) < 0) {
		r = urs_err_set(err, -errno, "socketpair: %m");
		goto fail_dir;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		close(rep[0]);
		run_supervisor(o, dir, rep[1], annotations, console, parent);
	}
	close(rep[1]);
	static struct urs_sup_report rp;
	if (pid < 0)
		r = urs_err_set(err, -errno, "fork: %m");
	else
		r = wait_ready(rep[0], pid, &rp, err);
	if (r < 0) {
		close(rep[0]);
		goto fail_dir;
	}
	*sup = pid;
	fill_record(o, pid, &rp, st);
	if (o->root)
		st->annotations = steal_ptr(&annotations);
	if ((r = write_record(o, st, err)) < 0)
		goto fail_kill;
	/* the record is written: the supervisor waits for this word (without
	 * it, we died making the sandbox, and it removes what it made) */
	if (send(rep[0], o->autostart ? "s" : "r", 1, MSG_NOSIGNAL) != 1) {
		r = urs_err_set(err, -EPIPE, "the supervisor died before the container was ready");
		goto fail_kill;
	}
	close(rep[0]);
	return 0;

fail_kill:
	close(rep[0]);
	kill(st->pid, SIGKILL); /* our child (CLONE_PARENT), not reaped: still it */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	waitpid(st->pid, NULL, 0);
	urs_sandbox_cgroup_remove(st->cgroup);
	urs_state_clear(st);
fail_dir:
	if (o->root)
		urs_state_remove(o->root, o->id);
	return r;
}

int urs_sandbox_start(const char *root, struct urs_state *st, struct urs_err *err)
{
	char dir[PATH_MAX], reply[256];
	urs_state_path(dir, sizeof(dir), root, st->id, NULL);
	int r = urs_ctl_call(dir, "start", reply, sizeof(reply));
	if (r < 0)
		return urs_err_set(err, r, "start %s: cannot reach its supervisor: %s", st->id,
				   strerror(-r));
	if (strcmp(reply, "ok"))
		return urs_err_set(err, -EINVAL, "start %s: %s", st->id, reply);
	st->started = true;
	return urs_state_write(root, st, err);
}

void urs_sandbox_hooks(const char *root, const struct urs_state *st, const struct urs_spec *spec,
		       enum urs_hook_kind kind, const char *status, void (*warn)(const char *msg))
{
	struct urs_spec *own = NULL;
	if (!spec && st->hooks >= 0 && !(st->hooks & (1 << kind)))
		return; /* the record says the spec has none: no need to load it */
	if (!spec) {
		char cfg[PATH_MAX];
		urs_state_path(cfg, sizeof(cfg), root, st->id, "config.json");
		if (urs_spec_load(cfg, &own, NULL) < 0)
			return;
		spec = own;
	}
	if (spec->hooks[kind].n) {
		char json[8192];
		struct urs_err err = {{0}};
		if (urs_oci_state_json(json, sizeof(json), st->id, status, st->pid, st->bundle,
				       st->annotations) < 0)
			urs_oci_state_json(json, sizeof(json), st->id, status, st->pid, st->bundle,
					   NULL);
		/* poststart and poststop failures are warnings: the lifecycle goes on */
		for (size_t i = 0; i < spec->hooks[kind].n; i++)
			if (urs_hook_run(&spec->hooks[kind].v[i], kind, i, json, &err) < 0 && warn)
				warn(err.msg);
	}
	urs_spec_free(own);
}
