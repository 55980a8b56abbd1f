/*
 * shim/stdio.c — open a task's stdio (shim/stdio.h).
 *
 * FIFOs are opened so that no open blocks and no write fails for want of
 * a reader: stdout and stderr O_RDWR (the process holds a reader too, as
 * runc's shim keeps one), stdin O_RDONLY|O_NONBLOCK and then made blocking
 * (the process's reads must block), with the shim's own writer opened
 * after it (a reader exists, so that open does not fail).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/stdio.h"

enum { IO_IN, IO_OUT };

static int open_one(const char *uri, int dir, struct urs_err *error)
{
	const char *path = uri;
	int file = 0;
	if (!uri || !*uri) {
		int fd = open("/dev/null", (dir == IO_IN ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			return urs_err_set(error, -e, "stdio /dev/null: %s", strerror(e));
		}
		return fd;
	}
	if (!strncmp(uri, "fifo://", 7)) {
		path = uri + 7;
	} else if (!strncmp(uri, "file://", 7)) {
		path = uri + 7;
		file = 1;
	} else if (strstr(uri, "://")) {
		return urs_err_set(error, -EPROTONOSUPPORT,
				   "stdio %s: only FIFOs and file:// are supported", uri);
	}
	int fd;
	if (file && dir == IO_OUT)
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	else if (file)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	else if (dir == IO_OUT)
		fd = open(path, O_RDWR | O_CLOEXEC);
	else
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return urs_err_set(error, -e, "stdio %s: %s", path, strerror(e));
	}
	struct stat st;
	if (!file && (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))) {
		close(fd);
		return urs_err_set(error, -EINVAL, "stdio %s: not a FIFO", path);
	}
	if (!file && dir == IO_IN && fcntl(fd, F_SETFL, 0) < 0) {
		int e = errno;
		close(fd);
		return urs_err_set(error, -e, "stdio %s: %s", path, strerror(e));
	}
	return fd;
}

int shim_stdio_open(struct shim_stdio *io, const char *in, const char *out, const char *err,
		    int terminal, struct urs_err *error)
{
	*io = (struct shim_stdio){.fd = {-1, -1, -1}, .stdin_keep = -1};
	const char *uri[3] = {in, out, terminal ? "" : err};
	for (int i = 0; i < 3; i++) {
		io->fd[i] = open_one(uri[i], i ? IO_OUT : IO_IN, error);
		if (io->fd[i] < 0) {
			int r = io->fd[i];
			io->fd[i] = -1;
			shim_stdio_close(io);
			return r;
		}
	}
	if (in && *in && strncmp(in, "file://", 7)) {
		const char *path = strncmp(in, "fifo://", 7) ? in : in + 7;
		io->stdin_keep = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (io->stdin_keep < 0) {
			int e = errno;
			shim_stdio_close(io);
			return urs_err_set(error, -e, "stdio %s: %s", path, strerror(e));
		}
	}
	return 0;
}

void shim_stdio_close(struct shim_stdio *io)
{
	for (int i = 0; i < 3; i++)
		if (io->fd[i] >= 0) {
			close(io->fd[i]);
			io->fd[i] = -1;
		}
}

void shim_stdio_close_stdin(struct shim_stdio *io)
{
	if (io->stdin_keep >= 0) {
		close(io->stdin_keep);
		io->stdin_keep = -1;
	}
}
