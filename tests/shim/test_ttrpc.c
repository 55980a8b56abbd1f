/*
 * tests/shim/test_ttrpc.c — ttrpc (shim/ttrpc.h, shim/ttrpc_server.h):
 * frame headers, requests and responses encoded in place and read back
 * with protobuf-c's own decoder, the arena, and the server on a loop
 * driven by a plain blocking client: a reply, an error status for an
 * unknown method and a malformed message, a reply kept and sent after a
 * later one, a request written byte by byte, a frame larger than the
 * receive buffer, an oversized header closing the connection, and a kept
 * call outliving its connection, and a client of another uid refused.
 * Counted fds show none left behind.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/loop.h"
#include "shim/proto/task.pb-c.h"
#include "shim/proto/ttrpc.pb-c.h"
#include "shim/ttrpc.h"
#include "shim/ttrpc_server.h"
#include "tests/shim/client.h"

#define SVC TASK_SVC

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void test_header(void **state)
{
	(void) state;
	uint8_t b[TTRPC_HDR_LEN];
	struct ttrpc_hdr h = {
		.len = 0x01020304 & 0x3fffff, .sid = 0xfffffffb, .type = 2, .flags = 4};
	ttrpc_hdr_put(b, &h);
	assert_int_equal(b[0], 0x00);
	assert_int_equal(b[1], 0x02); /* big-endian */
	assert_int_equal(b[8], 2);
	struct ttrpc_hdr g;
	assert_int_equal(ttrpc_hdr_get(b, &g), 0);
	assert_int_equal(g.len, h.len);
	assert_int_equal(g.sid, h.sid);
	assert_int_equal(g.type, 2);
	assert_int_equal(g.flags, 4);
	h.len = TTRPC_MSG_MAX + 1;
	ttrpc_hdr_put(b, &h);
	assert_int_equal(ttrpc_hdr_get(b, &g), -EMSGSIZE);
	assert_int_equal(g.len, TTRPC_MSG_MAX + 1);
}

/* a request encoded by hand-written tags reads back through protobuf-c */
static void test_request_roundtrip(void **state)
{
	(void) state;
	Containerd__Task__V2__KillRequest k = CONTAINERD__TASK__V2__KILL_REQUEST__INIT;
	k.id = "c1";
	k.signal = 9;
	k.all = 1;
	size_t n = ttrpc_request_size(SVC, "Kill", &k.base, "default");
	uint8_t *b = malloc(n);
	assert_int_equal(ttrpc_request_put(b, 7, SVC, "Kill", &k.base, "default"), (long) n);
	struct ttrpc_hdr h;
	assert_int_equal(ttrpc_hdr_get(b, &h), 0);
	assert_int_equal(h.len, n - TTRPC_HDR_LEN);
	assert_int_equal(h.sid, 7);
	assert_int_equal(h.type, TTRPC_REQUEST);
	struct ttrpc_arena a;
	ttrpc_arena_init(&a);
	Ttrpc__Request *r = ttrpc_request_decode(b + TTRPC_HDR_LEN, h.len, &a);
	assert_non_null(r);
	assert_string_equal(r->service, SVC);
	assert_string_equal(r->method, "Kill");
	assert_int_equal(r->n_metadata, 1);
	assert_string_equal(r->metadata[0]->key, "containerd-namespace-ttrpc");
	assert_string_equal(r->metadata[0]->value, "default");
	Containerd__Task__V2__KillRequest *d =
		containerd__task__v2__kill_request__unpack(&a.pa, r->payload.len, r->payload.data);
	assert_non_null(d);
	assert_string_equal(d->id, "c1");
	assert_int_equal(d->signal, 9);
	assert_true(d->all);
	/* not a request: a truncated one */
	ttrpc_arena_reset(&a);
	assert_null(ttrpc_request_decode(b + TTRPC_HDR_LEN, h.len - 3, &a));
	ttrpc_arena_fini(&a);
	free(b);
}

