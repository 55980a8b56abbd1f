/*
 * store/s3.h — an S3 client on ursa's io_uring loop: libcurl's multi
 * interface driven by the loop (every socket curl watches is a poll
 * operation on the ring, curl's timeout is one runtime/ timer), requests
 * signed with AWS SigV4 by curl, XML replies parsed by store/s3_xml.h.
 *
 * A request is a caller-owned struct urs_s3_req (like a struct urs_op: it
 * and every buffer and string it points to stay valid until its callback
 * has run). The client runs at most opts.max_inflight requests at once, each
 * on one of as many pre-made curl easy handles; the rest wait in FIFO order.
 * Nothing is allocated per request by this code (curl allocates what it
 * does internally; a connection's poll record is allocated once and kept).
 *
 * Failures are retried with exponential backoff and jitter, at most
 * opts.max_retries times: HTTP 5xx (not 501), connection failures, resets
 * and timeouts. A 4xx reply is never retried. The final error names the
 * operation, the bucket and key, the HTTP status and S3's Code and Message.
 * Checksums, signing and addressing: docs/storage.md.
 */
#ifndef URSA_STORE_S3_H
#define URSA_STORE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/loop.h"
#include "runtime/err.h"
#include "store/s3_conf.h"
#include "store/s3_xml.h"

#define URS_S3_ETAG_MAX	  130 /* quoted; md5 hex + "-N" fits easily */
#define URS_S3_UPLOAD_MAX (URS_S3_XML_FIELD_MAX + 1)
#define URS_S3_PART_MIN	  (5u << 20) /* S3's smallest part but the last */

enum urs_s3_op {
	URS_S3_PUT = 1,	     /* PutObject: body -> bucket/key */
	URS_S3_GET,	     /* GetObject (whole or ranged) -> buf */
	URS_S3_HEAD,	     /* HeadObject: object_size, etag */
	URS_S3_DELETE,	     /* DeleteObject */
	URS_S3_LIST,	     /* ListObjectsV2 (prefix, token) -> page */
	URS_S3_MPU_CREATE,   /* CreateMultipartUpload -> upload_id */
	URS_S3_MPU_PART,     /* UploadPart: body, part_number, upload_id -> etag */
	URS_S3_MPU_COMPLETE, /* CompleteMultipartUpload: parts -> etag */
	URS_S3_MPU_ABORT,    /* AbortMultipartUpload */
};

struct urs_s3_part {
	uint32_t number;
	char etag[URS_S3_ETAG_MAX];
	uint32_t crc32; /* the part's body's (URS_S3_SUM_CRC32: CompleteMultipartUpload names it) */
};

struct urs_s3_req;
struct urs_s3_slot;
/* res: 0, or a negative errno with req->err saying what happened */
typedef void (*urs_s3_cb)(struct urs_s3_req *req, int res);

/**
 * struct urs_s3_req - one S3 request, caller-owned
 * @op: what to do
 * @bucket: the bucket
 * @key: the object key (all but LIST)
 * @body: PUT, MPU_PART: the bytes to send
 * @body_len: their length
 * @md5: PUT, MPU_PART: the body's MD5 if the caller has it, else NULL (the
 *       client computes it, on the loop's thread); with URS_S3_SUM_MD5
 * @crc32: the same, its CRC32 (zlib's), with URS_S3_SUM_CRC32 (a multipart
 *         upload's caller passes each part's: the Complete names them)
 * @buf: GET: where the object (or range) goes
 * @buf_cap: its size; a larger reply fails the request with -EMSGSIZE
 * @range_off: GET: first byte wanted
 * @range_len: GET: bytes wanted; 0 = the whole object (then @range_off must be 0)
 * @prefix: LIST: key prefix ("" or NULL: all)
 * @token: LIST: continuation token from the previous page, or NULL
 * @page: LIST: filled with one page (max-keys = page->cap)
 * @upload_id: MPU_PART, MPU_COMPLETE, MPU_ABORT: the upload
 * @part_number: MPU_PART: 1..10000
 * @parts: MPU_COMPLETE: the parts in ascending order, with their ETags
 * @nparts: how many
 * @cb: called once when the request is done
 * @arg: the caller's
 * @status: out: the HTTP status of the last attempt (0: none)
 * @attempts: out: attempts made
 * @len: out: GET: bytes stored in @buf
 * @object_size: out: HEAD: the object's size; GET: its full size (a ranged
 *               GET's as soon as its reply's headers are in)
 * @coming: out: a ranged GET's 206 reply is coming in: while it is in
 *          flight, @buf[0, @len) holds its first @len bytes, in place (a
 *          retry starts again at 0 and writes the same range again)
 * @etag: out: PUT, MPU_PART, HEAD, MPU_COMPLETE: the ETag, quotes included
 * @upload_id_out: out: MPU_CREATE: the new upload's id
 * @err: out: on failure, the message
 */
