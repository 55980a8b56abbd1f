/*
 * runtime/sink.h — a file written from a synchronous producer through a
 * small ring of large buffers and the runtime's batched io_uring writes
 * (runtime/writer.h): the state encoder's and statefile's output
 * (urs_st_sink / urs_sf_sink callbacks take urs_sink_write) and the
 * checkpoint's pages.img (ckpt/pagesink.c). One implementation for both.
 *
 * Incoming bytes are copied into the ring (allocated once at init; nothing
 * per write). Each full buffer is handed to urs_writer_write() as one chunk
 * and submitted at once, so the kernel writes it while the producer fills
 * the next one. The producer cannot return to the loop, so the sink drives
 * it: when the next buffer is still in flight it runs urs_loop_run_once()
 * until that buffer comes back (other completions, timers and actors of
 * the same loop run then, from inside the producer's call: callers that
 * cannot have that use a loop of their own; the loop's own thread only).
 *
 * Without a loop (urs_sink_init with @loop NULL) full buffers are written
 * with pwrite(2), same bytes, same offsets; urs_sink_use_loop() switches to
 * io_uring later (the checkpoint sets up its ring only once an image is
 * bigger than one buffer). Errors (-ENOSPC, -EBADF...) are sticky: the
 * first is returned by the next write and by the flush.
 */
#ifndef URSA_RUNTIME_SINK_H
#define URSA_RUNTIME_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/writer.h"

#define URS_SINK_MAXBUFS 8
/* urs_sink_init's @off for a pipe or socket: write(2) in order, no ring */
#define URS_SINK_STREAM UINT64_MAX

struct urs_sink;

struct urs_sink_buf {
	struct urs_wchunk c;
	struct urs_sink *s;
	uint8_t *data;
	uint32_t fill;
};

struct urs_sink {
	struct urs_loop *loop; /* NULL: pwrite(2) */
	struct urs_writer w;
	int fd;
	uint64_t off; /* where the next buffer goes (pwrite mode) */
	struct urs_sink_buf bufs[URS_SINK_MAXBUFS];
	uint32_t nbufs, bufsize;
	uint32_t cur;	   /* buffer being filled */
	uint32_t inflight; /* buffers handed to the writer, callback not yet run */
	int err;	   /* first error, sticky */
	uint64_t written;  /* bytes written (chunks completed) */
	/* called once a buffer is full, before it is written (may call
	 * urs_sink_use_loop); NULL: nothing */
	void (*on_full)(struct urs_sink *s, void *ctx);
	void *on_full_ctx;
};

/**
 * urs_sink_init() - a sink writing @fd from file offset @off
 * @s: the sink
 * @loop: the loop to write on, or NULL for pwrite(2)
 * @fd: a seekable fd, or a stream with @off URS_SINK_STREAM
 * @off: the file offset of the first byte, or URS_SINK_STREAM: each full
 *       buffer goes out with write(2), in order (never through a ring)
 * @nbufs: buffers in the ring (0: 4; at most URS_SINK_MAXBUFS)
 * @bufsize: bytes per buffer (0: 1 MiB)
 *
 * Return: 0, -EINVAL, -ENOMEM, or the writer's error.
 */
int urs_sink_init(struct urs_sink *s, struct urs_loop *loop, int fd, uint64_t off, uint32_t nbufs,
		  uint32_t bufsize);

/**
 * urs_sink_use_loop() - write through io_uring on @loop from now on
 * @s: a sink in pwrite mode (nothing in flight)
 * @loop: the loop
 *
 * Return: 0, or the writer's error (the sink stays in pwrite mode).
 */
int urs_sink_use_loop(struct urs_sink *s, struct urs_loop *loop);

/**
 * urs_sink_write() - take all @len bytes (an urs_st_sink / urs_sf_sink)
 * @ctx: the sink
 * @buf: the bytes
 * @len: their count
 *
 * Return: 0 or the first error.
 */
int urs_sink_write(void *ctx, const void *buf, size_t len);

/**
 * urs_sink_flush() - write the partial buffer and wait for every chunk
 * @s: the sink (may be written to again afterwards)
 *
 * Return: 0 or the first error.
 */
int urs_sink_flush(struct urs_sink *s);

/**
 * urs_sink_free() - wait for chunks still in flight (their memory is ours),
 *                   then free the ring (the fd stays the caller's)
 * @s: the sink
 */
void urs_sink_free(struct urs_sink *s);

#endif