static void test_response_encoding(void **state)
{
	(void) state;
	Containerd__Task__V2__StartResponse sr = CONTAINERD__TASK__V2__START_RESPONSE__INIT;
	sr.pid = 4242;
	uint8_t b[256];
	size_t n = ttrpc_response_size(&sr.base, TTRPC_OK, NULL);
	assert_int_equal(ttrpc_response_put(b, 9, &sr.base, TTRPC_OK, NULL), (long) n);
	struct ttrpc_hdr h;
	assert_int_equal(ttrpc_hdr_get(b, &h), 0);
	assert_int_equal(h.type, TTRPC_RESPONSE);
	assert_int_equal(h.sid, 9);
	Ttrpc__Response *r = ttrpc__response__unpack(NULL, h.len, b + TTRPC_HDR_LEN);
	assert_non_null(r);
	assert_null(r->status);
	Containerd__Task__V2__StartResponse *d =
		containerd__task__v2__start_response__unpack(NULL, r->payload.len, r->payload.data);
	assert_int_equal(d->pid, 4242);
	containerd__task__v2__start_response__free_unpacked(d, NULL);
	ttrpc__response__free_unpacked(r, NULL);

	/* an error: code and message, no payload */
	n = ttrpc_response_size(NULL, TTRPC_NOT_FOUND, "container c9: not found");
	assert_int_equal(
		ttrpc_response_put(b, 11, NULL, TTRPC_NOT_FOUND, "container c9: not found"),
		(long) n);
	assert_int_equal(ttrpc_hdr_get(b, &h), 0);
	r = ttrpc__response__unpack(NULL, h.len, b + TTRPC_HDR_LEN);
	assert_non_null(r);
	assert_non_null(r->status);
	assert_int_equal(r->status->code, TTRPC_NOT_FOUND);
	assert_string_equal(r->status->message, "container c9: not found");
	assert_int_equal(r->payload.len, 0);
	ttrpc__response__free_unpacked(r, NULL);

	/* an empty reply (google.protobuf.Empty): a header alone */
	assert_int_equal(ttrpc_response_put(b, 13, NULL, TTRPC_OK, NULL), TTRPC_HDR_LEN);
}

/* the kept block grows to the largest call; extras go at the reset; the limit holds */
static void test_arena(void **state)
{
	(void) state;
	struct ttrpc_arena a;
	ttrpc_arena_init(&a);
	void *p = a.pa.alloc(a.pa.allocator_data, 100);
	assert_non_null(p);
	assert_int_equal((uintptr_t) p % 16, 0);
	for (int i = 0; i < 10; i++)
		assert_non_null(a.pa.alloc(a.pa.allocator_data, 40000));
	assert_non_null(a.extra);
	size_t grown = a.want;
	ttrpc_arena_reset(&a);
	assert_null(a.extra);
	assert_true(a.cap >= grown);
	for (int i = 0; i < 10; i++)
		assert_non_null(a.pa.alloc(a.pa.allocator_data, 40000));
	assert_null(a.extra); /* the same call now fits the kept block */
	ttrpc_arena_reset(&a);
	assert_null(a.pa.alloc(a.pa.allocator_data, TTRPC_ARENA_MAX));
	ttrpc_arena_fini(&a);
}

/* -- the server ---------------------------------------------------------- */

struct fixture {
	struct urs_loop loop;
	struct ttrpc_server *srv;
	int cli;
	struct ttrpc_call *kept;
	int kills;
	struct sockaddr_un sa; /* the server's (abstract) address */
	socklen_t sl;
};

static void on_connect(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	(void) arg;
	const Containerd__Task__V2__PidsRequest *r = (const void *) req;
	Containerd__Task__V2__ConnectResponse cr = CONTAINERD__TASK__V2__CONNECT_RESPONSE__INIT;
	cr.shim_pid = 1234;
	cr.version = (char *) r->id; /* echoes the id */
	ttrpc_reply(call, &cr.base);
}

