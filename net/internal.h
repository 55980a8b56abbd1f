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

/**
 * urs_net_now_ms() - the engine's clock
 * @n: the engine
 *
 * Return: milliseconds since urs_net_init(), wrapping after ~49 days
 * (compare differences, never values).
 */
uint32_t urs_net_now_ms(const struct urs_net *n);

/**
 * urs_net_buf() - the shared URS_NET_BUF-byte peek/receive buffer
 * @n: the engine
 *
 * Mapped on first use and marked used for this tick: the tick gives its
 * pages back after a slow tick unused, and unmaps it once the engine has
 * had no flow for URS_NET_TRIM_MS. Scratch space shared by every flow and
 * forward: nothing in it outlives the callback that filled it.
 *
 * Return: the buffer, or NULL if it could not be mapped.
 */
uint8_t *urs_net_buf(struct urs_net *n);

/**
 * urs_net_tick_need() - make sure the engine's tick runs
 * @n: the engine
 *
 * Starts it (first tick in URS_NET_TICK_MS) unless it is running or the
 * engine is closing, and restarts the "empty since" clock.
 */
void urs_net_tick_need(struct urs_net *n);

/**
 * urs_net_flow_new() - a new flow record, linked on the engine's list
 * @n: the engine
 * @proto: IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP or IPPROTO_ICMPV6
 * @family: AF_INET or AF_INET6
 *
 * Zeroed but for the engine, fd -1, protocol, family and last_ms; counted
 * in the flow gauges, and the tick started. The caller fills the key and
 * inserts it (urs_flowtab_insert), or closes the flow.
 *
 * Return: the flow, or NULL when the table is full (counted as drop_limit)
 * or memory is short.
 */
struct urs_flow *urs_net_flow_new(struct urs_net *n, uint8_t proto, uint8_t family);

/**
 * urs_net_flow_close() - end a flow
 * @f: the flow; nothing happens if it is already dying
 *
 * Unlinks both keys and takes it off the engine's lists, cancels its ops
 * and closes its socket if it owns one. The record is freed now if no op
 * is in flight, else by the last op's callback (urs_net_flow_op_dead);
 * with the engine closing that may free the engine too.
 */
void urs_net_flow_close(struct urs_flow *f);

/**
 * urs_net_flow_block() - wait for urs_net_tx_ready()
 * @f: a flow the tap refused a frame of (-EAGAIN); no-op if already blocked
 *     or dying
 */
void urs_net_flow_block(struct urs_flow *f);

/**
 * urs_net_arm_pin() - arm the flow's multishot POLLIN (and RDHUP, ERR, HUP)
 * @f: the flow, its socket open
 * @cb: the protocol's callback
 *
 * A weak op (the engine's sockets do not keep the loop running).
 *
 * Return: 0, also when it is armed already.
 */
int urs_net_arm_pin(struct urs_flow *f, urs_op_cb cb);

/**
 * urs_net_flow_op_dead() - first thing in every flow op callback
 * @f: the flow the op belongs to
 *
 * Return: true if the flow is dying (and freed now if that was its last
 * op): the callback must return at once.
 */
bool urs_net_flow_op_dead(struct urs_flow *f);

/**
 * urs_net_fwd_arm() - arm a forward's / raw socket's multishot poll
 * @fw: the forward (its epoll fd is polled) or raw socket; fw->cb set
 *
 * A weak op, counted in fwd_live until its final completion.
 *
 * Return: 0, or -EBUSY if its op is still in flight.
 */
int urs_net_fwd_arm(struct urs_net_fwd *fw);

/**
 * urs_net_fwd_ended() - called by a forward's callback for every completion
 * @fw: the forward or raw socket
 * @res: the completion's result
 * @flags: its flags
 *
 * When the op ended it is re-armed now, on the next tick after an error
 * (an -EMFILE must not become a busy loop), or released when the engine is
 * closing: then @fw's engine may have been freed by this call.
 *
 * Return: true when the op ended (no more completions).
 */
bool urs_net_fwd_ended(struct urs_net_fwd *fw, int32_t res, uint32_t flags);

/**
 * urs_net_eph_port() - a free ephemeral port for an inbound flow
 * @n: the engine
 * @proto: the flow's protocol
 * @family: its family
 * @raddr: the address the sandbox will see it come from (the gateway's)
 * @lport: the sandbox port it goes to
 *
 * Tries up to 256 ports of 32768..60999 in turn, for one whose key (@proto,
 * @family, @lport, @raddr, port) is not in the table.
 *
 * Return: the port, or 0 when none was free.
 */
uint16_t urs_net_eph_port(struct urs_net *n, uint8_t proto, uint8_t family,
			  const struct in6_addr *raddr, uint16_t lport);

