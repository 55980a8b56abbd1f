/*
 * actors/netopts.c — network options of a sandbox (mode, port forwards):
 * parsing of `-p [HOSTIP:]HOSTPORT:SANDBOXPORT[/tcp|udp]` and of the
 * run.ursa.ports annotation, and binding the forwards' host sockets before
 * the sandbox is reported ready (see netstack.h); and the receive-slot
 * policy the netstack applies (a pure function, so it is tested alone).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/netstack.h"
#include "runtime/common.h"

void urs_netopts_default(struct urs_netopts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = URS_NET_SANDBOX;
	o->max_slots = 8;
	o->idle_ms = 2000;
	o->ipv6 = true;
	for (unsigned i = 0; i < URS_NET_MAX_FWD; i++)
		o->fwd[i].fd = -1;
}

int urs_netopts_mode(struct urs_netopts *o, const char *mode, struct urs_err *err)
{
	if (!strcmp(mode, "sandbox"))
		o->mode = URS_NET_SANDBOX;
	else if (!strcmp(mode, "none"))
		o->mode = URS_NET_NONE;
	else if (!strcmp(mode, "host"))
		o->mode = URS_NET_HOST;
	else
		return urs_err_set(err, -EINVAL, "network \"%s\": expected sandbox, none or host",
				   mode);
	return 0;
}

static int parse_port(const char *s, size_t len, uint16_t *out)
{
	char buf[8];
	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	char *end;
	long v = strtol(buf, &end, 10);
	if (*end || v < 1 || v > 65535)
		return -EINVAL;
	*out = (uint16_t) v;
	return 0;
}

int urs_netopts_forward(struct urs_netopts *o, const char *spec, struct urs_err *err)
{
	if (o->n_fwd >= URS_NET_MAX_FWD)
		return urs_err_set(err, -E2BIG, "port forward %s: at most %d forwards", spec,
				   URS_NET_MAX_FWD);
	struct urs_netfwd *f = &o->fwd[o->n_fwd];
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->proto = IPPROTO_TCP;
	char s[128];
	if (snprintf(s, sizeof(s), "%s", spec) >= (int) sizeof(s))
		goto bad;
	char *slash = strrchr(s, '/');
	if (slash) {
		if (!strcmp(slash + 1, "tcp"))
			f->proto = IPPROTO_TCP;
		else if (!strcmp(slash + 1, "udp"))
			f->proto = IPPROTO_UDP;
		else
			return urs_err_set(err, -EINVAL,
					   "port forward %s: protocol \"%s\": expected tcp or udp",
					   spec, slash + 1);
		*slash = 0;
	}
	/* split off SANDBOXPORT and HOSTPORT from the right */
	char *c2 = strrchr(s, ':');
	if (!c2)
		goto bad;
	*c2 = 0;
	char *c1 = strrchr(s, ':');
	const char *hostip = "127.0.0.1", *hostport = s;
	if (c1) {
		*c1 = 0;
		hostip = s;
		hostport = c1 + 1;
	}
	uint16_t hp;
	if (parse_port(hostport, strlen(hostport), &hp) < 0 ||
	    parse_port(c2 + 1, strlen(c2 + 1), &f->sandbox_port) < 0)
		goto bad;
	char ip[64];
	size_t iplen = strlen(hostip);
	if (iplen >= 2 && hostip[0] == '[' && hostip[iplen - 1] == ']')
		snprintf(ip, sizeof(ip), "%.*s", (int) iplen - 2, hostip + 1);
	else
		snprintf(ip, sizeof(ip), "%s", hostip);
	struct sockaddr_in *a4 = (struct sockaddr_in *) &f->host;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *) &f->host;
	if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(hp);
		f->hostlen = sizeof(*a4);
	} else if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(hp);
		f->hostlen = sizeof(*a6);
	} else {
		return urs_err_set(err, -EINVAL, "port forward %s: \"%s\" is not an IP address",
				   spec, ip);
	}
	o->n_fwd++;
	return 0;
bad:
	return urs_err_set(err, -EINVAL,
			   "port forward %s: expected [HOSTIP:]HOSTPORT:SANDBOXPORT[/tcp|udp] "
			   "with ports 1-65535",
			   spec);
}

int urs_netopts_forwards(struct urs_netopts *o, const char *list, struct urs_err *err)
{
	char buf[2048];
	if (snprintf(buf, sizeof(buf), "%s", list) >= (int) sizeof(buf))
		return urs_err_set(err, -E2BIG, "port forwards: list too long");
	char *save = NULL;
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		int r = urs_netopts_forward(o, t, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int urs_netfwd_bind(struct urs_netopts *o, struct urs_err *err)
{
	for (unsigned i = 0; i < o->n_fwd; i++) {
		struct urs_netfwd *f = &o->fwd[i];
		int type = f->proto == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM;
		_cleanup_close_ int fd =
			socket(f->host.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		char ip[64] = "?";
		uint16_t port;
		if (f->host.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *) &f->host;
			inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
			port = ntohs(a->sin_port);
		} else {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *) &f->host;
			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
			port = ntohs(a->sin6_port);
		}
		const char *proto = f->proto == IPPROTO_TCP ? "tcp" : "udp";
		if (fd < 0)
			goto fail;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (f->host.ss_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *) &f->host, f->hostlen) < 0)
			goto fail;
		if (type == SOCK_STREAM && listen(fd, 128) < 0)
			goto fail;
		f->fd = steal_fd(&fd);
		continue;
	fail:;
		int r = -errno;
		urs_netfwd_close(o);
		return urs_err_set(err, r, "port forward %s:%u/%s -> %u: %s", ip, port, proto,
				   f->sandbox_port, strerror(-r));
	}
	return 0;
}

void urs_netfwd_close(struct urs_netopts *o)
{
	for (unsigned i = 0; i < o->n_fwd; i++) {
		if (o->fwd[i].fd >= 0)
			close(o->fwd[i].fd);
		o->fwd[i].fd = -1;
	}
}

uint32_t urs_netstack_slots_next(uint32_t active, uint32_t max, bool backlog, bool idle_expired)
{
	if (backlog)
		return active * 2 < max ? active * 2 : max;
	if (idle_expired)
		return 1;
	return active;
}
