/*
 * net/internal.h — the engine's private state shared by its protocol files:
 * struct urs_net, the flow record, and the functions each file exports to
 * the others. Nothing outside net/ includes this.
 */
#ifndef URSA_NET_INTERNAL_H
#define URSA_NET_INTERNAL_H

#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/flow.h"
#include "net/frame.h"
#include "net/neigh.h"
#include "net/net.h"
#include "runtime/loop.h"
#include "runtime/timer.h"

#define URS_NET_BUF	     65536u /* the shared peek/receive buffer */
#define URS_NET_TICK_MS	     100u
#define URS_NET_SLOW_TICK_MS 1000u
#define URS_NET_TRIM_MS	     5000u /* empty this long: release slabs and the buffer */

/* TCP flow flags */
enum {
	T_CONNECTING = 1u << 0, /* host connect in flight */
	T_SYN_TAP = 1u << 1,	/* our SYN / SYN-ACK to the sandbox not yet acknowledged */
	T_ESTAB = 1u << 2,	/* handshake with the sandbox complete */
	T_TAP_FIN = 1u << 3,	/* FIN from the sandbox: host socket shut for writing */
	T_SOCK_EOF = 1u << 4,	/* EOF from the host socket */
	T_FIN_SENT = 1u << 5,	/* our FIN sent (counted in snd_nxt) */
	T_FIN_ACKED = 1u << 6,	/* ... and acknowledged */
	T_WANT_OUT = 1u << 7,	/* host socket full: zero window, POLLOUT armed */
	T_INBOUND = 1u << 8,	/* from a port forward */
	T_WS = 1u << 9,		/* window scaling negotiated */
	T_FIN_EVER = 1u << 10,	/* fin_seq is valid */
	T_DRAINED = 1u << 11,	/* the last peek found no more data: wait for POLLIN */
	T_REFUSED = 1u << 12,	/* sandbox data refused while the window was closed */
};

struct urs_flow {
	struct urs_flow_node node;  /* the sandbox-side tuple */
	struct urs_flow_node node2; /* a secondary key (UDP forward clients) */
	struct urs_net *net;
	struct urs_flow *all_prev, *all_next; /* every live flow (for the tick) */
	struct urs_flow *blk_next;	      /* waiting for urs_net_tx_ready */
	int fd;
	uint8_t proto, family;
	bool dying, blocked, own_fd;
	bool short_idle; /* DNS query or ICMP echo: a shorter idle timeout */
	uint8_t fwd;	 /* forward index + 1 for inbound flows */
	uint32_t last_ms;
	struct urs_op pin;	  /* multishot POLLIN */
	struct urs_op pout;	  /* connect, then one-shot POLLOUT */
	struct sockaddr_in6 peer; /* connect target / UDP forward client (sockaddr_in fits) */
	/* TCP */
	uint32_t tfl;
	uint32_t snd_una, snd_nxt, snd_max, rcv_nxt, fin_seq;
	uint32_t wnd_from_tap; /* bytes */
	uint32_t wnd_adv;      /* bytes we advertise (0: the default) */
	uint32_t rto_at;       /* ms: retransmit deadline while something is unacknowledged */
	uint16_t mss;
	uint8_t ws_from_tap, ws_to_tap;
	uint8_t dupacks, retries;
	uint16_t last_win; /* last raw window from the sandbox (dup-ack detection) */
};

/* A host socket bound to a forward's port (TCP: listening) or a raw ICMP
 * socket: one multishot POLLIN op; its callback then accepts (TCP) or
 * receives (UDP, ICMP) with plain non-blocking syscalls.
 * A forward's op polls an epoll descriptor watching the socket, never the
 * socket itself: an io_uring request holds a reference to the file it
 * works on, and when the supervisor dies (SIGKILL, or exit
 * with the request still armed) the ring is torn down later by a kernel
 * worker, whose last fput of the file is deferred again (delayed_fput): the
 * port stayed bound ~10 ms after the supervisor was gone, and an immediate
 * `ursa run` or restore on the same port failed with EADDRINUSE. epoll
 * holds no reference to the files it watches, so the descriptor table is
 * the socket's only owner and close(2) or the process's exit frees the port
 * at once (tests/net/fwd_rebind.sh). */
struct urs_net_fwd {
	struct urs_net *net;
	struct urs_op op;
	urs_op_cb cb;
	int fd;
	int epfd; /* forwards: epoll watching @fd, what the op polls; raw: -1 */
	uint8_t proto, idx;
	bool rearm; /* its op ended with an error: re-armed on the next tick */
	uint16_t sandbox_port;
	int family;
};

