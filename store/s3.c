/*
 * store/s3.c — the S3 client (see s3.h): libcurl's multi interface on the
 * io_uring loop, request building and signing options, reply handling,
 * retries.
 *
 * curl <-> loop. curl tells us which sockets to watch through
 * CURLMOPT_SOCKETFUNCTION (on_socket) and when it next needs a call through
 * CURLMOPT_TIMERFUNCTION (on_timer). Each socket gets a record (struct
 * urs_s3_sock, allocated on first use and kept on a free list) holding one
 * single-shot IORING_OP_POLL_ADD for the events curl wants; its completion
 * calls curl_multi_socket_action() for that fd, and the poll is armed again
 * if curl still wants the socket (single-shot on purpose: curl expects
 * level-triggered readiness, and a multishot poll only reports new
 * wake-ups, so data curl leaves buffered would never be reported again).
 * A change of the events wanted cancels the armed poll, whose final
 * completion arms the new one. curl's timeout is one urs_timer (struct
 * urs_s3_client.tmo): an earlier deadline cancels it and re-arms from the
 * final callback, a later one is kept in tmo_want and armed when the
 * earlier one fires. Polls are weak ops; the client holds a loop reference
 * while it has requests, so urs_loop_run() returns when they are all done
 * even though curl keeps idle connections open.
 *
 * Requests. max_inflight slots, each with one curl easy handle, its own
 * fixed header list nodes (struct curl_slist built in place, so curl_slist
 * never allocates), a URL buffer, a reply parser and a backoff timer. A
 * request takes a free slot or waits in the FIFO.
 */
#include "store/s3.h"

#include <curl/curl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "runtime/timer.h"
#include "state/sha256.h"
#include "store/md5.h"

#define SLOTS_MAX 32
#define URL_MAX	  8192
#define NHDR	  8

enum body_mode { BODY_NONE, BODY_DATA, BODY_XML };

struct urs_s3_sock {
	struct urs_op op;
	struct urs_s3_client *c;
	struct urs_s3_sock *next_free, *next_all;
	curl_socket_t fd;
	short want, armed;
	bool dead, cancelling, free;
};

struct urs_s3_slot {
	struct urs_s3_client *c;
	CURL *easy;
	struct urs_s3_req *req;
	struct urs_timer backoff;
	struct urs_s3_xml xml;
	struct urs_s3_reply reply;
	enum urs_s3_xml_kind xml_kind; /* what a 2xx reply holds (0: no XML) */
	enum body_mode mode;	       /* where this attempt's reply body goes */
	int local_rc;		       /* the transfer was stopped by us: not retried */
	char local_why[160];
	bool ranged;
	uint64_t range_total;
	uint8_t md5[16];
	uint32_t crc32;
	struct curl_slist hdr[NHDR];
	char h_sha[100], h_md5[48], h_range[80];
	char url[URL_MAX];
	char *scratch; /* CompleteMultipartUpload's body; grows, is kept */
	size_t scratch_cap;
	char errbuf[CURL_ERROR_SIZE];
};

struct urs_s3_client {
	struct urs_loop *loop;
	CURLM *multi;
	struct urs_s3_opts o;
	struct urs_s3_conf conf;
	char sigv4[100];
	char h_token[4200];
	struct urs_timer tmo;
	uint64_t tmo_want; /* the deadline curl asked for (ns), 0: none */
	struct urs_s3_slot slots[SLOTS_MAX];
	uint32_t nslots, active, running;
	struct urs_s3_req *q_head, *q_tail;
	struct urs_s3_sock *sock_free, *sock_all;
	uint32_t socks_busy; /* records whose poll is in the kernel */
	unsigned depth;	     /* nesting of our entry points (close is deferred) */
	bool close_pending, closing, close_ref, verbose;
	uint64_t rng;
	struct urs_s3_stats st;
};

static const char *const op_names[] = {
	[URS_S3_PUT] = "PutObject",
	[URS_S3_GET] = "GetObject",
	[URS_S3_HEAD] = "HeadObject",
	[URS_S3_DELETE] = "DeleteObject",
	[URS_S3_LIST] = "ListObjectsV2",
	[URS_S3_MPU_CREATE] = "CreateMultipartUpload",
	[URS_S3_MPU_PART] = "UploadPart",
	[URS_S3_MPU_COMPLETE] = "CompleteMultipartUpload",
	[URS_S3_MPU_ABORT] = "AbortMultipartUpload",
};

const char *urs_s3_op_name(enum urs_s3_op op)
{
	return op >= URS_S3_PUT && op <= URS_S3_MPU_ABORT ? op_names[op] : "S3 request";
}

const struct urs_s3_stats *urs_s3_client_stats(const struct urs_s3_client *c)
{
	return &c->st;
}

static void drive(struct urs_s3_client *c, curl_socket_t fd, int ev);
static void attempt_done(struct urs_s3_slot *sl, CURLcode rc);
static void do_close(struct urs_s3_client *c);

/* ---- entry points from the loop: defer a close asked for inside them ---- */

static void enter(struct urs_s3_client *c)
{
	c->depth++;
}

static void leave(struct urs_s3_client *c)
{
	if (--c->depth == 0 && c->close_pending) {
		c->close_pending = false;
		do_close(c);
	}
}

/* ---- sockets ---- */

static void maybe_release(struct urs_s3_client *c)
{
	if (!c->closing || c->socks_busy || urs_timer_busy(&c->tmo))
		return;
	for (struct urs_s3_sock *s = c->sock_all, *n; s; s = n) {
		n = s->next_all;
		free(s);
	}
	if (c->close_ref)
		urs_loop_unref(c->loop);
	free(c);
}

static void poll_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

