/*
 * tests/net/test_frame.c — the Internet checksum against known vectors and
 * a naive reference (every length, split sums, pseudo-headers, RFC 1624
 * updates), and the frame parser: good IPv4/IPv6 TCP/UDP/ICMP frames,
 * Ethernet padding, every truncation of a good frame, bad lengths, bad IP
 * and L4 checksums, IPv4 and IPv6 fragments, IPv6 extension headers, the
 * virtio-net header (checksum offload flags, GSO types), and TCP options.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include <linux/virtio_net.h>

#include "net/csum.h"
#include "net/frame.h"
#include "pkt.h"

static uint16_t h16(uint16_t stored)
{
	return ntohs(stored);
}

static void test_csum_vectors(void **state)
{
	(void) state;
	/* RFC 1071 section 3 example */
	const uint8_t a[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	assert_int_equal(h16(urs_csum_fold(urs_csum_partial(a, sizeof(a), 0))), 0x220d);
	/* a real IPv4 header (checksum field zeroed): b861 */
	uint8_t ip[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
			  0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
	assert_int_equal(h16(urs_csum_fold(urs_csum_partial(ip, 20, 0))), 0xb861);
	ip[10] = 0xb8;
	ip[11] = 0x61;
	assert_int_equal(urs_csum_fold(urs_csum_partial(ip, 20, 0)), 0); /* verifies */
	/* empty */
	assert_int_equal(urs_csum_fold(urs_csum_partial(a, 0, 0)), 0xffff);
}

static void test_csum_reference(void **state)
{
	(void) state;
	uint8_t buf[2048];
	srand(7);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t) rand();
	for (size_t len = 0; len <= 300; len++) {
		uint16_t ref = naive_fold(naive_sum(buf + 3, len, 0));
		uint16_t got = h16(urs_csum_fold(urs_csum_partial(buf + 3, len, 0)));
		assert_int_equal(got, ref);
		/* split at every even point */
		for (size_t s = 0; s <= len; s += 2) {
			uint32_t sum = urs_csum_partial(buf + 3, s, 0);
			sum = urs_csum_partial(buf + 3 + s, len - s, sum);
			assert_int_equal(h16(urs_csum_fold(sum)), ref);
		}
	}
	/* all-ones data (carry heavy) over a 64 KiB frame */
	static uint8_t big[65536];
	memset(big, 0xff, sizeof(big));
	assert_int_equal(h16(urs_csum_fold(urs_csum_partial(big, sizeof(big), 0))),
			 naive_fold(naive_sum(big, sizeof(big), 0)));
}

static void test_csum_pseudo(void **state)
{
	(void) state;
	struct in_addr s, d;
	inet_pton(AF_INET, "10.0.2.2", &s);
	inet_pton(AF_INET, "93.184.216.34", &d);
	uint32_t ref = naive_sum((const uint8_t *) &s, 4, 0);
	ref = naive_sum((const uint8_t *) &d, 4, ref) + 6 + 1234;
	assert_int_equal(h16(urs_csum_fold(urs_csum_pseudo4(&s, &d, 6, 1234))), naive_fold(ref));
	struct in6_addr s6, d6;
	inet_pton(AF_INET6, "fd00::2", &s6);
	inet_pton(AF_INET6, "2001:db8::ffff:1", &d6);
	ref = naive_sum((const uint8_t *) &s6, 16, 0);
	ref = naive_sum((const uint8_t *) &d6, 16, ref) + 17 + 70000;
	assert_int_equal(h16(urs_csum_fold(urs_csum_pseudo6(&s6, &d6, 17, 70000))),
			 naive_fold(ref));
}

static void test_csum_update(void **state)
{
	(void) state;
	uint8_t buf[64];
	srand(3);
	for (int iter = 0; iter < 1000; iter++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t) rand();
		uint16_t c = urs_csum_fold(urs_csum_partial(buf, sizeof(buf), 0));
		size_t at = (size_t) (rand() % 32) * 2;
		uint16_t old, nw = (uint16_t) rand();
		memcpy(&old, buf + at, 2);
		memcpy(buf + at, &nw, 2);
		uint16_t full = urs_csum_fold(urs_csum_partial(buf, sizeof(buf), 0));
		uint16_t inc = urs_csum_update16(c, old, nw);
		/* 0x0000 and 0xffff are the same value in one's complement */
		if (full != inc)
			assert_true((full == 0 && inc == 0xffff) || (full == 0xffff && inc == 0));
	}
}

