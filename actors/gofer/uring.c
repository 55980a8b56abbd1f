/*
 * actors/gofer/uring.c — FUSE over io_uring for the gofer: the transport
 * that replaces read(/dev/fuse) + write(/dev/fuse) with registered ring
 * entries (docs/gofer.md, "FUSE over io_uring"). gofer.c keeps the classic
 * read pool running next to it: FORGET and INTERRUPT always come through
 * /dev/fuse, and if anything here fails the kernel falls back to it.
 *
 * Kernel rules (fs/fuse/dev_uring.c, 6.14+), and what we do about them:
 *  - The connection uses io_uring only if INIT offered FUSE_OVER_IO_URING
 *    (the fuse module's enable_uring parameter) and we accepted it. From
 *    then on the kernel HOLDS every request until each queue — one per
 *    possible CPU, a request goes to the queue of the CPU it was issued on
 *    — has an entry registered (or a REGISTER fails, which turns io_uring
 *    off for the connection). So everything that can fail (ring, eventfd,
 *    the first buffers) is set up before we accept the flag, in
 *    gofer_uring_offer(), and the first entry of every queue is registered
 *    right after the INIT reply.
 *  - IORING_OP_URING_CMD carries its command in the SQE's last 80 bytes, so
 *    the ring must have 128-byte SQEs (IORING_SETUP_SQE128). The supervisor's
 *    loop has 64-byte SQEs and caller-owned 64-byte SQE records; rather than
 *    double every SQE of every actor, the gofer has a small ring of its own
 *    (SINGLE_ISSUER | DEFER_TASKRUN) with an eventfd registered: the kernel
 *    signals it when work for the ring is queued, and the loop has a read on
 *    that eventfd like on any other fd. When it completes we enter our ring
 *    (which runs the queued work: the kernel copies requests into our
 *    buffers only then, in our thread), serve every completion, submit the
 *    commits, and re-arm the read.
 *  - An entry is a header buffer (struct urs_fuse_uring_req_header: in/out
 *    header and the opcode's fixed argument) and a payload buffer of at
 *    least the connection's max_write. REGISTER hands an entry to the
 *    kernel; its completion carries a request; COMMIT_AND_FETCH returns the
 *    reply and hands the entry back in one step. There is no command to take
 *    an entry back: entries live until the connection ends.
 *
 * Growth: one entry per queue at first. When a request completes on an
 * entry and no other entry of its queue is left waiting in the kernel,
 * requests may be queueing there: one more entry is registered for that
 * queue (the classic pool's rule), up to max_bufs / queues (at least one).
 * Since the kernel cannot give entries back, shrinking returns memory
 * instead: after an idle period the payload pages of every entry waiting in
 * the kernel are dropped (MADV_DONTNEED). That is safe because with
 * DEFER_TASKRUN the kernel only writes a request into an entry while we are
 * inside io_uring_enter() on our ring, and we reap every completion before
 * returning to the loop: an entry waiting in the kernel holds no data.
 *
 * A request's layout differs from /dev/fuse's: the in header and the fixed
 * argument sit in the header buffer, the rest in the payload. Each payload
 * buffer has a spare page in front of it, so the fixed argument is copied
 * just before the payload and the handlers in gofer/ops.c see the usual
 * contiguous argument block; their replies go to the entry (gofer_reply ->
 * gofer_uring_reply: out header in the header buffer, data at the start of
 * the payload) instead of a write(2). Asynchronous host operations use the
 * entry's embedded gslot, exactly like a classic slot.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "actors/gofer/int.h"
#include "runtime/compat.h"
#include "runtime/probe.h"

#define GU_MAX_QUEUES 4096
#define GU_STAGING    4096 /* room for the fixed argument in front of the payload */
#define GU_REAP	      32

enum gu_state {
	GU_NONE = 0, /* not registered yet */
	GU_KERNEL,   /* REGISTER or COMMIT_AND_FETCH posted: waiting for a request */
	GU_USER,     /* holds a request we are answering */
	GU_ASYNC,    /* its request waits for a host operation (slot.op) */
	GU_LOST,     /* the kernel no longer has it (connection gone, refused) */
};

struct gofer_uent {
	struct gslot slot; /* slot.buf: the payload; slot.op: its host operation */
	struct gofer_uring *u;
	struct urs_fuse_uring_req_header *hdr;
	unsigned char *mem; /* mmap: GU_STAGING bytes, then the payload */
	struct iovec iov[2];
	uint64_t commit_id;
	uint16_t qid;
	uint8_t state;
	bool replied;
	bool touched; /* payload pages may be resident */
};

