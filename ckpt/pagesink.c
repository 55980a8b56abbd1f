/*
 * ckpt/pagesink.c — pages.img through the runtime's sink (runtime/sink.h:
 * a ring of buffers, batched io_uring writes); see ckpt/pagesink.h. Kept
 * apart from ckpt/image.c (the format) so that the image code does not
 * need to know about loops. What is the checkpoint's own here: the CRC of
 * the page data, a private ring set up only once the image outgrows one
 * buffer, the header page written last at offset 0.
 */
#include "ckpt/pagesink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "runtime/io.h"
#include "runtime/loop.h"
#include "runtime/sink.h"

struct pagesink {
	struct urs_loop loop;
	int stream_fd;	       /* the pipe the page data goes to, or -1 */
	bool uring;	       /* the ring is up (else pwrite(2)) */
	struct urs_loop *prev; /* the thread's loop before ours */
	struct urs_sink sink;
};

/* The ring, at the first full buffer: an image smaller than one buffer
 * (an idle process: ~15 pages) is written with two pwrite(2) calls at
 * finish, cheaper than setting up a ring (~0.2 ms with the feature probe). */
static void start_uring(struct urs_sink *sink, void *ctx)
{
	struct pagesink *s = ctx;
	sink->on_full = NULL;
	s->prev = urs_loop_current();
	/* a small private ring: at most NBUFS writes are ever in flight */
	struct urs_loop_opts lo = {.entries = 8};
	if (urs_loop_init(&s->loop, &lo) < 0) {
		urs_tls_loop = s->prev; /* io_uring refused: pwrite(2) */
		return;
	}
	if (urs_sink_use_loop(sink, &s->loop) < 0) {
		urs_loop_fini(&s->loop);
		urs_tls_loop = s->prev;
		return;
	}
	s->uring = true;
}

static void sink_free(struct ckpt_pages_writer *w)
{
	struct pagesink *s = w->sink;
	if (!s)
		return;
	w->sink = NULL;
	urs_sink_free(&s->sink);
	if (s->sink.inflight)
		return; /* the loop failed: leak rather than free memory in use */
	if (s->uring) {
		urs_loop_fini(&s->loop);
		urs_tls_loop = s->prev;
	}
	free(s);
}

int ckpt_pagesink_open(struct ckpt_pages_writer *w, int dirfd, int stream_fd, struct urs_err *err)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	/* a stale core.img must never pair with new pages */
	if (unlinkat(dirfd, "core.img", 0) < 0 && errno != ENOENT)
		return urs_err_set(err, -errno, "checkpoint: removing old core.img: %m");
	w->fd = openat(dirfd, "pages.img", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		       0600);
	if (w->fd < 0)
		return urs_err_set(err, -errno, "checkpoint: creating pages.img: %m");
	struct pagesink *s = calloc(1, sizeof(*s));
	if (!s || urs_sink_init(&s->sink, NULL, stream_fd >= 0 ? stream_fd : w->fd,
				stream_fd >= 0 ? URS_SINK_STREAM : CKPT_PAGE_SIZE, CKPT_SINK_NBUFS,
				CKPT_SINK_BUFSIZE) < 0) {
		free(s);
		return urs_err_set(err, -ENOMEM, "checkpoint: out of memory");
	}
	s->stream_fd = stream_fd;
	if (stream_fd < 0 && !getenv("URSA_CKPT_NO_URING")) { /* (benchmarks compare) */
		s->sink.on_full = start_uring;
		s->sink.on_full_ctx = s;
	}
	w->sink = s;
	return 0;
}

int ckpt_pagesink_append(struct ckpt_pages_writer *w, const void *p, size_t n, uint64_t *off,
			 struct urs_err *err)
{
	struct pagesink *s = w->sink;
	*off = w->off;
	w->crc = ckpt_crc32c(w->crc, p, n);
	w->off += n;
	int r = urs_sink_write(&s->sink, p, n);
	if (r < 0)
		return urs_err_set(err, r, "checkpoint: writing pages.img: %s", strerror(-r));
	return 0;
}

int ckpt_pagesink_finish(struct ckpt_pages_writer *w, const void *hdr, struct urs_err *err)
{
	struct pagesink *s = w->sink;
	int r = urs_sink_flush(&s->sink);
	if (!r) /* the header last: a pages.img with one is complete */
		r = urs_pwrite_all(w->fd, hdr, CKPT_PAGE_SIZE, 0);
	sink_free(w);
	if (close(w->fd) < 0 && !r)
		r = -errno;
	w->fd = -1;
	if (r)
		return urs_err_set(err, r, "checkpoint: writing pages.img: %s", strerror(-r));
	return 0;
}

int ckpt_pagesink_drain(struct ckpt_pages_writer *w, struct urs_err *err)
{
	struct pagesink *s = w->sink;
	int r = urs_sink_flush(&s->sink);
	if (r)
		return urs_err_set(err, r, "checkpoint: writing the page data: %s", strerror(-r));
	if (s->stream_fd < 0 && w->fd >= 0 && fdatasync(w->fd) < 0)
		return urs_err_set(err, -errno, "checkpoint: syncing the page data: %m");
	/* the reader takes it as fast as it can; 120 s is a reader that stopped */
	for (double end = urs_now_ms() + 120000; s->stream_fd >= 0;) {
		int queued = 0;
		if (ioctl(s->stream_fd, FIONREAD, &queued) < 0 || queued == 0)
			break;
		if (urs_now_ms() > end)
			return urs_err_set(err, -ETIMEDOUT,
					   "checkpoint: the page data's reader stopped reading");
		struct timespec ms = {0, 500000};
		nanosleep(&ms, NULL);
	}
	return 0;
}

bool ckpt_pagesink_uring(const struct ckpt_pages_writer *w)
{
	const struct pagesink *s = w->sink;
	return s && s->uring;
}

void ckpt_pagesink_abort(struct ckpt_pages_writer *w, int dirfd)
{
	sink_free(w);
	if (w->fd >= 0) {
		close(w->fd);
		unlinkat(dirfd, "pages.img", 0);
	}
	w->fd = -1;
}
