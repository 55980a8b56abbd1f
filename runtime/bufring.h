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

int urs_bufring_init(struct urs_bufring *b, struct urs_loop *loop, uint16_t bgid, uint32_t size,
		     uint32_t max);
void urs_bufring_fini(struct urs_bufring *b);

/* Grow to @n active buffers (clamped to max); new buffers go to the kernel. */
int urs_bufring_grow(struct urs_bufring *b, uint32_t n);
/* Shrink to @n (>= 1) active buffers; memory of retired buffers is returned. */
int urs_bufring_shrink(struct urs_bufring *b, uint32_t n);

/* Return the memory of every buffer the kernel holds. Only while NO request
 * reading from this group is in flight (e.g. after cancelling the read and
 * seeing its final completion): a request could be writing into one. */
void urs_bufring_trim(struct urs_bufring *b);

/*
 * Account a completion of an op reading from this group: returns the buffer
 * it filled (and its id in *bid), or NULL if it carried none. Notes backlog
 * on -ENOBUFS and when the kernel is left with no buffer.
 */
void *urs_bufring_take(struct urs_bufring *b, int32_t res, uint32_t cqe_flags, uint16_t *bid);
/* Give a USER buffer back: re-provided if still in service, else retired. */
void urs_bufring_recycle(struct urs_bufring *b, uint16_t bid);

/* True once since the last call if backlog was seen. */
static inline bool urs_bufring_take_backlog(struct urs_bufring *b)
{
	bool r = b->backlog;
	b->backlog = false;
	return r;
}

static inline void *urs_bufring_addr(const struct urs_bufring *b, uint16_t bid)
{
	return b->mem + (size_t) bid * b->size;
}

#endif
