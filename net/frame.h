/*
 * net/frame.h — parsing one frame from the sandbox (virtio-net header,
 * Ethernet, ARP/IPv4/IPv6, TCP/UDP/ICMP) into a small struct of offsets and
 * decoded fields, with every length checked against the buffer; plus the
 * wire-format constants the protocol files share.
 *
 * The parser never reads outside [frame, frame+len) and never trusts a
 * length field: IP total/payload length must fit the buffer (Ethernet
 * padding past it is ignored), L4 lengths must fit the IP payload, and L4
 * checksums are verified unless the virtio header says the sandbox's kernel
 * left them to offload (NEEDS_CSUM) or already checked them (DATA_VALID).
 */
#ifndef URSA_NET_FRAME_H
#define URSA_NET_FRAME_H

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/virtio_net.h>

/* older uapi headers (Debian 12) lack the UDP segmentation type */
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

#define URS_ETH_HLEN  14
#define URS_VNET_HLEN 10 /* struct virtio_net_hdr (no mergeable-buffers field) */

#define URS_ETH_P_IP   0x0800
#define URS_ETH_P_ARP  0x0806
#define URS_ETH_P_IPV6 0x86dd

#define URS_TCP_FIN 0x01
#define URS_TCP_SYN 0x02
#define URS_TCP_RST 0x04
#define URS_TCP_PSH 0x08
#define URS_TCP_ACK 0x10

/* Parse results (negative errno values, so callers can propagate them). */
#define URS_PKT_EBAD   (-EBADMSG)	  /* malformed: drop_bad */
#define URS_PKT_EFRAG  (-EMSGSIZE)	  /* IP fragment: drop_frag */
#define URS_PKT_ECSUM  (-EILSEQ)	  /* bad checksum: drop_csum */
#define URS_PKT_EPROTO (-EPROTONOSUPPORT) /* unsupported type: drop_other */

struct urs_pkt {
	const uint8_t *eth; /* Ethernet header (after the virtio header) */
	size_t eth_len;	    /* bytes from eth to the end of the buffer */
	uint16_t ethertype;
	/* virtio-net header (zero when absent) */
	uint8_t vflags, vgso;
	uint16_t gso_size;
	/* IP */
	uint8_t family; /* AF_INET / AF_INET6 (0 for ARP) */
	uint8_t proto;	/* IPPROTO_TCP / UDP / ICMP / ICMPV6 */
	uint8_t ttl;
	struct in6_addr src, dst; /* IPv4 in the first 4 bytes */
	const uint8_t *l3;
	const uint8_t *l4;
	uint32_t l4_len; /* L4 header + payload */
	/* L4 */
	uint16_t sport, dport; /* host order; ICMP: id in sport */
	const uint8_t *data;   /* L4 payload */
	uint32_t data_len;
	/* TCP */
	uint32_t seq, ack;
	uint16_t win;
	uint8_t tflags;
	uint8_t opt_len;
	const uint8_t *opt;
	/* ICMP */
	uint8_t icmp_type, icmp_code;
};

/**
 * urs_pkt_parse() - parse one frame from the sandbox
 * @p: filled (cleared first); its pointers point into @frame
 * @frame: the frame, starting with a virtio-net header if @vnet
 * @len: its length
 * @vnet: a struct virtio_net_hdr comes first
 *
 * Only reads [frame, frame + len). IPv4 header checksums are always
 * checked; L4 checksums unless the virtio header has NEEDS_CSUM or
 * DATA_VALID (or an IPv4 UDP checksum is 0). IPv6 hop-by-hop, routing and
 * destination options headers are skipped (up to eight). A GSO frame must
 * name the L4 protocol it carries and a segment size.
 *
 * Return: 0, or URS_PKT_EBAD (malformed), URS_PKT_EFRAG (IP fragment),
 * URS_PKT_ECSUM (bad checksum), URS_PKT_EPROTO (unsupported type). ARP
 * frames return 0 with family 0 and l3 set.
 */
int urs_pkt_parse(struct urs_pkt *p, const void *frame, size_t len, bool vnet);

/* TCP options the sandbox sent on a SYN. */
struct urs_tcp_opts {
	uint16_t mss; /* 0 if absent */
	int8_t ws;    /* -1 if absent, else 0..14 */
	bool sack_ok;
};

/**
 * urs_tcp_parse_opts() - read MSS, window scale and SACK-permitted
 * @opt: the TCP options (urs_pkt.opt)
 * @len: their length (urs_pkt.opt_len)
 * @o: filled; absent options as documented in struct urs_tcp_opts, a
 *     window scale over 14 clamped to 14
 *
 * Stops at the end-of-options kind or at the first malformed option (what
 * was read before it is kept).
 */
void urs_tcp_parse_opts(const uint8_t *opt, size_t len, struct urs_tcp_opts *o);

/**
 * urs_get16() - a big-endian 16-bit value, any alignment
 * @p: its first byte
 *
 * Return: the value in host order.
 */
static inline uint16_t urs_get16(const uint8_t *p)
{
	return (uint16_t) (p[0] << 8 | p[1]);
}

/**
 * urs_get32() - a big-endian 32-bit value, any alignment
 * @p: its first byte
 *
 * Return: the value in host order.
 */
static inline uint32_t urs_get32(const uint8_t *p)
{
	return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

/**
 * urs_put16() - store a 16-bit value big-endian, any alignment
 * @p: where
 * @v: the value, in host order
 */
static inline void urs_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t) (v >> 8);
	p[1] = (uint8_t) v;
}

/**
 * urs_put32() - store a 32-bit value big-endian, any alignment
 * @p: where
 * @v: the value, in host order
 */
static inline void urs_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) (v >> 24);
	p[1] = (uint8_t) (v >> 16);
	p[2] = (uint8_t) (v >> 8);
	p[3] = (uint8_t) v;
}

#endif
