/*
 * cmd/remote.c — the CLI's side of ursa-store (cmd/remote.h): the stage
 * directory, the process and its pipes, the short line protocol of
 * cmd/store_main.c.
 */
#include "cmd/remote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/key.h"
#include "host/fs.h"
#include "host/proc.h"
#include "runtime/common.h"
#include "runtime/io.h"

#define PAGE_SIZE_IMG 4096 /* pages.img's header page: the data follows */

/* ursa-store beside the running ursa, else on PATH */
static void helper_path(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(out, len, "%s/ursa-store", self);
			if (access(out, X_OK) == 0)
				return;
		}
	}
	snprintf(out, len, "ursa-store");
}

static pid_t spawn(char *const argv[], const int fds[4], bool detach, struct urs_err *err);

#define GC_LOG_MAX (1 << 20) /* ROOT/store-gc.log is emptied past this */

/* ROOT/store-gc.log for the journal ROOT/.remote/NAME.mpu, opened to
 * append (emptied first once past GC_LOG_MAX), or -1 */
static int gc_log_open(const char *journal)
{
	char log[PATH_MAX];
	snprintf(log, sizeof(log), "%s", journal);
	for (int i = 0; i < 2; i++) {
		char *slash = strrchr(log, '/');
		if (!slash)
			return -1;
		*slash = 0;
	}
	if (strlen(log) + sizeof("/store-gc.log") > sizeof(log))
		return -1;
	strcat(log, "/store-gc.log");
	int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
		      0600);
	struct stat sb;
	if (fd >= 0 && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1)) {
		close(fd); /* not ours to write (ROOT is root's alone: not expected) */
		return -1;
	}
	if (fd >= 0 && sb.st_size > GC_LOG_MAX && ftruncate(fd, 0) < 0) {
		/* appended to as it is */
	}
	return fd;
}

/* `ursa-store gc JOURNAL`, detached: the multipart upload an ursa-store
 * killed halfway left open is aborted (cmd/store_main.c), without making
 * this command wait on a store that may be unreachable; what it did or
 * why it could not goes to ROOT/store-gc.log (docs/storage.md) */
static void gc_spawn(const char *journal)
{
	char *argv[] = {"ursa-store", "gc", (char *) journal, NULL};
	_cleanup_close_ int log = gc_log_open(journal);
	int fds[4] = {-1, log, log, -1};
	struct urs_err err = {{0}};
	if (spawn(argv, fds, true, &err) < 0)
		fprintf(stderr, "ursa: %s (the upload in %s stays open)\n", err.msg, journal);
}

/* A stage directory is named WHAT.PID.START.XXXXXX after the process that
 * made it (its start time: a reused pid is someone else). One whose maker
 * is gone was left by a command killed halfway (SIGKILL, the OOM killer, a
 * crash): removed here, by the next one; its ursa-store's journal
 * (STAGE.mpu: a multipart upload still open) goes to gc. */
static void sweep_stages(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		int pid;
		unsigned long long start;
		char what[8], path[PATH_MAX];
		if (sscanf(e->d_name, "%7[a-z].%d.%llu.", what, &pid, &start) != 3 || pid <= 0 ||
		    start == 0 || urs_proc_alive(pid, start))
			continue;
		snprintf(path, sizeof(path), "%s/%s", base, e->d_name);
		size_t n = strlen(e->d_name);
		if (n > 4 && !strcmp(e->d_name + n - 4, ".mpu"))
			gc_spawn(path);
		else
			urs_remote_rm_stage(path);
	}
	if (d)
		closedir(d);
}

static int make_stage(const char *root, const char *what, char *stage, size_t len,
		      struct urs_err *err)
{
	char base[PATH_MAX];
	snprintf(base, sizeof(base), "%s/.remote", root);
	uint64_t start = 0;
	int r = urs_proc_start_time(getpid(), &start);
	if (r < 0 || start == 0)
		return urs_err_set(err, r < 0 ? r : -EIO,
				   "a stage directory in %s: this process's start time: %s", base,
				   strerror(r < 0 ? -r : EIO));
	/* again if ROOT/.remote went with another command's last stage
	 * between its mkdir and our mkdtemp (urs_remote_rm_stage) */
	for (int tries = 0; tries < 8; tries++) {
		if ((r = urs_mkdir_p(base, 0700)) < 0)
			return urs_err_set(err, r, "creating %s: %s", base, strerror(-r));
		if (tries == 0)
			sweep_stages(base);
		snprintf(stage, len, "%s/%s.%d.%llu.XXXXXX", base, what, (int) getpid(),
			 (unsigned long long) start);
		if (mkdtemp(stage))
			return 0;
		if (errno != ENOENT)
			break;
	}
	return urs_err_set(err, -errno, "creating a stage directory in %s: %m", base);
}