static struct pb b4(uint8_t proto)
{
	struct pb b = {.family = AF_INET, .proto = proto};
	inet_pton(AF_INET, "10.0.2.2", b.src);
	inet_pton(AF_INET, "1.2.3.4", b.dst);
	memcpy(b.dmac, "\x02urs\x61\x01", 6);
	memcpy(b.smac, "\x02\x00\x00\x00\x00\x07", 6);
	return b;
}

static struct pb b6(uint8_t proto)
{
	struct pb b = b4(proto);
	b.family = AF_INET6;
	inet_pton(AF_INET6, "fd00:7572:7361::2", b.src);
	inet_pton(AF_INET6, "2001:db8::1", b.dst);
	return b;
}

static uint8_t fr[70000], l4[70000];

static void test_parse_tcp4(void **state)
{
	(void) state;
	struct pb b = b4(6);
	const uint8_t opt[] = {2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 0, 0};
	size_t ll = tcp_l4(l4, 40000, 80, 1000, 2000, 0x18, 512, opt, sizeof(opt), "hello", 5);
	size_t len = pb_build(&b, false, fr, l4, ll, 16);
	struct urs_pkt p;
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), 0);
	assert_int_equal(p.family, AF_INET);
	assert_int_equal(p.proto, IPPROTO_TCP);
	assert_int_equal(p.sport, 40000);
	assert_int_equal(p.dport, 80);
	assert_int_equal(p.seq, 1000);
	assert_int_equal(p.ack, 2000);
	assert_int_equal(p.tflags, 0x18);
	assert_int_equal(p.win, 512);
	assert_int_equal(p.data_len, 5);
	assert_memory_equal(p.data, "hello", 5);
	assert_memory_equal(&p.dst, b.dst, 4);
	struct urs_tcp_opts o;
	urs_tcp_parse_opts(p.opt, p.opt_len, &o);
	assert_int_equal(o.mss, 1460);
	assert_int_equal(o.ws, 7);
	assert_true(o.sack_ok);
	/* every truncation fails cleanly */
	for (size_t l = 0; l < len; l++)
		assert_true(urs_pkt_parse(&p, fr, l, false) < 0);
	/* Ethernet padding after the IP packet is ignored */
	memset(fr + len, 0xee, 30);
	assert_int_equal(urs_pkt_parse(&p, fr, len + 30, false), 0);
	assert_int_equal(p.data_len, 5);
	/* bad TCP checksum */
	b.bad_l4_csum = true;
	len = pb_build(&b, false, fr, l4, ll, 16);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_ECSUM);
	/* ...accepted when the virtio header says the kernel left it to us */
	len = pb_build(&b, true, fr, l4, ll, 16);
	fr[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	assert_int_equal(urs_pkt_parse(&p, fr, len, true), 0);
	fr[0] = VIRTIO_NET_HDR_F_DATA_VALID;
	assert_int_equal(urs_pkt_parse(&p, fr, len, true), 0);
	fr[0] = 0;
	assert_int_equal(urs_pkt_parse(&p, fr, len, true), URS_PKT_ECSUM);
	/* bad IP header checksum */
	b.bad_l4_csum = false;
	b.bad_ip_csum = true;
	len = pb_build(&b, false, fr, l4, ll, 16);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_ECSUM);
}

static void test_parse_bad_lengths(void **state)
{
	(void) state;
	struct pb b = b4(6);
	size_t ll = tcp_l4(l4, 1, 2, 0, 0, 0x02, 1, NULL, 0, NULL, 0);
	size_t len = pb_build(&b, false, fr, l4, ll, 16);
	struct urs_pkt p;
	uint8_t *ip = fr + 14;
	/* tot_len past the buffer, below the header */
	wr16(ip + 2, 200);
	wr16(ip + 10, 0);
	wr16(ip + 10, naive_fold(naive_sum(ip, 20, 0)));
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	wr16(ip + 2, 19);
	wr16(ip + 10, 0);
	wr16(ip + 10, naive_fold(naive_sum(ip, 20, 0)));
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	/* ihl < 5 and ihl past the buffer */
	len = pb_build(&b, false, fr, l4, ll, 16);
	ip[0] = 0x44;
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	ip[0] = 0x4f;
	assert_int_equal(urs_pkt_parse(&p, fr, 14 + 40, false), URS_PKT_EBAD);
	/* wrong version */
	ip[0] = 0x65;
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	/* TCP data offset below 5 and past the segment */
	l4[12] = 0x40;
	len = pb_build(&b, false, fr, l4, ll, 16);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	l4[12] = 0xf0;
	len = pb_build(&b, false, fr, l4, ll, 16);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	/* UDP length larger than the IP payload, and below 8 */
	b = b4(17);
	ll = udp_l4(l4, 5, 53, "q", 1);
	wr16(l4 + 4, 100);
	len = pb_build(&b, false, fr, l4, ll, 6);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	wr16(l4 + 4, 7);
	len = pb_build(&b, false, fr, l4, ll, 6);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	/* unknown ethertype, VLAN */
	ll = udp_l4(l4, 5, 53, "q", 1);
	len = pb_build(&b, false, fr, l4, ll, 6);
	wr16(fr + 12, 0x8100);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EPROTO);
	/* unknown IP protocol */
	b = b4(47);
	len = pb_build(&b, false, fr, l4, 9, -1);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EPROTO);
	/* ICMPv6 inside IPv4 */
	b = b4(58);
	len = pb_build(&b, false, fr, l4, 9, -1);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EPROTO);
}

