/*
 * actors/gofer/gofer.c — see gofer.h. The connection: the request-buffer pool and
 * its io_uring reads, replies, idle shrinking, and the lifetime of the
 * gofer. Operation handlers live in gofer/ops.c, the inode table in
 * gofer/inode.c.
 *
 * Buffer pool: slot k owns an mmap'd buffer of max_write + 4 KiB (what the
 * kernel requires of every /dev/fuse read) and one read op. One slot serves
 * at first. When a completion arrives and no other slot has a read in the
 * kernel, requests were queueing behind us: one more slot goes into service
 * (up to max_bufs). A periodic idle check shrinks back to one slot when no
 * request came in during a whole period: the extra reads are cancelled and
 * their buffers unmapped, and slot 0's buffer is returned with
 * MADV_DONTNEED, so an idle volume holds no buffer pages.
 * /dev/fuse is opened O_NONBLOCK and is pollable, so io_uring arms a poll
 * and no io-wq thread sleeps in a read.
 */
#include "actors/gofer/gofer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "actors/gofer/int.h"

static void slot_arm(struct gslot *s);
static void slot_next(struct gslot *s, int32_t res);

int gofer_reply2(struct greq *r, const void *a, size_t alen, const void *b, size_t blen)
{
	if (r->uent)
		return gofer_uring_reply(r, 0, a, alen, b, blen);
	struct fuse_out_header oh = {
		.len = (uint32_t) (sizeof(oh) + alen + blen), .error = 0, .unique = r->h->unique};
	struct iovec iov[3] = {{&oh, sizeof(oh)}};
	int n = 1;
	if (alen)
		iov[n++] = (struct iovec){(void *) a, alen};
	if (blen)
		iov[n++] = (struct iovec){(void *) b, blen};
	ssize_t w = writev(r->g->fuse_fd, iov, n);
	if (w < 0) {
		/* ENOENT: the request was interrupted and is gone; the handler
		 * may undo (r->reply_err), the caller sends nothing else */
		r->g->st.replies_failed++;
		r->reply_err = -errno;
	}
	return 0;
}

int gofer_reply(struct greq *r, int err, const void *data, size_t len)
{
	if (err) {
		struct fuse_out_header oh = {
			.len = sizeof(oh), .error = err, .unique = r->h->unique};
		r->g->st.errors++;
		if (r->uent)
			return gofer_uring_reply(r, err, NULL, 0, NULL, 0);
		if (write(r->g->fuse_fd, &oh, sizeof(oh)) < 0) {
			r->g->st.replies_failed++;
			r->reply_err = -errno;
		}
		return 0;
	}
	return gofer_reply2(r, data, len, NULL, 0);
}

static bool any_reading(const struct urs_gofer *g, const struct gslot *except)
{
	for (uint32_t k = 0; k < g->nslots; k++)
		if (&g->slots[k] != except && g->slots[k].reading)
			return true;
	return false;
}

static bool any_busy(const struct urs_gofer *g)
{
	for (uint32_t k = 0; k < g->nslots; k++)
		if (g->slots[k].reading || g->slots[k].async)
			return true;
	return false;
}

static void slot_release(struct gslot *s)
{
	if (s->buf) {
		munmap(s->buf, s->g->bufsz);
		s->buf = NULL;
	}
}

static void handle(struct urs_gofer *g, struct gslot *s, size_t n)
{
	if (n < sizeof(struct fuse_in_header))
		return;
	/* a copy: handlers reuse the buffer for their reply data */
	struct fuse_in_header hc;
	memcpy(&hc, s->buf, sizeof(hc));
	const struct fuse_in_header *h = &hc;
	if (h->len != n)
		return; /* the kernel always gives whole requests */
	struct greq r = {.g = g,
			 .h = h,
			 .in = s->buf + sizeof(*h),
			 .inlen = (uint32_t) (n - sizeof(*h)),
			 .buf = s->buf,
			 .bufsz = g->bufsz,
			 .slot = s};
	g->st.requests++;
	if (h->opcode < URS_ARRAY_SIZE(g->st.by_op))
		g->st.by_op[h->opcode]++;
	int res = gofer_dispatch(&r);
	if (res < 0)
		gofer_reply(&r, res, NULL, 0);
	if (unlikely(g->o.trace))
		fprintf(stderr, "gofer: op %u unique %llu node %llu len %u -> %d\n", h->opcode,
			(unsigned long long) h->unique, (unsigned long long) h->nodeid, h->len,
			res);
	if (unlikely(h->opcode == FUSE_INIT))
		gofer_uring_start(g); /* if INIT accepted FUSE_OVER_IO_URING */
}

