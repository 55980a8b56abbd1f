/*
 * bench/runtime/bench_libuv.c — the libuv peer of bench_ursa.c: the same
 * benchmarks written as a competent libuv user would write actors.
 *
 * Two designs for actors on one loop, both measured:
 *   libuv-async  each actor is a mailbox + its own uv_async_t; a send
 *                queues the message and calls uv_async_send() (one eventfd
 *                write per wake-up, one epoll turn per batch). This is the
 *                usual "actor per handle" design.
 *   libuv-sched  the fairest design we know: actors are plain structs with a
 *                mailbox; a send puts the actor on the loop's ready queue and
 *                starts one uv_idle_t, whose callback drains the queue (same
 *                4096-message budget per turn as ursa) and stops itself when
 *                it is empty. No syscall per message, like ursa.
 * Across threads: two loops, each with one uv_async_t and a mutex-protected
 * inbox (the standard libuv cross-thread pattern).
 *
 * Messages come from a per-loop free list (no malloc per message), as in
 * ursa. All libuv allocations go through the counting allocator
 * (uv_replace_allocator), see bench.h.
 * Usage: bench_libuv [name-substring...]
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "bench.h"

#define container_of(ptr, type, member) ((type *) ((char *) (ptr) -offsetof(type, member)))

/* Same sizes as bench_ursa.c, except where libuv-async needs a syscall per
 * message: fewer iterations keep the whole run short (ns/op is per message). */
#define PINGPONG_N	 (32u << 20)
#define PINGPONG_ASYNC_N (1u << 18)
#define THREADS_N	 (100000u)
#define FANOUT_ACTORS	 1000u
#define FANOUT_ROUNDS	 10000u
#define FANOUT_ASYNC_R	 200u
#define CHURN_K		 1000u
#define CHURN_ROUNDS	 300u
#define FIRE_K		 1000u
#define FIRE_ROUNDS	 100u
#define IDLE_ACTORS	 100000u
#define SCHED_BUDGET	 4096u

static void die(const char *what, int err)
{
	fprintf(stderr, "bench_libuv: %s: %s\n", what, err < 0 ? uv_strerror(err) : strerror(err));
	exit(1);
}

static void check(const char *what, int r)
{
	if (r < 0)
		die(what, r);
}

/* ---- messages: fixed records from a free list ------------------------- */

struct umsg {
	struct umsg *next;
	uint32_t type;
	unsigned char data[32];
};

struct mpool {
	struct umsg *free;
};

static struct umsg *msg_get(struct mpool *p, uint32_t type)
{
	struct umsg *m = p->free;
	if (m)
		p->free = m->next;
	else if (!(m = malloc(sizeof(*m))))
		die("malloc", ENOMEM);
	m->next = NULL;
	m->type = type;
	return m;
}

static void msg_put(struct mpool *p, struct umsg *m)
{
	m->next = p->free;
	p->free = m;
}

static void mpool_fini(struct mpool *p)
{
	while (p->free) {
		struct umsg *m = p->free;
		p->free = m->next;
		free(m);
	}
}

static void loop_close(uv_loop_t *loop);

/* ---- design 1: an actor per uv_async_t -------------------------------- */

struct aactor;
typedef void (*aactor_fn)(struct aactor *self, struct umsg *m);

struct aactor {
	uv_async_t async;
	struct umsg *head, *tail;
	aactor_fn fn;
};

static void aactor_cb(uv_async_t *h)
{
	struct aactor *a = container_of(h, struct aactor, async);
	struct umsg *m = a->head;
	a->head = a->tail = NULL;
	while (m) {
		struct umsg *next = m->next;
		a->fn(a, m);
		m = next;
	}
}

static void aactor_init(struct aactor *a, uv_loop_t *loop, aactor_fn fn)
{
	check("uv_async_init", uv_async_init(loop, &a->async, aactor_cb));
	a->head = a->tail = NULL;
	a->fn = fn;
}

static void asend(struct aactor *to, struct umsg *m)
{
	m->next = NULL;
	if (to->tail)
		to->tail->next = m;
	else
		to->head = m;
	to->tail = m;
	uv_async_send(&to->async);
}

/* ---- design 2: a ready queue drained by one uv_idle_t ----------------- */

struct sched;
struct sactor;
typedef void (*sactor_fn)(struct sactor *self, struct umsg *m);

struct sactor {
	struct sactor *next_ready;
	struct sched *s;
	sactor_fn fn;
	struct umsg *head, *tail;
	uint32_t ready;
	uint32_t id;
};

