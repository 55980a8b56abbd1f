/*
 * actors/metric_server.c — see metric_server.h.
 *
 * Client life: READ (recv into a fixed request buffer until the head is
 * complete, judge it) -> WAIT (GET /metrics: join the scrape in flight or
 * start one) -> SEND (one sendmsg of head + body, continued on short
 * writes) -> LINGER (shutdown(SHUT_WR), read and drop what the client still
 * sends until it closes, so closing with unread bytes does not turn into a
 * RST that eats our answer) -> closed. One timer per client enforces the
 * head deadline (408), the linger bound and the total deadline; every state
 * has exactly one op in flight except WAIT, which has none.
 *
 * Sandbox query: connect (SEQPACKET) -> send "metrics" -> peek the packet
 * (MSG_PEEK | MSG_TRUNC: its real length) into the query's buffer (64 KiB
 * at first) -> if it did not fit, grow the buffer to it (up to 2 MiB, the
 * supervisor's largest) and recv it, under a per-query timer that cancels
 * whichever step is in flight.
 */
#include "actors/metric_server.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "host/state.h"
#include "runtime/loop.h"
#include "runtime/metrics.h"
#include "runtime/timer.h"

/* a supervisor's exposition: the buffer starts at REPLY_MIN and grows to
 * the packet's size, at most REPLY_MAX (its CTL_REPLY_MAX) */
#define REPLY_MIN     (64u << 10)
#define REPLY_MAX     (2u << 20)
#define LINGER_NS     (1000000000ull)
#define ACCEPT_RETRY  (100000000ull) /* after EMFILE and the like */
#define CTL_SOCK_NAME "ctl.sock"

/* ---- the server's own metrics ---- */

enum {
	R_CONNECT,
	R_SEND,
	R_RECV,
	R_CLOSED,
	R_TIMEOUT,
	R_TOO_LARGE,
	R_ERROR,
	R_FORMAT,
	R_NOMEM,
	R__N
};
static const char *const reason_names[R__N] = {"connect",   "send",  "recv",   "closed", "timeout",
					       "too_large", "error", "format", "nomem"};
static const struct urs_metric_label reason_label[] = {{"reason", reason_names, R__N}};

enum { S_200, S_400, S_404, S_405, S_408, S_431, S_500, S_503, S_505, S__N };
static const char *const code_names[S__N] = {"200", "400", "404", "405", "408",
					     "431", "500", "503", "505"};
static const struct urs_metric_label code_label[] = {{"code", code_names, S__N}};

