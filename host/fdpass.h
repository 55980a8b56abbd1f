/*
 * host/fdpass.h — passing one file descriptor over an AF_UNIX socket
 * (SCM_RIGHTS) with a message: the console socket's pty master, the seccomp
 * listener for its agent, the sync protocol's attachments.
 */
#ifndef URSA_HOST_FDPASS_H
#define URSA_HOST_FDPASS_H

#include <stddef.h>
#include <sys/types.h>

/* Send @len bytes of @data with @fd attached (no fd if @fd < 0). 0 or -errno. */
int urs_send_fd(int sock, const void *data, size_t len, int fd);
/* Receive up to @len bytes into @data and at most one fd (close-on-exec) into
 * *fd (-1 if none came). Bytes received, or -errno (-EPIPE at end of stream). */
ssize_t urs_recv_fd(int sock, void *data, size_t len, int *fd);

#endif
