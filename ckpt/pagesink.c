/*
 * ckpt/pagesink.c — pages.img through batched io_uring writes; see
 * ckpt_pagesink.h. Kept apart from ckpt_image.c (the format) so that the
 * image code does not need to know about loops.
 */
#include "ckpt/pagesink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/loop.h"
#include "runtime/writer.h"
#include "runtime/io.h"

struct sinkbuf {
	struct urs_wchunk c;
	struct pagesink *s;
	uint8_t *data;
	uint32_t fill;
};

struct pagesink {
	struct urs_loop loop;
	bool uring;		 /* the ring is up (else pwrite(2)) */
	bool want_uring;	 /* set it up at the first full buffer */
	struct urs_loop *prev;	 /* the thread's loop before ours */
	struct urs_writer w, hw; /* page data (from CKPT_PAGE_SIZE), header (0) */
	struct sinkbuf bufs[CKPT_SINK_NBUFS], hdr;
	uint32_t cur, inflight;
	uint64_t file_off; /* pwrite mode: where the current buffer goes */
	int err;	   /* first error, sticky */
	uint8_t *mem;
};

static void chunk_done(struct urs_writer *w, struct urs_wchunk *c, int res)
{
	(void) w;
	struct sinkbuf *b = container_of(c, struct sinkbuf, c);
	struct pagesink *s = b->s;
	s->inflight--;
	if (res < 0 && !s->err)
		s->err = res;
	b->fill = 0;
}

