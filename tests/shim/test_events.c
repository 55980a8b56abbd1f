/*
 * tests/shim/test_events.c — task events to containerd (shim/events.c),
 * with the test as containerd's events service: each event arrives as a
 * Forward call of containerd.services.events.ttrpc.v1.Events carrying the
 * namespace (envelope and ttrpc metadata), the topic, a timestamp and the
 * event in an Any of its type, in the order published; replies are read;
 * when containerd closes the connection, the next event comes over a new
 * one; with no address events are dropped and counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/loop.h"
#include "shim/events.h"
#include "shim/proto/events.pb-c.h"
#include "shim/ttrpc.h"

static void read_full(int fd, void *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (uint8_t *) b + got, n - got);
		assert_true(r > 0);
		got += (size_t) r;
	}
}

/* the next Forward call on @fd: its topic (into @topic) and its event's pid;
 * answered with Empty */
static uint32_t next_event(int fd, char *topic, size_t len)
{
	uint8_t h[TTRPC_HDR_LEN];
	read_full(fd, h, sizeof(h));
	struct ttrpc_hdr hd;
	assert_int_equal(ttrpc_hdr_get(h, &hd), 0);
	assert_int_equal(hd.type, TTRPC_REQUEST);
	assert_int_equal(hd.sid % 2, 1);
	uint8_t *p = malloc(hd.len);
	read_full(fd, p, hd.len);
	Ttrpc__Request *r = ttrpc__request__unpack(NULL, hd.len, p);
	assert_non_null(r);
	assert_string_equal(r->service, "containerd.services.events.ttrpc.v1.Events");
	assert_string_equal(r->method, "Forward");
	assert_int_equal(r->n_metadata, 1);
	assert_string_equal(r->metadata[0]->key, "containerd-namespace-ttrpc");
	assert_string_equal(r->metadata[0]->value, "k8s.io");
	Containerd__Events__ForwardRequest *f =
		containerd__events__forward_request__unpack(NULL, r->payload.len, r->payload.data);
	Containerd__Events__Envelope *e = f->envelope;
	assert_string_equal(e->namespace_, "k8s.io");
	assert_true(e->timestamp && e->timestamp->seconds > 0);
	assert_string_equal(e->event->type_url, "containerd.events.TaskStart");
	snprintf(topic, len, "%s", e->topic);
	Containerd__Events__TaskStart *ts = containerd__events__task_start__unpack(
		NULL, e->event->value.len, e->event->value.data);
	uint32_t pid = ts->pid;
	containerd__events__task_start__free_unpacked(ts, NULL);
	containerd__events__forward_request__free_unpacked(f, NULL);
	ttrpc__request__free_unpacked(r, NULL);
	free(p);
	uint8_t resp[TTRPC_HDR_LEN];
	ttrpc_hdr_put(resp, &(struct ttrpc_hdr){.sid = hd.sid, .type = TTRPC_RESPONSE});
	assert_int_equal(write(fd, resp, sizeof(resp)), sizeof(resp));
	return pid;
}

static void publish(struct shim_events *ev, uint32_t pid)
{
	Containerd__Events__TaskStart s = CONTAINERD__EVENTS__TASK_START__INIT;
	s.container_id = "c1";
	s.pid = pid;
	shim_events_publish(ev, "/tasks/start", "containerd.events.TaskStart", &s.base);
}

static void flush(struct urs_loop *loop, struct shim_events *ev)
{
	while (!shim_events_idle(ev))
		assert_true(urs_loop_run_once(loop, true) >= 0);
}

static void test_forward_in_order_and_reconnect(void **state)
{
	(void) state;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[] = "/tmp/ursa-test-events.XXXXXX";
	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctrd.sock.ttrpc", dir);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(l, (struct sockaddr *) &sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 4), 0);

	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct shim_events ev;
	char addr[128];
	snprintf(addr, sizeof(addr), "unix://%s", sa.sun_path);
	assert_int_equal(shim_events_init(&ev, &loop, addr, "k8s.io"), 0);
	for (uint32_t i = 1; i <= 3; i++)
		publish(&ev, 100 + i);
	flush(&loop, &ev);
	int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(c >= 0);
	char topic[64];
	for (uint32_t i = 1; i <= 3; i++) {
		assert_int_equal(next_event(c, topic, sizeof(topic)), 100 + i);
		assert_string_equal(topic, "/tasks/start");
	}
	urs_loop_run_once(&loop, false); /* the replies are read */

	/* containerd restarts: the connection closes; the next event goes on a new one */
	close(c);
	while (ev.fd >= 0) /* the shim sees the close */
		assert_true(urs_loop_run_once(&loop, true) >= 0);
	publish(&ev, 200);
	flush(&loop, &ev);
	c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(c >= 0);
	assert_int_equal(next_event(c, topic, sizeof(topic)), 200);
	assert_int_equal(ev.sent, 4);
	assert_int_equal(ev.lost, 0);

	shim_events_fini(&ev);
	while (loop.live)
		urs_loop_run_once(&loop, true);
	urs_loop_fini(&loop);
	close(c);
	close(l);
	unlink(sa.sun_path);
	rmdir(dir);
}

static void test_no_address_drops(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct shim_events ev;
	assert_int_equal(shim_events_init(&ev, &loop, NULL, "default"), 0);
	publish(&ev, 1);
	assert_int_equal(ev.lost, 1);
	assert_true(shim_events_idle(&ev));
	/* an address where no containerd listens: lost, counted */
	assert_int_equal(shim_events_init(&ev, &loop, "/nonexistent/ctrd.sock", "default"), 0);
	publish(&ev, 2);
	assert_int_equal(ev.lost, 1);
	shim_events_fini(&ev);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward_in_order_and_reconnect),
		cmocka_unit_test(test_no_address_drops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
