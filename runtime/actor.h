/*
 * runtime/actor.h — actors: state + handler + mailbox, driven by a loop.
 *
 * An actor is embedded in its owner's state (container_of gets the state
 * back), so an idle actor costs sizeof(struct urs_actor) and nothing else.
 * Messages are fixed-size records from the sending loop's pool.
 *
 * Same loop: urs_send() appends to the mailbox and, if the actor was idle,
 * to the loop's ready queue; the loop runs it later in the same turn. No
 * syscall, no allocation, FIFO order per sender-receiver pair.
 * Another loop (another thread): the message pointer travels in an
 * IORING_OP_MSG_RING completion posted on the target ring (or, without
 * MSG_RING, on a lock-free inbox plus an eventfd wake-up).
 *
 * Ownership: the handler receives the message; when it returns, the runtime
 * frees it unless the handler sent it on (urs_send) or kept it
 * (urs_msg_keep; then urs_msg_free later, from any thread). Once sent to
 * another loop or kept, the runtime does not read it again: the receiver
 * may have handled and freed it before the handler returns.
 */
#ifndef URSA_RUNTIME_ACTOR_H
#define URSA_RUNTIME_ACTOR_H

#include <stdint.h>

#include "runtime/loop.h"

struct urs_actor;

typedef void (*urs_actor_fn)(struct urs_actor *self, struct urs_msg *msg);

struct urs_actor {
	struct urs_actor *next_ready;
	struct urs_loop *loop;
	urs_actor_fn handler;
	struct urs_msg *mbox_head, *mbox_tail;
	uint32_t flags;
	uint32_t id; /* free for the owner (e.g. an index) */
};

enum urs_msg_flags {
	URS_MSGF_QUEUED = 1u << 0, /* in a mailbox, outbox or in transit */
	URS_MSGF_KEPT = 1u << 1,   /* the handler kept it */
	URS_MSGF_FAR = 1u << 2,	   /* allocated on another loop */
};

struct urs_msg {
	struct urs_msg *next;
	struct urs_actor *to;
	struct urs_loop *home; /* the loop whose pool it came from */
	uint32_t type;
	uint16_t flags;
	uint16_t len; /* payload bytes in use, owner's convention */
	_Alignas(16) unsigned char data[];
};

/**
 * urs_actor_init() - set up an idle actor with an empty mailbox
 * @a: the actor, embedded in its owner's state
 * @loop: the loop it runs on (messages to it are handled on that thread)
 * @handler: called with each message
 *
 * Only fills @a (id 0, no flags): no allocation, nothing registered with
 * the loop, nothing to tear down.
 */
void urs_actor_init(struct urs_actor *a, struct urs_loop *loop, urs_actor_fn handler);

#define URS_ACTOR_READY 1u
#define URS_ACTOR_QUOTA 64u /* messages per actor per visit */

/**
 * urs_msg_alloc() - a message from this loop's pool
 * @loop: the loop whose pool it comes from: the calling thread's
 * @type: the owner's message type
 *
 * Owner thread of @loop only (the pool's free list is not atomic). The pool
 * adds a slab (one malloc of URS_POOL_SLAB messages) when it runs dry, so
 * a busy loop allocates per slab, never per message. The payload (@data,
 * urs_msg_capacity() bytes) is not cleared; len is 0.
 *
 * Return: the message, or NULL when the pool's cap (urs_loop_opts.msg_max)
 * is reached or memory is short (backpressure).
 */
static inline struct urs_msg *urs_msg_alloc(struct urs_loop *loop, uint32_t type)
{
	struct urs_msg *m = urs_pool_get(&loop->msgs);
	if (unlikely(!m))
		return NULL;
	m->next = NULL;
	m->to = NULL;
	m->home = loop;
	m->type = type;
	m->flags = 0;
	m->len = 0;
	return m;
}

/**
 * urs_msg_free() - give a message back to the pool it came from
 * @m: a message the caller owns (kept, or never sent)
 *
 * Any thread: on its home loop's thread it goes straight back on the free
 * list, from another thread onto the pool's lock-free remote list.
 */
static inline void urs_msg_free(struct urs_msg *m)
{
	struct urs_loop *home = m->home;
	if (likely(home == urs_loop_current()))
		urs_pool_put(&home->msgs, m);
	else
		urs_pool_put_remote(&home->msgs, m);
}

/**
 * urs_msg_keep() - keep a message past the handler's return
 * @m: the message the running handler received
 *
 * The runtime does not touch it after the handler: it may be handed to
 * another thread and freed there. The caller frees it later with
 * urs_msg_free() (from any thread) or sends it on.
 */
static inline void urs_msg_keep(struct urs_msg *m)
{
	struct urs_loop *cur = urs_loop_current();
	m->flags |= URS_MSGF_KEPT;
	if (cur && cur->dispatching == m)
		cur->dispatching = NULL;
}