/* Until @b is back from the kernel. */
static int wait_buf(struct pagesink *s, struct sinkbuf *b)
{
	while (urs_wchunk_busy(&b->c)) {
		int r = urs_loop_run_once(&s->loop, true);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Hand buffer @b to the kernel (io_uring) or write it (fallback). */
static int submit(struct pagesink *s, struct urs_writer *w, struct sinkbuf *b, int fd)
{
	if (!s->uring) {
		uint64_t off = w == &s->hw ? 0 : s->file_off;
		int r = urs_pwrite_all(fd, b->data, b->fill, off);
		if (w != &s->hw)
			s->file_off += b->fill;
		b->fill = 0;
		return r;
	}
	int r;
	/* the writer's bounds fit the whole ring: -EAGAIN would mean someone
	 * else shares them; drain then */
	while ((r = urs_writer_write(w, &b->c, b->data, b->fill, chunk_done)) == -EAGAIN)
		if ((r = urs_loop_run_once(&s->loop, true)) < 0)
			return r;
	if (r < 0)
		return r;
	s->inflight++;
	return 0;
}

/* The ring, at the first full buffer: an image smaller than one buffer
 * (an idle process: ~15 pages) is written with two pwrite(2) calls at
 * finish, cheaper than setting up a ring (~0.2 ms with the feature probe). */
static void start_uring(struct pagesink *s, int fd)
{
	s->want_uring = false;
	s->prev = urs_loop_current();
	/* a small private ring: at most NBUFS + 1 writes are ever in flight */
	struct urs_loop_opts lo = {.entries = 8};
	if (urs_loop_init(&s->loop, &lo) < 0) {
		urs_tls_loop = s->prev; /* io_uring refused: pwrite(2) */
		return;
	}
	if (urs_writer_init(&s->w, &s->loop, fd, s->file_off,
			    (size_t) CKPT_SINK_NBUFS * CKPT_SINK_BUFSIZE, CKPT_SINK_NBUFS,
			    NULL) < 0 ||
	    urs_writer_init(&s->hw, &s->loop, fd, 0, CKPT_PAGE_SIZE, 1, NULL) < 0) {
		urs_loop_fini(&s->loop);
		urs_tls_loop = s->prev;
		return;
	}
	s->uring = true;
}

static int submit_cur(struct pagesink *s, int fd)
{
	struct sinkbuf *b = &s->bufs[s->cur];
	if (s->want_uring)
		start_uring(s, fd);
	int r = submit(s, &s->w, b, fd);
	if (r == 0 && s->uring)
		r = urs_loop_flush(&s->loop); /* start it now, not when we next block */
	if (r < 0)
		return r;
	s->cur = (s->cur + 1) % CKPT_SINK_NBUFS;
	return s->uring ? wait_buf(s, &s->bufs[s->cur]) : 0;
}

static void drain(struct pagesink *s)
{
	/* the kernel may still be reading our buffers */
	while (s->inflight) {
		int r = urs_loop_run_once(&s->loop, true);
		if (r < 0) {
			if (!s->err)
				s->err = r;
			return;
		}
	}
}

static void sink_free(struct ckpt_pages_writer *w)
{
	struct pagesink *s = w->sink;
	if (!s)
		return;
	w->sink = NULL;
	if (s->uring) {
		drain(s);
		if (s->inflight)
			return; /* the loop failed: leak rather than free memory in use */
		urs_loop_fini(&s->loop);
		urs_tls_loop = s->prev;
	}
	free(s->mem);
	free(s);
}

int ckpt_pagesink_open(struct ckpt_pages_writer *w, int dirfd, struct urs_err *err)
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
	/* the ring and the header page, one allocation (pages touched lazily) */
	uint8_t *mem =
		s ? malloc((size_t) CKPT_SINK_NBUFS * CKPT_SINK_BUFSIZE + CKPT_PAGE_SIZE) : NULL;
	if (!mem) {
		free(s);
		return urs_err_set(err, -ENOMEM, "checkpoint: out of memory");
	}
	s->mem = mem;
	for (uint32_t i = 0; i < CKPT_SINK_NBUFS; i++)
		s->bufs[i] = (struct sinkbuf){.s = s, .data = mem + (size_t) i * CKPT_SINK_BUFSIZE};
	s->hdr = (struct sinkbuf){.s = s,
				  .data = mem + (size_t) CKPT_SINK_NBUFS * CKPT_SINK_BUFSIZE};
	s->file_off = CKPT_PAGE_SIZE;
	w->sink = s;
	s->want_uring = !getenv("URSA_CKPT_NO_URING"); /* (benchmarks compare) */
	return 0;
}

int ckpt_pagesink_append(struct ckpt_pages_writer *w, const void *p, size_t n, uint64_t *off,
			 struct urs_err *err)
{
	struct pagesink *s = w->sink;
	*off = w->off;
	w->crc = ckpt_crc32c(w->crc, p, n);
	w->off += n;
	const uint8_t *src = p;
	while (n && !s->err) {
		struct sinkbuf *b = &s->bufs[s->cur];
		size_t k = CKPT_SINK_BUFSIZE - b->fill;
		if (k > n)
			k = n;
		memcpy(b->data + b->fill, src, k);
		b->fill += (uint32_t) k;
		src += k;
		n -= k;
		if (b->fill == CKPT_SINK_BUFSIZE) {
			int r = submit_cur(s, w->fd);
			if (r < 0 && !s->err)
				s->err = r;
		}
	}
	if (s->err)
		return urs_err_set(err, s->err, "checkpoint: writing pages.img: %s",
				   strerror(-s->err));
	return 0;
}

int ckpt_pagesink_finish(struct ckpt_pages_writer *w, const void *hdr, struct urs_err *err)
{
	struct pagesink *s = w->sink;
	int r = s->err;
	if (!r && s->bufs[s->cur].fill)
		r = submit(s, &s->w, &s->bufs[s->cur], w->fd);
	if (!r) {
		memcpy(s->hdr.data, hdr, CKPT_PAGE_SIZE);
		s->hdr.fill = CKPT_PAGE_SIZE;
		r = submit(s, &s->hw, &s->hdr, w->fd); /* with the last data: one enter */
	}
	if (r < 0 && !s->err)
		s->err = r;
	if (s->uring)
		drain(s);
	r = s->err;
	sink_free(w);
	if (close(w->fd) < 0 && !r)
		r = -errno;
	w->fd = -1;
	if (r)
		return urs_err_set(err, r, "checkpoint: writing pages.img: %s", strerror(-r));
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
