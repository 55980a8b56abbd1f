/*
 * shim/ttrpc_server.c — the ttrpc server on the loop (shim/ttrpc_server.h).
 *
 * One multishot accept on the listening socket; per connection one recv in
 * flight into a buffer that holds at least one whole frame, and at most one
 * send in flight. Replies made while a send is in flight go into the other
 * send buffer and leave when it completes, in the order they were made. A
 * connection goes when the peer closes it (or sends what is not ttrpc) and
 * nothing of it is in flight; calls kept by handlers outlive it as records
 * that answer nobody (ttrpc_call_live() says so).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/common.h"
#include "runtime/timer.h"
#include "shim/proto/ttrpc.pb-c.h"
#include "shim/ttrpc_server.h"

#define RX_FIRST 4096u

struct obuf {
	uint8_t *b;
	size_t len, cap;
};

struct ttrpc_conn {
	struct ttrpc_server *srv;
	struct ttrpc_conn *prev, *next;
	int fd;
	struct urs_op rx_op, tx_op;
	uint8_t *rx;
	size_t rx_cap, rx_have;
	struct obuf out[2]; /* out[fill] fills while out[!fill] is sent */
	int fill;
	size_t tx_off; /* bytes of out[!fill] sent so far */
	uint32_t refs; /* kept calls + a handler running */
	bool eof;      /* no more reads: closed, failed or the server closing */
};

struct ttrpc_call {
	struct ttrpc_conn *conn; /* NULL once answered (the record is free) */
	const struct ttrpc_method *m;
	uint32_t sid;
	struct ttrpc_call *next_free;
};

struct ttrpc_server {
	struct urs_loop *loop;
	int fd;
	struct urs_op accept_op;
	struct urs_timer retry; /* accept again after an error of resources */
	const struct ttrpc_method *methods;
	void *arg;
	struct ttrpc_arena arena;
	struct ttrpc_conn *conns;
	unsigned nconns;
	struct ttrpc_call *free_calls;
	void (*handled)(void *arg);
	void *handled_arg;
	bool closing;
};

static void conn_recv(struct ttrpc_conn *c);
static void conn_send(struct ttrpc_conn *c);
static void accept_arm(struct ttrpc_server *s);
static void retry_cb(struct urs_loop *loop, struct urs_timer *t, int res);

#define ACCEPT_RETRY_NS (100 * 1000 * 1000ull)

/* a closed server goes with its last connection (kept calls hold theirs) */
static void server_maybe_free(struct ttrpc_server *s)
{
	if (!s->closing || s->nconns || urs_op_busy(&s->accept_op) ||
	    s->retry.state != URS_TIMER_IDLE)
		return;
	ttrpc_arena_fini(&s->arena);
	while (s->free_calls) {
		struct ttrpc_call *k = s->free_calls;
		s->free_calls = k->next_free;
		free(k);
	}
	free(s);
}

static void conn_maybe_free(struct ttrpc_conn *c)
{
	if (!c->eof || c->refs || urs_op_busy(&c->rx_op) || urs_op_busy(&c->tx_op))
		return;
	struct ttrpc_server *s = c->srv;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	close(c->fd);
	free(c->rx);
	free(c->out[0].b);
	free(c->out[1].b);
	free(c);
	server_maybe_free(s);
}

static void conn_eof(struct ttrpc_conn *c)
{
	c->eof = true;
	if (urs_op_busy(&c->rx_op))
		urs_cancel(c->srv->loop, &c->rx_op);
}

/* -- calls --------------------------------------------------------------- */

static struct ttrpc_call *call_get(struct ttrpc_conn *c, uint32_t sid)
{
	struct ttrpc_server *s = c->srv;
	struct ttrpc_call *k = s->free_calls;
	if (k)
		s->free_calls = k->next_free;
	else if (!(k = malloc(sizeof(*k))))
		return NULL;
	k->conn = c;
	k->m = NULL;
	k->sid = sid;
	c->refs++;
	return k;
}

static void call_put(struct ttrpc_call *k)
{
	struct ttrpc_conn *c = k->conn;
	struct ttrpc_server *s = c->srv;
	k->conn = NULL;
	k->next_free = s->free_calls;
	s->free_calls = k;
	c->refs--;
	conn_maybe_free(c);
}

const char *ttrpc_call_method(const struct ttrpc_call *call)
{
	return call->m ? call->m->name : "";
}

bool ttrpc_call_live(const struct ttrpc_call *call)
{
	return call->conn && !call->conn->eof;
}

static int obuf_room(struct obuf *o, size_t n)
{
	if (o->cap - o->len >= n)
		return 0;
	size_t cap = o->cap ? o->cap : 1024;
	while (cap - o->len < n)
		cap *= 2;
	uint8_t *b = realloc(o->b, cap);
	if (!b)
		return -ENOMEM;
	o->b = b;
	o->cap = cap;
	return 0;
}