static struct urs_metric m_errors = {
	.name = "ursa_scrape_errors_total",
	.help = "Sandboxes the metric server skipped in a scrape, by reason.",
	.type = URS_METRIC_COUNTER,
	.labels = reason_label,
	.nlabels = 1,
};
static struct urs_metric m_scrapes = {
	.name = "ursa_metric_server_scrapes_total",
	.help = "Passes over the sandboxes (concurrent requests share one).",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metric m_requests = {
	.name = "ursa_metric_server_responses_total",
	.help = "HTTP responses the metric server sent, by status code.",
	.type = URS_METRIC_COUNTER,
	.labels = code_label,
	.nlabels = 1,
};
static struct urs_metric m_rejected = {
	.name = "ursa_metric_server_clients_rejected_total",
	.help = "Connections refused because max-clients were open.",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metric m_timeouts = {
	.name = "ursa_metric_server_client_timeouts_total",
	.help = "Clients closed at their total deadline.",
	.type = URS_METRIC_COUNTER,
};
static struct urs_metrics own;

/* ---- growing buffer ---- */

int urs_ms_buf_put(struct urs_ms_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

__attribute__((format(printf, 2, 3))) static int buf_printf(struct urs_ms_buf *b, const char *fmt,
							    ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	return urs_ms_buf_put(b, tmp, (size_t) n < sizeof(tmp) ? (size_t) n : sizeof(tmp) - 1);
}

/* ---- the request head ---- */

static bool tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

int urs_ms_http_judge(const char *buf, size_t len, size_t cap)
{
	/* the end of the head; a bare CR or LF, or a control byte, is malformed
	 * wherever it is (no lenient line endings: they are how requests get
	 * smuggled past proxies) */
	size_t end = 0;
	for (size_t i = 0; i < len && !end; i++) {
		unsigned char c = (unsigned char) buf[i];
		if (c == '\n') {
			if (i == 0 || buf[i - 1] != '\r')
				return 400;
			if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r')
				end = i + 1;
		} else if (c == '\r') {
			if (i + 1 < len && buf[i + 1] != '\n')
				return 400;
		} else if ((c < 0x20 && c != '\t') || c == 0x7f) {
			return 400;
		}
	}
	if (!end)
		return len >= cap ? 431 : 0;

	/* request-line = method SP request-target SP HTTP-version CRLF */
	const char *p = buf, *eol = memchr(buf, '\r', end);
	const char *m = p;
	while (p < eol && tchar((unsigned char) *p))
		p++;
	size_t mlen = (size_t) (p - m);
	if (!mlen || p >= eol || *p++ != ' ')
		return 400;
	const char *t = p;
	while (p < eol && (unsigned char) *p > 0x20 && (unsigned char) *p < 0x7f)
		p++;
	size_t tlen = (size_t) (p - t);
	if (!tlen || p >= eol || *p++ != ' ')
		return 400;
	size_t vlen = (size_t) (eol - p);
	bool v11 = vlen == 8 && !memcmp(p, "HTTP/1.1", 8);
	bool v10 = vlen == 8 && !memcmp(p, "HTTP/1.0", 8);
	if (!v11 && !v10) {
		if (vlen == 8 && !memcmp(p, "HTTP/", 5) && p[5] >= '0' && p[5] <= '9' &&
		    p[6] == '.' && p[7] >= '0' && p[7] <= '9')
			return 505;
		return 400;
	}

	/* header fields: token ":" value, no whitespace before the colon, no
	 * obs-fold; exactly one Host in HTTP/1.1, at most one in 1.0 */
	unsigned hosts = 0;
	const char *line = eol + 2;
	while (line < buf + end - 2) {
		const char *le = memchr(line, '\r', (size_t) (buf + end - line));
		const char *q = line;
		while (q < le && tchar((unsigned char) *q))
			q++;
		if (q == line || q >= le || *q != ':')
			return 400;
		if (q - line == 4 && !strncasecmp(line, "host", 4))
			hosts++;
		for (q++; q < le; q++)
			if ((unsigned char) *q < 0x20 && *q != '\t')
				return 400;
		line = le + 2;
	}
	if (hosts > 1 || (v11 && hosts != 1))
		return 400;

	if (mlen != 3 || memcmp(m, "GET", 3))
		return 405;
	/* absolute-form: http://authority/path */
	if (tlen > 7 && !strncasecmp(t, "http://", 7)) {
		const char *slash = memchr(t + 7, '/', tlen - 7);
		if (!slash)
			return 404;
		tlen -= (size_t) (slash - t);
		t = slash;
	}
	if (tlen >= 8 && !memcmp(t, "/metrics", 8) && (tlen == 8 || t[8] == '?'))
		return 200;
	return 404;
}

/* ---- merging the sandboxes' expositions ---- */

static const char *const reserved[] = {"ursa_scrape_", "ursa_metric_server_", "ursa_sandbox_up"};

struct span {
	const char *p;
	size_t n;
};

static bool span_eq(struct span a, struct span b)
{
	return a.n == b.n && !memcmp(a.p, b.p, a.n);
}

/* One family of one reply. */
struct pfam {
	struct span name, help, type, tword, body;
};

struct gfam {
	struct span name, help, type, tword;
};

struct blk {
	uint32_t fam;
	struct span body;
};

static bool name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

/* A metric name at @p (up to @e): its length, 0 if none. */
static size_t name_len(const char *p, const char *e)
{
	if (p >= e || !name_start(*p))
		return 0;
	const char *q = p + 1;
	while (q < e && name_char(*q))
		q++;
	return (size_t) (q - p);
}

static bool sample_name_ok(const struct pfam *f, struct span s)
{
	if (span_eq(s, f->name))
		return !(f->tword.n == 9 && !memcmp(f->tword.p, "histogram", 9));
	if (s.n <= f->name.n || memcmp(s.p, f->name.p, f->name.n))
		return false;
	struct span suf = {s.p + f->name.n, s.n - f->name.n};
	bool hist = f->tword.n == 9 && !memcmp(f->tword.p, "histogram", 9);
	bool summ = f->tword.n == 7 && !memcmp(f->tword.p, "summary", 7);
	if (!hist && !summ)
		return false;
	if ((suf.n == 4 && !memcmp(suf.p, "_sum", 4)) ||
	    (suf.n == 6 && !memcmp(suf.p, "_count", 6)))
		return true;
	return hist && suf.n == 7 && !memcmp(suf.p, "_bucket", 7);
}

/* The rest of a sample line after its name: {sandbox="ID"[,l="v"]*} value [ts] */
static bool sample_rest_ok(const char *p, const char *e, const char *id)
{
	size_t idl = strlen(id);
	if (e - p < (ptrdiff_t) (10 + idl + 1) || memcmp(p, "{sandbox=\"", 10) ||
	    memcmp(p + 10, id, idl) || p[10 + idl] != '"')
		return false;
	p += 10 + idl + 1;
	while (p < e && *p == ',') {
		p++;
		if (p < e && *p == '}')
			break;
		if (p >= e || !(name_start(*p) && *p != ':'))
			return false;
		while (p < e && name_char(*p) && *p != ':')
			p++;
		if (e - p < 2 || p[0] != '=' || p[1] != '"')
			return false;
		for (p += 2; p < e && *p != '"'; p++)
			if (*p == '\\' && (++p >= e || !strchr("\\\"n", *p)))
				return false;
		if (p++ >= e)
			return false;
	}
	if (p >= e || *p++ != '}' || p >= e || *p++ != ' ')
		return false;
	const char *v = p;
	while (p < e && (name_char(*p) || *p == '.' || *p == '+' || *p == '-') && *p != ':')
		p++;
	if (p == v)
		return false;
	if (p < e && *p == ' ') {
		const char *ts = ++p;
		while (p < e && ((*p >= '0' && *p <= '9') || *p == '-'))
			p++;
		if (p == ts)
			return false;
	}
	return p == e;
}

static bool type_word_ok(struct span w)
{
	static const char *const words[] = {"counter", "gauge", "histogram", "summary", "untyped"};
	for (size_t i = 0; i < URS_ARRAY_SIZE(words); i++)
		if (w.n == strlen(words[i]) && !memcmp(w.p, words[i], w.n))
			return true;
	return false;
}

/* Split one reply into families; false if any line is not what a
 * supervisor writes. *fams is malloc'd (caller frees). */
static bool split(const struct urs_ms_part *pt, struct pfam **fams, size_t *nf)
{
	*fams = NULL;
	*nf = 0;
	size_t cap = 0;
	const char *p = pt->text, *end = pt->text + pt->len;
	if (pt->len && (end[-1] != '\n' || memchr(p, 0, pt->len)))
		return false;
	struct pfam *cur = NULL;
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t) (end - p));
		bool help = e - p > 7 && !memcmp(p, "# HELP ", 7);
		bool type = e - p > 7 && !memcmp(p, "# TYPE ", 7);
		if (help || type) {
			size_t nl = name_len(p + 7, e);
			struct span name = {p + 7, nl};
			const char *after = p + 7 + nl;
			if (!nl || (after < e && *after != ' ') || (type && after >= e))
				return false;
			if (!cur || !span_eq(cur->name, name) || cur->body.p ||
			    (help ? cur->help.p : cur->type.p) != NULL) {
				for (size_t i = 0; i < *nf; i++)
					if (span_eq((*fams)[i].name, name))
						return false; /* a family twice */
				if (urs_grow_sz((void **) fams, &cap, *nf, sizeof(**fams), 16))
					return false;
				cur = &(*fams)[(*nf)++];
				*cur = (struct pfam){.name = name};
			}
			if (help) {
				cur->help = (struct span){p, (size_t) (e - p)};
			} else {
				cur->type = (struct span){p, (size_t) (e - p)};
				cur->tword = (struct span){after + 1, (size_t) (e - after - 1)};
				if (!type_word_ok(cur->tword))
					return false;
			}
		} else {
			/* a sample of the current family (which must be typed);
			 * comments and blank lines are not something a supervisor
			 * writes */
			size_t nl = name_len(p, e);
			if (!cur || !cur->type.p || !nl ||
			    !sample_name_ok(cur, (struct span){p, nl}) ||
			    !sample_rest_ok(p + nl, e, pt->id))
				return false;
			if (!cur->body.p)
				cur->body.p = p;
			cur->body.n = (size_t) (e + 1 - cur->body.p);
		}
		p = e + 1;
	}
	for (size_t i = 0; i < *nf; i++) {
		if (!(*fams)[i].type.p)
			return false;
		for (size_t r = 0; r < URS_ARRAY_SIZE(reserved); r++)
			if (!strncmp((*fams)[i].name.p, reserved[r], strlen(reserved[r])))
				return false;
	}
	return true;
}

