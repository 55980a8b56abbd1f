/*
 * actors/netsplice.c — the port-forward splice shortcut (see netsplice.h).
 *
 * Per client: a socket made inside the sandbox's namespace
 * (host/netns_socket.h), a non-blocking connect through the ring to the
 * sandbox's own address and the forward's port, then runtime/relay.h moves
 * the bytes. A refused connect resets the client. Connections live in one
 * list (at most max_conns of them); the netstack's idle timer ticks it to
 * close connections without traffic for idle_ms.
 */
#include "actors/netsplice.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/netns_socket.h"
#include "runtime/common.h"
#include "runtime/relay.h"

struct conn {
	struct urs_netsplice *s;
	struct conn *prev, *next;
	int cfd, sfd; /* host client, sandbox side (until the relay owns them) */
	bool relaying;
	struct urs_op connect_op;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} dst;
	socklen_t dstlen;
	struct urs_relay relay;
	uint64_t seen;	  /* bytes at the last tick */
	uint32_t idle_ms; /* without traffic since */
};

struct urs_netsplice {
	struct urs_loop *loop;
	struct urs_netsplice_cfg cfg;
	struct urs_netns_sock ns;
	struct conn *head;
	bool stopping;
	struct urs_netsplice_stats st;
	uint64_t done_bytes[2]; /* of relays that ended */
};

static void rst_close(int fd)
{
	if (fd < 0)
		return;
	struct linger l = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

static void maybe_free(struct urs_netsplice *s)
{
	if (s->stopping && !s->head)
		free(s);
}

static void conn_free(struct conn *c)
{
	struct urs_netsplice *s = c->s;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->st.live--;
	free(c);
	maybe_free(s);
}

static void relay_done(struct urs_relay *r, int res)
{
	struct conn *c = container_of(r, struct conn, relay);
	struct urs_netsplice *s = c->s;
	s->done_bytes[0] += r->bytes[0];
	s->done_bytes[1] += r->bytes[1];
	if (res < 0 && res != -ECANCELED)
		s->st.reset++;
	conn_free(c);
}

static void connect_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct conn *c = container_of(op, struct conn, connect_op);
	struct urs_netsplice *s = c->s;
	if (res == 0 && !s->stopping) {
		int r = urs_relay_start(&c->relay, s->loop, c->cfd, c->sfd,
					&(struct urs_relay_opts){.pipe_size = s->cfg.pipe_size},
					relay_done);
		if (r == 0) {
			c->cfd = c->sfd = -1; /* the relay's */
			c->relaying = true;
			s->st.opened++;
			return;
		}
		res = r;
	}
	/* refused (or no pipes, or stopping): the client learns it by a reset,
	 * as it would from the sandbox itself */
	if (res == -ECONNREFUSED)
		s->st.refused++;
	else
		s->st.reset++;
	rst_close(c->cfd);
	close(c->sfd);
	conn_free(c);
}

bool urs_netsplice_offer(void *ctx, int cfd, int family, uint16_t sandbox_port)
{
	struct urs_netsplice *s = ctx;
	if (s->stopping || s->st.live >= s->cfg.max_conns)
		goto decline;
	bool v6 = family == AF_INET6 && s->cfg.ipv6;
	int sfd = urs_netns_sock_socket(&s->ns, v6 ? AF_INET6 : AF_INET,
					SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (sfd < 0)
		goto decline;
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(sfd);
		goto decline;
	}
	int one = 1;
	setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->s = s;
	c->cfd = cfd;
	c->sfd = sfd;
	if (v6) {
		c->dst.v6 = (struct sockaddr_in6){.sin6_family = AF_INET6,
						  .sin6_port = htons(sandbox_port),
						  .sin6_addr = s->cfg.addr6};
		c->dstlen = sizeof(c->dst.v6);
	} else {
		c->dst.v4 = (struct sockaddr_in){.sin_family = AF_INET,
						 .sin_port = htons(sandbox_port),
						 .sin_addr = s->cfg.addr4};
		c->dstlen = sizeof(c->dst.v4);
	}
	c->next = s->head;
	if (s->head)
		s->head->prev = c;
	s->head = c;
	s->st.live++;
	io_uring_prep_connect(urs_op_sqe(&c->connect_op), sfd, (struct sockaddr *) &c->dst,
			      c->dstlen);
	urs_submit(s->loop, &c->connect_op, connect_cb);
	return true;
decline:
	s->st.declined++;
	return false;
}

void urs_netsplice_tick(struct urs_netsplice *s, uint32_t elapsed_ms)
{
	if (!s || s->stopping)
		return;
	for (struct conn *c = s->head, *next; c; c = next) {
		next = c->next;
		if (!c->relaying || c->relay.closing)
			continue;
		uint64_t b = c->relay.bytes[0] + c->relay.bytes[1];
		if (b != c->seen) {
			c->seen = b;
			c->idle_ms = 0;
			continue;
		}
		c->idle_ms += elapsed_ms;
		if (c->idle_ms >= s->cfg.idle_ms) {
			s->st.idle_closed++;
			urs_relay_close(&c->relay, true);
		}
	}
}

int urs_netsplice_init(struct urs_netsplice **out, struct urs_loop *loop, pid_t pid,
		       const struct urs_netsplice_cfg *cfg)
{
	struct urs_netsplice *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	int r = urs_netns_sock_open(&s->ns, pid);
	if (r < 0) {
		free(s);
		return r;
	}
	s->loop = loop;
	s->cfg = *cfg;
	if (!s->cfg.max_conns)
		s->cfg.max_conns = URS_NETSPLICE_MAX_DEFAULT;
	if (!s->cfg.idle_ms)
		s->cfg.idle_ms = 2u * 3600 * 1000;
	*out = s;
	return 0;
}

void urs_netsplice_stop(struct urs_netsplice *s)
{
	if (!s || s->stopping)
		return;
	s->stopping = true;
	urs_netns_sock_close(&s->ns);
	for (struct conn *c = s->head; c; c = c->next) {
		if (c->relaying)
			urs_relay_close(&c->relay, true);
		else if (urs_op_busy(&c->connect_op))
			urs_cancel(s->loop, &c->connect_op);
	}
	maybe_free(s);
}

void urs_netsplice_get_stats(const struct urs_netsplice *s, struct urs_netsplice_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	*st = s->st;
	st->bytes_in = s->done_bytes[0];
	st->bytes_out = s->done_bytes[1];
	for (const struct conn *c = s->head; c; c = c->next) {
		if (c->relaying) {
			st->bytes_in += c->relay.bytes[0];
			st->bytes_out += c->relay.bytes[1];
		}
	}
}
