/*
 * net/flow.h — the flow table: every TCP connection, UDP association and
 * ICMP echo id the engine translates, found by its sandbox-side tuple
 * (protocol, family, sandbox port, remote address and port; the sandbox's
 * address is implied by the configuration).
 *
 * Flow records come from slabs (runtime/pool) that are allocated only when
 * the first flow appears and released when the table has been empty for a
 * while (urs_flowtab_trim). The hash index starts absent, doubles when the
 * load passes one, and is dropped with the slabs. The number of live
 * records is bounded by the configured limit, so a sandbox opening flows in
 * a loop costs at most max_flows records and sockets.
 */
#ifndef URSA_NET_FLOW_H
#define URSA_NET_FLOW_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/pool.h"

struct urs_flow_key {
	struct in6_addr
		raddr; /* remote address as the sandbox sees it; IPv4 in the first 4 bytes */
	uint16_t lport, rport; /* sandbox port, remote port (ICMP: echo id, 0) */
	uint8_t proto, family;
	uint8_t kind; /* 0: sandbox-side tuple; others: secondary keys (e.g. forward clients) */
	uint8_t pad;
};

struct urs_flow_node {
	struct urs_flow_node *next;
	struct urs_flow_key key;
	uint32_t hash;
	bool linked;
};

struct urs_flowtab {
	struct urs_flow_node **b;
	uint32_t nb, n; /* buckets, linked nodes */
	struct urs_pool pool;
	uint32_t obj_size;
	uint32_t max;  /* records outstanding at once */
	uint32_t objs; /* records outstanding now */
};

/**
 * urs_flowtab_init() - an empty table; allocates nothing
 * @t: the table
 * @obj_size: bytes per flow record (the record embeds its urs_flow_node)
 * @max: records outstanding at once; urs_flowtab_alloc() refuses more
 */
void urs_flowtab_init(struct urs_flowtab *t, uint32_t obj_size, uint32_t max);

/**
 * urs_flowtab_fini() - free the slabs and the index
 * @t: the table; records still out are gone with their slabs
 */
void urs_flowtab_fini(struct urs_flowtab *t);

/**
 * urs_flowtab_alloc() - a flow record
 * @t: the table
 *
 * From the table's pool: a slab (one malloc) is added only when the pool
 * runs dry, never one allocation per flow.
 *
 * Return: a zeroed record of obj_size bytes, or NULL when max records are
 * out or memory is short.
 */
void *urs_flowtab_alloc(struct urs_flowtab *t);

/**
 * urs_flowtab_free() - give a record back to the pool
 * @t: the table
 * @obj: a record from urs_flowtab_alloc(), its nodes unlinked
 */
void urs_flowtab_free(struct urs_flowtab *t, void *obj);

/**
 * urs_flowtab_insert() - link @node under its key
 * @t: the table
 * @node: an unlinked node, key filled by the caller
 *
 * The index is created (16 buckets) with the first node and doubles when
 * the load passes one; a failed doubling keeps the old index.
 *
 * Return: 0; -EEXIST if a node with that key is linked; -ENOMEM if there is
 * no index and it could not be made.
 */
int urs_flowtab_insert(struct urs_flowtab *t, struct urs_flow_node *node);

/**
 * urs_flowtab_find() - the node linked under key @k
 * @t: the table
 * @k: the key (padding zeroed: keys compare as bytes)
 *
 * Return: the node, or NULL.
 */
struct urs_flow_node *urs_flowtab_find(const struct urs_flowtab *t, const struct urs_flow_key *k);

/**
 * urs_flowtab_remove() - unlink @node
 * @t: the table
 * @node: a node; nothing happens if it is not linked
 */
void urs_flowtab_remove(struct urs_flowtab *t, struct urs_flow_node *node);

/**
 * urs_flowtab_trim() - release the slabs and the index if no record is
 *                      outstanding
 * @t: the table
 */
void urs_flowtab_trim(struct urs_flowtab *t);

/**
 * urs_flowtab_mem() - bytes allocated by the table (slabs + index)
 * @t: the table
 *
 * Return: the bytes.
 */
size_t urs_flowtab_mem(const struct urs_flowtab *t);

#endif
