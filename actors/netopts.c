/*
 * actors/netopts.c — network options of a sandbox (mode, port forwards,
 * addresses, policy allow list, flow limit): parsing of `-p
 * [HOSTIP:]HOSTPORT:SANDBOXPORT[/tcp|udp]`, of `--net KEY=VALUE` and of the
 * run.ursa.* annotations, and binding the forwards' host sockets before
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

/* "ADDR/N" with N in [lo, hi]; host bits must be zero */
static int parse_prefix(const char *v, struct urs_net_prefix *p, int lo4, int hi4, int lo6, int hi6)
{
	char buf[INET6_ADDRSTRLEN + 8];
	if (snprintf(buf, sizeof(buf), "%s", v) >= (int) sizeof(buf))
		return -EINVAL;
	char *slash = strchr(buf, '/'), *end;
	if (!slash)
		return -EINVAL;
	*slash = 0;
	long n = strtol(slash + 1, &end, 10);
	if (!slash[1] || *end)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	if (inet_pton(AF_INET, buf, &p->v4) == 1) {
		if (n < lo4 || n > hi4)
			return -ERANGE;
		uint32_t a = ntohl(p->v4.s_addr), mask = n ? ~0u << (32 - n) : 0;
		if (a & ~mask)
			return -EINVAL;
		p->family = AF_INET;
	} else if (inet_pton(AF_INET6, buf, &p->v6) == 1) {
		if (n < lo6 || n > hi6)
			return -ERANGE;
		for (int b = (int) n; b < 128; b++)
			if (p->v6.s6_addr[b / 8] & (0x80 >> (b % 8)))
				return -EINVAL;
		p->family = AF_INET6;
	} else {
		return -EINVAL;
	}
	p->len = (uint8_t) n;
	return 0;
}

int urs_netopts_set(struct urs_netopts *o, const char *key, const char *value, struct urs_err *err)
{
	struct urs_net_prefix p;
	if (!strcmp(key, "ipv4") || !strcmp(key, "ipv6")) {
		bool v4 = key[3] == '4';
		int r = parse_prefix(value, &p, 8, 30, 48, 120);
		if (r < 0 || p.family != (v4 ? AF_INET : AF_INET6))
			return urs_err_set(err, -EINVAL,
					   "network %s \"%s\": expected an %s network with a "
					   "prefix length of %s and no host bits",
					   key, value, v4 ? "IPv4" : "IPv6",
					   v4 ? "8..30" : "48..120");
		if (v4) {
			o->net4 = p.v4;
			o->prefix4 = p.len;
			o->has_net4 = true;
		} else {
			o->net6 = p.v6;
			o->prefix6 = p.len;
			o->has_net6 = true;
		}
		return 0;
	}
	if (!strcmp(key, "allow")) {
		char buf[1024];
		if (snprintf(buf, sizeof(buf), "%s", value) >= (int) sizeof(buf))
			return urs_err_set(err, -E2BIG, "network allow: list too long");
		char *save = NULL;
		for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
			if (o->n_allow >= URS_NET_MAX_ALLOW)
				return urs_err_set(err, -E2BIG,
						   "network allow: more than %d entries",
						   URS_NET_MAX_ALLOW);
			if (parse_prefix(t, &p, 0, 32, 0, 128) < 0)
				return urs_err_set(err, -EINVAL,
						   "network allow \"%s\": expected ADDR/N (IPv4 or "
						   "IPv6, no host bits)",
						   t);
			o->allow[o->n_allow++] = p;
		}
		return 0;
	}
	if (!strcmp(key, "max-flows")) {
		char *end;
		errno = 0;
		long n = strtol(value, &end, 10);
		if (!*value || *end || errno || n < 1 || n > URS_NET_MAX_FLOWS)
			return urs_err_set(err, -EINVAL,
					   "network max-flows \"%s\": expected 1..1048576", value);
		o->max_flows = (uint32_t) n;
		return 0;
	}
	return urs_err_set(err, -EINVAL,
			   "network setting \"%s\": expected ipv4, ipv6, allow or max-flows", key);
}

void urs_netopts_apply(const struct urs_netopts *o, struct urs_net_cfg *nc)
{
	nc->ipv6 = o->ipv6;
	if (o->has_net4) {
		uint32_t n = ntohl(o->net4.s_addr);
		nc->gw4.s_addr = htonl(n + 1);
		nc->addr4.s_addr = htonl(n + 2);
		nc->prefix4 = o->prefix4;
	}
	if (o->has_net6) {
		nc->gw6 = nc->addr6 = o->net6;
		nc->gw6.s6_addr[15] = 1;
		nc->addr6.s6_addr[15] = 2;
		nc->prefix6 = o->prefix6;
	}
	for (unsigned i = 0; i < o->n_allow && nc->n_allow < URS_NET_MAX_ALLOW; i++)
		nc->allow[nc->n_allow++] = o->allow[i];
	if (o->max_flows)
		nc->max_flows = o->max_flows;
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
