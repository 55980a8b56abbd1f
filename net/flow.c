/*
 * net/flow.c — the flow table (see flow.h): chained hashing over a
 * power-of-two bucket array, records from a lazily grown pool.
 */
#include "net/flow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void urs_flowtab_init(struct urs_flowtab *t, uint32_t obj_size, uint32_t max)
{
	memset(t, 0, sizeof(*t));
	t->obj_size = obj_size;
	t->max = max;
	/* dying records (waiting for their io_uring ops) may briefly exceed max */
	urs_pool_init(&t->pool, obj_size, max * 2 + URS_POOL_SLAB);
}

void urs_flowtab_fini(struct urs_flowtab *t)
{
	urs_pool_fini(&t->pool);
	free(t->b);
	t->b = NULL;
	t->nb = t->n = t->objs = 0;
}

void *urs_flowtab_alloc(struct urs_flowtab *t)
{
	if (t->objs >= t->max)
		return NULL;
	void *o = urs_pool_get(&t->pool);
	if (!o)
		return NULL;
	memset(o, 0, t->obj_size);
	t->objs++;
	return o;
}

void urs_flowtab_free(struct urs_flowtab *t, void *obj)
{
	urs_pool_put(&t->pool, obj);
	t->objs--;
}

static uint32_t key_hash(const struct urs_flow_key *k)
{
	uint32_t w[6];
	memcpy(w, k, sizeof(w));
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 6; i++) {
		h ^= w[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return (uint32_t) h;
}

_Static_assert(sizeof(struct urs_flow_key) == 24, "flow key is hashed as 6 words");

static int grow(struct urs_flowtab *t)
{
	uint32_t nb = t->nb ? t->nb * 2 : 16;
	struct urs_flow_node **b = calloc(nb, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nb; i++) {
		struct urs_flow_node *n = t->b[i];
		while (n) {
			struct urs_flow_node *next = n->next;
			n->next = b[n->hash & (nb - 1)];
			b[n->hash & (nb - 1)] = n;
			n = next;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return 0;
}

struct urs_flow_node *urs_flowtab_find(const struct urs_flowtab *t, const struct urs_flow_key *k)
{
	if (!t->nb)
		return NULL;
	uint32_t h = key_hash(k);
	for (struct urs_flow_node *n = t->b[h & (t->nb - 1)]; n; n = n->next)
		if (n->hash == h && !memcmp(&n->key, k, sizeof(*k)))
			return n;
	return NULL;
}

int urs_flowtab_insert(struct urs_flowtab *t, struct urs_flow_node *node)
{
	if (urs_flowtab_find(t, &node->key))
		return -EEXIST;
	if (t->n >= t->nb) {
		int r = grow(t);
		if (r < 0 && !t->nb)
			return r; /* a failed growth with an index still works */
	}
	node->hash = key_hash(&node->key);
	struct urs_flow_node **b = &t->b[node->hash & (t->nb - 1)];
	node->next = *b;
	*b = node;
	node->linked = true;
	t->n++;
	return 0;
}

void urs_flowtab_remove(struct urs_flowtab *t, struct urs_flow_node *node)
{
	if (!node->linked)
		return;
	struct urs_flow_node **l = &t->b[node->hash & (t->nb - 1)];
	while (*l && *l != node)
		l = &(*l)->next;
	if (*l)
		*l = node->next;
	node->linked = false;
	node->next = NULL;
	t->n--;
}

void urs_flowtab_trim(struct urs_flowtab *t)
{
	if (t->objs || t->n)
		return;
	uint32_t obj_size = t->obj_size, max = t->max;
	urs_flowtab_fini(t);
	urs_flowtab_init(t, obj_size, max);
}

size_t urs_flowtab_mem(const struct urs_flowtab *t)
{
	return (size_t) t->nb * sizeof(void *) + (size_t) t->pool.total * t->obj_size;
}