/*
 * After a reply, the requester (woken by it) often has its next request
 * queued already: read it at once with a plain non-blocking read instead of
 * another io_uring read (poll arm, task work, completion), a bounded number
 * of times per completion so the loop's other work is not starved. Returns
 * the last read's result (1 if the bound was hit or the slot is busy).
 */
#define GOFER_DRAIN 32

static int32_t drain(struct urs_gofer *g, struct gslot *s)
{
	for (int k = 0; k < GOFER_DRAIN; k++) {
		if (s->async || g->stopping || s->idx >= g->active)
			return 1;
		ssize_t n = read(g->fuse_fd, s->buf, g->bufsz);
		if (n <= 0)
			return n == 0 ? 0 : -errno;
		g->st.drained++;
		handle(g, s, (size_t) n);
	}
	return 1;
}

static void read_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct gslot *s = container_of(op, struct gslot, op);
	struct urs_gofer *g = s->g;
	s->reading = false;
	if (res > 0) {
		/* backlog: requests were waiting and no other read was posted */
		if (!g->stopping && !any_reading(g, s) && g->active < g->nslots &&
		    s->idx + 1 == g->active) {
			g->active++;
			g->st.grows++;
			slot_arm(&g->slots[g->active - 1]);
		}
		handle(g, s, (size_t) res);
		res = drain(g, s);
	}
	if (res == 0 || res == -ENODEV ||
	    (res < 0 && res != -ECANCELED && res != -EAGAIN && res != -EINTR && res != -ENOENT)) {
		/* unmounted (ENODEV) or a broken connection: stop serving */
		g->stopping = true;
	}
	if (s->async)
		return; /* back in service when its host operation completes */
	slot_next(s, res);
}

/* After a request (or a failed read): re-arm the slot, or retire it. */
static void slot_next(struct gslot *s, int32_t res)
{
	struct urs_gofer *g = s->g;
	if (g->dead || g->stopping || s->idx >= g->active) {
		if (g->stopping)
			gofer_uring_stop(g);
		slot_release(s);
		if (g->stopping && !any_busy(g)) {
			g->dead = true;
			if (urs_timer_busy(&g->idle))
				urs_timer_cancel(g->loop, &g->idle);
		}
		return;
	}
	if (res == -ECANCELED && g->shrinking)
		madvise(s->buf, g->bufsz, MADV_DONTNEED);
	slot_arm(s);
}

static void async_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct gslot *s = container_of(op, struct gslot, op);
	struct urs_gofer *g = s->g;
	s->async = false;
	struct greq r = {.g = g,
			 .h = &s->ahdr,
			 .buf = s->buf,
			 .bufsz = g->bufsz,
			 .slot = s,
			 .uent = s->uent};
	if (res < 0) {
		gofer_reply(&r, res, NULL, 0);
	} else if (s->akind == GOFER_ASYNC_READ) {
		g->st.bytes_read += (uint64_t) res;
		gofer_reply(&r, 0, s->buf, (size_t) res);
	} else if (s->akind == GOFER_ASYNC_WRITE) {
		g->st.bytes_written += (uint64_t) res;
		struct fuse_write_out out = {.size = (uint32_t) res};
		gofer_reply(&r, 0, &out, sizeof(out));
	} else {
		gofer_reply(&r, 0, NULL, 0);
	}
	if (s->uent) {
		gofer_uring_async_done(s->uent); /* an io_uring entry: commit */
		return;
	}
	slot_next(s, 0);
}

struct io_uring_sqe *gofer_async_sqe(struct greq *r)
{
	if (!r->slot || r->slot->async)
		return NULL;
	return urs_op_sqe(&r->slot->op);
}