/* Wait: kept until a Kill comes */
static void on_wait(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	(void) req;
	struct fixture *f = arg;
	f->kept = call;
}

static void on_kill(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct fixture *f = arg;
	const Containerd__Task__V2__KillRequest *k = (const void *) req;
	f->kills++;
	ttrpc_reply(call, NULL);
	if (f->kept) {
		Containerd__Task__V2__WaitResponse w = CONTAINERD__TASK__V2__WAIT_RESPONSE__INIT;
		w.exit_status = 128 + k->signal;
		ttrpc_reply(f->kept, &w.base);
		f->kept = NULL;
	}
}

static const struct ttrpc_method methods[] = {
	{SVC, "Connect", &containerd__task__v2__pids_request__descriptor, on_connect},
	{SVC, "Wait", &containerd__task__v2__delete_request__descriptor, on_wait},
	{SVC, "Kill", &containerd__task__v2__kill_request__descriptor, on_kill},
	{0},
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_int_equal(urs_loop_init(&f->loop, NULL), 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "ursa-test-ttrpc-%d", getpid());
	socklen_t sl = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(l, (struct sockaddr *) &sa, sl), 0);
	assert_int_equal(listen(l, 8), 0);
	f->srv = ttrpc_server_new(&f->loop, l, methods, f);
	assert_non_null(f->srv);
	f->cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(f->cli, (struct sockaddr *) &sa, sl), 0);
	f->sa = sa;
	f->sl = sl;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (f->cli >= 0)
		close(f->cli);
	ttrpc_server_close(f->srv);
	/* turn until every op has completed and the server is gone */
	while (f->loop.live)
		urs_loop_run_once(&f->loop, true);
	urs_loop_fini(&f->loop);
	free(f);
	return 0;
}

static void send_req(struct fixture *f, uint32_t sid, const char *method, const ProtobufCMessage *m)
{
	tc_send(f->cli, sid, method, m);
}

static uint32_t recv_resp(struct fixture *f, Ttrpc__Response **resp)
{
	return tc_recv(&f->loop, f->cli, resp);
}

static void pump(struct fixture *f)
{
	tc_pump(&f->loop, f->cli);
}

static void test_server_reply(void **state)
{
	struct fixture *f = *state;
	Containerd__Task__V2__PidsRequest r = CONTAINERD__TASK__V2__PIDS_REQUEST__INIT;
	r.id = "ctr-one";
	send_req(f, 1, "Connect", &r.base);
	Ttrpc__Response *resp;
	assert_int_equal(recv_resp(f, &resp), 1);
	assert_null(resp->status);
	Containerd__Task__V2__ConnectResponse *c = containerd__task__v2__connect_response__unpack(
		NULL, resp->payload.len, resp->payload.data);
	assert_int_equal(c->shim_pid, 1234);
	assert_string_equal(c->version, "ctr-one");
	containerd__task__v2__connect_response__free_unpacked(c, NULL);
	ttrpc__response__free_unpacked(resp, NULL);
}

static void test_server_errors(void **state)
{
	struct fixture *f = *state;
	Containerd__Task__V2__PidsRequest r = CONTAINERD__TASK__V2__PIDS_REQUEST__INIT;
	send_req(f, 3, "Frobnicate", &r.base);
	Ttrpc__Response *resp;
	assert_int_equal(recv_resp(f, &resp), 3);
	assert_non_null(resp->status);
	assert_int_equal(resp->status->code, TTRPC_UNIMPLEMENTED);
	assert_non_null(strstr(resp->status->message, "Frobnicate"));
	ttrpc__response__free_unpacked(resp, NULL);

	/* Kill whose payload is no KillRequest (a varint field with no end) */
	uint8_t b[128];
	Containerd__Task__V2__PidsRequest junk = CONTAINERD__TASK__V2__PIDS_REQUEST__INIT;
	junk.id = "x";
	long n = ttrpc_request_put(b, 5, SVC, "Kill", &junk.base, NULL);
	/* turn the payload's string field (tag 0x0a) into an unterminated varint (0x08 0xff) */
	uint8_t *pl = memmem(b, (size_t) n, "\x0a\x01x", 3);
	assert_non_null(pl);
	pl[0] = 0x08, pl[1] = 0xff, pl[2] = 0xff;
	assert_int_equal(write(f->cli, b, (size_t) n), n);
	assert_int_equal(recv_resp(f, &resp), 5);
	assert_non_null(resp->status);
	assert_int_equal(resp->status->code, TTRPC_INVALID_ARGUMENT);
	ttrpc__response__free_unpacked(resp, NULL);
	assert_int_equal(f->kills, 0);
}

