/*
 * actors/control.h — the supervisor's control protocol, client side.
 * ROOT/ID/ctl.sock (SOCK_SEQPACKET, root-only): one request per
 * connection, a NUL-terminated word ("start", "ping", "metrics", "guard",
 * "exec-wait", "checkpoint DIR"), one reply, "ok" or "error: ..." (or the
 * metrics text). "guard" gets no reply: the connection is held open.
 */
#ifndef URSA_ACTORS_CONTROL_H
#define URSA_ACTORS_CONTROL_H

#include <stddef.h>

#define CTL_NAME "ctl.sock"

/* One request, its reply into @reply (NUL-terminated); 0 or -errno
 * (-ETIMEDOUT after 10 s). */
int urs_ctl_call(const char *state_dir, const char *req, char *reply, size_t len);
/* The same in two halves, to work while the supervisor answers: send
 * (returns the connection's fd), then receive (closes it). */
int urs_ctl_send(const char *state_dir, const char *req);
int urs_ctl_recv(int fd, char *reply, size_t len);
/* urs_ctl_call for replies of any size (metrics): *@reply is malloc'd and
 * NUL-terminated; returns its length or -errno. */
int urs_ctl_call_alloc(const char *state_dir, const char *req, char **reply);

#endif
