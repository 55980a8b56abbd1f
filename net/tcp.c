/*
 * net/tcp.c — TCP translation between the sandbox's segments and host
 * sockets, passt-style: no TCP stack and no per-connection buffers.
 *
 * Sandbox -> host: payload is written to the host socket with
 * send(MSG_DONTWAIT) and acknowledged only as far as the kernel took it; the
 * sandbox retransmits the rest. When the socket is full we advertise a zero
 * window and arm POLLOUT; when it drains we send a window update followed by
 * three duplicate ACKs so the sandbox fast-retransmits at once.
 *
 * Host -> sandbox: data stays in the socket's receive queue until the
 * sandbox acknowledges it. It is read with MSG_PEEK at SO_PEEK_OFF (which
 * the kernel advances for us) into the one shared buffer, framed as one GSO
 * frame (virtio-net header) or MSS-sized segments within the sandbox's
 * window, and discarded with recv(MSG_TRUNC) as ACKs arrive. Retransmission
 * (three duplicate ACKs or the retransmission timer) rewinds the peek
 * offset to zero.
 *
 * Sequence space per flow: snd_una..snd_nxt is what the sandbox has not
 * acknowledged (data still queued in the socket, plus our FIN), rcv_nxt is
 * the next byte we expect from the sandbox.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <string.h>
#include <sys/socket.h>

#include "net/internal.h"

#define OUR_WS	 7u
#define WND	 (4u << 20) /* advertised to the sandbox while the host socket takes data */
#define RTO_MS	 400u
#define MAX_RETR 20u /* ~7 min of backoff (capped at 64 x RTO) before giving up */
#define SYN_RETR 6u

static inline bool seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t) (a - b) < 0;
}
static inline bool seq_le(uint32_t a, uint32_t b)
{
	return (int32_t) (a - b) <= 0;
}