int gofer_async_submit(struct greq *r, enum gofer_async_kind kind)
{
	struct gslot *s = r->slot;
	s->ahdr = *r->h;
	s->akind = (uint8_t) kind;
	s->async = true;
	s->op.flags = 0; /* a reply is owed: keeps the loop alive */
	int rc = urs_submit(r->g->loop, &s->op, async_cb);
	if (rc < 0) {
		s->async = false;
		return rc;
	}
	return GOFER_ASYNC;
}

static void slot_arm(struct gslot *s)
{
	struct urs_gofer *g = s->g;
	if (!s->buf) {
		void *p = mmap(NULL, g->bufsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED) {
			/* no memory for another slot: serve with what we have */
			if (s->idx + 1 == g->active && g->active > 1)
				g->active--;
			return;
		}
		s->buf = p;
	}
	io_uring_prep_read(urs_op_sqe(&s->op), g->fuse_fd, s->buf, (unsigned) g->bufsz, 0);
	s->op.flags = g->o.weak ? URS_OPF_WEAK : 0;
	s->reading = true;
	urs_submit(g->loop, &s->op, read_cb);
}

static void idle_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct urs_gofer *g = container_of(t, struct urs_gofer, idle);
	if (res < 0)
		return;
	if (g->stopping) {
		urs_timer_cancel(loop, t);
		return;
	}
	g->shrinking = false;
	if (g->st.requests != g->last_req_turn) {
		g->last_req_turn = g->st.requests;
		g->idle_shrunk = false;
		return;
	}
	if (g->idle_shrunk)
		return;
	gofer_itable_compact(&g->it);
	gofer_uring_idle(g);
	/* idle for a whole period: back to one slot. Slot 0's pages are
	 * returned when its cancelled read completes and before it is
	 * re-armed (the kernel only writes it while a read is posted). */
	g->idle_shrunk = true;
	bool any = false;
	for (uint32_t k = 0; k < g->nslots; k++) {
		struct gslot *s = &g->slots[k];
		if (!s->buf)
			continue;
		if (s->reading) {
			any = true;
			urs_cancel(loop, &s->op);
		} else if (k >= 1 && !s->async) {
			slot_release(s);
		} /* an async slot retires itself when its operation completes */
	}
	if (g->active > 1)
		g->st.shrinks++;
	g->active = 1;
	g->shrinking = any;
}

int urs_gofer_start(struct urs_loop *loop, int fuse_fd, int root_fd,
		    const struct urs_gofer_opts *opts, struct urs_gofer **out)
{
	struct urs_gofer *g = calloc(1, sizeof(*g));
	if (!g) {
		close(fuse_fd);
		return -ENOMEM;
	}
	g->loop = loop;
	g->fuse_fd = fuse_fd;
	if (opts)
		g->o = *opts;
	if (g->o.quota_bytes)
		g->o.no_passthrough = true; /* every write is seen (docs/gofer.md "Quotas") */
	if (!g->o.max_write)
		g->o.max_write = 128u << 10;
	if (g->o.max_write < 4096)
		g->o.max_write = 4096;
	if (g->o.max_write > (1u << 20))
		g->o.max_write = 1u << 20;
	g->o.max_write &= ~4095u;
	g->nslots = g->o.max_bufs ? g->o.max_bufs : 8;
	if (g->nslots > GOFER_MAX_SLOTS)
		g->nslots = GOFER_MAX_SLOTS;
	if (!g->o.idle_ns)
		g->o.idle_ns = 2000000000ull;
	double at = g->o.attr_timeout_set ? g->o.attr_timeout : 1.0;
	if (at < 0)
		at = 0;
	g->attr_sec = (uint64_t) at;
	g->attr_nsec = (uint32_t) ((at - (double) g->attr_sec) * 1e9);
	g->bufsz = g->o.max_write + 4096;
	g->root_fd = -1;
	int r = gofer_itable_init(&g->it, g->o.max_inodes);
	if (r < 0)
		goto fail;
	if (!g->o.max_open)
		g->o.max_open = GOFER_MAX_OPEN;
	gofer_itable_limits(&g->it, g->o.fd_cache,
			    g->o.budget ? g->o.budget->max_pinned : g->o.max_pinned);
	if (g->o.budget)
		g->it.shared_pinned = &g->o.budget->pinned;
	g->it.no_handles = g->o.no_handles;
	int fd = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto fail;
	}
	r = gofer_inode_root(&g->it, fd);
	if (r < 0) {
		close(fd);
		goto fail;
	}
	g->root_fd = fd;
	g->root_dev = g->it.root->dev;
	r = gofer_quota_init(g); /* usage at start: a bounded walk */
	if (r < 0)
		goto fail;
	/* the fds are bounded by the caps above (docs/gofer.md "Inodes"), but
	 * several volumes' caps add up: do not let the soft limit bite first */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int fl = fcntl(fuse_fd, F_GETFL);
	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(fuse_fd, F_SETFL, fl | O_NONBLOCK);
	for (uint32_t k = 0; k < g->nslots; k++)
		g->slots[k] = (struct gslot){.g = g, .idx = k};
	g->active = 1;
	slot_arm(&g->slots[0]);
	if (!g->slots[0].reading) {
		r = -ENOMEM;
		goto fail;
	}
	r = urs_timer_start(loop, &g->idle, g->o.idle_ns, g->o.idle_ns, idle_cb);
	if (r < 0) {
		/* serve without shrinking */
		r = 0;
	}
	*out = g;
	return 0;
