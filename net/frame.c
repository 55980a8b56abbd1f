/*
 * net/frame.c — the frame parser (see frame.h). Everything an attacker in
 * the sandbox controls passes through here first, so every read is bounded
 * by an explicit length computed from the buffer, never from a header.
 */
#include "net/frame.h"

#include <errno.h>
#include <linux/virtio_net.h>
#include <string.h>

#include "net/csum.h"

static int parse_l4(struct urs_pkt *p, bool gso)
{
	const uint8_t *l4 = p->l4;
	uint32_t len = p->l4_len;
	bool csum_ok = p->vflags & (VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID);
	uint16_t stored = 1;
	switch (p->proto) {
	case IPPROTO_TCP: {
		if (len < 20)
			return URS_PKT_EBAD;
		uint32_t doff = (uint32_t) (l4[12] >> 4) * 4;
		if (doff < 20 || doff > len)
			return URS_PKT_EBAD;
		p->sport = urs_get16(l4);
		p->dport = urs_get16(l4 + 2);
		p->seq = urs_get32(l4 + 4);
		p->ack = urs_get32(l4 + 8);
		p->tflags = l4[13];
		p->win = urs_get16(l4 + 14);
		p->opt = l4 + 20;
		p->opt_len = (uint8_t) (doff - 20);
		p->data = l4 + doff;
		p->data_len = len - doff;
		break;
	}
	case IPPROTO_UDP: {
		if (len < 8)
			return URS_PKT_EBAD;
		uint32_t ulen = urs_get16(l4 + 4);
		if (!gso) {
			if (ulen < 8 || ulen > len)
				return URS_PKT_EBAD;
			len = ulen;
			p->l4_len = len;
		}
		p->sport = urs_get16(l4);
		p->dport = urs_get16(l4 + 2);
		p->data = l4 + 8;
		p->data_len = len - 8;
		stored = urs_get16(l4 + 6);
		if (p->family == AF_INET && stored == 0)
			csum_ok = true; /* no checksum */
		break;
	}
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if ((p->proto == IPPROTO_ICMP) != (p->family == AF_INET))
			return URS_PKT_EPROTO;
		if (len < 8)
			return URS_PKT_EBAD;
		p->icmp_type = l4[0];
		p->icmp_code = l4[1];
		p->sport = urs_get16(l4 + 4); /* echo id */
		p->data = l4 + 8;
		p->data_len = len - 8;
		break;
	default:
		return URS_PKT_EPROTO;
	}
	if (csum_ok)
		return 0;
	uint32_t sum;
	if (p->proto == IPPROTO_ICMP)
		sum = 0;
	else if (p->family == AF_INET)
		sum = urs_csum_pseudo4((const struct in_addr *) &p->src,
				       (const struct in_addr *) &p->dst, p->proto, len);
	else
		sum = urs_csum_pseudo6(&p->src, &p->dst, p->proto, len);
	sum = urs_csum_partial(l4, len, sum);
	if (urs_csum_fold(sum) != 0)
		return URS_PKT_ECSUM;
	return 0;
}

static int parse_ip4(struct urs_pkt *p, const uint8_t *ip, size_t avail, bool gso)
{
	if (avail < 20 || (ip[0] >> 4) != 4)
		return URS_PKT_EBAD;
	uint32_t ihl = (uint32_t) (ip[0] & 0xf) * 4;
	uint32_t tot = urs_get16(ip + 2);
	if (ihl < 20 || ihl > avail)
		return URS_PKT_EBAD;
	if (gso && (tot == 0 || tot > avail))
		tot = (uint32_t) (avail > 65535 ? 65535 : avail);
	if (tot < ihl || tot > avail)
		return URS_PKT_EBAD;
	if (urs_csum_fold(urs_csum_partial(ip, ihl, 0)) != 0)
		return URS_PKT_ECSUM;
	uint16_t frag = urs_get16(ip + 6);
	if (frag & 0x3fff) /* MF or an offset */
		return URS_PKT_EFRAG;
	p->family = AF_INET;
	p->ttl = ip[8];
	p->proto = ip[9];
	memset(&p->src, 0, sizeof(p->src));
	memset(&p->dst, 0, sizeof(p->dst));
	memcpy(&p->src, ip + 12, 4);
	memcpy(&p->dst, ip + 16, 4);
	p->l3 = ip;
	p->l4 = ip + ihl;
	p->l4_len = tot - ihl;
	return parse_l4(p, gso);
}