struct urs_s3_req {
	enum urs_s3_op op;
	const char *bucket, *key;
	const void *body;
	size_t body_len;
	const uint8_t *md5;
	const uint32_t *crc32;
	void *buf;
	size_t buf_cap;
	uint64_t range_off, range_len;
	const char *prefix, *token;
	struct urs_s3_list_page *page;
	const char *upload_id;
	uint32_t part_number;
	const struct urs_s3_part *parts;
	uint32_t nparts;
	urs_s3_cb cb;
	void *arg;

	int status;
	uint32_t attempts;
	size_t len;
	uint64_t object_size;
	bool coming;
	char etag[URS_S3_ETAG_MAX];
	char upload_id_out[URS_S3_UPLOAD_MAX];
	struct urs_err err;

	/* private */
	struct urs_s3_req *next;
	struct urs_s3_slot *slot;
};

/**
 * struct urs_s3_opts - client tuning; zero fields take the defaults
 * @max_inflight: requests (and connections) at once: default 4, at most 32
 * @max_retries: retries after the first attempt: default 4 (set
 *               URS_S3_NO_RETRY for none)
 * @backoff_base_ms: first retry delay before jitter: default 100
 * @backoff_max_ms: largest retry delay: default 10000
 * @connect_timeout_ms: per attempt: default 10000
 * @timeout_ms: whole attempt, 0: none (large transfers)
 * @stall_s: abort an attempt that moved under 1 byte/s for this long: default 30
 * @max_reply: longest XML reply accepted: default URS_S3_XML_DOC_MAX
 * @check_etag_md5: compare a PUT's or part's plain ETag with the MD5 sent
 *                  (servers that do not verify Content-MD5 themselves; wrong
 *                  for SSE-KMS objects, whose ETag is not the MD5)
 * @unsigned_payload: sign PUT and part bodies as UNSIGNED-PAYLOAD instead
 *                    of hashing them with SHA-256 (what AWS's SDKs do over
 *                    HTTPS): for bodies authenticated end to end anyway
 *                    (sealed objects, store/crypt.h); Content-MD5 still
 *                    guards each body in transit
 */
struct urs_s3_opts {
	uint32_t max_inflight;
	uint32_t max_retries;
	uint32_t backoff_base_ms, backoff_max_ms;
	uint32_t connect_timeout_ms, timeout_ms, stall_s;
	size_t max_reply;
	bool check_etag_md5;
	bool unsigned_payload;
};

#define URS_S3_NO_RETRY UINT32_MAX

/**
 * struct urs_s3_stats - counters since the client was made
 * @requests: requests completed (either way)
 * @attempts: HTTP attempts started
 * @retries: attempts that were retries
 * @peak_inflight: most transfers in curl at once
 * @connects: connections opened (the rest of the attempts reused one)
 * @watches: times curl asked the loop to start watching a socket (it stops
 *           watching a connection while it sits idle in the cache)
 */
struct urs_s3_stats {
	uint64_t requests, attempts, retries;
	uint32_t peak_inflight;
	uint64_t connects, watches;
};

struct urs_s3_client;

/**
 * urs_s3_client_new() - make a client on a loop
 * @loop: the loop all its I/O and callbacks run on (the calling thread's)
 * @conf: credentials, region, endpoint (copied)
 * @opts: tuning, or NULL for the defaults
 * @out: the client
 * @err: why it failed
 *
 * Return: 0, -ENOMEM, or -EINVAL (curl refused an option; @err says which).
 */
int urs_s3_client_new(struct urs_loop *loop, const struct urs_s3_conf *conf,
		      const struct urs_s3_opts *opts, struct urs_s3_client **out,
		      struct urs_err *err);

/**
 * urs_s3_client_close() - release a client whose requests have all completed
 * @c: the client
 *
 * Polls still armed are cancelled; the client frees itself once their
 * final completions have come back, so keep running the loop (urs_loop_run
 * returns once they have).
 *
 * Return: 0, or -EBUSY while a request is queued or in flight.
 */
int urs_s3_client_close(struct urs_s3_client *c);

/**
 * urs_s3_submit() - start a request
 * @c: the client
 * @req: the request; see struct urs_s3_req for the fields each op reads
 *
 * The callback runs from the loop (never inside this call), once.
 *
 * Return: 0, or -EINVAL with req->err saying what is wrong with the request
 * (then the callback will not run).
 */
int urs_s3_submit(struct urs_s3_client *c, struct urs_s3_req *req);

/**
 * urs_s3_client_stats() - the client's counters
 * @c: the client
 *
 * Return: a pointer valid while the client lives.
 */
const struct urs_s3_stats *urs_s3_client_stats(const struct urs_s3_client *c);

/**
 * urs_s3_op_name() - S3's name of an operation ("PutObject", ...)
 * @op: the operation
 *
 * Return: a static string.
 */
const char *urs_s3_op_name(enum urs_s3_op op);

#endif
