/*
 * runtime/pool.c — see pool.h. Slabs are one malloc each and live until
 * urs_pool_fini(); objects are threaded on intrusive free lists.
 */
#include "runtime/pool.h"

#include <stdlib.h>

struct urs_pool_slab {
	struct urs_pool_slab *next;
	_Alignas(16) unsigned char mem[];
};

void urs_pool_init(struct urs_pool *p, uint32_t obj_size, uint32_t max)
{
	p->free = NULL;
	atomic_init(&p->remote, NULL);
	p->slabs = NULL;
	if (obj_size < sizeof(struct urs_pool_node))
		obj_size = sizeof(struct urs_pool_node);
	p->obj_size = (obj_size + 15u) & ~15u;
	p->max = max;
	p->total = 0;
}

void urs_pool_fini(struct urs_pool *p)
{
	struct urs_pool_slab *s = p->slabs;
	while (s) {
		struct urs_pool_slab *n = s->next;
		free(s);
		s = n;
	}
	p->slabs = NULL;
	p->free = NULL;
	atomic_store(&p->remote, NULL);
	p->total = 0;
}

static int grow(struct urs_pool *p)
{
	uint32_t n = URS_POOL_SLAB;
	if (p->total >= p->max)
		return -1;
	if (p->max - p->total < n)
		n = p->max - p->total;
	struct urs_pool_slab *s = malloc(sizeof(*s) + (size_t) n * p->obj_size);
	if (!s)
		return -1;
	s->next = p->slabs;
	p->slabs = s;
	for (uint32_t i = n; i-- > 0;) {
		struct urs_pool_node *o = (void *) (s->mem + (size_t) i * p->obj_size);
		o->next = p->free;
		p->free = o;
	}
	p->total += n;
	return 0;
}

void *urs_pool_get_slow(struct urs_pool *p)
{
	if (!p->free) {
		p->free = atomic_exchange_explicit(&p->remote, NULL, memory_order_acquire);
		if (!p->free && grow(p) < 0)
			return NULL;
	}
	return urs_pool_get(p);
}

void urs_pool_put_remote(struct urs_pool *p, void *obj)
{
	struct urs_pool_node *o = obj;
	struct urs_pool_node *head = atomic_load_explicit(&p->remote, memory_order_relaxed);
	do
		o->next = head;
	while (!atomic_compare_exchange_weak_explicit(&p->remote, &head, o, memory_order_release,
						      memory_order_relaxed));
}