static void sock_sync(struct urs_s3_sock *s)
{
	struct urs_s3_client *c = s->c;
	if (urs_op_busy(&s->op)) {
		if ((s->dead || s->want != s->armed) && !s->cancelling) {
			s->cancelling = true;
			urs_cancel(c->loop, &s->op);
		}
		return;
	}
	if (s->free) /* already on the free list (a second sync after REMOVE) */
		return;
	if (s->dead) {
		s->free = true;
		s->next_free = c->sock_free;
		c->sock_free = s;
		return;
	}
	if (!s->want)
		return;
	io_uring_prep_poll_add(urs_op_sqe(&s->op), s->fd, (unsigned) s->want);
	s->op.flags = URS_OPF_WEAK; /* the client's loop reference keeps the loop */
	s->armed = s->want;
	s->cancelling = false;
	urs_submit(c->loop, &s->op, poll_cb);
	c->socks_busy++;
}

static void poll_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	struct urs_s3_sock *s = container_of(op, struct urs_s3_sock, op);
	struct urs_s3_client *c = s->c;
	(void) loop, (void) flags;
	c->socks_busy--;
	s->cancelling = false;
	if (c->closing) {
		maybe_release(c);
		return;
	}
	enter(c);
	if (!s->dead && res != -ECANCELED) {
		int ev = 0;
		if (res < 0)
			ev = CURL_CSELECT_ERR;
		else {
			if (res & (POLLIN | POLLHUP | POLLERR))
				ev |= CURL_CSELECT_IN;
			if (res & POLLOUT)
				ev |= CURL_CSELECT_OUT;
			if (res & POLLERR)
				ev |= CURL_CSELECT_ERR;
		}
		drive(c, s->fd, ev); /* may REMOVE s (then it is free or reused) */
	}
	sock_sync(s);
	leave(c);
}

static struct urs_s3_sock *sock_get(struct urs_s3_client *c)
{
	struct urs_s3_sock *s = c->sock_free;
	if (s) {
		/* invariant: only idle records are on the free list; a busy one
		 * would watch two sockets (curl then fails the transfer) */
		if (!s->free || urs_op_busy(&s->op))
			return NULL;
		c->sock_free = s->next_free;
	} else {
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->c = c;
		s->next_all = c->sock_all;
		c->sock_all = s;
	}
	s->free = s->dead = s->cancelling = false;
	s->want = s->armed = 0;
	return s;
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct urs_s3_client *c = userp;
	struct urs_s3_sock *s = socketp;
	(void) e;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			s->dead = true;
			s->want = 0;
			curl_multi_assign(c->multi, fd, NULL);
			sock_sync(s);
		}
		return 0;
	}
	if (!s) {
		if (!(s = sock_get(c)))
			return -1;
		s->fd = fd;
		curl_multi_assign(c->multi, fd, s);
		c->st.watches++;
	}
	s->want =
		(short) ((what & CURL_POLL_IN ? POLLIN : 0) | (what & CURL_POLL_OUT ? POLLOUT : 0));
	sock_sync(s);
	return 0;
}

/* ---- curl's timeout ---- */

static void tmo_cb(struct urs_loop *loop, struct urs_timer *t, int res);

static int tmo_arm(struct urs_s3_client *c)
{
	if (!c->tmo_want || c->closing)
		return 0;
	if (!urs_timer_busy(&c->tmo)) {
		uint64_t now = urs_now_ns();
		uint64_t d = c->tmo_want > now ? c->tmo_want - now : 0;
		return urs_timer_start(c->loop, &c->tmo, d, 0, tmo_cb);
	}
	if (c->tmo.state == URS_TIMER_ARMED && c->tmo.deadline_ns > c->tmo_want)
		urs_timer_cancel(c->loop, &c->tmo); /* the final callback re-arms */
	return 0;
}

static void tmo_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct urs_s3_client *c = container_of(t, struct urs_s3_client, tmo);
	(void) loop;
	if (c->closing) {
		maybe_release(c);
		return;
	}
	if (res == -ECANCELED || (c->tmo_want && urs_now_ns() < c->tmo_want)) {
		tmo_arm(c);
		return;
	}
	if (!c->tmo_want)
		return;
	c->tmo_want = 0;
	enter(c);
	drive(c, CURL_SOCKET_TIMEOUT, 0);
	leave(c);
}

static int on_timer(CURLM *m, long ms, void *userp)
{
	struct urs_s3_client *c = userp;
	(void) m;
	if (ms < 0) {
		c->tmo_want = 0;
		if (c->tmo.state == URS_TIMER_ARMED)
			urs_timer_cancel(c->loop, &c->tmo);
		return 0;
	}
	c->tmo_want = urs_now_ns() + (uint64_t) ms * 1000000u;
	return tmo_arm(c) < 0 ? -1 : 0;
}

/* Hand curl an event (or its timeout), then finish what it finished. */
static void drive(struct urs_s3_client *c, curl_socket_t fd, int ev)
{
	int running;
	curl_multi_socket_action(c->multi, fd, ev, &running);
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(c->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		CURL *e = m->easy_handle;
		CURLcode rc = m->data.result;
		struct urs_s3_slot *sl = NULL;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **) &sl);
		curl_multi_remove_handle(c->multi, e);
		c->running--;
		attempt_done(sl, rc);
	}
	if (!c->active && c->tmo_want) { /* nothing to time: let the loop end */
		c->tmo_want = 0;
		if (c->tmo.state == URS_TIMER_ARMED)
			urs_timer_cancel(c->loop, &c->tmo);
	}
}

/* ---- building a request ---- */

struct sbuf {
	char *p;
	size_t n, cap;
	bool over;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t) r >= b->cap - b->n)
		b->over = true;
	else
		b->n += (size_t) r;
}

/* S3's URI encoding: every byte but A-Z a-z 0-9 - _ . ~ (and '/' in a
 * path) as %XX, upper-case hex, so curl signs exactly what is sent. */
static void sb_enc(struct sbuf *b, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s && !b->over; s++) {
		unsigned char ch = (unsigned char) *s;
		bool plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			     (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
			     ch == '~' || (keep_slash && ch == '/');
		if (b->cap - b->n < 4) {
			b->over = true;
			break;
		}
		if (plain) {
			b->p[b->n++] = (char) ch;
		} else {
			b->p[b->n++] = '%';
			b->p[b->n++] = hex[ch >> 4];
			b->p[b->n++] = hex[ch & 15];
		}
	}
	b->p[b->n < b->cap ? b->n : b->cap - 1] = 0;
}

