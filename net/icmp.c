/*
 * net/icmp.c — ICMP and ICMPv6 echo: requests to the gateway are answered
 * here; requests to outside addresses go through unprivileged ping sockets
 * (SOCK_DGRAM, IPPROTO_ICMP[V6]), one per (echo id, destination), whose
 * kernel-chosen id is mapped back to the sandbox's in the replies.
 *
 * Where ping sockets are not permitted (net.ipv4.ping_group_range excludes
 * us, e.g. Debian's default "1 0") and we hold CAP_NET_RAW, one raw socket
 * per family (filtered to echo replies) carries the requests instead: each
 * flow gets a host-unique echo id, and replies are matched by (source, id)
 * through the flow's secondary key. Otherwise the request is dropped and
 * counted. Other ICMP types from the sandbox are dropped.
 */
#include <errno.h>
#include <linux/icmp.h>
#include <netinet/icmp6.h>
#include <string.h>
#include <sys/socket.h>

#include "net/csum.h"
#include "net/internal.h"

#define KIND_RAW 0xfe /* flow key kind: (source, host echo id) of raw-socket flows */

static void reply_to_tap(struct urs_flow *f, const uint8_t *icmp, size_t len)
{
	uint8_t h[8];
	memcpy(h, icmp, 8);
	urs_put16(h + 4, f->node.key.lport); /* the sandbox's echo id */
	f->last_ms = urs_net_now_ms(f->net);
	urs_net_tx_ip(f->net, f->family, &f->node.key.raddr, f->proto, h, 8, icmp + 8, len - 8, 0);
}

static void pin_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	struct urs_flow *f = container_of(op, struct urs_flow, pin);
	if (urs_net_flow_op_dead(f))
		return;
	if (res < 0 || (!(flags & IORING_CQE_F_MORE) && urs_net_arm_pin(f, pin_cb) < 0)) {
		urs_net_flow_close(f);
		return;
	}
	uint8_t *buf = urs_net_buf(f->net);
	if (!buf)
		return;
	uint8_t reply = f->family == AF_INET ? 0 : 129;
	for (int i = 0; i < 64 && !f->dying; i++) {
		ssize_t r = recv(f->fd, buf, URS_NET_BUF, MSG_DONTWAIT);
		if (r < 0)
			break;
		if (r >= 8 && buf[0] == reply)
			reply_to_tap(f, buf, (size_t) r);
	}
}

static void raw_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	struct urs_net_fwd *rw = container_of(op, struct urs_net_fwd, op);
	struct urs_net *n = rw->net;
	bool closing = n->closing;
	urs_net_fwd_ended(rw, res, flags); /* may free @n when closing */
	if (closing || res < 0)
		return;
	uint8_t *buf = urs_net_buf(n);
	if (!buf)
		return;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_in6 from;
		socklen_t fl = sizeof(from);
		ssize_t r = recvfrom(rw->fd, buf, URS_NET_BUF, MSG_DONTWAIT,
				     (struct sockaddr *) &from, &fl);
		if (r < 0)
			break;
		struct urs_flow_key k = {0};
		k.family = (uint8_t) rw->family;
		k.kind = KIND_RAW;
		const uint8_t *icmp = buf;
		size_t len = (size_t) r;
		if (rw->family == AF_INET) {
			/* IPv4 raw sockets deliver the IP header */
			size_t ihl = len >= 20 ? (size_t) (buf[0] & 0xf) * 4 : 0;
			if (ihl < 20 || ihl + 8 > len)
				continue;
			memcpy(&k.raddr, buf + 12, 4);
			icmp += ihl;
			len -= ihl;
			k.proto = IPPROTO_ICMP;
			if (icmp[0] != 0)
				continue;
		} else {
			k.raddr = from.sin6_addr;
			k.proto = IPPROTO_ICMPV6;
			if (len < 8 || icmp[0] != 129)
				continue;
		}
		k.lport = urs_get16(icmp + 4);
		struct urs_flow_node *node = urs_flowtab_find(&n->flows, &k);
		if (node)
			reply_to_tap(container_of(node, struct urs_flow, node2), icmp, len);
	}
}