/**
 * urs_net_key() - fill a sandbox-side flow key (kind 0)
 * @k: the key (zeroed first, so it compares as bytes)
 * @proto: IPPROTO_*
 * @family: AF_INET or AF_INET6
 * @lport: the sandbox's port (ICMP: its echo id)
 * @raddr: the remote address; 4 or 16 bytes are read by @family
 * @rport: the remote port (ICMP: 0)
 */
void urs_net_key(struct urs_flow_key *k, uint8_t proto, uint8_t family, uint16_t lport,
		 const struct in6_addr *raddr, uint16_t rport);

/* output.c */

/**
 * urs_net_tx_ip() - one IP packet to the sandbox
 * @n: the engine
 * @family: AF_INET or AF_INET6
 * @src: from this address, to the sandbox's
 * @proto: IPPROTO_*
 * @l4h: the L4 header; its checksum field is filled here
 * @l4hlen: its length
 * @data: the payload, passed by reference (not copied), or NULL
 * @dlen: its length
 * @gso: segment size for a TCP frame larger than one segment (0: none)
 *
 * Builds the Ethernet (to the sandbox's MAC, broadcast while unknown) and IP
 * headers (IPv4: DF, TTL 64; IPv6: hop limit 64). With a virtio-net header
 * TCP and UDP checksums are left to the device (NEEDS_CSUM); otherwise the
 * L4 checksum is computed here.
 *
 * Return: the tx result: 0, -EAGAIN (tap full), -EMSGSIZE (too long for
 * the IP length field), -ESHUTDOWN (the engine is closing) or another
 * negative errno from the tx callback.
 */
int urs_net_tx_ip(struct urs_net *n, uint8_t family, const struct in6_addr *src, uint8_t proto,
		  uint8_t *l4h, size_t l4hlen, const void *data, size_t dlen, uint16_t gso);

/**
 * urs_net_tx_eth() - one Ethernet frame from the gateway's MAC
 * @n: the engine
 * @dst: the destination MAC
 * @ethertype: URS_ETH_P_*
 * @l3: the frame's payload (ARP, or a complete IPv6 packet), not copied
 * @len: its length
 *
 * Return: the tx result, as for urs_net_tx_ip().
 */
int urs_net_tx_eth(struct urs_net *n, const uint8_t dst[6], uint16_t ethertype, const void *l3,
		   size_t len);

/**
 * urs_net_icmp_unreach() - ICMP destination unreachable about packet @p
 * @n: the engine
 * @p: the packet the sandbox sent
 * @type4: ICMP type, if @p is IPv4
 * @code4: ICMP code, if @p is IPv4
 * @type6: ICMPv6 type, if @p is IPv6
 * @code6: ICMPv6 code, if @p is IPv6
 *
 * From @p's destination, quoting @p from its IP header (up to 548 bytes
 * for IPv4, 1232 for IPv6). A tap that refuses it loses it.
 */
void urs_net_icmp_unreach(struct urs_net *n, const struct urs_pkt *p, uint8_t type4, uint8_t code4,
			  uint8_t type6, uint8_t code6);

/* policy.c */

/**
 * urs_net_policy_init() - note the host's own addresses (getifaddrs)
 * @n: the engine being made
 *
 * One allocation, n->host_addrs; the list is not refreshed later.
 *
 * Return: 0, -ENOMEM, or getifaddrs(3)'s negative errno.
 */
int urs_net_policy_init(struct urs_net *n);

/**
 * urs_net_policy_ok() - may the sandbox reach @dst?
 * @n: the engine
 * @family: AF_INET or AF_INET6
 * @dst: the destination
 *
 * Refused unless inside a cfg.allow prefix: loopback, "this" network,
 * multicast and reserved (IPv4 224/3), link-local and metadata (169.254/16,
 * fe80::/10), IPv6 multicast, ::/96 and ::ffff:0:0/96 (IPv4 aliases), and
 * the host's own addresses at init.
 *
 * Return: true if the sandbox may reach @dst.
 */
bool urs_net_policy_ok(const struct urs_net *n, int family, const struct in6_addr *dst);

/**
 * urs_net_prefix_match() - is @a inside prefix @p?
 * @p: the prefix (a length past the family's is taken as the full length)
 * @family: @a's family; a prefix of the other family never matches
 * @a: the address (IPv4 in the first 4 bytes)
 *
 * Return: true if the first @p->len bits are equal.
 */
bool urs_net_prefix_match(const struct urs_net_prefix *p, int family, const struct in6_addr *a);

/* arp.c, ndp.c */

