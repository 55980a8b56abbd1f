/*
 * tests/runtime/test_actor.c — actor messaging: FIFO order, 10 000 actors,
 * same-loop sends cost no syscall, message ownership (free, keep, forward),
 * pool backpressure, cross-thread delivery through MSG_RING and through
 * the eventfd fallback, and a message sent to another thread from a handler
 * left alone by the sender once handed over. Side threads record what
 * they saw; only the test's thread asserts (a cmocka failure longjmps).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "runtime/actor.h"
#include "runtime/probe.h"

struct counter {
	struct urs_actor a;
	uint32_t next_expected;
	uint32_t got;
	struct urs_actor *reply_to;
};

static void order_fn(struct urs_actor *self, struct urs_msg *m)
{
	struct counter *c = container_of(self, struct counter, a);
	uint32_t v;
	memcpy(&v, m->data, sizeof(v));
	assert_int_equal(v, c->next_expected);
	c->next_expected++;
	c->got++;
}

static struct urs_msg *msg_u32(struct urs_loop *loop, uint32_t v)
{
	struct urs_msg *m = urs_msg_alloc(loop, 1);
	assert_non_null(m);
	memcpy(m->data, &v, sizeof(v));
	m->len = sizeof(v);
	return m;
}

static void test_order_and_no_syscall(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct counter c = {0};
	urs_actor_init(&c.a, &loop, order_fn);
	assert_int_equal(urs_loop_flush(&loop), 0); /* e.g. the eventfd read of the fallback */
	uint64_t submits = loop.stats.submits;
	for (uint32_t i = 0; i < 10000; i++)
		assert_int_equal(urs_send(&c.a, msg_u32(&loop, i)), 0);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(c.got, 10000);
	assert_int_equal(loop.stats.submits, submits); /* no io_uring_enter at all */
	assert_int_equal(loop.stats.msgs_local, 10000);
	/* every message went back to the pool: sending again does not grow it */
	uint32_t total = loop.msgs.total;
	for (uint32_t i = 0; i < 10000; i++)
		assert_int_equal(urs_send(&c.a, msg_u32(&loop, 10000 + i)), 0);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(c.got, 20000);
	assert_int_equal(loop.msgs.total, total);
	urs_loop_fini(&loop);
}

/* 10 000 actors, each replies to a collector; the collector counts. */
struct collector {
	struct urs_actor a;
	uint32_t replies;
	uint8_t *seen;
};

static void echo_fn(struct urs_actor *self, struct urs_msg *m)
{
	struct counter *c = container_of(self, struct counter, a);
	c->got++;
	memcpy(m->data, &self->id, sizeof(self->id));
	urs_send(c->reply_to, m); /* forward the same message back */
}

static void collect_fn(struct urs_actor *self, struct urs_msg *m)
{
	struct collector *c = container_of(self, struct collector, a);
	uint32_t id;
	memcpy(&id, m->data, sizeof(id));
	assert_int_equal(c->seen[id], 0);
	c->seen[id] = 1;
	c->replies++;
}

static void test_ten_thousand_actors(void **state)
{
	(void) state;
	enum { N = 10000 };
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct counter *cs = calloc(N, sizeof(*cs));
	struct collector col = {.seen = calloc(N, 1)};
	urs_actor_init(&col.a, &loop, collect_fn);
	for (uint32_t i = 0; i < N; i++) {
		urs_actor_init(&cs[i].a, &loop, echo_fn);
		cs[i].a.id = i;
		cs[i].reply_to = &col.a;
	}
	for (int round = 0; round < 3; round++) {
		col.replies = 0;
		memset(col.seen, 0, N);
		for (uint32_t i = 0; i < N; i++)
			assert_int_equal(urs_send(&cs[i].a, urs_msg_alloc(&loop, 2)), 0);
		assert_int_equal(urs_loop_run(&loop), 0);
		assert_int_equal(col.replies, N);
	}
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(cs[i].got, 3);
	assert_true(sizeof(struct urs_actor) <= 128);
	free(cs);
	free(col.seen);
	urs_loop_fini(&loop);
}

/* Keep a message past the handler, free it later. */
static struct urs_msg *kept;
static void keep_fn(struct urs_actor *self, struct urs_msg *m)
{
	(void) self;
	urs_msg_keep(m);
	kept = m;
}

