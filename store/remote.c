/*
 * store/remote.c — a checkpoint image in object storage (store/remote.h):
 * part buffers filled from an fd and sealed in place, multipart uploads,
 * the index, ranged reads back into files. Written as straight-line code
 * that waits by turning the loop (urs_loop_run_once), so the S3 client's
 * transfers go on while it reads or waits for a buffer.
 */
#include "store/remote.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/common.h"
#include "runtime/io.h"
#include "store/md5.h"
#include "store/serve.h"

#ifndef MFD_NOEXEC_SEAL /* 6.3; Debian 12's headers predate it */
#define MFD_NOEXEC_SEAL 0x0008U
#endif

/* small files' bytes carried in the index itself, at most: with the
 * lines of URS_REMOTE_FILES entries it still fits the index's one chunk */
#define INLINE_MAX (512u << 10)
_Static_assert(INLINE_MAX + URS_REMOTE_FILES * (URS_REMOTE_FILE_MAX + 64) + 16 <= URS_CRYPT_CHUNK,
	       "an index with its inline files is one sealed chunk");
#define KEY_MAX (URS_S3_KEY_MAX + 1)
/* the working set's object number (its own random id: its own key) */
#define WS_OBJ UINT32_MAX
_Static_assert(URS_REMOTE_WS_MAX <= URS_CRYPT_CHUNK, "a working set is one sealed chunk");

enum { B_FREE, B_FILL, B_WAIT, B_BUSY };

struct pbuf {
	uint8_t *p;
	size_t len; /* bytes in the part (header, sealed chunks) */
	int state;
	int res; /* the request's result */
	struct urs_s3_req req;
	struct urs_remote *r;
	/* reads: the entry and the range's first chunk; served: the entry's
	 * first chunk in the lazy file's data (replies count from there) */
	uint32_t ent;
	uint64_t chunk0, nchunks, base;
	/* served: the range is opened a chunk per turn as its bytes come in
	 * (next, at its place in p; opening: its head checked already) */
	uint64_t next;
	size_t at;
	bool opening;
	/* put: a small object's PutObject, not waited for (its key kept here,
	 * for the retries); its failure goes to afail */
	bool async;
	char key[URS_S3_KEY_MAX + 1];
	/* put: the checksum of p[0, sum_at) (the MD5 or the CRC32, by the
	 * store's settings), kept as each chunk is sealed (while it is in
	 * cache), and the MD5's digest sent as the part's Content-MD5 */
	struct urs_md5 md5;
	uint32_t crc;
	size_t sum_at;
	uint8_t digest[16];
};

/* obj 0: the bytes are in the index (object 0): put, in r->inl in entry
 * order; get, at data (valid until the index's buffer is reused) */
struct entry {
	uint32_t obj;
	uint64_t off, len;
	const uint8_t *data;
	char file[URS_REMOTE_FILE_MAX + 1];
};

struct urs_remote {
	struct urs_loop *loop;
	/* the loop's failure (io_uring_enter), or 0: once failed it is never
	 * turned again here, since requests still in flight may point at
	 * buffers their waiters have left (one(), wait_readable()) */
	int loop_err;
	struct urs_s3_client *s3;
	uint8_t master[URS_CRYPT_KEY_LEN];
	struct urs_crypt *crypt;
	uint8_t id[URS_CRYPT_ID_LEN]; /* get: the image's, from its index */
	char bucket[URS_S3_BUCKET_MAX + 1], prefix[KEY_MAX];
	uint32_t part_chunks, nbufs, single_bufs; /* (nbufs counts those too) */
	enum urs_s3_sum sum;			  /* the uploads' checksum (the settings') */
	size_t cap;
	struct pbuf *bufs;
	struct entry ents[URS_REMOTE_FILES];
	uint32_t nents;
	/* put: the small files' bytes for the index (INLINE_MAX, allocated
	 * on first use), inl_len of them used; inline_max 0: none inlined */
	uint8_t *inl;
	size_t inl_len, inline_max;
	/* the object being written */
	char key[KEY_MAX];
	bool mpu;	/* a multipart upload was asked for */
	bool mpu_ready; /* ... and has its id */
	struct urs_s3_req create;
	struct urs_s3_part *parts;
	uint32_t nparts, parts_cap;
	uint32_t inflight;
	int fail; /* the first failure of a request in flight */
	struct urs_err ferr;
	int afail; /* the first failure of a PutObject not waited for */
	struct urs_err aerr;
	struct urs_remote_stats st;
	int files_fd; /* get: the directory */
	/* get: the entries left to urs_remote_serve (lazy_file's from
	 * lazy_off on: the first, or -1), lazy_len bytes from lazy_off */
	int32_t lazy_ent;
	uint64_t lazy_off, lazy_len;
	const char *lazy_name;
	int lazy_fd; /* serve: its file, opened once (the directory may go) */
	/* put: where the object being written began (st.plain), and whether
	 * the caller cut it there (urs_remote_put_fd returns 1) */
	uint64_t obj0, obj_off;
	bool cut;
	/* put: where the open multipart upload's id is kept (NULL: nowhere),
	 * and the caller's lines before it */
	char *journal, *journal_head;
};

/* ---- helpers ---- */

static int object_key(struct urs_remote *r, char *out, uint32_t obj, const char *file)
{
	int n = obj ? snprintf(out, KEY_MAX, "%s%s%" PRIu32 ".%s", r->prefix, *r->prefix ? "/" : "",
			       obj, file)
		    : snprintf(out, KEY_MAX, "%s%s%s", r->prefix, *r->prefix ? "/" : "",
			       URS_REMOTE_INDEX);
	return n < 0 || n >= KEY_MAX ? -ENAMETOOLONG : 0;
}

/* the working set beside the image (store/serve.h) */
static int ws_key(struct urs_remote *r, char *out)
{
	int n = snprintf(out, KEY_MAX, "%s%s%s", r->prefix, *r->prefix ? "/" : "",
			 URS_REMOTE_WS_OBJECT);
	return n < 0 || n >= KEY_MAX ? -ENAMETOOLONG : 0;
}

static int range_resized(struct urs_remote *r, const struct pbuf *b, struct urs_err *err);

static void on_req(struct urs_s3_req *q, int res)
{
	struct pbuf *b = q->arg;
	struct urs_remote *r = b->r;
	r->inflight--;
	b->res = res;
	if (res < 0 && b->async && !r->afail) { /* its own: never another request's */
		r->afail = res;
		r->aerr = q->err;
	} else if (res < 0 && !b->async && !r->fail) {
		r->fail = res;
		r->ferr = q->err;
		if (q->op == URS_S3_GET && q->status == 416) /* a range past its end */
			r->fail = range_resized(r, b, &r->ferr);
	}
	b->async = false;
	b->state = B_FREE;
	if (res == 0 && q->op == URS_S3_MPU_PART) {
		struct urs_s3_part *pt = &r->parts[q->part_number - 1];
		pt->number = q->part_number;
		memcpy(pt->etag, q->etag, sizeof(pt->etag));
		pt->crc32 = b->crc;
	}
	if (res == 0 && q->op == URS_S3_GET)
		b->state = B_WAIT; /* data to open and write */
}

/* one turn of the loop, waiting; 0, or the loop's failure (for good) */
static int turn_once(struct urs_remote *r, bool wait)
{
	if (r->loop_err)
		return r->loop_err;
	int e = urs_loop_run_once(r->loop, wait);
	if (e < 0)
		r->loop_err = e;
	return e < 0 ? e : 0;
}

static int turn(struct urs_remote *r)
{
	return turn_once(r, true);
}

static int submit(struct urs_remote *r, struct pbuf *b)
{
	if (r->loop_err) { /* never answered: not handed to the client */
		if (!r->fail) {
			r->fail = r->loop_err;
			urs_err_set(&r->ferr, r->loop_err, "object storage: the loop failed: %s",
				    strerror(-r->loop_err));
		}
		return r->loop_err;
	}
	b->req.cb = on_req;
	b->req.arg = b;
	b->state = B_BUSY;
	int e = urs_s3_submit(r->s3, &b->req);
	if (e < 0) {
		b->state = B_FREE;
		if (!r->fail) {
			r->fail = e;
			r->ferr = b->req.err;
		}
		return e;
	}
	r->inflight++;
	if (r->inflight > r->st.peak_parts)
		r->st.peak_parts = r->inflight;
	return 0;
}

/* one request, waited for (on a private buffer record) */
static int one(struct urs_remote *r, struct urs_s3_req *q, struct urs_err *err)
{
	struct pbuf b = {.r = r, .req = *q};
	int e = submit(r, &b);
	while (e == 0 && b.state == B_BUSY)
		e = turn(r);
	int res = r->fail;
	*q = b.req;
	r->fail = 0;
	if (e < 0)
		return urs_err_set(err, e, "object storage: the loop failed: %s", strerror(-e));
	if (res < 0)
		*err = r->ferr;
	return res;
}

static struct pbuf *free_buf(struct urs_remote *r, int *e)
{
	for (;;) {
		if (r->fail) {
			*e = r->fail;
			return NULL;
		}
		for (uint32_t i = 0; i < r->nbufs; i++)
			if (r->bufs[i].state == B_FREE) {
				r->bufs[i].state = B_FILL;
				r->bufs[i].len = 0;
				r->bufs[i].sum_at = 0;
				r->bufs[i].crc = 0;
				urs_md5_init(&r->bufs[i].md5);
				return &r->bufs[i];
			}
		if ((*e = turn(r)) < 0)
			return NULL;
	}
}

