/*
 * cmd/demo.c — `ursa demo`: exercise the runtime end to end on this machine.
 *
 * A ring of actors passes a token around, a periodic timer samples progress,
 * and a batched writer streams a file through io_uring with backpressure;
 * then the file is read back and checked. It prints the io_uring features in
 * use, throughput and the process's anonymous memory.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "runtime/actor.h"
#include "runtime/probe.h"
#include "runtime/timer.h"
#include "runtime/writer.h"

#define N_ACTORS 1000
#define CHUNK	 (64u << 10)
#define N_CHUNKS 256u

struct node {
	struct urs_actor actor;
	struct node *next;
};

struct demo {
	struct urs_loop loop;
	struct node *nodes;
	uint64_t hops, hops_goal;
	struct urs_timer tick;
	unsigned ticks;
	struct urs_writer w;
	struct urs_wchunk chunks[8];
	unsigned char *buf;
	uint32_t queued, written;
	bool token_done;
};

static struct demo *D;

static void node_fn(struct urs_actor *self, struct urs_msg *m)
{
	struct node *n = container_of(self, struct node, actor);
	if (++D->hops >= D->hops_goal) {
		D->token_done = true;
		return; /* message freed by the runtime */
	}
	urs_send(&n->next->actor, m);
}

static void tick_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	if (res < 0)
		return;
	D->ticks++;
	if (D->token_done && D->written == N_CHUNKS)
		urs_timer_cancel(loop, t);
}

static void pump(struct urs_writer *w);

static void chunk_done(struct urs_writer *w, struct urs_wchunk *c, int res)
{
	(void) c;
	if (res < 0) {
		fprintf(stderr, "ursa demo: write failed: %s\n", strerror(-res));
		return;
	}
	D->written++;
	pump(w);
}

static void pump(struct urs_writer *w)
{
	while (D->queued < N_CHUNKS) {
		struct urs_wchunk *c = NULL;
		for (unsigned i = 0; i < 8 && !c; i++)
			if (!urs_wchunk_busy(&D->chunks[i]))
				c = &D->chunks[i];
		if (!c)
			return;
		if (urs_writer_write(w, c, D->buf + (size_t) (D->queued % 4) * CHUNK, CHUNK,
				     chunk_done) < 0)
			return; /* backpressure: on_ready (pump) resumes us */
		D->queued++;
	}
}

static long pss_anon_kb(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "re");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Pss_Anon: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

int cmd_demo(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	static struct demo d;
	D = &d;
	int r = urs_loop_init(&d.loop, NULL);
	if (r < 0) {
		fprintf(stderr, "ursa demo: io_uring setup failed: %s\n", strerror(-r));
		return 1;
	}
	printf("io_uring features in use:");
	for (uint32_t b = 1; b <= URS_FEAT_PBUF_INC; b <<= 1)
		if (d.loop.feat & b)
			printf(" %s", urs_feature_name(b));
	printf("\n");

	d.nodes = calloc(N_ACTORS, sizeof(*d.nodes));
	d.buf = malloc(4 * CHUNK);
	char path[] = "/tmp/ursa-demo-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	if (!d.nodes || !d.buf || fd < 0) {
		fprintf(stderr, "ursa demo: setup failed\n");
		return 1;
	}
	unlink(path);
	for (size_t i = 0; i < 4 * CHUNK; i++)
		d.buf[i] = (unsigned char) (i * 131u + 7u);
	for (unsigned i = 0; i < N_ACTORS; i++) {
		urs_actor_init(&d.nodes[i].actor, &d.loop, node_fn);
		d.nodes[i].next = &d.nodes[(i + 1) % N_ACTORS];
	}
	d.hops_goal = 2000000;
	urs_timer_start(&d.loop, &d.tick, 1000000, 1000000, tick_cb);
	urs_writer_init(&d.w, &d.loop, fd, 0, 1u << 20, 8, pump);

	uint64_t t0 = urs_now_ns();
	urs_send(&d.nodes[0].actor, urs_msg_alloc(&d.loop, 1));
	pump(&d.w);
	r = urs_loop_run(&d.loop);
	uint64_t dt = urs_now_ns() - t0;

	/* verify the file byte for byte */
	bool ok = r == 0 && d.written == N_CHUNKS && !urs_writer_error(&d.w);
	unsigned char *rb = malloc(CHUNK);
	for (uint32_t i = 0; ok && rb && i < N_CHUNKS; i++)
		ok = pread(fd, rb, CHUNK, (off_t) i * CHUNK) == (ssize_t) CHUNK &&
		     !memcmp(rb, d.buf + (size_t) (i % 4) * CHUNK, CHUNK);
	free(rb);
	close(fd);

	printf("actors: %u, token hops: %llu, timer ticks: %u\n", N_ACTORS,
	       (unsigned long long) d.hops, d.ticks);
	printf("file: %u MiB in %u chunks, %llu submits, %llu completions, verified: %s\n",
	       (N_CHUNKS * CHUNK) >> 20, N_CHUNKS, (unsigned long long) d.loop.stats.submits,
	       (unsigned long long) d.loop.stats.cqes, ok ? "yes" : "NO");
	printf("elapsed: %.1f ms, Pss_Anon: %ld kB\n", (double) dt / 1e6, pss_anon_kb());
	urs_loop_fini(&d.loop);
	free(d.nodes);
	free(d.buf);
	return ok ? 0 : 1;
}
