/*
 * runtime/pool.h — fixed-size object pool with lazy slab growth.
 *
 * Nothing is allocated until the first object is taken; slabs of
 * URS_POOL_SLAB objects are added on demand up to a hard cap, so a loop that
 * never sends a message costs nothing and a busy one makes one allocation per
 * slab, never one per object. The owner thread allocates and frees without
 * atomics; any other thread may free (a lock-free push onto a remote list that
 * the owner takes over whole with one exchange, so there is no ABA).
 */
#ifndef URSA_RUNTIME_POOL_H
#define URSA_RUNTIME_POOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define URS_POOL_SLAB 64u

struct urs_pool_node {
	struct urs_pool_node *next;
};

struct urs_pool_slab;

struct urs_pool {
	struct urs_pool_node *free;		/* owner only */
	_Atomic(struct urs_pool_node *) remote; /* freed by other threads */
	struct urs_pool_slab *slabs;
	uint32_t obj_size;
	uint32_t max;	/* cap on objects ever allocated */
	uint32_t total; /* objects carved from slabs */
};

void urs_pool_init(struct urs_pool *p, uint32_t obj_size, uint32_t max);
void urs_pool_fini(struct urs_pool *p);

/* Slow path of urs_pool_get(): take back remote frees or add a slab. */
void *urs_pool_get_slow(struct urs_pool *p);

/* Owner thread only. NULL when the cap is reached or memory is short. */
static inline void *urs_pool_get(struct urs_pool *p)
{
	struct urs_pool_node *o = p->free;
	if (__builtin_expect(!o, 0))
		return urs_pool_get_slow(p);
	p->free = o->next;
	return o;
}

/* Owner thread only. */
static inline void urs_pool_put(struct urs_pool *p, void *obj)
{
	struct urs_pool_node *o = obj;
	o->next = p->free;
	p->free = o;
}
/* Any thread. */
void urs_pool_put_remote(struct urs_pool *p, void *obj);

#endif
