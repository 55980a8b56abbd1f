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
 * (urs_msg_keep; then urs_msg_free later, from any thread).
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

void urs_actor_init(struct urs_actor *a, struct urs_loop *loop, urs_actor_fn handler);

/* Allocate from this loop's pool; NULL when the pool cap is reached (backpressure). */
struct urs_msg *urs_msg_alloc(struct urs_loop *loop, uint32_t type);
/* Free from any thread. */
void urs_msg_free(struct urs_msg *m);
/* Keep a message past the handler's return. */
static inline void urs_msg_keep(struct urs_msg *m)
{
	m->flags |= URS_MSGF_KEPT;
}
/* Payload capacity of messages from @loop. */
uint32_t urs_msg_capacity(const struct urs_loop *loop);

/*
 * Send @m to @to. Must be called on the thread of a running loop (or the
 * thread that created @to's loop). Returns 0; the message is owned by the
 * runtime until delivered.
 */
int urs_send(struct urs_actor *to, struct urs_msg *m);

/* Internal: the loop drains ready actors (at most @budget messages). */
uint32_t urs_actors_run(struct urs_loop *loop, uint32_t budget);
/* Internal: deliver a message that arrived from another thread. */
void urs_actor_deliver_remote(struct urs_loop *loop, struct urs_msg *m);

#endif
