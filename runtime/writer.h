/*
 * runtime/writer.h — batched writes with a bound on what is in flight.
 *
 * A producer (e.g. the checkpointer streaming an image) queues caller-owned
 * chunks; the loop submits every chunk queued during a turn with one
 * io_uring_enter. At most max_ops chunks / max_bytes bytes are in the
 * kernel at once; past that urs_writer_write() returns -EAGAIN and the
 * writer calls on_ready once in-flight bytes fall below half the bound
 * (backpressure without polling). Seekable files get explicit offsets and
 * run in parallel; pipes and sockets are written one chunk at a time, in
 * order. Short writes are continued; the first error sticks and is
 * reported to every later chunk and by urs_writer_error().
 */
#ifndef URSA_RUNTIME_WRITER_H
#define URSA_RUNTIME_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/loop.h"

struct urs_writer;
struct urs_wchunk;

/* res: bytes written (the whole chunk) or a negative errno. */
typedef void (*urs_wchunk_cb)(struct urs_writer *w, struct urs_wchunk *c, int res);
typedef void (*urs_writer_ready_cb)(struct urs_writer *w);

struct urs_wchunk {
	struct urs_op op;
	struct urs_writer *w;
	struct urs_wchunk *next; /* waiting FIFO (ordered mode) */
	const unsigned char *buf;
	uint32_t len, done;
	uint64_t off;
	urs_wchunk_cb cb;
	bool busy; /* queued or in flight: from urs_writer_write() until its callback */
};

/**
 * urs_wchunk_busy() - is @c queued or in flight?
 * @c: the chunk
 *
 * Return: true from urs_writer_write() until its callback has been called.
 */
static inline bool urs_wchunk_busy(const struct urs_wchunk *c)
{
	return c->busy;
}

struct urs_writer {
	struct urs_loop *loop;
	int fd;
	bool seekable;
	uint64_t off;	  /* next file offset */
	size_t max_bytes; /* bound on bytes in flight */
	uint32_t max_ops; /* bound on chunks in flight */
	size_t inflight_bytes;
	uint32_t inflight_ops;
	struct urs_wchunk *wait_head, *wait_tail; /* ordered mode: not yet submitted */
	int error;
	bool want_ready;
	urs_writer_ready_cb on_ready;
	uint64_t bytes_done, chunks_done;
};

/**
 * urs_writer_init() - a writer for @fd on @loop
 * @w: the writer
 * @loop: the loop the writes go through (its thread only)
 * @fd: the file; regular files and block devices are written at explicit
 *      offsets, in parallel, anything else one chunk at a time, in order
 * @off: starting file offset (ignored for non-seekable fds)
 * @max_bytes: bound on bytes in flight (0: 4 MiB)
 * @max_ops: bound on chunks in flight (0: 64)
 * @on_ready: called once in-flight bytes fall below half the bound after an
 *            -EAGAIN, or NULL
 *
 * Allocates nothing; the fd stays the caller's.
 *
 * Return: 0, or fstat(2)'s negative errno.
 */
int urs_writer_init(struct urs_writer *w, struct urs_loop *loop, int fd, uint64_t off,
		    size_t max_bytes, uint32_t max_ops, urs_writer_ready_cb on_ready);

/**
 * urs_writer_write() - queue @len bytes at @buf as chunk @c
 * @w: the writer
 * @c: an idle chunk record, caller-owned, at its address until @cb
 * @buf: the bytes (must stay valid until @cb)
 * @len: their count; they go at the writer's next offset
 * @cb: called once, from the loop, with @len or a negative errno
 *
 * A single chunk larger than the bound is accepted when nothing is in
 * flight. The write is submitted with the loop's next batch; short writes
 * are continued. No allocation.
 *
 * Return: 0: queued; -EAGAIN: over the in-flight bound, wait for on_ready;
 * -EBUSY: @c is still in use; the sticky error if the writer already failed.
 */
int urs_writer_write(struct urs_writer *w, struct urs_wchunk *c, const void *buf, uint32_t len,
		     urs_wchunk_cb cb);

/**
 * urs_writer_idle() - has every chunk completed?
 * @w: the writer
 *
 * Return: true when no chunk is queued or in flight.
 */
static inline bool urs_writer_idle(const struct urs_writer *w)
{
	return w->inflight_ops == 0;
}

/**
 * urs_writer_error() - the writer's sticky error
 * @w: the writer
 *
 * Return: 0, or the first negative errno a chunk failed with.
 */
static inline int urs_writer_error(const struct urs_writer *w)
{
	return w->error;
}

#endif