static uint32_t isn_for(struct urs_net *n, const struct urs_flow_key *k)
{
	uint32_t w[6];
	memcpy(w, k, sizeof(w));
	uint64_t h = ((uint64_t) n->isn_key[0] << 32) | n->isn_key[1];
	for (int i = 0; i < 6; i++) {
		h ^= w[i] + n->isn_key[2 + (i & 1)];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	/* RFC 6528: a keyed hash plus a clock (4 us ticks) */
	return (uint32_t) h + (uint32_t) (urs_now_ns() >> 12);
}

static uint16_t our_mss(const struct urs_net *n, uint8_t family)
{
	uint32_t m = n->cfg.mtu - (family == AF_INET ? 40 : 60);
	return (uint16_t) (m > 65535 ? 65535 : m);
}

/* One segment from (@raddr, @rport) to the sandbox's @lport. */
static int seg_send(struct urs_net *n, uint8_t family, const struct in6_addr *raddr, uint16_t rport,
		    uint16_t lport, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t win,
		    int ws_opt, const void *data, size_t len, uint16_t gso)
{
	uint8_t h[32] = {0};
	size_t hl = 20;
	urs_put16(h, rport);
	urs_put16(h + 2, lport);
	urs_put32(h + 4, seq);
	urs_put32(h + 8, (flags & URS_TCP_ACK) ? ack : 0);
	h[13] = flags;
	urs_put16(h + 14, win);
	if (flags & URS_TCP_SYN) {
		h[20] = 2; /* MSS */
		h[21] = 4;
		urs_put16(h + 22, our_mss(n, family));
		hl = 24;
		if (ws_opt >= 0) {
			h[24] = 1; /* NOP */
			h[25] = 3; /* window scale */
			h[26] = 3;
			h[27] = (uint8_t) ws_opt;
			hl = 28;
		}
	}
	h[12] = (uint8_t) ((hl / 4) << 4);
	return urs_net_tx_ip(n, family, raddr, IPPROTO_TCP, h, hl, data, len, gso);
}

static uint16_t win_raw(const struct urs_flow *f)
{
	if (f->tfl & T_WANT_OUT)
		return 0;
	uint32_t w = (f->wnd_adv ? f->wnd_adv : WND) >> f->ws_to_tap;
	return (uint16_t) (w > 65535 ? 65535 : w ? w : 1);
}

static int send_flags(struct urs_flow *f, uint8_t flags, uint32_t seq)
{
	int ws = -1;
	uint16_t win = win_raw(f);
	if (flags & URS_TCP_SYN) {
		/* offer scaling on our SYN; on a SYN-ACK only if the sandbox did */
		if (!(flags & URS_TCP_ACK) || (f->tfl & T_WS))
			ws = OUR_WS;
		win = 65535;
	}
	return seg_send(f->net, f->family, &f->node.key.raddr, f->node.key.rport, f->node.key.lport,
			flags, seq, f->rcv_nxt, win, ws, NULL, 0, 0);
}

void urs_net_tcp_rst_nonflow(struct urs_net *n, const struct urs_pkt *p)
{
	if (p->tflags & URS_TCP_RST)
		return;
	if (p->tflags & URS_TCP_ACK) {
		seg_send(n, p->family, &p->dst, p->dport, p->sport, URS_TCP_RST, p->ack, 0, 0, -1,
			 NULL, 0, 0);
	} else {
		uint32_t ack = p->seq + p->data_len + !!(p->tflags & URS_TCP_SYN) +
			       !!(p->tflags & URS_TCP_FIN);
		seg_send(n, p->family, &p->dst, p->dport, p->sport, URS_TCP_RST | URS_TCP_ACK, 0,
			 ack, 0, -1, NULL, 0, 0);
	}
}

/* Abort: RST toward the host peer (linger 0) and close. */
static void abort_sock(struct urs_flow *f)
{
	if (f->fd >= 0) {
		struct linger l = {1, 0};
		setsockopt(f->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	urs_net_flow_close(f);
}

/* The host side failed: RST to the sandbox, abort the socket. */
static void reset_both(struct urs_flow *f)
{
	f->net->st.tcp_reset++;
	send_flags(f, URS_TCP_RST | URS_TCP_ACK, f->snd_nxt);
	abort_sock(f);
}

static void set_peek_off(struct urs_flow *f)
{
	int off = (int) (f->snd_nxt - f->snd_una);
	if (f->tfl & T_FIN_SENT)
		off--;
	setsockopt(f->fd, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof(off));
}

static void tx_data(struct urs_flow *f);
static void want_out(struct urs_flow *f);
static void update_wnd(struct urs_flow *f, bool polled_out);

static void rewind_send(struct urs_flow *f)
{
	f->snd_nxt = f->snd_una;
	f->tfl &= ~(uint32_t) (T_FIN_SENT | T_DRAINED);
	f->dupacks = 0;
	int zero = 0;
	setsockopt(f->fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero));
}

static void arm_rto(struct urs_flow *f, uint32_t now)
{
	uint32_t shift = f->retries < 6 ? f->retries : 6;
	f->rto_at = (now + (RTO_MS << shift)) | 1; /* 0 means "not armed" */
}

/* Send FIN once everything peeked was sent and the socket is at EOF. */
static int send_fin(struct urs_flow *f)
{
	int r = send_flags(f, URS_TCP_FIN | URS_TCP_ACK, f->snd_nxt);
	if (r == -EAGAIN) {
		urs_net_flow_block(f);
		return r;
	}
	f->fin_seq = f->snd_nxt;
	f->snd_nxt++;
	if (seq_lt(f->snd_max, f->snd_nxt))
		f->snd_max = f->snd_nxt;
	f->tfl |= T_FIN_SENT | T_FIN_EVER;
	if (!f->rto_at)
		arm_rto(f, urs_net_now_ms(f->net));
	return 0;
}

static void tx_data(struct urs_flow *f)
{
	struct urs_net *n = f->net;
	if (!(f->tfl & T_ESTAB) || (f->tfl & T_FIN_SENT) || f->blocked || f->dying)
		return;
	uint8_t *buf = urs_net_buf(n);
	if (!buf)
		return;
	bool gso = n->cfg.vnet_hdr;
	uint32_t mss = f->mss;
	uint32_t link = our_mss(n, f->family);
	if (mss > link)
		mss = link;
	/* largest payload in one frame: the IP length field's limit */
	uint32_t cap = f->family == AF_INET ? 65535 - 40 : 65535 - 20;
	/* whole segments per frame (no runt at the end of a GSO frame) */
	cap = gso && mss < cap ? cap / mss * mss : mss;
	for (int round = 0; round < 16; round++) {
		uint32_t inflight = f->snd_nxt - f->snd_una;
		if (inflight >= f->wnd_from_tap)
			break;
		uint32_t want = f->wnd_from_tap - inflight;
		if (want > URS_NET_BUF)
			want = URS_NET_BUF;
		if (f->tfl & T_DRAINED)
			return;
		ssize_t r = recv(f->fd, buf, want, MSG_PEEK | MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				reset_both(f);
			else
				f->tfl |= T_DRAINED;
			return;
		}
		if (r == 0) {
			f->tfl |= T_SOCK_EOF;
			send_fin(f);
			return;
		}
		size_t off = 0;
		while (off < (size_t) r) {
			size_t chunk = (size_t) r - off;
			if (chunk > cap)
				chunk = cap;
			int t = seg_send(n, f->family, &f->node.key.raddr, f->node.key.rport,
					 f->node.key.lport, URS_TCP_ACK | URS_TCP_PSH, f->snd_nxt,
					 f->rcv_nxt, win_raw(f), -1, buf + off, chunk,
					 gso ? (uint16_t) mss : 0);
			if (t == -EAGAIN)
				break;
			/* other errors: counted as sent, the sandbox's ACKs decide */
			f->snd_nxt += (uint32_t) chunk;
			off += chunk;
		}
		if (seq_lt(f->snd_max, f->snd_nxt))
			f->snd_max = f->snd_nxt;
		if (off && !f->rto_at)
			arm_rto(f, urs_net_now_ms(n));
		if (off < (size_t) r) {
			set_peek_off(f); /* give back what the tap did not take */
			urs_net_flow_block(f);
			return;
		}
		/* a short peek does not prove the queue empty: an EOF may be
		 * waiting behind it with no further POLLIN to announce it. Peek
		 * again: EAGAIN (T_DRAINED) or 0 (EOF: our FIN) settles it. */
	}
}

void urs_net_tcp_tx_ready(struct urs_flow *f)
{
	tx_data(f); /* also re-sends a FIN the tap refused */
}

/* Drop @k acknowledged bytes from the socket's receive queue. */
static int discard(struct urs_flow *f, uint32_t k)
{
	while (k) {
		ssize_t r = recv(f->fd, NULL, k, MSG_TRUNC | MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EPIPE;
		k -= (uint32_t) r;
	}
	return 0;
}

static void check_done(struct urs_flow *f)
{
	if ((f->tfl & T_TAP_FIN) && (f->tfl & T_FIN_ACKED))
		urs_net_flow_close(f);
}

static void pout_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct urs_flow *f = container_of(op, struct urs_flow, pout);
	if (urs_net_flow_op_dead(f))
		return;
	if (res < 0 && res != -ECANCELED) {
		reset_both(f);
		return;
	}
	f->tfl &= ~(uint32_t) T_WANT_OUT;
	update_wnd(f, true);
	if (f->tfl & T_WANT_OUT)
		return; /* still closed (see update_wnd): the sandbox knows, no ACK */
	/* a window update; if segments were refused while the window was
	 * closed, duplicate ACKs too so the sandbox retransmits now instead
	 * of at its retransmission timeout (only then: with nothing lost they
	 * would cause spurious retransmissions) */
	int acks = (f->tfl & T_REFUSED) ? 4 : 1;
	f->tfl &= ~(uint32_t) T_REFUSED;
	for (int i = 0; i < acks; i++)
		send_flags(f, URS_TCP_ACK, f->snd_nxt);
}

static void want_out(struct urs_flow *f)
{
	if (f->tfl & T_WANT_OUT)
		return;
	f->tfl |= T_WANT_OUT;
	struct io_uring_sqe *sqe = urs_op_sqe(&f->pout);
	io_uring_prep_poll_add(sqe, f->fd, POLLOUT);
	f->pout.flags |= URS_OPF_WEAK;
	urs_submit(f->net->loop, &f->pout, pout_cb);
}

static void pin_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	struct urs_flow *f = container_of(op, struct urs_flow, pin);
	if (urs_net_flow_op_dead(f))
		return;
	if (res < 0) {
		reset_both(f); /* the poll failed: we would never hear of this socket again */
		return;
	}
	if (!(flags & IORING_CQE_F_MORE) && urs_net_arm_pin(f, pin_cb) < 0) {
		reset_both(f);
		return;
	}
	if (res & POLLERR) {
		int err = 0;
		socklen_t l = sizeof(err);
		getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &err, &l);
		if (err) {
			reset_both(f);
			return;
		}
	}
	f->last_ms = urs_net_now_ms(f->net);
	f->tfl &= ~(uint32_t) T_DRAINED; /* new data (or EOF) arrived */
	tx_data(f);
}

