/*
 * runtime/common.h — small language helpers shared by every layer:
 * container_of, branch hints, and the __attribute__((cleanup)) helpers that
 * make "every fd and allocation is released on every path" the default
 * (the same idiom crun and systemd use).
 */
#ifndef URSA_RUNTIME_COMMON_H
#define URSA_RUNTIME_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define container_of(ptr, type, member) ((type *) ((char *) (ptr) -offsetof(type, member)))
#define URS_ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define likely(x)			__builtin_expect(!!(x), 1)
#define unlikely(x)			__builtin_expect(!!(x), 0)
#define URS_UNUSED			__attribute__((unused))
#define URS_MUST_CHECK			__attribute__((warn_unused_result))

/**
 * urs_freep() - free(*p): the cleanup of _cleanup_free_
 * @p: the address of a pointer variable (free(NULL) is fine)
 */
static inline void urs_freep(void *p)
{
	free(*(void **) p);
}

/**
 * urs_closep() - close(*fd) if it is open, and leave it -1: the cleanup of
 * _cleanup_close_, and the way to close an fd a record keeps
 * @fd: the address of an fd variable (negative: nothing to close)
 *
 * errno is kept as it was, so a failure path can still report it.
 */
static inline void urs_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
	*fd = -1;
}

/**
 * urs_fclosep() - fclose(*f) if set: the cleanup of _cleanup_fclose_
 * @f: the address of a FILE pointer variable (NULL: nothing)
 */
static inline void urs_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define _cleanup_free_	 __attribute__((cleanup(urs_freep)))
#define _cleanup_close_	 __attribute__((cleanup(urs_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(urs_fclosep)))

/**
 * steal_fd() - hand ownership out of a cleanup variable: return steal_fd(&fd);
 * @fd: the address of the fd variable; left -1, so its cleanup does nothing
 *
 * Return: the fd it held.
 */
static inline int steal_fd(int *fd)
{
	int r = *fd;
	*fd = -1;
	return r;
}

/**
 * steal_ptr() - the same for a pointer: return steal_ptr(&p);
 * @pp: the address of the pointer variable; left NULL
 *
 * Return: the pointer it held.
 */
static inline void *steal_ptr(void *pp)
{
	void **p = pp;
	void *r = *p;
	*p = NULL;
	return r;
}

/**
 * urs_grow_sz() - make room for one more element in a doubling array
 * @arr: the array (may be NULL while *@cap is 0)
 * @cap: its capacity in elements
 * @n: the elements in use
 * @elem: an element's size
 * @first: the capacity of a first allocation (not 0)
 *
 * A capacity that would not fit (its doubling wraps, or its bytes overflow
 * size_t) fails as an allocation would.
 *
 * Return: 0 (room for one more at index @n), or -ENOMEM (the array as it was).
 */
static inline int urs_grow_sz(void **arr, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : first;
	if (c <= *cap || c > SIZE_MAX / elem)
		return -ENOMEM;
	void *p = realloc(*arr, c * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

/**
 * urs_grow() - urs_grow_sz() for an array counted in uint32_t
 * @arr: the array (may be NULL while *@cap is 0)
 * @cap: its capacity in elements
 * @n: the elements in use
 * @elem: an element's size
 * @first: the capacity of a first allocation (not 0)
 *
 * Return: 0 (room for one more at index @n), or -ENOMEM (the array as it
 * was; also when the doubled capacity would not fit in 32 bits).
 */
static inline int urs_grow(void **arr, uint32_t *cap, uint32_t n, size_t elem, uint32_t first)
{
	if (n < *cap)
		return 0;
	if (*cap > UINT32_MAX / 2)
		return -ENOMEM;
	size_t c = *cap;
	int r = urs_grow_sz(arr, &c, n, elem, first);
	if (r == 0)
		*cap = (uint32_t) c;
	return r;
}

#endif