/* the body's checksum for its request (store/s3.h @md5, @crc32), kept as
 * each chunk was sealed when every byte of it went through seal_slot; else
 * the S3 client makes the MD5, the CRC32 is made here (a part's is named
 * again at CompleteMultipartUpload) */
static void body_sum(struct pbuf *b)
{
	struct urs_remote *r = b->r;
	if (r->sum == URS_S3_SUM_CRC32) {
		if (b->sum_at != b->len)
			b->crc = (uint32_t) crc32_z(0, b->p, b->len);
		b->req.crc32 = &b->crc;
	} else if (b->sum_at == b->len) {
		urs_md5_final(&b->md5, b->digest);
		b->req.md5 = b->digest;
	}
}

static int drain(struct urs_remote *r)
{
	while (r->inflight) {
		int e = turn(r);
		if (e < 0)
			return e;
	}
	return 0;
}

/* ---- open / close ---- */

#define HUGE (2u << 20)

/* a part buffer's mapping length: whole huge pages */
static size_t buf_len(const struct urs_remote *r)
{
	return (r->cap + HUGE - 1) & ~(size_t) (HUGE - 1);
}

/* A part buffer: a mapping of its own, in huge pages where the host allows
 * them (THP "madvise" mode): a 16 MiB buffer first touched is then 8
 * faults, not 4096. Measured on this VM (perf, ursa-store serving a lazy
 * restore): the first-touch faults of the 4 KiB pages were a quarter of
 * its time, when a fault's chunk waits on it. Unmapped at the end: what
 * it held is gone with it (the kernel zeroes a page before reuse). */
static void *buf_map(const struct urs_remote *r)
{
	/* (Linux 6.7+ places an anonymous mapping of 2 MiB or more on a 2 MiB
	 * boundary: whole huge pages) */
	void *p =
		mmap(NULL, buf_len(r), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, buf_len(r), MADV_HUGEPAGE); /* (a hint: without THP, 4 KiB pages) */
	madvise(p, buf_len(r), MADV_DONTDUMP); /* plaintext: never in a core dump */
	return p;
}

int urs_remote_open(struct urs_loop *loop, const struct urs_s3_conf *conf, const char *bucket,
		    const char *prefix, const uint8_t master[URS_CRYPT_KEY_LEN],
		    const struct urs_remote_opts *opts, struct urs_remote **out,
		    struct urs_err *err)
{
	struct urs_remote_opts o = opts ? *opts : (struct urs_remote_opts){0};
	struct urs_remote *r = calloc(1, sizeof(*r));
	if (!r)
		return urs_err_set(err, -ENOMEM, "object storage: out of memory");
	r->loop = loop;
	r->sum = conf->sum;
	r->files_fd = -1;
	r->lazy_ent = -1;
	r->lazy_fd = -1;
	memcpy(r->master, master, URS_CRYPT_KEY_LEN);
	snprintf(r->bucket, sizeof(r->bucket), "%s", bucket);
	snprintf(r->prefix, sizeof(r->prefix), "%s", prefix);
	size_t pl = strlen(r->prefix);
	while (pl && r->prefix[pl - 1] == '/')
		r->prefix[--pl] = 0;
	r->part_chunks = o.part_chunks ? o.part_chunks : 8;
	if (r->part_chunks < 5)
		r->part_chunks = 5;
	r->nbufs = o.nbufs ? o.nbufs : 4;
	if (r->nbufs < 2) /* (the index and the working set are read together) */
		r->nbufs = 2;
	r->single_bufs = o.single_bufs < 64 ? o.single_bufs : 64;
	r->nbufs += r->single_bufs; /* (the last ones) */
	r->inline_max = o.no_inline ? 0 : INLINE_MAX;
	r->cap = URS_CRYPT_HDR_LEN + (size_t) r->part_chunks * URS_CRYPT_STRIDE;
	r->bufs = calloc(r->nbufs, sizeof(*r->bufs));
	struct urs_s3_opts so = o.s3 ? *o.s3 : (struct urs_s3_opts){0};
	if (!so.max_inflight || so.max_inflight < r->nbufs)
		so.max_inflight = r->nbufs;
	so.unsigned_payload = true; /* every body is sealed (AES-GCM): see s3.h */
	int e = r->bufs ? 0 : -ENOMEM;
	for (uint32_t i = 0; e == 0 && i < r->nbufs; i++) {
		r->bufs[i].r = r;
		if (!(r->bufs[i].p = buf_map(r)))
			e = -ENOMEM;
	}
	if (e < 0) {
		urs_err_set(err, e, "object storage: out of memory for %u part buffers", r->nbufs);
		urs_remote_close(r);
		return e;
	}
	if ((e = urs_s3_client_new(loop, conf, &so, &r->s3, err)) < 0) {
		urs_remote_close(r);
		return e;
	}
	*out = r;
	return 0;
}

void urs_remote_close(struct urs_remote *r)
{
	if (!r)
		return;
	drain(r);
	/* the client frees itself as the loop runs (a failed loop: left, with
	 * what it holds, to the process's end) */
	if (r->s3 && !r->loop_err && urs_s3_client_close(r->s3) == 0)
		urs_loop_run(r->loop);
	for (uint32_t i = 0; r->bufs && i < r->nbufs; i++)
		if (r->bufs[i].p) /* (unmapped: the kernel zeroes it before reuse) */
			munmap(r->bufs[i].p, buf_len(r));
	free(r->bufs);
	free(r->parts);
	free(r->journal);
	free(r->journal_head);
	if (r->inl)
		explicit_bzero(r->inl, r->inline_max);
	free(r->inl);
	urs_crypt_free(r->crypt);
	if (r->files_fd >= 0)
		close(r->files_fd);
	if (r->lazy_fd >= 0)
		close(r->lazy_fd);
	explicit_bzero(r->master, sizeof(r->master));
	free(r);
}

const struct urs_remote_stats *urs_remote_stats(const struct urs_remote *r)
{
	return &r->st;
}

bool urs_remote_file_ok(const char *file)
{
	size_t n = strlen(file);
	if (!n || n > URS_REMOTE_FILE_MAX || file[0] == '/' || file[n - 1] == '/')
		return false;
	const char *c = file;
	while (*c) {
		const char *end = strchrnul(c, '/');
		size_t len = (size_t) (end - c);
		if (!len || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		for (const char *q = c; q < end; q++)
			if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
			      (*q >= '0' && *q <= '9') || *q == '.' || *q == '_' || *q == '-'))
				return false;
		c = *end ? end + 1 : end;
	}
	return true;
}

/* ---- writing ---- */

int urs_remote_put_begin(struct urs_remote *r, struct urs_err *err)
{
	uint8_t id[URS_CRYPT_ID_LEN];
	if (urs_crypt_random_id(id) < 0)
		return urs_err_set(err, -EIO, "object storage: getrandom failed");
	urs_crypt_free(r->crypt);
	r->crypt = NULL;
	r->nents = 0;
	r->inl_len = 0;
	r->afail = 0;
	int e = urs_crypt_new(r->master, id, r->prefix, &r->crypt, err);
	if (e < 0)
		return e;
	char key[KEY_MAX];
	if (object_key(r, key, 0, NULL) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "object storage: prefix too long");
	/* the old image, if any, stops being one before anything is replaced;
	 * its working set goes too (a new image's would not use it) */
	struct urs_s3_req q = {.op = URS_S3_DELETE, .bucket = r->bucket, .key = key};
	e = one(r, &q, err);
	if ((e == 0 || e == -ENOENT) && ws_key(r, key) == 0) {
		q = (struct urs_s3_req){.op = URS_S3_DELETE, .bucket = r->bucket, .key = key};
		e = one(r, &q, err);
	}
	return e == -ENOENT ? 0 : e;
}

/* ---- the journal of the open multipart upload ---- */

/* written whole under a temporary name, then renamed: never half of one */
static void journal_write(struct urs_remote *r)
{
	if (!r->journal)
		return;
	char tmp[PATH_MAX], text[KEY_MAX + URS_S3_BUCKET_MAX + 2048];
	int n = snprintf(text, sizeof(text), "%sbucket %s\nkey %s\nupload %s\n", r->journal_head,
			 r->bucket, r->key, r->create.upload_id_out);
	if (n >= (int) sizeof(text) || snprintf(tmp, sizeof(tmp), "%s.tmp", r->journal) >= PATH_MAX)
		return;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return; /* best effort: the upload goes on; only a kill would leave it */
	bool ok = urs_write_all(fd, text, (size_t) n) == 0;
	close(fd);
	if (!ok || rename(tmp, r->journal) < 0)
		unlink(tmp);
}

static void journal_drop(struct urs_remote *r)
{
	if (r->journal)
		unlink(r->journal);
}

int urs_remote_journal(struct urs_remote *r, const char *path, const char *head)
{
	free(r->journal), free(r->journal_head);
	r->journal = r->journal_head = NULL;
	if (!path)
		return 0;
	if (strlen(path) + 5 >= PATH_MAX)
		return -ENAMETOOLONG;
	if (strlen(head) > 1024)
		return -E2BIG;
	r->journal = strdup(path);
	r->journal_head = strdup(head);
	if (r->journal && r->journal_head)
		return 0;
	free(r->journal), free(r->journal_head); /* none rather than half of one */
	r->journal = r->journal_head = NULL;
	return -ENOMEM;
}

