/*
 * net/neigh.c — the neighbor cache (see neigh.h).
 */
#include "net/neigh.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define NIL 0xffffu

void urs_neigh_init(struct urs_neigh *t, uint32_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max && max < NIL ? max : URS_NEIGH_MAX;
	t->head = t->tail = NIL;
}

void urs_neigh_fini(struct urs_neigh *t)
{
	free(t->ents);
	free(t->buckets);
	urs_neigh_init(t, t->max);
}

static uint32_t hash(const struct in6_addr *a, int family)
{
	uint32_t w[4];
	memcpy(w, a, 16);
	uint32_t h = (w[0] ^ w[1] * 0x9e3779b1u ^ w[2] * 0x85ebca77u ^ w[3] * 0xc2b2ae3du) + family;
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	return h;
}

static void key(struct in6_addr *k, int family, const void *addr)
{
	memset(k, 0, sizeof(*k));
	memcpy(k, addr, family == AF_INET ? 4 : 16);
}

static uint16_t find(const struct urs_neigh *t, int family, const struct in6_addr *k,
		     uint16_t **link)
{
	if (!t->cap)
		return NIL;
	uint16_t *l = &t->buckets[hash(k, family) & (t->cap - 1)];
	while (*l != NIL) {
		const struct urs_neigh_ent *e = &t->ents[*l];
		if (e->family == family && !memcmp(&e->addr, k, 16))
			break;
		l = &t->ents[*l].hnext;
	}
	if (link)
		*link = l;
	return *l;
}

static void lru_unlink(struct urs_neigh *t, uint16_t i)
{
	struct urs_neigh_ent *e = &t->ents[i];
	if (e->prev != NIL)
		t->ents[e->prev].next = e->next;
	else
		t->head = e->next;
	if (e->next != NIL)
		t->ents[e->next].prev = e->prev;
	else
		t->tail = e->prev;
}

static void lru_front(struct urs_neigh *t, uint16_t i)
{
	struct urs_neigh_ent *e = &t->ents[i];
	e->prev = NIL;
	e->next = t->head;
	if (t->head != NIL)
		t->ents[t->head].prev = i;
	t->head = i;
	if (t->tail == NIL)
		t->tail = i;
}

static int grow(struct urs_neigh *t)
{
	/* a power of two: the array and the bucket index grow together */
	uint32_t nb = t->cap ? t->cap * 2 : 8;
	struct urs_neigh_ent *ents = realloc(t->ents, (size_t) nb * sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	t->ents = ents;
	uint16_t *b = malloc((size_t) nb * sizeof(*b));
	if (!b)
		return -ENOMEM;
	free(t->buckets);
	t->buckets = b;
	t->cap = nb;
	for (uint32_t i = 0; i < nb; i++)
		b[i] = NIL;
	for (uint32_t i = 0; i < t->n; i++) {
		uint16_t *l = &b[hash(&ents[i].addr, ents[i].family) & (nb - 1)];
		ents[i].hnext = *l;
		*l = (uint16_t) i;
	}
	return 0;
}

int urs_neigh_update(struct urs_neigh *t, int family, const void *addr, const uint8_t mac[6])
{
	struct in6_addr k;
	key(&k, family, addr);
	uint16_t i = find(t, family, &k, NULL);
	if (i != NIL) {
		memcpy(t->ents[i].mac, mac, 6);
		lru_unlink(t, i);
		lru_front(t, i);
		return 0;
	}
	if (t->n >= t->max) {
		/* evict the least recently used entry and reuse its slot */
		i = t->tail;
		struct urs_neigh_ent *e = &t->ents[i];
		uint16_t *l;
		find(t, e->family, &e->addr, &l);
		*l = e->hnext;
		lru_unlink(t, i);
	} else {
		if (t->n >= t->cap) {
			int r = grow(t);
			if (r < 0)
				return r;
		}
		i = (uint16_t) t->n++;
	}
	struct urs_neigh_ent *e = &t->ents[i];
	e->addr = k;
	e->family = (uint8_t) family;
	memcpy(e->mac, mac, 6);
	uint16_t *b = &t->buckets[hash(&k, family) & (t->cap - 1)];
	e->hnext = *b;
	*b = i;
	lru_front(t, i);
	return 0;
}

const uint8_t *urs_neigh_lookup(struct urs_neigh *t, int family, const void *addr)
{
	struct in6_addr k;
	key(&k, family, addr);
	uint16_t i = find(t, family, &k, NULL);
	if (i == NIL)
		return NULL;
	if (t->head != i) {
		lru_unlink(t, i);
		lru_front(t, i);
	}
	return t->ents[i].mac;
}

size_t urs_neigh_mem(const struct urs_neigh *t)
{
	return (size_t) t->cap * (sizeof(struct urs_neigh_ent) + sizeof(uint16_t));
}

const struct urs_neigh_ent *urs_neigh_rank(const struct urs_neigh *t, uint32_t r)
{
	uint16_t i = t->head;
	while (i != NIL && r--)
		i = t->ents[i].next;
	return i == NIL ? NULL : &t->ents[i];
}
