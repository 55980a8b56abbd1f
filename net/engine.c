/*
 * net/engine.c — the engine's entry points (urs_net_init/input/fini,
 * forwards, stats) and the pieces every protocol shares: frame dispatch,
 * flow life cycle (a flow is freed only after its io_uring ops finally
 * complete), the shared buffer, and one timer that ticks only while flows
 * exist (retransmissions, idle timeouts, releasing memory when idle).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/virtio_net.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/random.h>

#include "net/internal.h"

void urs_net_cfg_default(struct urs_net_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	static const uint8_t mac[6] = {0x02, 0x75, 0x72, 0x73, 0x61, 0x01};
	memcpy(cfg->gw_mac, mac, 6);
	inet_pton(AF_INET, "10.0.2.2", &cfg->addr4);
	inet_pton(AF_INET, "10.0.2.1", &cfg->gw4);
	cfg->prefix4 = 24;
	inet_pton(AF_INET6, "fd00:7572:7361::2", &cfg->addr6);
	inet_pton(AF_INET6, "fd00:7572:7361::1", &cfg->gw6);
	cfg->prefix6 = 64;
	cfg->ipv6 = true;
	cfg->vnet_hdr = true;
	cfg->mtu = 65520;
	cfg->max_flows = 1024;
	cfg->udp_idle_ms = 60000;
	cfg->tcp_idle_ms = 2u * 3600 * 1000;
	_cleanup_fclose_ FILE *f = fopen("/etc/resolv.conf", "re");
	if (!f)
		return;
	char line[256];
	while (cfg->n_dns < URS_NET_MAX_DNS && fgets(line, sizeof(line), f)) {
		char addr[128];
		if (sscanf(line, " nameserver %127s", addr) != 1)
			continue;
		struct sockaddr_storage *ss = &cfg->dns[cfg->n_dns];
		struct sockaddr_in *s4 = (struct sockaddr_in *) ss;
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) ss;
		if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
			s4->sin_family = AF_INET;
			s4->sin_port = htons(53);
			cfg->n_dns++;
		} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons(53);
			cfg->n_dns++;
		}
	}
}

uint32_t urs_net_now_ms(const struct urs_net *n)
{
	return (uint32_t) ((urs_now_ns() - n->t0_ns) / 1000000u);
}

uint8_t *urs_net_buf(struct urs_net *n)
{
	n->buf_hot = true;
	if (!n->buf) {
		void *p = mmap(NULL, URS_NET_BUF, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		n->buf = p;
	}
	return n->buf;
}

static void maybe_free_engine(struct urs_net *n)
{
	if (!n->closing || n->flows.objs || n->fwd_live || urs_timer_busy(&n->tick))
		return;
	urs_flowtab_fini(&n->flows);
	urs_neigh_fini(&n->neigh);
	if (n->buf)
		munmap(n->buf, URS_NET_BUF);
	for (unsigned i = 0; i < n->n_fwds; i++)
		free(n->fwds[i]);
	free(n->raw[0]);
	free(n->raw[1]);
	free(n->host_addrs);
	free(n);
}

static void tick_cb(struct urs_loop *loop, struct urs_timer *t, int res);

void urs_net_tick_need(struct urs_net *n)
{
	n->empty_since_ms = 0;
	if (!n->closing && !urs_timer_busy(&n->tick))
		urs_timer_start(n->loop, &n->tick, URS_NET_TICK_MS * 1000000ull, 0, tick_cb);
}

/* Ticks every 100 ms while a TCP flow waits for a retransmission deadline
 * or a connect, every second while only idle timeouts matter, and stops
 * (returning the slabs and the shared buffer) after 5 s without flows. */