static void ack_in(struct urs_flow *f, const struct urs_pkt *p, uint32_t now)
{
	uint32_t ack = p->ack;
	if (seq_lt(f->snd_max, ack))
		return; /* acknowledges what we never sent */
	if (seq_lt(f->snd_una, ack)) {
		uint32_t data = ack - f->snd_una;
		if ((f->tfl & T_FIN_EVER) && ack == f->fin_seq + 1 &&
		    seq_le(f->snd_una, f->fin_seq)) {
			data = f->fin_seq - f->snd_una;
			f->tfl |= T_FIN_ACKED;
		}
		if (data && discard(f, data) < 0) {
			reset_both(f);
			return;
		}
		f->snd_una = ack;
		if (seq_lt(f->snd_nxt, ack))
			f->snd_nxt = ack; /* acked past a rewind: the peek offset clamped to 0 */
		f->dupacks = 0;
		f->retries = 0;
		f->rto_at = 0;
		if (f->snd_nxt != f->snd_una)
			arm_rto(f, now);
	} else if (ack == f->snd_una && f->snd_nxt != f->snd_una && !p->data_len &&
		   !(p->tflags & (URS_TCP_SYN | URS_TCP_FIN)) && p->win == f->last_win) {
		if (++f->dupacks == 3) {
			rewind_send(f);
			arm_rto(f, now);
		}
	}
	f->last_win = p->win;
	f->wnd_from_tap = (uint32_t) p->win << f->ws_from_tap;
}

