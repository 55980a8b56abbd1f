/*
 * net/ndp.c — IPv6 neighbor discovery on the tap: answer neighbor
 * solicitations for the gateway's address (and its link-local fe80::1) with
 * a neighbor advertisement carrying the gateway MAC, and learn the
 * sandbox's MAC from solicitations and advertisements. RFC 4861 checks: hop
 * limit 255, code 0, well-formed options.
 */
#include <string.h>

#include "net/csum.h"
#include "net/internal.h"

static bool is_gw(const struct urs_net *n, const uint8_t *t)
{
	static const uint8_t ll1[16] = {0xfe, 0x80, [15] = 1};
	return !memcmp(t, &n->cfg.gw6, 16) || !memcmp(t, ll1, 16);
}

void urs_net_ndp_input(struct urs_net *n, const struct urs_pkt *p)
{
	const uint8_t *m = p->l4;
	uint32_t len = p->l4_len;
	if (p->ttl != 255 || m[1] != 0) {
		n->st.drop_bad++;
		return;
	}
	uint8_t type = m[0];
	if (type != 135 && type != 136) /* RS/RA/redirect: not ours to answer */
		return;
	if (len < 24) {
		n->st.drop_bad++;
		return;
	}
	const uint8_t *target = m + 8;
	const uint8_t *lladdr = NULL;
	for (uint32_t o = 24; o + 8 <= len;) {
		uint32_t ol = (uint32_t) m[o + 1] * 8;
		if (!ol || o + ol > len) {
			n->st.drop_bad++;
			return;
		}
		if ((type == 135 && m[o] == 1) || (type == 136 && m[o] == 2))
			lladdr = m + o + 2;
		o += ol;
	}
	static const uint8_t unspec[16];
	bool from_unspec = !memcmp(&p->src, unspec, 16);
	if (!lladdr && !from_unspec)
		lladdr = p->eth + 6;
	if (lladdr && !(lladdr[0] & 1)) {
		const uint8_t *who = type == 136 ? target : (const uint8_t *) &p->src;
		if (!memcmp(who, &n->cfg.addr6, 16) ||
		    (who[0] == 0xfe && (who[1] & 0xc0) == 0x80)) {
			urs_neigh_update(&n->neigh, AF_INET6, who, lladdr);
			n->st.neigh_entries = n->neigh.n;
			if (!memcmp(who, &n->cfg.addr6, 16)) {
				memcpy(n->sb_mac, lladdr, 6);
				n->sb_mac_known = true;
			}
		}
	}
	if (type != 135 || !is_gw(n, target))
		return;
	/* neighbor advertisement: router, solicited, override + target lladdr */
	uint8_t na[32] = {136, 0};
	na[4] = from_unspec ? 0xa0 : 0xe0;
	memcpy(na + 8, target, 16);
	na[24] = 2;
	na[25] = 1;
	memcpy(na + 26, n->cfg.gw_mac, 6);
	const uint8_t *dmac = lladdr ? lladdr : p->eth + 6;
	/* to the soliciting address (all-nodes if it had none) */
	struct in6_addr dst = p->src;
	if (from_unspec) {
		static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
		memcpy(&dst, all_nodes, 16);
	}
	uint8_t ip[40] = {0x60};
	urs_put16(ip + 4, sizeof(na));
	ip[6] = IPPROTO_ICMPV6;
	ip[7] = 255;
	memcpy(ip + 8, target, 16);
	memcpy(ip + 24, &dst, 16);
	uint32_t sum = urs_csum_pseudo6((const struct in6_addr *) target, &dst, IPPROTO_ICMPV6,
					sizeof(na));
	uint16_t c = urs_csum_fold(urs_csum_partial(na, sizeof(na), sum));
	memcpy(na + 2, &c, 2);
	uint8_t pkt[72];
	memcpy(pkt, ip, 40);
	memcpy(pkt + 40, na, 32);
	n->st.ndp++;
	urs_net_tx_eth(n, dmac, URS_ETH_P_IPV6, pkt, sizeof(pkt));
}