static void tick_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	struct urs_net *n = container_of(t, struct urs_net, tick);
	if (res < 0 || n->closing) {
		maybe_free_engine(n);
		return;
	}
	uint32_t now = urs_net_now_ms(n);
	bool fast = false;
	for (unsigned i = 0; i < n->n_fwds + 2; i++) {
		struct urs_net_fwd *fw = i < n->n_fwds ? n->fwds[i] : n->raw[i - n->n_fwds];
		if (fw && fw->rearm && !urs_op_busy(&fw->op) && urs_net_fwd_arm(fw) == 0)
			fw->rearm = false;
		fast |= fw && fw->rearm;
	}
	for (struct urs_flow *f = n->all, *next; f; f = next) {
		next = f->all_next;
		if (f->proto == IPPROTO_TCP) {
			urs_net_tcp_tick(f, now);
			if (!f->dying && (f->rto_at || (f->tfl & T_CONNECTING)))
				fast = true;
		} else {
			urs_net_udp_tick(f, now);
		}
	}
	if (n->all || n->nflows_dying || fast) {
		n->empty_since_ms = 0;
	} else if (!n->empty_since_ms) {
		n->empty_since_ms = now | 1;
	} else if (now - n->empty_since_ms >= URS_NET_TRIM_MS) {
		urs_flowtab_trim(&n->flows);
		if (n->buf) {
			munmap(n->buf, URS_NET_BUF);
			n->buf = NULL;
		}
		return;
	}
	/* the buffer unused for a whole slow tick: give its pages back (the
	 * mapping stays; the next use faults in zero pages) */
	if (n->buf && !n->buf_hot && n->buf_resident &&
	    now - n->buf_idle_since_ms >= URS_NET_SLOW_TICK_MS) {
		madvise(n->buf, URS_NET_BUF, MADV_DONTNEED);
		n->buf_resident = false;
	}
	if (n->buf_hot) {
		n->buf_hot = false;
		n->buf_resident = true;
		n->buf_idle_since_ms = now;
	}
	uint64_t ms = fast ? URS_NET_TICK_MS : URS_NET_SLOW_TICK_MS;
	urs_timer_start(n->loop, &n->tick, ms * 1000000ull, 0, tick_cb);
}

void urs_net_key(struct urs_flow_key *k, uint8_t proto, uint8_t family, uint16_t lport,
		 const struct in6_addr *raddr, uint16_t rport)
{
	memset(k, 0, sizeof(*k));
	k->proto = proto;
	k->family = family;
	k->lport = lport;
	k->rport = rport;
	memcpy(&k->raddr, raddr, family == AF_INET ? 4 : 16);
}

struct urs_flow *urs_net_flow_new(struct urs_net *n, uint8_t proto, uint8_t family)
{
	struct urs_flow *f = urs_flowtab_alloc(&n->flows);
	if (!f) {
		n->st.drop_limit++;
		return NULL;
	}
	f->net = n;
	f->fd = -1;
	f->proto = proto;
	f->family = family;
	f->last_ms = urs_net_now_ms(n);
	f->all_next = n->all;
	if (n->all)
		n->all->all_prev = f;
	n->all = f;
	if (proto == IPPROTO_TCP)
		n->st.flows_tcp++;
	else if (proto == IPPROTO_UDP)
		n->st.flows_udp++;
	else
		n->st.flows_icmp++;
	urs_net_tick_need(n);
	return f;
}

static void flow_free_if_done(struct urs_flow *f)
{
	if (!f->dying || urs_op_busy(&f->pin) || urs_op_busy(&f->pout))
		return;
	struct urs_net *n = f->net;
	n->nflows_dying--;
	urs_flowtab_free(&n->flows, f);
	maybe_free_engine(n);
}

