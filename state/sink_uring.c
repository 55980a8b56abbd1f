/*
 * state/sink_uring.c — io_uring file sink for the encoder and the statefile
 * writer: a ring of large buffers handed to runtime/writer.c. See
 * sink_uring.h for the ownership and loop-driving rules.
 */
#include "state/sink_uring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void chunk_done(struct urs_writer *w, struct urs_wchunk *c, int res)
{
	(void) w;
	struct urs_st_ubuf *b = container_of(c, struct urs_st_ubuf, c);
	struct urs_st_usink *s = b->s;
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
static int wait_buf(struct urs_st_usink *s, struct urs_st_ubuf *b)
{
	while (urs_wchunk_busy(&b->c)) {
		int r = urs_loop_run_once(s->loop, true);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Hand the current buffer to the writer and move on to the next one. */
static int submit_cur(struct urs_st_usink *s)
{
	struct urs_st_ubuf *b = &s->bufs[s->cur];
	int r;
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
	/* start the write now rather than when we next block */
	if ((r = urs_loop_flush(s->loop)) < 0)
		return r;
	s->cur = (s->cur + 1) % s->nbufs;
	return wait_buf(s, &s->bufs[s->cur]);
}

int urs_st_usink_init(struct urs_st_usink *s, struct urs_loop *loop, int fd, uint64_t off,
		      uint32_t nbufs, uint32_t bufsize)
{
	if (!nbufs)
		nbufs = 4;
	if (!bufsize)
		bufsize = 1u << 20;
	if (nbufs > URS_ST_USINK_MAXBUFS)
		return -EINVAL;
	*s = (struct urs_st_usink){.loop = loop, .nbufs = nbufs, .bufsize = bufsize};
	int r = urs_writer_init(&s->w, loop, fd, off, (size_t) nbufs * bufsize, nbufs, NULL);
	if (r < 0)
		return r;
	uint8_t *mem = malloc((size_t) nbufs * bufsize);
	if (!mem)
		return -ENOMEM;
	for (uint32_t i = 0; i < nbufs; i++) {
		s->bufs[i].s = s;
		s->bufs[i].data = mem + (size_t) i * bufsize;
	}
	return 0;
}

int urs_st_usink_write(void *ctx, const void *buf, size_t len)
{
	struct urs_st_usink *s = ctx;
	const uint8_t *src = buf;
	if (s->err)
		return s->err;
	while (len) {
		struct urs_st_ubuf *b = &s->bufs[s->cur];
		size_t n = s->bufsize - b->fill;
		if (n > len)
			n = len;
		memcpy(b->data + b->fill, src, n);
		b->fill += (uint32_t) n;
		src += n;
		len -= n;
		if (b->fill == s->bufsize) {
			int r = submit_cur(s);
			if (r < 0 && !s->err)
				s->err = r;
			if (s->err)
				return s->err;
		}
	}
	return 0;
}

int urs_st_usink_flush(struct urs_st_usink *s)
{
	int r = 0;
	if (!s->err && s->bufs[s->cur].fill)
		r = submit_cur(s);
	if (r < 0 && !s->err)
		s->err = r;
	/* whatever happened, wait for every chunk: the kernel may still be
	 * reading our buffers */
	while (s->inflight) {
		r = urs_loop_run_once(s->loop, true);
		if (r < 0) {
			if (!s->err)
				s->err = r;
			break;
		}
	}
	return s->err;
}

void urs_st_usink_free(struct urs_st_usink *s)
{
	while (s->inflight && urs_loop_run_once(s->loop, true) == 0)
		;
	if (s->inflight)
		return; /* the loop failed: leak rather than free memory in use */
	free(s->bufs[0].data);
	s->bufs[0].data = NULL;
}