int urs_ms_merge(struct urs_ms_part *parts, size_t n, struct urs_ms_buf *out)
{
	struct gfam *g = NULL;
	struct blk *b = NULL;
	size_t ng = 0, gcap = 0, nb = 0, bcap = 0;
	int taken = 0, r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		if (!parts[i].text)
			continue;
		_cleanup_free_ struct pfam *pf = NULL;
		size_t npf;
		bool ok = split(&parts[i], &pf, &npf);
		/* the types must agree with what other sandboxes said */
		for (size_t k = 0; ok && k < npf; k++)
			for (size_t j = 0; j < ng; j++)
				if (span_eq(g[j].name, pf[k].name) &&
				    !span_eq(g[j].tword, pf[k].tword))
					ok = false;
		if (!ok) {
			parts[i].reason = reason_names[R_FORMAT];
			continue;
		}
		for (size_t k = 0; k < npf && r == 0; k++) {
			size_t j = 0;
			while (j < ng && !span_eq(g[j].name, pf[k].name))
				j++;
			if (j == ng) {
				if (urs_grow_sz((void **) &g, &gcap, ng, sizeof(*g), 16)) {
					r = -ENOMEM;
					break;
				}
				g[ng++] = (struct gfam){pf[k].name, pf[k].help, pf[k].type,
							pf[k].tword};
			}
			if (!pf[k].body.p)
				continue;
			if (urs_grow_sz((void **) &b, &bcap, nb, sizeof(*b), 64)) {
				r = -ENOMEM;
				break;
			}
			b[nb++] = (struct blk){(uint32_t) j, pf[k].body};
		}
		taken++;
	}
	for (size_t j = 0; j < ng && r == 0; j++) {
		if (g[j].help.p)
			r = urs_ms_buf_put(out, g[j].help.p, g[j].help.n + 1);
		if (r == 0)
			r = urs_ms_buf_put(out, g[j].type.p, g[j].type.n + 1);
		for (size_t k = 0; k < nb && r == 0; k++)
			if (b[k].fam == j)
				r = urs_ms_buf_put(out, b[k].body.p, b[k].body.n);
	}
	free(g);
	free(b);
	return r < 0 ? r : taken;
}

/* ---- the server ---- */

enum cstate { C_READ, C_WAIT, C_SEND, C_LINGER, C_CLOSING };

struct result {
	uint32_t refs;
	size_t len;
	char data[];
};

struct ms;

struct conn {
	struct urs_op op;
	struct urs_timer tmr;
	struct ms *ms;
	struct conn *prev, *next; /* all open clients */
	struct conn *wnext;	  /* waiting for the scrape */
	int fd;
	uint8_t st;
	bool tmr_rearm;
	int pending; /* status to answer once the in-flight recv is back (408) */
	uint32_t used;
	uint64_t t_head, t_end, t_linger, tmr_at;
	struct result *res;
	struct msghdr mh;
	struct iovec iov[2];
	char head[256];
	char req[]; /* max_request bytes */
};

enum qstep { Q_CONNECT, Q_SEND, Q_PEEK, Q_RECV };

struct query {
	struct urs_op op;
	struct urs_timer tmr;
	struct ms *ms;
	int fd;
	long idx; /* part being asked, -1 when idle */
	uint8_t step;
	bool timed_out, finished;
	int reason; /* R_* or -1 */
	struct sockaddr_un sa;
	char *buf; /* bufsz bytes, kept across the queries of a scrape */
	size_t bufsz;
};

struct scrape {
	struct urs_ms_part *parts;
	size_t n, next, done;
	struct query *q;
	uint32_t nq;
	uint64_t t0;
};

struct ms {
	struct urs_loop loop;
	const struct urs_ms_opts *o;
	int lfd, sfd;
	int efd;	/* epoll watching lfd: what accept_op polls (see accept_arm) */
	bool rearm_now; /* accept_op cancelled at ACCEPT_BATCH: re-arm at once */
	struct urs_op accept_op, sig_op;
	struct urs_timer accept_retry;
	struct signalfd_siginfo si;
	bool stopping;
	uint32_t nconns;
	struct conn *conns, *free_conns;
	struct conn *waiters;
	struct scrape *sc;
};

static void conn_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);
static void conn_timer(struct conn *c);
static void scrape_start(struct ms *ms);