void urs_remote_rm_stage(const char *stage)
{
	if (!stage || !*stage)
		return;
	urs_rm_tree(stage);
	/* ROOT/.remote goes with its last stage or journal (make_stage
	 * makes it again if it went under it) */
	urs_rmdir_parent_named(stage, "/.remote");
}

/* fork + exec ursa-store with @fds as its 0, 1, 2 and 3 (-1: /dev/null) */
/* ursa-store with fds[i] as its fd i (-1: /dev/null); @detach: as the
 * grandchild, reparented at once (it outlives us: a lazy restore's
 * server), and 0 is returned once the child between has been reaped */
static pid_t spawn(char *const argv[], const int fds[4], bool detach, struct urs_err *err)
{
	char path[PATH_MAX];
	helper_path(path, sizeof(path));
	pid_t pid = fork();
	if (pid < 0)
		return urs_err_set(err, -errno, "starting ursa-store: %m");
	if (pid == 0 && detach && fork() != 0)
		_exit(0); /* (a failed fork: the EOF says ursa-store did not start) */
	if (pid > 0 && detach) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		return 0;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		int tmp[4];
		for (int i = 0; i < 4; i++)
			tmp[i] = fcntl(fds[i] >= 0 ? fds[i] : null, F_DUPFD_CLOEXEC, 10);
		for (int i = 0; i < 4; i++)
			dup2(tmp[i], i);
		close_range(4, ~0u, 0);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvp(path, argv);
		fprintf(stderr, "ursa-store: cannot run %s: %m\n", path);
		_exit(127);
	}
	return pid;
}

int urs_remote_put_start(const char *url, const char *root, const char *profile,
			 const char *key_file, struct urs_remote_job *j, struct urs_err *err)
{
	*j = (struct urs_remote_job){.pid = -1, .pages_fd = -1, .ctl_fd = -1, .reply_fd = -1};
	char key[PATH_MAX];
	if (key_file ? snprintf(key, sizeof(key), "%s", key_file) >= (int) sizeof(key)
		     : ckpt_key_path(key, sizeof(key)) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "checkpoint key: path too long");
	int r = make_stage(root, "put", j->stage, sizeof(j->stage), err);
	if (r < 0)
		return r;
	int pages[2], ctl[2], reply[2];
	if (pipe2(pages, O_CLOEXEC) < 0)
		goto fail_errno;
	if (pipe2(ctl, O_CLOEXEC) < 0) {
		close(pages[0]), close(pages[1]);
		goto fail_errno;
	}
	if (pipe2(reply, O_CLOEXEC) < 0) {
		close(pages[0]), close(pages[1]), close(ctl[0]), close(ctl[1]);
		goto fail_errno;
	}
	fcntl(pages[1], F_SETPIPE_SZ, 1 << 20); /* fewer wake-ups; best effort */
	/* ursa-store gone: EPIPE for the dumper, never a signal that kills us
	 * with the sandbox frozen */
	signal(SIGPIPE, SIG_IGN);
	char stream[64];
	snprintf(stream, sizeof(stream), "pages.img@%d", PAGE_SIZE_IMG);
	char *argv[12] = {"ursa-store", "put", "--key-file", key, "--stream", stream};
	int n = 6;
	if (profile)
		argv[n++] = "--profile", argv[n++] = (char *) profile;
	argv[n++] = (char *) url;
	argv[n++] = j->stage;
	int fds[4] = {ctl[0], reply[1], -1, pages[0]};
	j->pid = spawn(argv, fds, false, err);
	close(ctl[0]), close(reply[1]), close(pages[0]);
	j->pages_fd = pages[1], j->ctl_fd = ctl[1], j->reply_fd = reply[0];
	if (j->pid < 0) {
		r = j->pid;
		urs_remote_job_end(j);
		return r;
	}
	return 0;
fail_errno:
	r = urs_err_set(err, -errno, "pipes for ursa-store: %m");
	urs_remote_rm_stage(j->stage);
	j->stage[0] = 0;
	return r;
}

