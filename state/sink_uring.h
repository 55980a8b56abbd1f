/*
 * state/sink_uring.h — an output sink for the encoder (urs_st_sink) and the
 * statefile writer (urs_sf_sink) that writes a file through the runtime's
 * batched io_uring writes (runtime/writer.h) instead of write(2).
 *
 * Incoming bytes are copied into a small ring of large buffers (default
 * 4 × 1 MiB, allocated once at init; nothing is allocated per write). Each
 * full buffer is handed to urs_writer_write() as one chunk and submitted
 * right away, so the kernel writes it while the producer fills the next one.
 *
 * The sink is called synchronously by its producer, which cannot return to
 * the loop, so the sink drives the loop itself: when the next buffer is
 * still in flight it runs urs_loop_run_once(loop, true) until that buffer
 * comes back. Other completions, timers and actors of the same loop run
 * during those turns, i.e. from inside the producer's call; callers that
 * cannot tolerate that should serialize on a loop of their own. Must be
 * used on the loop's own thread.
 *
 * Errors (-ENOSPC, -EBADF, ...) are sticky: the first one is returned by the
 * next urs_st_usink_write() and by urs_st_usink_flush().
 */
#ifndef URSA_STATE_SINK_URING_H
#define URSA_STATE_SINK_URING_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/writer.h"

#define URS_ST_USINK_MAXBUFS 8

struct urs_st_usink;

struct urs_st_ubuf {
	struct urs_wchunk c;
	struct urs_st_usink *s;
	uint8_t *data;
	uint32_t fill;
};

struct urs_st_usink {
	struct urs_loop *loop;
	struct urs_writer w;
	struct urs_st_ubuf bufs[URS_ST_USINK_MAXBUFS];
	uint32_t nbufs, bufsize;
	uint32_t cur;	   /* buffer being filled */
	uint32_t inflight; /* buffers handed to the writer, callback not yet run */
	int err;	   /* first error, sticky */
	uint64_t written;  /* bytes whose chunk completed */
};

/*
 * Write to @fd starting at file offset @off (ignored for pipes/sockets) on
 * @loop. @nbufs buffers (0: 4, at most URS_ST_USINK_MAXBUFS) of @bufsize
 * bytes (0: 1 MiB). 0 or a negative errno.
 */
int urs_st_usink_init(struct urs_st_usink *s, struct urs_loop *loop, int fd, uint64_t off,
		      uint32_t nbufs, uint32_t bufsize);
/* The sink callback (urs_st_sink / urs_sf_sink): @ctx is the usink. Takes all
 * @len bytes, or returns a negative errno. */
int urs_st_usink_write(void *ctx, const void *buf, size_t len);
/* Write the partial buffer and wait until every chunk completed. 0 or the
 * first error. The sink may be written to again afterwards. */
int urs_st_usink_flush(struct urs_st_usink *s);
/* Waits for chunks still in flight (their memory is ours), then frees. */
void urs_st_usink_free(struct urs_st_usink *s);

#endif