/* URL: path-style on a custom endpoint (and for dotted bucket names on
 * AWS, whose TLS certificate does not cover them), else virtual-hosted.
 * Query parameters are written sorted and encoded: SigV4's canonical form. */
static int build_url(struct urs_s3_slot *sl, const struct urs_s3_req *r)
{
	const struct urs_s3_conf *cf = &sl->c->conf;
	struct sbuf b = {sl->url, 0, sizeof(sl->url), false};
	if (cf->path_style)
		sb_printf(&b, "%s/%s", cf->endpoint, r->bucket);
	else if (strchr(r->bucket, '.'))
		sb_printf(&b, "https://s3.%s.amazonaws.com/%s", cf->region, r->bucket);
	else
		sb_printf(&b, "https://%s.s3.%s.amazonaws.com", r->bucket, cf->region);
	bool path = cf->path_style || strchr(r->bucket, '.');
	if (r->op == URS_S3_LIST) {
		sb_printf(&b, "%s?", path ? "" : "/");
		if (r->token && *r->token) {
			sb_printf(&b, "continuation-token=");
			sb_enc(&b, r->token, false);
			sb_printf(&b, "&");
		}
		sb_printf(&b, "list-type=2&max-keys=%u&prefix=", r->page->cap);
		sb_enc(&b, r->prefix ? r->prefix : "", false);
	} else {
		sb_printf(&b, "/");
		sb_enc(&b, r->key, true);
	}
	if (r->op == URS_S3_MPU_CREATE)
		sb_printf(&b, "?uploads=");
	if (r->op == URS_S3_MPU_PART)
		sb_printf(&b, "?partNumber=%u&uploadId=", r->part_number);
	if (r->op == URS_S3_MPU_COMPLETE || r->op == URS_S3_MPU_ABORT)
		sb_printf(&b, "?uploadId=");
	if (r->op == URS_S3_MPU_PART || r->op == URS_S3_MPU_COMPLETE || r->op == URS_S3_MPU_ABORT)
		sb_enc(&b, r->upload_id, false);
	return b.over ? -ENAMETOOLONG : 0;
}

static void sb_xml(struct sbuf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			sb_printf(b, "&amp;");
			break;
		case '<':
			sb_printf(b, "&lt;");
			break;
		case '>':
			sb_printf(b, "&gt;");
			break;
		case '"':
			sb_printf(b, "&quot;");
			break;
		default:
			sb_printf(b, "%c", *s);
		}
	}
}

static void crc32_b64(uint32_t crc, char *out);

/* CompleteMultipartUpload's body in the slot's scratch buffer (grown to the
 * largest seen, then kept). Returns its length or -ENOMEM. */
static ssize_t build_complete(struct urs_s3_slot *sl, const struct urs_s3_req *r)
{
	size_t need = 128 + (size_t) r->nparts * (104 + 6 * URS_S3_ETAG_MAX); /* (with CRC32s) */
	if (need > sl->scratch_cap) {
		char *p = realloc(sl->scratch, need);
		if (!p)
			return -ENOMEM;
		sl->scratch = p;
		sl->scratch_cap = need;
	}
	struct sbuf b = {sl->scratch, 0, sl->scratch_cap, false};
	sb_printf(&b,
		  "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	for (uint32_t i = 0; i < r->nparts; i++) {
		sb_printf(&b, "<Part><PartNumber>%u</PartNumber><ETag>", r->parts[i].number);
		sb_xml(&b, r->parts[i].etag);
		sb_printf(&b, "</ETag>");
		if (sl->c->conf.sum == URS_S3_SUM_CRC32) { /* (created with CRC32: S3 wants them) */
			char b64[12];
			crc32_b64(r->parts[i].crc32, b64);
			sb_printf(&b, "<ChecksumCRC32>%s</ChecksumCRC32>", b64);
		}
		sb_printf(&b, "</Part>");
	}
	sb_printf(&b, "</CompleteMultipartUpload>");
	return b.over ? -ENOMEM : (ssize_t) b.n;
}

static void hex(const uint8_t *d, size_t n, char *out)
{
	static const char h[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = h[d[i] >> 4];
		out[2 * i + 1] = h[d[i] & 15];
	}
	out[2 * n] = 0;
}

static void base64(const uint8_t *d, size_t n, char *out)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t) d[i] << 16 | (i + 1 < n ? (uint32_t) d[i + 1] << 8 : 0) |
			     (i + 2 < n ? d[i + 2] : 0);
		out[o++] = t[v >> 18];
		out[o++] = t[(v >> 12) & 63];
		out[o++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? t[v & 63] : '=';
	}
	out[o] = 0;
}

/* @crc as S3 writes a CRC32: its 4 bytes, big-endian, in base64 (9 bytes) */
static void crc32_b64(uint32_t crc, char *out)
{
	uint8_t be[4] = {(uint8_t) (crc >> 24), (uint8_t) (crc >> 16), (uint8_t) (crc >> 8),
			 (uint8_t) crc};
	base64(be, sizeof(be), out);
}