/* Mirror the host socket's free send buffer in the window we advertise,
 * so the sandbox sends what the kernel will take instead of having the
 * excess dropped (2 syscalls per data segment; segments are up to 64 KiB).
 * Memory accounting counts more than payload: use 3/4 of the buffer. An
 * almost full socket closes the window until POLLOUT.
 *
 * "Almost full" is less than a segment free (silly window avoidance), but
 * never more than a twelfth of the buffer: the kernel reports POLLOUT once
 * its queue (truesize, at least the SIOCOUTQ bytes) is at most 2/3 of
 * SO_SNDBUF, which leaves at least 3/4 - 2/3 = 1/12 of it by our measure. A
 * threshold above that may never be met: a socket toward a 1500-byte path
 * starts with SO_SNDBUF ~69 KiB (3/4: 51840 bytes) while the sandbox's MSS
 * is 65480, and the window stayed closed for good — each POLLOUT completed
 * at once, re-armed itself and sent one more zero-window ACK (a busy loop
 * and an ACK storm; iperf3's control connection hung after its first
 * bytes). After a POLLOUT (@polled_out) whatever is free opens the window,
 * so a poll can never complete without progress. */
static void update_wnd(struct urs_flow *f, bool polled_out)
{
	int sb = 0, q = 0;
	socklen_t l = sizeof(sb);
	if (getsockopt(f->fd, SOL_SOCKET, SO_SNDBUF, &sb, &l) < 0 ||
	    ioctl(f->fd, SIOCOUTQ, &q) < 0) {
		f->wnd_adv = 0; /* unknown: the default */
		return;
	}
	int64_t space = (int64_t) sb * 3 / 4 - q;
	int64_t min = (uint32_t) f->mss < 4096u ? 4096 : f->mss;
	if (min > sb / 12)
		min = sb / 12;
	if (space < min && !(polled_out && space > 0)) {
		want_out(f);
		return;
	}
	f->wnd_adv = space > (int64_t) WND ? WND : (uint32_t) space;
}