/* Wait is kept; the Kill after it is answered first, then the Wait */
static void test_server_kept_call(void **state)
{
	struct fixture *f = *state;
	Containerd__Task__V2__DeleteRequest w = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	w.id = "c";
	send_req(f, 1, "Wait", &w.base);
	Containerd__Task__V2__KillRequest k = CONTAINERD__TASK__V2__KILL_REQUEST__INIT;
	k.id = "c";
	k.signal = 15;
	send_req(f, 3, "Kill", &k.base);
	Ttrpc__Response *resp;
	assert_int_equal(recv_resp(f, &resp), 3);
	assert_null(resp->status);
	assert_int_equal(resp->payload.len, 0);
	ttrpc__response__free_unpacked(resp, NULL);
	assert_int_equal(recv_resp(f, &resp), 1);
	Containerd__Task__V2__WaitResponse *wr = containerd__task__v2__wait_response__unpack(
		NULL, resp->payload.len, resp->payload.data);
	assert_int_equal(wr->exit_status, 143);
	containerd__task__v2__wait_response__free_unpacked(wr, NULL);
	ttrpc__response__free_unpacked(resp, NULL);
}

/* a request in single bytes, then one whose frame outgrows the receive buffer */
static void test_server_split_and_large(void **state)
{
	struct fixture *f = *state;
	Containerd__Task__V2__PidsRequest r = CONTAINERD__TASK__V2__PIDS_REQUEST__INIT;
	r.id = "split";
	uint8_t b[256];
	long n = ttrpc_request_put(b, 7, SVC, "Connect", &r.base, NULL);
	for (long i = 0; i < n; i++) {
		assert_int_equal(write(f->cli, b + i, 1), 1);
		urs_loop_run_once(&f->loop, false);
	}
	Ttrpc__Response *resp;
	assert_int_equal(recv_resp(f, &resp), 7);
	ttrpc__response__free_unpacked(resp, NULL);

	size_t big = 1u << 20;
	char *id = malloc(big + 1);
	memset(id, 'a', big);
	id[big] = 0;
	r.id = id;
	size_t sz = ttrpc_request_size(SVC, "Connect", &r.base, NULL);
	uint8_t *bb = malloc(sz);
	assert_int_equal(ttrpc_request_put(bb, 9, SVC, "Connect", &r.base, NULL), (long) sz);
	size_t off = 0;
	while (off < sz) { /* the socket buffer is smaller: write as the server reads */
		ssize_t w = send(f->cli, bb + off, sz - off, MSG_DONTWAIT);
		if (w > 0)
			off += (size_t) w;
		else
			urs_loop_run_once(&f->loop, true);
	}
	assert_int_equal(recv_resp(f, &resp), 9);
	Containerd__Task__V2__ConnectResponse *c = containerd__task__v2__connect_response__unpack(
		NULL, resp->payload.len, resp->payload.data);
	assert_int_equal(strlen(c->version), big);
	containerd__task__v2__connect_response__free_unpacked(c, NULL);
	ttrpc__response__free_unpacked(resp, NULL);
	free(bb);
	free(id);
}