struct sched {
	uv_idle_t idle;
	struct sactor *ready_head, *ready_tail;
	bool active;
};

static void sched_cb(uv_idle_t *h)
{
	struct sched *s = container_of(h, struct sched, idle);
	uint32_t n = 0;
	struct sactor *a;
	while (n < SCHED_BUDGET && (a = s->ready_head)) {
		s->ready_head = a->next_ready;
		if (!s->ready_head)
			s->ready_tail = NULL;
		a->ready = 0;
		struct umsg *m = a->head;
		a->head = a->tail = NULL;
		while (m) {
			struct umsg *next = m->next;
			a->fn(a, m);
			m = next;
			n++;
		}
	}
	if (!s->ready_head) {
		uv_idle_stop(&s->idle);
		s->active = false;
	}
}

static void sched_init(struct sched *s, uv_loop_t *loop)
{
	check("uv_idle_init", uv_idle_init(loop, &s->idle));
	s->ready_head = s->ready_tail = NULL;
	s->active = false;
}

static void sactor_init(struct sactor *a, struct sched *s, sactor_fn fn)
{
	memset(a, 0, sizeof(*a));
	a->s = s;
	a->fn = fn;
}

static void ssend(struct sactor *to, struct umsg *m)
{
	m->next = NULL;
	if (to->tail)
		to->tail->next = m;
	else
		to->head = m;
	to->tail = m;
	if (!to->ready) {
		struct sched *s = to->s;
		to->ready = 1;
		to->next_ready = NULL;
		if (s->ready_tail)
			s->ready_tail->next_ready = to;
		else
			s->ready_head = to;
		s->ready_tail = to;
		if (!s->active) {
			uv_idle_start(&s->idle, sched_cb);
			s->active = true;
		}
	}
}

/* ---- PingPong --------------------------------------------------------- */

static uint64_t pp_left;
static struct mpool pp_pool;

struct pp_async {
	struct aactor a;
	struct pp_async *peer;
};

static void pp_async_fn(struct aactor *self, struct umsg *m)
{
	struct pp_async *p = container_of(self, struct pp_async, a);
	if (pp_left == 0) {
		msg_put(&pp_pool, m);
		uv_stop(self->async.loop);
		return;
	}
	pp_left--;
	asend(&p->peer->a, m);
}

struct pp_sched {
	struct sactor a;
	struct pp_sched *peer;
};

static void pp_sched_fn(struct sactor *self, struct umsg *m)
{
	struct pp_sched *p = container_of(self, struct pp_sched, a);
	if (pp_left == 0) {
		msg_put(&pp_pool, m);
		uv_stop(self->s->idle.loop);
		return;
	}
	pp_left--;
	ssend(&p->peer->a, m);
}

static void bench_pingpong_async(void)
{
	uv_loop_t loop;
	struct pp_async a, b;
	struct bench_mark m;
	check("uv_loop_init", uv_loop_init(&loop));
	aactor_init(&a.a, &loop, pp_async_fn);
	aactor_init(&b.a, &loop, pp_async_fn);
	a.peer = &b;
	b.peer = &a;
	for (int round = 0; round < 2; round++) {
		uint64_t n = round ? PINGPONG_ASYNC_N : PINGPONG_ASYNC_N / 8;
		bench_mark(&m);
		pp_left = n;
		asend(&a.a, msg_get(&pp_pool, 1));
		uv_run(&loop, UV_RUN_DEFAULT);
		if (round)
			bench_report("PingPong/libuv-async", n, &m, NULL);
	}
	loop_close(&loop);
}

static void bench_pingpong_sched(void)
{
	uv_loop_t loop;
	struct sched s;
	struct pp_sched a, b;
	struct bench_mark m;
	check("uv_loop_init", uv_loop_init(&loop));
	sched_init(&s, &loop);
	sactor_init(&a.a, &s, pp_sched_fn);
	sactor_init(&b.a, &s, pp_sched_fn);
	a.peer = &b;
	b.peer = &a;
	for (int round = 0; round < 2; round++) {
		uint64_t n = round ? PINGPONG_N : PINGPONG_N / 8;
		bench_mark(&m);
		pp_left = n;
		ssend(&a.a, msg_get(&pp_pool, 1));
		uv_run(&loop, UV_RUN_DEFAULT);
		if (round)
			bench_report("PingPong/libuv-sched", n, &m, NULL);
	}
	loop_close(&loop);
}

