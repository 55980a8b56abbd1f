/*
 * bench/state/bench_state.c — the checkpoint serializer against gVisor's
 * benchmark shapes (ptr chain, map, slice; n = 1, 64, 1024), a 16-field
 * struct ×1000, a 20 000-node random graph, the same fields/graph data through
 * protobuf-c (pointers as node indices) in the same run, and the statefile
 * path (HMAC-SHA256 chained per chunk, optional zstd) over 100 MiB. Prints
 * Go-benchmark-style lines (bench/runtime/bench.h) with stream-bytes.
 *
 *   build/bench/state/bench_state [FILTER...]     BENCH_TIME=ms per benchmark
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "bench/runtime/bench.h"
#include "bst_types.h"
#include "bst.pb-c.h"
#ifdef URSA_HAVE_STATEFILE
#include "state/statefile.h"
#endif

static uint64_t budget_ns = 300000000ull;
static int g_argc;
static char **g_argv;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 11);
}

/* run fn until the time budget is used; report one line */
#define RUN(name, extra, ...)                              \
	do {                                               \
		if (!bench_selected(g_argc, g_argv, name)) \
			break;                             \
		{                                          \
			__VA_ARGS__;                       \
		} /* warm-up */                            \
		uint64_t n = 0, t0 = bench_now_ns();       \
		struct bench_mark m;                       \
		bench_mark(&m);                            \
		do {                                       \
			__VA_ARGS__;                       \
			n++;                               \
		} while (bench_now_ns() - t0 < budget_ns); \
		bench_report(name, n, &m, extra);          \
	} while (0)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;
	return (x > y) - (x < y);
}

/* CPU and wall time of the body in ms, each the median of 5 runs (CPU
 * time is what the path costs; wall time also counts whoever else shares
 * the core) */
#define MEDIAN5_MS(cpu, wall, ...)                                         \
	do {                                                               \
		double c_[5], w_[5];                                       \
		for (int k_ = 0; k_ < 5; k_++) {                           \
			struct bench_mark a_, b_;                          \
			bench_mark(&a_);                                   \
			__VA_ARGS__;                                       \
			bench_mark(&b_);                                   \
			c_[k_] = (double) (b_.cpu_ns - a_.cpu_ns) / 1e6;   \
			w_[k_] = (double) (b_.wall_ns - a_.wall_ns) / 1e6; \
		}                                                          \
		qsort(c_, 5, sizeof(c_[0]), cmp_double);                   \
		qsort(w_, 5, sizeof(w_[0]), cmp_double);                   \
		(cpu) = c_[2];                                             \
		(wall) = w_[2];                                            \
	} while (0)

static struct urs_st_enc enc;
static struct urs_st_dec dec;
static char extra[64];

static void must(int r, const char *what)
{
	if (r) {
		fprintf(stderr, "bench_state: %s: %d %s\n", what, r, dec.msg);
		exit(1);
	}
}

static const uint8_t *saved(size_t *len)
{
	const uint8_t *b = urs_st_enc_data(&enc, len);
	snprintf(extra, sizeof(extra), "%zu stream-bytes", *len);
	return b;
}

/* ------------------------------------------------------- gVisor's shapes */

static void bench_shapes(void)
{
	static const int ns[] = {1, 64, 1024};
	char name[64];
	for (int k = 0; k < 3; k++) {
		int n = ns[k];
		struct bnode *chain = calloc((size_t) n + 1, sizeof(*chain));
		for (int i = 0; i < n; i++)
			chain[i].next = &chain[i + 1];
		struct bnode one = {0};
		struct bmap mp = {0};
		for (int i = 0; i < n; i++)
			urs_map_put(&mp.m, (uint64_t) i, (uint64_t) (uintptr_t) &one);
		struct bslice sl = {calloc((size_t) n, sizeof(struct bnode *)), (uint32_t) n};
		for (int i = 0; i < n; i++)
			sl.s[i] = &one;
		size_t len;
		const uint8_t *b;

		snprintf(name, sizeof(name), "Encoding/ptr/%d", n);
		must(bst_save_bnode(&enc, chain), "save ptr");
		b = saved(&len);
		RUN(name, extra, must(bst_save_bnode(&enc, chain), "save"));
		uint8_t *copy = malloc(len);
		memcpy(copy, b, len);
		snprintf(name, sizeof(name), "Decoding/ptr/%d", n);
		struct bnode *o;
		RUN(name, extra, must(bst_load_bnode(&dec, copy, len, NULL, &o), "load ptr"));
		free(copy);

		snprintf(name, sizeof(name), "Encoding/map/%d", n);
		must(bst_save_bmap(&enc, &mp), "save map");
		b = saved(&len);
		RUN(name, extra, must(bst_save_bmap(&enc, &mp), "save"));
		copy = malloc(len);
		memcpy(copy, b, len);
		snprintf(name, sizeof(name), "Decoding/map/%d", n);
		struct bmap *om;
		RUN(name, extra, must(bst_load_bmap(&dec, copy, len, NULL, &om), "load map"));
		free(copy);

		snprintf(name, sizeof(name), "Encoding/slice/%d", n);
		must(bst_save_bslice(&enc, &sl), "save slice");
		b = saved(&len);
		RUN(name, extra, must(bst_save_bslice(&enc, &sl), "save"));
		copy = malloc(len);
		memcpy(copy, b, len);
		snprintf(name, sizeof(name), "Decoding/slice/%d", n);
		struct bslice *os;
		RUN(name, extra, must(bst_load_bslice(&dec, copy, len, NULL, &os), "load slice"));
		free(copy);
		free(chain);
		free(sl.s);
		urs_map_free(&mp.m);
	}
}

