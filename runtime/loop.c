/*
 * runtime/loop.c — the io_uring event loop: ring setup with probed flags,
 * submission with an overflow FIFO, batched reaping, dispatch by user_data.
 *
 * user_data encodes what a completion is for (ops are 8-byte aligned, so the
 * low bits are free for tags):
 *   0              ignored (our own ASYNC_CANCEL requests)
 *   op pointer     a caller-owned struct urs_op
 *   msg | 1        a message posted to this ring by another loop (MSG_RING)
 *   msg | 2        our MSG_RING send of msg failed: queue it again
 */
#include "runtime/loop.h"

#include <string.h>
#include <sys/eventfd.h>

#include "runtime/actor.h"
#include "runtime/compat.h"
#include "runtime/probe.h"
#include "runtime/timer.h"

#define UD_TAG_MASK   7ull
#define UD_REMOTE_MSG 1ull
#define UD_SEND_FAIL  2ull
#define REAP_BATCH    64u
#define ACTOR_BUDGET  4096u

_Thread_local struct urs_loop *urs_tls_loop;

static void efd_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

static int efd_arm(struct urs_loop *loop)
{
	struct io_uring_sqe *sqe = urs_op_sqe(&loop->efd_op);
	io_uring_prep_read(sqe, loop->efd, &loop->efd_val, sizeof(loop->efd_val), 0);
	loop->efd_op.flags |= URS_OPF_WEAK;
	return urs_submit(loop, &loop->efd_op, efd_cb);
}

static void inbox_drain(struct urs_loop *loop)
{
	struct urs_msg *m = atomic_exchange_explicit(&loop->inbox, NULL, memory_order_acquire);
	struct urs_msg *fifo = NULL;
	while (m) { /* the inbox is a LIFO stack: reverse to keep send order */
		struct urs_msg *n = m->next;
		m->next = fifo;
		fifo = m;
		m = n;
	}
	while (fifo) {
		struct urs_msg *n = fifo->next;
		urs_actor_deliver_remote(loop, fifo);
		fifo = n;
	}
}

static void efd_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) op;
	(void) flags;
	inbox_drain(loop);
	if (res != -ECANCELED && loop->efd >= 0)
		efd_arm(loop);
}

int urs_loop_init(struct urs_loop *loop, const struct urs_loop_opts *opts)
{
	struct urs_loop_opts o = opts ? *opts : (struct urs_loop_opts){0};
	unsigned entries = o.entries ? o.entries : 64;
	memset(loop, 0, sizeof(*loop));
	loop->efd = -1;
	atomic_init(&loop->inbox, NULL);

	uint32_t feat = urs_features() & ~o.no_feat;
	if (!(feat & URS_FEAT_SINGLE_ISSUER))
		feat &= ~URS_FEAT_DEFER_TASKRUN;

	/* Most capable setup first, then step down: a flag refused here must not
	 * fail the loop, only lose the optimisation. */
	unsigned tries[3], ntries = 0;
	if ((feat & URS_FEAT_DEFER_TASKRUN))
		tries[ntries++] = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
				  IORING_SETUP_TASKRUN_FLAG;
	if ((feat & URS_FEAT_COOP_TASKRUN))
		tries[ntries++] =
			IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
			((feat & URS_FEAT_SINGLE_ISSUER) ? IORING_SETUP_SINGLE_ISSUER : 0);
	tries[ntries++] = 0;

	int r = -EINVAL;
	for (unsigned i = 0; i < ntries; i++) {
		struct io_uring_params p = {.flags = tries[i] | IORING_SETUP_SUBMIT_ALL};
		p.flags |= IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 4;
		r = io_uring_queue_init_params(entries, &loop->ring, &p);
		if (r == -EINVAL) { /* maybe SUBMIT_ALL/CQSIZE: try bare */
			p = (struct io_uring_params){.flags = tries[i]};
			r = io_uring_queue_init_params(entries, &loop->ring, &p);
		}
		if (r == 0) {
			loop->setup_flags = tries[i];
			break;
		}
	}
	if (r < 0)
		return r;
	if (!(loop->setup_flags & IORING_SETUP_DEFER_TASKRUN))
		feat &= ~URS_FEAT_DEFER_TASKRUN;
	if (!(loop->setup_flags & IORING_SETUP_SINGLE_ISSUER))
		feat &= ~URS_FEAT_SINGLE_ISSUER;
	if (!(loop->setup_flags & IORING_SETUP_COOP_TASKRUN))
		feat &= ~URS_FEAT_COOP_TASKRUN;
	loop->feat = feat;

	urs_pool_init(&loop->msgs,
		      (uint32_t) sizeof(struct urs_msg) + (o.msg_size ? o.msg_size : 32),
		      o.msg_max ? o.msg_max : (1u << 20));

	if (!(feat & URS_FEAT_MSG_RING)) {
		loop->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (loop->efd < 0) {
			r = -errno;
			io_uring_queue_exit(&loop->ring);
			return r;
		}
		efd_arm(loop);
	}
	urs_tls_loop = loop;
	return 0;
}