int urs_remote_abort_upload(struct urs_remote *r, const char *key, const char *upload_id,
			    struct urs_err *err)
{
	char k[KEY_MAX], id[sizeof(r->create.upload_id_out)];
	if (snprintf(k, sizeof(k), "%s", key) >= (int) sizeof(k) ||
	    snprintf(id, sizeof(id), "%s", upload_id) >= (int) sizeof(id))
		return urs_err_set(err, -ENAMETOOLONG, "object storage: key or upload id too long");
	struct urs_s3_req q = {
		.op = URS_S3_MPU_ABORT, .bucket = r->bucket, .key = k, .upload_id = id};
	return one(r, &q, err);
}

/* The multipart upload, asked for when the first part is ready; parts
 * wait (B_WAIT) for its id. */
static void on_create(struct urs_s3_req *q, int res)
{
	struct urs_remote *r = q->arg;
	r->inflight--;
	if (res < 0 && !r->fail) {
		r->fail = res;
		r->ferr = q->err;
	}
	if (res < 0)
		return;
	r->mpu_ready = true;
	journal_write(r);
	for (uint32_t i = 0; i < r->nbufs; i++)
		if (r->bufs[i].state == B_WAIT)
			submit(r, &r->bufs[i]);
}

static int send_part(struct urs_remote *r, struct pbuf *b)
{
	if (urs_grow((void **) &r->parts, &r->parts_cap, r->nparts, sizeof(*r->parts), 64))
		return -ENOMEM;
	r->nparts++;
	r->st.parts++;
	r->st.sealed += b->len;
	b->req = (struct urs_s3_req){.op = URS_S3_MPU_PART,
				     .bucket = r->bucket,
				     .key = r->key,
				     .body = b->p,
				     .body_len = b->len,
				     .upload_id = r->create.upload_id_out,
				     .part_number = r->nparts};
	body_sum(b);
	if (!r->mpu) {
		r->mpu = true;
		r->create = (struct urs_s3_req){.op = URS_S3_MPU_CREATE,
						.bucket = r->bucket,
						.key = r->key,
						.cb = on_create,
						.arg = r};
		int e = urs_s3_submit(r->s3, &r->create);
		if (e < 0) {
			r->ferr = r->create.err;
			return r->fail = e;
		}
		r->inflight++;
	}
	if (!r->mpu_ready) {
		b->state = B_WAIT;
		return 0;
	}
	return submit(r, b);
}

/* the object's writing position: a chunk's slot in a part buffer */
struct slot {
	struct pbuf *b;
	size_t pos;   /* of the chunk in b->p */
	uint64_t idx; /* chunk index in the object */
	size_t fill;  /* plaintext bytes in it */
};

/* the chunk at @s sealed in place, and hashed with what precedes it */
static int seal_slot(struct urs_remote *r, uint32_t obj, struct slot *s, bool last)
{
	struct pbuf *b = s->b;
	int e = urs_crypt_seal(r->crypt, obj, s->idx, last, b->p + s->pos, s->fill, b->p + s->pos);
	b->len = s->pos + s->fill + URS_CRYPT_TAG_LEN;
	if (r->sum == URS_S3_SUM_CRC32)
		b->crc = (uint32_t) crc32_z(b->crc, b->p + b->sum_at, b->len - b->sum_at);
	else
		urs_md5_update(&b->md5, b->p + b->sum_at, b->len - b->sum_at);
	b->sum_at = b->len;
	return e;
}

static void op_done(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) op, (void) res, (void) flags;
}

/* wait until @fd has data or @abort_fd has anything (the loop turns meanwhile) */
static int wait_readable(struct urs_remote *r, int fd, int abort_fd)
{
	struct urs_op op[2] = {0};
	int fds[2] = {fd, abort_fd}, n = abort_fd >= 0 ? 2 : 1, e = 0;
	for (int i = 0; i < n; i++) {
		io_uring_prep_poll_add(urs_op_sqe(&op[i]), fds[i], POLLIN);
		urs_submit(r->loop, &op[i], op_done);
	}
	while (e == 0 && !r->fail && urs_op_busy(&op[0]) && (n == 1 || urs_op_busy(&op[1])))
		e = turn(r);
	bool aborted = n == 2 && !urs_op_busy(&op[1]);
	for (int i = 0; i < n; i++)
		if (urs_op_busy(&op[i]))
			urs_cancel(r->loop, &op[i]);
	while (urs_op_busy(&op[0]) || (n == 2 && urs_op_busy(&op[1])))
		if ((e = turn(r)) < 0)
			break;
	return e < 0 ? e : aborted ? -ECANCELED : 0;
}

static bool hung_up(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return fd >= 0 && poll(&p, 1, 0) == 1;
}

/* @abort_fd has something: "cut N\n" ends the object where its file
 * reaches N (all of it read, a whole number of chunks): 1; anything else
 * cancels */
static int cut_line(struct urs_remote *r, int abort_fd, struct urs_err *err)
{
	char line[64];
	size_t n = urs_read_line(abort_fd, line, sizeof(line));
	unsigned long long at;
	int used = -1;
	if (sscanf(line, "cut %llu%n", &at, &used) != 1 || used != (int) n)
		return -ECANCELED;
	uint64_t have = r->st.plain - r->obj0;
	if (at != r->obj_off + have || have % URS_CRYPT_CHUNK || !have)
		return urs_err_set(err, -EPROTO,
				   "object storage: %s cut at %llu, %llu bytes read from %llu (a "
				   "cut is at a whole number of %u-byte chunks, all of them read)",
				   r->key, at, (unsigned long long) have,
				   (unsigned long long) r->obj_off, URS_CRYPT_CHUNK);
	r->cut = true;
	return 1;
}

/* read @fd to its end into sealed chunks; full part buffers go up as they
 * fill. On return @s is the last slot (sealed as last), its buffer unsent. */
static int stream_in(struct urs_remote *r, uint32_t obj, int fd, int abort_fd, struct slot *s,
		     struct urs_err *err)
{
	struct slot pend = {0}; /* a full chunk not yet sealed: last or not? */
	int e = 0;
	for (;;) {
		if (r->fail)
			return r->fail;
		ssize_t n = read(fd, s->b->p + s->pos + s->fill, URS_CRYPT_CHUNK - s->fill);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if ((e = wait_readable(r, fd, abort_fd)) == -ECANCELED &&
			    (e = cut_line(r, abort_fd, err)) == 1)
				break;
			if (e < 0)
				return e;
			continue;
		}
		if (n < 0)
			return urs_err_set(err, -errno, "object storage: reading %s: %m", r->key);
		if (n == 0)
			break;
		r->st.plain += (uint64_t) n;
		if (pend.b) { /* more data: the pending chunk was not the last */
			if ((e = seal_slot(r, obj, &pend, false)) < 0)
				return e;
			if (pend.b != s->b && (e = send_part(r, pend.b)) < 0)
				return e;
			pend.b = NULL;
		}
		if ((s->fill += (size_t) n) < URS_CRYPT_CHUNK)
			continue;
		pend = *s;
		s->pos += URS_CRYPT_STRIDE;
		s->idx++;
		s->fill = 0;
		if (s->pos + URS_CRYPT_STRIDE > r->cap) {
			s->pos = 0;
			if (!(s->b = free_buf(r, &e)))
				return e;
		}
		if (hung_up(abort_fd) && (e = cut_line(r, abort_fd, err)) != 1)
			return e;
		if (e == 1)
			break;
	}
	if (s->fill == 0 && pend.b) { /* ended on a full chunk: that one is last */
		if (s->b != pend.b)
			s->b->state = B_FREE;
		*s = pend;
	}
	return seal_slot(r, obj, s, true);
}

/* The failed object's multipart upload aborted. When the store cannot be
 * reached either (killed, gone past the retries), @err (the failure) says
 * so too, naming the upload: its parts stay in the bucket until aborted
 * by hand or by a lifecycle rule (docs/storage.md). */
static void abort_mpu(struct urs_remote *r, struct urs_err *err)
{
	struct urs_err e2 = {{0}};
	struct urs_s3_req q = {.op = URS_S3_MPU_ABORT,
			       .bucket = r->bucket,
			       .key = r->key,
			       .upload_id = r->create.upload_id_out};
	int e = r->mpu_ready ? one(r, &q, &e2) : 0;
	if (e == 0 || e == -ENOENT) {
		journal_drop(r);
		return;
	}
	size_t n = strnlen(err->msg, sizeof(err->msg));
	snprintf(err->msg + n, sizeof(err->msg) - n,
		 "; its multipart upload %s was not aborted (%s): its parts stay in the bucket "
		 "until it is (docs/storage.md)",
		 r->create.upload_id_out, e2.msg);
}

/* the last part (or the only buffer, as one PutObject), then the upload's
 * end; a PutObject is not waited for unless @wait (urs_remote_put_commit
 * waits for them all before the index) */
static int put_last(struct urs_remote *r, struct pbuf *b, bool wait, struct urs_err *err)
{
	int e;
	if (!r->mpu) {
		r->st.sealed += b->len;
		snprintf(b->key, sizeof(b->key), "%s", r->key);
		b->req = (struct urs_s3_req){.op = URS_S3_PUT,
					     .bucket = r->bucket,
					     .key = b->key,
					     .body = b->p,
					     .body_len = b->len};
		body_sum(b);
		e = submit(r, b);
		b->async = e == 0 && !wait;
		if (!wait) { /* (a failure of its submit is a failure now) */
			if (e < 0)
				*err = r->ferr;
			return e;
		}
	} else {
		e = send_part(r, b);
	}
	int d = drain(r);
	if (e == 0)
		e = d < 0 ? d : r->fail;
	if (e < 0) {
		if (r->fail)
			*err = r->ferr;
		return e;
	}
	if (!r->mpu)
		return 0;
	struct urs_s3_req q = {.op = URS_S3_MPU_COMPLETE,
			       .bucket = r->bucket,
			       .key = r->key,
			       .upload_id = r->create.upload_id_out,
			       .parts = r->parts,
			       .nparts = r->nparts};
	if ((e = one(r, &q, err)) == 0)
		journal_drop(r);
	return e;
}

