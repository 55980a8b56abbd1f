/*
 * shim/backend_cli.c — the Task service's backend on `ursa` commands
 * (shim/backend_cli.h).
 *
 * A command is spawned with the stdio it needs (the container's own for
 * create and exec, /dev/null otherwise), an empty signal mask and default
 * dispositions (the shim blocks SIGCHLD and ignores SIGPIPE; a container
 * must inherit neither), watched by the reaper, and judged by
 * its exit status. Its error is the last "error" line it appended to
 * BUNDLE/log.json (read from where the file ended before it ran), so a
 * failed create tells containerd what ursa said, not "exit status 1".
 * A sandbox this shim serves itself (shim/host.h) starts in-process, and
 * Kill is in-process for every container (host/kill.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/hosted.h"
#include "host/cgroup.h"
#include "host/kill.h"
#include "host/state.h"
#include "runtime/common.h"
#include "runtime/io.h"
#include "shim/backend_cli.h"

extern char **environ;

struct cli_op {
	struct shim_cli *b;
	shim_done done;
	void *arg;
	off_t log_off;
	char log[PATH_MAX];
	char pid_file[PATH_MAX]; /* read into *pid on success, if set */
	pid_t *pid;
};

int shim_cli_init(struct shim_cli *b, struct shim_task *t, const char *ursa, const char *root)
{
	memset(b, 0, sizeof(*b));
	b->t = t;
	if (snprintf(b->root, sizeof(b->root), "%s", root) >= (int) sizeof(b->root))
		return -ENAMETOOLONG;
	if (ursa) {
		snprintf(b->ursa, sizeof(b->ursa), "%s", ursa);
	} else {
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return -errno;
		self[n] = 0;
		snprintf(b->ursa, sizeof(b->ursa), "%s/ursa", dirname(self));
	}
	return access(b->ursa, X_OK) < 0 ? -errno : 0;
}

/* the message of the last error line from @off on, or "" */
static void last_error(const char *log, off_t off, char *msg, size_t len)
{
	msg[0] = 0;
	FILE *f = fopen(log, "re");
	if (!f)
		return;
	char line[4096];
	if (fseeko(f, off, SEEK_SET) == 0)
		while (fgets(line, sizeof(line), f)) {
			json_t *j = json_loads(line, 0, NULL);
			const char *lv = json_string_value(json_object_get(j, "level"));
			const char *m = json_string_value(json_object_get(j, "msg"));
			if (lv && m && !strcmp(lv, "error"))
				snprintf(msg, len, "%s", m);
			json_decref(j);
		}
	fclose(f);
}

static int read_pid(const char *path, pid_t *pid)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	long v = 0;
	int ok = fscanf(f, "%ld", &v) == 1 && v > 0 && v <= INT_MAX;
	fclose(f);
	if (!ok)
		return -EINVAL;
	*pid = (pid_t) v;
	return 0;
}

static void cmd_exited(void *arg, pid_t pid, int status, const struct timespec *at)
{
	(void) pid, (void) at;
	struct cli_op *op = arg;
	char msg[1024];
	int err = 0;
	if (status != 0) {
		last_error(op->log, op->log_off, msg, sizeof(msg));
		if (!msg[0])
			snprintf(msg, sizeof(msg), "ursa exited with status %u",
				 shim_wait_code(status));
		err = -EIO;
	} else if (op->pid && (err = read_pid(op->pid_file, op->pid)) < 0) {
		snprintf(msg, sizeof(msg), "pid file %s: %s", op->pid_file, strerror(-err));
	}
	op->done(op->arg, err, err ? msg : NULL);
	free(op);
}