/* ----------------------------------------------------------------- fields */

static ProtobufCAllocator pb_alloc;
static void *pb_malloc(void *ctx, size_t n)
{
	(void) ctx;
	return bench_malloc(n);
}
static void pb_free(void *ctx, void *p)
{
	(void) ctx;
	bench_free(p);
}

static void bench_fields(void)
{
	enum { N = 1000 };
	struct bfieldsv v = {calloc(N, sizeof(struct bfields)), N};
	for (int i = 0; i < N; i++) {
		struct bfields *f = &v.items[i];
		/* half of the 16 fields zero */
		f->a0 = (uint8_t) rnd();
		f->a2 = rnd();
		f->a4 = (int8_t) rnd();
		f->a6 = (int32_t) rnd();
		f->a8 = true;
		f->a9 = (double) rnd() / 3.0;
		f->a11 = (uint64_t) rnd() << 20;
		f->a13 = -(int64_t) rnd();
	}
	size_t len;
	must(bst_save_bfieldsv(&enc, &v), "save fields");
	const uint8_t *b = saved(&len);
	RUN("Encoding/fields", extra, must(bst_save_bfieldsv(&enc, &v), "save"));
	uint8_t *copy = malloc(len);
	memcpy(copy, b, len);
	struct bfieldsv *o;
	RUN("Decoding/fields", extra, must(bst_load_bfieldsv(&dec, copy, len, NULL, &o), "load"));
	free(copy);

	/* protobuf-c: build the messages from the C structs, pack */
	PFields *pf = calloc(N, sizeof(*pf));
	PFields **pp = calloc(N, sizeof(*pp));
	uint8_t *pbuf = malloc(N * 128);
	size_t plen = 0;
	PFieldsV pv = PFIELDS_V__INIT;
#define PB_FIELDS_SAVE                                                                     \
	for (int i = 0; i < N; i++) {                                                      \
		const struct bfields *f = &v.items[i];                                     \
		PFields *p = &pf[i];                                                       \
		pfields__init(p);                                                          \
		p->a0 = f->a0, p->a1 = f->a1, p->a2 = f->a2, p->a3 = f->a3, p->a4 = f->a4; \
		p->a5 = f->a5, p->a6 = f->a6, p->a7 = f->a7, p->a8 = f->a8, p->a9 = f->a9; \
		p->a10 = f->a10, p->a11 = f->a11, p->a12 = f->a12, p->a13 = f->a13;        \
		p->a14 = f->a14, p->a15 = f->a15;                                          \
		pp[i] = p;                                                                 \
	}                                                                                  \
	pv.n_items = N;                                                                    \
	pv.items = pp;                                                                     \
	plen = pfields_v__pack(&pv, pbuf)
	PB_FIELDS_SAVE;
	snprintf(extra, sizeof(extra), "%zu stream-bytes", plen);
	RUN("Encoding/fields/protobuf-c", extra, PB_FIELDS_SAVE);
	struct bfields *out = calloc(N, sizeof(*out));
	RUN("Decoding/fields/protobuf-c", extra, {
		PFieldsV *m = pfields_v__unpack(&pb_alloc, plen, pbuf);
		for (size_t i = 0; i < m->n_items; i++) {
			const PFields *p = m->items[i];
			struct bfields *f = &out[i];
			f->a0 = (uint8_t) p->a0, f->a1 = (uint16_t) p->a1, f->a2 = p->a2;
			f->a3 = p->a3, f->a4 = (int8_t) p->a4, f->a5 = (int16_t) p->a5;
			f->a6 = p->a6, f->a7 = p->a7, f->a8 = p->a8, f->a9 = p->a9;
			f->a10 = p->a10, f->a11 = p->a11, f->a12 = p->a12, f->a13 = p->a13;
			f->a14 = (uint16_t) p->a14, f->a15 = p->a15;
		}
		pfields_v__free_unpacked(m, &pb_alloc);
	});
	free(out);
	free(pf);
	free(pp);
	free(pbuf);
	free(v.items);
}