/* a small regular file read whole into the index's inline data instead of
 * an object of its own: 0, or 1 when it is no such file or does not fit
 * (then it is an object) */
static int put_inline(struct urs_remote *r, int fd, const char *file, uint64_t off,
		      struct urs_err *err)
{
	struct stat sb;
	off_t pos = r->inline_max ? lseek(fd, 0, SEEK_CUR) : -1;
	size_t room = r->inline_max - r->inl_len, n = 0;
	if (pos < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size < pos ||
	    (uint64_t) (sb.st_size - pos) > room)
		return 1;
	if (!r->inl && !(r->inl = malloc(r->inline_max)))
		return urs_err_set(err, -ENOMEM, "object storage: out of memory");
	while (n < room) {
		ssize_t k = read(fd, r->inl + r->inl_len + n, room - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return urs_err_set(err, -errno, "object storage: reading %s: %m", file);
		if (k == 0)
			break;
		n += (size_t) k;
	}
	char more;
	if (n == room && read(fd, &more, 1) > 0)
		return urs_err_set(err, -EFBIG, "object storage: %s grew while it was read", file);
	struct entry *en = &r->ents[r->nents++];
	*en = (struct entry){.obj = 0, .off = off, .len = n};
	snprintf(en->file, sizeof(en->file), "%s", file);
	r->inl_len += n;
	r->st.plain += n;
	return 0;
}

/* urs_remote_put_fd, or with @inl urs_remote_put_file */
static int put_any(struct urs_remote *r, int fd, const char *file, uint64_t off, int abort_fd,
		   bool inl, struct urs_err *err)
{
	if (!r->crypt)
		return urs_err_set(err, -EINVAL, "object storage: no image begun");
	if (!urs_remote_file_ok(file))
		return urs_err_set(err, -EINVAL, "object storage: %s: not a name an image may hold",
				   file);
	if (r->nents == URS_REMOTE_FILES)
		return urs_err_set(err, -E2BIG, "object storage: more than %d objects in one image",
				   URS_REMOTE_FILES);
	uint32_t obj = r->nents + 1;
	if (object_key(r, r->key, obj, file) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "object storage: %s: key too long", file);
	if (r->afail) { /* an earlier object's PutObject failed */
		*err = r->aerr;
		return r->afail;
	}
	int e = inl ? put_inline(r, fd, file, off, err) : 1;
	if (e <= 0)
		return e;
	r->mpu = r->mpu_ready = false;
	r->nparts = 0;
	r->fail = 0;
	r->cut = false;
	uint64_t plain0 = r->obj0 = r->st.plain;
	r->obj_off = off;
	e = 0;
	struct slot s = {.pos = URS_CRYPT_HDR_LEN};
	if (!(s.b = free_buf(r, &e)))
		return urs_err_set(err, e, "object storage: %s", strerror(-e));
	urs_crypt_hdr_write(r->crypt, obj, s.b->p);
	e = stream_in(r, obj, fd, abort_fd, &s, err);
	if (e == 0) /* (a cut is answered once its object is complete) */
		e = put_last(r, s.b, r->cut, err);
	if (e < 0) {
		if (!err->msg[0])
			urs_err_set(err, e, "object storage: writing %s: %s", r->key,
				    e == -ECANCELED ? "cancelled" : strerror(-e));
		drain(r);
		for (uint32_t i = 0; i < r->nbufs; i++)
			r->bufs[i].state = B_FREE;
		r->fail = 0;
		abort_mpu(r, err);
		return e;
	}
	struct entry *en = &r->ents[r->nents++];
	en->obj = obj;
	en->off = off;
	en->len = r->st.plain - plain0;
	snprintf(en->file, sizeof(en->file), "%s", file);
	r->st.objects++;
	return r->cut ? 1 : 0;
}

int urs_remote_put_fd(struct urs_remote *r, int fd, const char *file, uint64_t off, int abort_fd,
		      struct urs_err *err)
{
	return put_any(r, fd, file, off, abort_fd, false, err);
}

int urs_remote_put_file(struct urs_remote *r, int fd, const char *file, int abort_fd,
			struct urs_err *err)
{
	return put_any(r, fd, file, 0, abort_fd, true, err);
}

int urs_remote_put_commit(struct urs_remote *r, struct urs_err *err)
{
	if (!r->crypt)
		return urs_err_set(err, -EINVAL, "object storage: no image begun");
	int e = drain(r); /* every object in before the index names it */
	if (e == 0 && r->afail) {
		*err = r->aerr;
		return r->afail;
	}
	struct pbuf *b = e < 0 ? NULL : free_buf(r, &e);
	if (!b)
		return urs_err_set(err, e, "object storage: %s", strerror(-e));
	/* the lines, an empty line, the inline files' bytes (store/remote.h);
	 * without inline files, version 1 (what older readers know) */
	bool v2 = false;
	for (uint32_t i = 0; i < r->nents; i++)
		v2 |= !r->ents[i].obj;
	char *text = (char *) b->p + URS_CRYPT_HDR_LEN;
	size_t n = (size_t) snprintf(text, URS_CRYPT_CHUNK, "ursa-index %d\n", v2 ? 2 : 1);
	for (uint32_t i = 0; i < r->nents && n < URS_CRYPT_CHUNK; i++)
		n += (size_t) snprintf(text + n, URS_CRYPT_CHUNK - n,
				       "%" PRIu32 " %" PRIu64 " %" PRIu64 " %s\n", r->ents[i].obj,
				       r->ents[i].off, r->ents[i].len, r->ents[i].file);
	if (n + 1 + r->inl_len > URS_CRYPT_CHUNK) {
		b->state = B_FREE;
		return urs_err_set(err, -E2BIG, "object storage: the index outgrows one chunk");
	}
	if (v2) {
		text[n++] = '\n';
		if (r->inl_len)
			memcpy(text + n, r->inl, r->inl_len);
		n += r->inl_len;
	}
	object_key(r, r->key, 0, NULL);
	urs_crypt_hdr_write(r->crypt, 0, b->p);
	struct slot s = {.b = b, .pos = URS_CRYPT_HDR_LEN, .fill = n};
	r->mpu = false;
	if ((e = seal_slot(r, 0, &s, true)) == 0)
		e = put_last(r, b, true, err);
	r->fail = 0;
	return e < 0 && !err->msg[0]
		       ? urs_err_set(err, e, "object storage: the index: %s", strerror(-e))
		       : e;
}

int urs_remote_put_abort(struct urs_remote *r, struct urs_err *err)
{
	int first = 0;
	drain(r);
	r->fail = 0;
	for (uint32_t i = 0; i <= r->nents; i++) {
		char key[KEY_MAX];
		struct urs_err e2 = {{0}};
		/* the index first: whatever stays behind is no image; an inline
		 * file has no object of its own */
		if ((i && !r->ents[i - 1].obj) ||
		    object_key(r, key, i ? r->ents[i - 1].obj : 0, i ? r->ents[i - 1].file : NULL))
			continue;
		struct urs_s3_req q = {.op = URS_S3_DELETE, .bucket = r->bucket, .key = key};
		int e = one(r, &q, &e2);
		if (e < 0 && e != -ENOENT && !first) {
			first = e;
			*err = e2;
		}
	}
	r->nents = 0;
	return first;
}

int urs_remote_put_ws(struct urs_remote *r, const void *p, size_t n, struct urs_err *err)
{
	uint8_t id[URS_CRYPT_ID_LEN];
	char key[KEY_MAX];
	struct urs_crypt *c = NULL;
	if (n > URS_REMOTE_WS_MAX)
		return urs_err_set(err, -E2BIG, "object storage: a working set of %zu bytes", n);
	if (ws_key(r, key) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "object storage: prefix too long");
	if (urs_crypt_random_id(id) < 0)
		return urs_err_set(err, -EIO, "object storage: getrandom failed");
	int e = urs_crypt_new(r->master, id, r->prefix, &c, err);
	_cleanup_free_ uint8_t *buf =
		e < 0 ? NULL : malloc(URS_CRYPT_HDR_LEN + n + URS_CRYPT_TAG_LEN);
	if (e == 0 && !buf)
		e = urs_err_set(err, -ENOMEM, "object storage: out of memory");
	if (e == 0) { /* a key of its own: a record written again never reuses a nonce */
		urs_crypt_hdr_write(c, WS_OBJ, buf);
		memcpy(buf + URS_CRYPT_HDR_LEN, p, n);
		if (urs_crypt_seal(c, WS_OBJ, 0, true, buf + URS_CRYPT_HDR_LEN, n,
				   buf + URS_CRYPT_HDR_LEN) < 0)
			e = urs_err_set(err, -EIO, "object storage: sealing the working set");
	}
	urs_crypt_free(c);
	if (e < 0)
		return e;
	struct urs_s3_req q = {.op = URS_S3_PUT,
			       .bucket = r->bucket,
			       .key = key,
			       .body = buf,
			       .body_len = URS_CRYPT_HDR_LEN + n + URS_CRYPT_TAG_LEN};
	e = one(r, &q, err);
	return e < 0 ? urs_err_wrap(err, e, "object storage: the working set") : 0;
}

/* ---- reading ---- */

struct index_line {
	uint32_t obj;
	uint64_t off, len;
	char file[URS_REMOTE_FILE_MAX + 1];
};

/* the line at *@i (its number @line, @count lines before it) into @l:
 * 1; 0 at the end of the lines (version 2: the empty line, consumed);
 * or -EBADMSG */
static int index_line(const char *p, size_t n, size_t *i, int v, int line, int count,
		      struct index_line *l, struct urs_err *err)
{
	if (*i == n && v == 1)
		return 0;
	const char *nl = *i < n ? memchr(p + *i, '\n', n - *i) : NULL;
	size_t len = nl ? (size_t) (nl - (p + *i)) : 0;
	char buf[URS_REMOTE_FILE_MAX + 80];
	int used = -1;
	if (nl && !len && v == 2) {
		(*i)++;
		return 0;
	}
	if (!nl || len >= sizeof(buf))
		return urs_err_set(err, -EBADMSG, "image index: line %d is malformed", line);
	memcpy(buf, p + *i, len);
	buf[len] = 0;
	if (sscanf(buf, "%" SCNu32 " %" SCNu64 " %" SCNu64 " %255s%n", &l->obj, &l->off, &l->len,
		   l->file, &used) != 4 ||
	    used != (int) len || !buf[0] || buf[0] == ' ' ||
	    (l->obj != (uint32_t) count + 1 && (v == 1 || l->obj != 0)) ||
	    !urs_remote_file_ok(l->file) || l->off > INT64_MAX || l->len > INT64_MAX - l->off ||
	    (!l->obj && l->len > n))
		return urs_err_set(err, -EBADMSG, "image index: line %d is malformed", line);
	if (count == URS_REMOTE_FILES)
		return urs_err_set(err, -EBADMSG, "image index: more than %d objects",
				   URS_REMOTE_FILES);
	*i += len + 1;
	return 1;
}

int urs_remote_index_parse(const char *p, size_t n,
			   int (*visit)(void *arg, uint32_t obj, uint64_t off, uint64_t len,
					const char *file, const void *data),
			   void *arg, struct urs_err *err)
{
	static const char head[] = "ursa-index ?\n";
	size_t h = sizeof(head) - 1, i = h;
	if (n < h || memcmp(p, head, h - 2) || (p[h - 2] != '1' && p[h - 2] != '2') ||
	    p[h - 1] != '\n')
		return urs_err_set(err, -EBADMSG, "image index: not \"ursa-index 1\" or 2");
	int v = p[h - 2] - '0', count = 0, e;
	struct index_line l;
	uint64_t inl = 0;
	/* every line first, and the inline bytes they add up to */
	while ((e = index_line(p, n, &i, v, count + 2, count, &l, err)) == 1) {
		count++;
		inl += l.obj ? 0 : l.len;
	}
	if (e < 0)
		return e;
	if (inl != n - i)
		return urs_err_set(err, -EBADMSG,
				   "image index: %zu bytes of inline files where its lines say "
				   "%" PRIu64,
				   n - i, inl);
	const char *data = p + i;
	i = h;
	for (int k = 0; k < count; k++) {
		index_line(p, n, &i, v, k + 2, k, &l, err);
		if ((e = visit(arg, l.obj, l.off, l.len, l.file, l.obj ? NULL : data)) < 0)
			return e;
		data += l.obj ? 0 : l.len;
	}
	return count;
}

static int add_entry(void *arg, uint32_t obj, uint64_t off, uint64_t len, const char *file,
		     const void *data)
{
	struct urs_remote *r = arg;
	struct entry *en = &r->ents[r->nents++];
	*en = (struct entry){.obj = obj, .off = off, .len = len, .data = data};
	snprintf(en->file, sizeof(en->file), "%s", file);
	return 0;
}

static uint64_t nchunks(uint64_t plain)
{
	return plain ? (plain + URS_CRYPT_CHUNK - 1) / URS_CRYPT_CHUNK : 1;
}

static size_t chunk_plain(uint64_t plain, uint64_t c)
{
	uint64_t left = plain - c * URS_CRYPT_CHUNK;
	return left > URS_CRYPT_CHUNK ? URS_CRYPT_CHUNK : (size_t) left;
}

/* is entry @i one of those left for later? (never an inline one) */
static bool is_lazy(const struct urs_remote *r, uint32_t i)
{
	return r->lazy_ent >= 0 && r->ents[i].obj && r->ents[i].off >= r->lazy_off &&
	       !strcmp(r->ents[i].file, r->lazy_name);
}

/* is entry @i's object read now? (not inline, not left for later) */
static bool read_now(const struct urs_remote *r, uint32_t i)
{
	return r->ents[i].obj && !is_lazy(r, i);
}

static int bad(struct urs_remote *r, const char *key, const char *why, struct urs_err *err)
{
	return urs_err_set(err, -EBADMSG, "object storage: s3://%s/%s %s", r->bucket, key, why);
}

static int open_file(int dirfd, const char *file, struct urs_err *err)
{
	char path[URS_REMOTE_FILE_MAX + 1];
	snprintf(path, sizeof(path), "%s", file);
	for (char *s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		if (mkdirat(dirfd, path, 0700) < 0 && errno != EEXIST)
			return urs_err_set(err, -errno, "restore: creating %s: %m", path);
		*s = '/';
	}
	int fd = openat(dirfd, file, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	return fd < 0 ? urs_err_set(err, -errno, "restore: creating %s: %m", file) : fd;
}

/* the index's inline files written (before its buffer is reused) */
static int inline_files(struct urs_remote *r, int dirfd, struct urs_err *err)
{
	for (uint32_t i = 0; i < r->nents; i++) {
		const struct entry *en = &r->ents[i];
		if (en->obj)
			continue;
		_cleanup_close_ int fd = open_file(dirfd, en->file, err);
		if (fd < 0)
			return fd;
		int e = urs_pwrite_all(fd, en->data, en->len, (off_t) en->off);
		if (e < 0)
			return urs_err_set(err, e, "restore: writing %s: %s", en->file,
					   strerror(-e));
		r->st.plain += en->len;
	}
	return 0;
}

/* the index, read (@q, done: @res), authenticated, parsed; the image's
 * key from its header */
static int index_open(struct urs_remote *r, struct urs_s3_req *q, int res, struct urs_err *err)
{
	const char *key = q->key;
	uint8_t *p = q->buf;
	if (res == -ENOENT)
		return urs_err_set(err, -ENOENT,
				   "object storage: no image at s3://%s/%s (no %s: never written, "
				   "or its checkpoint did not finish)",
				   r->bucket, r->prefix, URS_REMOTE_INDEX);
	if (res == -EMSGSIZE)
		return bad(r, key, "is too large for an image index", err);
	if (res < 0) {
		*err = q->err;
		return res;
	}
	struct urs_crypt_hdr h;
	int e = urs_crypt_hdr_parse(p, q->len, r->prefix, &h, err);
	if (e < 0)
		return urs_err_wrap(err, e, "object storage: s3://%s/%s", r->bucket, key);
	size_t sealed = q->len - URS_CRYPT_HDR_LEN;
	if (h.obj != 0 || sealed < URS_CRYPT_TAG_LEN || sealed > URS_CRYPT_STRIDE)
		return bad(r, key, "is not an image index", err);
	urs_crypt_free(r->crypt);
	r->crypt = NULL;
	memcpy(r->id, h.id, sizeof(r->id));
	if ((e = urs_crypt_new(r->master, h.id, r->prefix, &r->crypt, err)) < 0)
		return e;
	size_t n = sealed - URS_CRYPT_TAG_LEN;
	uint8_t *text = p + URS_CRYPT_HDR_LEN;
	if (urs_crypt_open(r->crypt, 0, 0, true, text, n, text) < 0)
		return bad(r, key,
			   "fails authentication: altered, or sealed under another key (this "
			   "host's checkpoint key is not the one that made the image)",
			   err);
	r->nents = 0;
	e = urs_remote_index_parse((const char *) text, n, add_entry, r, err);
	return e < 0 ? urs_err_wrap(err, e, "object storage: s3://%s/%s", r->bucket, key) : 0;
}

/* the image's working set, if it has one (@q, done: @res), opened into
 * the directory */
static int ws_open(struct urs_remote *r, int dirfd, struct urs_s3_req *q, int res,
		   struct urs_err *err)
{
	const char *key = q->key;
	uint8_t *p = q->buf;
	if (res == -ENOENT)
		return 0; /* none recorded */
	if (res == -EMSGSIZE)
		return bad(r, key, "is too large for a working set", err);
	if (res < 0) { /* (403 for a missing key without s3:ListBucket, a store that
			* gave up): the image is whole without it, the restore goes on */
		fprintf(stderr, "ursa-store: warning: the working set: %s (restoring without it)\n",
			q->err.msg);
		return 0;
	}
	struct urs_crypt_hdr h;
	struct urs_crypt *c = NULL;
	if (q->len < URS_CRYPT_HDR_LEN + URS_CRYPT_TAG_LEN)
		return bad(r, key, "is not a working set", err);
	size_t n = q->len - URS_CRYPT_HDR_LEN - URS_CRYPT_TAG_LEN;
	int e = urs_crypt_hdr_parse(p, q->len, r->prefix, &h, err);
	if (e < 0)
		return urs_err_wrap(err, e, "object storage: s3://%s/%s", r->bucket, key);
	if (h.obj != WS_OBJ || n > URS_REMOTE_WS_MAX)
		return bad(r, key, "is not a working set", err);
	if ((e = urs_crypt_new(r->master, h.id, r->prefix, &c, err)) < 0)
		return e;
	uint8_t *text = p + URS_CRYPT_HDR_LEN;
	e = urs_crypt_open(c, WS_OBJ, 0, true, text, n, text);
	urs_crypt_free(c);
	if (e < 0)
		return bad(r, key, "fails authentication: altered, or sealed under another key",
			   err);
	/* which image it belongs to, the restore checks (ckpt/workingset.h) */
	_cleanup_close_ int fd =
		openat(dirfd, URS_REMOTE_WS_OBJECT,
		       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || (e = urs_write_all(fd, text, n)) < 0)
		return urs_err_set(err, fd < 0 ? -errno : e, "restore: writing %s: %s",
				   URS_REMOTE_WS_OBJECT, strerror(fd < 0 ? errno : -e));
	return 0;
}

/* the index and, with @ws, the working set: both asked for at once (one
 * round trip), in the first two buffers (their own records: nothing in
 * flight ever points into this frame) */
static int get_index(struct urs_remote *r, int dirfd, bool ws, struct urs_err *err)
{
	struct pbuf *q = r->bufs;
	if (object_key(r, q[0].key, 0, NULL) < 0 || ws_key(r, q[1].key) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "object storage: prefix too long");
	int e = 0, sub = 0;
	for (int i = 0; i < 1 + ws && sub == 0; i++) {
		q[i].req = (struct urs_s3_req){.op = URS_S3_GET,
					       .bucket = r->bucket,
					       .key = q[i].key,
					       .buf = q[i].p,
					       .buf_cap = r->cap};
		if ((sub = submit(r, &q[i])) < 0)
			*err = q[i].req.err;
	}
	while (e == 0 && r->inflight)
		e = turn(r);
	r->fail = 0;
	q[0].state = q[1].state = B_FREE; /* (a GET's success leaves B_WAIT) */
	if (sub < 0)
		return sub;
	if (e < 0)
		return urs_err_set(err, e, "object storage: the loop failed: %s", strerror(-e));
	e = index_open(r, &q[0].req, q[0].res, err);
	if (e == 0)
		e = inline_files(r, dirfd, err);
	return e == 0 && ws ? ws_open(r, dirfd, &q[1].req, q[1].res, err) : e;
}

/* the object a range's reply came from is not the size the index says */
static int range_resized(struct urs_remote *r, const struct pbuf *b, struct urs_err *err)
{
	return bad(r, b->req.key, "is truncated or was replaced (not the size the index says)",
		   err);
}

/* a range's reply before its first chunk is opened: of an object the size
 * the index says, and, the object's first range, of this image (its
 * header); *@at: where its first chunk is in the buffer */
static int range_head(struct urs_remote *r, const struct pbuf *b, size_t *at, struct urs_err *err)
{
	const struct entry *en = &r->ents[b->ent];
	*at = b->chunk0 ? 0 : URS_CRYPT_HDR_LEN;
	if (b->req.object_size != urs_crypt_sealed_len(en->len))
		return range_resized(r, b, err);
	struct urs_crypt_hdr h;
	if (b->chunk0)
		return 0;
	int e = urs_crypt_hdr_parse(b->p, b->req.len, r->prefix, &h, err);
	if (e < 0)
		return urs_err_wrap(err, e, "object storage: s3://%s/%s", r->bucket, b->req.key);
	if (h.obj != en->obj || memcmp(h.id, r->id, sizeof(r->id)))
		return bad(r, b->req.key, "is not this image's object", err);
	return 0;
}

/* a range read back: every byte asked for (get_range's range_len), no
 * fewer, and from an object the size the index says (the last attempt's:
 * range_head saw the first's) */
static int range_whole(struct urs_remote *r, const struct pbuf *b, struct urs_err *err)
{
	if (b->req.len != b->req.range_len ||
	    b->req.object_size != urs_crypt_sealed_len(r->ents[b->ent].len))
		return range_resized(r, b, err);
	return 0;
}

/* both, for a range read back whole before any of it is used */
static int range_check(struct urs_remote *r, const struct pbuf *b, size_t *at, struct urs_err *err)
{
	int e = range_head(r, b, at, err);
	return e ? e : range_whole(r, b, err);
}

/* chunk @c of a range (read back, or its bytes in while it comes), at *@at
 * in its buffer: opened and written to @fd where its file wants it; *@at
 * moves past it */
static int range_chunk(struct urs_remote *r, const struct pbuf *b, int fd, uint64_t c, size_t *at,
		       struct urs_err *err)
{
	const struct entry *en = &r->ents[b->ent];
	size_t n = chunk_plain(en->len, c);
	if (urs_crypt_open(r->crypt, en->obj, c, c == nchunks(en->len) - 1, b->p + *at, n,
			   b->p + *at) < 0)
		return bad(r, b->req.key,
			   "fails authentication: altered, moved, or from another image", err);
	int e = urs_pwrite_all(fd, b->p + *at, n, (off_t) (en->off + c * URS_CRYPT_CHUNK));
	if (e < 0)
		return urs_err_set(err, e, "restore: writing %s: %s", en->file, strerror(-e));
	*at += n + URS_CRYPT_TAG_LEN;
	r->st.plain += n;
	return 0;
}

/* a range read back: checked, each chunk opened and written */
static int range_done(struct urs_remote *r, int dirfd, struct pbuf *b, struct urs_err *err)
{
	size_t at;
	int e = range_check(r, b, &at, err);
	if (e < 0)
		return e;
	const struct entry *en = &r->ents[b->ent];
	_cleanup_close_ int own = -1;
	int fd = is_lazy(r, b->ent) && r->lazy_fd >= 0 ? r->lazy_fd
						       : (own = open_file(dirfd, en->file, err));
	if (fd < 0)
		return fd;
	for (uint64_t c = b->chunk0; !e && c < b->chunk0 + b->nchunks; c++)
		e = range_chunk(r, b, fd, c, &at, err);
	if (!e)
		r->st.sealed += b->req.len;
	return e;
}

static int get_range(struct urs_remote *r, struct pbuf *b, uint32_t ent, uint64_t c0, uint64_t max,
		     char keys[][KEY_MAX])
{
	const struct entry *en = &r->ents[ent];
	uint64_t total = nchunks(en->len);
	b->ent = ent;
	b->chunk0 = c0;
	b->nchunks = total - c0 < max ? total - c0 : max;
	b->opening = false;
	uint64_t off = c0 ? URS_CRYPT_HDR_LEN + c0 * URS_CRYPT_STRIDE : 0,
		 len = c0 ? 0 : URS_CRYPT_HDR_LEN;
	for (uint64_t c = c0; c < c0 + b->nchunks; c++)
		len += chunk_plain(en->len, c) + URS_CRYPT_TAG_LEN;
	b->req = (struct urs_s3_req){.op = URS_S3_GET,
				     .bucket = r->bucket,
				     .key = keys[b - r->bufs],
				     .buf = b->p,
				     .buf_cap = r->cap,
				     .range_off = off,
				     .range_len = len};
	object_key(r, keys[b - r->bufs], en->obj, en->file);
	r->st.parts++;
	return submit(r, b);
}

int urs_remote_get(struct urs_remote *r, int dirfd, struct urs_err *err)
{
	return urs_remote_get_ex(r, dirfd, NULL, 0, err);
}

/* the object (never an inline entry) of @file at @off, or -1 */
static int32_t find_entry(const struct urs_remote *r, const char *file, uint64_t off)
{
	for (uint32_t i = 0; file && i < r->nents; i++)
		if (r->ents[i].obj && r->ents[i].off == off && !strcmp(r->ents[i].file, file))
			return (int32_t) i;
	return -1;
}

/* the lazy entry holding chunk @c of the lazy data (its first chunk in
 * *@base), or -1 */
static int32_t lazy_at(const struct urs_remote *r, uint64_t c, uint64_t *base)
{
	for (uint32_t i = 0; i < r->nents; i++) {
		const struct entry *en = &r->ents[i];
		uint64_t b = (en->off - r->lazy_off) / URS_CRYPT_CHUNK;
		if (is_lazy(r, i) && c >= b && c < b + nchunks(en->len)) {
			*base = b;
			return (int32_t) i;
		}
	}
	return -1;
}

/* The file the lazy entries fill: a memfd (in memory, never on the
 * directory's file system), kept open for urs_remote_serve and handed to
 * the pager (store/serve.h URS_REMOTE_SERVE_PAGES): @end bytes long, zero
 * until filled, sealed at that size. What comes before the lazy entries
 * (pages.img's header page) is written into the directory's file as any
 * other, then copied in (lazy_head). */
static int lazy_memfd(const char *file, uint64_t end, struct urs_err *err)
{
	/* (never executable; a kernel before 6.3 knows no MFD_NOEXEC_SEAL) */
	_cleanup_close_ int fd =
		memfd_create(file, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create(file, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t) end) < 0 ||
	    fcntl(fd, F_ADD_SEALS, URS_REMOTE_PAGES_SEALS) < 0)
		return urs_err_set(err, -errno, "restore: making %s in memory: %m", file);
	int r = fd;
	fd = -1;
	return r;
}

/* the lazy file's first lazy_off bytes, once the directory's file has them
 * (from the index or an object of their own), copied into its memfd; the
 * directory's file keeps them alone (the image's owner check sees it) */
static int lazy_head(struct urs_remote *r, int dirfd, struct urs_err *err)
{
	uint8_t hb[4096];
	_cleanup_close_ int in = openat(dirfd, r->lazy_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = in < 0 || r->lazy_off > sizeof(hb) ? -1 : pread(in, hb, r->lazy_off, 0);
	if (n != (ssize_t) r->lazy_off)
		return urs_err_set(err, n < 0 && errno ? -errno : -EBADMSG,
				   "object storage: s3://%s/%s: the image has no %s before %llu",
				   r->bucket, r->prefix, r->lazy_name,
				   (unsigned long long) r->lazy_off);
	int e = urs_pwrite_all(r->lazy_fd, hb, (size_t) n, 0);
	return e < 0 ? urs_err_set(err, e, "restore: writing %s in memory: %s", r->lazy_name,
				   strerror(-e))
		     : 0;
}

/* the entries of @file from lazy_off on, left for later: one after the
 * other (a migration's page data may be cut in several objects, each but
 * the last a whole number of chunks); the file, in memory (lazy_memfd),
 * made as long as they make it */
static int lazy_file(struct urs_remote *r, const char *file, struct urs_err *err)
{
	r->lazy_name = file;
	if ((r->lazy_ent = find_entry(r, file, r->lazy_off)) < 0)
		return urs_err_set(err, -EBADMSG,
				   "object storage: s3://%s/%s: the image has no %s at %llu to "
				   "read lazily",
				   r->bucket, r->prefix, file, (unsigned long long) r->lazy_off);
	r->lazy_len = 0;
	for (int32_t i; (i = find_entry(r, file, r->lazy_off + r->lazy_len)) >= 0;) {
		if (r->lazy_len % URS_CRYPT_CHUNK || !r->ents[i].len)
			break; /* (refused below: not where a cut may be) */
		r->lazy_len += r->ents[i].len;
	}
	uint64_t n = 0;
	for (uint32_t i = 0; i < r->nents; i++)
		n += is_lazy(r, i) ? r->ents[i].len : 0;
	if (n != r->lazy_len)
		return urs_err_set(err, -EBADMSG,
				   "object storage: s3://%s/%s: the objects of %s past %llu do not "
				   "follow one another in whole chunks",
				   r->bucket, r->prefix, file, (unsigned long long) r->lazy_off);
	int fd = lazy_memfd(file, r->lazy_off + r->lazy_len, err);
	if (fd < 0)
		return fd;
	if (r->lazy_fd >= 0)
		close(r->lazy_fd);
	r->lazy_fd = fd;
	return 0;
}

int urs_remote_lazy_fd(const struct urs_remote *r)
{
	return r->lazy_fd;
}

int urs_remote_get_ex(struct urs_remote *r, int dirfd, const char *lazy, uint64_t lazy_off,
		      struct urs_err *err)
{
	int e = get_index(r, dirfd, lazy != NULL, err);
	if (e < 0)
		return e;
	r->lazy_off = lazy_off;
	if (lazy && (e = lazy_file(r, lazy, err)) < 0)
		return e;
	char(*keys)[KEY_MAX] = calloc(r->nbufs, KEY_MAX);
	if (!keys)
		return urs_err_set(err, -ENOMEM, "object storage: out of memory");
	uint32_t ent = 0;
	while (ent < r->nents && !read_now(r, ent))
		ent++;
	uint64_t c0 = 0;
	r->fail = 0;
	while (e == 0) {
		/* (not the buffers kept for a fault's single chunks) */
		for (uint32_t i = 0; e == 0 && i < r->nbufs - r->single_bufs; i++) {
			struct pbuf *b = &r->bufs[i];
			if (b->state == B_WAIT) {
				e = range_done(r, dirfd, b, err);
				b->state = B_FREE;
			}
			if (e == 0 && b->state == B_FREE && ent < r->nents) {
				if ((e = get_range(r, b, ent, c0, r->part_chunks, keys)) < 0)
					break;
				c0 += b->nchunks;
				if (c0 >= nchunks(r->ents[ent].len)) {
					while (++ent < r->nents && !read_now(r, ent))
						;
					c0 = 0;
					r->st.objects++;
				}
			}
		}
		if (e == 0 && r->fail)
			e = r->fail;
		if (e == 0 && !r->inflight && ent == r->nents) {
			bool waiting = false;
			for (uint32_t i = 0; i < r->nbufs; i++)
				waiting |= r->bufs[i].state == B_WAIT;
			if (!waiting)
				break;
			continue;
		}
		if (e == 0)
			e = turn(r);
	}
	if (e < 0 && r->fail == e && !err->msg[0])
		*err = r->ferr;
	drain(r);
	free(keys);
	return e == 0 && lazy ? lazy_head(r, dirfd, err) : e;
}

/* ---- serving the lazy entry's chunks ---- */

#define SERVE_QUEUE 1024u /* requests read ahead of the ranges in flight */

struct serve {
	struct urs_remote *r;
	int sock;
	struct urs_op poll;
	bool readable, eof;
	struct urs_remote_chunk_req q[SERVE_QUEUE];
	uint32_t qn, qhead;
	char (*keys)[KEY_MAX];
	uint8_t *ws; /* the working set the pager recorded (stored at the end) */
	size_t nws;
	bool ws_go;  /* ... if the pager says paging ended well */
	uint8_t *cs; /* per chunk, CS_*: with chunks fetched before asked for */
};

/* a chunk's state in struct serve's cs: fetched before it was asked for
 * (queued or in flight), in the file, asked for and not answered yet */
enum { CS_PRE = 1, CS_DONE = 2, CS_OWED = 4 };

static void serve_poll_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct serve *sv = container_of(op, struct serve, poll);
	sv->readable = true;
	if (res < 0 && res != -ECANCELED)
		sv->eof = true;
}

static int reply(struct serve *sv, uint32_t chunk, int status, const char *msg)
{
	struct urs_remote_chunk_reply rp = {.chunk = chunk, .status = status};
	snprintf(rp.msg, sizeof(rp.msg), "%s", msg ? msg : "");
	int e = urs_write_all(sv->sock, &rp, sizeof(rp));
	return e < 0 && !status ? e : status;
}

/* the working set follows its request at once: read whole */
static void take_ws(struct serve *sv, uint32_t n)
{
	if (!n) { /* paging ended well: store it */
		sv->ws_go = true;
		return;
	}
	uint8_t *p = n <= URS_REMOTE_WS_MAX && !sv->ws ? malloc(n ? n : 1) : NULL;
	ssize_t got = -1;
	if (p)
		do
			got = recv(sv->sock, p, n, MSG_WAITALL);
		while (got < 0 && errno == EINTR);
	if (got != (ssize_t) n) {
		free(p);
		sv->eof = true; /* not the protocol: serve no more */
		return;
	}
	sv->ws = p;
	sv->nws = n;
}

/* @rq into the queue (there is room), after the single chunks at its
 * head (faults go first, in the order asked) */
static void requeue(struct serve *sv, struct urs_remote_chunk_req rq)
{
	uint32_t p = 0;
	while (p < sv->qn && sv->q[(sv->qhead + p) % SERVE_QUEUE].n == 1)
		p++;
	for (uint32_t k = sv->qn; k > p; k--)
		sv->q[(sv->qhead + k) % SERVE_QUEUE] = sv->q[(sv->qhead + k - 1) % SERVE_QUEUE];
	sv->q[(sv->qhead + p) % SERVE_QUEUE] = rq;
	sv->qn++;
}

/* @rq asked for, with chunks fetched unasked (sv->cs): those in are
 * answered now, those coming are owed, and @rq becomes the span of the
 * rest. Returns 1 if that is to be fetched, 0 if nothing is, or a negative
 * errno from a reply. */
static int owe(struct serve *sv, struct urs_remote_chunk_req *rq)
{
	uint32_t lo = UINT32_MAX, hi = 0;
	for (uint32_t c = rq->chunk; c < rq->chunk + rq->n; c++) {
		uint8_t *s = &sv->cs[c];
		if (*s & CS_DONE) {
			int e = reply(sv, c, 0, NULL);
			if (e < 0)
				return e;
			continue;
		}
		*s |= CS_OWED;
		if (!(*s & CS_PRE)) {
			lo = lo < c ? lo : c;
			hi = c;
		}
	}
	if (lo == UINT32_MAX)
		return 0;
	*rq = (struct urs_remote_chunk_req){lo, hi - lo + 1};
	return 1;
}

/* the chunks of @first (urs_remote_serve), in ranges at the queue's end,
 * those marked 2 before those marked 1: at most half the queue, the rest is
 * left for requests */
static void queue_first(struct serve *sv, const uint8_t *first)
{
	const struct urs_remote *r = sv->r;
	uint32_t total = (uint32_t) nchunks(r->lazy_len);
	uint32_t most =
		r->part_chunks < URS_REMOTE_SERVE_MAXN ? r->part_chunks : URS_REMOTE_SERVE_MAXN;
	for (uint8_t pass = 2; pass > 0; pass--)
		for (uint32_t c = 0; c < total && sv->qn < SERVE_QUEUE / 2;) {
			uint32_t n = 0;
			while (c + n < total && n < most && first[c + n] == pass && !sv->cs[c + n])
				sv->cs[c + n++] = CS_PRE;
			if (n)
				sv->q[(sv->qhead + sv->qn++) % SERVE_QUEUE] =
					(struct urs_remote_chunk_req){c, n};
			c += n ? n : 1;
		}
}

/* requests waiting on the socket, into the queue (not past it) */
static void take_requests(struct serve *sv)
{
	uint64_t total = nchunks(sv->r->lazy_len);
	while (sv->qn < SERVE_QUEUE) {
		struct urs_remote_chunk_req rq;
		ssize_t n = recv(sv->sock, &rq, sizeof(rq), MSG_DONTWAIT | MSG_WAITALL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n == (ssize_t) sizeof(rq) && rq.chunk == URS_REMOTE_SERVE_WS) {
			take_ws(sv, rq.n);
			continue;
		}
		bool again = rq.n == (1u | URS_REMOTE_SERVE_AGAIN);
		rq.n &= again ? ~URS_REMOTE_SERVE_AGAIN : ~0u;
		if (n != (ssize_t) sizeof(rq) || rq.chunk >= total || !rq.n ||
		    rq.n > total - rq.chunk || rq.n > URS_REMOTE_SERVE_MAXN ||
		    rq.n > sv->r->part_chunks) {
			char why[128];
			if (n == (ssize_t) sizeof(rq)) { /* said, then no more served */
				snprintf(why, sizeof(why),
					 "ursa-store: a request out of the protocol (chunks %u+%u "
					 "of %llu)",
					 rq.chunk, rq.n, (unsigned long long) total);
				reply(sv, UINT32_MAX, -EPROTO, why);
			}
			sv->eof = true; /* closed, or not the protocol: serve no more */
			break;
		}
		if (again && sv->cs) /* dropped by the pager: not served, whatever was */
			sv->cs[rq.chunk] = 0;
		int more = sv->cs ? owe(sv, &rq) : 1;
		if (more < 0) {
			sv->eof = true; /* the requester is gone */
			break;
		}
		if (!more) /* answered, or to be once fetched */
			continue;
		if (rq.n == 1) { /* a fault waits on it: ahead of the prefetch's
				  * ranges, after the single chunks asked before */
			requeue(sv, rq);
		} else {
			sv->q[(sv->qhead + sv->qn++) % SERVE_QUEUE] = rq;
		}
	}
	sv->readable = false;
}

/* buffers free (one read back is answered over several turns: not yet) */
static uint32_t serve_free(const struct urs_remote *r)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < r->nbufs; i++)
		n += r->bufs[i].state == B_FREE;
	return n;
}