static void test_parse_udp_icmp(void **state)
{
	(void) state;
	struct pb b = b4(17);
	size_t ll = udp_l4(l4, 5353, 53, "query", 5);
	size_t len = pb_build(&b, false, fr, l4, ll, 6);
	struct urs_pkt p;
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), 0);
	assert_int_equal(p.sport, 5353);
	assert_int_equal(p.dport, 53);
	assert_int_equal(p.data_len, 5);
	/* IPv4 UDP without a checksum is fine */
	b.no_udp_csum = true;
	len = pb_build(&b, false, fr, l4, ll, 6);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), 0);
	b.no_udp_csum = false;
	b.bad_l4_csum = true;
	len = pb_build(&b, false, fr, l4, ll, 6);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_ECSUM);
	/* ICMP echo (no pseudo-header) */
	b = b4(1);
	uint8_t icmp[16] = {8, 0, 0, 0, 0x12, 0x34, 0, 1, 'p', 'i', 'n', 'g'};
	wr16(icmp + 2, naive_fold(naive_sum(icmp, 12, 0)));
	len = pb_build(&b, false, fr, icmp, 12, -1);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), 0);
	assert_int_equal(p.icmp_type, 8);
	assert_int_equal(p.sport, 0x1234);
	assert_int_equal(p.data_len, 4);
	icmp[2] ^= 1;
	len = pb_build(&b, false, fr, icmp, 12, -1);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_ECSUM);
	/* too short for ICMP */
	len = pb_build(&b, false, fr, icmp, 4, -1);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
}

static void test_parse_fragments(void **state)
{
	(void) state;
	struct pb b = b4(17);
	size_t ll = udp_l4(l4, 1, 2, "x", 1);
	struct urs_pkt p;
	b.frag = 0x2000; /* MF */
	size_t len = pb_build(&b, false, fr, l4, ll, 6);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EFRAG);
	b.frag = 0x0010; /* offset */
	len = pb_build(&b, false, fr, l4, ll, 6);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EFRAG);
	b.frag = 0x4000; /* DF only: fine */
	len = pb_build(&b, false, fr, l4, ll, 6);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), 0);
	/* IPv6 fragment header */
	b = b6(44);
	uint8_t fh[16] = {17, 0, 0, 1, 0, 0, 0, 1};
	len = pb_build(&b, false, fr, fh, 16, -1);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EFRAG);
}

static void test_parse_ipv6(void **state)
{
	(void) state;
	struct pb b = b6(6);
	size_t ll = tcp_l4(l4, 1000, 443, 5, 0, 0x02, 65535, NULL, 0, NULL, 0);
	size_t len = pb_build(&b, false, fr, l4, ll, 16);
	struct urs_pkt p;
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), 0);
	assert_int_equal(p.family, AF_INET6);
	assert_int_equal(p.dport, 443);
	for (size_t l = 0; l < len; l++)
		assert_true(urs_pkt_parse(&p, fr, l, false) < 0);
	b.bad_l4_csum = true;
	len = pb_build(&b, false, fr, l4, ll, 16);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_ECSUM);
	/* hop-by-hop then UDP: the checksum covers the UDP part only */
	b = b6(0);
	uint8_t e[32] = {17, 0, 1, 4, 0, 0, 0, 0};
	size_t ul = udp_l4(e + 8, 7, 9, "ab", 2);
	uint32_t sum = naive_sum(b.src, 16, 0);
	sum = naive_sum(b.dst, 16, sum) + 17 + (uint32_t) ul;
	wr16(e + 8 + 6, naive_fold(naive_sum(e + 8, ul, sum)));
	len = pb_build(&b, false, fr, e, 8 + ul, -1);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), 0);
	assert_int_equal(p.proto, IPPROTO_UDP);
	assert_int_equal(p.dport, 9);
	/* an extension header longer than the payload */
	e[1] = 9;
	len = pb_build(&b, false, fr, e, 8 + ul, -1);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	/* payload length past the buffer */
	len = pb_build(&b, false, fr, e, 8 + ul, -1);
	wr16(fr + 14 + 4, 1000);
	assert_int_equal(urs_pkt_parse(&p, fr, len, false), URS_PKT_EBAD);
	/* a chain of 9 hop-by-hop headers is refused */
	uint8_t chain[80] = {0};
	for (int i = 0; i < 9; i++)
		chain[i * 8] = i < 8 ? 0 : 17;
	len = pb_build(&b, false, fr, chain, 80, -1);
	assert_true(urs_pkt_parse(&p, fr, len, false) < 0);
}