static void answer(struct ttrpc_call *k, const ProtobufCMessage *reply, int code, const char *msg)
{
	struct ttrpc_conn *c = k->conn;
	if (!c->eof) {
		struct obuf *o = &c->out[c->fill];
		size_t n = ttrpc_response_size(reply, code, msg);
		long w = -ENOMEM;
		if (obuf_room(o, n) == 0)
			w = ttrpc_response_put(o->b + o->len, k->sid, reply, code, msg);
		if (w == -EMSGSIZE && obuf_room(o, TTRPC_HDR_LEN + 64) == 0)
			w = ttrpc_response_put(o->b + o->len, k->sid, NULL,
					       TTRPC_RESOURCE_EXHAUSTED, "reply too large");
		if (w < 0)
			conn_eof(c); /* out of memory: the client sees the close */
		else
			o->len += (size_t) w;
		conn_send(c);
	}
	if (c->srv->handled) /* an answer that came later (a command's end) */
		c->srv->handled(c->srv->handled_arg);
	call_put(k);
}

void ttrpc_reply(struct ttrpc_call *call, const ProtobufCMessage *reply)
{
	answer(call, reply, TTRPC_OK, NULL);
}

void ttrpc_fail(struct ttrpc_call *call, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	answer(call, NULL, code, msg);
}

/* -- sending ------------------------------------------------------------- */

static void tx_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct ttrpc_conn *c = container_of(op, struct ttrpc_conn, tx_op);
	struct obuf *o = &c->out[!c->fill];
	if (res <= 0) {
		o->len = c->tx_off = 0;
		c->out[c->fill].len = 0;
		conn_eof(c);
		conn_maybe_free(c);
		return;
	}
	c->tx_off += (size_t) res;
	if (c->tx_off == o->len) {
		o->len = c->tx_off = 0;
		c->fill = !c->fill; /* what filled meanwhile goes next */
	}
	conn_send(c);
	if (c->srv->closing && !urs_op_busy(&c->tx_op))
		conn_eof(c); /* its last reply is out */
	conn_maybe_free(c);
}

static void conn_send(struct ttrpc_conn *c)
{
	if (urs_op_busy(&c->tx_op))
		return;
	struct obuf *o = &c->out[!c->fill];
	if (o->len == c->tx_off) {
		if (!c->out[c->fill].len)
			return;
		o->len = c->tx_off = 0;
		c->fill = !c->fill;
		o = &c->out[!c->fill];
	}
	io_uring_prep_send(urs_op_sqe(&c->tx_op), c->fd, o->b + c->tx_off, o->len - c->tx_off,
			   MSG_NOSIGNAL);
	urs_submit(c->srv->loop, &c->tx_op, tx_cb);
}

/* -- receiving ----------------------------------------------------------- */

static void handle(struct ttrpc_conn *c, uint32_t sid, const uint8_t *p, size_t n)
{
	struct ttrpc_server *s = c->srv;
	struct ttrpc_call *k = call_get(c, sid);
	if (!k) {
		conn_eof(c);
		return;
	}
	Ttrpc__Request *r = ttrpc_request_decode(p, n, &s->arena);
	const struct ttrpc_method *m = s->methods;
	while (r && m->name && (strcmp(m->service, r->service) || strcmp(m->name, r->method)))
		m++;
	ProtobufCMessage *in = NULL;
	if (!r)
		ttrpc_fail(k, TTRPC_INVALID_ARGUMENT, "ttrpc: malformed request");
	else if (!m->name)
		ttrpc_fail(k, TTRPC_UNIMPLEMENTED, "%s/%s: not implemented", r->service, r->method);
	else if (!(in = protobuf_c_message_unpack(m->in, &s->arena.pa, r->payload.len,
						  r->payload.data)))
		ttrpc_fail(k, TTRPC_INVALID_ARGUMENT, "%s/%s: malformed %s", r->service, r->method,
			   m->in->name);
	else {
		k->m = m;
		m->fn(k, in, s->arg);
	}
	ttrpc_arena_reset(&s->arena);
	if (s->handled)
		s->handled(s->handled_arg);
}

/* Handle every whole frame in the buffer; keep the rest at its start, with
 * room for the frame it begins. Return false when the peer sent no ttrpc. */
static bool conn_parse(struct ttrpc_conn *c)
{
	size_t off = 0, need = TTRPC_HDR_LEN;
	while (!c->eof && c->rx_have - off >= TTRPC_HDR_LEN) {
		struct ttrpc_hdr h;
		if (ttrpc_hdr_get(c->rx + off, &h) < 0)
			return false;
		need = TTRPC_HDR_LEN + h.len;
		if (c->rx_have - off < need)
			break;
		if (h.type == TTRPC_REQUEST)
			handle(c, h.sid, c->rx + off + TTRPC_HDR_LEN, h.len);
		/* no stream a shim serves takes data frames: they are skipped */
		off += need;
		need = TTRPC_HDR_LEN;
	}
	memmove(c->rx, c->rx + off, c->rx_have - off);
	c->rx_have -= off;
	if (need > c->rx_cap) {
		uint8_t *b = realloc(c->rx, need);
		if (!b)
			return false;
		c->rx = b;
		c->rx_cap = need;
	}
	return true;
}