fail:
	gofer_itable_fini(&g->it, NULL, NULL);
	close(fuse_fd);
	free(g);
	return r;
}

bool urs_gofer_done(const struct urs_gofer *g)
{
	return g->dead && !any_busy(g) && !urs_timer_busy(&g->idle) && !gofer_uring_busy(g);
}

void urs_gofer_stop(struct urs_gofer *g)
{
	g->stopping = true;
	gofer_uring_stop(g);
	for (uint32_t k = 0; k < g->nslots; k++)
		if (g->slots[k].reading)
			urs_cancel(g->loop, &g->slots[k].op);
	if (!any_busy(g)) {
		g->dead = true;
		if (urs_timer_busy(&g->idle))
			urs_timer_cancel(g->loop, &g->idle);
	}
}

static void backing_close(struct ginode *i, void *ctx)
{
	struct urs_gofer *g = ctx;
	if (i->backing_id > 0) {
		uint32_t id = (uint32_t) i->backing_id;
		ioctl(g->fuse_fd, URS_FUSE_DEV_IOC_BACKING_CLOSE, &id);
	}
}

void urs_gofer_free(struct urs_gofer *g)
{
	if (!g)
		return;
	for (uint32_t k = 0; k < g->nslots; k++)
		slot_release(&g->slots[k]);
	gofer_uring_free(g); /* its ring holds references to the fuse fd */
	gofer_itable_fini(&g->it, backing_close, g);
	if (g->fuse_fd >= 0)
		close(g->fuse_fd);
	free(g);
}

void urs_gofer_get_stats(const struct urs_gofer *g, struct urs_gofer_stats *st)
{
	*st = g->st;
	st->bufs_active = g->active;
	st->bufs_max = g->nslots;
	st->inodes = g->it.live;
	st->open_files = g->open_files;
	st->fds = gofer_itable_fds(&g->it);
	st->fd_reopens = g->it.reopens;
	st->fd_evictions = g->it.evictions;
	st->stale = g->it.stale;
	st->enfile_pinned = g->it.refused;
	st->passthrough = g->passthrough;
	st->proto_minor = g->minor;
	st->quota_bytes_used = g->q_bytes;
	st->quota_inodes_used = g->q_inodes;
	gofer_uring_stats(g, st);
}

size_t urs_gofer_mem(const struct urs_gofer *g)
{
	size_t m = sizeof(*g) + gofer_itable_mem(&g->it) + gofer_uring_mem(g);
	for (uint32_t k = 0; k < g->nslots; k++) {
		const struct gslot *s = &g->slots[k];
		if (!s->buf)
			continue;
		size_t pages = (g->bufsz + 4095) / 4096;
		unsigned char vec[(1u << 20) / 4096 + 2];
		if (pages <= sizeof(vec) && mincore(s->buf, g->bufsz, vec) == 0) {
			for (size_t p = 0; p < pages; p++)
				m += (vec[p] & 1) ? 4096 : 0;
		}
	}
	return m;
}
