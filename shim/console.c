/*
 * shim/console.c — a task's terminal (shim/console.h): two pumps, each a
 * read op into its buffer then write ops until it is written, on the loop.
 * The output pump ends when the master reads EOF or EIO (no slave end left:
 * the terminal's processes are gone), after writing what it read; then the
 * stdout FIFO is closed at once (the client's reader sees end-of-file, as
 * runc's shim closes it) and the input pump is stopped. The input pump also
 * ends at the stdin FIFO's EOF. The record is the owner's until
 * shim_console_close(), whatever the pumps did: it is freed only then, once
 * no op is in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "host/fdpass.h"
#include "runtime/common.h"
#include "shim/console.h"

struct pump {
	struct shim_console *c;
	struct urs_op op;
	int from, to;
	size_t len, off; /* bytes read, bytes of them written */
	bool stopped;
	uint8_t buf[16384];
};

struct shim_console {
	struct urs_loop *loop;
	int master, in, out;
	bool closing;
	struct pump p[2]; /* p[0]: in -> master, p[1]: master -> out */
};

int shim_console_listen(const char *dir, char *path, size_t len)
{
	static unsigned n;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(path, len, "%s/console-%d-%u.sock", dir, getpid(), n++) >= (int) len ||
	    strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(fd, 1) < 0) {
		int e = -errno;
		close(fd);
		unlink(path);
		return e;
	}
	return fd;
}

int shim_console_take(int lfd, const char *path)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	int r = c < 0 ? -errno : 0, fd = -1;
	close(lfd);
	unlink(path);
	if (r < 0)
		return r;
	char b[256];
	ssize_t n = urs_recv_fd(c, b, sizeof(b), &fd);
	close(c);
	if (n < 0)
		return (int) n;
	return fd < 0 ? -EBADMSG : fd;
}

static void pump_read(struct pump *p);

static void maybe_free(struct shim_console *c)
{
	if (!c->closing)
		return; /* the owner's until shim_console_close() */
	for (int i = 0; i < 2; i++)
		if (urs_op_busy(&c->p[i].op))
			return;
	if (c->in >= 0)
		close(c->in);
	if (c->out >= 0)
		close(c->out);
	close(c->master);
	free(c);
}

static void pump_stop(struct pump *p)
{
	struct shim_console *c = p->c;
	p->stopped = true;
	if (p == &c->p[1]) { /* the terminal's output ended: so does the client's */
		close(c->out);
		c->out = -1;
		if (urs_op_busy(&c->p[0].op))
			urs_cancel(c->loop, &c->p[0].op);
	}
	maybe_free(c);
}

static void write_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct pump *p = container_of(op, struct pump, op);
	if (res <= 0 || p->c->closing) {
		pump_stop(p);
		return;
	}
	p->off += (size_t) res;
	if (p->off < p->len) {
		io_uring_prep_write(urs_op_sqe(&p->op), p->to, p->buf + p->off, p->len - p->off,
				    -1);
		urs_submit(p->c->loop, &p->op, write_cb);
	} else {
		pump_read(p);
	}
}

static void read_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct pump *p = container_of(op, struct pump, op);
	if (res <= 0 || p->c->closing) { /* EOF, or EIO: the slave side is gone */
		pump_stop(p);
		return;
	}
	p->len = (size_t) res;
	p->off = 0;
	io_uring_prep_write(urs_op_sqe(&p->op), p->to, p->buf, p->len, -1);
	urs_submit(p->c->loop, &p->op, write_cb);
}

static void pump_read(struct pump *p)
{
	io_uring_prep_read(urs_op_sqe(&p->op), p->from, p->buf, sizeof(p->buf), -1);
	urs_submit(p->c->loop, &p->op, read_cb);
}

struct shim_console *shim_console_start(struct urs_loop *loop, int master, int in, int out)
{
	struct shim_console *c = calloc(1, sizeof(*c));
	if (!c) {
		close(master);
		if (in >= 0)
			close(in);
		close(out);
		return NULL;
	}
	*c = (struct shim_console){.loop = loop, .master = master, .in = in, .out = out};
	c->p[0] = (struct pump){.c = c, .from = in, .to = master};
	c->p[1] = (struct pump){.c = c, .from = master, .to = out};
	if (in >= 0)
		pump_read(&c->p[0]);
	else
		c->p[0].stopped = true;
	pump_read(&c->p[1]);
	return c;
}

int shim_console_resize(struct shim_console *c, uint32_t cols, uint32_t rows)
{
	struct winsize ws = {.ws_col = (unsigned short) cols, .ws_row = (unsigned short) rows};
	return ioctl(c->master, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}

void shim_console_close_stdin(struct shim_console *c)
{
	if (urs_op_busy(&c->p[0].op))
		urs_cancel(c->loop, &c->p[0].op);
}

void shim_console_close(struct shim_console *c)
{
	c->closing = true;
	for (int i = 0; i < 2; i++)
		if (urs_op_busy(&c->p[i].op))
			urs_cancel(c->loop, &c->p[i].op);
	maybe_free(c);
}
