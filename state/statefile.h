/*
 * state/statefile.h — the checkpoint file: magic "URSASTAT" + version,
 * key/value metadata, then the payload in chunks of at most 1 MiB, each
 * optionally zstd-compressed and authenticated with HMAC-SHA256 chained over
 * the previous chunk's MAC and the chunk index, and a final trailer chunk so
 * truncation is detected. Streaming both ways: the writer holds one chunk,
 * the reader hands out bytes only after their chunk verified. Optionally
 * (URS_SF_W_THREAD, with zstd, more than one CPU) the writer compresses every
 * other chunk on a second thread while the caller compresses the next one;
 * MACs (the chain) and sink calls stay on the caller's thread, in chunk
 * order, and the file is byte-identical to a single-threaded write. Layout:
 * docs/state-format.md.
 */
#ifndef URSA_STATE_STATEFILE_H
#define URSA_STATE_STATEFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define URS_SF_MAGIC	"URSASTAT"
#define URS_SF_VERSION	1
#define URS_SF_CHUNK	(1u << 20)
#define URS_SF_MAX_META (1u << 20)
#define URS_SF_MAX_KEY	64
#define URS_SF_F_ZSTD	1u
#define URS_SF_F_FINAL	2u
#define URS_SF_W_THREAD 1u /* urs_sf_writer_open_ex: compress on a second thread too */

struct urs_sf_meta {
	const char *key, *value;
};

/* 0 or a negative errno; must take all @len bytes */
typedef int (*urs_sf_sink)(void *ctx, const void *buf, size_t len);
/* bytes read (0 = end of input) or a negative errno */
typedef ssize_t (*urs_sf_source)(void *ctx, void *buf, size_t len);

struct urs_sf_writer {
	urs_sf_sink sink;
	void *ctx;
	uint8_t key[URS_SF_MAX_KEY];
	size_t keylen;
	int zlevel; /* 0: no compression */
	void *zc;   /* ZSTD_CCtx */
	void *mac;  /* EVP_MAC_CTX */
	uint8_t *buf, *out;
	size_t fill, outcap;
	uint8_t prev[32];
	uint64_t index, total;
	int err;
	void *par; /* the compression thread and its chunk (NULL: none) */
};

/**
 * urs_sf_writer_open() - start a statefile: write its header and metadata
 * @w: the writer
 * @sink: takes the file's bytes, in order
 * @ctx: passed to @sink
 * @key: the MAC key (copied; wiped when the writer is freed)
 * @keylen: its length, 1..URS_SF_MAX_KEY
 * @zlevel: 0 = store; otherwise a zstd level (1 = fast, negative = faster)
 * @meta: key/value pairs stored in the header (authenticated, not
 *        compressed)
 * @nmeta: how many
 *
 * Allocates one chunk buffer and one output buffer (~2 MiB) and the zstd
 * context; the header goes to @sink before this returns.
 *
 * Return: 0; -EINVAL (key length); -ENOMEM; -E2BIG (metadata over
 * URS_SF_MAX_META); or the sink's error. On failure nothing is left to
 * free.
 */
int urs_sf_writer_open(struct urs_sf_writer *w, urs_sf_sink sink, void *ctx, const void *key,
		       size_t keylen, int zlevel, const struct urs_sf_meta *meta, size_t nmeta);

/**
 * urs_sf_writer_open_ex() - the same with URS_SF_W_* @flags
 * @w: the writer
 * @sink: takes the file's bytes, in order, on the caller's thread
 * @ctx: passed to @sink
 * @key: the MAC key
 * @keylen: its length, 1..URS_SF_MAX_KEY
 * @zlevel: 0 = store; otherwise a zstd level
 * @meta: key/value pairs stored in the header
 * @nmeta: how many
 * @flags: URS_SF_W_THREAD: compress every other chunk on a second thread
 *         (started here; only with zstd and more than one CPU, else the
 *         writer works alone: same file)
 *
 * Return: as urs_sf_writer_open().
 */
int urs_sf_writer_open_ex(struct urs_sf_writer *w, urs_sf_sink sink, void *ctx, const void *key,
			  size_t keylen, int zlevel, const struct urs_sf_meta *meta, size_t nmeta,
			  unsigned flags);