static void test_keep_and_backpressure(void **state)
{
	(void) state;
	struct urs_loop loop;
	struct urs_loop_opts o = {.msg_max = 3};
	assert_int_equal(urs_loop_init(&loop, &o), 0);
	struct urs_actor a;
	urs_actor_init(&a, &loop, keep_fn);
	struct urs_msg *m1 = urs_msg_alloc(&loop, 1), *m2 = urs_msg_alloc(&loop, 1),
		       *m3 = urs_msg_alloc(&loop, 1);
	assert_non_null(m3);
	assert_null(urs_msg_alloc(&loop, 1)); /* cap reached: backpressure */
	urs_send(&a, m1);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_ptr_equal(kept, m1);
	assert_null(urs_msg_alloc(&loop, 1)); /* kept, so still not free */
	urs_msg_free(kept);
	urs_msg_free(m2);
	urs_msg_free(m3);
	assert_non_null(urs_msg_alloc(&loop, 1));
	assert_true(urs_msg_capacity(&loop) >= 32);
	urs_loop_fini(&loop);
}

/* Cross-thread ping-pong: each thread owns a loop and an actor. */
struct side {
	struct urs_loop loop;
	struct urs_actor a;
	struct side *peer;
	uint32_t no_feat;
	uint32_t rounds, got, next_expected, bad;
	int init_rc, run_rc;
	pthread_barrier_t *ready;
	bool starter;
};

static void pp_fn(struct urs_actor *self, struct urs_msg *m)
{
	struct side *s = container_of(self, struct side, a);
	uint32_t v;
	memcpy(&v, m->data, sizeof(v));
	s->bad += v != s->next_expected;
	s->got++;
	s->next_expected = v + 2;
	if (s->got == s->rounds)
		urs_loop_unref(&s->loop);
	if (v + 1 < 2 * s->rounds) {
		v++;
		memcpy(m->data, &v, sizeof(v));
		urs_send(&s->peer->a, m); /* forward: the message crosses threads */
	}
}

static void *side_main(void *arg)
{
	struct side *s = arg;
	struct urs_loop_opts o = {.no_feat = s->no_feat};
	s->init_rc = urs_loop_init(&s->loop, &o);
	urs_actor_init(&s->a, &s->loop, pp_fn);
	urs_loop_ref(&s->loop); /* stay alive until all rounds arrived */
	pthread_barrier_wait(s->ready);
	if (s->init_rc || s->peer->init_rc) {
		pthread_barrier_wait(s->ready);
		if (!s->init_rc)
			urs_loop_fini(&s->loop);
		return NULL;
	}
	if (s->starter) {
		struct urs_msg *m = urs_msg_alloc(&s->loop, 1);
		uint32_t v = 0;
		memcpy(m->data, &v, sizeof(v));
		m->len = sizeof(v);
		urs_send(&s->peer->a, m);
	}
	s->run_rc = urs_loop_run(&s->loop);
	pthread_barrier_wait(s->ready); /* nobody frees into a dead pool */
	urs_loop_fini(&s->loop);
	return NULL;
}

static struct side a, b;

static void run_pingpong(uint32_t no_feat)
{
	pthread_barrier_t ready;
	pthread_barrier_init(&ready, NULL, 2);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.peer = &b;
	b.peer = &a;
	a.no_feat = b.no_feat = no_feat;
	a.rounds = b.rounds = 20000;
	a.ready = b.ready = &ready;
	a.starter = true;
	a.next_expected = 1; /* a receives odd values, b even */
	b.next_expected = 0;
	pthread_t ta, tb;
	pthread_create(&ta, NULL, side_main, &a);
	pthread_create(&tb, NULL, side_main, &b);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	pthread_barrier_destroy(&ready);
	assert_int_equal(a.init_rc, 0);
	assert_int_equal(b.init_rc, 0);
	assert_int_equal(a.run_rc, 0);
	assert_int_equal(b.run_rc, 0);
	assert_int_equal(a.got, 20000);
	assert_int_equal(b.got, 20000);
	assert_int_equal(a.bad + b.bad, 0); /* every value in order */
}

