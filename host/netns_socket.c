/*
 * host/netns_socket.c — sockets made inside another network namespace (see
 * netns_socket.h). Two setns() per socket: a few microseconds, paid once
 * per spliced connection.
 */
#include "host/netns_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int urs_netns_sock_open(struct urs_netns_sock *ns, pid_t pid)
{
	char path[64];
	ns->self = ns->target = -1;
	if (pid <= 0)
		return -EINVAL;
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int) pid);
	int target = open(path, O_RDONLY | O_CLOEXEC);
	if (target < 0) {
		int r = -errno;
		close(self);
		return r;
	}
	ns->self = self;
	ns->target = target;
	return 0;
}

int urs_netns_sock_socket(struct urs_netns_sock *ns, int domain, int type, int proto)
{
	if (ns->self < 0 || ns->target < 0)
		return -EBADF;
	if (setns(ns->target, CLONE_NEWNET) < 0)
		return -errno;
	int fd = socket(domain, type | SOCK_CLOEXEC, proto);
	int r = fd < 0 ? -errno : fd;
	/* back home whatever happened: the supervisor's sockets live there.
	 * Failing that, every host socket the engine makes from now on would
	 * be the sandbox's: end the process rather than run on in there. */
	if (setns(ns->self, CLONE_NEWNET) < 0) {
		fprintf(stderr, "ursa: cannot return to the host network namespace: %m\n");
		abort();
	}
	return r;
}

void urs_netns_sock_close(struct urs_netns_sock *ns)
{
	if (ns->self >= 0)
		close(ns->self);
	if (ns->target >= 0)
		close(ns->target);
	ns->self = ns->target = -1;
}