/* may buffer @i take the request at the queue's head? A single chunk (a
 * fault's) any; a range not one kept for single chunks, and without those
 * not the last free buffer: a fault's chunk (asked for alone, at the
 * queue's head) finds one at once instead of waiting for a range of the
 * prefetch to finish */
static bool serve_may(const struct serve *sv, uint32_t i, uint32_t nfree)
{
	const struct urs_remote *r = sv->r;
	if (sv->q[sv->qhead].n == 1)
		return true;
	if (r->single_bufs)
		return i < r->nbufs - r->single_bufs;
	return nfree > 1 || r->nbufs == 1;
}

/* chunks of range @b wholly in its buffer: all once it is read back
 * (B_WAIT); while its 206 reply comes in (B_BUSY, store/s3.h's coming),
 * those its bytes so far cover */
static uint64_t range_in(const struct pbuf *b)
{
	if (b->state == B_WAIT)
		return b->nchunks;
	size_t hdr = b->chunk0 ? 0 : URS_CRYPT_HDR_LEN;
	if (b->state != B_BUSY || !b->req.coming || b->req.len < hdr)
		return 0;
	if (b->req.len >= b->req.range_len) /* (the object's last chunk is shorter) */
		return b->nchunks;
	uint64_t n = (b->req.len - hdr) / URS_CRYPT_STRIDE;
	return n < b->nchunks ? n : b->nchunks;
}