struct gofer_uring {
	struct urs_gofer *g;
	struct io_uring ring;
	int efd;
	uint64_t efd_val;
	struct urs_op efd_op; /* the loop's read of efd */
	uint32_t nq, per_q, cap;
	struct gofer_uent *ents;		/* [q * per_q + k], k < nreg[q] */
	struct urs_fuse_uring_req_header *hdrs; /* one per entry */
	uint16_t *nreg, *navail;		/* per queue: registered, waiting in the kernel */
	size_t memsz;
	uint32_t pending; /* SQEs prepared and not submitted yet */
	bool ring_ok, started, stopping, gone, failed, in_pump;
	uint64_t requests, grows;
};

/* Number of possible CPUs (the kernel's num_possible_cpus(): one queue
 * each), or -errno. Too few queues registered would hold every request
 * forever, so no guessing: unreadable means no io_uring. */
static int possible_cpus(void)
{
	char buf[4096];
	int fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	int count = 0;
	for (char *p = buf; *p && *p != '\n';) {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p || a < 0)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			b = strtol(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				return -EINVAL;
			p = end;
		}
		count += (int) (b - a + 1);
		if (count > GU_MAX_QUEUES)
			return -E2BIG;
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	return count ? count : -EINVAL;
}

static void uring_free(struct gofer_uring *u)
{
	if (u->ring_ok)
		io_uring_queue_exit(&u->ring); /* cancels our commands in the kernel */
	if (u->efd >= 0)
		close(u->efd);
	for (uint32_t k = 0; u->ents && k < u->cap; k++)
		if (u->ents[k].mem)
			munmap(u->ents[k].mem, u->memsz);
	free(u->ents);
	free(u->hdrs);
	free(u->nreg);
	free(u->navail);
	free(u);
}