static void data_in(struct urs_flow *f, const struct urs_pkt *p)
{
	const uint8_t *d = p->data;
	uint32_t len = p->data_len, seq = p->seq;
	bool fin = p->tflags & URS_TCP_FIN;
	if (!len && !fin)
		return;
	if (seq_lt(seq, f->rcv_nxt)) {
		uint32_t skip = f->rcv_nxt - seq;
		if (skip > len) {
			if (skip > len + 1 || (f->tfl & T_TAP_FIN))
				fin = false;
			skip = len;
		}
		d += skip;
		len -= skip;
		seq = f->rcv_nxt;
	}
	if (seq != f->rcv_nxt || (f->tfl & T_TAP_FIN) || (!len && !fin)) {
		/* a duplicate ACK; not while our window is closed, where it
		 * would only make the sandbox retransmit into a full socket
		 * (the window update brings duplicate ACKs of its own) */
		if (!(f->tfl & T_WANT_OUT))
			send_flags(f, URS_TCP_ACK, f->snd_nxt);
		else if (seq != f->rcv_nxt)
			f->tfl |= T_REFUSED;
		return;
	}
	if (len) {
		ssize_t s = send(f->fd, d, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (s < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				reset_both(f);
				return;
			}
			s = 0;
		}
		f->rcv_nxt += (uint32_t) s;
		if ((uint32_t) s < len) {
			f->tfl |= T_REFUSED;
			want_out(f);
			fin = false;
		} else {
			update_wnd(f, false);
		}
	}
	if (fin) {
		f->rcv_nxt++;
		shutdown(f->fd, SHUT_WR);
		f->tfl |= T_TAP_FIN;
	}
	send_flags(f, URS_TCP_ACK, f->snd_nxt);
}

static void syn_ack_sent(struct urs_flow *f)
{
	f->snd_una = f->snd_nxt;
	f->snd_nxt = f->snd_una + 1;
	f->snd_max = f->snd_nxt;
	f->tfl |= T_SYN_TAP;
	f->retries = 0;
	arm_rto(f, urs_net_now_ms(f->net));
}

static void connect_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct urs_flow *f = container_of(op, struct urs_flow, pout);
	if (urs_net_flow_op_dead(f))
		return;
	struct urs_net *n = f->net;
	f->tfl &= ~(uint32_t) T_CONNECTING;
	if (res == 0 || res == -EISCONN) {
		send_flags(f, URS_TCP_SYN | URS_TCP_ACK, f->snd_nxt);
		syn_ack_sent(f);
		if (urs_net_arm_pin(f, pin_cb) < 0)
			reset_both(f);
		return;
	}
	if (res == -ETIMEDOUT || res == -ECANCELED) {
		urs_net_flow_close(f); /* silence: the sandbox's own SYN timer decides */
		return;
	}
	/* refused, unreachable, ...: the sandbox sees a refusal */
	n->st.tcp_refused++;
	seg_send(n, f->family, &f->node.key.raddr, f->node.key.rport, f->node.key.lport,
		 URS_TCP_RST | URS_TCP_ACK, 0, f->rcv_nxt, 0, -1, NULL, 0, 0);
	urs_net_flow_close(f);
}

