/*
 * net/snapshot.h — what a checkpoint keeps of the engine, as plain structs:
 * the neighbor cache (exported and refilled), a summary of the flow table
 * (exported only: the host sockets behind flows do not survive a restore)
 * and the counters (added back, so they continue across a restore).
 *
 * No format here: the supervisor's checkpointer (actors/checkpointer.c)
 * maps these structs onto its schema. Everything runs on the engine's loop.
 */
#ifndef URSA_NET_SNAPSHOT_H
#define URSA_NET_SNAPSHOT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/net.h"

struct urs_net_neigh_info {
	uint8_t family;	      /* AF_INET or AF_INET6 */
	struct in6_addr addr; /* IPv4 in the first 4 bytes */
	uint8_t mac[6];
};

struct urs_net_flow_info {
	uint8_t proto, family; /* IPPROTO_TCP/UDP/ICMP(V6), AF_INET/6 */
	uint16_t lport, rport; /* sandbox port, remote port (ICMP: echo id, 0) */
	struct in6_addr raddr; /* as the sandbox sees it */
	bool inbound;	       /* from a port forward */
	bool established;      /* TCP: handshake with the sandbox complete */
	uint32_t idle_ms;      /* since its last traffic */
};

/* 0 continues, anything else stops the walk and is returned. */
typedef int (*urs_net_neigh_fn)(void *ctx, const struct urs_net_neigh_info *e);
typedef int (*urs_net_flow_fn)(void *ctx, const struct urs_net_flow_info *f);

/**
 * urs_net_neigh_each() - walk the neighbor cache
 * @n: the engine
 * @fn: called with each neighbor (a copy, valid for the call)
 * @ctx: passed to @fn
 *
 * From the least to the most recently used, so that adding them back in
 * this order restores the LRU order. @fn must not change the cache.
 *
 * Return: 0, or the first non-zero value @fn returned.
 */
int urs_net_neigh_each(const struct urs_net *n, urs_net_neigh_fn fn, void *ctx);

/**
 * urs_net_neigh_add() - insert or refresh one neighbor (as if learned now)
 * @n: the engine
 * @e: the neighbor
 *
 * Return: 0; -EINVAL for a family other than AF_INET or AF_INET6; -ENOMEM.
 */
int urs_net_neigh_add(struct urs_net *n, const struct urs_net_neigh_info *e);

/**
 * urs_net_flow_each() - walk every live flow (dying ones skipped)
 * @n: the engine
 * @fn: called with each flow's summary (a copy, valid for the call)
 * @ctx: passed to @fn
 *
 * In no particular order; @fn must not open or close flows.
 *
 * Return: 0, or the first non-zero value @fn returned.
 */
int urs_net_flow_each(const struct urs_net *n, urs_net_flow_fn fn, void *ctx);

/**
 * urs_net_stats_add() - add the counters of @base to the engine's
 * @n: the engine
 * @base: a checkpoint's counters
 *
 * Not the gauges (flows, neighbors): a restored engine continues from a
 * checkpoint's values.
 */
void urs_net_stats_add(struct urs_net *n, const struct urs_net_stats *base);

#endif