/* The header list, in the slot's own nodes. */
static void build_headers(struct urs_s3_slot *sl, const struct urs_s3_req *r, const void *body,
			  size_t len)
{
	struct urs_s3_client *c = sl->c;
	const char *h[NHDR];
	unsigned n = 0;
	uint8_t d[32];
	memcpy(sl->h_sha, "x-amz-content-sha256: ", 22);
	if (c->o.unsigned_payload && (r->op == URS_S3_PUT || r->op == URS_S3_MPU_PART)) {
		memcpy(sl->h_sha + 22, "UNSIGNED-PAYLOAD", 17);
	} else {
		struct urs_sha256 s;
		urs_sha256_init(&s);
		urs_sha256_update(&s, body, len);
		urs_sha256_final(&s, d);
		hex(d, 32, sl->h_sha + 22);
	}
	h[n++] = sl->h_sha;
	if ((r->op == URS_S3_PUT || r->op == URS_S3_MPU_PART) && c->conf.sum == URS_S3_SUM_CRC32) {
		sl->crc32 = r->crc32 ? *r->crc32 : (uint32_t) crc32_z(0, body, len);
		memcpy(sl->h_md5, "x-amz-checksum-crc32: ", 22);
		crc32_b64(sl->crc32, sl->h_md5 + 22);
		h[n++] = sl->h_md5;
	} else if (r->op == URS_S3_PUT || r->op == URS_S3_MPU_PART) {
		if (r->md5)
			memcpy(sl->md5, r->md5, 16);
		else
			urs_md5(body, len, sl->md5);
		memcpy(sl->h_md5, "Content-MD5: ", 13);
		base64(sl->md5, 16, sl->h_md5 + 13);
		h[n++] = sl->h_md5;
	}
	if (r->op == URS_S3_MPU_CREATE && c->conf.sum == URS_S3_SUM_CRC32)
		h[n++] = "x-amz-checksum-algorithm: CRC32";
	if (c->h_token[0])
		h[n++] = c->h_token;
	if (sl->ranged) {
		snprintf(sl->h_range, sizeof(sl->h_range), "Range: bytes=%llu-%llu",
			 (unsigned long long) r->range_off,
			 (unsigned long long) (r->range_off + r->range_len - 1));
		h[n++] = sl->h_range;
	}
	if (r->op == URS_S3_MPU_COMPLETE)
		h[n++] = "Content-Type: application/xml";
	else if (r->op == URS_S3_PUT || r->op == URS_S3_MPU_PART || r->op == URS_S3_MPU_CREATE)
		h[n++] = "Content-Type: application/octet-stream";
	for (unsigned i = 0; i < n; i++) {
		sl->hdr[i].data = (char *) h[i];
		sl->hdr[i].next = i + 1 < n ? &sl->hdr[i + 1] : NULL;
	}
}

/* ---- reply ---- */

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
	struct urs_s3_slot *sl = ud;
	struct urs_s3_req *r = sl->req;
	size_t len = size * n;
	if (len >= 5 && !memcmp(p, "HTTP/", 5)) { /* a new response (after a 100) */
		r->etag[0] = 0;
		r->coming = false;
		sl->range_total = 0;
		sl->mode = BODY_NONE;
		return len;
	}
	if (len <= 2 && (p[0] == '\r' || p[0] == '\n')) { /* end of headers: the status is known */
		long st = 0;
		curl_easy_getinfo(sl->easy, CURLINFO_RESPONSE_CODE, &st);
		sl->mode = BODY_NONE;
		if (st >= 300 || (st >= 200 && sl->xml_kind)) {
			if (urs_s3_xml_begin(&sl->xml, st >= 300 ? URS_S3_XML_ERROR : sl->xml_kind,
					     &sl->reply) == 0)
				sl->mode = BODY_XML;
		} else if (st >= 200 && r->op == URS_S3_GET) {
			sl->mode = BODY_DATA;
			/* a ranged GET's bytes, usable as they come (its size
			 * from Content-Range): only a 206's; a 200 would be the
			 * whole object, refused once it ends */
			r->coming = sl->ranged && st == 206;
			if (r->coming)
				r->object_size = sl->range_total;
		}
		return len;
	}
	size_t v = 0;
	if (len > 5 && !strncasecmp(p, "ETag:", 5))
		v = 5;
	else if (len > 14 && !strncasecmp(p, "Content-Range:", 14))
		v = 14;
	if (!v)
		return len;
	const char *s = p + v, *e = p + len;
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
		e--;
	if (v == 5 && (size_t) (e - s) < sizeof(r->etag)) {
		memcpy(r->etag, s, (size_t) (e - s));
		r->etag[e - s] = 0;
	} else if (v == 14) {
		const char *slash = memchr(s, '/', (size_t) (e - s));
		if (slash)
			sl->range_total = strtoull(slash + 1, NULL, 10);
	}
	return len;
}

static size_t on_write(char *p, size_t size, size_t n, void *ud)
{
	struct urs_s3_slot *sl = ud;
	struct urs_s3_req *r = sl->req;
	size_t len = size * n;
	switch (sl->mode) {
	case BODY_XML:
		urs_s3_xml_feed(&sl->xml, p, len); /* an error is reported at the end */
		return len;
	case BODY_DATA:
		if (len > r->buf_cap - r->len) {
			sl->local_rc = -EMSGSIZE;
			snprintf(sl->local_why, sizeof(sl->local_why),
				 "the reply is larger than the caller's %zu-byte buffer",
				 r->buf_cap);
			return 0; /* stops the transfer */
		}
		memcpy((char *) r->buf + r->len, p, len);
		r->len += len;
		return len;
	default:
		return len;
	}
}

/* ---- easy handle setup, once per request ---- */

#define SET(e, opt, val)                                                      \
	do {                                                                  \
		if ((cr = curl_easy_setopt((e), (opt), (val))) != CURLE_OK) { \
			what = #opt;                                          \
			goto fail;                                            \
		}                                                             \
	} while (0)

static int prepare_method(struct urs_s3_slot *sl, const struct urs_s3_req *r, const void **body,
			  size_t *len)
{
	CURL *e = sl->easy;
	static const char empty[1];
	*body = empty;
	*len = 0;
	switch (r->op) {
	case URS_S3_PUT:
	case URS_S3_MPU_PART:
		*body = r->body ? r->body : empty;
		*len = r->body_len;
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
		break;
	case URS_S3_MPU_COMPLETE: {
		ssize_t n = build_complete(sl, r);
		if (n < 0)
			return (int) n;
		*body = sl->scratch;
		*len = (size_t) n;
		break;
	}
	case URS_S3_MPU_CREATE:
		break; /* POST, empty body */
	case URS_S3_HEAD:
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
		return 0;
	case URS_S3_DELETE:
	case URS_S3_MPU_ABORT:
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
		return 0;
	default:
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		return 0;
	}
	/* POSTFIELDS: curl sends the caller's bytes without copying them and
	 * again on a retry; with the x-amz-content-sha256 header given, curl
	 * 7.88 signs that value as the payload hash */
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) *len);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, *body);
	return 0;
}

