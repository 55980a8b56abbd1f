/*
 * host/fdpass.h — passing file descriptors over an AF_UNIX socket
 * (SCM_RIGHTS) with a message: the console socket's pty master, the seccomp
 * listener for its agent, the sync protocol's attachments, a sandbox handed
 * over to the shim that serves its pod.
 */
#ifndef URSA_HOST_FDPASS_H
#define URSA_HOST_FDPASS_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define URS_FDPASS_MAX 40 /* fds one message may carry (a hand-over: 37) */

/**
 * urs_send_fds() - send a message with fds attached
 * @sock: an AF_UNIX socket
 * @data: the message
 * @len: its length
 * @fds: the fds (the caller keeps its own copies)
 * @nfd: their count, at most URS_FDPASS_MAX (0: none)
 *
 * On a stream socket a part taken alone is followed by the rest.
 *
 * Return: 0 once the whole message went, or a negative errno.
 */
int urs_send_fds(int sock, const void *data, size_t len, const int *fds, size_t nfd);

/**
 * urs_send_fd() - send @len bytes of @data with @fd attached
 * @sock: an AF_UNIX socket
 * @data: the message
 * @len: its length
 * @fd: the fd, or negative for none
 *
 * Return: 0, or a negative errno.
 */
int urs_send_fd(int sock, const void *data, size_t len, int fd);

/**
 * urs_recv_fd() - receive a message and at most one fd
 * @sock: an AF_UNIX socket
 * @data: where the message goes
 * @len: its room
 * @fd: the fd that came (close-on-exec), or -1 if none
 *
 * Return: the bytes received, or a negative errno (-EPIPE at end of stream).
 */
ssize_t urs_recv_fd(int sock, void *data, size_t len, int *fd);

/**
 * urs_take_fds() - the fds a received message carries
 * @mh: the message as recvmsg filled it in
 * @fds: where they go, in the order sent; the rest of the @max set to -1
 * @max: room in @fds; fds beyond it are closed, never leaked
 *
 * Return: how many were taken into @fds.
 */
size_t urs_take_fds(struct msghdr *mh, int *fds, size_t max);

#endif
