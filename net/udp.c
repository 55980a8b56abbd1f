/*
 * net/udp.c — UDP through host sockets: one connected host socket per
 * sandbox-side flow (so replies come only from the peer the sandbox
 * addressed), idle timeouts, DNS (queries to the gateway's port 53 go to the
 * first configured resolver and the replies come back from the gateway),
 * and inbound forwards (one listening socket; each client address becomes a
 * flow from the gateway's address and an ephemeral port).
 */
#include <errno.h>
#include <linux/virtio_net.h>
#include <string.h>
#include <sys/socket.h>

#include "net/internal.h"

#define DRAIN	      64 /* datagrams per readiness event */
#define SHORT_IDLE_MS 10000u
#define MAX_USO_SEGS  128u /* the kernel's UDP_MAX_SEGMENTS */

/* One datagram from the flow's remote side to the sandbox. */
static void to_tap(struct urs_flow *f, const uint8_t *data, size_t len)
{
	struct urs_net *n = f->net;
	size_t ip = f->family == AF_INET ? 20 : 40;
	if (len + 8 + ip > n->cfg.mtu) {
		n->st.drop_other++; /* would need IP fragmentation */
		return;
	}
	uint8_t h[8];
	urs_put16(h, f->node.key.rport);
	urs_put16(h + 2, f->node.key.lport);
	urs_put16(h + 4, (uint16_t) (len + 8));
	urs_put16(h + 6, 0);
	urs_net_tx_ip(n, f->family, &f->node.key.raddr, IPPROTO_UDP, h, 8, data, len, 0);
}

/* The peer refused (ICMP port unreachable reached our connected socket):
 * tell the sandbox the same way. */
static void port_unreach(struct urs_flow *f)
{
	struct urs_net *n = f->net;
	uint8_t q[48] = {0};
	size_t ipl = f->family == AF_INET ? 20 : 40;
	/* a quoted header: sandbox -> remote, UDP, no payload */
	if (f->family == AF_INET) {
		q[0] = 0x45;
		urs_put16(q + 2, 28);
		q[8] = 64;
		q[9] = IPPROTO_UDP;
		memcpy(q + 12, &n->cfg.addr4, 4);
		memcpy(q + 16, &f->node.key.raddr, 4);
	} else {
		q[0] = 0x60;
		urs_put16(q + 4, 8);
		q[6] = IPPROTO_UDP;
		q[7] = 64;
		memcpy(q + 8, &n->cfg.addr6, 16);
		memcpy(q + 24, &f->node.key.raddr, 16);
	}
	urs_put16(q + ipl, f->node.key.lport);
	urs_put16(q + ipl + 2, f->node.key.rport);
	urs_put16(q + ipl + 4, 8);
	uint8_t h[8] = {0};
	h[0] = f->family == AF_INET ? 3 : 1;
	h[1] = f->family == AF_INET ? 3 : 4;
	urs_net_tx_ip(n, f->family, &f->node.key.raddr,
		      f->family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6, h, 8, q, ipl + 8, 0);
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
	for (int i = 0; i < DRAIN && !f->dying; i++) {
		ssize_t r = recv(f->fd, buf, URS_NET_BUF, MSG_DONTWAIT | MSG_TRUNC);
		if (r < 0) {
			if (errno == ECONNREFUSED) {
				port_unreach(f);
				continue;
			}
			break;
		}
		if ((size_t) r > URS_NET_BUF) {
			f->net->st.drop_other++;
			continue;
		}
		f->last_ms = urs_net_now_ms(f->net);
		to_tap(f, buf, (size_t) r);
	}
}

static int sa_from(struct sockaddr_in6 *sa, uint8_t family, const struct in6_addr *a, uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *) sa;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, a, 4);
		return sizeof(*s4);
	}
	sa->sin6_family = AF_INET6;
	sa->sin6_port = htons(port);
	sa->sin6_addr = *a;
	return sizeof(*sa);
}