/* A new entry for queue @q (buffers mapped, not registered), or NULL. */
static struct gofer_uent *ent_new(struct gofer_uring *u, uint16_t q)
{
	if (u->nreg[q] >= u->per_q)
		return NULL;
	uint32_t idx = q * u->per_q + u->nreg[q];
	struct gofer_uent *e = &u->ents[idx];
	void *m = mmap(NULL, u->memsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	e->mem = m;
	e->u = u;
	e->hdr = &u->hdrs[idx];
	e->qid = q;
	e->state = GU_NONE;
	e->slot =
		(struct gslot){.g = u->g, .buf = e->mem + GU_STAGING, .idx = UINT32_MAX, .uent = e};
	e->iov[0] = (struct iovec){e->hdr, sizeof(*e->hdr)};
	e->iov[1] = (struct iovec){e->slot.buf, u->g->bufsz};
	u->nreg[q]++;
	return e;
}

static struct io_uring_sqe *get_sqe(struct gofer_uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	if (!sqe && io_uring_submit(&u->ring) >= 0) {
		u->pending = 0;
		sqe = io_uring_get_sqe(&u->ring);
	}
	return sqe;
}

/* Hand @e to the kernel: REGISTER (first time) or COMMIT_AND_FETCH (with
 * the reply written into it). */
static void ent_post(struct gofer_uent *e, bool commit)
{
	struct gofer_uring *u = e->u;
	struct io_uring_sqe *sqe = get_sqe(u);
	if (!sqe) {
		e->state = GU_LOST; /* cannot happen: one SQE per entry fits */
		return;
	}
	struct urs_fuse_uring_cmd_req cmd = {.qid = e->qid};
	if (commit)
		cmd.commit_id = e->commit_id;
	urs_prep_uring_cmd(sqe, u->g->fuse_fd,
			   commit ? URS_FUSE_IO_URING_CMD_COMMIT_AND_FETCH
				  : URS_FUSE_IO_URING_CMD_REGISTER,
			   &cmd, sizeof(cmd));
	if (!commit) {
		sqe->addr = (uint64_t) (uintptr_t) e->iov;
		sqe->len = 2;
	}
	io_uring_sqe_set_data(sqe, e);
	e->state = GU_KERNEL;
	u->navail[e->qid]++;
	u->pending++;
}

uint64_t gofer_uring_offer(struct urs_gofer *g, uint64_t kflags)
{
	uint64_t bit = (uint64_t) URS_FUSE_OVER_IO_URING_FLAG2 << 32;
	if (!(kflags & bit) || g->o.no_uring || g->u ||
	    !urs_has(URS_FEAT_URING_CMD | URS_FEAT_DEFER_TASKRUN))
		return 0;
	struct stat st;
	if (fstat(g->fuse_fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(10, 229))
		return 0; /* not /dev/fuse (the raw tests' socket) */
	int nq = possible_cpus();
	if (nq <= 0)
		return 0;
	struct gofer_uring *u = calloc(1, sizeof(*u));
	if (!u)
		return 0;
	u->g = g;
	u->efd = -1;
	u->nq = (uint32_t) nq;
	u->per_q = g->nslots / u->nq ? g->nslots / u->nq : 1;
	u->cap = u->nq * u->per_q;
	u->memsz = GU_STAGING + g->bufsz;
	u->ents = calloc(u->cap, sizeof(*u->ents));
	u->hdrs = calloc(u->cap, sizeof(*u->hdrs));
	u->nreg = calloc(u->nq, sizeof(*u->nreg));
	u->navail = calloc(u->nq, sizeof(*u->navail));
	if (!u->ents || !u->hdrs || !u->nreg || !u->navail)
		goto fail;
	unsigned entries = 4;
	while (entries < u->cap)
		entries <<= 1;
	struct io_uring_params p = {.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
					     IORING_SETUP_DEFER_TASKRUN |
					     IORING_SETUP_TASKRUN_FLAG};
	if (io_uring_queue_init_params(entries, &u->ring, &p) < 0)
		goto fail;
	u->ring_ok = true;
	u->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->efd < 0 || io_uring_register_eventfd(&u->ring, u->efd) < 0)
		goto fail;
	for (uint32_t q = 0; q < u->nq; q++)
		if (!ent_new(u, (uint16_t) q))
			goto fail;
	g->u = u;
	return bit;
fail:
	uring_free(u);
	return 0;
}

static void efd_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

static void efd_arm(struct gofer_uring *u)
{
	if (u->stopping || u->gone || urs_op_busy(&u->efd_op))
		return;
	io_uring_prep_read(urs_op_sqe(&u->efd_op), u->efd, &u->efd_val, sizeof(u->efd_val), 0);
	u->efd_op.flags = u->g->o.weak ? URS_OPF_WEAK : 0;
	urs_submit(u->g->loop, &u->efd_op, efd_cb);
}

static void serve(struct gofer_uring *u, struct gofer_uent *e)
{
	struct urs_gofer *g = u->g;
	struct fuse_in_header h;
	memcpy(&h, e->hdr->in_out, sizeof(h));
	uint32_t psz = e->hdr->ring_ent_in_out.payload_sz;
	e->commit_id = e->hdr->ring_ent_in_out.commit_id;
	if (g->o.req_cpu)
		g->o.req_cpu(g->o.req_cpu_arg, e->qid);
	e->replied = false;
	e->touched = true;
	unsigned char *pay = e->slot.buf;
	struct greq r = {
		.g = g, .h = &h, .buf = pay, .bufsz = g->bufsz, .slot = &e->slot, .uent = e};
	size_t fixed = h.len >= sizeof(h) + (size_t) psz ? h.len - sizeof(h) - psz : SIZE_MAX;
	if (psz > g->bufsz || fixed > URS_FUSE_URING_OP_IN_OUT_SZ) {
		gofer_reply(&r, -EIO, NULL, 0); /* not what the kernel sends */
	} else {
		memcpy(pay - fixed, e->hdr->op_in, fixed);
		r.in = pay - fixed;
		r.inlen = (uint32_t) (fixed + psz);
		g->st.requests++;
		u->requests++;
		if (h.opcode < URS_ARRAY_SIZE(g->st.by_op))
			g->st.by_op[h.opcode]++;
		int res = gofer_dispatch(&r);
		if (unlikely(g->o.trace))
			fprintf(stderr,
				"gofer: uring q%u op %u unique %llu node %llu len %u -> %d\n",
				e->qid, h.opcode, (unsigned long long) h.unique,
				(unsigned long long) h.nodeid, h.len, res);
		if (res == GOFER_ASYNC) {
			e->state = GU_ASYNC;
			return;
		}
		if (res < 0)
			gofer_reply(&r, res, NULL, 0);
	}
	if (!e->replied) /* GOFER_NOREPLY: only FORGET/INTERRUPT, never sent here */
		gofer_reply(&r, -ENOSYS, NULL, 0);
	if (u->stopping) {
		e->state = GU_LOST;
		return;
	}
	ent_post(e, true);
}

static void on_cqe(struct gofer_uring *u, struct gofer_uent *e, int32_t res)
{
	if (e->state != GU_KERNEL)
		return;
	u->navail[e->qid]--;
	if (res < 0) {
		e->state = GU_LOST;
		if (res == -ENOENT && !u->stopping && !u->gone) {
			/* our commit named a request the kernel no longer has; the
			 * kernel's entry stays parked: register the buffers anew */
			ent_post(e, false);
		} else if (res == -ENOTCONN || res == -ECONNABORTED || res == -ECANCELED ||
			   res == -ENODEV) {
			u->gone = true; /* the connection is over */
		} else if (!u->failed) {
			/* REGISTER refused: the kernel turned io_uring off for the
			 * connection and keeps serving through /dev/fuse */
			u->failed = true;
			fprintf(stderr,
				"gofer: FUSE over io_uring refused (%s): classic /dev/fuse\n",
				strerror(-res));
		}
		return;
	}
	e->state = GU_USER;
	if (!u->navail[e->qid] && !u->stopping) {
		/* backlog: no other entry of this queue is left in the kernel */
		struct gofer_uent *n = ent_new(u, e->qid);
		if (n) {
			ent_post(n, false);
			u->grows++;
		}
	}
	serve(u, e);
}

/* Submit what is prepared, let the kernel run the work queued for our ring
 * (@getevents: that copies waiting requests in), serve every completion;
 * repeat while commits fetched more. */
static void pump(struct gofer_uring *u, bool getevents)
{
	if (u->in_pump)
		return;
	u->in_pump = true;
	for (int round = 0; round < 64; round++) {
		int r = 0;
		if (u->pending && u->g->o.req_replied)
			u->g->o.req_replied(u->g->o.req_cpu_arg);
		if (getevents)
			r = io_uring_submit_and_get_events(&u->ring);
		else if (u->pending)
			r = io_uring_submit(&u->ring);
		if (r >= 0)
			u->pending = 0;
		getevents = false;
		struct io_uring_cqe *cqes[GU_REAP];
		unsigned n = io_uring_peek_batch_cqe(&u->ring, cqes, GU_REAP);
		struct {
			struct gofer_uent *e;
			int32_t res;
		} got[GU_REAP];
		for (unsigned k = 0; k < n; k++) {
			got[k].e = io_uring_cqe_get_data(cqes[k]);
			got[k].res = cqes[k]->res;
		}
		io_uring_cq_advance(&u->ring, n);
		for (unsigned k = 0; k < n; k++)
			on_cqe(u, got[k].e, got[k].res);
		if (!n && !u->pending)
			break;
	}
	if (u->pending && u->g->o.req_replied)
		u->g->o.req_replied(u->g->o.req_cpu_arg);
	if (u->pending && io_uring_submit(&u->ring) >= 0)
		u->pending = 0;
	u->in_pump = false;
}

/* Clear the eventfd's count that our own completions added (the kernel
 * signals it for every batch of CQEs it posts, and those we have reaped
 * already), so that the loop's read does not wake us for nothing. Work
 * queued meanwhile is not lost: TASKRUN says so and we serve it now. */
static void efd_quiesce(struct gofer_uring *u)
{
	for (int k = 0; k < 4; k++) {
		uint64_t v;
		if (read(u->efd, &v, sizeof(v)) < 0)
			return;
		if (!(IO_URING_READ_ONCE(*u->ring.sq.kflags) & IORING_SQ_TASKRUN))
			return;
		pump(u, true);
	}
}

static void efd_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct gofer_uring *u = container_of(op, struct gofer_uring, efd_op);
	if (res == -ECANCELED || u->stopping)
		return;
	pump(u, true);
	efd_quiesce(u);
	efd_arm(u);
}