static struct urs_net_fwd *raw_get(struct urs_net *n, int family)
{
	int i = family == AF_INET6;
	if (n->raw[i] || n->raw_err[i])
		return n->raw[i];
	_cleanup_close_ int fd = socket(family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
					family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6);
	if (fd < 0) {
		n->raw_err[i] = -1;
		return NULL;
	}
	/* only echo replies reach us */
	if (family == AF_INET) {
		struct icmp_filter flt = {.data = ~(1u << ICMP_ECHOREPLY)};
		setsockopt(fd, SOL_RAW, ICMP_FILTER, &flt, sizeof(flt));
	} else {
		struct icmp6_filter flt;
		ICMP6_FILTER_SETBLOCKALL(&flt);
		ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &flt);
		setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &flt, sizeof(flt));
	}
	struct urs_net_fwd *rw = calloc(1, sizeof(*rw));
	if (!rw) {
		n->raw_err[i] = -1;
		return NULL;
	}
	rw->net = n;
	rw->fd = fd;
	rw->epfd = -1;
	rw->family = family;
	rw->cb = raw_cb;
	if (urs_net_fwd_arm(rw) < 0) {
		free(rw);
		n->raw_err[i] = -1;
		return NULL;
	}
	steal_fd(&fd);
	n->raw[i] = rw;
	return rw;
}

/* A flow on the shared raw socket, with a host-unique echo id. */
static int raw_flow(struct urs_net *n, struct urs_flow *f, const struct urs_pkt *p)
{
	struct urs_net_fwd *rw = raw_get(n, p->family);
	if (!rw)
		return -EPERM;
	f->fd = rw->fd;
	f->own_fd = false;
	f->node2.key.proto = p->proto;
	f->node2.key.family = p->family;
	f->node2.key.kind = KIND_RAW;
	memcpy(&f->node2.key.raddr, &p->dst, p->family == AF_INET ? 4 : 16);
	for (int i = 0; i < 64; i++) {
		f->node2.key.lport = n->next_icmp_id++;
		if (urs_flowtab_insert(&n->flows, &f->node2) == 0)
			return 0;
	}
	return -EADDRINUSE;
}

void urs_net_icmp_input(struct urs_net *n, const struct urs_pkt *p, bool to_gw)
{
	uint8_t req = p->family == AF_INET ? 8 : 128;
	if (p->icmp_type != req || p->icmp_code != 0) {
		n->st.drop_other++;
		return;
	}
	if (to_gw) {
		uint8_t h[8];
		memcpy(h, p->l4, 8);
		h[0] = p->family == AF_INET ? 0 : 129;
		urs_net_tx_ip(n, p->family, &p->dst, p->proto, h, 8, p->data, p->data_len, 0);
		return;
	}
	struct urs_flow_key k;
	urs_net_key(&k, p->proto, p->family, p->sport, &p->dst, 0);
	struct urs_flow_node *node = urs_flowtab_find(&n->flows, &k);
	struct urs_flow *f;
	struct sockaddr_in6 sa = {0};
	socklen_t salen;
	if (p->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *) &sa;
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, &p->dst, 4);
		salen = sizeof(*s4);
	} else {
		sa.sin6_family = AF_INET6;
		sa.sin6_addr = p->dst;
		salen = sizeof(sa);
	}
	if (node) {
		f = container_of(node, struct urs_flow, node);
	} else {
		f = urs_net_flow_new(n, p->proto, p->family);
		if (!f)
			return;
		f->node.key = k;
		f->short_idle = true;
		f->fd = socket(p->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, p->proto);
		f->own_fd = f->fd >= 0;
		int r;
		if (f->fd < 0 && (errno == EACCES || errno == EPERM))
			r = raw_flow(n, f, p);
		else if (f->fd < 0 || connect(f->fd, (struct sockaddr *) &sa, salen) < 0)
			r = -errno;
		else
			r = urs_net_arm_pin(f, pin_cb);
		if (r < 0 || urs_flowtab_insert(&n->flows, &f->node) < 0) {
			n->st.drop_other++;
			urs_net_flow_close(f);
			return;
		}
	}
	f->last_ms = urs_net_now_ms(n);
	uint8_t h[8];
	memcpy(h, p->l4, 8);
	memset(h + 2, 0, 2);
	struct iovec iov[2] = {{h, 8}, {(void *) p->data, p->data_len}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	if (!f->own_fd) {
		/* raw: our id; IPv4 needs its checksum (the kernel does ICMPv6's) */
		urs_put16(h + 4, f->node2.key.lport);
		if (p->family == AF_INET) {
			uint16_t c = urs_csum_fold(
				urs_csum_partial(p->data, p->data_len, urs_csum_partial(h, 8, 0)));
			memcpy(h + 2, &c, 2);
		}
		m.msg_name = &sa;
		m.msg_namelen = salen;
	}
	/* ping sockets: the kernel fills the checksum and the id */
	if (sendmsg(f->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		n->st.drop_other++;
	else
		n->st.icmp_echo++;
}
