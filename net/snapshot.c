/*
 * net/snapshot.c — export and import of the engine's tables and counters
 * for a checkpoint (see snapshot.h). Kept apart from the engine so that
 * net/ has one small, format-free surface for the checkpointer.
 */
#include "net/snapshot.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "net/internal.h"

int urs_net_neigh_each(const struct urs_net *n, urs_net_neigh_fn fn, void *ctx)
{
	const struct urs_neigh *t = &n->neigh;
	/* from the tail (least recent) toward the head */
	for (uint16_t i = t->tail; i != 0xffffu && t->ents; i = t->ents[i].prev) {
		const struct urs_neigh_ent *e = &t->ents[i];
		struct urs_net_neigh_info x = {.family = e->family, .addr = e->addr};
		memcpy(x.mac, e->mac, 6);
		int r = fn(ctx, &x);
		if (r)
			return r;
	}
	return 0;
}

int urs_net_neigh_add(struct urs_net *n, const struct urs_net_neigh_info *e)
{
	if (e->family != AF_INET && e->family != AF_INET6)
		return -EINVAL;
	int r = urs_neigh_update(&n->neigh, e->family, &e->addr, e->mac);
	n->st.neigh_entries = n->neigh.n;
	return r;
}

int urs_net_flow_each(const struct urs_net *n, urs_net_flow_fn fn, void *ctx)
{
	uint32_t now = urs_net_now_ms(n);
	for (const struct urs_flow *f = n->all; f; f = f->all_next) {
		if (f->dying)
			continue;
		const struct urs_flow_key *k = &f->node.key;
		struct urs_net_flow_info x = {
			.proto = f->proto,
			.family = f->family,
			.lport = k->lport,
			.rport = k->rport,
			.raddr = k->raddr,
			.inbound = f->fwd != 0,
			.established = (f->tfl & T_ESTAB) != 0,
			.idle_ms = now - f->last_ms,
		};
		int r = fn(ctx, &x);
		if (r)
			return r;
	}
	return 0;
}

void urs_net_stats_add(struct urs_net *n, const struct urs_net_stats *b)
{
	struct urs_net_stats *s = &n->st;
	s->rx_frames += b->rx_frames;
	s->rx_bytes += b->rx_bytes;
	s->tx_frames += b->tx_frames;
	s->tx_bytes += b->tx_bytes;
	s->tx_again += b->tx_again;
	s->drop_bad += b->drop_bad;
	s->drop_frag += b->drop_frag;
	s->drop_csum += b->drop_csum;
	s->drop_policy += b->drop_policy;
	s->drop_limit += b->drop_limit;
	s->drop_other += b->drop_other;
	s->arp += b->arp;
	s->ndp += b->ndp;
	s->icmp_echo += b->icmp_echo;
	s->tcp_open += b->tcp_open;
	s->tcp_refused += b->tcp_refused;
	s->tcp_reset += b->tcp_reset;
	s->udp_open += b->udp_open;
	s->dns_queries += b->dns_queries;
}
