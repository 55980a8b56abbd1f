/*
 * bench/runtime/bench_ursa.c — the ursa side of the runtime benchmarks
 * (PingPong, PingPongThreads, FanOut1000, TimerChurn, TimerFire,
 * IdleActorMemory); bench_libuv.c is the peer, written to the same shape so
 * that bench/runtime/run can put the two side by side. Built twice: with
 * glibc malloc and (BENCH_MIMALLOC) with mimalloc, for docs/allocator.md.
 *
 * Iteration counts are pinned (not auto-scaled as Go does) so that the whole
 * suite has a known run time; every benchmark runs a short warm-up first.
 * Usage: bench_ursa [name-substring...]
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "runtime/actor.h"
#include "runtime/probe.h"
#include "runtime/timer.h"

#ifdef BENCH_MIMALLOC
#include <mimalloc.h>
#define LABEL "ursa-mimalloc"
#else
#define LABEL "ursa"
#endif

#define PINGPONG_N    (32u << 20)
#define THREADS_N     (100000u)
#define FANOUT_ACTORS 1000u
#define FANOUT_ROUNDS 10000u
#define CHURN_K	      1000u
#define CHURN_ROUNDS  300u
#define FIRE_K	      1000u
#define FIRE_ROUNDS   100u
#define IDLE_ACTORS   100000u

static void die(const char *what, int err)
{
	fprintf(stderr, "bench_ursa: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void loop_init(struct urs_loop *loop, const struct urs_loop_opts *o)
{
	int r = urs_loop_init(loop, o);
	if (r < 0)
		die("urs_loop_init", r);
}

static struct urs_msg *msg_alloc(struct urs_loop *loop, uint32_t type)
{
	struct urs_msg *m = urs_msg_alloc(loop, type);
	if (!m)
		die("urs_msg_alloc", ENOMEM);
	return m;
}

static void name(char *buf, size_t len, const char *bench, const char *variant)
{
	snprintf(buf, len, "%s/%s%s", bench, LABEL, variant ? variant : "");
}

/* ---- PingPong: two actors on one loop bounce one message -------------- */

struct pp {
	struct urs_actor actor;
	struct pp *peer;
};

static uint64_t pp_left;

static void pp_fn(struct urs_actor *self, struct urs_msg *m)
{
	struct pp *p = container_of(self, struct pp, actor);
	if (pp_left == 0) {
		/* Needed: once the last message is handled and no op is live,
		 * urs_loop_run() blocks in io_uring_enter instead of returning
		 * (runtime bug, reported; see "Runtime findings" in RESULTS.md). */
		urs_loop_stop(self->loop);
		return; /* the runtime frees m */
	}
	pp_left--;
	urs_send(&p->peer->actor, m);
}

static void pp_run(struct urs_loop *loop, struct pp *a, uint64_t n)
{
	pp_left = n;
	urs_send(&a->actor, msg_alloc(loop, 1));
	int r = urs_loop_run(loop);
	if (r < 0)
		die("urs_loop_run", r);
}

static void bench_pingpong(void)
{
	struct urs_loop loop;
	struct pp a, b;
	char nm[64];
	loop_init(&loop, NULL);
	urs_actor_init(&a.actor, &loop, pp_fn);
	urs_actor_init(&b.actor, &loop, pp_fn);
	a.peer = &b;
	b.peer = &a;
	pp_run(&loop, &a, PINGPONG_N / 8);

	struct bench_mark m;
	bench_mark(&m);
	pp_run(&loop, &a, PINGPONG_N);
	name(nm, sizeof(nm), "PingPong", NULL);
	bench_report(nm, PINGPONG_N, &m, NULL);
	urs_loop_fini(&loop);
}

/* ---- PingPongThreads: the same across two loops on two threads -------- */

struct tside {
	struct urs_loop loop;
	struct urs_actor actor;
	struct tside *peer;
	struct urs_loop_opts opts;
	uint64_t count, goal; /* messages handled / to handle */
	bool initiator;
	pthread_barrier_t *bar;
	struct bench_mark start;
	int err;
};

static void tside_fn(struct urs_actor *self, struct urs_msg *m)
{
	struct tside *s = container_of(self, struct tside, actor);
	s->count++;
	if (s->initiator && s->count == s->goal) {
		urs_loop_stop(&s->loop);
		return;
	}
	urs_send(&s->peer->actor, m);
	if (s->count == s->goal)
		urs_loop_stop(&s->loop); /* the reply still goes out this turn */
}