void gofer_uring_start(struct urs_gofer *g)
{
	struct gofer_uring *u = g->u;
	if (!u || u->started)
		return;
	u->started = true;
	for (uint32_t q = 0; q < u->nq; q++)
		ent_post(&u->ents[q * u->per_q], false);
	efd_arm(u);
	pump(u, true);
	if (unlikely(g->o.trace))
		fprintf(stderr, "gofer: FUSE over io_uring: %u queues, up to %u entries each%s\n",
			u->nq, u->per_q, u->failed ? " (refused: classic /dev/fuse)" : "");
}

int gofer_uring_reply(struct greq *r, int err, const void *a, size_t alen, const void *b,
		      size_t blen)
{
	struct gofer_uent *e = r->uent;
	unsigned char *p = e->slot.buf;
	size_t cap = r->g->bufsz;
	const unsigned char *pa = a, *pb = b;
	bool ain = pa >= e->mem && pa < p + cap, bin = pb >= e->mem && pb < p + cap;
	if (err || alen + blen > cap || (alen && blen && ain && bin)) {
		if (!err)
			err = -EIO; /* too big, or a layout no handler uses */
		alen = blen = 0;
	}
	if (!bin) {
		if (alen && pa != p)
			memmove(p, pa, alen);
		if (blen)
			memcpy(p + alen, pb, blen);
	} else {
		if (blen && pb != p + alen)
			memmove(p + alen, pb, blen);
		if (alen)
			memcpy(p, pa, alen);
	}
	struct fuse_out_header oh = {
		.len = (uint32_t) (sizeof(oh) + alen + blen), .error = err, .unique = r->h->unique};
	memcpy(e->hdr->in_out, &oh, sizeof(oh));
	e->hdr->ring_ent_in_out.payload_sz = (uint32_t) (alen + blen);
	e->replied = true;
	return 0;
}