static int parse_ip6(struct urs_pkt *p, const uint8_t *ip, size_t avail, bool gso)
{
	if (avail < 40 || (ip[0] >> 4) != 6)
		return URS_PKT_EBAD;
	uint32_t plen = urs_get16(ip + 4);
	if (gso && (plen == 0 || plen > avail - 40))
		plen = (uint32_t) (avail - 40 > 65535 ? 65535 : avail - 40);
	if (plen > avail - 40)
		return URS_PKT_EBAD;
	p->family = AF_INET6;
	p->ttl = ip[7];
	memcpy(&p->src, ip + 8, 16);
	memcpy(&p->dst, ip + 24, 16);
	p->l3 = ip;
	uint8_t nh = ip[6];
	const uint8_t *l4 = ip + 40;
	uint32_t left = plen;
	/* extension headers we can skip; a fragment header is a fragment */
	for (int i = 0; i < 8; i++) {
		if (nh == 44)
			return URS_PKT_EFRAG;
		if (nh != 0 && nh != 43 && nh != 60)
			break;
		if (left < 8)
			return URS_PKT_EBAD;
		uint32_t hl = ((uint32_t) l4[1] + 1) * 8;
		if (hl > left)
			return URS_PKT_EBAD;
		nh = l4[0];
		l4 += hl;
		left -= hl;
	}
	if (nh == 0 || nh == 43 || nh == 60 || nh == 44)
		return URS_PKT_EBAD; /* too many extension headers */
	p->proto = nh;
	p->l4 = l4;
	p->l4_len = left;
	return parse_l4(p, gso);
}

int urs_pkt_parse(struct urs_pkt *p, const void *frame, size_t len, bool vnet)
{
	const uint8_t *b = frame;
	memset(p, 0, sizeof(*p));
	if (vnet) {
		if (len < URS_VNET_HLEN)
			return URS_PKT_EBAD;
		struct virtio_net_hdr vh;
		memcpy(&vh, b, sizeof(vh));
		p->vflags = vh.flags;
		p->vgso = vh.gso_type & (uint8_t) ~VIRTIO_NET_HDR_GSO_ECN;
		p->gso_size = vh.gso_size;
		if (p->vgso != VIRTIO_NET_HDR_GSO_NONE && p->vgso != VIRTIO_NET_HDR_GSO_TCPV4 &&
		    p->vgso != VIRTIO_NET_HDR_GSO_TCPV6 && p->vgso != VIRTIO_NET_HDR_GSO_UDP_L4)
			return URS_PKT_EPROTO;
		b += URS_VNET_HLEN;
		len -= URS_VNET_HLEN;
	}
	if (len < URS_ETH_HLEN)
		return URS_PKT_EBAD;
	p->eth = b;
	p->eth_len = len;
	p->ethertype = urs_get16(b + 12);
	const uint8_t *l3 = b + URS_ETH_HLEN;
	size_t avail = len - URS_ETH_HLEN;
	bool gso = p->vgso != VIRTIO_NET_HDR_GSO_NONE;
	int r;
	switch (p->ethertype) {
	case URS_ETH_P_ARP:
		if (gso)
			return URS_PKT_EBAD;
		p->l3 = l3;
		p->l4_len = (uint32_t) avail;
		return 0;
	case URS_ETH_P_IP:
		r = parse_ip4(p, l3, avail, gso);
		break;
	case URS_ETH_P_IPV6:
		r = parse_ip6(p, l3, avail, gso);
		break;
	default:
		return URS_PKT_EPROTO;
	}
	if (r == 0 && gso) {
		/* GSO only for the L4 type it names, with a usable segment size */
		bool tcp =
			p->vgso == VIRTIO_NET_HDR_GSO_TCPV4 || p->vgso == VIRTIO_NET_HDR_GSO_TCPV6;
		if ((tcp && p->proto != IPPROTO_TCP) ||
		    (p->vgso == VIRTIO_NET_HDR_GSO_UDP_L4 && p->proto != IPPROTO_UDP) ||
		    p->gso_size == 0)
			return URS_PKT_EBAD;
	}
	return r;
}

void urs_tcp_parse_opts(const uint8_t *opt, size_t len, struct urs_tcp_opts *o)
{
	o->mss = 0;
	o->ws = -1;
	o->sack_ok = false;
	size_t i = 0;
	while (i < len) {
		uint8_t kind = opt[i];
		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= len)
			break;
		uint8_t ol = opt[i + 1];
		if (ol < 2 || i + ol > len)
			break;
		if (kind == 2 && ol == 4)
			o->mss = urs_get16(opt + i + 2);
		else if (kind == 3 && ol == 3)
			o->ws = (int8_t) (opt[i + 2] > 14 ? 14 : opt[i + 2]);
		else if (kind == 4 && ol == 2)
			o->sack_ok = true;
		i += ol;
	}
}