/* ---- PingPongThreads: two loops, uv_async_t + mutex-protected inbox ---- */

struct tside {
	uv_loop_t loop;
	uv_async_t async;
	pthread_mutex_t mu;
	struct umsg *head, *tail; /* inbox, under mu */
	struct tside *peer;
	uint64_t count, goal;
	bool initiator;
	pthread_barrier_t *bar;
	struct bench_mark start;
	struct umsg *first;
};

static void tsend(struct tside *to, struct umsg *m)
{
	m->next = NULL;
	pthread_mutex_lock(&to->mu);
	if (to->tail)
		to->tail->next = m;
	else
		to->head = m;
	to->tail = m;
	pthread_mutex_unlock(&to->mu);
	uv_async_send(&to->async);
}

static void tside_cb(uv_async_t *h)
{
	struct tside *s = container_of(h, struct tside, async);
	pthread_mutex_lock(&s->mu);
	struct umsg *m = s->head;
	s->head = s->tail = NULL;
	pthread_mutex_unlock(&s->mu);
	while (m) {
		struct umsg *next = m->next;
		s->count++;
		if (s->initiator && s->count == s->goal) {
			uv_stop(&s->loop); /* m is s->first: freed by the caller */
		} else {
			tsend(s->peer, m);
			if (s->count == s->goal)
				uv_stop(&s->loop);
		}
		m = next;
	}
}

static void *tside_main(void *arg)
{
	struct tside *s = arg;
	check("uv_loop_init", uv_loop_init(&s->loop));
	check("uv_async_init", uv_async_init(&s->loop, &s->async, tside_cb));
	pthread_barrier_wait(s->bar);
	if (s->initiator) {
		bench_mark(&s->start);
		tsend(s->peer, s->first);
	}
	uv_run(&s->loop, UV_RUN_DEFAULT);
	/* a late uv_async_send() from the peer must not hit a closed handle */
	pthread_barrier_wait(s->bar);
	loop_close(&s->loop);
	return NULL;
}

static void threads_run(uint64_t n, struct bench_mark *m)
{
	pthread_barrier_t bar;
	struct tside *s = calloc(2, sizeof(*s));
	if (!s)
		die("calloc", ENOMEM);
	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++) {
		s[i].peer = &s[1 - i];
		s[i].goal = n;
		s[i].initiator = i == 0;
		s[i].bar = &bar;
		pthread_mutex_init(&s[i].mu, NULL);
	}
	s[0].first = malloc(sizeof(struct umsg));
	if (!s[0].first)
		die("malloc", ENOMEM);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, tside_main, &s[i]))
			die("pthread_create", errno);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	*m = s[0].start;
	for (int i = 0; i < 2; i++)
		pthread_mutex_destroy(&s[i].mu);
	free(s[0].first);
	free(s);
}

static void bench_threads(void)
{
	struct bench_mark m;
	threads_run(THREADS_N / 10, &m);
	threads_run(THREADS_N, &m);
	bench_report("PingPongThreads/libuv", 2 * (uint64_t) THREADS_N, &m, NULL);
}

/* ---- FanOut1000 -------------------------------------------------------- */

static struct mpool fan_pool;
static uint64_t fan_rounds_left;
static uint32_t fan_pending;

struct fan_async_worker {
	struct aactor a;
	struct aactor *hub;
};

static struct fan_async_worker *fan_aw;

static void fan_async_worker_fn(struct aactor *self, struct umsg *m)
{
	asend(container_of(self, struct fan_async_worker, a)->hub, m);
}

static void fan_async_hub_fn(struct aactor *self, struct umsg *m)
{
	msg_put(&fan_pool, m);
	if (fan_pending && --fan_pending)
		return;
	if (fan_rounds_left == 0) {
		uv_stop(self->async.loop);
		return;
	}
	fan_rounds_left--;
	for (uint32_t i = 0; i < FANOUT_ACTORS; i++)
		asend(&fan_aw[i].a, msg_get(&fan_pool, 2));
	fan_pending = FANOUT_ACTORS;
}

struct fan_sched_worker {
	struct sactor a;
	struct sactor *hub;
};

static struct fan_sched_worker *fan_sw;

static void fan_sched_worker_fn(struct sactor *self, struct umsg *m)
{
	ssend(container_of(self, struct fan_sched_worker, a)->hub, m);
}