static int prepare(struct urs_s3_slot *sl, struct urs_s3_req *r)
{
	struct urs_s3_client *c = sl->c;
	CURL *e = sl->easy;
	CURLcode cr;
	const char *what = "";
	static const enum urs_s3_xml_kind kinds[] = {
		[URS_S3_LIST] = URS_S3_XML_LIST,
		[URS_S3_MPU_CREATE] = URS_S3_XML_INITIATE,
		[URS_S3_MPU_COMPLETE] = URS_S3_XML_COMPLETE,
	};
	sl->xml_kind = r->op < URS_ARRAY_SIZE(kinds) ? kinds[r->op] : 0;
	sl->ranged = r->op == URS_S3_GET && r->range_len;
	sl->reply.list = r->page;
	if (build_url(sl, r) < 0)
		return urs_err_set(&r->err, -ENAMETOOLONG, "S3 %s s3://%s/%s: URL longer than %d",
				   urs_s3_op_name(r->op), r->bucket, r->key ? r->key : "", URL_MAX);
	curl_easy_reset(e);
	const void *body;
	size_t len;
	int rc = prepare_method(sl, r, &body, &len);
	if (rc < 0)
		return urs_err_set(&r->err, rc, "S3 %s: out of memory", urs_s3_op_name(r->op));
	build_headers(sl, r, body, len);
	SET(e, CURLOPT_URL, sl->url);
	SET(e, CURLOPT_PRIVATE, sl);
	SET(e, CURLOPT_ERRORBUFFER, sl->errbuf);
	SET(e, CURLOPT_NOSIGNAL, 1L);
	SET(e, CURLOPT_PATH_AS_IS, 1L);
	SET(e, CURLOPT_PROTOCOLS_STR, "http,https");
	SET(e, CURLOPT_AWS_SIGV4, c->sigv4);
	SET(e, CURLOPT_USERNAME, c->conf.access_key);
	SET(e, CURLOPT_PASSWORD, c->conf.secret_key);
	SET(e, CURLOPT_HTTPHEADER, &sl->hdr[0]);
	SET(e, CURLOPT_HEADERFUNCTION, on_header);
	SET(e, CURLOPT_HEADERDATA, sl);
	SET(e, CURLOPT_WRITEFUNCTION, on_write);
	SET(e, CURLOPT_WRITEDATA, sl);
	SET(e, CURLOPT_CONNECTTIMEOUT_MS, (long) c->o.connect_timeout_ms);
	SET(e, CURLOPT_TIMEOUT_MS, (long) c->o.timeout_ms);
	SET(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	SET(e, CURLOPT_LOW_SPEED_TIME, (long) c->o.stall_s);
	if (c->verbose) /* URSA_S3_VERBOSE=1: curl's trace on stderr */
		SET(e, CURLOPT_VERBOSE, 1L);
	return 0;
fail:
	return urs_err_set(&r->err, -EINVAL, "S3 %s: curl refused %s: %s", urs_s3_op_name(r->op),
			   what, curl_easy_strerror(cr));
}

/* ---- attempts, retries, completion ---- */

static void start_queued(struct urs_s3_client *c);

static void finish(struct urs_s3_slot *sl, int res)
{
	struct urs_s3_client *c = sl->c;
	struct urs_s3_req *r = sl->req;
	sl->req = NULL;
	r->slot = NULL;
	c->st.requests++;
	start_queued(c);
	if (--c->active == 0)
		urs_loop_unref(c->loop);
	r->cb(r, res);
}

/* Set the request's message: "S3 OP s3://BUCKET/KEY: DETAIL (N attempts)". */
static int fail_msg(struct urs_s3_slot *sl, int res, const char *detail)
{
	struct urs_s3_req *r = sl->req;
	return urs_err_set(&r->err, res, "S3 %s s3://%s/%s: %s (%u attempt%s)",
			   urs_s3_op_name(r->op), r->bucket, r->key ? r->key : "", detail,
			   r->attempts, r->attempts == 1 ? "" : "s");
}

static int attempt_start(struct urs_s3_slot *sl)
{
	struct urs_s3_client *c = sl->c;
	struct urs_s3_req *r = sl->req;
	r->attempts++;
	c->st.attempts++;
	r->len = 0;
	r->coming = false;
	r->status = 0;
	r->etag[0] = 0;
	sl->mode = BODY_NONE;
	sl->local_rc = 0;
	sl->range_total = 0;
	sl->errbuf[0] = 0;
	CURLMcode m = curl_multi_add_handle(c->multi, sl->easy);
	if (m != CURLM_OK) {
		char d[120];
		snprintf(d, sizeof(d), "curl_multi_add_handle: %s", curl_multi_strerror(m));
		return fail_msg(sl, -EIO, d);
	}
	if (++c->running > c->st.peak_inflight)
		c->st.peak_inflight = c->running;
	return 0;
}

static void backoff_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct urs_s3_slot *sl = container_of(t, struct urs_s3_slot, backoff);
	struct urs_s3_client *c = sl->c;
	(void) loop;
	if (res < 0)
		return;
	enter(c);
	int r = attempt_start(sl);
	if (r < 0)
		finish(sl, r);
	leave(c);
}

static uint64_t rnd(struct urs_s3_client *c)
{
	c->rng ^= c->rng << 13; /* xorshift64: jitter only */
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return c->rng;
}

/* Retry after base * 2^(attempt-1), capped, halved-plus-random (jitter), or
 * finish with @res if the attempts are used up. */
