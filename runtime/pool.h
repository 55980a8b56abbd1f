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

/**
 * urs_pool_init() - an empty pool; allocates nothing
 * @p: the pool
 * @obj_size: bytes per object (rounded up to 16, at least a pointer)
 * @max: cap on objects ever carved from slabs
 */
void urs_pool_init(struct urs_pool *p, uint32_t obj_size, uint32_t max);

/**
 * urs_pool_fini() - free every slab and empty the pool
 * @p: the pool; objects still taken are gone with their slabs
 */
void urs_pool_fini(struct urs_pool *p);

/**
 * urs_pool_get_slow() - slow path of urs_pool_get()
 * @p: the pool, on its owner thread, free list empty
 *
 * Takes back the objects other threads freed (the whole remote list, one
 * atomic exchange) or, if there are none, adds a slab: one malloc of up to
 * URS_POOL_SLAB objects, within the cap.
 *
 * Return: an object, or NULL when the cap is reached or memory is short.
 */
void *urs_pool_get_slow(struct urs_pool *p);

/**
 * urs_pool_get() - take an object
 * @p: the pool
 *
 * Owner thread only. Contents undefined (the first bytes held the free-list
 * link).
 *
 * Return: the object, or NULL when the cap is reached or memory is short.
 */
static inline void *urs_pool_get(struct urs_pool *p)
{
	struct urs_pool_node *o = p->free;
	if (__builtin_expect(!o, 0))
		return urs_pool_get_slow(p);
	p->free = o->next;
	return o;
}

/**
 * urs_pool_put() - give an object back
 * @p: the pool it came from
 * @obj: the object
 *
 * Owner thread only.
 */
static inline void urs_pool_put(struct urs_pool *p, void *obj)
{
	struct urs_pool_node *o = obj;
	o->next = p->free;
	p->free = o;
}

/**
 * urs_pool_put_remote() - give an object back from a thread that does not
 *                         own the pool
 * @p: the pool it came from
 * @obj: the object
 *
 * Any thread: a lock-free push onto the remote list, which the owner takes
 * over whole when its free list runs dry.
 */
void urs_pool_put_remote(struct urs_pool *p, void *obj);

#endif