void urs_loop_fini(struct urs_loop *loop)
{
	if (loop->efd >= 0) {
		close(loop->efd);
		loop->efd = -1;
	}
	/* Messages still in flight to us are dropped with the pool. */
	io_uring_queue_exit(&loop->ring);
	urs_timers_fini(loop);
	urs_pool_fini(&loop->msgs);
	if (urs_tls_loop == loop)
		urs_tls_loop = NULL;
}

void urs_loop_stop(struct urs_loop *loop)
{
	loop->stop = true;
}

static void fifo_push(struct urs_op_fifo *f, struct urs_op *op)
{
	op->next = NULL;
	if (f->tail)
		f->tail->next = op;
	else
		f->head = op;
	f->tail = op;
}

static struct urs_op *fifo_pop(struct urs_op_fifo *f)
{
	struct urs_op *op = f->head;
	if (op) {
		f->head = op->next;
		if (!f->head)
			f->tail = NULL;
	}
	return op;
}

static void fifo_remove(struct urs_op_fifo *f, struct urs_op *op)
{
	struct urs_op *prev = NULL;
	for (struct urs_op *it = f->head; it; prev = it, it = it->next) {
		if (it != op)
			continue;
		if (prev)
			prev->next = it->next;
		else
			f->head = it->next;
		if (f->tail == it)
			f->tail = prev;
		return;
	}
}

static inline struct io_uring_sqe *get_sqe(struct urs_loop *loop)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&loop->ring);
	if (sqe)
		loop->pending_sqes++;
	return sqe;
}

static inline void place(struct urs_loop *loop, struct io_uring_sqe *sqe, struct urs_op *op)
{
	memcpy(sqe, &op->sqe, sizeof(*sqe));
	io_uring_sqe_set_data(sqe, op);
	op->state = URS_OP_INFLIGHT;
	(void) loop;
}

int urs_submit(struct urs_loop *loop, struct urs_op *op, urs_op_cb cb)
{
	if (op->state != URS_OP_IDLE)
		return -EBUSY;
	op->cb = cb;
	op->flags &= URS_OPF_WEAK;
	if (!(op->flags & URS_OPF_WEAK))
		loop->live++;
	struct io_uring_sqe *sqe = loop->overflow.head ? NULL : get_sqe(loop);
	if (sqe) {
		place(loop, sqe, op);
	} else {
		op->state = URS_OP_QUEUED;
		fifo_push(&loop->overflow, op);
		loop->stats.overflowed++;
	}
	return 0;
}

static bool cancel_place(struct urs_loop *loop, struct urs_op *op)
{
	struct io_uring_sqe *sqe = get_sqe(loop);
	if (!sqe)
		return false;
	io_uring_prep_cancel64(sqe, (uint64_t) (uintptr_t) op, 0);
	io_uring_sqe_set_data64(sqe, 0);
	if (loop->feat & URS_FEAT_CQE_SKIP)
		sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	return true;
}