/* ------------------------------------------------------------------ graph */

enum { GN = 20000 };

static void bench_graph(void)
{
	struct gnode *nodes = calloc(GN, sizeof(*nodes));
	struct graph g = {calloc(GN, sizeof(struct gnode *)), GN};
	uint8_t *blob = malloc((size_t) GN * 256);
	size_t refs = 0, irefs = 0, bytes = 0;
	for (int i = 0; i < GN; i++) {
		struct gnode *n = &nodes[i];
		g.nodes[i] = n;
		n->id = (uint64_t) i;
		n->flags = rnd() & 0xff;
		n->weight = (int32_t) (rnd() % 2001) - 1000;
		n->data_len = rnd() % 257;
		n->data = n->data_len ? blob + (size_t) i * 256 : NULL;
		for (uint32_t j = 0; j < n->data_len; j++)
			n->data[j] = (uint8_t) rnd();
		bytes += n->data_len;
		for (int j = 0; j < 8; j++)
			n->slots[j] = rnd() % 1000;
		int k = (int) (rnd() % 5);
		for (int j = 0; j < k; j++) {
			struct gnode *t = &nodes[rnd() % GN];
			if (rnd() % 10 == 0) {
				n->iref[j] = &t->slots[rnd() % 8];
				irefs++;
			} else {
				n->edge[j] = t;
			}
			refs++;
		}
	}
	printf("# graph: %d nodes, %zu pointers (%zu interior), %zu data bytes\n", GN, refs, irefs,
	       bytes);

	size_t len;
	must(bst_save_graph(&enc, &g), "save graph");
	const uint8_t *b = saved(&len);
	RUN("GraphSave", extra, must(bst_save_graph(&enc, &g), "save"));
	uint8_t *copy = malloc(len);
	memcpy(copy, b, len);
	struct graph *o = NULL;
	RUN("GraphLoad", extra, must(bst_load_graph(&dec, copy, len, NULL, &o), "load"));
	/* check the loaded graph against the original (when GraphLoad ran) */
	for (int i = 0; o && i < GN; i++) {
		const struct gnode *a = &nodes[i], *c = o->nodes[i];
		if (c->id != a->id || c->data_len != a->data_len ||
		    (a->data_len && memcmp(c->data, a->data, a->data_len)))
			exit(2);
		for (int j = 0; j < 4; j++) {
			if (!a->edge[j] != !c->edge[j] ||
			    (a->edge[j] && c->edge[j]->id != a->edge[j]->id))
				exit(3);
			if (!a->iref[j] != !c->iref[j])
				exit(4);
		}
	}
	RUN("GraphLoadCold", extra, {
		struct urs_st_dec d2;
		urs_st_dec_init(&d2, NULL);
		must(bst_load_graph(&d2, copy, len, NULL, &o), "load");
		urs_st_dec_free(&d2);
	});
	struct urs_st_enc e2;
	RUN("GraphSaveCold", extra, {
		urs_st_enc_init(&e2, 0, NULL, NULL);
		must(bst_save_graph(&e2, &g), "save");
		urs_st_enc_free(&e2);
	});
	urs_st_enc_stats(&enc, true);
	RUN("GraphSaveStats", extra, must(bst_save_graph(&enc, &g), "save"));
	urs_st_enc_stats(&enc, false);

	/* protobuf-c: pointers as node indices, interior pointers as (node, slot) */
	PNode *pn = calloc(GN, sizeof(*pn));
	PNode **pnp = calloc(GN, sizeof(*pnp));
	uint32_t *ids = calloc((size_t) GN * 8, sizeof(uint32_t));
	PGraph pg = PGRAPH__INIT;
	uint8_t *pbuf = malloc(len * 2 + (1 << 20));
	size_t plen = 0;
#define PB_GRAPH_SAVE                                                                  \
	for (int i = 0; i < GN; i++) {                                                 \
		const struct gnode *n = g.nodes[i];                                    \
		PNode *p = &pn[i];                                                     \
		pnode__init(p);                                                        \
		p->id = n->id, p->flags = n->flags, p->weight = n->weight;             \
		p->data.len = n->data_len, p->data.data = n->data;                     \
		p->n_slots = 8, p->slots = (uint32_t *) n->slots;                      \
		uint32_t *e = &ids[i * 8], ne = 0, ni = 0;                             \
		for (int j = 0; j < 4; j++)                                            \
			if (n->edge[j])                                                \
				e[ne++] = (uint32_t) (n->edge[j] - nodes) + 1;         \
		for (int j = 0; j < 4; j++)                                            \
			if (n->iref[j]) {                                              \
				size_t off = (size_t) ((const uint8_t *) n->iref[j] -  \
						       (const uint8_t *) nodes);       \
				uint32_t c = (uint32_t) (off / sizeof(struct gnode));  \
				uint32_t s = (uint32_t) (n->iref[j] - nodes[c].slots); \
				e[4 + ni++] = (c + 1) * 8 + s;                         \
			}                                                              \
		p->n_edge = ne, p->edge = e, p->n_iref = ni, p->iref = e + 4;          \
		pnp[i] = p;                                                            \
	}                                                                              \
	pg.n_nodes = GN, pg.nodes = pnp;                                               \
	plen = pgraph__pack(&pg, pbuf)
	PB_GRAPH_SAVE;
	snprintf(extra, sizeof(extra), "%zu stream-bytes", plen);
	RUN("GraphSave/protobuf-c", extra, PB_GRAPH_SAVE);
	RUN("GraphLoad/protobuf-c", extra, {
		PGraph *m = pgraph__unpack(&pb_alloc, plen, pbuf);
		struct gnode *out = bench_calloc(m->n_nodes, sizeof(*out));
		for (size_t i = 0; i < m->n_nodes; i++) {
			const PNode *p = m->nodes[i];
			struct gnode *n = &out[i];
			n->id = p->id, n->flags = p->flags, n->weight = p->weight;
			n->data_len = (uint32_t) p->data.len;
			n->data = bench_malloc(p->data.len + 1);
			memcpy(n->data, p->data.data, p->data.len);
			for (size_t j = 0; j < p->n_slots && j < 8; j++)
				n->slots[j] = p->slots[j];
			for (size_t j = 0; j < p->n_edge && j < 4; j++)
				n->edge[j] = &out[p->edge[j] - 1];
			for (size_t j = 0; j < p->n_iref && j < 4; j++)
				n->iref[j] = &out[p->iref[j] / 8 - 1].slots[p->iref[j] % 8];
		}
		pgraph__free_unpacked(m, &pb_alloc);
		for (size_t i = 0; i < GN; i++)
			bench_free(out[i].data);
		bench_free(out);
	});
	free(pn);
	free(pnp);
	free(ids);
	free(pbuf);
	free(copy);
	free(blob);
	free(g.nodes);
	free(nodes);
}

