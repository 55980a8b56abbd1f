/*
 * net/net.h — the user-mode network engine: Ethernet frames from the
 * sandbox's tap in, host sockets out (and back).
 *
 * This is the contract between the engine (net/) and its owner, the
 * netstack actor (actors/netstack.c), which opens the tap, receives frames
 * on a growing provided-buffer ring and transmits what the engine builds.
 * The engine knows nothing of taps, namespaces or OCI: it sees frames
 * (each starting with a struct virtio_net_hdr when cfg.vnet_hdr is set) and
 * talks to the host through sockets on the caller's runtime loop.
 *
 * Threading: everything runs on the loop given to urs_net_init(); no call
 * is thread-safe. Hot paths (urs_net_input, socket completions) never
 * allocate: flows come from a table that grows on demand and is bounded.
 */
#ifndef URSA_NET_NET_H
#define URSA_NET_NET_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "runtime/loop.h"

#define URS_NET_MAX_DNS	  3
#define URS_NET_MAX_ALLOW 16
#define URS_NET_MAX_FWD	  32
#define URS_NET_MAX_FLOWS 1048576 /* the most max_flows may say */

/* A prefix (IPv4 as v4-mapped IPv6 is NOT used: family says which). */
struct urs_net_prefix {
	int family; /* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	};
	uint8_t len;
};

struct urs_net_cfg {
	uint8_t gw_mac[6];	    /* the gateway's (our) MAC on the tap */
	uint8_t sandbox_mac[6];	    /* the sandbox's MAC, if known (sandbox_mac_set) */
	bool sandbox_mac_set;	    /* else learned from the sandbox's first frames */
	struct in_addr addr4, gw4;  /* sandbox address and gateway (.2 and .1) */
	uint8_t prefix4;	    /* 24 */
	struct in6_addr addr6, gw6; /* ULA /64: ::2 and ::1 */
	uint8_t prefix6;	    /* 64 */
	bool ipv6;		    /* IPv6 enabled */
	bool vnet_hdr;		    /* frames start with struct virtio_net_hdr (10 bytes) */
	uint32_t mtu;		    /* the tap's MTU (default 65520) */
	/* DNS: queries to gw4/gw6 port 53 are forwarded to these */
	struct sockaddr_storage dns[URS_NET_MAX_DNS];
	unsigned n_dns;
	/* Policy: destinations on host loopback, the host's own addresses and
	 * link-local/metadata ranges are refused unless inside an allow entry. */
	struct urs_net_prefix allow[URS_NET_MAX_ALLOW];
	unsigned n_allow;
	uint32_t max_flows;   /* TCP + UDP + ICMP flows alive at once (default 1024) */
	uint32_t udp_idle_ms; /* default 60 000 */
	uint32_t tcp_idle_ms; /* established connections without traffic: default 2 h */
};

/**
 * urs_net_cfg_default() - fill @cfg with the defaults
 * @cfg: the configuration (zeroed first)
 *
 * 10.0.2.0/24-style private net (sandbox .2, gateway .1), ULA /64 (::2,
 * ::1), gateway MAC, virtio-net header, MTU 65520, 1024 flows, idle
 * timeouts of 60 s (UDP) and 2 h (TCP), and up to URS_NET_MAX_DNS
 * resolvers from /etc/resolv.conf if readable (a blocking read).
 */
void urs_net_cfg_default(struct urs_net_cfg *cfg);

/*
 * Transmit a frame to the sandbox (virtio_net_hdr first when cfg.vnet_hdr).
 * Returns 0 when the frame was queued, -EAGAIN when the tap is full (the
 * engine keeps the data and retries on urs_net_tx_ready()), another -errno
 * when it was dropped. The iovecs need only live for the call.
 */
typedef int (*urs_net_tx_fn)(void *ctx, const struct iovec *iov, int iovcnt);

/* Counters the metrics actor reads (plain fields, single writer: the loop). */
struct urs_net_stats {
	uint64_t rx_frames, rx_bytes; /* from the sandbox */
	uint64_t tx_frames, tx_bytes; /* to the sandbox */
	uint64_t tx_again;	      /* -EAGAIN from the tap */
	uint64_t drop_bad;	      /* malformed frames / headers */
	uint64_t drop_frag;	      /* IP fragments */
	uint64_t drop_csum;	      /* bad checksums */
	uint64_t drop_policy;	      /* destinations the policy refuses */
	uint64_t drop_limit;	      /* flow table full */
	uint64_t drop_other;	      /* unsupported protocol, no route, ... */
	uint64_t arp, ndp;	      /* requests answered */
	uint64_t icmp_echo;	      /* echo requests forwarded */
	uint64_t tcp_open, tcp_refused, tcp_reset;
	uint64_t udp_open;
	uint64_t dns_queries;
	uint32_t flows_tcp, flows_udp, flows_icmp; /* alive now */
	uint32_t neigh_entries;
};

struct urs_net;