int urs_cancel(struct urs_loop *loop, struct urs_op *op)
{
	switch (op->state) {
	case URS_OP_IDLE:
		return -ENOENT;
	case URS_OP_QUEUED:
		op->flags |= URS_OPF_CANCEL; /* completed with -ECANCELED when drained */
		return 0;
	default:
		if (op->flags & URS_OPF_CANCEL)
			return 0; /* already asked */
		op->flags |= URS_OPF_CANCEL;
		if (!loop->cancels.head && cancel_place(loop, op))
			return 0;
		op->flags |= URS_OPF_CANCELQ;
		fifo_push(&loop->cancels, op);
		return 0;
	}
}

static void complete(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	if (!(flags & IORING_CQE_F_MORE)) {
		if (op->flags & URS_OPF_CANCELQ)
			fifo_remove(&loop->cancels, op);
		op->state = URS_OP_IDLE;
		op->flags &= URS_OPF_WEAK;
		if (!(op->flags & URS_OPF_WEAK))
			loop->live--;
	}
	urs_op_dispatch(loop, op, res, flags); /* op->cb, through the profiler if on */
}

static inline void account_enter(struct urs_loop *loop, int r)
{
	loop->stats.submits++;
	if (r > 0) {
		loop->stats.sqes += (unsigned) r;
		loop->stats.batches++;
	}
}

static int submit_pending(struct urs_loop *loop)
{
	if (!loop->pending_sqes)
		return 0;
	int r = io_uring_submit(&loop->ring);
	account_enter(loop, r);
	if (r >= 0) {
		loop->pending_sqes = 0;
		return 0;
	}
	return r == -EINTR || r == -EAGAIN || r == -EBUSY ? 0 : r;
}

/* Move queued cancels, queued ops and queued remote sends into the ring,
 * submitting whenever the SQ fills. Cancelled queued ops are completed here
 * (the top of the loop), never inside urs_submit()/urs_cancel(). */
static int drain_queues(struct urs_loop *loop)
{
	int r;
	for (;;) {
		bool progress = false, full = false;
		while (loop->cancels.head) {
			struct urs_op *op = loop->cancels.head;
			if (!cancel_place(loop, op)) {
				full = true;
				break;
			}
			fifo_pop(&loop->cancels);
			op->flags &= (uint8_t) ~URS_OPF_CANCELQ;
			progress = true;
		}
		while (!full && loop->overflow.head) {
			struct urs_op *op = loop->overflow.head;
			if (op->flags & URS_OPF_CANCEL) {
				fifo_pop(&loop->overflow);
				complete(loop, op, -ECANCELED, 0);
				progress = true;
				continue;
			}
			struct io_uring_sqe *sqe = get_sqe(loop);
			if (!sqe) {
				full = true;
				break;
			}
			fifo_pop(&loop->overflow);
			place(loop, sqe, op);
			progress = true;
		}
		while (!full && loop->outbox_head) {
			struct urs_msg *m = loop->outbox_head;
			struct io_uring_sqe *sqe = get_sqe(loop);
			if (!sqe) {
				full = true;
				break;
			}
			loop->outbox_head = m->next;
			if (!loop->outbox_head)
				loop->outbox_tail = NULL;
			io_uring_prep_msg_ring(sqe, m->to->loop->ring.ring_fd, 0,
					       (uint64_t) (uintptr_t) m | UD_REMOTE_MSG, 0);
			io_uring_sqe_set_data64(sqe, (uint64_t) (uintptr_t) m | UD_SEND_FAIL);
			if (loop->feat & URS_FEAT_CQE_SKIP)
				sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
			loop->stats.msgs_remote++;
			progress = true;
		}
		if (!full)
			return 0;
		if ((r = submit_pending(loop)) < 0)
			return r;
		if (!progress && io_uring_sq_space_left(&loop->ring) == 0)
			return 0; /* kernel refuses more for now (CQ pressure): reap first */
	}
}