/* -------------------------------------------------------------- statefile */

#ifdef URSA_HAVE_STATEFILE
struct msink {
	uint8_t *p;
	size_t len, cap;
};

static int msink_write(void *ctx, const void *buf, size_t len)
{
	struct msink *s = ctx;
	if (s->len + len > s->cap)
		return -ENOSPC;
	memcpy(s->p + s->len, buf, len);
	s->len += len;
	return 0;
}

struct msrc {
	const uint8_t *p;
	size_t len, off;
};

static ssize_t msrc_read(void *ctx, void *buf, size_t len)
{
	struct msrc *s = ctx;
	size_t n = s->len - s->off < len ? s->len - s->off : len;
	memcpy(buf, s->p + s->off, n);
	s->off += n;
	return (ssize_t) n;
}

static void bench_statefile(void)
{
	const size_t total = 100u << 20;
	uint8_t *data = malloc(total);
	/* compressible: page-like records with repeated structure */
	for (size_t i = 0; i < total; i += 8) {
		uint64_t v = (i / 4096) * 0x10001 + ((i % 4096) < 2048 ? 0 : (rnd() & 0xf));
		memcpy(data + i, &v, 8);
	}
	static const uint8_t key[32] = "ursa bench key ursa bench key!!";
	struct msink s = {malloc(total + (8 << 20)), 0, total + (8 << 20)};
	uint8_t *rbuf = malloc(1 << 20);
	/* no compression, zstd level 1, zstd level -1 ("--fast=1"), zstd level 1
	 * with the writer's compression thread (URS_SF_W_THREAD: MB/s-cpu counts
	 * both threads, MB/s-wall shows the gain when a second core is free) */
	static const int zlevels[] = {0, 1, -1, 1};
	static const unsigned zflags[] = {0, 0, 0, URS_SF_W_THREAD};
	static const char *const znames[] = {"raw", "zstd1", "zstd-fast1", "zstd1-thread"};
	for (int zi = 0; zi < 4; zi++) {
		int z = zlevels[zi];
		unsigned zf = zflags[zi];
		struct urs_sf_meta meta[] = {{"kind", "bench"}};
#define SF_WRITE                                                                                   \
	do {                                                                                       \
		struct urs_sf_writer w;                                                            \
		s.len = 0;                                                                         \
		must(urs_sf_writer_open_ex(&w, msink_write, &s, key, sizeof(key), z, meta, 1, zf), \
		     "sf open");                                                                   \
		for (size_t o = 0; o < total; o += 1 << 20)                                        \
			must(urs_sf_write(&w, data + o, 1 << 20), "sf write");                     \
		must(urs_sf_writer_close(&w), "sf close");                                         \
	} while (0)
		char wname[64], rname[64];
		snprintf(wname, sizeof(wname), "StatefileWrite/100MiB/%s", znames[zi]);
		snprintf(rname, sizeof(rname), "StatefileRead/100MiB/%s", znames[zi]);
		if (!bench_selected(g_argc, g_argv, wname) &&
		    !bench_selected(g_argc, g_argv, rname))
			continue;
		SF_WRITE; /* the image the reads use; also a warm-up */
		/* MB/s from the median of 5 runs (one run is a poor sample on a
		 * shared machine); the line's ns/op is one more run */
		uint64_t budget = budget_ns;
		budget_ns = 1;
		double cms, wms;
		if (bench_selected(g_argc, g_argv, wname)) {
			MEDIAN5_MS(cms, wms, SF_WRITE);
			snprintf(extra, sizeof(extra),
				 "%zu file-bytes %.0f MB/s-cpu %.0f MB/s-wall", s.len,
				 (double) total / 1e3 / cms, (double) total / 1e3 / wms);
			RUN(wname, extra, SF_WRITE);
		}
#define SF_READ                                                                              \
	do {                                                                                 \
		struct msrc src = {s.p, s.len, 0};                                           \
		struct urs_sf_reader r;                                                      \
		must(urs_sf_reader_open(&r, msrc_read, &src, key, sizeof(key)), "sf ropen"); \
		size_t got = 0;                                                              \
		for (;;) {                                                                   \
			ssize_t k = urs_sf_read(&r, rbuf, 1 << 20);                          \
			if (k < 0)                                                           \
				must((int) k, "sf read");                                    \
			if (k == 0)                                                          \
				break;                                                       \
			got += (size_t) k;                                                   \
		}                                                                            \
		if (got != total)                                                            \
			exit(5);                                                             \
		urs_sf_reader_close(&r);                                                     \
	} while (0)
		if (bench_selected(g_argc, g_argv, rname)) {
			MEDIAN5_MS(cms, wms, SF_READ);
			snprintf(extra, sizeof(extra),
				 "%zu file-bytes %.0f MB/s-cpu %.0f MB/s-wall", s.len,
				 (double) total / 1e3 / cms, (double) total / 1e3 / wms);
			RUN(rname, extra, SF_READ);
		}
		budget_ns = budget;
	}
	free(rbuf);
	free(s.p);
	free(data);
}
#endif

int main(int argc, char **argv)
{
	g_argc = argc;
	g_argv = argv;
	const char *bt = getenv("BENCH_TIME");
	if (bt)
		budget_ns = strtoull(bt, NULL, 10) * 1000000ull;
	pb_alloc = (ProtobufCAllocator){pb_malloc, pb_free, NULL};
	if (urs_st_enc_init(&enc, 0, NULL, NULL))
		return 1;
	urs_st_dec_init(&dec, NULL);
	bench_shapes();
	bench_fields();
	bench_graph();
#ifdef URSA_HAVE_STATEFILE
	bench_statefile();
#endif
	urs_st_enc_free(&enc);
	urs_st_dec_free(&dec);
	return 0;
}
