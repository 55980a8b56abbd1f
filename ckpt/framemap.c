/*
 * ckpt/framemap.c — page data stored once per page frame (ckpt/framemap.h):
 * an open-addressing table from frame number to the offset and keyed hash
 * of the copy stored for it, and SipHash to make the hash.
 */
#include "ckpt/framemap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "host/pagemap.h"

#define MIN_BITS 12u
/* 1 << 21 frames (8 GiB of shared memory) at half load: a 96 MiB table;
 * past it, pages are appended (stored once per process again) */
#define MAX_BITS 22u

struct fm_ent {
	uint64_t frame; /* 0: empty */
	uint64_t off, hash;
};

struct ckpt_framemap {
	struct fm_ent *t; /* NULL: no table could be made (nothing is looked up) */
	unsigned bits;
	uint64_t n;
	bool full; /* it could not grow: no frame is added any more */
	uint64_t key[2];
};

/* ---- SipHash ---- */

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND(v0, v1, v2, v3)                                          \
	do {                                                              \
		v0 += v1, v1 = rotl(v1, 13), v1 ^= v0, v0 = rotl(v0, 32); \
		v2 += v3, v3 = rotl(v3, 16), v3 ^= v2;                    \
		v0 += v3, v3 = rotl(v3, 21), v3 ^= v0;                    \
		v2 += v1, v1 = rotl(v1, 17), v1 ^= v2, v2 = rotl(v2, 32); \
	} while (0)

static inline uint64_t le64(const uint8_t *p)
{
	uint64_t w;
	memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

uint64_t ckpt_siphash(const uint64_t key[2], const void *p, uint64_t n, int c, int d)
{
	const uint8_t *b = p;
	uint64_t v0 = key[0] ^ 0x736f6d6570736575ull, v1 = key[1] ^ 0x646f72616e646f6dull;
	uint64_t v2 = key[0] ^ 0x6c7967656e657261ull, v3 = key[1] ^ 0x7465646279746573ull;
	uint64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t m = le64(b + i);
		v3 ^= m;
		for (int r = 0; r < c; r++)
			SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	uint64_t m = n << 56;
	for (uint64_t k = 0; i + k < n; k++)
		m |= (uint64_t) b[i + k] << (8 * k);
	v3 ^= m;
	for (int r = 0; r < c; r++)
		SIPROUND(v0, v1, v2, v3);
	v0 ^= m;
	v2 ^= 0xff;
	for (int r = 0; r < d; r++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t ckpt_page_hash(const uint64_t key[2], const void *page)
{
	return ckpt_siphash(key, page, CKPT_PAGE_SIZE, 1, 3);
}

/* ---- the table ---- */

static uint64_t slot(uint64_t frame, unsigned bits)
{
	return (frame * 0x9e3779b97f4a7c15ull) >> (64 - bits);
}

static struct fm_ent *find(const struct ckpt_framemap *m, uint64_t frame)
{
	uint64_t mask = (1ull << m->bits) - 1;
	for (uint64_t i = slot(frame, m->bits);; i = (i + 1) & mask)
		if (m->t[i].frame == frame || !m->t[i].frame)
			return &m->t[i];
}

/* twice the slots (or the first ones); false when it may not grow */
static bool grow(struct ckpt_framemap *m)
{
	unsigned bits = m->t ? m->bits + 1 : MIN_BITS;
	if (bits > MAX_BITS)
		return false;
	struct fm_ent *old = m->t, *t = calloc(1ull << bits, sizeof(*t));
	if (!t)
		return false;
	uint64_t oldn = old ? 1ull << m->bits : 0;
	m->t = t;
	m->bits = bits;
	for (uint64_t i = 0; i < oldn; i++)
		if (old[i].frame)
			*find(m, old[i].frame) = old[i];
	free(old);
	return true;
}

/* the writer's map, made at the first shared frame; NULL (now and from
 * then on) if it cannot be: the pages are appended as they come */
static struct ckpt_framemap *map_of(struct ckpt_pages_writer *w)
{
	struct ckpt_framemap *m = w->frames;
	if (!m && (m = w->frames = calloc(1, sizeof(*m))) &&
	    (getrandom(m->key, sizeof(m->key), 0) != sizeof(m->key) || !grow(m))) {
		free(m->t);
		m->t = NULL;
	}
	return m && m->t ? m : NULL;
}

int ckpt_pages_append_frame(struct ckpt_pages_writer *w, const void *page, uint64_t frame,
			    uint64_t *off, bool *stored, struct urs_err *err)
{
	*stored = false;
	uint64_t f = frame & ~URS_PFN_SHARED;
	struct ckpt_framemap *m = f && (frame & URS_PFN_SHARED) ? map_of(w) : NULL;
	if (!m) /* (a map that could not be made: the page is simply appended) */
		return ckpt_pages_append(w, page, CKPT_PAGE_SIZE, off, err);
	uint64_t h = ckpt_page_hash(m->key, page);
	struct fm_ent *e = find(m, f);
	if (e->frame && e->hash == h) {
		*off = e->off;
		*stored = true;
		return 0;
	}
	int r = ckpt_pages_append(w, page, CKPT_PAGE_SIZE, off, err);
	if (r)
		return r;
	if (!e->frame && (m->n + 1) * 2 > 1ull << m->bits) {
		if (!m->full && !grow(m))
			m->full = true; /* (never tried again) */
		if (m->full)
			return 0; /* this one is stored, not remembered */
		e = find(m, f);
	}
	m->n += !e->frame;
	*e = (struct fm_ent){f, *off, h};
	return 0;
}

void ckpt_pages_frames_free(struct ckpt_pages_writer *w)
{
	if (w->frames)
		free(w->frames->t);
	free(w->frames);
	w->frames = NULL;
}
