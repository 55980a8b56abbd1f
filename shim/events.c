/*
 * shim/events.c — task events to containerd (shim/events.h).
 *
 * Two output buffers as in the server: one in flight, one filling. The
 * Envelope is built on the stack around the event (its bytes packed into
 * the Any on a stack buffer up to 4 KiB, the sizes task events have) and
 * the Forward request is encoded straight into the filling buffer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "runtime/common.h"
#include "shim/events.h"
#include "shim/proto/events.pb-c.h"

#define SERVICE "containerd.services.events.ttrpc.v1.Events"

int shim_events_init(struct shim_events *ev, struct urs_loop *loop, const char *addr,
		     const char *ns)
{
	memset(ev, 0, sizeof(*ev));
	ev->loop = loop;
	ev->fd = -1;
	ev->sid = 1;
	if (addr && !strncmp(addr, "unix://", 7))
		addr += 7;
	if (snprintf(ev->addr, sizeof(ev->addr), "%s", addr ? addr : "") >=
		    (int) sizeof(ev->addr) ||
	    snprintf(ev->ns, sizeof(ev->ns), "%s", ns) >= (int) sizeof(ev->ns))
		return -ENAMETOOLONG;
	return 0;
}

static void drop(struct shim_events *ev)
{
	if (ev->fd >= 0) {
		shutdown(ev->fd, SHUT_RDWR); /* ends the recv in flight */
		close(ev->fd);
	}
	ev->fd = -1;
	ev->lost += ev->len[0] || ev->len[1];
	ev->len[0] = ev->len[1] = ev->tx_off = 0;
}

static void rx_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

/* one recv on the connection there is now: replies are read and dropped */
static void rx_arm(struct shim_events *ev)
{
	ev->rx_gen = ev->gen;
	io_uring_prep_recv(urs_op_sqe(&ev->rx_op), ev->fd, ev->rx, sizeof(ev->rx), 0);
	ev->rx_op.flags = URS_OPF_WEAK;
	urs_submit(ev->loop, &ev->rx_op, rx_cb);
}

static void rx_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct shim_events *ev = container_of(op, struct shim_events, rx_op);
	if (ev->rx_gen != ev->gen) { /* an older connection's: arm the new one's */
		if (ev->fd >= 0)
			rx_arm(ev);
		return;
	}
	if (res <= 0) { /* containerd went (or the connection broke) */
		if (res != -ECANCELED && !urs_op_busy(&ev->tx_op))
			drop(ev);
		return;
	}
	rx_arm(ev);
}

static void send_next(struct shim_events *ev);

static void tx_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct shim_events *ev = container_of(op, struct shim_events, tx_op);
	int b = !ev->fill;
	if (res <= 0) {
		drop(ev);
		return;
	}
	ev->tx_off += (size_t) res;
	if (ev->tx_off == ev->len[b]) {
		ev->len[b] = ev->tx_off = 0;
		ev->fill = b;
	}
	send_next(ev);
}

static void send_next(struct shim_events *ev)
{
	if (urs_op_busy(&ev->tx_op) || ev->fd < 0)
		return;
	int b = !ev->fill;
	if (ev->len[b] == ev->tx_off) {
		if (!ev->len[ev->fill])
			return;
		ev->len[b] = ev->tx_off = 0;
		ev->fill = b;
		b = !ev->fill;
	}
	io_uring_prep_send(urs_op_sqe(&ev->tx_op), ev->fd, ev->out[b] + ev->tx_off,
			   ev->len[b] - ev->tx_off, MSG_NOSIGNAL);
	urs_submit(ev->loop, &ev->tx_op, tx_cb);
}

static int connect_now(struct shim_events *ev)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ev->addr);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	ev->fd = fd;
	ev->gen++;
	if (!urs_op_busy(&ev->rx_op)) /* else the old recv's completion arms it */
		rx_arm(ev);
	return 0;
}

static int queue(struct shim_events *ev, const ProtobufCMessage *req)
{
	int f = ev->fill;
	size_t n = ttrpc_request_size(SERVICE, "Forward", req, ev->ns);
	if (ev->cap[f] - ev->len[f] < n) {
		size_t cap = ev->len[f] + n + 1024;
		uint8_t *b = realloc(ev->out[f], cap);
		if (!b)
			return -ENOMEM;
		ev->out[f] = b;
		ev->cap[f] = cap;
	}
	long w = ttrpc_request_put(ev->out[f] + ev->len[f], ev->sid, SERVICE, "Forward", req,
				   ev->ns);
	if (w < 0)
		return (int) w;
	ev->sid += 2;
	ev->len[f] += (size_t) w;
	return 0;
}

void shim_events_publish(void *arg, const char *topic, const char *type_url,
			 const ProtobufCMessage *msg)
{
	struct shim_events *ev = arg;
	uint8_t body[4096];
	if (!ev->addr[0] || protobuf_c_message_get_packed_size(msg) > sizeof(body)) {
		ev->lost++;
		return;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	ts.seconds = now.tv_sec;
	ts.nanos = (int32_t) now.tv_nsec;
	Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
	any.type_url = (char *) type_url;
	any.value.data = body;
	any.value.len = protobuf_c_message_pack(msg, body);
	Containerd__Events__Envelope env = CONTAINERD__EVENTS__ENVELOPE__INIT;
	env.timestamp = &ts;
	env.namespace_ = ev->ns;
	env.topic = (char *) topic;
	env.event = &any;
	Containerd__Events__ForwardRequest fr = CONTAINERD__EVENTS__FORWARD_REQUEST__INIT;
	fr.envelope = &env;
	if ((ev->fd < 0 && connect_now(ev) < 0) || queue(ev, &fr.base) < 0) {
		ev->lost++;
		return;
	}
	ev->sent++;
	send_next(ev);
}

bool shim_events_idle(const struct shim_events *ev)
{
	return !urs_op_busy(&ev->tx_op) && !ev->len[0] && !ev->len[1];
}

void shim_events_fini(struct shim_events *ev)
{
	if (urs_op_busy(&ev->rx_op))
		urs_cancel(ev->loop, &ev->rx_op);
	if (urs_op_busy(&ev->tx_op))
		urs_cancel(ev->loop, &ev->tx_op);
	drop(ev);
	if (urs_op_busy(&ev->tx_op))
		return; /* the kernel may still read it: the process is ending anyway */
	free(ev->out[0]);
	free(ev->out[1]);
	ev->out[0] = ev->out[1] = NULL;
}