static void retry_or_finish(struct urs_s3_slot *sl, int res, const char *detail)
{
	struct urs_s3_client *c = sl->c;
	struct urs_s3_req *r = sl->req;
	if (r->attempts > c->o.max_retries) {
		fail_msg(sl, res, detail);
		finish(sl, res);
		return;
	}
	unsigned sh = r->attempts - 1 < 20 ? r->attempts - 1 : 20;
	uint64_t ms = (uint64_t) c->o.backoff_base_ms << sh;
	if (ms > c->o.backoff_max_ms)
		ms = c->o.backoff_max_ms;
	ms = ms / 2 + rnd(c) % (ms / 2 + 1);
	c->st.retries++;
	int e = urs_timer_start(c->loop, &sl->backoff, ms * 1000000u, 0, backoff_cb);
	if (e < 0) {
		fail_msg(sl, e, detail);
		finish(sl, e);
	}
}

static int status_errno(long st)
{
	switch (st) {
	case 400:
		return -EINVAL;
	case 401:
	case 403:
		return -EACCES;
	case 404:
		return -ENOENT;
	case 405:
	case 501:
		return -EOPNOTSUPP;
	case 409:
		return -EBUSY;
	case 412:
		return -ESTALE;
	case 416:
		return -ERANGE;
	default:
		return st >= 500 ? -EIO : -EPROTO;
	}
}

/* A non-2xx reply: S3's Code and Message when the body says them. */
static void http_failed(struct urs_s3_slot *sl, long st)
{
	struct urs_err perr;
	char d[URS_S3_XML_FIELD_MAX + 200];
	bool body = sl->mode == BODY_XML && sl->xml.fed;
	if (body && urs_s3_xml_end(&sl->xml, &perr) == 0 && sl->reply.is_error)
		snprintf(d, sizeof(d), "HTTP %ld %s: %s", st, sl->reply.code, sl->reply.message);
	else if (body)
		snprintf(d, sizeof(d), "HTTP %ld (error reply not understood: %s)", st, perr.msg);
	else
		snprintf(d, sizeof(d), "HTTP %ld (no error body)", st);
	if (st >= 500 && st != 501)
		retry_or_finish(sl, status_errno(st), d);
	else {
		fail_msg(sl, status_errno(st), d);
		finish(sl, status_errno(st));
	}
}

static bool is_md5_etag(const char *e)
{
	size_t n = strlen(e);
	if (n == 34 && e[0] == '"' && e[33] == '"')
		e++, n = 32;
	if (n != 32)
		return false;
	for (size_t i = 0; i < 32; i++)
		if (!((e[i] >= '0' && e[i] <= '9') || (e[i] >= 'a' && e[i] <= 'f')))
			return false;
	return true;
}

/* A 2xx reply whose body is XML: the result, or an <Error> inside a 200
 * (CompleteMultipartUpload reports late failures that way). */
static void xml_succeeded(struct urs_s3_slot *sl)
{
	struct urs_s3_req *r = sl->req;
	struct urs_s3_reply *x = &sl->reply;
	struct urs_err perr;
	char d[URS_S3_XML_FIELD_MAX + 200];
	int e = sl->mode == BODY_XML ? urs_s3_xml_end(&sl->xml, &perr)
				     : urs_err_set(&perr, -EBADMSG, "empty reply");
	if (e < 0) {
		snprintf(d, sizeof(d), "HTTP %d reply refused: %s", r->status, perr.msg);
		fail_msg(sl, e, d);
		finish(sl, e);
		return;
	}
	if (x->is_error) {
		snprintf(d, sizeof(d), "HTTP %d with an error: %s: %s", r->status, x->code,
			 x->message);
		if (!strcmp(x->code, "InternalError") || !strcmp(x->code, "SlowDown") ||
		    !strcmp(x->code, "ServiceUnavailable"))
			retry_or_finish(sl, -EIO, d);
		else {
			fail_msg(sl, -EIO, d);
			finish(sl, -EIO);
		}
		return;
	}
	const char *v = r->op == URS_S3_MPU_CREATE ? x->upload_id : x->etag;
	char *dst = r->op == URS_S3_MPU_CREATE ? r->upload_id_out : r->etag;
	size_t cap = r->op == URS_S3_MPU_CREATE ? sizeof(r->upload_id_out) : sizeof(r->etag);
	if (r->op != URS_S3_LIST) {
		if (strlen(v) >= cap) {
			snprintf(d, sizeof(d), "%s longer than %zu bytes",
				 r->op == URS_S3_MPU_CREATE ? "UploadId" : "ETag", cap - 1);
			fail_msg(sl, -EMSGSIZE, d);
			finish(sl, -EMSGSIZE);
			return;
		}
		memcpy(dst, v, strlen(v) + 1);
	}
	finish(sl, 0);
}

/* A 2xx reply: check what it must carry. */
static void succeeded(struct urs_s3_slot *sl)
{
	struct urs_s3_client *c = sl->c;
	struct urs_s3_req *r = sl->req;
	char d[200];
	if (sl->xml_kind) {
		xml_succeeded(sl);
		return;
	}
	if (r->op == URS_S3_PUT || r->op == URS_S3_MPU_PART) {
		char want[33];
		hex(sl->md5, 16, want);
		if (!r->etag[0]) {
			fail_msg(sl, -EPROTO, "the reply has no ETag");
			finish(sl, -EPROTO);
			return;
		}
		if (c->o.check_etag_md5 && c->conf.sum == URS_S3_SUM_MD5 && is_md5_etag(r->etag) &&
		    strncmp(r->etag + (r->etag[0] == '"'), want, 32)) {
			snprintf(d, sizeof(d), "ETag %s is not the MD5 %s of the bytes sent",
				 r->etag, want);
			retry_or_finish(sl, -EIO, d);
			return;
		}
	} else if (r->op == URS_S3_GET) {
		if (sl->ranged && r->status != 206) {
			snprintf(d, sizeof(d), "HTTP %d to a ranged GET (206 expected)", r->status);
			fail_msg(sl, -EPROTO, d);
			finish(sl, -EPROTO);
			return;
		}
		r->object_size = sl->ranged ? sl->range_total : r->len;
	} else if (r->op == URS_S3_HEAD) {
		curl_off_t cl = -1;
		curl_easy_getinfo(sl->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		r->object_size = cl < 0 ? 0 : (uint64_t) cl;
	}
	finish(sl, 0);
}

/* A transfer that ended without a complete HTTP reply. */
static void transport_failed(struct urs_s3_slot *sl, CURLcode rc)
{
	int e;
	bool retry = true;
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		e = -EHOSTUNREACH;
		break;
	case CURLE_COULDNT_CONNECT:
		e = -ECONNREFUSED;
		break;
	case CURLE_OPERATION_TIMEDOUT:
		e = -ETIMEDOUT;
		break;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		e = -ECONNRESET;
		break;
	default:
		e = -EIO;
		retry = false;
	}
	char d[CURL_ERROR_SIZE + 200];
	snprintf(d, sizeof(d), "%s: %s (%s)", e == -EIO ? "transfer failed" : "connection failed",
		 curl_easy_strerror(rc), sl->errbuf[0] ? sl->errbuf : sl->url);
	if (retry)
		retry_or_finish(sl, e, d);
	else {
		fail_msg(sl, e, d);
		finish(sl, e);
	}
}