/**
 * urs_sf_write() - append payload bytes
 * @w: the writer
 * @buf: the bytes
 * @len: their count
 *
 * Each full 1 MiB chunk is compressed, MAC'd (chained) and handed to the
 * sink from here; whole chunks at the start of @buf are taken from it
 * without a copy. The first error sticks.
 *
 * Return: 0, or the sticky error (the sink's, -ENOMEM).
 */
int urs_sf_write(struct urs_sf_writer *w, const void *buf, size_t len);

/**
 * urs_sf_writer_close() - write the last chunk and the trailer, free the
 *                         writer
 * @w: the writer (freed also on error, its key wiped)
 *
 * Return: 0, or the first error of the writer's life.
 */
int urs_sf_writer_close(struct urs_sf_writer *w);

/**
 * urs_sf_fd_sink() - a sink for a plain fd (write(2), continued on short
 *                    writes)
 * @fdp: a pointer to the fd (an int)
 * @buf: the bytes
 * @len: their count
 *
 * Return: 0 or write(2)'s negative errno (EINTR is retried).
 */
int urs_sf_fd_sink(void *fdp, const void *buf, size_t len);

/**
 * urs_sf_fd_source() - a source for a plain fd (read(2))
 * @fdp: a pointer to the fd (an int)
 * @buf: where the bytes go
 * @len: at most this many
 *
 * Return: bytes read (0 at end of file), or read(2)'s negative errno (EINTR
 * is retried).
 */
ssize_t urs_sf_fd_source(void *fdp, void *buf, size_t len);

struct urs_sf_reader {
	urs_sf_source src;
	void *ctx;
	uint8_t key[URS_SF_MAX_KEY];
	size_t keylen;
	void *zd, *mac;
	uint8_t *in, *out; /* chunk as stored / as decompressed */
	size_t incap;
	const uint8_t *cur; /* verified bytes not yet handed out */
	size_t cur_len;
	uint8_t prev[32];
	uint64_t index, total;
	char *meta; /* "key\0value\0" pairs */
	uint32_t meta_len, nmeta;
	int done, err;
	char msg[160];
};

/**
 * urs_sf_reader_open() - read and verify the header and metadata
 * @r: the reader
 * @src: gives the file's bytes, in order
 * @ctx: passed to @src
 * @key: the MAC key (copied; wiped by urs_sf_reader_close)
 * @keylen: its length, 1..URS_SF_MAX_KEY
 *
 * Allocates a chunk's input and output buffers (~2 MiB) and the zstd
 * context. Nothing of the metadata is kept before its MAC verified.
 *
 * Return: 0; -EINVAL (key length); -ENOMEM; -EBADMSG (not a statefile,
 * another version, bad metadata, MAC mismatch: tampered or wrong key) or
 * the source's error, with r->msg saying why. Call urs_sf_reader_close()
 * after a failure too.
 */
int urs_sf_reader_open(struct urs_sf_reader *r, urs_sf_source src, void *ctx, const void *key,
		       size_t keylen);

/**
 * urs_sf_meta_get() - a metadata value
 * @r: an open reader
 * @key: the metadata key
 *
 * Return: its value (valid until urs_sf_reader_close), or NULL.
 */
const char *urs_sf_meta_get(const struct urs_sf_reader *r, const char *key);

/**
 * urs_sf_read() - verified payload bytes
 * @r: an open reader
 * @buf: where they go
 * @len: at most this many
 *
 * Bytes already returned are provisional until 0 is returned:
 * urs_sf_read_all() holds everything back until the end verified, for
 * callers that decode objects.
 *
 * Return: bytes read (fewer than @len only at the end); 0 once the final
 * chunk verified; negative errno (-EBADMSG tampered/reordered/truncated)
 * with r->msg. Errors stick.
 */
ssize_t urs_sf_read(struct urs_sf_reader *r, void *buf, size_t len);

/**
 * urs_sf_read_all() - the whole payload into a malloc'd buffer
 * @r: an open reader
 * @out: gets the buffer (the caller frees it), only once every chunk and
 *       the trailer verified; NULL on error
 * @len: gets its length
 *
 * Return: 0, -ENOMEM, or urs_sf_read()'s error.
 */
int urs_sf_read_all(struct urs_sf_reader *r, uint8_t **out, size_t *len);

/**
 * urs_sf_reader_close() - free the reader's buffers and wipe its key
 * @r: a reader after urs_sf_reader_open(), whatever it returned (twice is
 *     harmless)
 */
void urs_sf_reader_close(struct urs_sf_reader *r);

#endif