static int sock_setup(int fd)
{
	int zero = 0, one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) < 0)
		return -errno;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

static void syn_opts(struct urs_flow *f, const struct urs_pkt *p)
{
	struct urs_tcp_opts o;
	urs_tcp_parse_opts(p->opt, p->opt_len, &o);
	f->mss = o.mss ? o.mss : (f->family == AF_INET ? 536 : 1220);
	if (o.ws >= 0) {
		f->tfl |= T_WS;
		f->ws_from_tap = (uint8_t) o.ws;
		f->ws_to_tap = OUR_WS;
	} else {
		f->ws_from_tap = f->ws_to_tap = 0;
	}
}

static void syn_in(struct urs_net *n, const struct urs_pkt *p, bool to_gw)
{
	struct sockaddr_in6 sa = {0};
	socklen_t salen;
	if (to_gw) {
		/* only DNS lives on the gateway */
		if (p->dport != 53 || !n->cfg.n_dns) {
			n->st.tcp_refused++;
			urs_net_tcp_rst_nonflow(n, p);
			return;
		}
		memcpy(&sa, &n->cfg.dns[0], sizeof(sa));
		salen = sa.sin6_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(sa);
		n->st.dns_queries++;
	} else if (p->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *) &sa;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(p->dport);
		memcpy(&s4->sin_addr, &p->dst, 4);
		salen = sizeof(*s4);
	} else {
		sa.sin6_family = AF_INET6;
		sa.sin6_port = htons(p->dport);
		sa.sin6_addr = p->dst;
		salen = sizeof(sa);
	}
	struct urs_flow *f = urs_net_flow_new(n, IPPROTO_TCP, p->family);
	if (!f) {
		urs_net_tcp_rst_nonflow(n, p);
		return;
	}
	urs_net_key(&f->node.key, IPPROTO_TCP, p->family, p->sport, &p->dst, p->dport);
	if (urs_flowtab_insert(&n->flows, &f->node) < 0) {
		urs_net_flow_close(f);
		return;
	}
	syn_opts(f, p);
	f->rcv_nxt = p->seq + 1;
	f->snd_nxt = isn_for(n, &f->node.key);
	f->snd_una = f->snd_max = f->snd_nxt;
	f->wnd_from_tap = p->win;
	f->last_win = p->win;
	f->fd = socket(sa.sin6_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (f->fd < 0 || sock_setup(f->fd) < 0) {
		f->own_fd = f->fd >= 0;
		n->st.tcp_refused++;
		urs_net_tcp_rst_nonflow(n, p);
		urs_net_flow_close(f);
		return;
	}
	f->own_fd = true;
	f->peer = sa;
	f->tfl = (f->tfl & T_WS) | T_CONNECTING;
	struct io_uring_sqe *sqe = urs_op_sqe(&f->pout);
	io_uring_prep_connect(sqe, f->fd, (struct sockaddr *) &f->peer, salen);
	f->pout.flags |= URS_OPF_WEAK;
	n->st.tcp_open++;
	if (urs_submit(n->loop, &f->pout, connect_cb) < 0) {
		urs_net_tcp_rst_nonflow(n, p);
		urs_net_flow_close(f);
	}
}