static int status_idx(int s)
{
	switch (s) {
	case 200:
		return S_200;
	case 400:
		return S_400;
	case 404:
		return S_404;
	case 405:
		return S_405;
	case 408:
		return S_408;
	case 431:
		return S_431;
	case 503:
		return S_503;
	case 505:
		return S_505;
	default:
		return S_500;
	}
}

static const char *status_text(int s)
{
	switch (s) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 431:
		return "Request Header Fields Too Large";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Internal Server Error";
	}
}

static void result_unref(struct result *r)
{
	if (r && --r->refs == 0)
		free(r);
}

static void conn_release(struct conn *c)
{
	if (urs_op_busy(&c->op) || urs_timer_busy(&c->tmr))
		return;
	struct ms *ms = c->ms;
	close(c->fd);
	result_unref(c->res);
	c->res = NULL;
	if (c->prev)
		c->prev->next = c->next;
	else
		ms->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	ms->nconns--;
	c->next = ms->free_conns;
	ms->free_conns = c;
}

static void conn_close(struct conn *c)
{
	if (c->st == C_CLOSING)
		return;
	if (c->st == C_WAIT) {
		struct conn **pp = &c->ms->waiters;
		while (*pp && *pp != c)
			pp = &(*pp)->wnext;
		if (*pp)
			*pp = c->wnext;
	}
	c->st = C_CLOSING;
	if (urs_op_busy(&c->op))
		urs_cancel(&c->ms->loop, &c->op);
	if (urs_timer_busy(&c->tmr))
		urs_timer_cancel(&c->ms->loop, &c->tmr);
	conn_release(c);
}

static void conn_recv(struct conn *c, char *into, size_t len)
{
	io_uring_prep_recv(urs_op_sqe(&c->op), c->fd, into, len, 0);
	urs_submit(&c->ms->loop, &c->op, conn_cb);
}

static void conn_send(struct conn *c)
{
	io_uring_prep_sendmsg(urs_op_sqe(&c->op), c->fd, &c->mh, MSG_NOSIGNAL);
	urs_submit(&c->ms->loop, &c->op, conn_cb);
}

static void respond(struct conn *c, int status)
{
	size_t blen = status == 200 && c->res ? c->res->len : strlen(status_text(status)) + 1;
	int n = snprintf(c->head, sizeof(c->head),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; %scharset=utf-8\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n%s\r\n",
			 status, status_text(status), status == 200 ? "version=0.0.4; " : "", blen,
			 status == 405 ? "Allow: GET\r\n" : "");
	if (status == 200 && c->res) {
		c->iov[1] = (struct iovec){c->res->data, blen};
	} else { /* the reason phrase and a newline, after the head */
		n += snprintf(c->head + n, sizeof(c->head) - (size_t) n, "%s\n",
			      status_text(status));
		c->iov[1] = (struct iovec){NULL, 0};
	}
	urs_metric_add(&m_requests, (uint32_t) status_idx(status), 1);
	c->iov[0] = (struct iovec){c->head, (size_t) n};
	c->mh = (struct msghdr){.msg_iov = c->iov, .msg_iovlen = 2};
	c->st = C_SEND;
	conn_send(c);
	conn_timer(c);
}

/* Arm the client's timer for the deadline its state cares about: the head
 * deadline while reading, the linger bound while lingering, else the total
 * deadline. A later armed deadline is cancelled and re-armed from its final
 * callback (a timer cannot move while armed). */
static void conn_timer(struct conn *c)
{
	if (c->st == C_CLOSING)
		return;
	uint64_t want = c->st == C_READ ? c->t_head : c->st == C_LINGER ? c->t_linger : c->t_end;
	if (!urs_timer_busy(&c->tmr)) {
		uint64_t now = urs_now_ns();
		c->tmr_at = want;
		if (urs_timer_start(&c->ms->loop, &c->tmr, want > now ? want - now : 0, 0,
				    c->tmr.cb) < 0)
			conn_close(c); /* no room in the heap: do not keep an unbounded client */
		return;
	}
	if (c->tmr.state == URS_TIMER_ARMED && c->tmr_at > want) {
		c->tmr_rearm = true;
		urs_timer_cancel(&c->ms->loop, &c->tmr);
	}
}

static void conn_tmr_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct conn *c = container_of(t, struct conn, tmr);
	if (res == -ECANCELED) {
		if (c->st == C_CLOSING) {
			conn_release(c);
		} else if (c->tmr_rearm) {
			c->tmr_rearm = false;
			conn_timer(c);
		}
		return;
	}
	if (c->st == C_CLOSING)
		return;
	uint64_t now = urs_now_ns();
	if (now >= c->t_end) {
		urs_metric_add(&m_timeouts, 0, 1);
		conn_close(c);
		return;
	}
	if (c->st == C_READ && now >= c->t_head) {
		/* too slow with its head: answer 408 once the recv is back */
		c->pending = 408;
		if (urs_cancel(loop, &c->op) == -ENOENT)
			respond(c, 408);
		return;
	}
	if (c->st == C_LINGER && now >= c->t_linger) {
		conn_close(c);
		return;
	}
	conn_timer(c);
}

static void conn_wait(struct conn *c)
{
	struct ms *ms = c->ms;
	c->st = C_WAIT;
	c->wnext = ms->waiters;
	ms->waiters = c;
	conn_timer(c);
	if (!ms->sc)
		scrape_start(ms); /* may answer at once (no sandboxes) */
}

