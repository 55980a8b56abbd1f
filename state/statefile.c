/*
 * state/statefile.c — the checkpoint file (see statefile.h): header and
 * metadata, 1 MiB chunks with optional zstd (libzstd) and HMAC-SHA256
 * (OpenSSL EVP_MAC) chained per chunk, a final trailer chunk carrying the
 * payload length. Everything little-endian. The reader checks each chunk's
 * MAC before decompressing or handing out a byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <zstd.h>

#include "state/statefile.h"

#define HDR 12 /* chunk header: flags, raw_len, stored_len */

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static void le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
	       (uint32_t) p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t) rd32(p) | (uint64_t) rd32(p + 4) << 32;
}

static void *mac_new(void)
{
	EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (!m)
		return NULL;
	EVP_MAC_CTX *c = EVP_MAC_CTX_new(m);
	EVP_MAC_free(m);
	return c;
}

/* HMAC-SHA256(key, a || b || c) */
static int mac3(void *ctx, const uint8_t *key, size_t keylen, const void *a, size_t al,
		const void *b, size_t bl, const void *c, size_t cl, uint8_t out[32])
{
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
			       OSSL_PARAM_construct_end()};
	size_t ol = 0;
	if (!EVP_MAC_init(ctx, key, keylen, params) || !EVP_MAC_update(ctx, a, al) ||
	    !EVP_MAC_update(ctx, b, bl) || !EVP_MAC_update(ctx, c, cl) ||
	    !EVP_MAC_final(ctx, out, &ol, 32) || ol != 32)
		return -EIO;
	return 0;
}

/* ------------------------------------------------------------------ write */

int urs_sf_fd_sink(void *fdp, const void *buf, size_t len)
{
	int fd = *(int *) fdp;
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t) n;
	}
	return 0;
}

ssize_t urs_sf_fd_source(void *fdp, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = read(*(int *) fdp, buf, len);
		if (n >= 0 || errno != EINTR)
			return n < 0 ? -errno : n;
	}
}

static void writer_free(struct urs_sf_writer *w)
{
	ZSTD_freeCCtx(w->zc);
	EVP_MAC_CTX_free(w->mac);
	free(w->buf);
	free(w->out);
	OPENSSL_cleanse(w->key, sizeof(w->key));
	w->zc = w->mac = NULL;
	w->buf = w->out = NULL;
}

int urs_sf_writer_open(struct urs_sf_writer *w, urs_sf_sink sink, void *ctx, const void *key,
		       size_t keylen, int zlevel, const struct urs_sf_meta *meta, size_t nmeta)
{
	memset(w, 0, sizeof(*w));
	if (!keylen || keylen > URS_SF_MAX_KEY)
		return -EINVAL;
	w->sink = sink;
	w->ctx = ctx;
	memcpy(w->key, key, keylen);
	w->keylen = keylen;
	w->zlevel = zlevel;
	w->outcap = HDR + ZSTD_compressBound(URS_SF_CHUNK) + 32;
	w->buf = malloc(URS_SF_CHUNK);
	w->out = malloc(w->outcap);
	w->mac = mac_new();
	if (zlevel)
		w->zc = ZSTD_createCCtx();
	if (!w->buf || !w->out || !w->mac || (zlevel && !w->zc)) {
		writer_free(w);
		return -ENOMEM;
	}
	/* header: magic, version, meta_len, meta, MAC */
	size_t ml = 4;
	for (size_t i = 0; i < nmeta; i++)
		ml += 8 + strlen(meta[i].key) + strlen(meta[i].value);
	if (ml > URS_SF_MAX_META || 16 + ml + 32 > w->outcap) {
		writer_free(w);
		return -E2BIG;
	}
	uint8_t *p = w->out;
	memcpy(p, URS_SF_MAGIC, 8);
	le32(p + 8, URS_SF_VERSION);
	le32(p + 12, (uint32_t) ml);
	p += 16;
	le32(p, (uint32_t) nmeta);
	p += 4;
	for (size_t i = 0; i < nmeta; i++) {
		size_t kl = strlen(meta[i].key), vl = strlen(meta[i].value);
		le32(p, (uint32_t) kl);
		memcpy(p + 4, meta[i].key, kl);
		p += 4 + kl;
		le32(p, (uint32_t) vl);
		memcpy(p + 4, meta[i].value, vl);
		p += 4 + vl;
	}
	size_t hl = (size_t) (p - w->out);
	int r = mac3(w->mac, w->key, w->keylen, w->out, hl, "", 0, "", 0, w->prev);
	if (!r) {
		memcpy(p, w->prev, 32);
		r = sink(ctx, w->out, hl + 32);
	}
	if (r) {
		writer_free(w);
		return r;
	}
	return 0;
}