void gofer_uring_async_done(struct gofer_uent *e)
{
	struct gofer_uring *u = e->u;
	e->state = GU_USER;
	if (!e->replied) {
		struct fuse_in_header h = e->slot.ahdr;
		struct greq r = {.g = u->g, .h = &h, .uent = e};
		gofer_reply(&r, -EIO, NULL, 0);
	}
	if (u->stopping || u->gone) {
		e->state = GU_LOST;
		return;
	}
	ent_post(e, true);
	pump(u, false);
	efd_quiesce(u);
}

void gofer_uring_idle(struct urs_gofer *g)
{
	struct gofer_uring *u = g->u;
	if (!u || !u->started || u->in_pump)
		return;
	pump(u, false); /* commits must reach the kernel before their pages go */
	if (u->pending || io_uring_cq_ready(&u->ring))
		return; /* not drained: next period */
	for (uint32_t k = 0; k < u->cap; k++) {
		struct gofer_uent *e = &u->ents[k];
		if (e->mem && e->touched && e->state == GU_KERNEL) {
			madvise(e->mem, u->memsz, MADV_DONTNEED);
			e->touched = false;
		}
	}
}

void gofer_uring_stop(struct urs_gofer *g)
{
	struct gofer_uring *u = g->u;
	if (!u || u->stopping)
		return;
	u->stopping = true;
	if (urs_op_busy(&u->efd_op))
		urs_cancel(g->loop, &u->efd_op);
}

bool gofer_uring_busy(const struct urs_gofer *g)
{
	const struct gofer_uring *u = g->u;
	if (!u)
		return false;
	if (urs_op_busy(&u->efd_op))
		return true;
	for (uint32_t k = 0; k < u->cap; k++)
		if (u->ents[k].state == GU_ASYNC)
			return true;
	return false;
}

void gofer_uring_free(struct urs_gofer *g)
{
	if (g->u)
		uring_free(g->u);
	g->u = NULL;
}

size_t gofer_uring_mem(const struct urs_gofer *g)
{
	const struct gofer_uring *u = g->u;
	if (!u)
		return 0;
	size_t m = sizeof(*u) + u->cap * (sizeof(*u->ents) + sizeof(*u->hdrs)) +
		   u->nq * 2 * sizeof(uint16_t);
	size_t pages = (u->memsz + 4095) / 4096;
	unsigned char vec[((1u << 20) + GU_STAGING + 4096) / 4096 + 2];
	for (uint32_t k = 0; k < u->cap; k++) {
		const struct gofer_uent *e = &u->ents[k];
		if (!e->mem || pages > sizeof(vec) || mincore(e->mem, u->memsz, vec) < 0)
			continue;
		for (size_t p = 0; p < pages; p++)
			m += (vec[p] & 1) ? 4096 : 0;
	}
	return m;
}

void gofer_uring_stats(const struct urs_gofer *g, struct urs_gofer_stats *st)
{
	const struct gofer_uring *u = g->u;
	if (!u)
		return;
	st->uring = u->started && !u->failed;
	st->uring_queues = u->nq;
	st->uring_entries = 0;
	for (uint32_t q = 0; q < u->nq; q++)
		st->uring_entries += u->nreg[q];
	st->uring_requests = u->requests;
	st->uring_grows = u->grows;
}