void urs_net_flow_close(struct urs_flow *f)
{
	if (f->dying)
		return;
	struct urs_net *n = f->net;
	f->dying = true;
	n->nflows_dying++;
	urs_flowtab_remove(&n->flows, &f->node);
	urs_flowtab_remove(&n->flows, &f->node2);
	if (f->all_prev)
		f->all_prev->all_next = f->all_next;
	else
		n->all = f->all_next;
	if (f->all_next)
		f->all_next->all_prev = f->all_prev;
	if (f->blocked) {
		struct urs_flow **l = &n->blk_head;
		while (*l && *l != f)
			l = &(*l)->blk_next;
		if (*l)
			*l = f->blk_next;
		f->blocked = false;
	}
	if (f->proto == IPPROTO_TCP)
		n->st.flows_tcp--;
	else if (f->proto == IPPROTO_UDP)
		n->st.flows_udp--;
	else
		n->st.flows_icmp--;
	if (urs_op_busy(&f->pin))
		urs_cancel(n->loop, &f->pin);
	if (urs_op_busy(&f->pout))
		urs_cancel(n->loop, &f->pout);
	if (f->own_fd && f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	flow_free_if_done(f);
}

void urs_net_flow_block(struct urs_flow *f)
{
	if (f->blocked || f->dying)
		return;
	f->blocked = true;
	f->blk_next = f->net->blk_head;
	f->net->blk_head = f;
}

int urs_net_arm_pin(struct urs_flow *f, urs_op_cb cb)
{
	if (urs_op_busy(&f->pin))
		return 0;
	struct io_uring_sqe *sqe = urs_op_sqe(&f->pin);
	io_uring_prep_poll_multishot(sqe, f->fd, POLLIN | POLLRDHUP | POLLERR | POLLHUP);
	f->pin.flags |= URS_OPF_WEAK;
	return urs_submit(f->net->loop, &f->pin, cb);
}

bool urs_net_flow_op_dead(struct urs_flow *f)
{
	if (!f->dying)
		return false;
	flow_free_if_done(f);
	return true;
}

uint16_t urs_net_eph_port(struct urs_net *n, uint8_t proto, uint8_t family,
			  const struct in6_addr *raddr, uint16_t lport)
{
	for (int i = 0; i < 256; i++) {
		uint16_t p = (uint16_t) (32768 + (n->next_port++ % 28232));
		struct urs_flow_key k;
		urs_net_key(&k, proto, family, lport, raddr, p);
		if (!urs_flowtab_find(&n->flows, &k))
			return p;
	}
	return 0;
}

int urs_net_init(struct urs_net **out, struct urs_loop *loop, const struct urs_net_cfg *cfg,
		 urs_net_tx_fn tx, void *tx_ctx)
{
	if (!loop || !cfg || !tx || !out)
		return -EINVAL;
	_cleanup_free_ struct urs_net *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->loop = loop;
	n->cfg = *cfg;
	if (cfg->sandbox_mac_set) {
		/* configured by whoever made the tap: frames toward the sandbox
		 * (e.g. a forwarded SYN before the sandbox said anything) need it,
		 * a broadcast destination would be dropped by the sandbox's TCP */
		memcpy(n->sb_mac, cfg->sandbox_mac, 6);
		n->sb_mac_known = true;
	}
	if (!n->cfg.max_flows)
		n->cfg.max_flows = 1024;
	if (!n->cfg.mtu || n->cfg.mtu > 65520)
		n->cfg.mtu = 65520;
	if (n->cfg.mtu < 1280)
		n->cfg.mtu = 1280;
	if (!n->cfg.udp_idle_ms)
		n->cfg.udp_idle_ms = 60000;
	if (!n->cfg.tcp_idle_ms)
		n->cfg.tcp_idle_ms = 2u * 3600 * 1000;
	if (n->cfg.n_dns > URS_NET_MAX_DNS || n->cfg.n_allow > URS_NET_MAX_ALLOW)
		return -EINVAL;
	n->tx = tx;
	n->tx_ctx = tx_ctx;
	if (cfg->sandbox_mac_set) {
		/* known before the sandbox says anything: inbound connections
		 * can reach it at once (a broadcast destination would not do:
		 * the sandbox's TCP drops segments not addressed to its MAC) */
		memcpy(n->sb_mac, cfg->sandbox_mac, 6);
		n->sb_mac_known = true;
	}
	n->t0_ns = urs_now_ns();
	urs_neigh_init(&n->neigh, URS_NEIGH_MAX);
	urs_flowtab_init(&n->flows, sizeof(struct urs_flow), n->cfg.max_flows);
	if (getrandom(n->isn_key, sizeof(n->isn_key), 0) != sizeof(n->isn_key))
		return -errno ? -errno : -EIO;
	n->next_port = (uint16_t) n->isn_key[0];
	int r = urs_net_policy_init(n);
	if (r < 0)
		return r;
	/* SO_PEEK_OFF on TCP (Linux 6.9+) is what lets retransmissions rewind */
	_cleanup_close_ int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int zero = 0;
	n->peek_off = s >= 0 && setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) == 0;
	if (!n->peek_off) {
		free(n->host_addrs);
		return -EOPNOTSUPP;
	}
	*out = steal_ptr(&n);
	return 0;
}