static void test_cross_thread_msg_ring(void **state)
{
	(void) state;
	if (!urs_has(URS_FEAT_MSG_RING))
		skip();
	run_pingpong(0);
	assert_int_equal(a.loop.stats.msgs_remote, 20000); /* every hop via MSG_RING */
	assert_int_equal(b.loop.stats.msgs_remote, 20000);
}

static void test_cross_thread_eventfd_fallback(void **state)
{
	(void) state;
	run_pingpong(URS_FEAT_MSG_RING);
	assert_int_equal(a.loop.stats.msgs_remote, 0);
	assert_true(a.loop.efd == -1 && b.loop.stats.cqes > 0); /* woken by eventfd reads */
}

/*
 * A handler sends its message to an actor of another thread (the eventfd
 * inbox, which hands it over at once) and returns only after the receiver
 * has handled it, and the runtime has freed it there (into the home pool's
 * remote list). The sender's runtime must not look at the message again:
 * it used to read its flags after the handler, found QUEUED cleared by the
 * receiver and freed it a second time (a crash when the freed message was
 * still travelling). Then the home pool (msg_max 2) gives out exactly two
 * different messages.
 */
struct handover {
	struct urs_loop loop;
	struct urs_actor a;
	int init_rc, run_rc;
	_Atomic int handled; /* the receiver's handler ran */
	pthread_barrier_t ready;
};
static struct handover far;

static void far_fn(struct urs_actor *self, struct urs_msg *m)
{
	(void) m; /* not kept: freed by this thread's runtime, remotely */
	struct handover *h = container_of(self, struct handover, a);
	atomic_store(&h->handled, 1);
	urs_loop_unref(&h->loop);
}

static void *far_main(void *arg)
{
	struct handover *h = arg;
	struct urs_loop_opts o = {.no_feat = URS_FEAT_MSG_RING};
	h->init_rc = urs_loop_init(&h->loop, &o);
	urs_actor_init(&h->a, &h->loop, far_fn);
	urs_loop_ref(&h->loop); /* until the message came */
	pthread_barrier_wait(&h->ready);
	if (h->init_rc)
		return NULL;
	h->run_rc = urs_loop_run(&h->loop);
	urs_loop_fini(&h->loop);
	return NULL;
}

static bool near_waited;

static void near_fn(struct urs_actor *self, struct urs_msg *m)
{
	(void) self;
	urs_send(&far.a, m);
	/* until the far side ran its handler and (right after) freed m */
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < 20000 && !atomic_load(&far.handled); i++)
		nanosleep(&ms, NULL);
	near_waited = atomic_load(&far.handled);
	for (int i = 0; i < 100; i++)
		sched_yield(); /* let its free land (the test does not rely on it) */
}

static void test_handed_over_not_touched(void **state)
{
	(void) state;
	struct urs_loop loop;
	struct urs_loop_opts o = {.msg_max = 2, .no_feat = URS_FEAT_MSG_RING};
	assert_int_equal(urs_loop_init(&loop, &o), 0);
	struct urs_actor near;
	urs_actor_init(&near, &loop, near_fn);
	memset(&far, 0, sizeof(far));
	pthread_barrier_init(&far.ready, NULL, 2);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, far_main, &far), 0);
	pthread_barrier_wait(&far.ready);
	assert_int_equal(far.init_rc, 0);
	struct urs_msg *m = urs_msg_alloc(&loop, 1);
	assert_non_null(m);
	assert_int_equal(urs_send(&near, m), 0);
	assert_int_equal(urs_loop_run(&loop), 0);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&far.ready);
	assert_true(near_waited);
	assert_int_equal(far.run_rc, 0);
	struct urs_msg *got[3] = {0};
	int n = 0;
	while (n < 3 && (got[n] = urs_msg_alloc(&loop, 1)))
		n++;
	assert_int_equal(n, 2); /* freed once: not three messages from two */
	assert_ptr_not_equal(got[0], got[1]);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_no_syscall),
		cmocka_unit_test(test_ten_thousand_actors),
		cmocka_unit_test(test_keep_and_backpressure),
		cmocka_unit_test(test_cross_thread_msg_ring),
		cmocka_unit_test(test_cross_thread_eventfd_fallback),
		cmocka_unit_test(test_handed_over_not_touched),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