static void conn_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct conn *c = container_of(op, struct conn, op);
	struct ms *ms = c->ms;
	switch (c->st) {
	case C_READ: {
		if (c->pending) {
			respond(c, c->pending);
			return;
		}
		if (res <= 0) {
			conn_close(c);
			return;
		}
		c->used += (uint32_t) res;
		int s = urs_ms_http_judge(c->req, c->used, ms->o->max_request);
		if (!s)
			conn_recv(c, c->req + c->used, ms->o->max_request - c->used);
		else if (s == 200)
			conn_wait(c);
		else
			respond(c, s);
		return;
	}
	case C_SEND: {
		if (res < 0) {
			conn_close(c);
			return;
		}
		size_t n = (size_t) res;
		while (c->mh.msg_iovlen && n >= c->mh.msg_iov[0].iov_len) {
			n -= c->mh.msg_iov[0].iov_len;
			c->mh.msg_iov++;
			c->mh.msg_iovlen--;
		}
		if (c->mh.msg_iovlen && c->mh.msg_iov[0].iov_len) {
			c->mh.msg_iov[0].iov_base = (char *) c->mh.msg_iov[0].iov_base + n;
			c->mh.msg_iov[0].iov_len -= n;
			conn_send(c);
			return;
		}
		/* all sent: stop writing, drain what the client still sends until
		 * it closes (bounded), so our close does not reset the answer */
		shutdown(c->fd, SHUT_WR);
		c->st = C_LINGER;
		uint64_t now = urs_now_ns();
		c->t_linger = now + LINGER_NS < c->t_end ? now + LINGER_NS : c->t_end;
		conn_recv(c, c->req, ms->o->max_request);
		conn_timer(c);
		return;
	}
	case C_LINGER:
		if (res > 0)
			conn_recv(c, c->req, ms->o->max_request);
		else
			conn_close(c);
		return;
	case C_CLOSING:
		conn_release(c);
		return;
	default:
		return;
	}
}

static void conn_open(struct ms *ms, int fd)
{
	struct conn *c = ms->free_conns;
	if (c)
		ms->free_conns = c->next;
	else
		c = malloc(sizeof(*c) + ms->o->max_request);
	if (!c) {
		close(fd);
		return;
	}
	memset(c, 0, sizeof(*c));
	c->ms = ms;
	c->fd = fd;
	c->st = C_READ;
	c->tmr.cb = conn_tmr_cb;
	uint64_t now = urs_now_ns();
	c->t_end = now + ms->o->client_timeout_ns;
	c->t_head = now + ms->o->header_timeout_ns;
	if (c->t_head > c->t_end)
		c->t_head = c->t_end;
	c->next = ms->conns;
	if (ms->conns)
		ms->conns->prev = c;
	ms->conns = c;
	ms->nconns++;
	conn_recv(c, c->req, ms->o->max_request);
	conn_timer(c);
}

/* ---- accepting ---- */

static void accept_arm(struct ms *ms);

static void accept_retry_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	struct ms *ms = container_of(t, struct ms, accept_retry);
	if (res == 0 && !ms->stopping)
		accept_arm(ms);
}

/* The listener polled readable (through ms->efd): accept the clients
 * waiting, at most ACCEPT_BATCH per completion so that a connection flood
 * cannot hold the loop; the poll is then cancelled and re-armed at once
 * (a ready listener completes it again right away). */
#define ACCEPT_BATCH 64
static void accept_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	struct ms *ms = container_of(op, struct ms, accept_op);
	for (int k = 0; res >= 0 && !ms->stopping; k++) {
		if (k == ACCEPT_BATCH) {
			if (flags & IORING_CQE_F_MORE) {
				ms->rearm_now = true;
				urs_cancel(loop, op);
			}
			break;
		}
		int fd = accept4(ms->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && (flags & IORING_CQE_F_MORE))
				urs_cancel(loop, op); /* EMFILE and friends: retried later */
			break;
		}
		if (ms->nconns >= ms->o->max_clients) {
			/* shed load without holding anything: one non-blocking
			 * send of a fixed answer, then close */
			static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
						   "Content-Length: 0\r\nRetry-After: 1\r\n"
						   "Connection: close\r\n\r\n";
			send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
			close(fd);
			urs_metric_add(&m_rejected, 0, 1);
			urs_metric_add(&m_requests, S_503, 1);
		} else {
			conn_open(ms, fd);
		}
	}
	if (!(flags & IORING_CQE_F_MORE) && !ms->stopping) {
		bool now = ms->rearm_now && res == -ECANCELED;
		ms->rearm_now = false;
		if (res < 0 && !now) /* EMFILE and friends: do not spin */
			urs_timer_start(loop, &ms->accept_retry, ACCEPT_RETRY, 0, accept_retry_cb);
		else
			accept_arm(ms);
	}
}

/* The listener is polled through an epoll fd, never by an io_uring accept:
 * an io_uring request holds a reference to the file it works on, and after
 * a SIGKILL the ring's deferred teardown kept the port bound ~10 ms, so a
 * server restarted at once failed with EADDRINUSE (net/internal.h has the
 * same rule for port forwards). */
static void accept_arm(struct ms *ms)
{
	io_uring_prep_poll_multishot(urs_op_sqe(&ms->accept_op), ms->efd, POLLIN);
	urs_submit(&ms->loop, &ms->accept_op, accept_cb);
}

/* ---- querying the sandboxes ---- */

static void query_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);
static void scrape_finish(struct ms *ms);

static void query_tmr_cb(struct urs_loop *loop, struct urs_timer *t, int res);

/* Start the next sandbox in slot @q; sandboxes that fail before any I/O are
 * settled here, in a loop (no recursion). */