/**
 * urs_net_init() - create an engine on @loop
 * @out: gets the engine
 * @loop: the loop everything runs on (the calling thread's)
 * @cfg: the configuration, copied; zero max_flows, mtu and idle timeouts
 *       take the defaults, the MTU is clamped to 1280..65520
 * @tx: transmits frames to the sandbox (see urs_net_tx_fn)
 * @tx_ctx: passed to @tx
 *
 * Allocates the engine and a list of the host's own addresses (for the
 * policy); tables, slabs and the shared buffer come on demand.
 *
 * Return: 0; -EINVAL (a NULL argument, too many resolvers or allow
 * entries); -ENOMEM; -EOPNOTSUPP when TCP sockets lack SO_PEEK_OFF (Linux
 * 6.9+), which retransmission needs; getrandom(2)'s or getifaddrs(3)'s
 * negative errno.
 */
int urs_net_init(struct urs_net **out, struct urs_loop *loop, const struct urs_net_cfg *cfg,
		 urs_net_tx_fn tx, void *tx_ctx);

/**
 * urs_net_fini() - close every flow and host socket
 * @n: the engine, or NULL
 *
 * Forward sockets are closed before this returns (their ports are free).
 * Completes asynchronously on the loop, where the memory is freed once the
 * last op's final completion has come back, but @n must not be used after
 * the call.
 */
void urs_net_fini(struct urs_net *n);

/**
 * urs_net_input() - one frame received from the tap
 * @n: the engine
 * @frame: the frame (with a virtio-net header first when cfg.vnet_hdr)
 * @len: its length
 *
 * The buffer is the caller's again when this returns: anything kept is
 * copied, data for host sockets is sent before returning or not
 * acknowledged. Malformed, fragmented, misaddressed or refused frames are
 * dropped and counted. May open a flow (a host socket) or answer with
 * frames through tx.
 */
void urs_net_input(struct urs_net *n, const void *frame, size_t len);

/**
 * urs_net_tx_ready() - the tap accepted writes again after an -EAGAIN
 * @n: the engine
 *
 * Every flow that was refused resumes sending.
 */
void urs_net_tx_ready(struct urs_net *n);

/**
 * urs_net_forward_add() - inbound port forward
 * @n: the engine
 * @proto: IPPROTO_TCP or IPPROTO_UDP
 * @host: the address to listen on (e.g. 127.0.0.1:8080), AF_INET or AF_INET6
 * @hostlen: its length
 * @sandbox_port: each accepted client is connected to this port of the
 *                sandbox
 *
 * Makes the socket (SO_REUSEADDR; IPv6: V6ONLY), binds it, listens (TCP)
 * and hands it to urs_net_forward_adopt().
 *
 * Return: 0; -EPROTONOSUPPORT (@proto); -EINVAL (@host, port 0); -ENOSPC
 * (URS_NET_MAX_FWD forwards already); the negative errno of socket, bind
 * or listen (e.g. -EADDRINUSE); or urs_net_forward_adopt()'s.
 */
int urs_net_forward_add(struct urs_net *n, int proto, const struct sockaddr *host,
			socklen_t hostlen, uint16_t sandbox_port);

/**
 * urs_net_forward_adopt() - inbound port forward on a socket the caller
 *                           already bound (TCP: and listened on)
 * @n: the engine
 * @proto: IPPROTO_TCP or IPPROTO_UDP, matching the socket's type
 * @fd: the socket, IPv4 or IPv6; the engine owns it from this call on (also
 *      on error) and makes it non-blocking
 * @sandbox_port: each client goes to this port of the sandbox
 *
 * So that "address in use" surfaces before the sandbox is reported ready.
 * Allocates the forward's record and an epoll fd watching @fd (what the
 * io_uring poll waits on, so that closing @fd frees the port at once).
 *
 * Return: 0; -EPROTONOSUPPORT; -EINVAL (bad @fd, port 0); -ENOSPC;
 * -EAFNOSUPPORT (not an inet socket); -EPROTOTYPE (the socket's type is not
 * @proto's); -ENOMEM; another negative errno from getsockname, fcntl or
 * epoll.
 */
int urs_net_forward_adopt(struct urs_net *n, int proto, int fd, uint16_t sandbox_port);

/* Offered each client a TCP forward accepts, before the engine carries it
 * through the tap: return true to take @cfd (the callee owns it from then
 * on), false to leave it to the engine. @family: the listening socket's.
 * Must not call urs_net_fini(). */
typedef bool (*urs_net_accept_fn)(void *ctx, int cfd, int family, uint16_t sandbox_port);

/**
 * urs_net_set_accept_hook() - offer TCP forward clients to @fn first
 * @n: the engine
 * @fn: the hook (see urs_net_accept_fn), or NULL for none
 * @ctx: passed to @fn
 */
void urs_net_set_accept_hook(struct urs_net *n, urs_net_accept_fn fn, void *ctx);

/**
 * urs_net_stats() - the engine's counters
 * @n: the engine
 *
 * Return: the live counters (written by the loop's thread), valid while the
 * engine lives.
 */
const struct urs_net_stats *urs_net_stats(const struct urs_net *n);

/**
 * urs_net_mem() - bytes the engine has allocated right now
 * @n: the engine
 *
 * Its state, tables, slabs, the shared 64 KiB buffer while its pages may be
 * resident: for the memory budget and its tests.
 *
 * Return: the bytes.
 */
size_t urs_net_mem(const struct urs_net *n);

#endif
