/*
 * host/netns_socket.h — sockets made inside another network namespace.
 *
 * The supervisor lives in the host's namespace; a socket created while the
 * calling thread is in the sandbox's namespace stays bound to it for life.
 * This keeps one fd on each namespace (ours and the sandbox's) and creates
 * a socket by setns()-ing into the sandbox's, calling socket(), and
 * setns()-ing back — on the supervisor's single loop thread, so nothing
 * else of ours ever runs while we are away.
 */
#ifndef URSA_HOST_NETNS_SOCKET_H
#define URSA_HOST_NETNS_SOCKET_H

#include <sys/types.h>

struct urs_netns_sock {
	int self;   /* our own net namespace (where we return) */
	int target; /* the sandbox's */
};

#define URS_NETNS_SOCK_INIT              \
	{                                \
		.self = -1, .target = -1 \
	}

/* Open both namespace fds: ours and @pid's (/proc/PID/ns/net). 0 or -errno;
 * on error nothing is left open. */
int urs_netns_sock_open(struct urs_netns_sock *ns, pid_t pid);
/* socket(2) inside the target namespace (SOCK_CLOEXEC is added). Returns the
 * fd or -errno; the calling thread is back in its own namespace either way
 * (if it cannot return, the process aborts: it must never go on working
 * from inside the sandbox's namespace). */
int urs_netns_sock_socket(struct urs_netns_sock *ns, int domain, int type, int proto);
void urs_netns_sock_close(struct urs_netns_sock *ns);

#endif