/**
 * urs_msg_capacity() - payload capacity of messages from @loop
 * @loop: the loop
 *
 * Return: bytes of @data in each message: at least urs_loop_opts.msg_size
 * (the pool rounds objects up to 16 bytes).
 */
uint32_t urs_msg_capacity(const struct urs_loop *loop);

/**
 * urs_mbox_push() - append to a mailbox and make the actor ready (internal)
 * @loop: the loop @to runs on, on its thread
 * @to: the receiving actor
 * @m: the message
 *
 * An actor that was idle is put at the tail of @loop's ready queue. No
 * syscall, no allocation.
 */
static inline void urs_mbox_push(struct urs_loop *loop, struct urs_actor *to, struct urs_msg *m)
{
	m->next = NULL;
	if (to->mbox_tail)
		to->mbox_tail->next = m;
	else
		to->mbox_head = m;
	to->mbox_tail = m;
	if (!(to->flags & URS_ACTOR_READY)) {
		to->flags |= URS_ACTOR_READY;
		to->next_ready = NULL;
		if (loop->ready_tail)
			loop->ready_tail->next_ready = to;
		else
			loop->ready_head = to;
		loop->ready_tail = to;
	}
}

/**
 * urs_send_remote() - slow path of urs_send(): @to lives on another loop
 * @cur: the calling thread's loop, or NULL
 * @to: the receiving actor
 * @m: the message (to and flags set by urs_send)
 *
 * When both loops use IORING_OP_MSG_RING the message waits in @cur's outbox
 * and goes out with @cur's next submission. Otherwise it is pushed on the
 * target loop's lock-free inbox, and the target's eventfd is written when
 * the inbox was empty (it may be asleep).
 *
 * Return: 0 (the message is the target's: a failed eventfd wake-up is not
 * reported, as the message cannot be taken back), or -ENOTSUP when the
 * target has no eventfd and this thread has no MSG_RING loop to post from
 * (the message is still the caller's).
 */
int urs_send_remote(struct urs_loop *cur, struct urs_actor *to, struct urs_msg *m);

/**
 * urs_send() - send a message to an actor
 * @to: the receiving actor
 * @m: the message, owned by the caller (allocated, received or kept)
 *
 * Must be called on the thread of a running loop (or the thread that
 * created @to's loop). The message is owned by the runtime until
 * delivered. On the same loop this appends to @to's mailbox (no syscall,
 * no allocation); otherwise urs_send_remote().
 *
 * Return: 0; -ENOTSUP: @to is on another loop and there is no way to reach
 * it from this thread (no loop here, target without eventfd).
 */
static inline int urs_send(struct urs_actor *to, struct urs_msg *m)
{
	struct urs_loop *cur = urs_loop_current();
	m->to = to;
	m->flags = (uint16_t) ((m->flags & ~URS_MSGF_KEPT) | URS_MSGF_QUEUED);
	if (likely(to->loop == cur)) {
		cur->stats.msgs_local++;
		urs_mbox_push(cur, to, m);
		return 0;
	}
	return urs_send_remote(cur, to, m);
}

/*
 * Profiling (`ursa --profile`). When urs_prof_actor is set, every handler
 * call goes through it (it calls a->handler(a, m) itself, between its
 * measurements); NULL — the default — costs the dispatch one predictable
 * branch and nothing else. urs_prof_op is the same for op callbacks, for a
 * loop that calls urs_op_dispatch() on completions. Set both before the
 * loop runs, on the loop's thread.
 */
extern void (*urs_prof_actor)(struct urs_actor *a, struct urs_msg *m);
extern void (*urs_prof_op)(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

/**
 * urs_op_dispatch() - run an op's callback for one completion
 * @loop: the loop the op completed on
 * @op: the op
 * @res: the completion's result
 * @flags: the completion's flags
 *
 * Through urs_prof_op when profiling is on, else op->cb directly.
 */
static inline void urs_op_dispatch(struct urs_loop *loop, struct urs_op *op, int32_t res,
				   uint32_t flags)
{
	if (unlikely(urs_prof_op != NULL))
		urs_prof_op(loop, op, res, flags);
	else
		op->cb(loop, op, res, flags);
}

/**
 * urs_actors_run() - the loop drains ready actors (internal)
 * @loop: the loop, on its thread
 * @budget: messages to handle, at most (checked between actors: one visit
 *          handles up to URS_ACTOR_QUOTA)
 *
 * Each ready actor handles up to URS_ACTOR_QUOTA messages per visit and
 * goes back to the tail of the queue if mail is left. After each handler
 * the message is freed unless it was sent on or kept.
 *
 * Return: the number of messages handled.
 */
uint32_t urs_actors_run(struct urs_loop *loop, uint32_t budget);

/**
 * urs_actor_deliver_remote() - deliver a message that arrived from another
 *                              thread (internal)
 * @loop: the receiving loop, on its thread
 * @m: the message (MSG_RING completion or inbox), for m->to
 */
void urs_actor_deliver_remote(struct urs_loop *loop, struct urs_msg *m);

#endif