static void query_next(struct ms *ms, struct query *q)
{
	struct scrape *sc = ms->sc;
	q->idx = -1;
	if (ms->stopping) {
		sc->done += sc->n - sc->next;
		sc->next = sc->n;
		return;
	}
	while (sc->next < sc->n) {
		size_t i = sc->next++;
		struct urs_ms_part *pt = &sc->parts[i];
		q->sa = (struct sockaddr_un){.sun_family = AF_UNIX};
		int fd = -1;
		if (snprintf(q->sa.sun_path, sizeof(q->sa.sun_path), "%s/%s/%s", ms->o->root,
			     pt->id, CTL_SOCK_NAME) < (int) sizeof(q->sa.sun_path))
			fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			pt->reason = reason_names[R_CONNECT];
			sc->done++;
			continue;
		}
		q->fd = fd;
		q->idx = (long) i;
		q->step = Q_CONNECT;
		q->timed_out = q->finished = false;
		q->reason = -1;
		io_uring_prep_connect(urs_op_sqe(&q->op), fd, (struct sockaddr *) &q->sa,
				      sizeof(q->sa));
		urs_submit(&ms->loop, &q->op, query_cb);
		if (urs_timer_start(&ms->loop, &q->tmr, ms->o->scrape_timeout_ns, 0, query_tmr_cb) <
		    0) {
			q->timed_out = true; /* no timer, no unbounded wait: give up now */
			urs_cancel(&ms->loop, &q->op);
		}
		return;
	}
}

/* Both the op and the timer of @q are done: record, move on. */
static void query_settle(struct ms *ms, struct query *q)
{
	if (!q->finished || urs_op_busy(&q->op) || urs_timer_busy(&q->tmr))
		return;
	q->finished = false;
	struct scrape *sc = ms->sc;
	if (q->reason >= 0)
		sc->parts[q->idx].reason = reason_names[q->reason];
	sc->done++;
	query_next(ms, q);
	if (sc->done == sc->n)
		scrape_finish(ms);
}

static void query_end(struct ms *ms, struct query *q, int reason)
{
	q->reason = reason;
	q->finished = true;
	close(q->fd);
	q->fd = -1;
	if (urs_timer_busy(&q->tmr))
		urs_timer_cancel(&ms->loop, &q->tmr);
	query_settle(ms, q);
}

static void query_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) flags;
	struct query *q = container_of(op, struct query, op);
	struct ms *ms = container_of(loop, struct ms, loop);
	struct urs_ms_part *pt = &ms->sc->parts[q->idx];
	if (q->timed_out || ms->stopping || res == -ECANCELED) {
		query_end(ms, q, R_TIMEOUT);
		return;
	}
	switch (q->step) {
	case Q_CONNECT:
		if (res < 0) {
			query_end(ms, q, R_CONNECT);
			return;
		}
		q->step = Q_SEND;
		io_uring_prep_send(urs_op_sqe(&q->op), q->fd, "metrics", sizeof("metrics"),
				   MSG_NOSIGNAL);
		urs_submit(loop, &q->op, query_cb);
		return;
	case Q_SEND:
		if (res < 0) {
			query_end(ms, q, R_SEND);
			return;
		}
		if (!q->buf) {
			if (!(q->buf = malloc(REPLY_MIN))) {
				query_end(ms, q, R_NOMEM);
				return;
			}
			q->bufsz = REPLY_MIN;
		}
		/* MSG_PEEK | MSG_TRUNC: the packet's real length; if it does not
		 * fit, the buffer grows and it is read again (Q_RECV) */
		q->step = Q_PEEK;
		io_uring_prep_recv(urs_op_sqe(&q->op), q->fd, q->buf, q->bufsz,
				   MSG_PEEK | MSG_TRUNC);
		urs_submit(loop, &q->op, query_cb);
		return;
	case Q_PEEK:
		if (res > 0 && (size_t) res > q->bufsz && (size_t) res <= REPLY_MAX) {
			char *b = realloc(q->buf, (size_t) res);
			if (!b) {
				query_end(ms, q, R_NOMEM);
				return;
			}
			q->buf = b;
			q->bufsz = (size_t) res;
			q->step = Q_RECV;
			io_uring_prep_recv(urs_op_sqe(&q->op), q->fd, q->buf, q->bufsz, MSG_TRUNC);
			urs_submit(loop, &q->op, query_cb);
			return;
		}
		break; /* it fit (the connection is closed next: peeking is enough) */
	default:
		break;
	}
	if (res < 0) {
		query_end(ms, q, R_RECV);
		return;
	}
	if (res == 0) { /* the supervisor went away mid-scrape */
		query_end(ms, q, R_CLOSED);
		return;
	}
	if ((size_t) res > q->bufsz) {
		query_end(ms, q, R_TOO_LARGE);
		return;
	}
	size_t n = (size_t) res;
	if (q->buf[n - 1] == 0) /* replies are NUL-terminated strings */
		n--;
	if (n >= 6 && !memcmp(q->buf, "error:", 6)) {
		query_end(ms, q, R_ERROR);
		return;
	}
	char *text = malloc(n ? n : 1);
	if (!text) {
		query_end(ms, q, R_NOMEM);
		return;
	}
	memcpy(text, q->buf, n);
	pt->text = text;
	pt->len = n;
	query_end(ms, q, -1);
}

static void query_tmr_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct query *q = container_of(t, struct query, tmr);
	struct ms *ms = container_of(loop, struct ms, loop);
	if (res == 0) {
		q->timed_out = true;
		urs_cancel(loop, &q->op); /* its callback settles the query */
		return;
	}
	query_settle(ms, q);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void scrape_free(struct scrape *sc)
{
	if (!sc)
		return;
	for (size_t i = 0; i < sc->n; i++) {
		free((char *) sc->parts[i].id);
		free((char *) sc->parts[i].text);
	}
	for (uint32_t i = 0; i < sc->nq; i++)
		free(sc->q[i].buf);
	free(sc->parts);
	free(sc->q);
	free(sc);
}