/* has range @b a chunk to open (or, read back, to be let go)? */
static bool range_due(const struct pbuf *b)
{
	return b->state == B_WAIT || (b->opening ? b->next : b->chunk0) < b->chunk0 + range_in(b);
}

/* the next chunk of range @b opened, written and answered, as soon as its
 * bytes are in: the page data is used while the rest of the range is on
 * the wire. One a turn, so that a fault's request or chunk never waits
 * behind a whole range's (~30 ms for 16 MiB here). Read back (B_WAIT), the
 * range is checked whole and its buffer freed once every chunk is opened. */
static int serve_open(struct serve *sv, struct pbuf *b, struct urs_err *err)
{
	struct urs_remote *r = sv->r;
	int e = 0;
	if (!b->opening) {
		b->next = b->chunk0;
		b->opening = true;
		e = r->lazy_fd >= 0 && is_lazy(r, b->ent) ? range_head(r, b, &b->at, err)
							  : urs_err_set(err, -EPROTO,
									"object storage: %s is "
									"not the page data",
									r->ents[b->ent].file);
	}
	bool back = b->state == B_WAIT;
	if (!e && back)
		e = range_whole(r, b, err);
	uint64_t c = b->next;
	bool one = !e && c < b->chunk0 + range_in(b);
	if (one) {
		b->next++;
		e = range_chunk(r, b, r->lazy_fd, c, &b->at, err);
	}
	if (back && (e || b->next == b->chunk0 + b->nchunks)) {
		b->state = B_FREE;
		b->opening = false;
		r->st.sealed += e ? 0 : b->req.len;
	}
	if (!one && !e)
		return 0;
	if (!one) /* (every chunk answered while it came: the range's failure is no one's) */
		return reply(sv, UINT32_MAX, e, err->msg);
	uint32_t g = (uint32_t) (b->base + c);
	if (!e && sv->cs) { /* answered once, and only if asked for */
		uint8_t was = sv->cs[g];
		sv->cs[g] = CS_DONE;
		if (!(was & CS_OWED))
			return 0;
	}
	return reply(sv, g, e, e < 0 ? err->msg : NULL);
}

