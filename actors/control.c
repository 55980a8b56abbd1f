/*
 * actors/control.c — the client side of the supervisor's control protocol
 * (actors/control.h): what `ursa` commands use to talk to a sandbox's
 * supervisor over ROOT/ID/ctl.sock. The server side, a loop actor, is in
 * actors/sup_control.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "actors/control.h"
#include "runtime/common.h"

int urs_ctl_send(const char *state_dir, const char *req)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", state_dir, CTL_NAME) >=
	    (int) sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
	    send(fd, req, strlen(req) + 1, MSG_NOSIGNAL) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

int urs_ctl_recv(int fd, char *reply, size_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r = 0;
	if (poll(&p, 1, 10000) <= 0) {
		r = -ETIMEDOUT;
	} else {
		ssize_t n = recv(fd, reply, len - 1, 0);
		if (n <= 0)
			r = n < 0 ? -errno : -EPIPE;
		else
			reply[n] = 0;
	}
	close(fd);
	return r;
}

int urs_ctl_call_alloc(const char *state_dir, const char *req, char **reply)
{
	*reply = NULL;
	_cleanup_close_ int fd = urs_ctl_send(state_dir, req);
	if (fd < 0)
		return fd;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 10000) <= 0)
		return -ETIMEDOUT;
	char c;
	/* the packet's length first (MSG_TRUNC), then the packet */
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_TRUNC);
	if (n <= 0)
		return n < 0 ? -errno : -EPIPE;
	char *b = malloc((size_t) n + 1);
	if (!b)
		return -ENOMEM;
	ssize_t got = recv(fd, b, (size_t) n, 0);
	if (got <= 0) {
		int r = got < 0 ? -errno : -EPIPE;
		free(b);
		return r;
	}
	b[got] = 0;
	*reply = b;
	return (int) got;
}

int urs_ctl_call(const char *state_dir, const char *req, char *reply, size_t len)
{
	int fd = urs_ctl_send(state_dir, req);
	return fd < 0 ? fd : urs_ctl_recv(fd, reply, len);
}