void urs_net_tcp_input(struct urs_net *n, const struct urs_pkt *p, bool to_gw)
{
	struct urs_flow_key k;
	urs_net_key(&k, IPPROTO_TCP, p->family, p->sport, &p->dst, p->dport);
	struct urs_flow_node *node = urs_flowtab_find(&n->flows, &k);
	if (!node) {
		if ((p->tflags & (URS_TCP_SYN | URS_TCP_ACK | URS_TCP_RST)) == URS_TCP_SYN)
			syn_in(n, p, to_gw);
		else
			urs_net_tcp_rst_nonflow(n, p);
		return;
	}
	struct urs_flow *f = container_of(node, struct urs_flow, node);
	uint32_t now = urs_net_now_ms(n);
	f->last_ms = now;
	if (f->tfl & T_CONNECTING) {
		/* a retransmitted SYN while we connect is ignored; an RST for
		 * our SYN sequence aborts the attempt */
		if ((p->tflags & URS_TCP_RST) && p->seq == f->rcv_nxt)
			urs_net_flow_close(f);
		return;
	}
	bool inbound_syn = (f->tfl & T_INBOUND) && !(f->tfl & T_ESTAB);
	if (p->tflags & URS_TCP_RST) {
		bool ok;
		if (inbound_syn)
			ok = (p->tflags & URS_TCP_ACK) && p->ack == f->snd_nxt;
		else
			ok = seq_le(f->rcv_nxt, p->seq) && seq_lt(p->seq, f->rcv_nxt + (1u << 30));
		if (ok) {
			n->st.tcp_reset++;
			abort_sock(f);
		}
		return;
	}
	if (inbound_syn) {
		/* we sent the SYN: wait for the SYN-ACK */
		if ((p->tflags & (URS_TCP_SYN | URS_TCP_ACK)) != (URS_TCP_SYN | URS_TCP_ACK) ||
		    p->ack != f->snd_nxt)
			return;
		syn_opts(f, p);
		if (!(f->tfl & T_WS))
			f->ws_to_tap = f->ws_from_tap = 0;
		f->rcv_nxt = p->seq + 1;
		f->snd_una = p->ack;
		f->wnd_from_tap = p->win; /* unscaled on a SYN */
		f->last_win = p->win;
		f->tfl = (f->tfl & ~(uint32_t) T_SYN_TAP) | T_ESTAB;
		f->rto_at = 0;
		f->retries = 0;
		send_flags(f, URS_TCP_ACK, f->snd_nxt);
		tx_data(f);
		return;
	}
	if (p->tflags & URS_TCP_SYN) {
		if (f->tfl & T_SYN_TAP) {
			/* our SYN-ACK was lost: send it again */
			send_flags(f, URS_TCP_SYN | URS_TCP_ACK, f->snd_una);
		} else if ((f->tfl & T_TAP_FIN) && !(p->tflags & URS_TCP_ACK) &&
			   p->seq != f->rcv_nxt - 1) {
			/* the sandbox closed this connection and reuses the
			 * tuple for a new one: end the old, start the new */
			abort_sock(f);
			syn_in(n, p, to_gw);
		}
		return;
	}
	if (!(p->tflags & URS_TCP_ACK))
		return;
	if (f->tfl & T_SYN_TAP) {
		if (p->ack != f->snd_nxt)
			return;
		f->snd_una = p->ack;
		f->tfl = (f->tfl & ~(uint32_t) T_SYN_TAP) | T_ESTAB;
		f->rto_at = 0;
		f->retries = 0;
		f->last_win = p->win;
		f->wnd_from_tap = (uint32_t) p->win << f->ws_from_tap;
	} else {
		ack_in(f, p, now);
		if (f->dying)
			return;
	}
	data_in(f, p);
	if (f->dying)
		return;
	tx_data(f);
	if (!f->dying)
		check_done(f);
}