/* one turn: ranges with a chunk in answered a chunk each, queued chunks to free
 * buffers (the ones kept for single chunks first). Returns 1 while chunks
 * are left to open (the caller must not wait), 0, or a negative errno. */
static int serve_turn(struct serve *sv, struct urs_err *err)
{
	struct urs_remote *r = sv->r;
	uint32_t nfree = serve_free(r);
	bool more = false;
	for (uint32_t k = 0; k < r->nbufs; k++) {
		uint32_t i = r->nbufs - 1 - k;
		struct pbuf *b = &r->bufs[i];
		if (range_due(b)) {
			int e = serve_open(sv, b, err);
			if (e < 0)
				return e;
			more |= range_due(b);
		}
		if (b->state == B_FREE && sv->qn && serve_may(sv, i, nfree)) {
			struct urs_remote_chunk_req rq = sv->q[sv->qhead];
			nfree--;
			sv->qhead = (sv->qhead + 1) % SERVE_QUEUE;
			sv->qn--;
			uint64_t base = 0;
			int32_t ent = lazy_at(r, rq.chunk, &base); /* (take_requests checked) */
			int e = ent < 0 ? -EPROTO
					: get_range(r, b, (uint32_t) ent, rq.chunk - base, rq.n,
						    sv->keys);
			if (e < 0)
				return reply(
					sv, rq.chunk,
					urs_err_set(err, e, "object storage: %s", strerror(-e)),
					err->msg);
			b->base = base;
			if (b->nchunks < rq.n) /* the rest is the next object's: next in line */
				requeue(sv, (struct urs_remote_chunk_req){
						    rq.chunk + (uint32_t) b->nchunks,
						    rq.n - (uint32_t) b->nchunks});
		}
	}
	if (r->fail) { /* a range failed past its retries */
		*err = r->ferr;
		return reply(sv, UINT32_MAX, r->fail, err->msg);
	}
	if (!sv->eof && !sv->readable && !urs_op_busy(&sv->poll) && sv->qn < SERVE_QUEUE) {
		io_uring_prep_poll_add(urs_op_sqe(&sv->poll), sv->sock, POLLIN | POLLRDHUP);
		urs_submit(r->loop, &sv->poll, serve_poll_cb);
	}
	return more;
}