/* one line from ursa-store: "WORD ...", or its error ("error: ...") */
static int reply_line(struct urs_remote_job *j, const char *want, char *line, size_t len,
		      struct urs_err *err)
{
	size_t n = urs_read_line(j->reply_fd, line, len);
	if (!strncmp(line, want, strlen(want)))
		return 0;
	if (!strncmp(line, "error: ", 7))
		return urs_err_set(err, -EIO, "%s", line + 7);
	int st = 0; /* no reply: it ended (its stdout closed): how? */
	if (!n && j->pid > 0 && waitpid(j->pid, &st, 0) == j->pid) {
		j->pid = -1;
		if (WIFSIGNALED(st))
			return urs_err_set(err, -EIO, "ursa-store was killed by signal %d (%s)",
					   WTERMSIG(st), strsignal(WTERMSIG(st)));
		return urs_err_set(err, -EIO, "ursa-store exited with status %d without saying why",
				   WEXITSTATUS(st));
	}
	return urs_err_set(err, -EIO, "ursa-store ended without saying why (%s)",
			   n ? line : "no reply");
}

int urs_remote_put_commit(struct urs_remote_job *j, struct urs_err *err)
{
	char line[1200];
	close(j->pages_fd); /* the end of the page data */
	j->pages_fd = -1;
	int r = reply_line(j, "streamed ", line, sizeof(line), err);
	if (r == 0 && urs_write_all(j->ctl_fd, "commit\n", 7) < 0)
		r = urs_err_set(err, -EIO, "ursa-store is gone");
	if (r == 0)
		r = reply_line(j, "ok ", line, sizeof(line), err);
	return r;
}

int urs_remote_put_cut(struct urs_remote_job *j, uint64_t len, struct urs_err *err)
{
	char line[1200], want[40];
	int n = snprintf(want, sizeof(want), "cut %llu\n",
			 (unsigned long long) (PAGE_SIZE_IMG + len)); /* where in pages.img */
	if (urs_write_all(j->ctl_fd, want, (size_t) n) < 0)
		return urs_err_set(err, -EIO, "ursa-store is gone");
	want[n - 1] = 0; /* the same words back once the object is complete */
	int r = reply_line(j, want, line, sizeof(line), err);
	if (r == 0 && strcmp(line, want))
		r = urs_err_set(err, -EPROTO, "ursa-store answered \"%s\" to \"%s\"", line, want);
	return r < 0 ? urs_err_wrap(err, r, "object storage: completing the pre-copied pages") : 0;
}

int urs_remote_put_why(struct urs_remote_job *j, struct urs_err *err)
{
	char line[1200];
	if (j->pages_fd >= 0)
		close(j->pages_fd);
	j->pages_fd = -1;
	return reply_line(j, "streamed ", line, sizeof(line), err);
}

void urs_remote_job_end(struct urs_remote_job *j)
{
	int *fds[] = {&j->pages_fd, &j->ctl_fd, &j->reply_fd};
	for (size_t k = 0; k < URS_ARRAY_SIZE(fds); k++)
		if (*fds[k] >= 0) {
			close(*fds[k]); /* its stdin closed without "commit": it removes
					   what it wrote */
			*fds[k] = -1;
		}
	if (j->pid > 0)
		while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
			;
	j->pid = -1;
	char journal[PATH_MAX + 8]; /* left: ursa-store did not end the upload */
	snprintf(journal, sizeof(journal), "%s.mpu", j->stage);
	if (j->stage[0] && access(journal, F_OK) == 0)
		gc_spawn(journal);
	urs_remote_rm_stage(j->stage);
	j->stage[0] = 0;
}

