/*
 * host/fdpass.c — see fdpass.h.
 */
#include "host/fdpass.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int urs_send_fds(int sock, const void *data, size_t len, const int *fds, size_t nfd)
{
	if (nfd > URS_FDPASS_MAX)
		return -EINVAL;
	char cbuf[CMSG_SPACE(URS_FDPASS_MAX * sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *) data, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfd) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* a stream socket may take part of it: the fds went with that part,
	 * so the rest must follow (a datagram's is all or nothing) */
	for (size_t off = (size_t) n; off < len; off += (size_t) n) {
		do
			n = send(sock, (const char *) data + off, len - off, MSG_NOSIGNAL);
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
	}
	return 0;
}

int urs_send_fd(int sock, const void *data, size_t len, int fd)
{
	return urs_send_fds(sock, data, len, &fd, fd >= 0);
}

size_t urs_take_fds(struct msghdr *mh, int *fds, size_t max)
{
	size_t have = 0;
	for (size_t i = 0; i < max; i++)
		fds[i] = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (have < max)
				fds[have++] = fd;
			else
				close(fd);
		}
	}
	return have;
}

ssize_t urs_recv_fd(int sock, void *data, size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = data, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	*fd = -1;
	ssize_t n;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : -EPIPE;
	urs_take_fds(&mh, fd, 1);
	return n;
}