void urs_net_fini(struct urs_net *n)
{
	if (!n)
		return;
	while (n->all)
		urs_net_flow_close(n->all);
	n->closing = true;
	for (unsigned i = 0; i < n->n_fwds + 2; i++) {
		struct urs_net_fwd *fw = i < n->n_fwds ? n->fwds[i] : n->raw[i - n->n_fwds];
		if (!fw)
			continue;
		if (urs_op_busy(&fw->op))
			urs_cancel(n->loop, &fw->op);
		/* the forward's socket has no other owner (see struct
		 * urs_net_fwd): its port is free when close returns */
		if (fw->fd >= 0)
			close(fw->fd);
		fw->fd = -1;
		if (fw->epfd >= 0)
			close(fw->epfd);
		fw->epfd = -1;
	}
	if (urs_timer_busy(&n->tick))
		urs_timer_cancel(n->loop, &n->tick);
	maybe_free_engine(n);
}

int urs_net_fwd_arm(struct urs_net_fwd *fw)
{
	io_uring_prep_poll_multishot(urs_op_sqe(&fw->op), fw->epfd >= 0 ? fw->epfd : fw->fd,
				     POLLIN);
	fw->op.flags |= URS_OPF_WEAK;
	int r = urs_submit(fw->net->loop, &fw->op, fw->cb);
	if (r == 0)
		fw->net->fwd_live++;
	return r;
}

bool urs_net_fwd_ended(struct urs_net_fwd *fw, int32_t res, uint32_t flags)
{
	if (flags & IORING_CQE_F_MORE)
		return false;
	struct urs_net *n = fw->net;
	n->fwd_live--;
	if (n->closing || fw->fd < 0) {
		maybe_free_engine(n);
		return true;
	}
	if (res < 0 || urs_net_fwd_arm(fw) < 0) {
		/* an error (e.g. -EMFILE) must not turn into a busy loop:
		 * try again on the next tick */
		fw->rearm = true;
		urs_net_tick_need(n);
	}
	return true;
}

int urs_net_forward_adopt(struct urs_net *n, int proto, int fd, uint16_t sandbox_port)
{
	_cleanup_close_ int sfd = fd;
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return -EPROTONOSUPPORT;
	if (fd < 0 || !sandbox_port)
		return -EINVAL;
	if (n->n_fwds >= URS_NET_MAX_FWD)
		return -ENOSPC;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *) &ss, &sl) < 0)
		return -errno;
	if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	int type;
	socklen_t tl = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0)
		return -errno;
	if (type != (proto == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM))
		return -EPROTOTYPE;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	/* the op polls this, not @fd (struct urs_net_fwd) */
	_cleanup_close_ int epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -errno;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &(struct epoll_event){.events = EPOLLIN}) < 0)
		return -errno;
	struct urs_net_fwd *fw = calloc(1, sizeof(*fw));
	if (!fw)
		return -ENOMEM;
	fw->net = n;
	fw->fd = fd;
	fw->epfd = epfd;
	fw->proto = (uint8_t) proto;
	fw->idx = (uint8_t) n->n_fwds;
	fw->sandbox_port = sandbox_port;
	fw->family = ss.ss_family;
	int r = proto == IPPROTO_TCP ? urs_net_tcp_fwd_start(fw) : urs_net_udp_fwd_start(fw);
	if (r < 0) {
		free(fw);
		return r;
	}
	steal_fd(&sfd);
	steal_fd(&epfd);
	n->fwds[n->n_fwds++] = fw;
	return 0;
}

