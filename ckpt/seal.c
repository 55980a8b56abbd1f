/*
 * ckpt/seal.c — the core MAC and the page-chunk MACs of a checkpoint image
 * (ckpt/seal.h says what they cover and why).
 */
#include "ckpt/seal.h"
#include "runtime/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CORE_LABEL  "ursa core v5" /* with its NUL */
#define PAGES_LABEL "ursa pages v5"

void ckpt_seal_labelled(const struct ckpt_seal *s, const char *label, const void *p, size_t n,
			uint8_t out[CKPT_MAC_LEN])
{
	struct urs_hmac_sha256 h;
	urs_hmac_sha256_init(&h, s->key, sizeof(s->key));
	urs_hmac_sha256_update(&h, label, strlen(label) + 1);
	urs_hmac_sha256_update(&h, p, n);
	urs_hmac_sha256_final(&h, out);
	explicit_bzero(&h, sizeof(h));
}

void ckpt_seal_core(const struct ckpt_seal *s, const void *p, size_t n, uint8_t out[CKPT_MAC_LEN])
{
	ckpt_seal_labelled(s, CORE_LABEL, p, n, out);
}

static void chunk_begin(struct urs_hmac_sha256 *h, const struct ckpt_seal *s, const uint8_t id[16],
			uint64_t index)
{
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t) (index >> (8 * i));
	urs_hmac_sha256_init(h, s->key, sizeof(s->key));
	urs_hmac_sha256_update(h, PAGES_LABEL, sizeof(PAGES_LABEL));
	urs_hmac_sha256_update(h, id, 16);
	urs_hmac_sha256_update(h, le, sizeof(le));
}

void ckpt_seal_chunk(const struct ckpt_seal *s, const uint8_t id[16], uint64_t index, const void *p,
		     size_t n, uint8_t out[CKPT_MAC_LEN])
{
	struct urs_hmac_sha256 h;
	chunk_begin(&h, s, id, index);
	urs_hmac_sha256_update(&h, p, n);
	urs_hmac_sha256_final(&h, out);
	explicit_bzero(&h, sizeof(h));
}

void ckpt_pagemacs_start(struct ckpt_pagemacs *pm, const struct ckpt_seal *s, const uint8_t id[16])
{
	ckpt_pagemacs_free(pm);
	pm->seal = s;
	memcpy(pm->id, id, 16);
}

/* the chunk in progress is complete (or the last one): its MAC goes in */
static int chunk_end(struct ckpt_pagemacs *pm)
{
	if (urs_grow((void **) &pm->mac, &pm->cap, pm->n, sizeof(*pm->mac), 16))
		return -ENOMEM;
	urs_hmac_sha256_final(&pm->h, pm->mac[pm->n++]);
	pm->fill = 0;
	return 0;
}

int ckpt_pagemacs_update(struct ckpt_pagemacs *pm, const void *p, size_t n)
{
	const uint8_t *c = p;
	while (n) {
		if (pm->fill == 0)
			chunk_begin(&pm->h, pm->seal, pm->id, pm->n);
		size_t k = CKPT_MAC_CHUNK - pm->fill;
		k = k < n ? k : n;
		urs_hmac_sha256_update(&pm->h, c, k);
		pm->fill += k;
		c += k;
		n -= k;
		if (pm->fill == CKPT_MAC_CHUNK) {
			int r = chunk_end(pm);
			if (r)
				return r;
		}
	}
	return 0;
}

int ckpt_pagemacs_finish(struct ckpt_pagemacs *pm)
{
	return pm->fill ? chunk_end(pm) : 0;
}

void ckpt_pagemacs_free(struct ckpt_pagemacs *pm)
{
	free(pm->mac);
	explicit_bzero(pm, sizeof(*pm));
}

int ckpt_seal_check_chunk(const struct ckpt_seal *s, const uint8_t id[16], const uint8_t *p,
			  uint64_t len, uint64_t i, const uint8_t (*mac)[CKPT_MAC_LEN],
			  const char *what, struct urs_err *err)
{
	uint64_t off = i * CKPT_MAC_CHUNK;
	size_t k = len - off < CKPT_MAC_CHUNK ? (size_t) (len - off) : CKPT_MAC_CHUNK;
	uint8_t m[CKPT_MAC_LEN];
	ckpt_seal_chunk(s, id, i, p + off, k, m);
	if (urs_mac_equal(m, mac[i], CKPT_MAC_LEN))
		return 0;
	return urs_err_set(err, -EBADMSG,
			   "%s: pages.img chunk %llu (bytes %llu..%llu of the page data) fails "
			   "authentication: altered, moved or from another image",
			   what, (unsigned long long) i, (unsigned long long) off,
			   (unsigned long long) (off + k));
}

int ckpt_seal_check_pages(const struct ckpt_seal *s, const uint8_t id[16], const uint8_t *p,
			  uint64_t len, const uint8_t (*mac)[CKPT_MAC_LEN], struct urs_err *err)
{
	uint64_t n = ckpt_seal_nchunks(len);
	int r = 0;
	for (uint64_t i = 0; i < n && !r; i++)
		r = ckpt_seal_check_chunk(s, id, p, len, i, mac, "restore", err);
	return r;
}