/* spawn `ursa --root R --log L --log-format json ARGS...` with @io (NULL: /dev/null) */
static int run(struct shim_cli *b, const char *bundle, const char *const *args, const int *io,
	       pid_t *pid_out, const char *pid_file, shim_done done, void *arg)
{
	struct cli_op *op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	*op = (struct cli_op){.b = b, .done = done, .arg = arg, .pid = pid_out};
	snprintf(op->log, sizeof(op->log), "%s/log.json", bundle);
	if (pid_file)
		snprintf(op->pid_file, sizeof(op->pid_file), "%s", pid_file);
	struct stat st;
	op->log_off = stat(op->log, &st) == 0 ? st.st_size : 0;
	const char *argv[24] = {b->ursa, "--root",	 b->root, "--log",
				op->log, "--log-format", "json"};
	size_t n = 7;
	for (size_t i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;

	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	/* the shim blocks SIGCHLD and ignores SIGPIPE: the commands (and
	 * through them the containers) start with neither */
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	for (int i = 0; i < 3; i++) {
		if (io && io[i] >= 0)
			posix_spawn_file_actions_adddup2(&fa, io[i], i);
		else
			posix_spawn_file_actions_addopen(&fa, i, "/dev/null",
							 i ? O_WRONLY : O_RDONLY, 0);
	}
	pid_t pid;
	int e = posix_spawn(&pid, b->ursa, &fa, &at, (char *const *) argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (e) {
		free(op);
		return -e;
	}
	int status;
	struct timespec ts;
	/* a fresh pid: no kept exit can be its (since = now) */
	if (shim_reaper_watch(b->t->reaper, pid, shim_reaper_seq(b->t->reaper), cmd_exited, op,
			      &status, &ts) < 0) {
		kill(pid, SIGKILL);
		free(op);
		return -ENOMEM; /* reaped later as unclaimed */
	}
	return 0;
}

static int cli_create(void *be, struct shim_ctr *c, shim_done done, void *arg)
{
	struct shim_cli *b = be;
	char pid_file[PATH_MAX];
	snprintf(pid_file, sizeof(pid_file), "%s/init.pid", c->bundle);
	unlink(pid_file);
	const char *args[11] = {"create", "--bundle", c->bundle, "--pid-file", pid_file};
	size_t n = 5;
	if (c->init.terminal) /* its stdio is the terminal: the command's is /dev/null */
		args[n++] = "--console-socket", args[n++] = c->init.con_path;
	if (b->host_sock[0]) /* this shim supervises it once it is built */
		args[n++] = "--host-socket", args[n++] = b->host_sock;
	args[n] = c->id;
	return run(b, c->bundle, args, c->init.terminal ? NULL : c->init.io.fd, &c->init.pid,
		   pid_file, done, arg);
}

static int cli_start(void *be, struct shim_ctr *c, shim_done done, void *arg)
{
	struct shim_cli *b = be;
	struct urs_err err = {{0}};
	/* a sandbox this shim serves starts in-process (actors/hosted.h):
	 * @done once its process is exec'd, as `ursa start` returns */
	int r = urs_sup_hosted_start(b->root, c->id, done, arg, &err);
	if (r < 0 && r != -ENOENT && r != -EAGAIN) {
		done(arg, r, err.msg);
		return 0;
	}
	if (r == 0)
		return 0;
	const char *args[] = {"start", c->id, NULL};
	return run(be, c->bundle, args, NULL, NULL, NULL, done, arg);
}

static int cli_exec(void *be, struct shim_proc *p, shim_done done, void *arg)
{
	char spec[PATH_MAX], pid_file[PATH_MAX];
	snprintf(spec, sizeof(spec), "%s/exec-%s.json", p->ctr->bundle, p->exec_id);
	snprintf(pid_file, sizeof(pid_file), "%s/exec-%s.pid", p->ctr->bundle, p->exec_id);
	unlink(pid_file);
	int fd = open(spec, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int w = urs_write_all(fd, p->spec, strlen(p->spec));
	close(fd);
	if (w < 0)
		return w;
	const char *args[11] = {"exec",	      "--process", spec,      "--detach",
				"--pid-file", pid_file,	   p->ctr->id};
	if (p->terminal)
		args[6] = "--tty", args[7] = "--console-socket", args[8] = p->con_path,
		args[9] = p->ctr->id;
	return run(be, p->ctr->bundle, args, p->terminal ? NULL : p->io.fd, &p->pid, pid_file, done,
		   arg);
}

/* in-process, as `ursa kill` would (host/kill.h): no command to spawn for a
 * signal; @done runs before this returns */
static int cli_kill(void *be, struct shim_ctr *c, int sig, bool all, shim_done done, void *arg)
{
	struct shim_cli *b = be;
	struct urs_state st;
	struct urs_err err = {{0}};
	int r = urs_state_read(b->root, c->id, &st, &err);
	if (r == 0) {
		r = urs_state_kill(&st, sig, all, &err);
		urs_state_clear(&st);
	}
	done(arg, r, r < 0 ? err.msg : NULL);
	return 0;
}

static int cli_pause(void *be, struct shim_ctr *c, bool pause, shim_done done, void *arg)
{
	const char *args[] = {pause ? "pause" : "resume", c->id, NULL};
	return run(be, c->bundle, args, NULL, NULL, NULL, done, arg);
}

static int cli_delete(void *be, struct shim_ctr *c, bool force, shim_done done, void *arg)
{
	const char *args[] = {"delete", c->id, NULL, NULL};
	if (force)
		args[1] = "--force", args[2] = c->id;
	return run(be, c->bundle, args, NULL, NULL, NULL, done, arg);
}

static int cli_restore(void *be, struct shim_ctr *c, shim_done done, void *arg)
{
	char pid_file[PATH_MAX];
	snprintf(pid_file, sizeof(pid_file), "%s/init.pid", c->bundle);
	unlink(pid_file);
	struct shim_cli *b = be;
	const char *args[14] = {"restore", "--image-path", c->checkpoint, "--bundle",
				c->bundle, "--detach",	   "--pid-file",  pid_file};
	size_t n = 8;
	if (b->host_sock[0]) /* its supervisor hands it over to us (actors/hosted.h) */
		args[n++] = "--host-socket", args[n++] = b->host_sock;
	if (c->init.terminal)
		args[n++] = "--console-socket", args[n++] = c->init.con_path;
	args[n] = c->id;
	return run(be, c->bundle, args, c->init.terminal ? NULL : c->init.io.fd, &c->init.pid,
		   pid_file, done, arg);
}

static int cli_checkpoint(void *be, struct shim_ctr *c, const char *path, const char *work,
			  bool exit, shim_done done, void *arg)
{
	const char *args[8] = {"checkpoint", "--image-path", path};
	int n = 3;
	if (work && *work)
		args[n++] = "--work-path", args[n++] = work;
	if (!exit)
		args[n++] = "--leave-running";
	args[n] = c->id;
	return run(be, c->bundle, args, NULL, NULL, NULL, done, arg);
}

static int cli_update(void *be, struct shim_ctr *c, const char *json, shim_done done, void *arg)
{
	char file[PATH_MAX];
	snprintf(file, sizeof(file), "%s/update.json", c->bundle);
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int w = urs_write_all(fd, json, strlen(json));
	close(fd);
	if (w < 0)
		return w;
	const char *args[] = {"update", "--resources", file, c->id, NULL};
	return run(be, c->bundle, args, NULL, NULL, NULL, done, arg);
}

/* the container's cgroups (and its live supervisor's pid), from ursa's record */
static int cgroup_sup(struct shim_cli *b, struct shim_ctr *c, struct urs_cgroup *cg, pid_t *sup)
{
	struct urs_state st;
	struct urs_err err = {{0}};
	int r = urs_state_read(b->root, c->id, &st, &err);
	if (r < 0)
		return r;
	r = st.cgroup && *st.cgroup ? urs_cg_from_string(cg, st.cgroup, &err) : -ENOENT;
	*sup = urs_state_sup_live(&st); /* 0 once it handed over (actors/hosted.h) */
	urs_state_clear(&st);
	return r;
}

static int cgroup_of(void *be, struct shim_ctr *c, struct urs_cgroup *cg)
{
	pid_t sup;
	return cgroup_sup(be, c, cg, &sup);
}

static int cli_pids(void *be, struct shim_ctr *c, pid_t **pids, size_t *n)
{
	struct urs_cgroup cg;
	struct urs_err err = {{0}};
	pid_t sup;
	int r = cgroup_sup(be, c, &cg, &sup);
	if (r < 0)
		return r;
	r = urs_cg_pids(&cg, pids, n, &err);
	urs_cg_close(&cg);
	/* the supervisor shares the memory cgroup; it is none of the
	 * container's processes (as ursa ps leaves it out) */
	size_t k = 0;
	for (size_t i = 0; r >= 0 && i < *n; i++)
		if ((*pids)[i] != sup)
			(*pids)[k++] = (*pids)[i];
	if (r >= 0)
		*n = k;
	return r;
}

static int cli_stats(void *be, struct shim_ctr *c, struct urs_cg_stats *st, bool *unified)
{
	struct urs_cgroup cg;
	struct urs_err err = {{0}};
	int r = cgroup_of(be, c, &cg);
	if (r < 0)
		return r;
	*unified = cg.mode == URS_CG_UNIFIED;
	r = urs_cg_stats(&cg, st, &err);
	urs_cg_close(&cg);
	return r;
}

const struct shim_backend shim_cli_backend = {
	.create = cli_create,
	.start = cli_start,
	.exec = cli_exec,
	.kill = cli_kill,
	.pause = cli_pause,
	.delete = cli_delete,
	.restore = cli_restore,
	.checkpoint = cli_checkpoint,
	.update = cli_update,
	.cgroup = cgroup_of,
	.pids = cli_pids,
	.stats = cli_stats,
};
