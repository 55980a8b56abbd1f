/*
 * state/statefile.c — the checkpoint file (see statefile.h): header and
 * metadata, 1 MiB chunks with optional zstd (libzstd) and HMAC-SHA256
 * (state/sha256.h) chained per chunk, a final trailer chunk carrying the
 * payload length. Everything little-endian. The reader checks each chunk's
 * MAC before decompressing or handing out a byte. With URS_SF_W_THREAD, zstd
 * and more than one CPU the writer hands every other full chunk to a
 * compression thread
 * (struct sf_par) and compresses the next one itself; the chunks are then
 * MAC'd and written by the caller in order.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "runtime/endian.h"
#include "state/sha256.h"
#include "state/statefile.h"

#define HDR 12 /* chunk header: flags, raw_len, stored_len */

static void *mac_new(void)
{
	return calloc(1, sizeof(struct urs_hmac_sha256));
}

static void mac_free(void *ctx)
{
	if (ctx) {
		explicit_bzero(ctx, sizeof(struct urs_hmac_sha256));
		free(ctx);
	}
}

/* HMAC-SHA256(key, a || b || c) */
static int mac3(void *ctx, const uint8_t *key, size_t keylen, const void *a, size_t al,
		const void *b, size_t bl, const void *c, size_t cl, uint8_t out[32])
{
	struct urs_hmac_sha256 *h = ctx;
	urs_hmac_sha256_init(h, key, keylen);
	urs_hmac_sha256_update(h, a, al);
	urs_hmac_sha256_update(h, b, bl);
	urs_hmac_sha256_update(h, c, cl);
	urs_hmac_sha256_final(h, out);
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

/* Header + payload of one chunk into @o (room: HDR + compress bound):
 * compressed when zstd shrinks it. Returns the stored length. */
static size_t chunk_build(void *zc, int zlevel, const uint8_t *src, size_t n, uint8_t *o,
			  size_t ocap, uint32_t flags)
{
	size_t stored = n;
	if (zlevel && n) {
		size_t z = ZSTD_compressCCtx(zc, o + HDR, ocap - HDR - 32, src, n, zlevel);
		if (!ZSTD_isError(z) && z < n) {
			stored = z;
			flags |= URS_SF_F_ZSTD;
		}
	}
	if (!(flags & URS_SF_F_ZSTD))
		memcpy(o + HDR, src, n);
	urs_put_le32(o, flags);
	urs_put_le32(o + 4, (uint32_t) n);
	urs_put_le32(o + 8, (uint32_t) stored);
	return stored;
}

/* The compression thread: one chunk at a time (raw → out). */
struct sf_par {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	enum { PAR_IDLE, PAR_POSTED, PAR_DONE, PAR_QUIT } state;
	void *zc;
	int zlevel;
	uint8_t *raw, *out;
	size_t rawlen, outcap, stored;
	bool busy; /* the thread has a chunk not sealed yet (the caller's view) */
};

static void *par_main(void *arg)
{
	struct sf_par *q = arg;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (q->state == PAR_IDLE || q->state == PAR_DONE)
			pthread_cond_wait(&q->cv, &q->mu);
		if (q->state == PAR_QUIT)
			break;
		pthread_mutex_unlock(&q->mu);
		q->stored = chunk_build(q->zc, q->zlevel, q->raw, q->rawlen, q->out, q->outcap, 0);
		pthread_mutex_lock(&q->mu);
		q->state = PAR_DONE;
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

static void par_free(struct sf_par *q, bool started)
{
	if (!q)
		return;
	if (started) {
		pthread_mutex_lock(&q->mu);
		while (q->state == PAR_POSTED)
			pthread_cond_wait(&q->cv, &q->mu);
		q->state = PAR_QUIT;
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
		pthread_join(q->th, NULL);
	}
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	ZSTD_freeCCtx(q->zc);
	free(q->raw);
	free(q->out);
	free(q);
}

static struct sf_par *par_new(int zlevel, size_t outcap)
{
	struct sf_par *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	q->zlevel = zlevel;
	q->outcap = outcap;
	q->zc = ZSTD_createCCtx();
	q->raw = malloc(URS_SF_CHUNK);
	q->out = malloc(outcap);
	if (!q->zc || !q->raw || !q->out || pthread_create(&q->th, NULL, par_main, q)) {
		par_free(q, false);
		return NULL;
	}
	return q;
}

/* the chunk with the thread: wait until it is built; the thread is idle
 * again */
static void par_wait(struct sf_par *q)
{
	pthread_mutex_lock(&q->mu);
	while (q->state == PAR_POSTED)
		pthread_cond_wait(&q->cv, &q->mu);
	q->state = PAR_IDLE;
	pthread_mutex_unlock(&q->mu);
	q->busy = false;
}

static void writer_free(struct urs_sf_writer *w)
{
	par_free(w->par, true);
	w->par = NULL;
	ZSTD_freeCCtx(w->zc);
	mac_free(w->mac);
	free(w->buf);
	free(w->out);
	explicit_bzero(w->key, sizeof(w->key));
	w->zc = w->mac = NULL;
	w->buf = w->out = NULL;
}

int urs_sf_writer_open(struct urs_sf_writer *w, urs_sf_sink sink, void *ctx, const void *key,
		       size_t keylen, int zlevel, const struct urs_sf_meta *meta, size_t nmeta)
{
	return urs_sf_writer_open_ex(w, sink, ctx, key, keylen, zlevel, meta, nmeta, 0);
}

int urs_sf_writer_open_ex(struct urs_sf_writer *w, urs_sf_sink sink, void *ctx, const void *key,
			  size_t keylen, int zlevel, const struct urs_sf_meta *meta, size_t nmeta,
			  unsigned flags)
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
	/* compression on a second thread when asked and there is a second CPU
	 * (if the thread cannot be had, the writer works alone: same file) */
	if (zlevel && (flags & URS_SF_W_THREAD) && sysconf(_SC_NPROCESSORS_ONLN) > 1)
		w->par = par_new(zlevel, w->outcap);
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
	urs_put_le32(p + 8, URS_SF_VERSION);
	urs_put_le32(p + 12, (uint32_t) ml);
	p += 16;
	urs_put_le32(p, (uint32_t) nmeta);
	p += 4;
	for (size_t i = 0; i < nmeta; i++) {
		size_t kl = strlen(meta[i].key), vl = strlen(meta[i].value);
		urs_put_le32(p, (uint32_t) kl);
		memcpy(p + 4, meta[i].key, kl);
		p += 4 + kl;
		urs_put_le32(p, (uint32_t) vl);
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

static int seal(struct urs_sf_writer *w, uint8_t *o, size_t stored);

/* seal the thread's chunk, if it has one */
static int par_flush(struct urs_sf_writer *w)
{
	struct sf_par *q = w->par;
	if (!q || !q->busy)
		return 0;
	par_wait(q);
	return seal(w, q->out, q->stored);
}

/* MAC (chained) and write one built chunk */
static int seal(struct urs_sf_writer *w, uint8_t *o, size_t stored)
{
	uint8_t idx[8];
	urs_put_le64(idx, w->index);
	int r = mac3(w->mac, w->key, w->keylen, w->prev, 32, idx, 8, o, HDR + stored, w->prev);
	if (r)
		return r;
	memcpy(o + HDR + stored, w->prev, 32);
	w->index++;
	return w->sink(w->ctx, o, HDR + stored + 32);
}

static int emit(struct urs_sf_writer *w, const uint8_t *src, size_t n, uint32_t flags)
{
	return seal(w, w->out, chunk_build(w->zc, w->zlevel, src, n, w->out, w->outcap, flags));
}

/* With the thread: a chunk of @n bytes is complete at @src (w->buf, or the
 * caller's memory for a whole chunk written while the thread is busy). If
 * the thread is free it takes the chunk (w->buf: buffers swapped, no copy)
 * and the caller goes on filling; else the caller builds this one itself,
 * then seals the thread's (earlier) chunk and its own, in order. */
static int par_chunk(struct urs_sf_writer *w, const uint8_t *src, size_t n)
{
	struct sf_par *q = w->par;
	if (!q->busy && src == w->buf) {
		uint8_t *t = q->raw;
		q->busy = true;
		pthread_mutex_lock(&q->mu);
		q->raw = w->buf;
		q->rawlen = n;
		q->state = PAR_POSTED;
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
		w->buf = t;
		return 0;
	}
	size_t mine = chunk_build(w->zc, w->zlevel, src, n, w->out, w->outcap, 0);
	int r = par_flush(w);
	return r ? r : seal(w, w->out, mine);
}

int urs_sf_write(struct urs_sf_writer *w, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	if (w->err)
		return w->err;
	w->total += len;
	while (len) {
		if (!w->fill && len >= URS_SF_CHUNK &&
		    (!w->par || ((struct sf_par *) w->par)->busy)) {
			/* straight from the caller's memory (with the thread: when
			 * the caller builds this chunk itself, so no copy is needed) */
			w->err = w->par ? par_chunk(w, p, URS_SF_CHUNK)
					: emit(w, p, URS_SF_CHUNK, 0);
			p += URS_SF_CHUNK;
			len -= URS_SF_CHUNK;
		} else {
			size_t n = URS_SF_CHUNK - w->fill < len ? URS_SF_CHUNK - w->fill : len;
			memcpy(w->buf + w->fill, p, n);
			w->fill += n;
			p += n;
			len -= n;
			if (w->fill == URS_SF_CHUNK) {
				w->err = w->par ? par_chunk(w, w->buf, w->fill)
						: emit(w, w->buf, w->fill, 0);
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
		r = w->par ? par_chunk(w, w->buf, w->fill) : emit(w, w->buf, w->fill, 0);
	if (!r)
		r = par_flush(w);
	if (!r) {
		/* trailer: FINAL, the payload length as its 8 bytes (never compressed) */
		uint8_t t[8];
		urs_put_le64(t, w->total);
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
	mac_free(r->mac);
	free(r->in);
	free(r->out);
	free(r->meta);
	explicit_bzero(r->key, sizeof(r->key));
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
	if (urs_get_le32(h + 8) != URS_SF_VERSION)
		return rfail(r, -EBADMSG, "unsupported statefile version %llu",
			     urs_get_le32(h + 8));
	uint32_t ml = urs_get_le32(h + 12);
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
	    !urs_mac_equal(r->prev, m + 16 + ml, 32)) {
		free(m);
		return rfail(r, -EBADMSG, "header MAC mismatch (tampered image or wrong key)%.0llu",
			     0);
	}
	/* metadata: count, then (len, key, len, value) pairs — already authentic */
	const uint8_t *p = m + 16, *end = m + 16 + ml;
	uint32_t n = urs_get_le32(p);
	p += 4;
	r->meta = malloc(ml + 2 * (size_t) n + 1);
	size_t mo = 0;
	for (uint32_t i = 0; r->meta && i < 2 * n; i++) {
		if (end - p < 4 || (size_t) (end - p - 4) < urs_get_le32(p)) {
			free(m);
			return rfail(r, -EBADMSG, "bad metadata entry %llu", i / 2);
		}
		uint32_t l = urs_get_le32(p);
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
	uint32_t flags = urs_get_le32(h), raw = urs_get_le32(h + 4), stored = urs_get_le32(h + 8);
	if ((flags & ~(URS_SF_F_ZSTD | URS_SF_F_FINAL)) || raw > URS_SF_CHUNK ||
	    stored > r->incap - HDR - 32 || (!(flags & URS_SF_F_ZSTD) && stored != raw) ||
	    ((flags & URS_SF_F_FINAL) && (stored != 8 || (flags & URS_SF_F_ZSTD))))
		return rfail(r, -EBADMSG, "chunk %llu: bad header", r->index);
	if (read_full(r, h + HDR, (size_t) stored + 32))
		return r->err;
	uint8_t idx[8], mac[32];
	urs_put_le64(idx, r->index);
	if (mac3(r->mac, r->key, r->keylen, r->prev, 32, idx, 8, h, HDR + stored, mac))
		return rfail(r, -EIO, "chunk %llu: HMAC failed", r->index);
	if (!urs_mac_equal(mac, h + HDR + stored, 32))
		return rfail(r, -EBADMSG,
			     "chunk %llu: MAC mismatch (tampered, reordered or wrong key)",
			     r->index);
	memcpy(r->prev, mac, 32);
	r->index++;
	if (flags & URS_SF_F_FINAL) {
		if (urs_get_le64(h + HDR) != r->total)
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