/**
 * urs_net_arp_input() - an ARP frame from the sandbox
 * @n: the engine
 * @p: the parsed frame
 *
 * Learns the sandbox's MAC from any request or reply sent from its address,
 * and answers requests for the gateway's address with the gateway MAC.
 * Short frames and other hardware/protocol types are dropped and counted.
 */
void urs_net_arp_input(struct urs_net *n, const struct urs_pkt *p);

/**
 * urs_net_ndp_input() - an ICMPv6 neighbor discovery message (types 133-137)
 * @n: the engine
 * @p: the parsed packet
 *
 * Learns the sandbox's MAC from solicitations and advertisements and
 * answers solicitations for the gateway's address (or fe80::1). RFC 4861
 * checks (hop limit 255, code 0, well-formed options) drop and count the
 * rest; router and redirect messages are ignored.
 */
void urs_net_ndp_input(struct urs_net *n, const struct urs_pkt *p);

/* icmp.c */

/**
 * urs_net_icmp_input() - an ICMP or ICMPv6 packet from the sandbox
 * @n: the engine
 * @p: the parsed packet
 * @to_gw: it is addressed to the gateway
 *
 * Echo requests to the gateway are answered here; others go out through a
 * ping socket per (echo id, destination), or the shared raw socket where
 * ping sockets are not permitted. Anything else is dropped and counted.
 */
void urs_net_icmp_input(struct urs_net *n, const struct urs_pkt *p, bool to_gw);

/* udp.c */

/**
 * urs_net_udp_input() - a UDP datagram (or a USO frame of them) from the
 *                       sandbox
 * @n: the engine
 * @p: the parsed packet
 * @to_gw: it is addressed to the gateway: only DNS (port 53, to the first
 *         resolver); anything else is answered with port unreachable
 *
 * Sent on the flow's connected host socket, which is opened for a new
 * (sandbox port, destination) pair. A USO frame of 128 segments or more is
 * dropped.
 */
void urs_net_udp_input(struct urs_net *n, const struct urs_pkt *p, bool to_gw);

/**
 * urs_net_udp_fwd_start() - start an inbound UDP forward
 * @fw: the forward, its socket bound
 *
 * Each client address becomes a flow into the sandbox from the gateway's
 * address and an ephemeral port.
 *
 * Return: as urs_net_fwd_arm().
 */
int urs_net_udp_fwd_start(struct urs_net_fwd *fw);

/**
 * urs_net_udp_tick() - close the flow once it has been idle too long
 * @f: a UDP flow
 * @now: urs_net_now_ms()
 *
 * After cfg.udp_idle_ms without traffic, at most 10 s for DNS queries.
 */
void urs_net_udp_tick(struct urs_flow *f, uint32_t now);

/* tcp.c */

/**
 * urs_net_tcp_input() - a TCP segment from the sandbox
 * @n: the engine
 * @p: the parsed packet
 * @to_gw: it is addressed to the gateway (only DNS, port 53, is served)
 *
 * To its flow; a SYN without one opens a flow (a host socket and an
 * io_uring connect: the SYN-ACK goes out once it is connected); any other
 * segment without a flow is answered with an RST.
 */
void urs_net_tcp_input(struct urs_net *n, const struct urs_pkt *p, bool to_gw);

/**
 * urs_net_tcp_fwd_start() - start an inbound TCP forward
 * @fw: the forward, its socket listening
 *
 * Each accepted client (up to 64 per completion) is offered to the accept
 * hook first, else becomes a connection into the sandbox from the
 * gateway's address and an ephemeral port.
 *
 * Return: as urs_net_fwd_arm().
 */
int urs_net_tcp_fwd_start(struct urs_net_fwd *fw);

/**
 * urs_net_tcp_tick() - the flow's timers
 * @f: a TCP flow (one still connecting is left alone)
 * @now: urs_net_now_ms()
 *
 * Resets both sides after cfg.tcp_idle_ms without traffic. On the
 * retransmission deadline: resends the SYN or SYN-ACK (6 times, then
 * aborts), or rewinds and resends unacknowledged data with backoff (20
 * times, then resets both sides).
 */
void urs_net_tcp_tick(struct urs_flow *f, uint32_t now);

/**
 * urs_net_tcp_tx_ready() - the tap takes frames again: send what is pending
 * @f: a TCP flow that was blocked
 *
 * Also re-sends a FIN the tap refused.
 */
void urs_net_tcp_tx_ready(struct urs_flow *f);

/**
 * urs_net_tcp_rst_nonflow() - answer a segment no flow takes with an RST
 * @n: the engine
 * @p: the segment (an RST itself is not answered)
 *
 * RFC 793: sequence = its ACK if it has one, else an RST|ACK that
 * acknowledges it.
 */
void urs_net_tcp_rst_nonflow(struct urs_net *n, const struct urs_pkt *p);

#endif