static void test_parse_vnet_gso(void **state)
{
	(void) state;
	struct pb b = b4(6);
	size_t ll = tcp_l4(l4, 1, 2, 0, 0, 0x10, 1, NULL, 0, fr, 3000);
	static uint8_t f2[8000];
	size_t len = pb_build(&b, true, f2, l4, ll, 16);
	struct virtio_net_hdr vh = {.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
				    .gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
				    .gso_size = 1448};
	memcpy(f2, &vh, sizeof(vh));
	struct urs_pkt p;
	assert_int_equal(urs_pkt_parse(&p, f2, len, true), 0);
	assert_int_equal(p.data_len, 3000);
	assert_int_equal(p.vgso, VIRTIO_NET_HDR_GSO_TCPV4);
	/* GSO type that does not match the L4 protocol */
	vh.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
	memcpy(f2, &vh, sizeof(vh));
	assert_int_equal(urs_pkt_parse(&p, f2, len, true), URS_PKT_EBAD);
	/* GSO with a zero segment size */
	vh.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
	vh.gso_size = 0;
	memcpy(f2, &vh, sizeof(vh));
	assert_int_equal(urs_pkt_parse(&p, f2, len, true), URS_PKT_EBAD);
	/* unknown GSO type */
	vh.gso_type = 0x42;
	memcpy(f2, &vh, sizeof(vh));
	assert_int_equal(urs_pkt_parse(&p, f2, len, true), URS_PKT_EPROTO);
	/* shorter than the virtio header */
	assert_int_equal(urs_pkt_parse(&p, f2, 9, true), URS_PKT_EBAD);
}

static void test_parse_arp_and_opts(void **state)
{
	(void) state;
	uint8_t a[42] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 7, 0x08, 0x06};
	struct urs_pkt p;
	assert_int_equal(urs_pkt_parse(&p, a, sizeof(a), false), 0);
	assert_int_equal(p.ethertype, URS_ETH_P_ARP);
	assert_int_equal(p.family, 0);
	assert_int_equal(p.l4_len, 28);
	struct urs_tcp_opts o;
	const uint8_t bad1[] = {2, 0, 5, 0xb4}; /* zero length: stop */
	urs_tcp_parse_opts(bad1, sizeof(bad1), &o);
	assert_int_equal(o.mss, 0);
	const uint8_t bad2[] = {1, 1, 2, 4, 5}; /* MSS cut short */
	urs_tcp_parse_opts(bad2, sizeof(bad2), &o);
	assert_int_equal(o.mss, 0);
	const uint8_t ws[] = {3, 3, 30, 0}; /* clamped to 14 */
	urs_tcp_parse_opts(ws, sizeof(ws), &o);
	assert_int_equal(o.ws, 14);
	const uint8_t tail[] = {1, 2}; /* kind with no length byte */
	urs_tcp_parse_opts(tail, sizeof(tail), &o);
	assert_int_equal(o.ws, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csum_vectors),	   cmocka_unit_test(test_csum_reference),
		cmocka_unit_test(test_csum_pseudo),	   cmocka_unit_test(test_csum_update),
		cmocka_unit_test(test_parse_tcp4),	   cmocka_unit_test(test_parse_bad_lengths),
		cmocka_unit_test(test_parse_udp_icmp),	   cmocka_unit_test(test_parse_fragments),
		cmocka_unit_test(test_parse_ipv6),	   cmocka_unit_test(test_parse_vnet_gso),
		cmocka_unit_test(test_parse_arp_and_opts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
