/*
 * runtime/actor.c — mailboxes, the ready queue and message transport.
 * See actor.h for the ownership rules.
 */
#include "runtime/actor.h"

#include <string.h>

#include "runtime/probe.h"

void (*urs_prof_actor)(struct urs_actor *a, struct urs_msg *m);
void (*urs_prof_op)(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

void urs_actor_init(struct urs_actor *a, struct urs_loop *loop, urs_actor_fn handler)
{
	a->next_ready = NULL;
	a->loop = loop;
	a->handler = handler;
	a->mbox_head = a->mbox_tail = NULL;
	a->flags = 0;
	a->id = 0;
}

uint32_t urs_msg_capacity(const struct urs_loop *loop)
{
	return loop->msgs.obj_size - (uint32_t) sizeof(struct urs_msg);
}

void urs_actor_deliver_remote(struct urs_loop *loop, struct urs_msg *m)
{
	urs_mbox_push(loop, m->to, m);
}

static int inbox_push(struct urs_loop *target, struct urs_msg *m)
{
	if (target->efd < 0)
		return -ENOTSUP;
	struct urs_msg *head = atomic_load_explicit(&target->inbox, memory_order_relaxed);
	do
		m->next = head;
	while (!atomic_compare_exchange_weak_explicit(&target->inbox, &head, m,
						      memory_order_release, memory_order_relaxed));
	if (!head) { /* the inbox was empty: the target may be asleep */
		uint64_t one = 1;
		/* The message is the target's from the push on: a failed wake-up
		 * (EAGAIN: the counter is full, so a wake-up is pending anyway)
		 * cannot hand it back, so it is not reported as a failed send. */
		ssize_t w = write(target->efd, &one, sizeof(one));
		(void) w;
	}
	return 0;
}

int urs_send_remote(struct urs_loop *cur, struct urs_actor *to, struct urs_msg *m)
{
	if (cur && cur->dispatching == m)
		cur->dispatching = NULL; /* handed over: see urs_actors_run */
	if (cur && (cur->feat & URS_FEAT_MSG_RING) && to->loop->efd < 0) {
		m->next = NULL;
		if (cur->outbox_tail)
			cur->outbox_tail->next = m;
		else
			cur->outbox_head = m;
		cur->outbox_tail = m;
		return 0;
	}
	return inbox_push(to->loop, m);
}

uint32_t urs_actors_run(struct urs_loop *loop, uint32_t budget)
{
	uint32_t n = 0;
	struct urs_actor *a;
	while (n < budget && (a = loop->ready_head)) {
		loop->ready_head = a->next_ready;
		if (!loop->ready_head)
			loop->ready_tail = NULL;
		a->flags &= ~URS_ACTOR_READY;
		/* At most URS_ACTOR_QUOTA messages per visit, so one busy actor
		 * cannot starve the others or the ring; the rest waits its turn. */
		struct urs_msg *m;
		for (uint32_t q = 0; q < URS_ACTOR_QUOTA && (m = a->mbox_head); q++) {
			a->mbox_head = m->next;
			if (!a->mbox_head)
				a->mbox_tail = NULL;
			m->flags &= (uint16_t) ~URS_MSGF_QUEUED;
			/* Sent to another loop (the inbox path hands it over at
			 * once) or kept, m may be freed, even reused, by another
			 * thread before the handler returns: then dispatching is
			 * no longer m and m is not read again. Sent on locally,
			 * it is still ours (QUEUED). */
			struct urs_msg *outer = loop->dispatching;
			loop->dispatching = m;
			if (unlikely(urs_prof_actor != NULL))
				urs_prof_actor(a, m); /* --profile: measured */
			else
				a->handler(a, m);
			if (loop->dispatching == m &&
			    !(m->flags & (URS_MSGF_QUEUED | URS_MSGF_KEPT)))
				urs_msg_free(m);
			loop->dispatching = outer;
			n++;
		}
		if (a->mbox_head && !(a->flags & URS_ACTOR_READY)) {
			a->flags |= URS_ACTOR_READY;
			a->next_ready = NULL;
			if (loop->ready_tail)
				loop->ready_tail->next_ready = a;
			else
				loop->ready_head = a;
			loop->ready_tail = a;
		}
	}
	return n;
}