static void fan_sched_hub_fn(struct sactor *self, struct umsg *m)
{
	msg_put(&fan_pool, m);
	if (fan_pending && --fan_pending)
		return;
	if (fan_rounds_left == 0) {
		uv_stop(self->s->idle.loop);
		return;
	}
	fan_rounds_left--;
	for (uint32_t i = 0; i < FANOUT_ACTORS; i++)
		ssend(&fan_sw[i].a, msg_get(&fan_pool, 2));
	fan_pending = FANOUT_ACTORS;
}

static void bench_fanout_async(void)
{
	uv_loop_t loop;
	struct aactor hub;
	struct bench_mark m;
	check("uv_loop_init", uv_loop_init(&loop));
	fan_aw = calloc(FANOUT_ACTORS, sizeof(*fan_aw));
	if (!fan_aw)
		die("calloc", ENOMEM);
	aactor_init(&hub, &loop, fan_async_hub_fn);
	for (uint32_t i = 0; i < FANOUT_ACTORS; i++) {
		aactor_init(&fan_aw[i].a, &loop, fan_async_worker_fn);
		fan_aw[i].hub = &hub;
	}
	for (int round = 0; round < 2; round++) {
		uint64_t r = round ? FANOUT_ASYNC_R : FANOUT_ASYNC_R / 10;
		bench_mark(&m);
		fan_rounds_left = r;
		fan_pending = 0;
		asend(&hub, msg_get(&fan_pool, 1));
		uv_run(&loop, UV_RUN_DEFAULT);
		if (round)
			bench_report("FanOut1000/libuv-async", 2ull * FANOUT_ACTORS * r, &m, NULL);
	}
	loop_close(&loop);
	free(fan_aw);
}

static void bench_fanout_sched(void)
{
	uv_loop_t loop;
	struct sched s;
	struct sactor hub;
	struct bench_mark m;
	check("uv_loop_init", uv_loop_init(&loop));
	sched_init(&s, &loop);
	fan_sw = calloc(FANOUT_ACTORS, sizeof(*fan_sw));
	if (!fan_sw)
		die("calloc", ENOMEM);
	sactor_init(&hub, &s, fan_sched_hub_fn);
	for (uint32_t i = 0; i < FANOUT_ACTORS; i++) {
		sactor_init(&fan_sw[i].a, &s, fan_sched_worker_fn);
		fan_sw[i].hub = &hub;
	}
	for (int round = 0; round < 2; round++) {
		uint64_t r = round ? FANOUT_ROUNDS : FANOUT_ROUNDS / 10;
		bench_mark(&m);
		fan_rounds_left = r;
		fan_pending = 0;
		ssend(&hub, msg_get(&fan_pool, 1));
		uv_run(&loop, UV_RUN_DEFAULT);
		if (round)
			bench_report("FanOut1000/libuv-sched", 2ull * FANOUT_ACTORS * r, &m, NULL);
	}
	loop_close(&loop);
	free(fan_sw);
}

/* ---- TimerChurn / TimerFire -------------------------------------------- */

static uint32_t timer_fired;

static void churn_cb(uv_timer_t *t)
{
	(void) t;
	fprintf(stderr, "bench_libuv: a one-hour timer fired\n");
}

static void fire_cb(uv_timer_t *t)
{
	if (++timer_fired == FIRE_K)
		uv_stop(t->loop);
}

static void bench_timers(int argc, char **argv)
{
	uv_loop_t loop;
	struct bench_mark m;
	check("uv_loop_init", uv_loop_init(&loop));
	uv_timer_t *t = calloc(FIRE_K > CHURN_K ? FIRE_K : CHURN_K, sizeof(*t));
	if (!t)
		die("calloc", ENOMEM);
	for (uint32_t i = 0; i < (FIRE_K > CHURN_K ? FIRE_K : CHURN_K); i++)
		uv_timer_init(&loop, &t[i]);

	if (bench_selected(argc, argv, "TimerChurn/libuv")) {
		/* start K one-hour timers, let the loop turn once, stop them all */
		for (int round = 0; round < 2; round++) {
			uint32_t rounds = round ? CHURN_ROUNDS : CHURN_ROUNDS / 10;
			bench_mark(&m);
			for (uint32_t r = 0; r < rounds; r++) {
				uv_update_time(&loop);
				for (uint32_t i = 0; i < CHURN_K; i++)
					uv_timer_start(&t[i], churn_cb, 3600u * 1000u, 0);
				uv_run(&loop, UV_RUN_NOWAIT);
				for (uint32_t i = 0; i < CHURN_K; i++)
					uv_timer_stop(&t[i]);
			}
			if (round)
				bench_report("TimerChurn/libuv", (uint64_t) CHURN_K * rounds, &m,
					     NULL);
		}
	}
	if (bench_selected(argc, argv, "TimerFire1000/libuv")) {
		/* K timers with delays of 0 or 1 ms, until all fired */
		for (int round = 0; round < 2; round++) {
			uint32_t rounds = round ? FIRE_ROUNDS : FIRE_ROUNDS / 10;
			bench_mark(&m);
			for (uint32_t r = 0; r < rounds; r++) {
				timer_fired = 0;
				uv_update_time(&loop);
				for (uint32_t i = 0; i < FIRE_K; i++)
					uv_timer_start(&t[i], fire_cb, i & 1, 0);
				uv_run(&loop, UV_RUN_DEFAULT);
			}
			if (round)
				bench_report("TimerFire1000/libuv", (uint64_t) FIRE_K * rounds, &m,
					     NULL);
		}
	}
	loop_close(&loop);
	free(t);
}