/* The directories under ROOT whose names are valid ids, sorted. */
static int list_sandboxes(const char *root, char ***ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	DIR *d = opendir(root);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	size_t cap = 0;
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d))) {
		if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
			continue;
		if (e->d_name[0] == '.' || urs_id_valid(e->d_name, NULL) < 0)
			continue;
		if (urs_grow_sz((void **) ids, &cap, *n, sizeof(**ids), 32)) {
			r = -ENOMEM;
			break;
		}
		if (!((*ids)[*n] = strdup(e->d_name))) {
			r = -ENOMEM;
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(*ids, *n, sizeof(**ids), cmp_str);
	return r;
}

static void answer_waiters(struct ms *ms, struct result *res, int status)
{
	struct conn *w = ms->waiters;
	ms->waiters = NULL;
	while (w) {
		struct conn *next = w->wnext;
		if (res) {
			w->res = res;
			res->refs++;
		}
		respond(w, status);
		w = next;
	}
}

static void scrape_start(struct ms *ms)
{
	struct scrape *sc = calloc(1, sizeof(*sc));
	char **ids = NULL;
	size_t n = 0;
	if (!sc || list_sandboxes(ms->o->root, &ids, &n) < 0 ||
	    (n && !(sc->parts = calloc(n, sizeof(*sc->parts))))) {
		for (size_t i = 0; i < n; i++)
			free(ids[i]);
		free(ids);
		free(sc);
		answer_waiters(ms, NULL, 500);
		return;
	}
	for (size_t i = 0; i < n; i++)
		sc->parts[i].id = ids[i];
	free(ids);
	sc->n = n;
	sc->t0 = urs_now_ns();
	sc->nq = n < ms->o->max_parallel ? (uint32_t) n : ms->o->max_parallel;
	if (sc->nq && !(sc->q = calloc(sc->nq, sizeof(*sc->q)))) {
		scrape_free(sc);
		answer_waiters(ms, NULL, 500);
		return;
	}
	ms->sc = sc;
	urs_metric_add(&m_scrapes, 0, 1);
	for (uint32_t i = 0; i < sc->nq; i++) {
		sc->q[i].ms = ms;
		sc->q[i].fd = -1;
		query_next(ms, &sc->q[i]);
	}
	if (sc->done == sc->n)
		scrape_finish(ms);
}

/* The exposition of a finished scrape: the sandboxes' families merged, then
 * what this server knows (per-sandbox up, its own counters), then a comment
 * per skipped sandbox. */
static int render(struct scrape *sc, struct urs_ms_buf *b)
{
	int r = urs_ms_merge(sc->parts, sc->n, b);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sc->n; i++) {
		const char *why = sc->parts[i].reason;
		for (uint32_t k = 0; why && k < R__N; k++)
			if (why == reason_names[k])
				urs_metric_add(&m_errors, k, 1);
	}
	r = buf_printf(b, "# HELP ursa_sandbox_up Whether the sandbox's supervisor answered "
			  "this scrape.\n# TYPE ursa_sandbox_up gauge\n");
	for (size_t i = 0; i < sc->n && r == 0; i++)
		r = buf_printf(b, "ursa_sandbox_up{sandbox=\"%s\"} %d\n", sc->parts[i].id,
			       sc->parts[i].reason || !sc->parts[i].text ? 0 : 1);
	if (r == 0)
		r = buf_printf(
			b,
			"# HELP ursa_scrape_sandboxes Sandboxes found under the state root.\n"
			"# TYPE ursa_scrape_sandboxes gauge\nursa_scrape_sandboxes %zu\n"
			"# HELP ursa_scrape_duration_seconds How long this scrape took.\n"
			"# TYPE ursa_scrape_duration_seconds gauge\n"
			"ursa_scrape_duration_seconds %.6f\n",
			sc->n, (double) (urs_now_ns() - sc->t0) / 1e9);
	char tmp[8192];
	int n = r == 0 ? urs_metrics_expose(&own, NULL, tmp, sizeof(tmp)) : r;
	if (n < 0)
		return n;
	r = urs_ms_buf_put(b, tmp, (size_t) n);
	for (size_t i = 0; i < sc->n && r == 0; i++)
		if (sc->parts[i].reason)
			r = buf_printf(b, "# ursa metric-server: sandbox %s skipped (%s)\n",
				       sc->parts[i].id, sc->parts[i].reason);
	return r;
}

static void scrape_finish(struct ms *ms)
{
	struct scrape *sc = ms->sc;
	ms->sc = NULL;
	struct urs_ms_buf b = {0};
	struct result *res = NULL;
	if (!ms->stopping && render(sc, &b) == 0 && (res = malloc(sizeof(*res) + b.len + 1))) {
		res->refs = 0;
		res->len = b.len;
		memcpy(res->data, b.p, b.len);
	}
	free(b.p);
	scrape_free(sc);
	if (!ms->stopping)
		answer_waiters(ms, res, res ? 200 : 500);
	if (res && !res->refs)
		free(res);
}

/* ---- shutdown ---- */

static void shutdown_all(struct ms *ms)
{
	if (ms->stopping)
		return;
	ms->stopping = true;
	urs_cancel(&ms->loop, &ms->accept_op);
	if (urs_timer_busy(&ms->accept_retry))
		urs_timer_cancel(&ms->loop, &ms->accept_retry);
	for (struct conn *c = ms->conns, *next; c; c = next) {
		next = c->next;
		conn_close(c);
	}
	if (ms->sc)
		for (uint32_t i = 0; i < ms->sc->nq; i++)
			if (ms->sc->q[i].idx >= 0 && urs_op_busy(&ms->sc->q[i].op))
				urs_cancel(&ms->loop, &ms->sc->q[i].op);
}

static void sig_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) flags;
	struct ms *ms = container_of(op, struct ms, sig_op);
	if (res == (int32_t) sizeof(ms->si)) {
		shutdown_all(ms);
		return;
	}
	if (res != -ECANCELED && !ms->stopping) {
		io_uring_prep_read(urs_op_sqe(&ms->sig_op), ms->sfd, &ms->si, sizeof(ms->si), 0);
		urs_submit(loop, &ms->sig_op, sig_cb);
	}
}

/* ---- listening ---- */

