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

/* zlevel 0 = store; otherwise a zstd level (1 = fast, negative = faster). */
int urs_sf_writer_open(struct urs_sf_writer *w, urs_sf_sink sink, void *ctx, const void *key,
		       size_t keylen, int zlevel, const struct urs_sf_meta *meta, size_t nmeta);
/* the same with URS_SF_W_* @flags */
int urs_sf_writer_open_ex(struct urs_sf_writer *w, urs_sf_sink sink, void *ctx, const void *key,
			  size_t keylen, int zlevel, const struct urs_sf_meta *meta, size_t nmeta,
			  unsigned flags);
int urs_sf_write(struct urs_sf_writer *w, const void *buf, size_t len);
/* Writes the final chunk and frees the writer (also on error). */
int urs_sf_writer_close(struct urs_sf_writer *w);
/* A sink for a plain fd (write(2), continued on short writes). */
int urs_sf_fd_sink(void *fdp, const void *buf, size_t len);
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

/* Reads and verifies the header and metadata. On error r->msg says why. */
int urs_sf_reader_open(struct urs_sf_reader *r, urs_sf_source src, void *ctx, const void *key,
		       size_t keylen);
const char *urs_sf_meta_get(const struct urs_sf_reader *r, const char *key);
/* Verified payload bytes; 0 once the final chunk verified; negative errno
 * (-EBADMSG tampered/reordered/truncated) with r->msg. Bytes already returned
 * are provisional until 0 is returned: urs_sf_read_all() holds everything
 * back until the end verified, for callers that decode objects. */
ssize_t urs_sf_read(struct urs_sf_reader *r, void *buf, size_t len);
/* The whole payload into a malloc'd buffer, returned only once every chunk
 * and the trailer verified. */
int urs_sf_read_all(struct urs_sf_reader *r, uint8_t **out, size_t *len);
void urs_sf_reader_close(struct urs_sf_reader *r);

#endif
