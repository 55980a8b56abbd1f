/*
 * ckpt/pagesink.h — the pages.img writer of the dumper (the bodies of
 * ckpt_pages_open/append/finish/abort, ckpt/image.h) on the runtime's sink
 * (runtime/sink.h: a ring of buffers, batched io_uring writes).
 *
 * Page data is copied into a small ring of buffers (CKPT_SINK_NBUFS ×
 * CKPT_SINK_BUFSIZE); each full buffer becomes one write at its explicit
 * file offset and is submitted at once, so the kernel copies it into the
 * file while the dumper reads the next pages from /proc/PID/mem; the
 * dumper only waits when it needs a buffer still being written. finish()
 * writes the last partial buffer, waits, then writes the header page
 * (offset 0). CRC32C of the page data is computed on append.
 *
 * The sink has its own loop (a private io_uring) for the duration of one
 * dump, on the caller's thread, set up when the first buffer fills (an
 * image smaller than one buffer — an idle process, ~15 pages — is written
 * with two pwrite(2) calls: a ring costs ~0.2 ms to set up, more than
 * those); a loop the thread already had is current again afterwards.
 * Without io_uring (a kernel or seccomp policy that refuses it) the sink
 * stays on pwrite(2), same bytes; URSA_CKPT_NO_URING=1 forces that
 * (benchmarks compare the two).
 */
#ifndef URSA_CKPT_PAGESINK_H
#define URSA_CKPT_PAGESINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt/image.h"
#include "runtime/err.h"

#define CKPT_SINK_NBUFS	  4
#define CKPT_SINK_BUFSIZE (256u << 10)

/**
 * ckpt_pagesink_open() - create pages.img and its sink
 * @w: the writer (cleared first)
 * @dirfd: the image directory
 * @stream_fd: -1, or a pipe the page data goes to with write(2), in order
 *             (pages.img then holds the header page only; no ring)
 * @err: what failed
 *
 * pages.img created in @dirfd (a stale core.img removed first), the ring
 * ready; w->fd, w->off, w->crc as the dumper expects. Allocates the ring of
 * buffers (CKPT_SINK_NBUFS × CKPT_SINK_BUFSIZE); no io_uring yet.
 *
 * Return: 0, -ENOMEM, or the negative errno of removing core.img or
 * creating pages.img. Call ckpt_pagesink_abort() after a failure too.
 */
int ckpt_pagesink_open(struct ckpt_pages_writer *w, int dirfd, int stream_fd, struct urs_err *err);

/**
 * ckpt_pagesink_append() - @n bytes of page data
 * @w: the writer
 * @p: the bytes, copied into the ring
 * @n: their count
 * @off: gets their offset in the page data
 * @err: what failed
 *
 * A full buffer is written at once; this waits only for a buffer still
 * being written (running the private loop on this thread).
 *
 * Return: 0 or the sink's sticky negative errno (-ENOSPC...).
 */
int ckpt_pagesink_append(struct ckpt_pages_writer *w, const void *p, size_t n, uint64_t *off,
			 struct urs_err *err);

/**
 * ckpt_pagesink_finish() - write what is buffered and the header page
 * @w: the writer
 * @hdr: the header page (CKPT_PAGE_SIZE bytes, offset 0), written last
 * @err: what failed
 *
 * Waits for every write, then closes pages.img (not synced). The sink is
 * freed either way, and the thread's previous loop is current again.
 *
 * Return: 0 or a negative errno.
 */
int ckpt_pagesink_finish(struct ckpt_pages_writer *w, const void *hdr, struct urs_err *err);

/**
 * ckpt_pagesink_drain() - everything appended so far written out, and a
 *                         stream's reader caught up with it
 * @w: the writer
 * @err: what failed
 *
 * Before a freeze: what the freeze appends then finds room in the pipe
 * instead of waiting for the reader (the upload) with the sandbox frozen;
 * a local pages.img is written to disk (fdatasync), so that the commit's
 * fsync, with the sandbox frozen, has only what the freeze added.
 * Waits for the pipe to empty, polling every 0.5 ms, at most 120 s.
 *
 * Return: 0, the write's negative errno, or -ETIMEDOUT.
 */
int ckpt_pagesink_drain(struct ckpt_pages_writer *w, struct urs_err *err);

/**
 * ckpt_pagesink_uring() - do the pages go out through io_uring now? (tests)
 * @w: the writer
 *
 * Return: true once the private ring is up.
 */
bool ckpt_pagesink_uring(const struct ckpt_pages_writer *w);

/**
 * ckpt_pagesink_abort() - wait for writes in flight, free, close and remove
 *                         pages.img
 * @w: the writer (after ckpt_pagesink_open, whatever it returned)
 * @dirfd: the image directory
 */
void ckpt_pagesink_abort(struct ckpt_pages_writer *w, int dirfd);

#endif