static int ms_listen(const char *spec, char *shown, size_t slen, char *upath, size_t ulen)
{
	upath[0] = 0;
	if (!strncmp(spec, "unix:", 5)) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		const char *path = spec + 5;
		if (!*path || strlen(path) >= sizeof(sa.sun_path) || strlen(path) >= ulen)
			return -ENAMETOOLONG;
		strcpy(sa.sun_path, path);
		struct stat st;
		if (lstat(path, &st) == 0) {
			if (!S_ISSOCK(st.st_mode))
				return -EEXIST; /* never unlink something that is not ours */
			unlink(path);
		}
		_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
			return -errno;
		strcpy(upath, path);
		snprintf(shown, slen, "unix:%s", path);
		return steal_fd(&fd);
	}
	char host[256];
	const char *port;
	if (spec[0] == '[') {
		const char *rb = strchr(spec, ']');
		if (!rb || rb[1] != ':' || (size_t) (rb - spec - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, spec + 1, (size_t) (rb - spec - 1));
		host[rb - spec - 1] = 0;
		port = rb + 2;
	} else {
		const char *colon = strrchr(spec, ':');
		if (!colon || (size_t) (colon - spec) >= sizeof(host))
			return -EINVAL;
		memcpy(host, spec, (size_t) (colon - spec));
		host[colon - spec] = 0;
		port = colon + 1;
	}
	if (!*port)
		return -EINVAL;
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
			*ai = NULL;
	int g = getaddrinfo(*host ? host : NULL, port, &hints, &ai);
	if (g)
		return g == EAI_SYSTEM ? -errno : -EINVAL;
	_cleanup_close_ int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
	int one = 1, r = 0;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0)
		r = -errno;
	freeaddrinfo(ai);
	if (r < 0)
		return r;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[NI_MAXHOST], s[NI_MAXSERV];
	if (getsockname(fd, (struct sockaddr *) &ss, &sl) < 0 ||
	    getnameinfo((struct sockaddr *) &ss, sl, h, sizeof(h), s, sizeof(s),
			NI_NUMERICHOST | NI_NUMERICSERV))
		return -EINVAL;
	snprintf(shown, slen, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, s);
	return steal_fd(&fd);
}

int urs_metric_server_run(const struct urs_ms_opts *opts, struct urs_err *err)
{
	struct urs_ms_opts o = *opts;
	if (!o.max_request)
		o.max_request = 8192;
	if (o.max_request < 64)
		o.max_request = 64;
	if (!o.max_clients)
		o.max_clients = 64;
	if (!o.max_parallel)
		o.max_parallel = 32;
	if (!o.header_timeout_ns)
		o.header_timeout_ns = 5000000000ull;
	if (!o.client_timeout_ns)
		o.client_timeout_ns = 30000000000ull;
	if (!o.scrape_timeout_ns)
		o.scrape_timeout_ns = 2000000000ull;

	struct urs_metric *mine[] = {&m_errors, &m_scrapes, &m_requests, &m_rejected, &m_timeouts};
	if (!own.count)
		for (size_t i = 0; i < URS_ARRAY_SIZE(mine); i++) {
			int r = urs_metric_register(&own, mine[i]);
			if (r < 0)
				return urs_err_set(err, r, "metric-server: metrics: %s",
						   strerror(-r));
		}

	struct ms *ms = calloc(1, sizeof(*ms));
	if (!ms)
		return urs_err_set(err, -ENOMEM, "metric-server: out of memory");
	ms->o = &o;
	ms->sfd = ms->efd = -1;
	char shown[300], upath[sizeof(((struct sockaddr_un *) 0)->sun_path)];
	ms->lfd = ms_listen(o.listen, shown, sizeof(shown), upath, sizeof(upath));
	if (ms->lfd < 0) {
		int r = ms->lfd;
		free(ms);
		return urs_err_set(err, r, "metric-server: listen on %s: %s", o.listen,
				   strerror(-r));
	}
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, &old);
	ms->sfd = signalfd(-1, &set, SFD_CLOEXEC);
	int fl = fcntl(ms->lfd, F_GETFL);
	ms->efd = epoll_create1(EPOLL_CLOEXEC);
	int r = ms->sfd < 0 || ms->efd < 0 || fl < 0 ||
				fcntl(ms->lfd, F_SETFL, fl | O_NONBLOCK) < 0 ||
				epoll_ctl(ms->efd, EPOLL_CTL_ADD, ms->lfd,
					  &(struct epoll_event){.events = EPOLLIN}) < 0
			? -errno
			: urs_loop_init(&ms->loop, NULL);
	if (r < 0) {
		if (ms->sfd >= 0)
			close(ms->sfd);
		if (ms->efd >= 0)
			close(ms->efd);
		close(ms->lfd);
		if (upath[0])
			unlink(upath);
		sigprocmask(SIG_SETMASK, &old, NULL);
		free(ms);
		return urs_err_set(err, r, "metric-server: %s", strerror(-r));
	}
	ms->sig_op.flags = URS_OPF_WEAK; /* the listener keeps the loop alive */
	io_uring_prep_read(urs_op_sqe(&ms->sig_op), ms->sfd, &ms->si, sizeof(ms->si), 0);
	urs_submit(&ms->loop, &ms->sig_op, sig_cb);
	accept_arm(ms);
	printf("listening on %s\n", shown);
	fflush(stdout);

	r = urs_loop_run(&ms->loop);

	/* every client and query has had its final callback (the loop ran
	 * until nothing was left), so their memory is ours again */
	urs_loop_fini(&ms->loop);
	close(ms->sfd);
	close(ms->efd);
	close(ms->lfd);
	if (upath[0])
		unlink(upath);
	for (struct conn *c = ms->free_conns, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	scrape_free(ms->sc);
	free(ms);
	sigprocmask(SIG_SETMASK, &old, NULL);
	urs_metrics_free(&own);
	return r < 0 ? urs_err_set(err, r, "metric-server: loop: %s", strerror(-r)) : 0;
}