static void *tside_main(void *arg)
{
	struct tside *s = arg;
	s->err = urs_loop_init(&s->loop, &s->opts);
	if (s->err == 0)
		urs_actor_init(&s->actor, &s->loop, tside_fn);
	pthread_barrier_wait(s->bar);
	if (s->err || s->peer->err)
		return NULL;
	urs_loop_ref(&s->loop); /* the peer will send: don't return when idle */
	if (s->initiator) {
		bench_mark(&s->start);
		urs_send(&s->peer->actor, msg_alloc(&s->loop, 1));
	}
	s->err = urs_loop_run(&s->loop);
	urs_loop_unref(&s->loop);
	/* the last message may still be freed into the peer's pool */
	pthread_barrier_wait(s->bar);
	urs_loop_fini(&s->loop);
	return NULL;
}

/* @n round trips; returns the initiator's start mark in @m. */
static void threads_run(uint64_t n, uint32_t no_feat, struct bench_mark *m)
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
		s[i].opts.no_feat = no_feat;
	}
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, tside_main, &s[i]))
			die("pthread_create", errno);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	if (s[0].err || s[1].err)
		die("PingPongThreads", s[0].err ? s[0].err : s[1].err);
	*m = s[0].start;
	free(s);
}

static void bench_threads(uint32_t no_feat, const char *variant)
{
	struct bench_mark m;
	char nm[64];
	threads_run(THREADS_N / 10, no_feat, &m);
	threads_run(THREADS_N, no_feat, &m);
	name(nm, sizeof(nm), "PingPongThreads", variant);
	bench_report(nm, 2 * (uint64_t) THREADS_N, &m, NULL); /* per one-way message */
}

/* ---- FanOut1000: a hub sends to 1000 actors, each replies ------------- */

struct fan_worker {
	struct urs_actor actor;
	struct urs_actor *hub;
};

struct fan_hub {
	struct urs_actor actor;
	struct fan_worker *w;
	uint32_t pending;
	uint64_t rounds_left;
};

static void fan_worker_fn(struct urs_actor *self, struct urs_msg *m)
{
	struct fan_worker *w = container_of(self, struct fan_worker, actor);
	urs_send(w->hub, m); /* reply with the same message */
}

static void fan_hub_fn(struct urs_actor *self, struct urs_msg *m)
{
	struct fan_hub *h = container_of(self, struct fan_hub, actor);
	(void) m; /* a reply (or the kick-off): the runtime frees it */
	if (h->pending && --h->pending)
		return;
	if (h->rounds_left == 0) {
		urs_loop_stop(self->loop);
		return;
	}
	h->rounds_left--;
	for (uint32_t i = 0; i < FANOUT_ACTORS; i++)
		urs_send(&h->w[i].actor, msg_alloc(self->loop, 2));
	h->pending = FANOUT_ACTORS;
}

static void fan_run(struct urs_loop *loop, struct fan_hub *h, uint64_t rounds)
{
	h->rounds_left = rounds;
	h->pending = 0;
	urs_send(&h->actor, msg_alloc(loop, 1));
	int r = urs_loop_run(loop);
	if (r < 0)
		die("urs_loop_run", r);
}

static void bench_fanout(void)
{
	struct urs_loop loop;
	struct fan_hub hub;
	char nm[64];
	loop_init(&loop, NULL);
	hub.w = calloc(FANOUT_ACTORS, sizeof(*hub.w));
	if (!hub.w)
		die("calloc", ENOMEM);
	urs_actor_init(&hub.actor, &loop, fan_hub_fn);
	for (uint32_t i = 0; i < FANOUT_ACTORS; i++) {
		urs_actor_init(&hub.w[i].actor, &loop, fan_worker_fn);
		hub.w[i].hub = &hub.actor;
	}
	fan_run(&loop, &hub, FANOUT_ROUNDS / 10);

	struct bench_mark m;
	bench_mark(&m);
	fan_run(&loop, &hub, FANOUT_ROUNDS);
	name(nm, sizeof(nm), "FanOut1000", NULL);
	/* two messages per actor per round: request and reply */
	bench_report(nm, 2ull * FANOUT_ACTORS * FANOUT_ROUNDS, &m, NULL);
	free(hub.w);
	urs_loop_fini(&loop);
}

/* ---- TimerChurn / TimerFire ------------------------------------------- */

static uint32_t timer_finals, timer_fired, timer_errors;

static void churn_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	(void) t;
	if (res == -ECANCELED)
		timer_finals++;
	else
		timer_errors++; /* fired (an hour early?) or refused */
}

/* Arm K one-hour timers, submit them, cancel them all and wait for every
 * final -ECANCELED callback (only then may a record be reused). */
static void churn_round(struct urs_loop *loop, struct urs_timer *t)
{
	timer_finals = 0;
	for (uint32_t i = 0; i < CHURN_K; i++)
		if (urs_timer_start(loop, &t[i], 3600ull * 1000000000ull, 0, churn_cb) < 0)
			die("urs_timer_start", EBUSY);
	urs_loop_run_once(loop, false); /* into the kernel, as a real timeout would be */
	for (uint32_t i = 0; i < CHURN_K; i++)
		urs_timer_cancel(loop, &t[i]);
	while (timer_finals < CHURN_K) {
		int r = urs_loop_run_once(loop, true);
		if (r < 0)
			die("urs_loop_run_once", r);
	}
}

