/*
 * tests/net/pkt.h — frame builders for the net tests, with their own naive
 * checksum (big-endian 16-bit words, RFC 1071 as written) so tests do not
 * check net/csum.c against itself.
 */
#ifndef URSA_TESTS_NET_PKT_H
#define URSA_TESTS_NET_PKT_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

static inline uint32_t naive_sum(const uint8_t *p, size_t len, uint32_t sum)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t) (p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t) p[len - 1] << 8;
	return sum;
}

static inline uint16_t naive_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t) ~sum;
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t) (v >> 8);
	p[1] = (uint8_t) v;
}
static inline void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, (uint16_t) (v >> 16));
	wr16(p + 2, (uint16_t) v);
}
static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t) (p[0] << 8 | p[1]);
}
static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t) rd16(p) << 16 | rd16(p + 2);
}

struct pb {
	int family;
	uint8_t src[16], dst[16];
	uint8_t smac[6], dmac[6];
	uint8_t proto;
	uint8_t ttl;
	bool bad_l4_csum, bad_ip_csum, no_udp_csum;
	uint16_t frag; /* IPv4 flags+offset field */
};

/* Build eth + IP + @l4 (whose checksum field at @csum_off is computed here)
 * into @out (optionally after a zeroed 10-byte virtio header). Returns the
 * length. */
static inline size_t pb_build(const struct pb *b, bool vnet, uint8_t *out, const uint8_t *l4,
			      size_t l4len, int csum_off)
{
	size_t o = vnet ? 10 : 0;
	memset(out, 0, o);
	memcpy(out + o, b->dmac, 6);
	memcpy(out + o + 6, b->smac, 6);
	wr16(out + o + 12, b->family == AF_INET ? 0x0800 : 0x86dd);
	uint8_t *ip = out + o + 14;
	size_t ipl = b->family == AF_INET ? 20 : 40;
	uint8_t *l = ip + ipl;
	memcpy(l, l4, l4len);
	uint32_t sum = 0;
	if (b->family == AF_INET) {
		memset(ip, 0, 20);
		ip[0] = 0x45;
		wr16(ip + 2, (uint16_t) (20 + l4len));
		wr16(ip + 6, b->frag);
		ip[8] = b->ttl ? b->ttl : 64;
		ip[9] = b->proto;
		memcpy(ip + 12, b->src, 4);
		memcpy(ip + 16, b->dst, 4);
		wr16(ip + 10, naive_fold(naive_sum(ip, 20, 0)) ^ (b->bad_ip_csum ? 1 : 0));
		if (b->proto != 1) {
			sum = naive_sum(ip + 12, 8, 0);
			sum += b->proto;
			sum += (uint32_t) l4len;
		}
	} else {
		memset(ip, 0, 40);
		ip[0] = 0x60;
		wr16(ip + 4, (uint16_t) l4len);
		ip[6] = b->proto;
		ip[7] = b->ttl ? b->ttl : 64;
		memcpy(ip + 8, b->src, 16);
		memcpy(ip + 24, b->dst, 16);
		sum = naive_sum(ip + 8, 32, 0);
		sum += b->proto;
		sum += (uint32_t) l4len;
	}
	if (csum_off >= 0) {
		wr16(l + csum_off, 0);
		uint16_t c = naive_fold(naive_sum(l, l4len, sum));
		if (b->proto == 17 && c == 0)
			c = 0xffff;
		if (b->no_udp_csum)
			c = 0;
		if (b->bad_l4_csum)
			c ^= 0x5a5a;
		wr16(l + csum_off, c);
	}
	return o + 14 + ipl + l4len;
}

/* A TCP header (+ options) and payload in @l4; returns its length. */
static inline size_t tcp_l4(uint8_t *l4, uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack,
			    uint8_t flags, uint16_t win, const uint8_t *opt, size_t optlen,
			    const void *data, size_t len)
{
	memset(l4, 0, 20);
	wr16(l4, sport);
	wr16(l4 + 2, dport);
	wr32(l4 + 4, seq);
	wr32(l4 + 8, ack);
	l4[12] = (uint8_t) (((20 + optlen) / 4) << 4);
	l4[13] = flags;
	wr16(l4 + 14, win);
	if (optlen)
		memcpy(l4 + 20, opt, optlen);
	if (len)
		memcpy(l4 + 20 + optlen, data, len);
	return 20 + optlen + len;
}

static inline size_t udp_l4(uint8_t *l4, uint16_t sport, uint16_t dport, const void *data,
			    size_t len)
{
	wr16(l4, sport);
	wr16(l4 + 2, dport);
	wr16(l4 + 4, (uint16_t) (8 + len));
	wr16(l4 + 6, 0);
	if (len)
		memcpy(l4 + 8, data, len);
	return 8 + len;
}

#endif