static struct urs_flow *open_flow(struct urs_net *n, const struct urs_pkt *p, bool to_gw)
{
	struct sockaddr_in6 sa;
	socklen_t salen;
	if (to_gw) {
		if (p->dport != 53 || !n->cfg.n_dns) {
			urs_net_icmp_unreach(n, p, 3, 3, 1, 4); /* port unreachable */
			return NULL;
		}
		memcpy(&sa, &n->cfg.dns[0], sizeof(sa));
		salen = sa.sin6_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(sa);
	} else {
		salen = (socklen_t) sa_from(&sa, p->family, &p->dst, p->dport);
	}
	struct urs_flow *f = urs_net_flow_new(n, IPPROTO_UDP, p->family);
	if (!f)
		return NULL;
	urs_net_key(&f->node.key, IPPROTO_UDP, p->family, p->sport, &p->dst, p->dport);
	f->fd = socket(sa.sin6_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	f->own_fd = f->fd >= 0;
	if (f->fd < 0 || connect(f->fd, (struct sockaddr *) &sa, salen) < 0 ||
	    urs_flowtab_insert(&n->flows, &f->node) < 0 || urs_net_arm_pin(f, pin_cb) < 0) {
		n->st.drop_other++;
		urs_net_flow_close(f);
		return NULL;
	}
	f->short_idle = to_gw;
	n->st.udp_open++;
	return f;
}

static void send_up(struct urs_flow *f, const uint8_t *d, size_t len)
{
	ssize_t r;
	if (f->fwd)
		r = sendto(f->fd, d, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *) &f->peer,
			   f->peer.sin6_family == AF_INET ? sizeof(struct sockaddr_in)
							  : sizeof(f->peer));
	else
		r = send(f->fd, d, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (r < 0)
		f->net->st.drop_other++;
}

void urs_net_udp_input(struct urs_net *n, const struct urs_pkt *p, bool to_gw)
{
	struct urs_flow_key k;
	urs_net_key(&k, IPPROTO_UDP, p->family, p->sport, &p->dst, p->dport);
	struct urs_flow_node *node = urs_flowtab_find(&n->flows, &k);
	struct urs_flow *f =
		node ? container_of(node, struct urs_flow, node) : open_flow(n, p, to_gw);
	if (!f)
		return;
	if (to_gw && p->dport == 53)
		n->st.dns_queries++;
	f->last_ms = urs_net_now_ms(n);
	if (p->vgso == VIRTIO_NET_HDR_GSO_UDP_L4) {
		/* one frame holding several datagrams of gso_size bytes; a tiny
		 * gso_size would turn one frame into thousands of syscalls */
		if (p->data_len / p->gso_size >= MAX_USO_SEGS) {
			n->st.drop_bad++;
			return;
		}
		for (uint32_t o = 0; o < p->data_len; o += p->gso_size) {
			uint32_t l = p->data_len - o < p->gso_size ? p->data_len - o : p->gso_size;
			send_up(f, p->data + o, l);
		}
		return;
	}
	send_up(f, p->data, p->data_len);
}

void urs_net_udp_tick(struct urs_flow *f, uint32_t now)
{
	uint32_t idle = f->net->cfg.udp_idle_ms;
	if (f->short_idle && idle > SHORT_IDLE_MS)
		idle = SHORT_IDLE_MS; /* one query, one answer: do not hold sockets */
	if (now - f->last_ms > idle)
		urs_net_flow_close(f);
}

static void fwd_datagram(struct urs_net_fwd *fw, const uint8_t *d, size_t len,
			 const struct sockaddr_in6 *from)
{
	struct urs_net *n = fw->net;
	struct urs_flow_key k2 = {0};
	k2.proto = IPPROTO_UDP;
	k2.family = (uint8_t) from->sin6_family;
	k2.kind = (uint8_t) (1 + fw->idx);
	if (from->sin6_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *) from;
		memcpy(&k2.raddr, &s4->sin_addr, 4);
		k2.rport = ntohs(s4->sin_port);
	} else {
		k2.raddr = from->sin6_addr;
		k2.rport = ntohs(from->sin6_port);
	}
	struct urs_flow_node *node = urs_flowtab_find(&n->flows, &k2);
	struct urs_flow *f;
	if (node) {
		f = container_of(node, struct urs_flow, node2);
	} else {
		uint8_t family = fw->family == AF_INET6 && n->cfg.ipv6 ? AF_INET6 : AF_INET;
		struct in6_addr gw = {0};
		memcpy(&gw,
		       family == AF_INET ? (const void *) &n->cfg.gw4 : (const void *) &n->cfg.gw6,
		       family == AF_INET ? 4 : 16);
		uint16_t port = urs_net_eph_port(n, IPPROTO_UDP, family, &gw, fw->sandbox_port);
		f = port ? urs_net_flow_new(n, IPPROTO_UDP, family) : NULL;
		if (!f)
			return;
		f->fd = fw->fd;
		f->fwd = (uint8_t) (fw->idx + 1);
		f->peer = *from;
		urs_net_key(&f->node.key, IPPROTO_UDP, family, fw->sandbox_port, &gw, port);
		f->node2.key = k2;
		if (urs_flowtab_insert(&n->flows, &f->node) < 0 ||
		    urs_flowtab_insert(&n->flows, &f->node2) < 0) {
			urs_net_flow_close(f);
			return;
		}
		n->st.udp_open++;
	}
	f->last_ms = urs_net_now_ms(n);
	to_tap(f, d, len);
}

static void fwd_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	struct urs_net_fwd *fw = container_of(op, struct urs_net_fwd, op);
	struct urs_net *n = fw->net;
	bool closing = n->closing;
	urs_net_fwd_ended(fw, res, flags); /* may free @n when closing */
	if (closing || res < 0)
		return;
	uint8_t *buf = urs_net_buf(n);
	if (!buf)
		return;
	int i;
	for (i = 0; i < DRAIN; i++) {
		struct sockaddr_in6 from;
		socklen_t fl = sizeof(from);
		ssize_t r = recvfrom(fw->fd, buf, URS_NET_BUF, MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *) &from, &fl);
		if (r < 0)
			break;
		if ((size_t) r > URS_NET_BUF)
			continue;
		fwd_datagram(fw, buf, (size_t) r, &from);
	}
	/* more may be queued, and the poll fires per wakeup, not per datagram:
	 * cancel it, its end re-arms it on the next tick, which completes at
	 * once while the socket is readable (as for accept in tcp.c) */
	if (i == DRAIN && (flags & IORING_CQE_F_MORE) && urs_op_busy(op))
		urs_cancel(loop, op);
}

int urs_net_udp_fwd_start(struct urs_net_fwd *fw)
{
	fw->cb = fwd_cb;
	return urs_net_fwd_arm(fw);
}