static int emit(struct urs_sf_writer *w, const uint8_t *src, size_t n, uint32_t flags)
{
	uint8_t *o = w->out;
	size_t stored = n;
	if (w->zlevel && n) {
		size_t z =
			ZSTD_compressCCtx(w->zc, o + HDR, w->outcap - HDR - 32, src, n, w->zlevel);
		if (!ZSTD_isError(z) && z < n) {
			stored = z;
			flags |= URS_SF_F_ZSTD;
		}
	}
	if (!(flags & URS_SF_F_ZSTD))
		memcpy(o + HDR, src, n);
	le32(o, flags);
	le32(o + 4, (uint32_t) n);
	le32(o + 8, (uint32_t) stored);
	uint8_t idx[8];
	le64(idx, w->index);
	int r = mac3(w->mac, w->key, w->keylen, w->prev, 32, idx, 8, o, HDR + stored, w->prev);
	if (r)
		return r;
	memcpy(o + HDR + stored, w->prev, 32);
	w->index++;
	return w->sink(w->ctx, o, HDR + stored + 32);
}

int urs_sf_write(struct urs_sf_writer *w, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	if (w->err)
		return w->err;
	w->total += len;
	while (len) {
		if (!w->fill && len >= URS_SF_CHUNK) {
			w->err = emit(w, p, URS_SF_CHUNK, 0); /* straight from the caller */
			p += URS_SF_CHUNK;
			len -= URS_SF_CHUNK;
		} else {
			size_t n = URS_SF_CHUNK - w->fill < len ? URS_SF_CHUNK - w->fill : len;
			memcpy(w->buf + w->fill, p, n);
			w->fill += n;
			p += n;
			len -= n;
			if (w->fill == URS_SF_CHUNK) {
				w->err = emit(w, w->buf, w->fill, 0);
				w->fill = 0;
			}
		}
		if (w->err)
			return w->err;
	}
	return 0;
}

int urs_sf_writer_close(struct urs_sf_writer *w)
{
	int r = w->err;
	if (!r && w->fill)
		r = emit(w, w->buf, w->fill, 0);
	if (!r) {
		/* trailer: FINAL, the payload length as its 8 bytes (never compressed) */
		uint8_t t[8];
		le64(t, w->total);
		int z = w->zlevel;
		w->zlevel = 0;
		r = emit(w, t, 8, URS_SF_F_FINAL);
		w->zlevel = z;
	}
	writer_free(w);
	return r;
}

/* ------------------------------------------------------------------- read */

static int rfail(struct urs_sf_reader *r, int err, const char *fmt, unsigned long long a)
{
	if (!r->err) {
		r->err = err;
		snprintf(r->msg, sizeof(r->msg), fmt, a);
	}
	return r->err;
}

/* exactly n bytes, or -EBADMSG on a short input */
static int read_full(struct urs_sf_reader *r, void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t k = r->src(r->ctx, p, n);
		if (k < 0)
			return rfail(r, (int) k, "read error (%lld)", (unsigned long long) k);
		if (k == 0)
			return rfail(r, -EBADMSG, "truncated image after chunk %llu", r->index);
		p += k;
		n -= (size_t) k;
	}
	return 0;
}

void urs_sf_reader_close(struct urs_sf_reader *r)
{
	ZSTD_freeDCtx(r->zd);
	EVP_MAC_CTX_free(r->mac);
	free(r->in);
	free(r->out);
	free(r->meta);
	OPENSSL_cleanse(r->key, sizeof(r->key));
	r->zd = r->mac = NULL;
	r->in = r->out = NULL;
	r->meta = NULL;
}

int urs_sf_reader_open(struct urs_sf_reader *r, urs_sf_source src, void *ctx, const void *key,
		       size_t keylen)
{
	memset(r, 0, sizeof(*r));
	if (!keylen || keylen > URS_SF_MAX_KEY)
		return -EINVAL;
	r->src = src;
	r->ctx = ctx;
	memcpy(r->key, key, keylen);
	r->keylen = keylen;
	r->incap = HDR + ZSTD_compressBound(URS_SF_CHUNK) + 32;
	r->in = malloc(r->incap);
	r->out = malloc(URS_SF_CHUNK);
	r->zd = ZSTD_createDCtx();
	r->mac = mac_new();
	if (!r->in || !r->out || !r->zd || !r->mac) {
		urs_sf_reader_close(r);
		return -ENOMEM;
	}
	uint8_t h[16];
	if (read_full(r, h, 16))
		return r->err;
	if (memcmp(h, URS_SF_MAGIC, 8))
		return rfail(r, -EBADMSG, "not a statefile (bad magic)%.0llu", 0);
	if (rd32(h + 8) != URS_SF_VERSION)
		return rfail(r, -EBADMSG, "unsupported statefile version %llu", rd32(h + 8));
	uint32_t ml = rd32(h + 12);
	if (ml < 4 || ml > URS_SF_MAX_META)
		return rfail(r, -EBADMSG, "metadata length %llu out of range", ml);
	uint8_t *m = malloc(16 + ml + 32);
	if (!m)
		return -ENOMEM;
	memcpy(m, h, 16);
	if (read_full(r, m + 16, ml + 32)) {
		free(m);
		return r->err;
	}
	if (mac3(r->mac, r->key, r->keylen, m, 16 + ml, "", 0, "", 0, r->prev) ||
	    CRYPTO_memcmp(r->prev, m + 16 + ml, 32)) {
		free(m);
		return rfail(r, -EBADMSG, "header MAC mismatch (tampered image or wrong key)%.0llu",
			     0);
	}
	/* metadata: count, then (len, key, len, value) pairs — already authentic */
	const uint8_t *p = m + 16, *end = m + 16 + ml;
	uint32_t n = rd32(p);
	p += 4;
	r->meta = malloc(ml + 2 * (size_t) n + 1);
	size_t mo = 0;
	for (uint32_t i = 0; r->meta && i < 2 * n; i++) {
		if (end - p < 4 || (size_t) (end - p - 4) < rd32(p)) {
			free(m);
			return rfail(r, -EBADMSG, "bad metadata entry %llu", i / 2);
		}
		uint32_t l = rd32(p);
		memcpy(r->meta + mo, p + 4, l);
		r->meta[mo + l] = 0;
		mo += l + 1;
		p += 4 + l;
	}
	free(m);
	if (!r->meta)
		return -ENOMEM;
	r->nmeta = n;
	r->meta_len = (uint32_t) mo;
	return 0;
}