static void attempt_done(struct urs_s3_slot *sl, CURLcode rc)
{
	struct urs_s3_req *r = sl->req;
	long st = 0, nc = 0;
	curl_easy_getinfo(sl->easy, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_getinfo(sl->easy, CURLINFO_NUM_CONNECTS, &nc);
	sl->c->st.connects += (uint64_t) nc;
	r->status = (int) st;
	if (sl->local_rc) {
		fail_msg(sl, sl->local_rc, sl->local_why);
		finish(sl, sl->local_rc);
	} else if (rc != CURLE_OK) {
		transport_failed(sl, rc);
	} else if (st >= 200 && st < 300) {
		succeeded(sl);
	} else {
		http_failed(sl, st);
	}
}

/* ---- submission ---- */

static int invalid(struct urs_s3_req *r, const char *why)
{
	return urs_err_set(&r->err, -EINVAL, "S3 %s s3://%s/%s: %s", urs_s3_op_name(r->op),
			   r->bucket ? r->bucket : "?", r->key ? r->key : "", why);
}

static int validate(struct urs_s3_req *r)
{
	if (r->op < URS_S3_PUT || r->op > URS_S3_MPU_ABORT)
		return invalid(r, "unknown operation");
	if (!r->cb)
		return invalid(r, "no completion callback");
	if (!r->bucket)
		return invalid(r, "no bucket");
	int e = urs_s3_bucket_check(r->bucket, &r->err);
	if (e < 0)
		return e;
	if (r->op != URS_S3_LIST && (!r->key || !*r->key || strlen(r->key) > URS_S3_KEY_MAX))
		return invalid(r, "the key must be 1 to 1024 bytes");
	if ((r->op == URS_S3_PUT || r->op == URS_S3_MPU_PART) && r->body_len && !r->body)
		return invalid(r, "body_len without a body");
	if (r->op == URS_S3_GET && (!r->buf || !r->buf_cap))
		return invalid(r, "no buffer to read into");
	if (r->op == URS_S3_GET && !r->range_len && r->range_off)
		return invalid(r, "range_off without range_len");
	if (r->op == URS_S3_GET && r->range_len > UINT64_MAX - r->range_off)
		return invalid(r, "range past 2^64");
	if (r->op == URS_S3_LIST && (!r->page || !r->page->cap))
		return invalid(r, "no list page (urs_s3_list_page_init)");
	/* with these bounds the URL always fits (URL_MAX) */
	if (r->op == URS_S3_LIST && ((r->prefix && strlen(r->prefix) > URS_S3_KEY_MAX) ||
				     (r->token && strlen(r->token) > URS_S3_XML_FIELD_MAX)))
		return invalid(r, "prefix or continuation token longer than 1024 bytes");
	if (r->upload_id && strlen(r->upload_id) > URS_S3_XML_FIELD_MAX)
		return invalid(r, "upload id longer than 1024 bytes");
	bool mpu = r->op == URS_S3_MPU_PART || r->op == URS_S3_MPU_COMPLETE ||
		   r->op == URS_S3_MPU_ABORT;
	if (mpu && (!r->upload_id || !*r->upload_id))
		return invalid(r, "no upload id");
	if (r->op == URS_S3_MPU_PART && (r->part_number < 1 || r->part_number > 10000))
		return invalid(r, "part numbers are 1 to 10000");
	if (r->op == URS_S3_MPU_COMPLETE) {
		if (!r->parts || !r->nparts || r->nparts > 10000)
			return invalid(r, "1 to 10000 parts are needed");
		for (uint32_t i = 0; i < r->nparts; i++)
			if ((i && r->parts[i].number <= r->parts[i - 1].number) ||
			    !r->parts[i].etag[0])
				return invalid(r, "parts must ascend and carry their ETags");
	}
	return 0;
}

/* Put @r on slot @sl and start its first attempt (callbacks come later). */
static int start_on(struct urs_s3_slot *sl, struct urs_s3_req *r)
{
	sl->req = r;
	r->slot = sl;
	int e = prepare(sl, r);
	if (e == 0)
		e = attempt_start(sl);
	if (e < 0) {
		sl->req = NULL;
		r->slot = NULL;
	}
	return e;
}

static struct urs_s3_slot *free_slot(struct urs_s3_client *c)
{
	for (uint32_t i = 0; i < c->nslots; i++)
		if (!c->slots[i].req && !urs_timer_busy(&c->slots[i].backoff))
			return &c->slots[i];
	return NULL;
}

static void start_queued(struct urs_s3_client *c)
{
	struct urs_s3_slot *sl;
	while (c->q_head && (sl = free_slot(c))) {
		struct urs_s3_req *r = c->q_head;
		c->q_head = r->next;
		if (!c->q_head)
			c->q_tail = NULL;
		int e = start_on(sl, r);
		if (e < 0) { /* out of memory or curl refused: r->err says */
			c->st.requests++;
			if (--c->active == 0)
				urs_loop_unref(c->loop);
			r->cb(r, e);
		}
	}
}

int urs_s3_submit(struct urs_s3_client *c, struct urs_s3_req *r)
{
	r->err.msg[0] = 0;
	r->attempts = 0;
	r->status = 0;
	r->len = 0;
	r->coming = false;
	r->object_size = 0;
	r->etag[0] = 0;
	r->upload_id_out[0] = 0;
	r->next = NULL;
	r->slot = NULL;
	if (c->closing || c->close_pending)
		return urs_err_set(&r->err, -ESHUTDOWN, "S3 client is closing");
	int e = validate(r);
	if (e < 0)
		return e;
	/* active: submitted and not finished (queued ones too): while there
	 * are any, the client holds its loop */
	if (c->active++ == 0)
		urs_loop_ref(c->loop);
	struct urs_s3_slot *sl = free_slot(c);
	if (sl) {
		if ((e = start_on(sl, r)) < 0 && --c->active == 0)
			urs_loop_unref(c->loop);
		return e;
	}
	if (c->q_tail)
		c->q_tail->next = r;
	else
		c->q_head = r;
	c->q_tail = r;
	return 0;
}

/* ---- client ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void opts_default(struct urs_s3_opts *o)
{
	if (!o->max_inflight)
		o->max_inflight = 4;
	if (o->max_inflight > SLOTS_MAX)
		o->max_inflight = SLOTS_MAX;
	if (!o->max_retries)
		o->max_retries = 4;
	else if (o->max_retries == URS_S3_NO_RETRY)
		o->max_retries = 0;
	if (!o->backoff_base_ms)
		o->backoff_base_ms = 100;
	if (!o->backoff_max_ms)
		o->backoff_max_ms = 10000;
	if (!o->connect_timeout_ms)
		o->connect_timeout_ms = 10000;
	if (!o->stall_s)
		o->stall_s = 30;
	if (!o->max_reply)
		o->max_reply = URS_S3_XML_DOC_MAX;
}

static void slots_free(struct urs_s3_client *c)
{
	for (uint32_t i = 0; i < c->nslots; i++) {
		if (c->slots[i].easy)
			curl_easy_cleanup(c->slots[i].easy);
		urs_s3_xml_fini(&c->slots[i].xml);
		free(c->slots[i].scratch);
	}
}

static int multi_setup(struct urs_s3_client *c, struct urs_err *err)
{
	CURLM *m = c->multi;
	long n = (long) c->nslots;
	CURLMcode r;
	if ((r = curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_socket)) ||
	    (r = curl_multi_setopt(m, CURLMOPT_SOCKETDATA, c)) ||
	    (r = curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_timer)) ||
	    (r = curl_multi_setopt(m, CURLMOPT_TIMERDATA, c)) ||
	    (r = curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, n)) ||
	    (r = curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, n)))
		return urs_err_set(err, -EINVAL, "S3 client: curl_multi_setopt: %s",
				   curl_multi_strerror(r));
	return 0;
}

int urs_s3_client_new(struct urs_loop *loop, const struct urs_s3_conf *conf,
		      const struct urs_s3_opts *opts, struct urs_s3_client **out,
		      struct urs_err *err)
{
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return urs_err_set(err, -EIO, "S3 client: curl_global_init: %s",
				   curl_easy_strerror(curl_init_rc));
	struct urs_s3_client *c = calloc(1, sizeof(*c));
	if (!c)
		return urs_err_set(err, -ENOMEM, "S3 client: out of memory");
	c->loop = loop;
	c->conf = *conf;
	c->o = opts ? *opts : (struct urs_s3_opts){0};
	opts_default(&c->o);
	c->rng = urs_now_ns() ^ (uint64_t) (uintptr_t) c;
	c->rng |= 1;
	snprintf(c->sigv4, sizeof(c->sigv4), "aws:amz:%s:s3", conf->region);
	if (conf->session_token[0])
		snprintf(c->h_token, sizeof(c->h_token), "x-amz-security-token: %s",
			 conf->session_token);
	const char *v = getenv("URSA_S3_VERBOSE");
	c->verbose = v && *v && strcmp(v, "0");
	c->nslots = c->o.max_inflight;
	int e = 0;
	for (uint32_t i = 0; i < c->nslots && !e; i++) {
		c->slots[i].c = c;
		if (!(c->slots[i].easy = curl_easy_init()))
			e = -ENOMEM;
		else
			e = urs_s3_xml_init(&c->slots[i].xml, c->o.max_reply);
	}
	if (!e && !(c->multi = curl_multi_init()))
		e = -ENOMEM;
	if (e) {
		e = urs_err_set(err, e, "S3 client: out of memory");
	} else if ((e = multi_setup(c, err)) == 0) {
		*out = c;
		return 0;
	}
	if (c->multi)
		curl_multi_cleanup(c->multi);
	slots_free(c);
	free(c);
	return e;
}

static void do_close(struct urs_s3_client *c)
{
	c->closing = true;
	curl_multi_cleanup(c->multi); /* closes the connections */
	c->multi = NULL;
	slots_free(c);
	if (urs_timer_busy(&c->tmo))
		urs_timer_cancel(c->loop, &c->tmo);
	for (struct urs_s3_sock *s = c->sock_all; s; s = s->next_all)
		if (urs_op_busy(&s->op) && !s->cancelling) {
			s->cancelling = true;
			urs_cancel(c->loop, &s->op);
		}
	/* their final completions (and the timer's) free the client */
	if (c->socks_busy || urs_timer_busy(&c->tmo)) {
		urs_loop_ref(c->loop);
		c->close_ref = true;
	}
	maybe_release(c);
}

int urs_s3_client_close(struct urs_s3_client *c)
{
	if (c->active)
		return -EBUSY;
	if (c->depth) /* inside one of our callbacks: when it returns */
		c->close_pending = true;
	else
		do_close(c);
	return 0;
}
