/*
 * host/process.c — see process.h.
 */
#include "host/process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pty.h>
#include <stdint.h>
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
#include "host/fdpass.h"
#include "runtime/common.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int urs_console_setup(int console_fd, const struct urs_process *p, struct urs_err *err)
{
	int master, slave;
	char name[64];
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	if (p->has_console_size) {
		ws.ws_row = (unsigned short) p->console_height;
		ws.ws_col = (unsigned short) p->console_width;
	}
	if (openpty(&master, &slave, name, NULL, &ws) < 0)
		return urs_err_set(err, -errno,
				   "process.terminal: opening a pty (is /dev/pts mounted?): %m");
	/* hand the master to whoever listens on the console socket */
	int r = urs_send_fd(console_fd, name, strlen(name), master);
	if (r < 0)
		return urs_err_set(err, r, "--console-socket: sending the pty master: %s",
				   strerror(-r));
	close(master);
	close(console_fd);
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		return urs_err_set(err, -errno, "process.terminal: TIOCSCTTY: %m");
	for (int fd = 0; fd < 3; fd++)
		if (dup2(slave, fd) < 0)
			return urs_err_set(err, -errno, "process.terminal: dup2: %m");
	if (slave > 2)
		close(slave);
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

static int write_str(const char *path, const char *val)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(val);
	return write(fd, val, n) == (ssize_t) n ? 0 : -errno;
}

/* The environment execve gets: the spec's, plus HOME when it has none (from
 * the container's /etc/passwd for the uid, else "/"), as runc does. */
static char **exec_env;

static char **env_with_home(const struct urs_process *p)
{
	for (size_t i = 0; i < p->n_env; i++)
		if (!strncmp(p->env[i], "HOME=", 5))
			return p->env;
	static char home[PATH_MAX + 8];
	snprintf(home, sizeof(home), "HOME=/");
	FILE *f = fopen("/etc/passwd", "re");
	char line[1024];
	while (f && fgets(line, sizeof(line), f)) {
		/* name:pw:uid:gid:gecos:home:shell */
		char *fld[7] = {0}, *t = line;
		int n = 0;
		for (char *c = line;; c++) {
			if (*c == ':' || *c == '\n' || !*c) {
				bool end = !*c || *c == '\n';
				*c = 0;
				if (n < 7)
					fld[n++] = t;
				t = c + 1;
				if (end)
					break;
			}
		}
		if (n >= 6 && fld[2] && (uint32_t) strtoul(fld[2], NULL, 10) == p->user.uid &&
		    fld[5][0]) {
			snprintf(home, sizeof(home), "HOME=%s", fld[5]);
			break;
		}
	}
	if (f)
		fclose(f);
	char **env = calloc(p->n_env + 2, sizeof(char *));
	if (!env)
		return p->env;
	for (size_t i = 0; i < p->n_env; i++)
		env[i] = p->env[i];
	env[p->n_env] = home;
	return env;
}

int urs_process_prepare(const struct urs_process *p, int preserve_fds, void *seccomp,
			int (*load_seccomp)(void *, struct urs_err *), char *exe, size_t len,
			struct urs_err *err)
{
	int r;
	if ((r = apply_rlimits(p, err)) < 0)
		return r;
	if (p->has_oom_score_adj) {
		char v[16];
		snprintf(v, sizeof(v), "%d", p->oom_score_adj);
		if ((r = write_str("/proc/self/oom_score_adj", v)) < 0)
			return urs_err_set(err, r, "process.oomScoreAdj %d: %s", p->oom_score_adj,
					   strerror(-r));
	}
	umask(p->user.has_umask ? p->user.umask : 022);

	/* Without process.capabilities the process gets none, as with runc
	 * (its empty capability config drops every set). */
	struct urs_capsets cs = {0};
	if (p->caps.present)
		cs = (struct urs_capsets){p->caps.bounding, p->caps.effective, p->caps.inheritable,
					  p->caps.permitted, p->caps.ambient};
	if ((r = urs_caps_bound(cs.bounding, err)) < 0)
		return r;
	if (seccomp && !p->no_new_privileges && (r = load_seccomp(seccomp, err)) < 0)
		return r;
	if ((r = urs_caps_apply(&cs, p->user.uid, p->user.gid, p->user.additional_gids,
				p->user.n_additional_gids, err)) < 0)
		return r;
	if (chdir(p->cwd) < 0)
		return urs_err_set(err, -errno, "process.cwd %s: %m", p->cwd);
	exec_env = env_with_home(p);
	if ((r = urs_find_exec(p->args[0], p->env, exe, len)) < 0)
		return urs_err_set(err, r, "process.args[0]: exec: \"%s\": %s", p->args[0],
				   r == -ENOENT ? "executable file not found in $PATH"
						: strerror(-r));
	if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return urs_err_set(err, -errno, "process.noNewPrivileges: %m");
	/* nothing of ours survives execve but stdio and the preserved fds */
	int keep = 3 + (preserve_fds > 0 ? preserve_fds : 0);
	syscall(SYS_close_range, (unsigned) keep, ~0u, CLOSE_RANGE_CLOEXEC);
	return 0;
}

int urs_process_seccomp_late(const struct urs_process *p, void *seccomp,
			     int (*load_seccomp)(void *, struct urs_err *), struct urs_err *err)
{
	if (seccomp && p->no_new_privileges)
		return load_seccomp(seccomp, err);
	return 0;
}

int urs_process_execve(const struct urs_process *p, const char *exe, struct urs_err *err)
{
	execve(exe, p->args, exec_env ? exec_env : p->env);
	return urs_err_set(err, -errno, "exec %s: %m", exe);
}

int urs_process_exec(const struct urs_process *p, const char *exe, void *seccomp,
		     int (*load_seccomp)(void *, struct urs_err *), struct urs_err *err)
{
	int r = urs_process_seccomp_late(p, seccomp, load_seccomp, err);
	return r < 0 ? r : urs_process_execve(p, exe, err);
}
