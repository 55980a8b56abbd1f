/*
 * net/neigh.h — the neighbor cache: IP address -> MAC for hosts on the tap
 * (in practice the sandbox's own addresses), learned from ARP, NDP and the
 * source of every accepted frame.
 *
 * It starts empty with no table at all, grows by doubling on demand, and is
 * bounded (512 dynamic entries by default): when full, the least recently
 * used entry is evicted, so a sandbox spraying ARP for random addresses costs
 * a fixed, small amount of memory. Entries live in one array linked by
 * 16-bit indices (LRU list and hash chains), so the table is two allocations.
 */
#ifndef URSA_NET_NEIGH_H
#define URSA_NET_NEIGH_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define URS_NEIGH_MAX 512

struct urs_neigh_ent {
	struct in6_addr addr; /* IPv4 in the first 4 bytes */
	uint8_t family;
	uint8_t mac[6];
	uint16_t prev, next; /* LRU: prev toward the most recent */
	uint16_t hnext;
};

struct urs_neigh {
	struct urs_neigh_ent *ents;
	uint16_t *buckets;
	uint32_t n, cap, max;
	uint16_t head, tail; /* most / least recently used */
};

/**
 * urs_neigh_init() - an empty cache with no table; allocates nothing
 * @t: the cache
 * @max: dynamic entries at most (0, or 65535 and more: URS_NEIGH_MAX)
 */
void urs_neigh_init(struct urs_neigh *t, uint32_t max);

/**
 * urs_neigh_fini() - free the table; the cache is empty (same bound) and
 *                    usable again
 * @t: the cache
 */
void urs_neigh_fini(struct urs_neigh *t);

/**
 * urs_neigh_update() - insert or refresh (moves to the front)
 * @t: the cache
 * @family: AF_INET or AF_INET6
 * @addr: the address: 4 or 16 bytes by @family
 * @mac: its MAC
 *
 * When the cache is full the least recently used entry is evicted and its
 * slot reused; otherwise the table doubles when it runs out of room (from
 * eight entries: two allocations).
 *
 * Return: 0 or -ENOMEM.
 */
int urs_neigh_update(struct urs_neigh *t, int family, const void *addr, const uint8_t mac[6]);

/**
 * urs_neigh_lookup() - the MAC for @addr, and mark it used
 * @t: the cache
 * @family: AF_INET or AF_INET6
 * @addr: the address: 4 or 16 bytes by @family
 *
 * Return: the MAC (valid until the next update), or NULL.
 */
const uint8_t *urs_neigh_lookup(struct urs_neigh *t, int family, const void *addr);

/**
 * urs_neigh_mem() - bytes the table has allocated
 * @t: the cache
 *
 * Return: the bytes.
 */
size_t urs_neigh_mem(const struct urs_neigh *t);

/**
 * urs_neigh_rank() - the entry at LRU rank @i, for tests
 * @t: the cache
 * @i: 0 = most recent
 *
 * Return: the entry, or NULL past the end.
 */
const struct urs_neigh_ent *urs_neigh_rank(const struct urs_neigh *t, uint32_t i);

#endif