static void dispatch(struct urs_loop *loop, uint64_t ud, int32_t res, uint32_t flags)
{
	if (ud == 0)
		return;
	switch (ud & UD_TAG_MASK) {
	case 0:
		complete(loop, (struct urs_op *) (uintptr_t) ud, res, flags);
		return;
	case UD_REMOTE_MSG:
		urs_actor_deliver_remote(loop, (struct urs_msg *) (uintptr_t) (ud & ~UD_TAG_MASK));
		return;
	case UD_SEND_FAIL:
		if (res < 0) { /* target CQ full or similar: try again next turn */
			struct urs_msg *m = (struct urs_msg *) (uintptr_t) (ud & ~UD_TAG_MASK);
			m->next = NULL;
			if (loop->outbox_tail)
				loop->outbox_tail->next = m;
			else
				loop->outbox_head = m;
			loop->outbox_tail = m;
			loop->stats.remote_retries++;
		}
		return;
	}
}

static unsigned reap(struct urs_loop *loop)
{
	struct io_uring_cqe *cqes[REAP_BATCH];
	struct {
		uint64_t ud;
		int32_t res;
		uint32_t flags;
	} got[REAP_BATCH];
	unsigned total = 0;
	for (int round = 0; round < 4; round++) {
		unsigned n = io_uring_peek_batch_cqe(&loop->ring, cqes, REAP_BATCH);
		if (!n)
			break;
		for (unsigned i = 0; i < n; i++) {
			got[i].ud = cqes[i]->user_data;
			got[i].res = cqes[i]->res;
			got[i].flags = cqes[i]->flags;
		}
		io_uring_cq_advance(&loop->ring, n);
		for (unsigned i = 0; i < n; i++)
			dispatch(loop, got[i].ud, got[i].res, got[i].flags);
		total += n;
		if (n < REAP_BATCH)
			break;
	}
	loop->stats.cqes += total;
	return total;
}

static inline bool needs_enter(struct urs_loop *loop)
{
	unsigned f = IO_URING_READ_ONCE(*loop->ring.sq.kflags);
	return f & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW);
}

static inline bool has_work(const struct urs_loop *loop)
{
	return loop->ready_head || loop->overflow.head || loop->cancels.head || loop->outbox_head ||
	       loop->timers.finals_head;
}

int urs_loop_run_once(struct urs_loop *loop, bool wait)
{
	int r;
	urs_tls_loop = loop;
	loop->stats.turns++;
	/* final timer callbacks are this turn's events: the caller sees what
	 * they changed before we sleep (nothing else may come to wake us) */
	bool finals = loop->timers.finals_head != NULL;
	if (finals)
		urs_timers_run_finals(loop);
	if (loop->ready_head)
		urs_actors_run(loop, ACTOR_BUDGET);
	if ((r = drain_queues(loop)) < 0)
		return r;

	/* Sleep only if something can wake us: a strong op or a reference
	 * (urs_loop_ref) held for a remote sender. */
	bool block = wait && !finals && loop->live && !has_work(loop) &&
		     !io_uring_cq_ready(&loop->ring) && !loop->stop;
	if (block) {
		if (loop->block_hook)
			loop->block_hook(loop->block_arg, true);
		r = io_uring_submit_and_wait(&loop->ring, 1);
		if (loop->block_hook)
			loop->block_hook(loop->block_arg, false);
		loop->pending_sqes = 0;
		account_enter(loop, r);
	} else if (loop->pending_sqes || needs_enter(loop)) {
		r = io_uring_submit_and_get_events(&loop->ring);
		loop->pending_sqes = 0;
		account_enter(loop, r);
	} else {
		r = 0;
	}
	if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME)
		return r;
	reap(loop);
	return 0;
}

int urs_loop_flush(struct urs_loop *loop)
{
	int r = drain_queues(loop);
	if (r < 0)
		return r;
	return submit_pending(loop);
}

int urs_loop_run(struct urs_loop *loop)
{
	loop->stop = false;
	while (!loop->stop) {
		if (!loop->live && !has_work(loop) && !io_uring_cq_ready(&loop->ring))
			break;
		int r = urs_loop_run_once(loop, true);
		if (r < 0)
			return r;
	}
	return 0;
}
