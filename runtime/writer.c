/*
 * runtime/writer.c — see writer.h.
 */
#include "runtime/writer.h"

#include <sys/stat.h>

int urs_writer_init(struct urs_writer *w, struct urs_loop *loop, int fd, uint64_t off,
		    size_t max_bytes, uint32_t max_ops, urs_writer_ready_cb on_ready)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	*w = (struct urs_writer){
		.loop = loop,
		.fd = fd,
		.seekable = S_ISREG(st.st_mode) || S_ISBLK(st.st_mode),
		.off = off,
		.max_bytes = max_bytes ? max_bytes : (4u << 20),
		.max_ops = max_ops ? max_ops : 64,
		.on_ready = on_ready,
	};
	return 0;
}

static void chunk_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

static int issue(struct urs_writer *w, struct urs_wchunk *c)
{
	struct io_uring_sqe *sqe = urs_op_sqe(&c->op);
	io_uring_prep_write(sqe, w->fd, c->buf + c->done, c->len - c->done,
			    w->seekable ? c->off + c->done : (uint64_t) -1);
	return urs_submit(w->loop, &c->op, chunk_cb);
}

static struct urs_wchunk *wait_pop(struct urs_writer *w)
{
	struct urs_wchunk *n = w->wait_head;
	if (n) {
		w->wait_head = n->next;
		if (!w->wait_head)
			w->wait_tail = NULL;
	}
	return n;
}

static void settle(struct urs_writer *w, struct urs_wchunk *c, int res)
{
	w->inflight_ops--;
	w->inflight_bytes -= c->len;
	if (res >= 0) {
		w->bytes_done += c->len;
		w->chunks_done++;
	}
	c->busy = false;
	c->cb(w, c, res);
}

static void finish(struct urs_writer *w, struct urs_wchunk *c, int res)
{
	settle(w, c, res);
	if (!w->seekable) { /* ordered: start the next chunk, or fail them all */
		struct urs_wchunk *n;
		while ((n = wait_pop(w))) {
			int r = w->error ? w->error : issue(w, n);
			if (r == 0)
				break;
			if (!w->error)
				w->error = r;
			settle(w, n, r);
		}
	}
	if (w->want_ready && w->inflight_bytes <= w->max_bytes / 2 &&
	    w->inflight_ops < w->max_ops) {
		w->want_ready = false;
		if (w->on_ready)
			w->on_ready(w);
	}
}

static void chunk_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct urs_wchunk *c = container_of(op, struct urs_wchunk, op);
	struct urs_writer *w = c->w;
	if (res > 0 && c->done + (uint32_t) res < c->len) {
		c->done += (uint32_t) res; /* short write: continue where it stopped */
		int r = issue(w, c);
		if (r == 0)
			return;
		res = r;
	}
	if (res == 0 && c->len)
		res = -EIO; /* zero-byte write of a non-empty chunk: no progress */
	if (res < 0) {
		if (!w->error)
			w->error = res;
		finish(w, c, res);
		return;
	}
	finish(w, c, (int) c->len);
}

int urs_writer_write(struct urs_writer *w, struct urs_wchunk *c, const void *buf, uint32_t len,
		     urs_wchunk_cb cb)
{
	if (w->error)
		return w->error;
	if (c->busy)
		return -EBUSY;
	if (w->inflight_ops &&
	    (w->inflight_ops >= w->max_ops || w->inflight_bytes + len > w->max_bytes)) {
		w->want_ready = true;
		return -EAGAIN;
	}
	c->w = w;
	c->buf = buf;
	c->len = len;
	c->done = 0;
	c->off = w->off;
	c->cb = cb;
	c->busy = true;
	c->next = NULL;
	c->op.state = URS_OP_IDLE;
	c->op.flags = 0;
	w->off += len;
	w->inflight_ops++;
	w->inflight_bytes += len;
	if (!w->seekable && w->inflight_ops > 1) {
		if (w->wait_tail)
			w->wait_tail->next = c;
		else
			w->wait_head = c;
		w->wait_tail = c;
		return 0;
	}
	return issue(w, c);
}