const char *urs_sf_meta_get(const struct urs_sf_reader *r, const char *key)
{
	const char *p = r->meta;
	for (uint32_t i = 0; p && i < r->nmeta; i++) {
		const char *v = p + strlen(p) + 1;
		if (!strcmp(p, key))
			return v;
		p = v + strlen(v) + 1;
	}
	return NULL;
}

/* the next chunk, verified, into r->cur / r->cur_len */
static int next_chunk(struct urs_sf_reader *r)
{
	uint8_t *h = r->in;
	if (read_full(r, h, HDR))
		return r->err;
	uint32_t flags = rd32(h), raw = rd32(h + 4), stored = rd32(h + 8);
	if ((flags & ~(URS_SF_F_ZSTD | URS_SF_F_FINAL)) || raw > URS_SF_CHUNK ||
	    stored > r->incap - HDR - 32 || (!(flags & URS_SF_F_ZSTD) && stored != raw) ||
	    ((flags & URS_SF_F_FINAL) && (stored != 8 || (flags & URS_SF_F_ZSTD))))
		return rfail(r, -EBADMSG, "chunk %llu: bad header", r->index);
	if (read_full(r, h + HDR, (size_t) stored + 32))
		return r->err;
	uint8_t idx[8], mac[32];
	le64(idx, r->index);
	if (mac3(r->mac, r->key, r->keylen, r->prev, 32, idx, 8, h, HDR + stored, mac))
		return rfail(r, -EIO, "chunk %llu: HMAC failed", r->index);
	if (CRYPTO_memcmp(mac, h + HDR + stored, 32))
		return rfail(r, -EBADMSG,
			     "chunk %llu: MAC mismatch (tampered, reordered or wrong key)",
			     r->index);
	memcpy(r->prev, mac, 32);
	r->index++;
	if (flags & URS_SF_F_FINAL) {
		if (rd64(h + HDR) != r->total)
			return rfail(r, -EBADMSG, "trailer length mismatch at chunk %llu",
				     r->index - 1);
		uint8_t extra;
		ssize_t k = r->src(r->ctx, &extra, 1);
		if (k != 0)
			return rfail(r, -EBADMSG, "data after the trailer chunk %llu",
				     r->index - 1);
		r->done = 1;
		r->cur_len = 0;
		return 0;
	}
	if (flags & URS_SF_F_ZSTD) {
		size_t z = ZSTD_decompressDCtx(r->zd, r->out, URS_SF_CHUNK, h + HDR, stored);
		if (ZSTD_isError(z) || z != raw)
			return rfail(r, -EBADMSG, "chunk %llu: bad zstd payload", r->index - 1);
		r->cur = r->out;
	} else {
		r->cur = h + HDR;
	}
	r->cur_len = raw;
	r->total += raw;
	return 0;
}

ssize_t urs_sf_read(struct urs_sf_reader *r, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		if (r->err)
			return r->err;
		if (!r->cur_len) {
			if (r->done)
				break;
			if (next_chunk(r))
				return r->err;
			continue;
		}
		size_t n = r->cur_len < len - got ? r->cur_len : len - got;
		memcpy((uint8_t *) buf + got, r->cur, n);
		r->cur += n;
		r->cur_len -= n;
		got += n;
	}
	return (ssize_t) got;
}

int urs_sf_read_all(struct urs_sf_reader *r, uint8_t **out, size_t *len)
{
	size_t cap = URS_SF_CHUNK, n = 0;
	uint8_t *b = malloc(cap);
	*out = NULL;
	*len = 0;
	for (;;) {
		if (!b)
			return -ENOMEM;
		ssize_t k = urs_sf_read(r, b + n, cap - n);
		if (k < 0) {
			free(b);
			return (int) k;
		}
		n += (size_t) k;
		if (r->done && !r->cur_len)
			break;
		if (n == cap) {
			uint8_t *nb = realloc(b, cap * 2);
			if (!nb)
				free(b);
			b = nb;
			cap *= 2;
		}
	}
	*out = b;
	*len = n;
	return 0;
}