struct urs_net {
	struct urs_loop *loop;
	struct urs_net_cfg cfg;
	urs_net_tx_fn tx;
	void *tx_ctx;
	struct urs_net_stats st;
	uint8_t sb_mac[6];
	bool sb_mac_known;
	bool closing;
	struct urs_neigh neigh;
	struct urs_flowtab flows;
	struct urs_flow *all;
	struct urs_flow *blk_head;
	uint32_t nflows_dying;
	/* policy: the host's own addresses at init */
	struct urs_net_prefix *host_addrs;
	unsigned n_host_addrs;
	/* shared buffer (mmap'd on first use, released when idle) */
	uint8_t *buf;
	bool buf_hot;	   /* used since the last tick */
	bool buf_resident; /* pages possibly resident */
	uint32_t buf_idle_since_ms;
	struct urs_timer tick;
	uint32_t empty_since_ms;
	struct urs_net_fwd *fwds[URS_NET_MAX_FWD];
	unsigned n_fwds;
	urs_net_accept_fn accept_hook; /* TCP forward clients offered first (splice) */
	void *accept_ctx;
	/* raw ICMP sockets (IPv4, IPv6) when ping sockets are not permitted */
	struct urs_net_fwd *raw[2];
	int8_t raw_err[2]; /* -1: opening failed, do not retry */
	uint16_t next_icmp_id;
	uint32_t fwd_live; /* forward ops not yet finally completed */
	uint32_t isn_key[4];
	uint16_t next_port;
	uint16_t ip_id;
	bool peek_off; /* SO_PEEK_OFF works on TCP sockets */
	uint64_t t0_ns;
};

/* engine.c */
uint32_t urs_net_now_ms(const struct urs_net *n);
uint8_t *urs_net_buf(struct urs_net *n);
void urs_net_tick_need(struct urs_net *n);
struct urs_flow *urs_net_flow_new(struct urs_net *n, uint8_t proto, uint8_t family);
void urs_net_flow_close(struct urs_flow *f);
void urs_net_flow_block(struct urs_flow *f);
int urs_net_arm_pin(struct urs_flow *f, urs_op_cb cb);
/* First thing in every flow op callback: true if the flow is dying (and
 * freed now if that was its last op). */
bool urs_net_flow_op_dead(struct urs_flow *f);
/* Arm a forward's / raw socket's multishot poll (fw->cb set). */
int urs_net_fwd_arm(struct urs_net_fwd *fw);
/* Called by its callback for every completion: true when the op ended (no
 * more completions; re-armed now, on the next tick after an error, or
 * released when the engine is closing). */
bool urs_net_fwd_ended(struct urs_net_fwd *fw, int32_t res, uint32_t flags);
uint16_t urs_net_eph_port(struct urs_net *n, uint8_t proto, uint8_t family,
			  const struct in6_addr *raddr, uint16_t lport);
void urs_net_key(struct urs_flow_key *k, uint8_t proto, uint8_t family, uint16_t lport,
		 const struct in6_addr *raddr, uint16_t rport);

/* output.c: one IP packet to the sandbox (from @src to the sandbox's
 * address); the L4 header's checksum is filled here; @gso: segment size for
 * a TCP frame larger than one segment (0: none). Returns the tx result. */
int urs_net_tx_ip(struct urs_net *n, uint8_t family, const struct in6_addr *src, uint8_t proto,
		  uint8_t *l4h, size_t l4hlen, const void *data, size_t dlen, uint16_t gso);
int urs_net_tx_eth(struct urs_net *n, const uint8_t dst[6], uint16_t ethertype, const void *l3,
		   size_t len);
/* ICMP destination unreachable about packet @p (type/code for the family). */
void urs_net_icmp_unreach(struct urs_net *n, const struct urs_pkt *p, uint8_t type4, uint8_t code4,
			  uint8_t type6, uint8_t code6);

/* policy.c */
int urs_net_policy_init(struct urs_net *n);
/* true if the sandbox may reach @dst */
bool urs_net_policy_ok(const struct urs_net *n, int family, const struct in6_addr *dst);
bool urs_net_prefix_match(const struct urs_net_prefix *p, int family, const struct in6_addr *a);

/* arp.c, ndp.c */
void urs_net_arp_input(struct urs_net *n, const struct urs_pkt *p);
void urs_net_ndp_input(struct urs_net *n, const struct urs_pkt *p);

/* icmp.c */
void urs_net_icmp_input(struct urs_net *n, const struct urs_pkt *p, bool to_gw);

/* udp.c */
void urs_net_udp_input(struct urs_net *n, const struct urs_pkt *p, bool to_gw);
int urs_net_udp_fwd_start(struct urs_net_fwd *fw);
void urs_net_udp_tick(struct urs_flow *f, uint32_t now);

/* tcp.c */
void urs_net_tcp_input(struct urs_net *n, const struct urs_pkt *p, bool to_gw);
int urs_net_tcp_fwd_start(struct urs_net_fwd *fw);
void urs_net_tcp_tick(struct urs_flow *f, uint32_t now);
void urs_net_tcp_tx_ready(struct urs_flow *f);
void urs_net_tcp_rst_nonflow(struct urs_net *n, const struct urs_pkt *p);

#endif