/* a header claiming more than 4 MiB: the server closes the connection */
static void test_server_oversize(void **state)
{
	struct fixture *f = *state;
	uint8_t h[TTRPC_HDR_LEN];
	ttrpc_hdr_put(h, &(struct ttrpc_hdr){.len = TTRPC_MSG_MAX + 1, .sid = 1, .type = 1});
	assert_int_equal(write(f->cli, h, sizeof(h)), sizeof(h));
	pump(f);
	char c;
	assert_int_equal(read(f->cli, &c, 1), 0);
	while (ttrpc_server_conns(f->srv))
		urs_loop_run_once(&f->loop, true);
}

/* the client goes while its Wait is kept: the call is no longer live and
 * answering it sends nothing and frees the connection */
static void test_server_kept_call_outlives_conn(void **state)
{
	struct fixture *f = *state;
	Containerd__Task__V2__DeleteRequest w = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	w.id = "c";
	send_req(f, 1, "Wait", &w.base);
	while (!f->kept)
		urs_loop_run_once(&f->loop, true);
	int fds = count_fds(); /* the client's end and the accepted one */
	assert_true(ttrpc_call_live(f->kept));
	close(f->cli);
	f->cli = -1;
	while (ttrpc_call_live(f->kept))
		urs_loop_run_once(&f->loop, true);
	assert_int_equal(ttrpc_server_conns(f->srv), 1); /* held by the call */
	ttrpc_fail(f->kept, TTRPC_CANCELLED, "gone");
	f->kept = NULL;
	assert_int_equal(ttrpc_server_conns(f->srv), 0);
	assert_int_equal(count_fds(), fds - 2); /* the client's and the server's ends */
}

/* a client of another uid is closed on, unanswered (root runs the tests) */
static void test_server_other_user_refused(void **state)
{
	struct fixture *f = *state;
	if (geteuid() != 0)
		skip();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(fd, (struct sockaddr *) &f->sa, f->sl) < 0)
			_exit(3);
		/* the server may close before the request is written: that is
		 * the refusal too (EPIPE, never SIGPIPE; no cmocka assert in
		 * the child) */
		Containerd__Task__V2__PidsRequest r = CONTAINERD__TASK__V2__PIDS_REQUEST__INIT;
		uint8_t b[256];
		size_t n = ttrpc_request_size(TASK_SVC, "Connect", &r.base, "default");
		if (n > sizeof(b) ||
		    ttrpc_request_put(b, 1, TASK_SVC, "Connect", &r.base, "default") != (long) n)
			_exit(4);
		if (send(fd, b, n, MSG_NOSIGNAL) < 0)
			_exit(errno == EPIPE || errno == ECONNRESET ? 0 : 5);
		char c;
		_exit(read(fd, &c, 1) <= 0 ? 0 : 1); /* closed (or reset), no reply */
	}
	int pfd = (int) syscall(SYS_pidfd_open, pid, 0);
	assert_true(pfd >= 0);
	for (;;) { /* turn the loop until the child has its answer */
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		if (poll(&p, 1, 0) > 0)
			break;
		urs_loop_run_once(&f->loop, false);
		poll(&p, 1, 10);
	}
	close(pfd);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(f->kills, 0);
}

/* a listening socket that cannot accept (not listening: EINVAL) is given
 * up on, not accepted on in a spin */
static void test_server_broken_listener(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct ttrpc_server *srv = ttrpc_server_new(&loop, l, methods, NULL);
	assert_non_null(srv);
	for (int i = 0; i < 200; i++)
		urs_loop_run_once(&loop, false);
	assert_true(loop.stats.sqes < 20); /* a spin would be ~200 */
	ttrpc_server_close(srv);
	while (loop.live)
		urs_loop_run_once(&loop, true);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_request_roundtrip),
		cmocka_unit_test(test_response_encoding),
		cmocka_unit_test(test_arena),
		cmocka_unit_test_setup_teardown(test_server_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_kept_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_split_and_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_oversize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_kept_call_outlives_conn, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_server_other_user_refused, setup, teardown),
		cmocka_unit_test(test_server_broken_listener),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