int urs_remote_serve(struct urs_remote *r, int dirfd, int sock, const uint8_t *first, size_t nfirst,
		     struct urs_err *err)
{
	if (r->lazy_ent < 0)
		return urs_err_set(err, -EINVAL, "object storage: nothing was left to serve");
	if (nfirst != nchunks(r->lazy_len))
		first = NULL;
	struct serve sv = {.r = r, .sock = sock};
	if (!(sv.keys = calloc(r->nbufs, KEY_MAX)) ||
	    (first && !(sv.cs = calloc(nchunks(r->lazy_len) + 1, 1)))) {
		free(sv.keys);
		return urs_err_set(err, -ENOMEM, "object storage: out of memory");
	}
	if (first)
		queue_first(&sv, first);
	r->files_fd = dirfd; /* a range is what was asked for (part_chunks at most) */
	r->fail = 0;
	int e = 0;
	while (e == 0) {
		if (sv.readable)
			take_requests(&sv);
		if (sv.eof) /* nobody to answer: what is queued, asked or not, goes */
			sv.qn = 0;
		int more = serve_turn(&sv, err);
		if ((e = more < 0 ? more : 0) < 0)
			break;
		if (!more && sv.eof && !sv.qn && !r->inflight)
			break;
		e = turn_once(r, !more); /* (chunks left: not waiting) */
	}
	if (urs_op_busy(&sv.poll) && !r->loop_err) {
		urs_cancel(r->loop, &sv.poll);
		while (urs_op_busy(&sv.poll) && turn(r) == 0)
			;
	}
	r->files_fd = -1; /* the caller's */
	drain(r);
	close(r->lazy_fd);
	r->lazy_fd = -1;
	free(sv.keys);
	free(sv.cs);
	r->fail = 0;
	struct urs_err e2 = {{0}};
	if (sv.ws && sv.ws_go && e == 0) { /* said to the pager, which counts it */
		int w = urs_remote_put_ws(r, sv.ws, sv.nws, &e2);
		reply(&sv, URS_REMOTE_SERVE_WS, w < 0 ? w : 0, w < 0 ? e2.msg : NULL);
	}
	free(sv.ws);
	return e;
}
