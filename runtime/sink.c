/*
 * runtime/sink.c — a synchronous producer's file through a ring of buffers
 * and batched io_uring writes, or pwrite(2) (runtime/sink.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/io.h"
#include "runtime/loop.h"
#include "runtime/sink.h"

static void chunk_done(struct urs_writer *w, struct urs_wchunk *c, int res)
{
	(void) w;
	struct urs_sink_buf *b = container_of(c, struct urs_sink_buf, c);
	struct urs_sink *s = b->s;
	s->inflight--;
	if (res < 0) {
		if (!s->err)
			s->err = res;
	} else {
		s->written += (uint64_t) res;
	}
	b->fill = 0;
}

/* Run the loop until @b is back from the kernel (or an error stops us). */
static int wait_buf(struct urs_sink *s, struct urs_sink_buf *b)
{
	while (s->loop && urs_wchunk_busy(&b->c)) {
		int r = urs_loop_run_once(s->loop, true);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Hand the current buffer to the kernel and move on to the next one. */
static int submit_cur(struct urs_sink *s)
{
	struct urs_sink_buf *b = &s->bufs[s->cur];
	int r;
	if (!s->loop) {
		r = s->off == URS_SINK_STREAM ? urs_write_all(s->fd, b->data, b->fill)
					      : urs_pwrite_all(s->fd, b->data, b->fill, s->off);
		if (r == 0) {
			if (s->off != URS_SINK_STREAM)
				s->off += b->fill;
			s->written += b->fill;
		}
		b->fill = 0;
		return r;
	}
	/* The writer is sized for all our buffers, so -EAGAIN only happens if
	 * someone else shares its bound; let completions drain then. */
	while ((r = urs_writer_write(&s->w, &b->c, b->data, b->fill, chunk_done)) == -EAGAIN) {
		r = urs_loop_run_once(s->loop, true);
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	s->inflight++;
	s->off += b->fill;
	/* start the write now rather than when we next block */
	if ((r = urs_loop_flush(s->loop)) < 0)
		return r;
	s->cur = (s->cur + 1) % s->nbufs;
	return wait_buf(s, &s->bufs[s->cur]);
}

int urs_sink_init(struct urs_sink *s, struct urs_loop *loop, int fd, uint64_t off, uint32_t nbufs,
		  uint32_t bufsize)
{
	if (!nbufs)
		nbufs = 4;
	if (!bufsize)
		bufsize = 1u << 20;
	if (nbufs > URS_SINK_MAXBUFS)
		return -EINVAL;
	*s = (struct urs_sink){.fd = fd, .off = off, .nbufs = nbufs, .bufsize = bufsize};
	/* one allocation; its pages are touched only as they fill */
	uint8_t *mem = malloc((size_t) nbufs * bufsize);
	if (!mem)
		return -ENOMEM;
	for (uint32_t i = 0; i < nbufs; i++) {
		s->bufs[i].s = s;
		s->bufs[i].data = mem + (size_t) i * bufsize;
	}
	int r = loop ? urs_sink_use_loop(s, loop) : 0;
	if (r < 0) {
		free(mem);
		s->bufs[0].data = NULL;
	}
	return r;
}

int urs_sink_use_loop(struct urs_sink *s, struct urs_loop *loop)
{
	if (s->off == URS_SINK_STREAM)
		return -ESPIPE; /* writes in flight could land out of order */
	int r = urs_writer_init(&s->w, loop, s->fd, s->off, (size_t) s->nbufs * s->bufsize,
				s->nbufs, NULL);
	if (r == 0)
		s->loop = loop;
	return r;
}

int urs_sink_write(void *ctx, const void *buf, size_t len)
{
	struct urs_sink *s = ctx;
	const uint8_t *src = buf;
	if (s->err)
		return s->err;
	while (len) {
		struct urs_sink_buf *b = &s->bufs[s->cur];
		size_t n = s->bufsize - b->fill;
		if (n > len)
			n = len;
		memcpy(b->data + b->fill, src, n);
		b->fill += (uint32_t) n;
		src += n;
		len -= n;
		if (b->fill == s->bufsize) {
			if (s->on_full)
				s->on_full(s, s->on_full_ctx);
			int r = submit_cur(s);
			if (r < 0 && !s->err)
				s->err = r;
			if (s->err)
				return s->err;
		}
	}
	return 0;
}

/* whatever happened, wait for every chunk: the kernel may still be reading
 * our buffers */
static void drain(struct urs_sink *s)
{
	while (s->loop && s->inflight) {
		int r = urs_loop_run_once(s->loop, true);
		if (r < 0) {
			if (!s->err)
				s->err = r;
			return;
		}
	}
}

int urs_sink_flush(struct urs_sink *s)
{
	int r = 0;
	if (!s->err && s->bufs[s->cur].fill)
		r = submit_cur(s);
	if (r < 0 && !s->err)
		s->err = r;
	drain(s);
	return s->err;
}

void urs_sink_free(struct urs_sink *s)
{
	drain(s);
	if (s->inflight)
		return; /* the loop failed: leak rather than free memory in use */
	free(s->bufs[0].data);
	s->bufs[0].data = NULL;
}
