/*
 * state/codec.c — the serializer's run time outside the per-field hot path:
 * encoder buffer and sink, pointer-identity table (open addressing keyed by
 * address, sized once per save, no allocation per object), the one-pass
 * save (objects written in ID order as they are discovered), the deferred
 * reference table and interior-reference lookup, the decoder's type-table parsing and field
 * mapping (once per stream), bounded readers, generic skipping of fields the
 * current schema dropped, the object-ID table and the arena. The generated
 * per-type code (NAME_codec.c) does the rest. Format: docs/state-format.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state/codec.h"
#include "runtime/common.h"

#define ENC_DEFAULT_BUF (1u << 20)
#define ARENA_BLOCK	(1u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* ---------------------------------------------------------------- encoder */

static uint8_t *uv_u32x8_scalar(uint8_t *p, const uint32_t *v)
{
	for (int i = 0; i < 8; i++)
		p = urs_st_uv(p, v[i]);
	return p;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* shuffle for each mask of "needs two bytes" lanes: byte 2k (low 7 bits
 * and the continuation bit) of every lane, byte 2k + 1 only when set */
static uint8_t uv_shuf[256][16];
static bool uv_simd;

__attribute__((constructor)) static void uv_simd_init(void)
{
	for (unsigned m = 0; m < 256; m++) {
		unsigned k = 0;
		for (unsigned l = 0; l < 8; l++) {
			uv_shuf[m][k++] = (uint8_t) (2 * l);
			if (m >> l & 1)
				uv_shuf[m][k++] = (uint8_t) (2 * l + 1);
		}
		while (k < 16)
			uv_shuf[m][k++] = 0x80;
	}
	__builtin_cpu_init();
	uv_simd = __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt");
}

__attribute__((target("ssse3,popcnt"))) static uint8_t *uv_u32x8_ssse3(uint8_t *p,
								       const uint32_t *v)
{
	__m128i a = _mm_loadu_si128((const __m128i *) v);
	__m128i b = _mm_loadu_si128((const __m128i *) (v + 4));
	__m128i z = _mm_setzero_si128();
	if (_mm_movemask_epi8(_mm_cmpeq_epi32(_mm_srli_epi32(_mm_or_si128(a, b), 14), z)) != 0xffff)
		return uv_u32x8_scalar(p, v);
	__m128i w = _mm_packs_epi32(a, b); /* 8 × u16, no saturation below 2^14 */
	__m128i big = _mm_cmpgt_epi16(w, _mm_set1_epi16(127));
	__m128i lo = _mm_or_si128(_mm_and_si128(w, _mm_set1_epi16(0x7f)),
				  _mm_and_si128(big, _mm_set1_epi16(0x80)));
	__m128i hi = _mm_slli_epi16(_mm_srli_epi16(w, 7), 8);
	unsigned m = (unsigned) _mm_movemask_epi8(_mm_packs_epi16(big, z)) & 0xff;
	__m128i out = _mm_shuffle_epi8(_mm_or_si128(lo, hi),
				       _mm_loadu_si128((const __m128i *) uv_shuf[m]));
	_mm_storeu_si128((__m128i *) p, out);
	return p + 8 + __builtin_popcount(m);
}

uint8_t *urs_st_uv_u32x8(uint8_t *p, const uint32_t *v)
{
	return uv_simd ? uv_u32x8_ssse3(p, v) : uv_u32x8_scalar(p, v);
}
#else
uint8_t *urs_st_uv_u32x8(uint8_t *p, const uint32_t *v)
{
	return uv_u32x8_scalar(p, v);
}
#endif

int urs_st_enc_init(struct urs_st_enc *e, size_t bufsize, urs_st_sink sink, void *ctx)
{
	memset(e, 0, sizeof(*e));
	e->cap = bufsize ? bufsize : ENC_DEFAULT_BUF;
	if (e->cap < 64)
		e->cap = 64;
	e->buf = malloc(e->cap);
	if (!e->buf)
		return -ENOMEM;
	e->p = e->buf;
	e->end = e->buf + e->cap;
	e->sink = sink;
	e->sink_ctx = ctx;
	return 0;
}

void urs_st_enc_free(struct urs_st_enc *e)
{
	free(e->buf);
	free(e->ht);
	free(e->objs);
	free(e->ranges);
	free(e->rfirst);
	free(e->refs);
	free(e->stats);
	memset(e, 0, sizeof(*e));
}

int urs_st_enc_stats(struct urs_st_enc *e, bool on)
{
	free(e->stats);
	e->stats = NULL;
	if (on) {
		/* sized on first save, when the schema is known */
		e->stats = calloc(4096, sizeof(*e->stats));
		if (!e->stats)
			return -ENOMEM;
	}
	return 0;
}

void urs_st_enc_fail(struct urs_st_enc *e, int err, const char *field)
{
	if (!e->err) {
		e->err = err;
		e->err_field = field;
	}
}

static int enc_flush(struct urs_st_enc *e)
{
	size_t n = (size_t) (e->p - e->buf);
	if (n && !e->err) {
		int r = e->sink(e->sink_ctx, e->buf, n);
		if (r < 0) {
			urs_st_enc_fail(e, r, "(sink)");
			return r;
		}
		e->flushed += n;
	}
	e->p = e->buf;
	return e->err;
}

/* Make room for @need bytes: flush to the sink, or grow the buffer. On
 * failure the error sticks and false is returned. */
bool urs_st_enc_grow(struct urs_st_enc *e, size_t need)
{
	if (e->err)
		return false;
	if (e->sink) {
		if (enc_flush(e))
			return false;
		if ((size_t) (e->end - e->p) >= need)
			return true;
	}
	size_t used = (size_t) (e->p - e->buf);
	size_t cap = e->cap * 2;
	while (cap - used < need)
		cap *= 2;
	uint8_t *nb = realloc(e->buf, cap);
	if (!nb) {
		urs_st_enc_fail(e, -ENOMEM, "(buffer)");
		return false;
	}
	e->buf = nb;
	e->p = nb + used;
	e->cap = cap;
	e->end = nb + cap;
	return true;
}

void urs_st_put_raw(struct urs_st_enc *e, const void *src, size_t n)
{
	if ((size_t) (e->end - e->p) >= n) {
		memcpy(e->p, src, n);
		e->p += n;
		return;
	}
	if (e->sink && n >= e->cap / 2) {
		/* large: flush what is buffered, hand the bytes over directly */
		if (enc_flush(e))
			return;
		int r = e->sink(e->sink_ctx, src, n);
		if (r < 0)
			urs_st_enc_fail(e, r, "(sink)");
		else
			e->flushed += n;
		return;
	}
	if (!urs_st_enc_grow(e, n))
		return;
	memcpy(e->p, src, n);
	e->p += n;
}

/* (Re)allocate the identity table with @ncap slots (a power of two) and move
 * the current save's entries over. */
static int ht_resize(struct urs_st_enc *e, uint32_t ncap)
{
	struct urs_st_hslot *nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	if (e->ht && e->ht_used) {
		for (uint32_t i = 0; i <= e->ht_mask; i++) {
			const struct urs_st_hslot *s = &e->ht[i];
			if (s->epoch != e->epoch)
				continue;
			uint32_t j = urs_st_addr_hash(s->key) & (ncap - 1);
			while (nt[j].epoch == e->epoch)
				j = (j + 1) & (ncap - 1);
			nt[j] = *s;
		}
	}
	free(e->ht);
	e->ht = nt;
	e->ht_mask = ncap - 1;
	return 0;
}

static const struct urs_st_hslot *ht_find(const struct urs_st_enc *e, uintptr_t key)
{
	uint32_t i = urs_st_addr_hash(key) & e->ht_mask;
	for (;;) {
		const struct urs_st_hslot *s = &e->ht[i];
		if (s->epoch != e->epoch)
			return NULL;
		if (s->key == key)
			return s;
		i = (i + 1) & e->ht_mask;
	}
}

void urs_st_enc_type_err(struct urs_st_enc *e)
{
	urs_st_enc_fail(e, -EINVAL, "(one address saved as two types)");
}

/* Register a new object at identity slot @slot (the empty slot its probe
 * ended on): the next ID, appended to the work queue. */
uint32_t urs_st_enc_new(struct urs_st_enc *e, const void *p, uint32_t type, uint32_t slot)
{
	uintptr_t key = (uintptr_t) p;
	if (__builtin_expect((uint64_t) (e->ht_used + 1) * 4 > (uint64_t) (e->ht_mask + 1) * 3,
			     0)) {
		if (e->ht_mask >= UINT32_MAX / 4 || ht_resize(e, (e->ht_mask + 1) * 2)) {
			urs_st_enc_fail(e, -ENOMEM, "(identity table)");
			return 0;
		}
		slot = urs_st_addr_hash(key) & e->ht_mask;
		while (e->ht[slot].epoch == e->epoch)
			slot = (slot + 1) & e->ht_mask;
	}
	if (__builtin_expect(e->nobjs == e->objs_cap, 0) &&
	    urs_grow((void **) &e->objs, &e->objs_cap, e->nobjs, sizeof(*e->objs), 1024)) {
		urs_st_enc_fail(e, -ENOMEM, "(object table)");
		return 0;
	}
	uint32_t id = ++e->nobjs;
	e->objs[id - 1] = (struct urs_st_eobj){p, type, (uint32_t) e->schema->types[type].size};
	e->ht[slot] = (struct urs_st_hslot){key, id, (uint16_t) type, e->epoch};
	e->ht_used++;
	return id;
}

bool urs_st_enc_ref_grow(struct urs_st_enc *e)
{
	if (urs_grow((void **) &e->refs, &e->refs_cap, e->nrefs, sizeof(*e->refs), 1024)) {
		urs_st_enc_fail(e, -ENOMEM, "(reference table)");
		return false;
	}
	return true;
}

#define RADIX_BITS 11
#define RADIX_N	   (1u << RADIX_BITS)

/* The range table: every object whose type can hold a reference target
 * (has a locate function), sorted by start address — as registered when
 * that is already address order (objects allocated in order and reached in
 * order), else by an LSD radix sort on (start - lowest start), 11 bits a
 * pass, only as many passes as the span needs and a pass skipped when every
 * key has the same digit — plus a bucket index over the sorted starts. */
/* room for @n ranges (and as many scratch entries), keeping the first k */
static int ranges_room(struct urs_st_enc *e, uint64_t n, uint32_t k)
{
	if (e->ranges_cap >= n)
		return 0;
	uint64_t nc = e->ranges_cap ? (uint64_t) e->ranges_cap * 2 : 1024;
	while (nc < n)
		nc *= 2;
	if (nc > UINT32_MAX / 2)
		return -ENOMEM;
	struct urs_st_range *nr = malloc((size_t) nc * 2 * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	if (k)
		memcpy(nr, e->ranges, (size_t) k * sizeof(*nr));
	free(e->ranges);
	e->ranges = nr;
	e->ranges_cap = (uint32_t) nc;
	return 0;
}

void urs_st_enc_vrange(struct urs_st_enc *e, const void *p, size_t size, uint32_t id, uint32_t type)
{
	if (!size || e->err)
		return;
	if (ranges_room(e, (uint64_t) e->nranges + 1, e->nranges)) {
		urs_st_enc_fail(e, -ENOMEM, "(range table)");
		return;
	}
	e->ranges[e->nranges++] = (struct urs_st_range){(uintptr_t) p, id, (uint16_t) type, 1};
}

static int build_ranges(struct urs_st_enc *e)
{
	const struct urs_st_tdesc *types = e->schema->types;
	uint32_t n = e->nobjs;
	if (ranges_room(e, n, 0))
		return -ENOMEM;
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct urs_st_eobj *o = &e->objs[i];
		if (!types[o->type].locate)
			continue;
		e->ranges[k++] =
			(struct urs_st_range){(uintptr_t) o->p, i + 1, (uint16_t) o->type, 0};
	}
	/* the storage of vecs whose elements can be targets (appended; no
	 * second walk when no type of the schema has such vecs) */
	e->nranges = k;
	bool vecs = false;
	for (uint32_t t = 0; t < e->schema->ntypes; t++)
		vecs |= types[t].vecs != NULL;
	for (uint32_t i = 0; vecs && i < n && !e->err; i++) {
		const struct urs_st_eobj *o = &e->objs[i];
		if (types[o->type].vecs)
			types[o->type].vecs(o->p, e, i + 1, o->type);
	}
	if (e->err)
		return e->err;
	n = k = e->nranges;
	struct urs_st_range *a = e->ranges, *b = e->ranges + e->ranges_cap;
	uintptr_t lo = UINTPTR_MAX, hi = 0, prev = 0;
	bool sorted = true;
	for (uint32_t i = 0; i < n; i++) {
		uintptr_t s = a[i].start;
		sorted &= s >= prev;
		prev = s;
		lo = s < lo ? s : lo;
		hi = s > hi ? s : hi;
	}
	uintptr_t span = n ? hi - lo : 0;
	uint32_t cnt[RADIX_N];
	for (unsigned shift = 0; !sorted && shift < 64 && (span >> shift); shift += RADIX_BITS) {
		memset(cnt, 0, sizeof(cnt));
		for (uint32_t i = 0; i < n; i++)
			cnt[((a[i].start - lo) >> shift) & (RADIX_N - 1)]++;
		if (cnt[((a[0].start - lo) >> shift) & (RADIX_N - 1)] == n)
			continue; /* one digit for all: nothing to reorder */
		uint32_t sum = 0;
		for (uint32_t d = 0; d < RADIX_N; d++) {
			uint32_t c = cnt[d];
			cnt[d] = sum;
			sum += c;
		}
		for (uint32_t i = 0; i < n; i++)
			b[cnt[((a[i].start - lo) >> shift) & (RADIX_N - 1)]++] = a[i];
		struct urs_st_range *t = a;
		a = b;
		b = t;
	}
	if (a != e->ranges)
		memcpy(e->ranges, a, (size_t) n * sizeof(*a));
	/* buckets: about two per range */
	unsigned shift = 0;
	while (shift < 63 && (span >> shift) >= 2 * (uint64_t) n)
		shift++;
	uint32_t nb = n ? (uint32_t) (span >> shift) + 1 : 0;
	if (e->rfirst_cap < nb + 1) {
		free(e->rfirst);
		e->rfirst = malloc(((size_t) nb + 1) * sizeof(*e->rfirst));
		if (!e->rfirst) {
			e->rfirst_cap = 0;
			return -ENOMEM;
		}
		e->rfirst_cap = nb + 1;
	}
	/* rfirst[b] = ranges in buckets < b: count per bucket, prefix sum */
	memset(e->rfirst, 0, ((size_t) nb + 1) * sizeof(*e->rfirst));
	for (uint32_t j = 0; j < n; j++)
		e->rfirst[((e->ranges[j].start - lo) >> shift) + 1]++;
	for (uint32_t bk = 0; bk < nb; bk++)
		e->rfirst[bk + 1] += e->rfirst[bk];
	e->nranges = n;
	e->nbuckets = nb;
	e->rlo = lo;
	e->rshift = shift;
	e->ranges_ok = true;
	return 0;
}

/* bucket of address @a (clamped to the first and last) */
static inline uint32_t bucket_of(const struct urs_st_enc *e, uintptr_t a)
{
	uintptr_t bk = a < e->rlo ? 0 : (a - e->rlo) >> e->rshift;
	return bk >= e->nbuckets ? e->nbuckets - 1 : (uint32_t) bk;
}

/* the object containing address @a, or NULL */
static const struct urs_st_range *find_range(const struct urs_st_enc *e, uintptr_t a)
{
	if (!e->nranges || a < e->rlo)
		return NULL;
	uint32_t bk = bucket_of(e, a);
	/* the last range starting at or before a: within bucket bk (branchless
	 * binary search), else the last one of the buckets before it */
	uint32_t first = e->rfirst[bk], len = e->rfirst[bk + 1] - first;
	const struct urs_st_range *r = e->ranges + first;
	if (!len || r->start > a) {
		if (!first)
			return NULL;
		r = e->ranges + first - 1;
	} else {
		while (len > 1) {
			uint32_t half = len / 2;
			r = r[half].start <= a ? r + half : r;
			len -= half;
		}
	}
	/* vec storage: its owner's locate() checks the bounds */
	if (!r->vec && a - r->start >= e->schema->types[r->type].size)
		return NULL;
	return r;
}

/* Resolve a deferred (non-NULL) reference into its reference-table entry: a
 * whole object (id << 1) or a place inside one ((id << 1) | 1, stored type,
 * path length, (field index, element index) per step). Every object is
 * registered by now. */
static void put_ref_entry(struct urs_st_enc *e, const void *p, uint32_t want)
{
	uintptr_t a = (uintptr_t) p;
	/* a whole object only for struct targets; scalar targets are always
	 * places inside an object, so skip the hash probe for them */
	if (want >= URS_ST_REF_TYPE) {
		const struct urs_st_hslot *s = ht_find(e, a);
		if (s && want == URS_ST_REF_TYPE + s->type) {
			urs_st_put_uv(e, (uint64_t) s->id << 1);
			return;
		}
	}
	if (!e->ranges_ok && build_ranges(e)) {
		urs_st_enc_fail(e, -ENOMEM, "(range table)");
		return;
	}
	const struct urs_st_range *r = find_range(e, a);
	if (!r) {
		urs_st_enc_fail(e, -EINVAL, "(reference to memory outside every saved object)");
		return;
	}
	uint32_t path[2 * URS_ST_MAX_PATH];
	/* an object range starts at its object (no load from objs[]) */
	const void *obj = r->vec ? e->objs[r->id - 1].p : (const void *) r->start;
	int n = e->schema->types[r->type].locate(obj, a, want, path, URS_ST_MAX_PATH);
	if (n <= 0) {
		urs_st_enc_fail(e, -EINVAL,
				n == -E2BIG ? "(interior reference path deeper than the limit)"
					    : "(reference not at a field of the pointed-to type)");
		return;
	}
	urs_st_put_uv(e, ((uint64_t) r->id << 1) | 1);
	urs_st_put_uv(e, r->type);
	urs_st_put_uv(e, (uint64_t) n);
	for (int k = 0; k < 2 * n; k++)
		urs_st_put_uv(e, path[k]);
}

void urs_st_save_union(struct urs_st_enc *e, uint32_t utype, uint32_t tag, const void *p)
{
	if (!urs_st_need(e, 20 + URS_ST_SLACK))
		return;
	const struct urs_st_tdesc *u = &e->schema->types[utype];
	if (!tag || !p || tag > u->nfields) {
		urs_st_put_uv(e, 0);
		return;
	}
	urs_st_put_uv(e, tag);
	urs_st_put_ptr(e, p, u->fields[tag - 1].sub);
}

static void put_str(struct urs_st_enc *e, const char *s)
{
	size_t n = strlen(s);
	if (urs_st_need(e, 10 + URS_ST_SLACK))
		urs_st_put_bytes(e, s, n);
}

static void put_type_table(struct urs_st_enc *e, const struct urs_st_schema *sc)
{
	if (!urs_st_need(e, 24 + URS_ST_SLACK))
		return;
	memcpy(e->p, URS_ST_MAGIC, 4);
	e->p += 4;
	urs_st_put_uv(e, URS_ST_VERSION);
	urs_st_put_uv(e, sc->ntypes);
	for (uint32_t t = 0; t < sc->ntypes; t++) {
		const struct urs_st_tdesc *td = &sc->types[t];
		put_str(e, td->name);
		if (!urs_st_need(e, 20 + URS_ST_SLACK))
			return;
		urs_st_put_uv(e, td->is_union);
		urs_st_put_uv(e, td->nfields);
		for (uint32_t f = 0; f < td->nfields; f++) {
			const struct urs_st_fdesc *fd = &td->fields[f];
			put_str(e, fd->name);
			if (!urs_st_need(e, 40 + URS_ST_SLACK))
				return;
			urs_st_put_uv(e, fd->form);
			urs_st_put_uv(e, fd->base);
			urs_st_put_uv(e, fd->count);
			urs_st_put_uv(e, fd->sub);
		}
	}
}

#define PF_OBJ 8 /* objects' memory is fetched this many objects ahead */

/* first and last cache line of an object (both, for the usual small ones) */
static inline void prefetch_obj(const struct urs_st_eobj *o)
{
	__builtin_prefetch(o->p);
	__builtin_prefetch((const uint8_t *) o->p + o->size - 1);
}

/* Size the identity table once for the expected object count and start a
 * new epoch (the slots of earlier saves read as empty). */
static int ht_begin(struct urs_st_enc *e)
{
	uint64_t want = 1024;
	/* load factor <= 5/8 for the hinted count */
	while (want * 5 < (uint64_t) e->hint * 8 && want < (1u << 31))
		want *= 2;
	if (!e->ht || e->ht_mask + 1 < want) {
		e->ht_used = 0;
		if (ht_resize(e, (uint32_t) want))
			return -ENOMEM;
	}
	if (++e->epoch == 0) {
		/* wrapped: every slot's epoch must read as old */
		memset(e->ht, 0, ((size_t) e->ht_mask + 1) * sizeof(*e->ht));
		e->epoch = 1;
	}
	/* NULL: key 0, ID 0, so pointer fields need no NULL branch */
	e->ht[urs_st_addr_hash(0) & e->ht_mask] = (struct urs_st_hslot){0, 0, 0, e->epoch};
	e->ht_used = 1;
	return 0;
}

/*
 * One pass: the root gets ID 1; writing an object registers every object
 * its owning pointers reach that has no ID yet (the next IDs, queued), and
 * objects are written in ID order, so each is written exactly once and
 * after every object that points to it first. References (non-owning,
 * possibly interior) are written as a marker and resolved at the end, when
 * every object and its address range is known, into the reference table
 * that follows the objects. Stream layout: docs/state-format.md.
 */
int urs_st_save(struct urs_st_enc *e, const struct urs_st_schema *schema, uint32_t type,
		const void *root)
{
	if (!root || type >= schema->ntypes || schema->types[type].is_union)
		return -EINVAL;
	if (schema->ntypes > UINT16_MAX || (e->stats && schema->ntypes > 4096))
		return -E2BIG;
	e->schema = schema;
	e->err = 0;
	e->err_field = NULL;
	e->p = e->buf;
	e->flushed = 0;
	e->nobjs = 0;
	e->nrefs = 0;
	e->ranges_ok = false;
	if (ht_begin(e))
		return -ENOMEM;

	put_type_table(e, schema);
	urs_st_enc_id(e, root, type);
	/* statistics: the clock is read when the object type changes, and
	 * each run of one type is charged to it (not twice per object) */
	uint32_t run_type = UINT32_MAX;
	uint64_t run_t0 = 0;
	for (uint32_t i = 0; i < e->nobjs && !e->err; i++) {
		const struct urs_st_eobj o = e->objs[i];
		/* objects come in registration (not address) order: fetch ahead.
		 * (Generated save functions prefetch the identity slots of their
		 * pointers first thing; doing that here a few objects ahead, via
		 * a per-type function, was not measurably faster.) */
		if (i + PF_OBJ < e->nobjs)
			prefetch_obj(&e->objs[i + PF_OBJ]);
		if (!urs_st_need(e, 10 + URS_ST_SLACK))
			break;
		urs_st_put_uv(e, o.type);
		if (e->stats && o.type != run_type) {
			uint64_t t = now_ns();
			if (run_type != UINT32_MAX)
				e->stats[run_type].ns += t - run_t0;
			run_type = o.type;
			run_t0 = t;
		}
		schema->types[o.type].save(e, o.p);
		if (e->stats)
			e->stats[o.type].count++;
	}
	if (e->stats && run_type != UINT32_MAX)
		e->stats[run_type].ns += now_ns() - run_t0;
	if (e->err)
		return e->err;

	/* tail: object count, reference table; footer: the tail's offset */
	uint64_t tail = e->flushed + (uint64_t) (e->p - e->buf);
	if (urs_st_need(e, 20 + URS_ST_SLACK)) {
		urs_st_put_uv(e, e->nobjs);
		urs_st_put_uv(e, e->nrefs);
	}
	for (uint32_t i = 0; i < e->nrefs && !e->err; i++) {
		/* the range lookups miss the cache: fetch the bucket 8 ahead
		 * and, once that has arrived, its ranges 4 ahead */
		if (e->ranges_ok && e->nranges) {
			if (i + 8 < e->nrefs)
				__builtin_prefetch(
					&e->rfirst[bucket_of(e, (uintptr_t) e->refs[i + 8].p)]);
			if (i + 4 < e->nrefs)
				__builtin_prefetch(&e->ranges[e->rfirst[bucket_of(
					e, (uintptr_t) e->refs[i + 4].p)]]);
		}
		if (urs_st_need(e, 30 + 20 * URS_ST_MAX_PATH + URS_ST_SLACK))
			put_ref_entry(e, e->refs[i].p, e->refs[i].want);
	}
	if (urs_st_need(e, 8 + URS_ST_SLACK)) {
		for (int k = 0; k < 8; k++)
			e->p[k] = (uint8_t) (tail >> (8 * k));
		e->p += 8;
	}
	e->hint = e->nobjs;
	if (!e->err && e->sink)
		enc_flush(e);
	return e->err;
}

/* ------------------------------------------------------------------ arena */

struct urs_st_ablk {
	struct urs_st_ablk *next;
	size_t size, used;
	_Alignas(16) uint8_t data[];
};

static void arena_reset(struct urs_st_arena *a)
{
	/* keep the blocks, re-zero what was used: decoded objects start zeroed */
	for (struct urs_st_ablk *b = a->blk; b; b = b->next) {
		size_t used = b == a->blk ? (size_t) (a->p - b->data) : b->used;
		memset(b->data, 0, used);
		b->used = 0;
	}
	/* rewind to the last (oldest) block chain head: reuse blocks in order */
	if (a->blk) {
		a->p = a->blk->data;
		a->end = a->blk->data + a->blk->size;
	}
	a->total = 0;
}

static void arena_free(struct urs_st_arena *a)
{
	struct urs_st_ablk *b = a->blk;
	while (b) {
		struct urs_st_ablk *n = b->next;
		free(b);
		b = n;
	}
	memset(a, 0, sizeof(*a));
}

void *urs_st_alloc(struct urs_st_dec *d, size_t n)
{
	struct urs_st_arena *a = &d->arena;
	n = (n + 7) & ~(size_t) 7;
	if (__builtin_expect((size_t) (a->end - a->p) >= n, 1)) {
		void *r = a->p;
		a->p += n;
		a->total += n;
		return r;
	}
	if (a->total + n > d->lim.max_arena) {
		urs_st_dec_fail(d, "decoded size exceeds the arena limit");
		if (d->err == -EBADMSG)
			d->err = -E2BIG;
		return NULL;
	}
	/* a spare (already zeroed) block after a reset, else a new one */
	struct urs_st_ablk *b = NULL;
	if (a->blk)
		a->blk->used = (size_t) (a->p - a->blk->data);
	for (struct urs_st_ablk **pp = &a->blk; *pp; pp = &(*pp)->next) {
		struct urs_st_ablk *c = *pp;
		if (c != a->blk && c->used == 0 && c->size >= n) {
			*pp = c->next;
			b = c;
			break;
		}
	}
	if (!b) {
		size_t sz = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		b = calloc(1, sizeof(*b) + sz);
		if (!b) {
			if (!d->err) {
				d->err = -ENOMEM;
				d->why = "out of memory";
			}
			return NULL;
		}
		b->size = sz;
		a->nblocks++;
	}
	b->next = a->blk;
	a->blk = b;
	a->p = b->data + n;
	a->end = b->data + b->size;
	a->total += n;
	return b->data;
}

/* ---------------------------------------------------------------- decoder */

void urs_st_dec_init(struct urs_st_dec *d, const struct urs_st_limits *lim)
{
	memset(d, 0, sizeof(*d));
	d->lim = (struct urs_st_limits){1u << 26, 1u << 30, 4096, 64, (size_t) 4 << 30};
	if (lim) {
		if (lim->max_objects)
			d->lim.max_objects = lim->max_objects;
		if (lim->max_count)
			d->lim.max_count = lim->max_count;
		if (lim->max_types)
			d->lim.max_types = lim->max_types;
		if (lim->max_depth)
			d->lim.max_depth = lim->max_depth;
		if (lim->max_arena)
			d->lim.max_arena = lim->max_arena;
	}
}

void urs_st_dec_free(struct urs_st_dec *d)
{
	arena_free(&d->arena);
	free(d->ids);
	free(d->stats);
	free(d->fix);
	d->fix = NULL;
	d->nfix = d->fix_cap = 0;
	d->ids = NULL;
	d->stats = NULL;
	d->nids = 0;
}

int urs_st_dec_stats(struct urs_st_dec *d, bool on)
{
	free(d->stats);
	d->stats = NULL;
	if (on) {
		d->stats = calloc(4096, sizeof(*d->stats));
		if (!d->stats)
			return -ENOMEM;
	}
	return 0;
}

void urs_st_dec_fail(struct urs_st_dec *d, const char *why)
{
	if (!d->err) {
		d->err = -EBADMSG;
		d->why = why;
	}
	/* stop every reader: later reads see an empty input */
	d->p = d->end;
}

static void dec_limit(struct urs_st_dec *d, const char *why)
{
	urs_st_dec_fail(d, why);
	if (d->err == -EBADMSG && d->why == why)
		d->err = -E2BIG;
}

int urs_st_field_err(struct urs_st_dec *d, uint32_t type, const char *field)
{
	if (!d->err)
		d->err = -EBADMSG;
	if (!d->msg[0])
		snprintf(d->msg, sizeof(d->msg), "object %u (type %s) field %s: %s", d->obj,
			 d->schema->types[type].name, field, d->why ? d->why : "error");
	return d->err;
}

static int dec_err(struct urs_st_dec *d, const char *what)
{
	if (!d->err)
		d->err = -EBADMSG;
	if (!d->msg[0]) {
		if (d->obj)
			snprintf(d->msg, sizeof(d->msg), "object %u: %s%s%s", d->obj, what,
				 d->why ? ": " : "", d->why ? d->why : "");
		else
			snprintf(d->msg, sizeof(d->msg), "%s%s%s", what, d->why ? ": " : "",
				 d->why ? d->why : "");
	}
	return d->err;
}

uint64_t urs_st_get_uv_slow(struct urs_st_dec *d)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (d->p >= d->end) {
			urs_st_dec_fail(d, "truncated varint");
			return 0;
		}
		uint8_t b = *d->p++;
		if (shift == 63 && b > 1) {
			urs_st_dec_fail(d, "varint overflows 64 bits");
			return 0;
		}
		v |= (uint64_t) (b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	urs_st_dec_fail(d, "varint too long");
	return 0;
}

uint32_t urs_st_get_count(struct urs_st_dec *d, size_t min_elem)
{
	uint64_t n = urs_st_get_uv(d);
	if (n > d->lim.max_count) {
		dec_limit(d, "count exceeds the limit");
		return 0;
	}
	if (n * min_elem > (uint64_t) (d->end - d->p)) {
		urs_st_dec_fail(d, "count exceeds the remaining input");
		return 0;
	}
	return (uint32_t) n;
}

const uint8_t *urs_st_get_raw(struct urs_st_dec *d, size_t n)
{
	if ((size_t) (d->end - d->p) < n) {
		urs_st_dec_fail(d, "truncated byte array");
		return NULL;
	}
	const uint8_t *r = d->p;
	d->p += n;
	return r;
}

static void *obj_for(struct urs_st_dec *d, uint64_t id, int32_t type)
{
	if (id == 0 || id > d->nids) {
		urs_st_dec_fail(d, "object id out of range");
		return NULL;
	}
	struct urs_st_dent *ent = &d->ids[id];
	if (ent->type < 0) {
		ent->p = urs_st_alloc(d, d->schema->types[type].size);
		if (!ent->p)
			return NULL;
		ent->type = type;
	} else if (ent->type != type) {
		urs_st_dec_fail(d, "pointer to an object of another type");
		return NULL;
	}
	return ent->p;
}

void *urs_st_get_ptr(struct urs_st_dec *d, uint32_t type)
{
	uint64_t id = urs_st_get_uv(d);
	if (!id)
		return NULL;
	return obj_for(d, id, (int32_t) type);
}

/* The next entry of the reference table (read with its own cursor, in step
 * with the references met in object bodies). */
static bool ref_entry(struct urs_st_dec *d, uint64_t *v, uint64_t *st, uint32_t *npath,
		      uint64_t path[2 * URS_ST_MAX_PATH])
{
	if (d->refs_used >= d->nrefs) {
		urs_st_dec_fail(d, "more references than the reference table holds");
		return false;
	}
	d->refs_used++;
	const uint8_t *sp = d->p, *se = d->end;
	d->p = d->rp;
	d->end = d->rend;
	*v = urs_st_get_uv(d);
	*st = 0;
	*npath = 0;
	if (*v & 1) {
		*st = urs_st_get_uv(d);
		uint64_t n = d->version >= 3 ? urs_st_get_uv(d) : 1;
		if (!d->err && (n == 0 || n > URS_ST_MAX_PATH))
			urs_st_dec_fail(d,
					"interior reference path empty or deeper than the limit");
		for (uint32_t k = 0; k < 2 * n && !d->err; k++)
			path[k] = urs_st_get_uv(d);
		*npath = d->err ? 0 : (uint32_t) n;
	}
	d->rp = d->p;
	d->end = se;
	d->p = d->err ? se : sp; /* after an error every reader sees no input */
	return !d->err;
}

/* a reference in an object body: 0 = NULL, 1 = the next reference-table
 * entry */
static bool ref_marker(struct urs_st_dec *d)
{
	uint64_t m = urs_st_get_uv(d);
	if (m > 1)
		urs_st_dec_fail(d, "bad reference marker");
	return m == 1 && !d->err;
}

void *urs_st_get_ref(struct urs_st_dec *d, uint32_t want, void *slot)
{
	if (!ref_marker(d))
		return NULL;
	uint64_t v, st, sp[2 * URS_ST_MAX_PATH];
	uint32_t n;
	if (!ref_entry(d, &v, &st, &n, sp))
		return NULL;
	if (!(v & 1)) {
		if (want < URS_ST_REF_TYPE) {
			urs_st_dec_fail(d, "whole-object reference where a scalar is expected");
			return NULL;
		}
		return obj_for(d, v >> 1, (int32_t) (want - URS_ST_REF_TYPE));
	}
	if (st >= d->nst || d->st[st].is_union) {
		urs_st_dec_fail(d, "interior reference names no stored struct type");
		return NULL;
	}
	int32_t ctype = d->st[st].cur;
	if (ctype < 0) {
		urs_st_dec_fail(d, "interior reference into a type the current schema lacks");
		return NULL;
	}
	/* the stored path → current field indices, step by step through the
	 * stored types of the embedded structs it passes */
	uint32_t path[2 * URS_ST_MAX_PATH];
	bool via_vec = false;
	uint64_t t = st;
	for (uint32_t k = 0; k < n; k++) {
		const struct urs_st_stype *s = &d->st[t];
		if (sp[2 * k] >= s->nfields || sp[2 * k + 1] > UINT32_MAX || s->is_union) {
			urs_st_dec_fail(d, "interior reference names no stored field");
			return NULL;
		}
		const struct urs_st_sfield *sf = &s->fields[sp[2 * k]];
		if (sf->cur < 0) {
			urs_st_dec_fail(d,
					"interior reference into a field the current schema lacks");
			return NULL;
		}
		if (k + 1 < n && sf->base != URS_ST_B_STRUCT) {
			urs_st_dec_fail(d, "interior reference path continues past a non-struct");
			return NULL;
		}
		via_vec |= sf->form == URS_ST_F_VEC;
		path[2 * k] = (uint32_t) sf->cur;
		path[2 * k + 1] = (uint32_t) sp[2 * k + 1];
		t = sf->sub;
	}
	void *c = obj_for(d, v >> 1, ctype);
	if (!c)
		return NULL;
	if (via_vec && !d->ids[v >> 1].done) {
		/* the vec's storage is allocated when its object is decoded */
		if (urs_grow((void **) &d->fix, &d->fix_cap, d->nfix, sizeof(*d->fix), 64)) {
			d->err = -ENOMEM;
			d->why = "out of memory";
			return NULL;
		}
		struct urs_st_fixup *fx = &d->fix[d->nfix++];
		fx->slot = slot;
		fx->id = (uint32_t) (v >> 1);
		fx->type = (uint32_t) ctype;
		fx->want = want;
		fx->n = n;
		memcpy(fx->path, path, sizeof(uint32_t) * 2 * n);
		return NULL;
	}
	void *p = d->schema->types[ctype].addr(c, path, n, want);
	if (!p)
		urs_st_dec_fail(d, "interior reference does not match the field's type or length");
	return p;
}

int urs_st_load_union(struct urs_st_dec *d, uint32_t stype, uint32_t *tag, void **ptr)
{
	uint64_t v = urs_st_get_uv(d);
	*tag = 0;
	*ptr = NULL;
	if (!v || d->err)
		return d->err;
	const struct urs_st_stype *s = &d->st[stype];
	if (v > s->nfields) {
		urs_st_dec_fail(d, "union variant out of range");
		return d->err;
	}
	int32_t cur = s->fields[v - 1].cur;
	if (cur < 0) {
		/* the variant's type left the union: the value reads as none */
		urs_st_get_uv(d);
		return d->err;
	}
	uint32_t vt = d->schema->types[s->cur].fields[cur].sub;
	*ptr = urs_st_get_ptr(d, vt);
	if (*ptr)
		*tag = (uint32_t) cur + 1;
	return d->err;
}

/* --- skipping what the current schema does not have */

static int skip_struct(struct urs_st_dec *d, uint32_t stype);

static void skip_base(struct urs_st_dec *d, uint8_t base, uint32_t sub)
{
	switch (base) {
	case URS_ST_B_F64:
		urs_st_get_raw(d, 8);
		break;
	case URS_ST_B_REF:
		if (ref_marker(d)) {
			uint64_t v, st, path[2 * URS_ST_MAX_PATH];
			uint32_t n;
			ref_entry(d, &v, &st, &n, path); /* consumed, not resolved */
		}
		break;
	case URS_ST_B_STRUCT:
		skip_struct(d, sub);
		break;
	case URS_ST_B_UNION:
		if (urs_st_get_uv(d))
			urs_st_get_uv(d);
		break;
	default: /* integers, bool, ptr */
		urs_st_get_uv(d);
		break;
	}
}

static int skip_field(struct urs_st_dec *d, const struct urs_st_sfield *f)
{
	uint32_t n;
	switch (f->form) {
	case URS_ST_F_SCALAR:
		skip_base(d, f->base, f->sub);
		break;
	case URS_ST_F_ARRAY:
		if (f->base == URS_ST_B_U8) {
			urs_st_get_raw(d, f->count);
			break;
		}
		for (uint32_t i = 0; i < f->count && !d->err; i++)
			skip_base(d, f->base, f->sub);
		break;
	case URS_ST_F_VEC:
		n = urs_st_get_count(d, 1);
		for (uint32_t i = 0; i < n && !d->err; i++)
			skip_base(d, f->base, f->sub);
		break;
	case URS_ST_F_BYTES:
	case URS_ST_F_STRING:
		n = urs_st_get_count(d, 1);
		urs_st_get_raw(d, n);
		break;
	case URS_ST_F_MAP:
		n = urs_st_get_count(d, 2);
		for (uint32_t i = 0; i < n && !d->err; i++) {
			if (f->count == URS_ST_MAP_KSTR)
				urs_st_get_raw(d, urs_st_get_count(d, 1));
			else if (f->count)
				urs_st_get_raw(d, f->count);
			else
				urs_st_get_uv(d);
			skip_base(d, f->base, f->sub);
		}
		break;
	default: /* CUSTOM */
		urs_st_get_uv(d);
		break;
	}
	return d->err;
}

static int skip_struct(struct urs_st_dec *d, uint32_t stype)
{
	const struct urs_st_stype *s = &d->st[stype];
	if (++d->depth > d->lim.max_depth) {
		dec_limit(d, "nesting deeper than the limit");
		return d->err;
	}
	uint64_t bm = urs_st_get_uv(d);
	if (s->nfields < 64 && (bm >> s->nfields))
		urs_st_dec_fail(d, "bitmap names a field the stored type lacks");
	while (bm && !d->err) {
		uint32_t i = (uint32_t) __builtin_ctzll(bm);
		bm &= bm - 1;
		skip_field(d, &s->fields[i]);
	}
	d->depth--;
	return d->err;
}

int urs_st_skip(struct urs_st_dec *d, uint32_t stype, uint32_t sfield)
{
	d->depth = 0;
	return skip_field(d, &d->st[stype].fields[sfield]);
}

/* --- type table */

static bool name_eq(const uint8_t *n, uint32_t len, const char *s)
{
	return strlen(s) == len && memcmp(n, s, len) == 0;
}

static bool form_base_ok(uint8_t form, uint8_t base)
{
	bool scalar = base >= URS_ST_B_U8 && base <= URS_ST_B_F64;
	switch (form) {
	case URS_ST_F_SCALAR:
	case URS_ST_F_ARRAY:
	case URS_ST_F_VEC:
		return scalar || (base >= URS_ST_B_PTR && base <= URS_ST_B_UNION);
	case URS_ST_F_BYTES:
	case URS_ST_F_STRING:
	case URS_ST_F_CUSTOM:
		return base == 0;
	case URS_ST_F_MAP:
		return base == URS_ST_B_U64 || base == URS_ST_B_I64 || base == URS_ST_B_U32 ||
		       base == URS_ST_B_PTR;
	}
	return false;
}

static int read_types(struct urs_st_dec *d)
{
	const uint8_t *m = urs_st_get_raw(d, 4);
	if (!m || memcmp(m, URS_ST_MAGIC, 4))
		return d->why = "bad magic", dec_err(d, "header");
	uint64_t ver = urs_st_get_uv(d);
	if (ver < URS_ST_VERSION_MIN || ver > URS_ST_VERSION)
		return d->why = d->why ? d->why : "unsupported version", dec_err(d, "header");
	d->version = (uint32_t) ver;
	uint64_t nt = urs_st_get_uv(d);
	if (nt > d->lim.max_types) {
		dec_limit(d, "type count exceeds the limit");
		return dec_err(d, "type table");
	}
	if (nt * 3 > (uint64_t) (d->end - d->p)) {
		urs_st_dec_fail(d, "type count exceeds the remaining input");
		return dec_err(d, "type table");
	}
	d->nst = (uint32_t) nt;
	d->st = nt ? urs_st_alloc(d, nt * sizeof(*d->st)) : NULL;
	if (nt && !d->st)
		return dec_err(d, "type table");
	for (uint32_t t = 0; t < nt && !d->err; t++) {
		struct urs_st_stype *s = &d->st[t];
		s->name_len = urs_st_get_count(d, 1);
		s->name = urs_st_get_raw(d, s->name_len);
		uint64_t u = urs_st_get_uv(d), nf = urs_st_get_uv(d);
		if (d->err)
			break;
		if (u > 1 || nf > 64 || nf * 5 > (uint64_t) (d->end - d->p)) {
			urs_st_dec_fail(d, "bad type record");
			break;
		}
		s->is_union = u;
		s->nfields = (uint16_t) nf;
		s->cur = -1;
		s->fields = nf ? urs_st_alloc(d, nf * sizeof(*s->fields)) : NULL;
		if (nf && !s->fields)
			break;
		for (uint32_t f = 0; f < nf && !d->err; f++) {
			struct urs_st_sfield *sf = &s->fields[f];
			sf->name_len = urs_st_get_count(d, 1);
			sf->name = urs_st_get_raw(d, sf->name_len);
			uint64_t form = urs_st_get_uv(d), base = urs_st_get_uv(d);
			uint64_t count = urs_st_get_uv(d), sub = urs_st_get_uv(d);
			if (d->err)
				break;
			if (form > URS_ST_F_MAX || base > URS_ST_B_UNION ||
			    !form_base_ok((uint8_t) form, (uint8_t) base) ||
			    (form == URS_ST_F_ARRAY && (count == 0 || count > (1u << 20))) ||
			    (form == URS_ST_F_MAP && count > URS_ST_MAP_KMAX &&
			     count != URS_ST_MAP_KSTR) ||
			    (form != URS_ST_F_ARRAY && form != URS_ST_F_MAP && count) ||
			    sub > UINT32_MAX) {
				urs_st_dec_fail(d, "bad field record");
				break;
			}
			sf->form = (uint8_t) form;
			sf->base = (uint8_t) base;
			sf->count = (uint32_t) count;
			sf->sub = (uint32_t) sub;
			sf->cur = -1;
		}
	}
	if (d->err)
		return dec_err(d, "type table");
	/* references between stored types */
	for (uint32_t t = 0; t < nt; t++) {
		const struct urs_st_stype *s = &d->st[t];
		for (uint32_t f = 0; f < s->nfields; f++) {
			const struct urs_st_sfield *sf = &s->fields[f];
			bool bad = false;
			if (sf->base == URS_ST_B_PTR || sf->base == URS_ST_B_STRUCT)
				bad = sf->sub >= nt || d->st[sf->sub].is_union;
			else if (sf->base == URS_ST_B_UNION)
				bad = sf->sub >= nt || !d->st[sf->sub].is_union;
			else if (sf->base == URS_ST_B_REF)
				bad = sf->sub < URS_ST_REF_TYPE
					      ? sf->sub < URS_ST_B_U8 || sf->sub > URS_ST_B_F64
					      : sf->sub - URS_ST_REF_TYPE >= nt ||
							d->st[sf->sub - URS_ST_REF_TYPE].is_union;
			if (s->is_union &&
			    (sf->form != URS_ST_F_SCALAR || sf->base != URS_ST_B_PTR))
				bad = true;
			if (bad) {
				urs_st_dec_fail(d, "field refers to a bad type");
				return dec_err(d, "type table");
			}
		}
	}
	return 0;
}

static bool sub_eq(struct urs_st_dec *d, const struct urs_st_sfield *sf,
		   const struct urs_st_fdesc *cf)
{
	const struct urs_st_tdesc *ct = d->schema->types;
	switch (sf->base) {
	case URS_ST_B_PTR:
	case URS_ST_B_STRUCT:
	case URS_ST_B_UNION:
		return name_eq(d->st[sf->sub].name, d->st[sf->sub].name_len, ct[cf->sub].name);
	case URS_ST_B_REF:
		if (sf->sub < URS_ST_REF_TYPE || cf->sub < URS_ST_REF_TYPE)
			return sf->sub == cf->sub;
		return name_eq(d->st[sf->sub - URS_ST_REF_TYPE].name,
			       d->st[sf->sub - URS_ST_REF_TYPE].name_len,
			       ct[cf->sub - URS_ST_REF_TYPE].name);
	}
	return true;
}

/* Once per stream: stored type → current type by name, stored field →
 * current field by name and identical wire type. */
static void map_types(struct urs_st_dec *d)
{
	const struct urs_st_schema *sc = d->schema;
	for (uint32_t t = 0; t < d->nst; t++) {
		struct urs_st_stype *s = &d->st[t];
		for (uint32_t c = 0; c < sc->ntypes; c++)
			if (name_eq(s->name, s->name_len, sc->types[c].name) &&
			    sc->types[c].is_union == s->is_union) {
				s->cur = (int32_t) c;
				break;
			}
		if (s->cur < 0)
			continue;
		const struct urs_st_tdesc *ct = &sc->types[s->cur];
		bool ident = s->nfields == ct->nfields;
		for (uint32_t f = 0; f < s->nfields; f++) {
			struct urs_st_sfield *sf = &s->fields[f];
			for (uint32_t g = 0; g < ct->nfields; g++) {
				const struct urs_st_fdesc *cf = &ct->fields[g];
				if (!name_eq(sf->name, sf->name_len, cf->name))
					continue;
				if (cf->form == sf->form && cf->base == sf->base &&
				    cf->count == sf->count && sub_eq(d, sf, cf)) {
					sf->cur = (int32_t) g;
					s->cur_mask |= UINT64_C(1) << g;
				}
				break;
			}
			if (sf->cur != (int32_t) f)
				ident = false;
		}
		s->identical = ident;
	}
}

/* a decoder made ready for one stream */
static void dec_begin(struct urs_st_dec *d, const struct urs_st_schema *schema, const void *buf,
		      size_t len)
{
	arena_reset(&d->arena);
	d->schema = schema;
	d->base = d->p = buf;
	d->end = d->p + len;
	d->err = 0;
	d->why = NULL;
	d->msg[0] = 0;
	d->obj = 0;
	d->depth = 0;
	d->nst = 0;
	d->st = NULL;
	d->rp = d->rend = NULL;
	d->nrefs = d->refs_used = 0;
	d->nfix = 0;
}

/* the footer (the tail's offset) and the tail (object count into *@n,
 * reference table); d->p/d->end left on the objects */
static int read_tail(struct urs_st_dec *d, size_t len, uint64_t *n_out)
{
	if (d->end - d->p < 8) {
		urs_st_dec_fail(d, "truncated stream");
		return dec_err(d, "footer");
	}
	uint64_t tail = 0;
	for (int k = 0; k < 8; k++)
		tail |= (uint64_t) d->base[len - 8 + (size_t) k] << (8 * k);
	if (tail < (uint64_t) (d->p - d->base) || tail > len - 8) {
		urs_st_dec_fail(d, "tail offset out of range (truncated or not a stream)");
		return dec_err(d, "footer");
	}
	const uint8_t *objs = d->p;
	d->p = d->base + tail;
	d->end = d->base + len - 8;
	uint64_t n = urs_st_get_uv(d), nrefs = urs_st_get_uv(d);
	if (d->err)
		return dec_err(d, "tail");
	if (nrefs > (uint64_t) (d->end - d->p) || nrefs > UINT32_MAX) {
		urs_st_dec_fail(d, "reference count exceeds the remaining input");
		return dec_err(d, "tail");
	}
	d->rp = d->p;
	d->rend = d->end;
	d->nrefs = (uint32_t) nrefs;
	d->refs_used = 0;
	d->p = objs;
	d->end = d->base + tail;
	if (n == 0 || n > d->lim.max_objects) {
		dec_limit(d, n ? "object count exceeds the limit" : "no root object");
		return dec_err(d, "object count");
	}
	if (n * 2 > (uint64_t) (d->end - d->p)) {
		urs_st_dec_fail(d, "object count exceeds the remaining input");
		return dec_err(d, "object count");
	}
	*n_out = n;
	return 0;
}

/* the id table for @n objects, the root (@dst, or a new object) as id 1 */
static int root_ids(struct urs_st_dec *d, uint64_t n, uint32_t type, void *dst)
{
	if (d->nids < n) {
		free(d->ids);
		d->ids = malloc(((size_t) n + 1) * sizeof(*d->ids));
		if (!d->ids) {
			d->nids = 0;
			return -ENOMEM;
		}
	}
	d->nids = (uint32_t) n;
	for (uint32_t i = 0; i <= n; i++)
		d->ids[i] = (struct urs_st_dent){NULL, -1, false};
	if (dst)
		d->ids[1] = (struct urs_st_dent){dst, (int32_t) type, false};
	else if (!obj_for(d, 1, (int32_t) type))
		return dec_err(d, "root");
	return 0;
}

/* every object's body, in id order; statistics charged per run of one
 * type, as in urs_st_save */
static int load_objects(struct urs_st_dec *d, uint64_t n, void *dst)
{
	const struct urs_st_schema *schema = d->schema;
	uint32_t run_type = UINT32_MAX;
	uint64_t run_t0 = 0;
	for (uint32_t id = 1; id <= n; id++) {
		d->obj = id;
		uint64_t st = urs_st_get_uv(d);
		if (d->err)
			return dec_err(d, "type index");
		if (st >= d->nst || d->st[st].is_union) {
			urs_st_dec_fail(d, "type index out of range");
			return dec_err(d, "type index");
		}
		struct urs_st_dent *ent = &d->ids[id];
		int32_t cur = d->st[st].cur;
		if (cur < 0) {
			if (ent->type >= 0) {
				urs_st_dec_fail(d, "referenced object's type is gone");
				return dec_err(d, "type");
			}
			d->depth = 0;
			if (skip_struct(d, (uint32_t) st))
				return dec_err(d, "skipping an object of a removed type");
			continue;
		}
		if (!obj_for(d, id, cur))
			return dec_err(d, "type");
		if (d->stats && (uint32_t) cur != run_type) {
			uint64_t t = now_ns();
			if (run_type != UINT32_MAX)
				d->stats[run_type].ns += t - run_t0;
			run_type = (uint32_t) cur;
			run_t0 = t;
		}
		schema->types[cur].load(d, ent->p, (uint32_t) st, ent->p != dst);
		if (d->stats)
			d->stats[cur].count++;
		if (d->err)
			return dec_err(d, "body");
		ent->done = true;
	}
	if (d->stats && run_type != UINT32_MAX)
		d->stats[run_type].ns += now_ns() - run_t0;
	return 0;
}

/* nothing left over; interior references resolved; after-load hooks run */
static int finish_load(struct urs_st_dec *d, uint64_t n)
{
	const struct urs_st_schema *schema = d->schema;
	if (d->p != d->end) {
		d->obj = 0;
		urs_st_dec_fail(d, "trailing bytes after the last object");
		return dec_err(d, "stream");
	}
	if (d->refs_used != d->nrefs || d->rp != d->rend) {
		d->obj = 0;
		urs_st_dec_fail(d, "reference table does not match the references in the objects");
		return dec_err(d, "tail");
	}
	/* interior references through vecs of objects decoded after them */
	for (uint32_t i = 0; i < d->nfix; i++) {
		const struct urs_st_fixup *fx = &d->fix[i];
		const struct urs_st_dent *ent = &d->ids[fx->id];
		void *p = ent->done
				  ? schema->types[fx->type].addr(ent->p, fx->path, fx->n, fx->want)
				  : NULL;
		if (!p) {
			d->obj = fx->id;
			urs_st_dec_fail(
				d, "interior reference does not match the field's type or length");
			return dec_err(d, "reference");
		}
		memcpy(fx->slot, &p, sizeof(p));
	}
	/* after-load hooks, last object first (children before parents) */
	for (uint32_t id = (uint32_t) n; id >= 1; id--) {
		const struct urs_st_dent *ent = &d->ids[id];
		if (ent->type >= 0 && schema->types[ent->type].after_load)
			schema->types[ent->type].after_load(ent->p);
	}
	return 0;
}

int urs_st_load(struct urs_st_dec *d, const struct urs_st_schema *schema, uint32_t type,
		const void *buf, size_t len, void *dst, void **out)
{
	if (out)
		*out = NULL;
	if (type >= schema->ntypes || schema->types[type].is_union || (!dst && !out))
		return -EINVAL;
	dec_begin(d, schema, buf, len);
	if (read_types(d))
		return d->err;
	map_types(d);
	uint64_t n = 0;
	int r = read_tail(d, len, &n);
	if (r == 0)
		r = root_ids(d, n, type, dst);
	if (r == 0)
		r = load_objects(d, n, dst);
	if (r == 0)
		r = finish_load(d, n);
	if (r == 0 && out)
		*out = d->ids[1].p;
	return r;
}

/* ------------------------------------------------------------- hash table */

static int map_resize(struct urs_map *m, uint32_t ncap)
{
	struct urs_map_ent *ne = calloc(ncap, sizeof(*ne));
	uint8_t *nu = calloc(ncap, 1);
	if (!ne || !nu) {
		free(ne);
		free(nu);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		uint32_t j = urs_map_hash(m->ents[i].key) & (ncap - 1);
		while (nu[j])
			j = (j + 1) & (ncap - 1);
		ne[j] = m->ents[i];
		nu[j] = 1;
	}
	free(m->ents);
	free(m->used);
	m->ents = ne;
	m->used = nu;
	m->cap = ncap;
	return 0;
}

int urs_map_put(struct urs_map *m, uint64_t key, uint64_t val)
{
	if ((m->len + 1) * 2 > m->cap) {
		int r = map_resize(m, m->cap ? m->cap * 2 : 8);
		if (r)
			return r;
	}
	uint32_t i = urs_map_hash(key) & (m->cap - 1);
	while (m->used[i] && m->ents[i].key != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->used[i]) {
		m->used[i] = 1;
		m->len++;
	}
	m->ents[i].key = key;
	m->ents[i].val.u = val;
	return 0;
}

struct urs_map_ent *urs_map_get(const struct urs_map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	uint32_t i = urs_map_hash(key) & (m->cap - 1);
	while (m->used[i]) {
		if (m->ents[i].key == key)
			return &m->ents[i];
		i = (i + 1) & (m->cap - 1);
	}
	return NULL;
}

void urs_map_free(struct urs_map *m)
{
	free(m->ents);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

int urs_map_init_arena(struct urs_st_dec *d, struct urs_map *m, uint32_t n)
{
	uint32_t cap = 8;
	while (cap < (uint64_t) n * 2 + 2)
		cap *= 2;
	memset(m, 0, sizeof(*m));
	m->ents = urs_st_alloc(d, (size_t) cap * sizeof(*m->ents));
	m->used = m->ents ? urs_st_alloc(d, cap) : NULL;
	if (!m->used) {
		m->ents = NULL;
		return d->err ? d->err : -ENOMEM;
	}
	m->cap = cap;
	return 0;
}

/* --- fixed-size byte keys */

static int bmap_resize(struct urs_bmap *m, uint32_t ncap)
{
	uint8_t *ne = calloc(ncap, m->stride);
	uint8_t *nu = calloc(ncap, 1);
	if (!ne || !nu) {
		free(ne);
		free(nu);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		uint32_t j = urs_map_hash_bytes(urs_bmap_key(m, i), m->ksize) & (ncap - 1);
		while (nu[j])
			j = (j + 1) & (ncap - 1);
		memcpy(ne + (size_t) j * m->stride, m->ents + (size_t) i * m->stride, m->stride);
		nu[j] = 1;
	}
	free(m->ents);
	free(m->used);
	m->ents = ne;
	m->used = nu;
	m->cap = ncap;
	return 0;
}

/* slot of @key: its entry, or the empty slot that ends its probe */
static uint32_t bmap_slot(const struct urs_bmap *m, const void *key)
{
	uint32_t i = urs_map_hash_bytes(key, m->ksize) & (m->cap - 1);
	while (m->used[i] && memcmp(urs_bmap_key(m, i), key, m->ksize))
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int bmap_set_ksize(struct urs_bmap *m, uint32_t ksize)
{
	if (ksize == 0 || ksize > URS_ST_MAP_KMAX)
		return -EINVAL;
	if (m->ksize && m->ksize != ksize)
		return -EINVAL;
	m->ksize = ksize;
	m->stride = 8 + ((ksize + 7) & ~7u);
	return 0;
}

int urs_bmap_put(struct urs_bmap *m, uint32_t ksize, const void *key, uint64_t val)
{
	int r = bmap_set_ksize(m, ksize);
	if (r)
		return r;
	if ((m->len + 1) * 2 > m->cap) {
		if (m->cap >= (1u << 30))
			return -E2BIG;
		r = bmap_resize(m, m->cap ? m->cap * 2 : 8);
		if (r)
			return r;
	}
	uint32_t i = bmap_slot(m, key);
	if (!m->used[i]) {
		m->used[i] = 1;
		m->len++;
		memcpy(m->ents + (size_t) i * m->stride + 8, key, ksize);
	}
	urs_bmap_val(m, i)->u = val;
	return 0;
}

union urs_map_val *urs_bmap_get(const struct urs_bmap *m, const void *key)
{
	if (!m->cap)
		return NULL;
	uint32_t i = bmap_slot(m, key);
	return m->used[i] ? urs_bmap_val(m, i) : NULL;
}

void urs_bmap_free(struct urs_bmap *m)
{
	free(m->ents);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

static uint32_t dec_map_cap(uint32_t n)
{
	uint32_t cap = 8;
	while (cap < (uint64_t) n * 2 + 2)
		cap *= 2;
	return cap;
}

int urs_bmap_init_arena(struct urs_st_dec *d, struct urs_bmap *m, uint32_t ksize, uint32_t n)
{
	memset(m, 0, sizeof(*m));
	if (bmap_set_ksize(m, ksize)) {
		urs_st_dec_fail(d, "bad map key size");
		return d->err;
	}
	uint32_t cap = dec_map_cap(n);
	m->ents = urs_st_alloc(d, (size_t) cap * m->stride);
	m->used = m->ents ? urs_st_alloc(d, cap) : NULL;
	if (!m->used) {
		memset(m, 0, sizeof(*m));
		return d->err ? d->err : -ENOMEM;
	}
	m->cap = cap;
	return 0;
}

union urs_map_val *urs_bmap_add_dec(struct urs_st_dec *d, struct urs_bmap *m, const uint8_t *key)
{
	if (!key || !m->cap)
		return NULL;
	uint32_t i = bmap_slot(m, key);
	if (m->used[i]) {
		urs_st_dec_fail(d, "duplicate map key");
		return NULL;
	}
	if ((m->len + 1) * 2 > m->cap) {
		urs_st_dec_fail(d, "more map entries than counted");
		return NULL;
	}
	m->used[i] = 1;
	m->len++;
	memcpy(m->ents + (size_t) i * m->stride + 8, key, m->ksize);
	return urs_bmap_val(m, i);
}

/* --- string keys */

static int smap_resize(struct urs_smap *m, uint32_t ncap)
{
	struct urs_smap_ent *ne = calloc(ncap, sizeof(*ne));
	uint8_t *nu = calloc(ncap, 1);
	if (!ne || !nu) {
		free(ne);
		free(nu);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		const char *k = m->ents[i].key;
		uint32_t j = urs_map_hash_bytes(k, strlen(k)) & (ncap - 1);
		while (nu[j])
			j = (j + 1) & (ncap - 1);
		ne[j] = m->ents[i];
		nu[j] = 1;
	}
	free(m->ents);
	free(m->used);
	m->ents = ne;
	m->used = nu;
	m->cap = ncap;
	return 0;
}

static uint32_t smap_slot(const struct urs_smap *m, const void *key, size_t len)
{
	uint32_t i = urs_map_hash_bytes(key, len) & (m->cap - 1);
	while (m->used[i] && (strncmp(m->ents[i].key, key, len) != 0 || m->ents[i].key[len] != 0))
		i = (i + 1) & (m->cap - 1);
	return i;
}

int urs_smap_put(struct urs_smap *m, const char *key, uint64_t val)
{
	if (!key)
		return -EINVAL;
	if ((m->len + 1) * 2 > m->cap) {
		if (m->cap >= (1u << 30))
			return -E2BIG;
		int r = smap_resize(m, m->cap ? m->cap * 2 : 8);
		if (r)
			return r;
	}
	uint32_t i = smap_slot(m, key, strlen(key));
	if (!m->used[i]) {
		char *k = strdup(key);
		if (!k)
			return -ENOMEM;
		m->ents[i].key = k;
		m->used[i] = 1;
		m->len++;
	}
	m->ents[i].val.u = val;
	return 0;
}

struct urs_smap_ent *urs_smap_get(const struct urs_smap *m, const char *key)
{
	if (!m->cap || !key)
		return NULL;
	uint32_t i = smap_slot(m, key, strlen(key));
	return m->used[i] ? &m->ents[i] : NULL;
}

void urs_smap_free(struct urs_smap *m)
{
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->used[i])
			free(m->ents[i].key);
	free(m->ents);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

int urs_smap_init_arena(struct urs_st_dec *d, struct urs_smap *m, uint32_t n)
{
	uint32_t cap = dec_map_cap(n);
	memset(m, 0, sizeof(*m));
	m->ents = urs_st_alloc(d, (size_t) cap * sizeof(*m->ents));
	m->used = m->ents ? urs_st_alloc(d, cap) : NULL;
	if (!m->used) {
		m->ents = NULL;
		return d->err ? d->err : -ENOMEM;
	}
	m->cap = cap;
	return 0;
}

union urs_map_val *urs_smap_add_dec(struct urs_st_dec *d, struct urs_smap *m, const uint8_t *key,
				    uint32_t len)
{
	if (!key || !m->cap)
		return NULL;
	if (memchr(key, 0, len)) {
		urs_st_dec_fail(d, "NUL inside a string map key");
		return NULL;
	}
	uint32_t i = smap_slot(m, key, len);
	if (m->used[i]) {
		urs_st_dec_fail(d, "duplicate map key");
		return NULL;
	}
	if ((m->len + 1) * 2 > m->cap) {
		urs_st_dec_fail(d, "more map entries than counted");
		return NULL;
	}
	char *k = urs_st_alloc(d, (size_t) len + 1);
	if (!k)
		return NULL;
	memcpy(k, key, len);
	k[len] = 0;
	m->ents[i].key = k;
	m->used[i] = 1;
	m->len++;
	return &m->ents[i].val;
}
