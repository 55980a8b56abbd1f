/*
 * net/output.c — building frames toward the sandbox: virtio-net header
 * (checksum and segmentation offload when the tap has one), Ethernet, IPv4
 * or IPv6 header, and the L4 checksum; the payload is passed by reference
 * in a second iovec, never copied.
 */
#include <errno.h>
#include <linux/virtio_net.h>
#include <string.h>

#include "net/csum.h"
#include "net/internal.h"

static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static const uint8_t *sandbox_mac(struct urs_net *n, uint8_t family)
{
	const void *a =
		family == AF_INET ? (const void *) &n->cfg.addr4 : (const void *) &n->cfg.addr6;
	const uint8_t *m = urs_neigh_lookup(&n->neigh, family, a);
	if (m)
		return m;
	return n->sb_mac_known ? n->sb_mac : bcast;
}

static int tx(struct urs_net *n, const struct iovec *iov, int cnt)
{
	if (n->closing)
		return -ESHUTDOWN;
	size_t len = 0;
	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	int r = n->tx(n->tx_ctx, iov, cnt);
	if (r == 0) {
		n->st.tx_frames++;
		n->st.tx_bytes += len;
	} else if (r == -EAGAIN) {
		n->st.tx_again++;
	}
	return r;
}

int urs_net_tx_eth(struct urs_net *n, const uint8_t dst[6], uint16_t ethertype, const void *l3,
		   size_t len)
{
	uint8_t h[URS_VNET_HLEN + URS_ETH_HLEN] = {0};
	size_t o = n->cfg.vnet_hdr ? URS_VNET_HLEN : 0;
	memcpy(h + o, dst, 6);
	memcpy(h + o + 6, n->cfg.gw_mac, 6);
	urs_put16(h + o + 12, ethertype);
	struct iovec iov[2] = {{h, o + URS_ETH_HLEN}, {(void *) l3, len}};
	return tx(n, iov, 2);
}

int urs_net_tx_ip(struct urs_net *n, uint8_t family, const struct in6_addr *src, uint8_t proto,
		  uint8_t *l4h, size_t l4hlen, const void *data, size_t dlen, uint16_t gso)
{
	uint8_t h[URS_VNET_HLEN + URS_ETH_HLEN + 40] = {0};
	size_t o = n->cfg.vnet_hdr ? URS_VNET_HLEN : 0;
	uint8_t *eth = h + o, *ip = eth + URS_ETH_HLEN;
	memcpy(eth, sandbox_mac(n, family), 6);
	memcpy(eth + 6, n->cfg.gw_mac, 6);
	size_t iplen;
	uint32_t l4len = (uint32_t) (l4hlen + dlen);
	uint32_t sum;
	if (family == AF_INET) {
		if (l4len + 20 > 65535)
			return -EMSGSIZE;
		urs_put16(eth + 12, URS_ETH_P_IP);
		iplen = 20;
		ip[0] = 0x45;
		urs_put16(ip + 2, (uint16_t) (20 + l4len));
		urs_put16(ip + 4, n->ip_id++);
		urs_put16(ip + 6, 0x4000); /* DF */
		ip[8] = 64;
		ip[9] = proto;
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, &n->cfg.addr4, 4);
		urs_put16(ip + 10, 0);
		uint16_t c = urs_csum_fold(urs_csum_partial(ip, 20, 0));
		memcpy(ip + 10, &c, 2);
		sum = proto == IPPROTO_ICMP ? 0
					    : urs_csum_pseudo4((const struct in_addr *) src,
							       &n->cfg.addr4, proto, l4len);
	} else {
		if (l4len > 65535)
			return -EMSGSIZE;
		urs_put16(eth + 12, URS_ETH_P_IPV6);
		iplen = 40;
		ip[0] = 0x60;
		urs_put16(ip + 4, (uint16_t) l4len);
		ip[6] = proto;
		ip[7] = 64;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, &n->cfg.addr6, 16);
		sum = urs_csum_pseudo6(src, &n->cfg.addr6, proto, l4len);
	}
	size_t csum_off = proto == IPPROTO_TCP ? 16 : proto == IPPROTO_UDP ? 6 : 2;
	memset(l4h + csum_off, 0, 2);
	bool offload = n->cfg.vnet_hdr && (proto == IPPROTO_TCP || proto == IPPROTO_UDP);
	if (offload) {
		struct virtio_net_hdr vh = {0};
		vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		vh.csum_start = (uint16_t) (URS_ETH_HLEN + iplen);
		vh.csum_offset = (uint16_t) csum_off;
		if (gso && proto == IPPROTO_TCP && dlen > gso) {
			vh.gso_type = family == AF_INET ? VIRTIO_NET_HDR_GSO_TCPV4
							: VIRTIO_NET_HDR_GSO_TCPV6;
			vh.gso_size = gso;
			vh.hdr_len = (uint16_t) (URS_ETH_HLEN + iplen + l4hlen);
		}
		memcpy(h, &vh, sizeof(vh));
		/* the device adds the payload: store the pseudo-header sum */
		uint16_t c = urs_csum_fold_raw(sum);
		memcpy(l4h + csum_off, &c, 2);
	} else {
		sum = urs_csum_partial(l4h, l4hlen, sum);
		sum = urs_csum_partial(data, dlen, sum);
		uint16_t c = urs_csum_fold(sum);
		if (proto == IPPROTO_UDP && c == 0)
			c = 0xffff;
		memcpy(l4h + csum_off, &c, 2);
	}
	struct iovec iov[3] = {{h, o + URS_ETH_HLEN + iplen}, {l4h, l4hlen}, {(void *) data, dlen}};
	return tx(n, iov, dlen ? 3 : 2);
}

void urs_net_icmp_unreach(struct urs_net *n, const struct urs_pkt *p, uint8_t type4, uint8_t code4,
			  uint8_t type6, uint8_t code6)
{
	uint8_t hdr[8] = {0};
	/* quote the offending packet: IPv4 as much as 548 bytes fit, IPv6 1232 */
	size_t max = p->family == AF_INET ? 548 : 1232;
	size_t avail = (size_t) (p->eth + p->eth_len - p->l3);
	size_t q = avail < max ? avail : max;
	if (p->family == AF_INET) {
		hdr[0] = type4;
		hdr[1] = code4;
	} else {
		hdr[0] = type6;
		hdr[1] = code6;
	}
	urs_net_tx_ip(n, p->family, &p->dst, p->family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6,
		      hdr, 8, p->l3, q, 0);
}