int urs_net_forward_add(struct urs_net *n, int proto, const struct sockaddr *host,
			socklen_t hostlen, uint16_t sandbox_port)
{
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return -EPROTONOSUPPORT;
	if (!host || (host->sa_family != AF_INET && host->sa_family != AF_INET6) || !sandbox_port)
		return -EINVAL;
	if (n->n_fwds >= URS_NET_MAX_FWD)
		return -ENOSPC;
	_cleanup_close_ int fd = socket(host->sa_family,
					(proto == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM) |
						SOCK_NONBLOCK | SOCK_CLOEXEC,
					0);
	if (fd < 0)
		return -errno;
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return -errno;
	if (host->sa_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		return -errno;
	if (bind(fd, host, hostlen) < 0)
		return -errno;
	if (proto == IPPROTO_TCP && listen(fd, 128) < 0)
		return -errno;
	return urs_net_forward_adopt(n, proto, steal_fd(&fd), sandbox_port);
}

void urs_net_set_accept_hook(struct urs_net *n, urs_net_accept_fn fn, void *ctx)
{
	n->accept_hook = fn;
	n->accept_ctx = ctx;
}

const struct urs_net_stats *urs_net_stats(const struct urs_net *n)
{
	return &n->st;
}

size_t urs_net_mem(const struct urs_net *n)
{
	return sizeof(*n) + n->n_host_addrs * sizeof(*n->host_addrs) + urs_neigh_mem(&n->neigh) +
	       urs_flowtab_mem(&n->flows) +
	       (n->buf && (n->buf_hot || n->buf_resident) ? URS_NET_BUF : 0) +
	       (n->n_fwds + !!n->raw[0] + !!n->raw[1]) * sizeof(struct urs_net_fwd);
}

void urs_net_tx_ready(struct urs_net *n)
{
	struct urs_flow *l = n->blk_head;
	n->blk_head = NULL;
	while (l) {
		struct urs_flow *f = l;
		l = f->blk_next;
		f->blocked = false;
		f->blk_next = NULL;
		if (!f->dying && f->proto == IPPROTO_TCP)
			urs_net_tcp_tx_ready(f);
	}
}

static bool in_subnet4(const struct urs_net *n, const struct in6_addr *a)
{
	struct urs_net_prefix p = {.family = AF_INET, .v4 = n->cfg.gw4, .len = n->cfg.prefix4};
	return urs_net_prefix_match(&p, AF_INET, a);
}

static bool in_subnet6(const struct urs_net *n, const struct in6_addr *a)
{
	struct urs_net_prefix p = {.family = AF_INET6, .v6 = n->cfg.gw6, .len = n->cfg.prefix6};
	return urs_net_prefix_match(&p, AF_INET6, a);
}

static void ip_input(struct urs_net *n, const struct urs_pkt *p)
{
	bool to_gw;
	if (p->family == AF_INET) {
		if (memcmp(&p->src, &n->cfg.addr4, 4)) {
			n->st.drop_other++; /* spoofed or unconfigured source */
			return;
		}
		to_gw = !memcmp(&p->dst, &n->cfg.gw4, 4);
		if (!to_gw && (in_subnet4(n, &p->dst) || !urs_net_policy_ok(n, AF_INET, &p->dst))) {
			/* the local subnet has nothing but us; broadcast/multicast is silent */
			const uint8_t *d = (const uint8_t *) &p->dst;
			bool silent = in_subnet4(n, &p->dst) || d[0] >= 224;
			if (silent) {
				n->st.drop_other++;
				return;
			}
			goto refuse;
		}
	} else {
		if (p->proto == IPPROTO_ICMPV6 && p->icmp_type >= 133 && p->icmp_type <= 137) {
			urs_net_ndp_input(n, p);
			return;
		}
		if (memcmp(&p->src, &n->cfg.addr6, 16)) {
			n->st.drop_other++;
			return;
		}
		to_gw = !memcmp(&p->dst, &n->cfg.gw6, 16);
		if (!to_gw &&
		    (in_subnet6(n, &p->dst) || !urs_net_policy_ok(n, AF_INET6, &p->dst))) {
			if (in_subnet6(n, &p->dst) || ((const uint8_t *) &p->dst)[0] == 0xff) {
				n->st.drop_other++;
				return;
			}
			goto refuse;
		}
	}
	switch (p->proto) {
	case IPPROTO_TCP:
		urs_net_tcp_input(n, p, to_gw);
		return;
	case IPPROTO_UDP:
		urs_net_udp_input(n, p, to_gw);
		return;
	default:
		urs_net_icmp_input(n, p, to_gw);
		return;
	}
refuse:
	n->st.drop_policy++;
	if (p->proto == IPPROTO_TCP) {
		if (!(p->tflags & URS_TCP_RST))
			urs_net_tcp_rst_nonflow(n, p);
	} else if (p->proto == IPPROTO_UDP || (p->proto == IPPROTO_ICMP && p->icmp_type == 8) ||
		   (p->proto == IPPROTO_ICMPV6 && p->icmp_type == 128)) {
		urs_net_icmp_unreach(n, p, 3, 13, 1, 1); /* administratively prohibited */
	}
}

void urs_net_input(struct urs_net *n, const void *frame, size_t len)
{
	if (n->closing)
		return;
	n->st.rx_frames++;
	n->st.rx_bytes += len;
	struct urs_pkt p;
	int r = urs_pkt_parse(&p, frame, len, n->cfg.vnet_hdr);
	if (r < 0) {
		if (r == URS_PKT_EFRAG)
			n->st.drop_frag++;
		else if (r == URS_PKT_ECSUM)
			n->st.drop_csum++;
		else if (r == URS_PKT_EPROTO)
			n->st.drop_other++;
		else
			n->st.drop_bad++;
		return;
	}
	/* only frames for the gateway MAC, or broadcast/multicast */
	const uint8_t *dmac = p.eth;
	if (!(dmac[0] & 1) && memcmp(dmac, n->cfg.gw_mac, 6)) {
		n->st.drop_other++;
		return;
	}
	if (p.ethertype == URS_ETH_P_ARP) {
		urs_net_arp_input(n, &p);
		return;
	}
	if (p.family == AF_INET6 && !n->cfg.ipv6) {
		n->st.drop_other++;
		return;
	}
	/* learn the sandbox's MAC from its own traffic */
	const uint8_t *smac = p.eth + 6;
	if (!(smac[0] & 1) && (!n->sb_mac_known || memcmp(n->sb_mac, smac, 6))) {
		const void *own = p.family == AF_INET ? (const void *) &n->cfg.addr4
						      : (const void *) &n->cfg.addr6;
		if (!memcmp(&p.src, own, p.family == AF_INET ? 4 : 16)) {
			memcpy(n->sb_mac, smac, 6);
			n->sb_mac_known = true;
			urs_neigh_update(&n->neigh, p.family, own, smac);
			n->st.neigh_entries = n->neigh.n;
		}
	}
	ip_input(n, &p);
}
