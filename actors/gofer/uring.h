/*
 * actors/gofer/uring.h — FUSE over io_uring for the gofer (gofer/uring.c):
 * the kernel's uapi for it (FUSE 7.42, newer than Debian 12's
 * <linux/fuse.h> 7.38) and the hooks gofer.c and gofer/ops.c call.
 * Not for use outside actors/gofer*.c.
 */
#ifndef URSA_ACTORS_GOFER_URING_H
#define URSA_ACTORS_GOFER_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* FUSE_OVER_IO_URING = 1ULL << 41: init flags2 bit 9 */
#define URS_FUSE_OVER_IO_URING_FLAG2 (1u << 9)

#define URS_FUSE_URING_IN_OUT_HEADER_SZ 128
#define URS_FUSE_URING_OP_IN_OUT_SZ	128

struct urs_fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;  /* the request's unique: echoed in the commit */
	uint32_t payload_sz; /* bytes of payload, in either direction */
	uint32_t padding;
	uint64_t reserved;
};

/* iov[0] of a registered entry: what the kernel writes (in_header, the
 * opcode's fixed argument) and reads back (out_header). */
struct urs_fuse_uring_req_header {
	char in_out[URS_FUSE_URING_IN_OUT_HEADER_SZ];
	char op_in[URS_FUSE_URING_OP_IN_OUT_SZ];
	struct urs_fuse_uring_ent_in_out ring_ent_in_out;
};

enum {
	URS_FUSE_IO_URING_CMD_REGISTER = 1,
	URS_FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,
};

/* In the SQE's 80-byte command area. */
struct urs_fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

struct urs_gofer;
struct urs_gofer_stats;
struct greq;
struct gofer_uent;

/*
 * INIT (gofer/ops.c): the FUSE_OVER_IO_URING bit to add to the flags we
 * accept, or 0. Non-zero only when the kernel offered it (@kflags: the INIT
 * request's flags | flags2 << 32), the fd is /dev/fuse, the option and
 * URSA_IOURING_DISABLE allow it, and the ring and first buffers could be
 * set up — everything that can fail is done here, because once the kernel
 * has accepted the flag it holds every request until each queue has an
 * entry registered.
 */
uint64_t gofer_uring_offer(struct urs_gofer *g, uint64_t kflags);
/* After the INIT reply was written: register the first entries. */
void gofer_uring_start(struct urs_gofer *g);
/* The reply sink for a request that came through io_uring (r->uent). */
int gofer_uring_reply(struct greq *r, int err, const void *a, size_t alen, const void *b,
		      size_t blen);
/* The io_uring host operation of an entry's request completed (its reply is
 * written): commit it. */
void gofer_uring_async_done(struct gofer_uent *e);
/* Idle period: return the payload pages of the entries waiting in the kernel. */
void gofer_uring_idle(struct urs_gofer *g);
/* Stop: no new commits; cancel our eventfd read. */
void gofer_uring_stop(struct urs_gofer *g);
/* An op of ours is still in flight on the loop. */
bool gofer_uring_busy(const struct urs_gofer *g);
void gofer_uring_free(struct urs_gofer *g);
size_t gofer_uring_mem(const struct urs_gofer *g);
void gofer_uring_stats(const struct urs_gofer *g, struct urs_gofer_stats *st);

#endif
