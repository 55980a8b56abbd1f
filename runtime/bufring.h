/*
 * runtime/bufring.h — a provided-buffer ring that starts with ONE buffer,
 * grows under backlog and shrinks back, returning memory to the kernel.
 *
 * All buffer memory is one virtual reservation (max * size bytes, never
 * touched up front), so an idle ring costs one page of ring entries plus
 * whatever its active buffers have been written to. Buffers have a state:
 *   KERNEL  provided to the kernel (in the ring)
 *   USER    handed out by a completion, owned by the caller until recycled
 *   RETIRED not provided; memory returned with madvise(MADV_DONTNEED)
 * Shrinking only retires buffers the kernel does not hold: those still in
 * the ring are retired when they come back (the kernel may be writing them).
 *
 * Backlog is reported to the owner: an -ENOBUFS completion (the ring ran
 * empty while data was waiting) or, with more than one active buffer, a
 * completion that left none in the kernel (a batch filled every active
 * buffer before any came back). The owner decides to grow.
 * Without kernel buffer rings (probe), urs_bufring_init() fails with
 * -EOPNOTSUPP and the owner uses plain reads into its own buffer.
 */
#ifndef URSA_RUNTIME_BUFRING_H
#define URSA_RUNTIME_BUFRING_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/loop.h"

enum urs_buf_state { URS_BUF_RETIRED = 0, URS_BUF_KERNEL, URS_BUF_USER };

struct urs_bufring {
	struct urs_loop *loop;
	struct io_uring_buf_ring *br;
	unsigned char *mem;
	uint8_t *state;	  /* per buffer */
	uint32_t size;	  /* bytes per buffer */
	uint32_t max;	  /* buffers reserved */
	uint32_t entries; /* ring entries (power of two >= max) */
	uint32_t active;  /* target: buffers with id < active are in service */
	uint32_t in_kernel;
	uint16_t bgid;
	bool backlog; /* sticky until urs_bufring_take_backlog() */
	uint64_t grows, shrinks, enobufs, drained, trims;
};

/**
 * urs_bufring_init() - register a provided-buffer ring with one active buffer
 * @b: the ring (cleared first)
 * @loop: the loop whose io_uring the group is registered with
 * @bgid: the buffer group id reads will select from
 * @size: bytes per buffer
 * @max: buffers the ring may grow to, 1..32768
 *
 * Maps the ring entries and reserves @max * @size bytes (MAP_NORESERVE,
 * nothing touched), then provides buffer 0 to the kernel.
 *
 * Return: 0; -EOPNOTSUPP without kernel buffer rings on @loop (the owner
 * reads into its own buffer instead); -EINVAL for a zero @size or @max, or
 * @max over 32768; -ENOMEM or the registration's negative errno (nothing is
 * left mapped then).
 */
int urs_bufring_init(struct urs_bufring *b, struct urs_loop *loop, uint16_t bgid, uint32_t size,
		     uint32_t max);

/**
 * urs_bufring_fini() - unregister the group and unmap every buffer
 * @b: an initialized ring, or one whose init failed (then nothing happens)
 *
 * No read from the group may be in flight: the memory goes at once.
 */
void urs_bufring_fini(struct urs_bufring *b);

/**
 * urs_bufring_grow() - grow to @n active buffers (clamped to max)
 * @b: the ring
 * @n: buffers wanted in service
 *
 * New buffers go to the kernel; no allocation (the memory is reserved).
 *
 * Return: 0.
 */
int urs_bufring_grow(struct urs_bufring *b, uint32_t n);
/**
 * urs_bufring_shrink() - shrink to @n active buffers
 * @b: the ring
 * @n: buffers to keep in service (0 counts as 1)
 *
 * Memory of retired buffers is returned (MADV_DONTNEED); buffers past @n
 * that the kernel or the caller still holds are retired when they come
 * back (urs_bufring_recycle).
 *
 * Return: 0.
 */
int urs_bufring_shrink(struct urs_bufring *b, uint32_t n);

/**
 * urs_bufring_trim() - return the memory of every buffer the kernel holds
 * @b: the ring
 *
 * Only while NO request reading from this group is in flight (e.g. after
 * cancelling the read and seeing its final completion): a request could be
 * writing into one. The buffers stay provided; the kernel faults in fresh
 * pages when it next writes there.
 */
void urs_bufring_trim(struct urs_bufring *b);

/**
 * urs_bufring_take() - account a completion of an op reading from this group
 * @b: the ring
 * @res: the completion's result
 * @cqe_flags: its flags (IORING_CQE_F_BUFFER and the buffer id)
 * @bid: gets the buffer's id
 *
 * Notes backlog on -ENOBUFS and when the kernel is left with no buffer
 * (with more than one active). The buffer is the caller's (USER) until
 * urs_bufring_recycle().
 *
 * Return: the buffer it filled, or NULL if it carried none (or an id that is
 * not a buffer the kernel held: never trusted).
 */
void *urs_bufring_take(struct urs_bufring *b, int32_t res, uint32_t cqe_flags, uint16_t *bid);

/**
 * urs_bufring_recycle() - give a USER buffer back
 * @b: the ring
 * @bid: the id urs_bufring_take() gave (anything else is ignored)
 *
 * Re-provided to the kernel if still in service, else retired (its memory
 * returned).
 */
void urs_bufring_recycle(struct urs_bufring *b, uint16_t bid);

/**
 * urs_bufring_take_backlog() - read and clear the backlog flag
 * @b: the ring
 *
 * Return: true once since the last call if backlog was seen.
 */
static inline bool urs_bufring_take_backlog(struct urs_bufring *b)
{
	bool r = b->backlog;
	b->backlog = false;
	return r;
}

/**
 * urs_bufring_addr() - the memory of buffer @bid
 * @b: the ring
 * @bid: a buffer id below @b->max
 *
 * Return: its first byte (size bytes; not checked against its state).
 */
static inline void *urs_bufring_addr(const struct urs_bufring *b, uint16_t bid)
{
	return b->mem + (size_t) bid * b->size;
}

#endif