void urs_net_tcp_tick(struct urs_flow *f, uint32_t now)
{
	struct urs_net *n = f->net;
	if (f->tfl & T_CONNECTING)
		return;
	if (now - f->last_ms > n->cfg.tcp_idle_ms) {
		reset_both(f);
		return;
	}
	if (!f->rto_at || (int32_t) (now - f->rto_at) < 0)
		return;
	if (f->tfl & T_SYN_TAP) {
		if (++f->retries > SYN_RETR) {
			abort_sock(f);
			return;
		}
		uint8_t fl = (f->tfl & T_INBOUND) ? URS_TCP_SYN : URS_TCP_SYN | URS_TCP_ACK;
		send_flags(f, fl, f->snd_una);
		arm_rto(f, now);
		return;
	}
	if (f->snd_nxt == f->snd_una) {
		f->rto_at = 0;
		return;
	}
	if (++f->retries > MAX_RETR) {
		reset_both(f);
		return;
	}
	rewind_send(f);
	arm_rto(f, now);
	tx_data(f);
}

/* Inbound forwards: each accepted client becomes a connection into the
 * sandbox, from the gateway's address and an ephemeral port. */
static void accept_one(struct urs_net_fwd *fw, int cfd)
{
	struct urs_net *n = fw->net;
	uint8_t family = fw->family == AF_INET6 && n->cfg.ipv6 ? AF_INET6 : AF_INET;
	struct in6_addr gw = {0};
	memcpy(&gw, family == AF_INET ? (const void *) &n->cfg.gw4 : (const void *) &n->cfg.gw6,
	       family == AF_INET ? 4 : 16);
	uint16_t port = urs_net_eph_port(n, IPPROTO_TCP, family, &gw, fw->sandbox_port);
	struct urs_flow *f = port ? urs_net_flow_new(n, IPPROTO_TCP, family) : NULL;
	if (!f || sock_setup(cfd) < 0) {
		struct linger l = {1, 0};
		setsockopt(cfd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(cfd);
		if (f)
			urs_net_flow_close(f);
		return;
	}
	f->fd = cfd;
	f->own_fd = true;
	f->fwd = (uint8_t) (fw->idx + 1);
	urs_net_key(&f->node.key, IPPROTO_TCP, family, fw->sandbox_port, &gw, port);
	if (urs_flowtab_insert(&n->flows, &f->node) < 0) {
		urs_net_flow_close(f);
		return;
	}
	f->tfl = T_INBOUND;
	f->ws_to_tap = OUR_WS;
	f->snd_nxt = isn_for(n, &f->node.key);
	f->mss = our_mss(n, family);
	n->st.tcp_open++;
	send_flags(f, URS_TCP_SYN, f->snd_nxt);
	syn_ack_sent(f);
	if (urs_net_arm_pin(f, pin_cb) < 0)
		abort_sock(f);
}

/* The listener polled readable: accept the clients waiting (a poll
 * completion comes per wakeup, not per client, so none may be left behind
 * without a way back). A failing accept (-EMFILE...) leaves clients
 * queued, and so does the cap (ACCEPT_BATCH per completion, so that a
 * connection flood cannot hold the loop that also serves the tap, the
 * timers and the control socket): the poll is cancelled, and its end
 * re-arms it on the next tick (urs_net_fwd_ended), where a ready listener
 * completes at once — not a busy loop. */
#define ACCEPT_BATCH 64
static void accept_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	struct urs_net_fwd *fw = container_of(op, struct urs_net_fwd, op);
	struct urs_net *n = fw->net;
	for (int k = 0; res >= 0 && !n->closing && fw->fd >= 0; k++) {
		if (k == ACCEPT_BATCH) {
			if (flags & IORING_CQE_F_MORE)
				urs_cancel(loop, op);
			break;
		}
		int cfd = accept4(fw->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && (flags & IORING_CQE_F_MORE))
				urs_cancel(loop, op);
			break;
		}
		if (!n->accept_hook ||
		    !n->accept_hook(n->accept_ctx, cfd, fw->family, fw->sandbox_port))
			accept_one(fw, cfd);
	}
	urs_net_fwd_ended(fw, res, flags);
}

int urs_net_tcp_fwd_start(struct urs_net_fwd *fw)
{
	fw->cb = accept_cb;
	return urs_net_fwd_arm(fw);
}
