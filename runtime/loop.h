/*
 * runtime/loop.h — the event loop: one io_uring per thread, caller-owned
 * operation records, and the actor run queue.
 *
 * An operation (struct urs_op) is owned by its caller and must stay at a
 * stable address from urs_submit() until its final completion (the first
 * completion without IORING_CQE_F_MORE). The SQE is prepared into the record
 * itself (urs_op_sqe() + any io_uring_prep_*), so when the submission queue
 * is full the record simply waits in the loop's overflow FIFO and is copied
 * into the ring on a later turn: submission never fails for lack of space.
 *
 * Completions are reaped in batches first and their callbacks run afterwards,
 * one at a time, from the loop's top level: a callback never runs inside
 * urs_submit() or inside another callback.
 */
#ifndef URSA_RUNTIME_LOOP_H
#define URSA_RUNTIME_LOOP_H

#include <liburing.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/common.h"
#include "runtime/pool.h"

struct urs_loop;
struct urs_op;
struct urs_actor;
struct urs_msg;

/* res: the CQE's result (negative errno on failure); flags: the CQE's flags. */
typedef void (*urs_op_cb)(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

enum urs_op_state {
	URS_OP_IDLE = 0, /* not submitted, or final completion delivered */
	URS_OP_QUEUED,	 /* waiting in the overflow FIFO for an SQE */
	URS_OP_INFLIGHT, /* in the kernel */
};

enum urs_op_flags {
	URS_OPF_WEAK = 1u << 0,	   /* does not keep urs_loop_run() alive */
	URS_OPF_CANCEL = 1u << 1,  /* cancellation requested */
	URS_OPF_CANCELQ = 1u << 2, /* waiting in the cancel FIFO for an SQE */
};

struct urs_op {
	struct io_uring_sqe sqe; /* prepared here; copied into the ring */
	struct urs_op *next;	 /* overflow / cancel FIFO link */
	urs_op_cb cb;
	uint8_t state;
	uint8_t flags;
};

struct urs_op_fifo {
	struct urs_op *head, *tail;
};

struct urs_loop_opts {
	unsigned entries;  /* SQ entries (power of two); default 64 */
	uint32_t msg_size; /* payload bytes per message; default 32 */
	uint32_t msg_max;  /* messages this loop may have allocated at once; default 1<<20 */
	uint32_t no_feat;  /* URS_FEAT_* bits not to use on this loop */
};

struct urs_loop_stats {
	uint64_t turns;	     /* loop turns */
	uint64_t submits;    /* io_uring_enter calls (submitting and/or waiting) */
	uint64_t batches;    /* of those, the ones that submitted SQEs */
	uint64_t sqes;	     /* SQEs submitted */
	uint64_t cqes;	     /* completions reaped */
	uint64_t overflowed; /* ops that waited in the overflow FIFO */
	uint64_t msgs_local, msgs_remote, remote_retries;
};

struct urs_timer;

/* The loop's timers (runtime/timer.c): a heap and one kernel timeout. */
struct urs_timers {
	struct urs_timer **heap;
	uint32_t n, cap;
	struct urs_op tmo; /* the one armed IORING_OP_TIMEOUT (weak) */
	struct __kernel_timespec ts;
	uint64_t armed_ns; /* its deadline while in flight */
	struct urs_timer *finals_head, *finals_tail;
};

struct urs_loop {
	struct io_uring ring;
	uint32_t feat;	      /* URS_FEAT_* in use on this loop */
	unsigned setup_flags; /* IORING_SETUP_* the ring was created with */
	bool stop;
	uint32_t live;	       /* strong ops not yet finally completed */
	uint32_t pending_sqes; /* SQEs written since the last submit */
	struct urs_op_fifo overflow, cancels;
	struct urs_actor *ready_head, *ready_tail;
	/* The message whose handler runs now; NULL once the handler sent it
	 * to another loop or kept it: from then on it is not ours to look at
	 * (the receiver may already have handled and freed it). */
	struct urs_msg *dispatching;
	struct urs_msg *outbox_head, *outbox_tail; /* remote sends waiting for an SQE */
	struct urs_pool msgs;			   /* message memory */
	struct urs_timers timers;
	/* Remote wake-up without MSG_RING: MPSC stack + eventfd. */
	_Atomic(struct urs_msg *) inbox;
	int efd;
	uint64_t efd_val;
	struct urs_op efd_op;
	struct urs_loop_stats stats;
	/* Called with true right before the loop blocks in io_uring_enter and
	 * with false right after (urs_loop_set_block_hook): a loop whose
	 * state other threads may look at under a lock releases it there. */
	void (*block_hook)(void *arg, bool blocking);
	void *block_arg;
};

/**
 * urs_loop_init() - set up a loop on the calling thread
 * @loop: the loop (cleared first)
 * @opts: sizes and features, or NULL for the defaults
 *
 * Creates the io_uring with the most capable setup flags the probe allows
 * (stepping down when one is refused: that costs the optimisation, not the
 * loop) and, without IORING_OP_MSG_RING, an eventfd for remote wake-ups.
 * The message pool allocates nothing until the first message. The loop
 * becomes the thread's urs_loop_current(); use it from this thread only.
 *
 * Return: 0, or the negative errno of io_uring setup (-ENOMEM, -EPERM when
 * io_uring is disabled, ...) or of eventfd(2).
 */
int urs_loop_init(struct urs_loop *loop, const struct urs_loop_opts *opts);

/**
 * urs_loop_fini() - tear the loop down
 * @loop: the loop, not running
 *
 * Closes the eventfd and the ring (ops still in flight are dropped: their
 * callbacks never run), frees the timer heap and the message pool
 * (messages still in flight to the loop are dropped with it), and clears
 * urs_loop_current() if it was this loop.
 */
void urs_loop_fini(struct urs_loop *loop);

extern _Thread_local struct urs_loop *urs_tls_loop;

/**
 * urs_loop_current() - the loop running on this thread
 *
 * Set by urs_loop_init() on the calling thread, and by each turn of a loop
 * (urs_loop_run_once).
 *
 * Return: the loop, or NULL when this thread has none.
 */
static inline struct urs_loop *urs_loop_current(void)
{
	return urs_tls_loop;
}

/**
 * urs_loop_run() - run the loop on this thread
 * @loop: the loop
 *
 * Runs until urs_loop_stop() or until nothing is left: no strong op in
 * flight, no reference held (urs_loop_ref, armed timers), no actor with
 * mail, no completion waiting. Clears a previous stop first.
 *
 * Return: 0, or a negative errno from io_uring_enter.
 */
int urs_loop_run(struct urs_loop *loop);

/**
 * urs_loop_run_once() - one turn of the loop
 * @loop: the loop; becomes this thread's urs_loop_current()
 * @wait: block for one completion if something can still complete
 *
 * Delivers pending timer cancellations, runs ready actors (a bounded
 * batch), moves queued ops into the ring and submits; with @wait it sleeps
 * in io_uring_enter only when a strong op or a reference could wake it and
 * no other work is pending; then reaps and runs the callbacks.
 *
 * Return: 0, or a negative errno from io_uring_enter (-EINTR, -EAGAIN,
 * -EBUSY and -ETIME are not errors here).
 */
int urs_loop_run_once(struct urs_loop *loop, bool wait);

/**
 * urs_loop_set_block_hook() - be told when the loop sleeps
 * @loop: the loop
 * @hook: called with true right before the loop blocks in io_uring_enter
 *        and with false right after; NULL: none
 * @arg: passed to @hook
 *
 * A loop whose state other threads may look at under a lock releases the
 * lock in the hook.
 */
static inline void urs_loop_set_block_hook(struct urs_loop *loop,
					   void (*hook)(void *arg, bool blocking), void *arg)
{
	loop->block_hook = hook;
	loop->block_arg = arg;
}

/**
 * urs_loop_stop() - make urs_loop_run() return after the current turn
 * @loop: the loop
 *
 * A plain flag, set from the loop's own thread (a callback or handler): it
 * does not wake a loop blocked in io_uring_enter.
 */
void urs_loop_stop(struct urs_loop *loop);

/**
 * urs_loop_ref() - keep urs_loop_run() alive
 * @loop: the loop, on its thread
 *
 * While something outside the ring (e.g. a peer thread that will send
 * messages) still has work for this loop. Dropped with urs_loop_unref().
 */
static inline void urs_loop_ref(struct urs_loop *loop)
{
	loop->live++;
}

/**
 * urs_loop_unref() - drop a reference taken with urs_loop_ref()
 * @loop: the loop, on its thread
 */
static inline void urs_loop_unref(struct urs_loop *loop)
{
	loop->live--;
}

/**
 * urs_op_sqe() - start preparing @op
 * @op: an idle op
 *
 * Return: its SQE, zeroed, for io_uring_prep_*().
 */
static inline struct io_uring_sqe *urs_op_sqe(struct urs_op *op)
{
	op->sqe = (struct io_uring_sqe){0};
	return &op->sqe;
}

/**
 * urs_submit() - submit a prepared op
 * @loop: the loop, on its thread
 * @op: the op, SQE prepared; stays at its address until its final completion
 * @cb: runs for each of its completions, from the loop's top level (never
 *      inside this call)
 *
 * Never fails for lack of SQ space (the op waits in the overflow FIFO). The
 * SQE is copied into the ring; the kernel sees it at the loop's next turn
 * (or urs_loop_flush). An op without URS_OPF_WEAK keeps urs_loop_run()
 * alive until its final completion.
 *
 * Return: 0, or -EBUSY if the op is already queued or in flight.
 */
int urs_submit(struct urs_loop *loop, struct urs_op *op, urs_op_cb cb);

/**
 * urs_cancel() - ask for @op to be cancelled (IORING_OP_ASYNC_CANCEL)
 * @loop: the loop it was submitted on
 * @op: the op
 *
 * Its callback still runs for its final completion (usually -ECANCELED);
 * release the op's resources only then. An op still in the overflow FIFO
 * completes with -ECANCELED on the next turn without reaching the kernel.
 * The cancel request itself waits in a FIFO when the SQ is full.
 *
 * Return: 0 (also when cancellation was already asked), or -ENOENT if idle.
 */
int urs_cancel(struct urs_loop *loop, struct urs_op *op);

/**
 * urs_op_busy() - is @op queued or in flight?
 * @op: the op
 *
 * Return: true from urs_submit() until its final completion is delivered.
 */
static inline bool urs_op_busy(const struct urs_op *op)
{
	return op->state != URS_OP_IDLE;
}

/**
 * urs_loop_flush() - submit what is queued now, without waiting
 * @loop: the loop, on its thread
 *
 * Used by tight producers that do not return to the loop. Moves queued ops
 * and cancellations into the ring and calls io_uring_submit; an op
 * cancelled while still queued completes (its callback runs) inside this
 * call.
 *
 * Return: 0, or a negative errno from io_uring_submit.
 */
int urs_loop_flush(struct urs_loop *loop);

#endif