static void rx_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct ttrpc_conn *c = container_of(op, struct ttrpc_conn, rx_op);
	if (res <= 0 || c->eof) {
		c->eof = true;
		conn_maybe_free(c);
		return;
	}
	c->rx_have += (size_t) res;
	c->refs++; /* a handler may close the server under us */
	bool ok = conn_parse(c);
	c->refs--;
	if (!ok)
		c->eof = true;
	else
		conn_recv(c);
	conn_maybe_free(c);
}

static void conn_recv(struct ttrpc_conn *c)
{
	if (c->eof)
		return;
	io_uring_prep_recv(urs_op_sqe(&c->rx_op), c->fd, c->rx + c->rx_have, c->rx_cap - c->rx_have,
			   0);
	urs_submit(c->srv->loop, &c->rx_op, rx_cb);
}

/* -- the server ---------------------------------------------------------- */

/* only a peer with our uid and gid is served (as containerd's own shims
 * require), whatever the socket's mode says */
static bool same_user(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.uid == geteuid() &&
	       cr.gid == getegid();
}

static void accept_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	struct ttrpc_server *s = container_of(op, struct ttrpc_server, accept_op);
	if (res >= 0) {
		struct ttrpc_conn *c = calloc(1, sizeof(*c));
		uint8_t *rx = malloc(RX_FIRST);
		if (!c || !rx || s->closing || !same_user(res)) {
			free(c);
			free(rx);
			close(res);
		} else {
			c->srv = s;
			c->fd = res;
			c->rx = rx;
			c->rx_cap = RX_FIRST;
			c->next = s->conns;
			if (s->conns)
				s->conns->prev = c;
			s->conns = c;
			s->nconns++;
			conn_recv(c);
		}
	}
	if ((flags & IORING_CQE_F_MORE) || s->closing || res == -ECANCELED) {
		server_maybe_free(s);
	} else if (res >= 0 || res == -ECONNABORTED || res == -EINTR || res == -EAGAIN ||
		   res == -EPROTO || res == -EPERM) {
		accept_arm(s); /* one connection's trouble (or the multishot ended) */
	} else if (res == -EMFILE || res == -ENFILE || res == -ENOMEM || res == -ENOBUFS) {
		/* out of fds or memory: accept again later, not in a spin */
		urs_timer_start(loop, &s->retry, ACCEPT_RETRY_NS, 0, retry_cb);
	} else { /* the listening socket itself is broken: no spin on it */
		fprintf(stderr, "ttrpc: accept: %s: no more connections\n", strerror(-res));
	}
}

static void accept_arm(struct ttrpc_server *s)
{
	io_uring_prep_multishot_accept(urs_op_sqe(&s->accept_op), s->fd, NULL, NULL, SOCK_CLOEXEC);
	urs_submit(s->loop, &s->accept_op, accept_cb);
}

static void retry_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) loop;
	struct ttrpc_server *s = container_of(t, struct ttrpc_server, retry);
	if (res == 0 && !s->closing)
		accept_arm(s);
	else
		server_maybe_free(s);
}

struct ttrpc_server *ttrpc_server_new(struct urs_loop *loop, int listen_fd,
				      const struct ttrpc_method *methods, void *arg)
{
	struct ttrpc_server *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->loop = loop;
	s->fd = listen_fd;
	s->methods = methods;
	s->arg = arg;
	ttrpc_arena_init(&s->arena);
	accept_arm(s);
	return s;
}

unsigned ttrpc_server_conns(const struct ttrpc_server *srv)
{
	return srv->nconns;
}

void ttrpc_server_on_handled(struct ttrpc_server *srv, void (*fn)(void *arg), void *arg)
{
	srv->handled = fn;
	srv->handled_arg = arg;
}

void ttrpc_server_close(struct ttrpc_server *s)
{
	s->closing = true;
	if (urs_op_busy(&s->accept_op))
		urs_cancel(s->loop, &s->accept_op);
	if (s->retry.state == URS_TIMER_ARMED)
		urs_timer_cancel(s->loop, &s->retry);
	close(s->fd);
	s->fd = -1;
	for (struct ttrpc_conn *c = s->conns; c; c = c->next)
		if (!urs_op_busy(&c->tx_op) && !c->out[c->fill].len)
			conn_eof(c);
	/* connections with replies still to send go when those are sent */
	server_maybe_free(s); /* nothing in flight: now */
}
