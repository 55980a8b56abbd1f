/*
 * actors/nettx.h — batched transmission to the tap through io_uring.
 *
 * Each frame the engine hands over is copied into a transmit slot and
 * written by an IORING_OP_WRITE; every write queued during one loop turn
 * goes to the kernel in the turn's single io_uring_enter. The slot pool
 * follows the receive ring's lazy rule: ONE slot at first (its memory
 * mapped on the first frame, pages touched as used), doubled up to @max
 * when a frame finds every slot in flight, back to one slot after a quiet
 * period with no such backlog, and the retired slots' pages returned
 * (MADV_DONTNEED). With every slot in flight at @max, send answers -EAGAIN
 * and @ready runs once a completion frees a slot (the engine retries).
 *
 * Selected by the netstack with URSA_NET_TX=batch; its default stays one
 * non-blocking writev() per frame (docs/network.md says why).
 */
#ifndef URSA_ACTORS_NETTX_H
#define URSA_ACTORS_NETTX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "runtime/loop.h"

#define URS_NETTX_MAX 32

struct urs_nettx_slot;

struct urs_nettx {
	struct urs_loop *loop;
	int fd;
	uint32_t slot_bytes, max, active;
	uint32_t busy;		      /* bit i: slot i's write in flight */
	unsigned char *mem;	      /* max * slot_bytes, mapped on first use */
	struct urs_nettx_slot *slots; /* allocated with mem */
	bool want_ready;	      /* an -EAGAIN was returned: call ready() */
	bool backlog;		      /* a frame found every slot busy this period */
	bool used;		      /* frames this period */
	uint32_t touched;	      /* bit i: slot i's pages may be resident */
	bool stopping;
	void (*ready)(void *ctx);
	void *ctx;
	uint64_t frames, grows, shrinks, again, errors;
};

void urs_nettx_init(struct urs_nettx *t, struct urs_loop *loop, int fd, uint32_t slot_bytes,
		    uint32_t max, void (*ready)(void *ctx), void *ctx);
/* 0: queued; -EAGAIN: every slot in flight (ready() follows);
 * -EMSGSIZE: larger than a slot; -ENOMEM: no slot memory. */
int urs_nettx_send(struct urs_nettx *t, const struct iovec *iov, int iovcnt);
/* Once per idle period: shrink to one slot without backlog, return the
 * memory of slots not in flight (all of it after a period without frames). */
void urs_nettx_idle(struct urs_nettx *t);
/* No more ready() calls for room; in-flight writes complete on the loop,
 * and the last of them calls ready() once more (then the owner, stopping,
 * may free @t: busy is 0). */
void urs_nettx_stop(struct urs_nettx *t);
/* Release the slots: only when no write can be in flight any more (the
 * loop is gone, or every completion came back). */
void urs_nettx_fini(struct urs_nettx *t);

#endif