/* ---- IdleActorMemory ---------------------------------------------------- */

/* The minimal libuv actor: its wake-up handle and a mailbox. */
struct idle_async {
	uv_async_t async;
	struct umsg *head, *tail;
};

static void idle_async_cb(uv_async_t *h)
{
	(void) h;
}

static void bench_idle(void)
{
	uv_loop_t loop;
	struct bench_mark m;
	char extra[96];
	check("uv_loop_init", uv_loop_init(&loop));
	long rss0 = bench_rss_kib();
	bench_mark(&m);
	struct idle_async *a = malloc(IDLE_ACTORS * sizeof(*a));
	if (!a)
		die("malloc", ENOMEM);
	for (uint32_t i = 0; i < IDLE_ACTORS; i++) {
		check("uv_async_init", uv_async_init(&loop, &a[i].async, idle_async_cb));
		a[i].head = a[i].tail = NULL;
	}
	long rss1 = bench_rss_kib();
	snprintf(extra, sizeof(extra), "%.1f rss-B/actor %zu sizeof-B/actor",
		 (double) (rss1 - rss0) * 1024.0 / IDLE_ACTORS, sizeof(*a));
	bench_report("IdleActorMemory/libuv-async", IDLE_ACTORS, &m, extra);
	loop_close(&loop);
	free(a);

	/* the libuv-sched actor needs no handle: only its struct */
	struct sched s;
	check("uv_loop_init", uv_loop_init(&loop));
	sched_init(&s, &loop);
	rss0 = bench_rss_kib();
	bench_mark(&m);
	struct sactor *sa = malloc(IDLE_ACTORS * sizeof(*sa));
	if (!sa)
		die("malloc", ENOMEM);
	for (uint32_t i = 0; i < IDLE_ACTORS; i++) {
		sactor_init(&sa[i], &s, NULL);
		sa[i].id = i;
	}
	rss1 = bench_rss_kib();
	snprintf(extra, sizeof(extra), "%.1f rss-B/actor %zu sizeof-B/actor",
		 (double) (rss1 - rss0) * 1024.0 / IDLE_ACTORS, sizeof(*sa));
	bench_report("IdleActorMemory/libuv-sched", IDLE_ACTORS, &m, extra);
	loop_close(&loop);
	free(sa);
}

/* ---- shutdown ------------------------------------------------------------ */

static void close_one(uv_handle_t *h, void *arg)
{
	(void) arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void loop_close(uv_loop_t *loop)
{
	uv_walk(loop, close_one, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	check("uv_loop_close", uv_loop_close(loop));
}

int main(int argc, char **argv)
{
	check("uv_replace_allocator",
	      uv_replace_allocator(bench_malloc, bench_realloc, bench_calloc, bench_free));
	if (bench_selected(argc, argv, "PingPong/libuv-async"))
		bench_pingpong_async();
	if (bench_selected(argc, argv, "PingPong/libuv-sched"))
		bench_pingpong_sched();
	if (bench_selected(argc, argv, "PingPongThreads/libuv"))
		bench_threads();
	if (bench_selected(argc, argv, "FanOut1000/libuv-async"))
		bench_fanout_async();
	if (bench_selected(argc, argv, "FanOut1000/libuv-sched"))
		bench_fanout_sched();
	bench_timers(argc, argv);
	if (bench_selected(argc, argv, "IdleActorMemory/libuv"))
		bench_idle();
	mpool_fini(&pp_pool);
	mpool_fini(&fan_pool);
	return 0;
}
