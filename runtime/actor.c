/*
 * runtime/actor.c — mailboxes, the ready queue and message transport.
 * See actor.h for the ownership rules.
 */
#include "runtime/actor.h"

#include <string.h>

#include "runtime/probe.h"

#define ACTOR_READY 1u

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

struct urs_msg *urs_msg_alloc(struct urs_loop *loop, uint32_t type)
{
	struct urs_msg *m = urs_pool_get(&loop->msgs);
	if (!m)
		return NULL;
	m->next = NULL;
	m->to = NULL;
	m->home = loop;
	m->type = type;
	m->flags = 0;
	m->len = 0;
	return m;
}

void urs_msg_free(struct urs_msg *m)
{
	struct urs_loop *home = m->home;
	if (home == urs_loop_current())
		urs_pool_put(&home->msgs, m);
	else
		urs_pool_put_remote(&home->msgs, m);
}

static inline void mbox_push(struct urs_loop *loop, struct urs_actor *to, struct urs_msg *m)
{
	m->next = NULL;
	if (to->mbox_tail)
		to->mbox_tail->next = m;
	else
		to->mbox_head = m;
	to->mbox_tail = m;
	if (!(to->flags & ACTOR_READY)) {
		to->flags |= ACTOR_READY;
		to->next_ready = NULL;
		if (loop->ready_tail)
			loop->ready_tail->next_ready = to;
		else
			loop->ready_head = to;
		loop->ready_tail = to;
	}
}

void urs_actor_deliver_remote(struct urs_loop *loop, struct urs_msg *m)
{
	mbox_push(loop, m->to, m);
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
		if (write(target->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return -errno;
	}
	return 0;
}

int urs_send(struct urs_actor *to, struct urs_msg *m)
{
	struct urs_loop *cur = urs_loop_current();
	m->to = to;
	m->flags = (uint16_t) ((m->flags & ~URS_MSGF_KEPT) | URS_MSGF_QUEUED);
	if (likely(to->loop == cur)) {
		cur->stats.msgs_local++;
		mbox_push(cur, to, m);
		return 0;
	}
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
		a->flags &= ~ACTOR_READY;
		/* Take the mailbox as it is now; what handlers send meanwhile
		 * (even to this actor) queues behind and runs in a later pass. */
		struct urs_msg *m = a->mbox_head;
		a->mbox_head = a->mbox_tail = NULL;
		while (m) {
			struct urs_msg *next = m->next;
			m->flags &= (uint16_t) ~URS_MSGF_QUEUED;
			a->handler(a, m);
			if (!(m->flags & (URS_MSGF_QUEUED | URS_MSGF_KEPT)))
				urs_msg_free(m);
			m = next;
			n++;
		}
	}
	return n;
}
