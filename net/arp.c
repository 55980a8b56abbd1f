/*
 * net/arp.c — ARP on the tap: answer requests for the gateway's address with
 * the gateway MAC, and learn the sandbox's MAC from any request or reply
 * whose sender is the sandbox's address. Anything else is ignored.
 */
#include <string.h>

#include "net/internal.h"

void urs_net_arp_input(struct urs_net *n, const struct urs_pkt *p)
{
	const uint8_t *a = p->l3;
	if (p->l4_len < 28) {
		n->st.drop_bad++;
		return;
	}
	/* Ethernet/IPv4 only */
	if (urs_get16(a) != 1 || urs_get16(a + 2) != URS_ETH_P_IP || a[4] != 6 || a[5] != 4) {
		n->st.drop_other++;
		return;
	}
	uint16_t op = urs_get16(a + 6);
	const uint8_t *sha = a + 8, *spa = a + 14, *tpa = a + 24;
	if (!memcmp(spa, &n->cfg.addr4, 4) && !(sha[0] & 1)) {
		urs_neigh_update(&n->neigh, AF_INET, spa, sha);
		memcpy(n->sb_mac, sha, 6);
		n->sb_mac_known = true;
		n->st.neigh_entries = n->neigh.n;
	}
	if (op != 1 || memcmp(tpa, &n->cfg.gw4, 4))
		return;
	uint8_t r[28];
	urs_put16(r, 1);
	urs_put16(r + 2, URS_ETH_P_IP);
	r[4] = 6;
	r[5] = 4;
	urs_put16(r + 6, 2);
	memcpy(r + 8, n->cfg.gw_mac, 6);
	memcpy(r + 14, &n->cfg.gw4, 4);
	memcpy(r + 18, sha, 6);
	memcpy(r + 24, spa, 4);
	n->st.arp++;
	urs_net_tx_eth(n, sha[0] & 1 ? p->eth + 6 : sha, URS_ETH_P_ARP, r, sizeof(r));
}
