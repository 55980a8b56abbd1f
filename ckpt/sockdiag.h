/*
 * ckpt/sockdiag.h — what the dumper needs to know about the sockets of a
 * network namespace that /proc does not say: the peer of a unix socket, its
 * queue length and whether it has a name; the state, address and backlog of
 * a TCP socket; the addresses of a UDP socket. Read once per namespace over NETLINK_SOCK_DIAG
 * (unix_diag, inet_diag), from a netlink socket made inside that namespace.
 */
#ifndef URSA_CKPT_SOCKDIAG_H
#define URSA_CKPT_SOCKDIAG_H

#include <stdint.h>
#include <sys/types.h>

#include "runtime/err.h"

struct ckpt_sk_info {
	uint64_t ino;
	uint32_t family;   /* AF_UNIX, AF_INET, AF_INET6 */
	uint32_t type;	   /* SOCK_*: inet: SOCK_STREAM for TCP, SOCK_DGRAM for UDP */
	uint32_t state;	   /* TCP_* numbering (unix: ESTABLISHED 1, CLOSE 7, LISTEN 10) */
	uint32_t rqlen;	   /* unix: bytes (stream) queued for reading */
	uint32_t backlog;  /* listening TCP or unix: the listen() backlog */
	uint32_t named;	   /* unix: bound to a path or abstract name (its length) */
	char name[108];	   /* unix: that name (abstract: a leading NUL), not terminated */
	uint64_t peer;	   /* unix: the peer's inode, 0 if none */
	uint16_t port;	   /* inet: local port, host order */
	uint8_t addr[16];  /* inet: local address, network order */
	uint16_t rport;	   /* inet: remote port (0: not connected), host order */
	uint8_t raddr[16]; /* inet: remote address, network order */
};

struct ckpt_sockdiag {
	uint64_t netns; /* inode of the namespace this was read from */
	struct ckpt_sk_info *v;
	uint32_t n, cap;
};

/**
 * ckpt_sockdiag_load() - read the unix, TCP and UDP sockets of @pid's
 *                        network namespace
 * @pid: a task in the namespace
 * @d: filled (cleared first); release with ckpt_sockdiag_free()
 * @err: what failed
 *
 * The calling thread enters the namespace (setns) just long enough to make
 * the netlink socket, then returns to its own (it aborts the process if it
 * cannot: it must not stay in the sandbox's namespace). Five dumps: unix,
 * then TCP and UDP for IPv4 and IPv6.
 *
 * Return: 0, or a negative errno (-EPERM without the privilege to enter
 * the namespace; -ENOMEM; a netlink error); nothing to free then.
 */
int ckpt_sockdiag_load(pid_t pid, struct ckpt_sockdiag *d, struct urs_err *err);

/**
 * ckpt_sockdiag_find() - the socket of inode @ino
 * @d: the sockets read
 * @ino: the socket's inode (from /proc/PID/fd)
 *
 * A linear search.
 *
 * Return: its record, or NULL.
 */
const struct ckpt_sk_info *ckpt_sockdiag_find(const struct ckpt_sockdiag *d, uint64_t ino);

/**
 * ckpt_sockdiag_free() - free the records; @d is zeroed
 * @d: the sockets read (a zeroed one is fine)
 */
void ckpt_sockdiag_free(struct ckpt_sockdiag *d);

#endif