static void fire_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	(void) t;
	if (res == 0)
		timer_fired++;
	else
		timer_errors++;
}

/* K timers with delays of 0 or 1 ms (libuv's resolution), until all fired. */
static void fire_round(struct urs_loop *loop, struct urs_timer *t)
{
	timer_fired = 0;
	for (uint32_t i = 0; i < FIRE_K; i++)
		if (urs_timer_start(loop, &t[i], (i & 1) * 1000000ull, 0, fire_cb) < 0)
			die("urs_timer_start", EBUSY);
	while (timer_fired < FIRE_K) {
		int r = urs_loop_run_once(loop, true);
		if (r < 0)
			die("urs_loop_run_once", r);
	}
}

static void bench_timers(int argc, char **argv)
{
	struct urs_loop loop;
	struct bench_mark m;
	char nm[64];
	loop_init(&loop, NULL);
	struct urs_timer *t = calloc(CHURN_K > FIRE_K ? CHURN_K : FIRE_K, sizeof(*t));
	if (!t)
		die("calloc", ENOMEM);

	name(nm, sizeof(nm), "TimerChurn", NULL);
	if (bench_selected(argc, argv, nm)) {
		for (uint32_t i = 0; i < CHURN_ROUNDS / 10; i++)
			churn_round(&loop, t);
		bench_mark(&m);
		for (uint32_t i = 0; i < CHURN_ROUNDS; i++)
			churn_round(&loop, t);
		bench_report(nm, (uint64_t) CHURN_K * CHURN_ROUNDS, &m, NULL);
	}
	name(nm, sizeof(nm), "TimerFire1000", NULL);
	if (bench_selected(argc, argv, nm)) {
		for (uint32_t i = 0; i < FIRE_ROUNDS / 10; i++)
			fire_round(&loop, t);
		bench_mark(&m);
		for (uint32_t i = 0; i < FIRE_ROUNDS; i++)
			fire_round(&loop, t);
		bench_report(nm, (uint64_t) FIRE_K * FIRE_ROUNDS, &m, NULL);
	}
	if (timer_errors)
		fprintf(stderr, "bench_ursa: %u unexpected timer results\n", timer_errors);
	free(t);
	urs_loop_fini(&loop);
}

/* ---- IdleActorMemory: 100 000 idle actors in one array ---------------- */

/* The smallest useful actor: the runtime's part and nothing else (an owner
 * would add its state next to it). */
struct idle_actor {
	struct urs_actor actor;
};

static void idle_fn(struct urs_actor *self, struct urs_msg *m)
{
	(void) self;
	(void) m;
}

static void bench_idle(void)
{
	struct urs_loop loop;
	char nm[64], extra[96];
	loop_init(&loop, NULL);
	long rss0 = bench_rss_kib();
	struct bench_mark m;
	bench_mark(&m);
	struct idle_actor *a = malloc(IDLE_ACTORS * sizeof(*a));
	if (!a)
		die("malloc", ENOMEM);
	for (uint32_t i = 0; i < IDLE_ACTORS; i++) {
		urs_actor_init(&a[i].actor, &loop, idle_fn);
		a[i].actor.id = i;
	}
	long rss1 = bench_rss_kib();
	snprintf(extra, sizeof(extra), "%.1f rss-B/actor %zu sizeof-B/actor",
		 (double) (rss1 - rss0) * 1024.0 / IDLE_ACTORS, sizeof(*a));
	name(nm, sizeof(nm), "IdleActorMemory", NULL);
	bench_report(nm, IDLE_ACTORS, &m, extra);
	free(a);
	urs_loop_fini(&loop);
}

int main(int argc, char **argv)
{
	char nm[64];
#ifdef BENCH_MIMALLOC
	/* also keeps libmimalloc linked under --as-needed */
	fprintf(stderr, "bench_ursa: mimalloc %d\n", mi_version());
#endif
	name(nm, sizeof(nm), "PingPong", NULL);
	if (bench_selected(argc, argv, nm))
		bench_pingpong();
	name(nm, sizeof(nm), "PingPongThreads", NULL);
	if (bench_selected(argc, argv, nm))
		bench_threads(0, NULL);
	name(nm, sizeof(nm), "PingPongThreads", "-eventfd");
	if (bench_selected(argc, argv, nm))
		bench_threads(URS_FEAT_MSG_RING, "-eventfd");
	name(nm, sizeof(nm), "FanOut1000", NULL);
	if (bench_selected(argc, argv, nm))
		bench_fanout();
	bench_timers(argc, argv);
	name(nm, sizeof(nm), "IdleActorMemory", NULL);
	if (bench_selected(argc, argv, nm))
		bench_idle();
	return 0;
}