int urs_remote_fetch(const char *url, const char *root, const char *profile, char *stage,
		     size_t len, int *serve, struct urs_err *err)
{
	char key[PATH_MAX], dir[PATH_MAX];
	if (ckpt_key_path(key, sizeof(key)) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "checkpoint key: path too long");
	int r = make_stage(root, "get", dir, sizeof(dir), err);
	if (r < 0)
		return r;
	snprintf(stage, len, "%s/image", dir);
	int out[2];
	if (pipe2(out, O_CLOEXEC) < 0) {
		urs_remote_rm_stage(dir);
		return urs_err_set(err, -errno, "a pipe for ursa-store: %m");
	}
	int sp[2] = {-1, -1};
	if (serve && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		close(out[0]), close(out[1]);
		urs_remote_rm_stage(dir);
		return urs_err_set(err, -errno, "a socket for ursa-store: %m");
	}
	char *argv[11] = {"ursa-store", "get", "--key-file", key};
	int n = 4;
	if (profile)
		argv[n++] = "--profile", argv[n++] = (char *) profile;
	if (serve)
		argv[n++] = "--serve";
	argv[n++] = (char *) url;
	argv[n++] = stage;
	int fds[4] = {-1, out[1], out[1], sp[1]};
	pid_t pid = spawn(argv, fds, serve != NULL, err);
	close(out[1]);
	if (sp[1] >= 0)
		close(sp[1]);
	char msg[1200] = "";
	size_t m = 0;
	ssize_t k;
	while (pid >= 0 && m + 1 < sizeof(msg) &&
	       ((k = read(out[0], msg + m, sizeof(msg) - 1 - m)) > 0 || (k < 0 && errno == EINTR)))
		m += k > 0 ? (size_t) k : 0;
	msg[m] = 0;
	close(out[0]);
	int status = 0;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* "ok": the rest is in, it serves on; warnings before it are passed on */
	size_t ml = strlen(msg);
	if (serve && pid == 0 && ml >= 3 && !strcmp(msg + ml - 3, "ok\n") &&
	    (ml == 3 || msg[ml - 4] == '\n')) {
		if (ml > 3)
			fprintf(stderr, "%.*s", (int) (ml - 3), msg);
		*serve = sp[0];
		return 0;
	}
	if (!serve && pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (sp[0] >= 0)
		close(sp[0]); /* a detached ursa-store that failed ends with it */
	urs_remote_rm_stage(dir);
	stage[0] = 0;
	if (pid < 0)
		return pid;
	char *line = msg, *nl; /* its first line, past URSA_CKPT_TRACE's (ckpt/trace.h) */
	while (!strncmp(line, "ursa-trace ", 11) && (nl = strchr(line, '\n')))
		line = nl + 1;
	if ((nl = strchr(line, '\n')))
		*nl = 0;
	return urs_err_set(err, -EIO, "restore: %s",
			   !strncmp(line, "ursa-store: ", 12) ? line + 12
			   : *line			      ? line
							      : "ursa-store failed");
}

/* ckpt_run_store on a struct urs_remote_ckpt */
static int ckpt_start(void *ctx, char *dir, size_t len, int *pages_fd, struct urs_err *err)
{
	struct urs_remote_ckpt *rc = ctx;
	int r = urs_remote_put_start(rc->url, rc->root, rc->profile, rc->key_file, &rc->job, err);
	if (r < 0)
		return r;
	snprintf(dir, len, "%s", rc->job.stage);
	*pages_fd = rc->job.pages_fd;
	return 0;
}

static int ckpt_commit(void *ctx, struct urs_err *err)
{
	return urs_remote_put_commit(&((struct urs_remote_ckpt *) ctx)->job, err);
}

static int ckpt_cut(void *ctx, uint64_t len, struct urs_err *err)
{
	return urs_remote_put_cut(&((struct urs_remote_ckpt *) ctx)->job, len, err);
}

static int ckpt_why(void *ctx, struct urs_err *err)
{
	return urs_remote_put_why(&((struct urs_remote_ckpt *) ctx)->job, err);
}

static void ckpt_end(void *ctx)
{
	urs_remote_job_end(&((struct urs_remote_ckpt *) ctx)->job);
}

const struct ckpt_run_store urs_remote_ckpt_ops = {
	.start = ckpt_start,
	.commit = ckpt_commit,
	.cut = ckpt_cut,
	.why = ckpt_why,
	.end = ckpt_end,
};
