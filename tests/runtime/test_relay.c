/*
 * tests/runtime/test_relay.c — the splice relay (runtime/relay.h) that the
 * port-forward shortcut (actors/netsplice.c) runs on: bytes both ways intact
 * through socketpairs and loopback TCP (multishot and single-shot polls,
 * small pipes so the pipe-full path runs), half-close in each direction, a
 * reset on one side reaching the other as a reset, urs_relay_close(), and
 * no fd left behind after many relays.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/loop.h"
#include "runtime/relay.h"

static int done_calls, done_res;

static void on_done(struct urs_relay *r, int res)
{
	(void) r;
	done_calls++;
	done_res = res;
}

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

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void nonblock(int fd)
{
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

/* a connected TCP pair over loopback: *c (client), *s (accepted) */
static void tcp_pair(int *c, int *s)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	assert_int_equal(bind(l, (struct sockaddr *) &a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *) &a, &al), 0);
	*c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(*c, (struct sockaddr *) &a, sizeof(a)), 0);
	*s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(*s >= 0);
	close(l);
	nonblock(*c);
	nonblock(*s);
}

static void make_pair(bool tcp, int *x, int *y)
{
	if (tcp) {
		tcp_pair(x, y);
	} else {
		int sv[2];
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		*x = sv[0];
		*y = sv[1];
		nonblock(*x);
		nonblock(*y);
	}
}

/* One end-to-end transfer: @len bytes from @a0 to @b1 and @len2 from @b1
 * to @a0 at the same time, through a relay between a1 and b0, all on one
 * thread (the loop turns without waiting between our own I/O). */
struct xfer {
	int fd;
	const unsigned char *out;
	size_t out_len, sent;
	unsigned char *in;
	size_t in_len, got;
	bool eof, shut;
};

static void xfer_step(struct xfer *x, bool *moved)
{
	if (x->sent < x->out_len) {
		ssize_t n = write(x->fd, x->out + x->sent, x->out_len - x->sent);
		if (n > 0) {
			x->sent += (size_t) n;
			*moved = true;
		}
	}
	if (x->sent == x->out_len && !x->shut) {
		x->shut = true;
		shutdown(x->fd, SHUT_WR); /* half-close once everything is out */
	}
	while (!x->eof) {
		unsigned char tmp[65536];
		ssize_t n = read(x->fd, tmp, sizeof(tmp));
		if (n == 0) {
			x->eof = true;
			*moved = true;
		} else if (n > 0) {
			assert_true(x->got + (size_t) n <= x->in_len);
			memcpy(x->in + x->got, tmp, (size_t) n);
			x->got += (size_t) n;
			*moved = true;
		} else {
			assert_int_equal(errno, EAGAIN);
			break;
		}
	}
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char) (seed >> 16);
	}
}

static void run_transfer(bool tcp, bool no_multishot, uint32_t pipe_size, size_t len_ab,
			 size_t len_ba)
{
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int a0, a1, b0, b1;
	make_pair(tcp, &a0, &a1);
	make_pair(tcp, &b0, &b1);
	unsigned char *ab = malloc(len_ab + 1), *ba = malloc(len_ba + 1);
	unsigned char *ab_got = malloc(len_ab + 1), *ba_got = malloc(len_ba + 1);
	assert_non_null(ab);
	assert_non_null(ba);
	assert_non_null(ab_got);
	assert_non_null(ba_got);
	fill(ab, len_ab, 1);
	fill(ba, len_ba, 2);
	struct urs_relay r;
	done_calls = 0;
	struct urs_relay_opts o = {.pipe_size = pipe_size, .no_multishot = no_multishot};
	assert_int_equal(urs_relay_start(&r, &loop, a1, b0, &o, on_done), 0);
	struct xfer xa = {.fd = a0, .out = ab, .out_len = len_ab, .in = ba_got, .in_len = len_ba};
	struct xfer xb = {.fd = b1, .out = ba, .out_len = len_ba, .in = ab_got, .in_len = len_ab};
	uint64_t deadline = now_ms() + 60000;
	while (!(xa.eof && xb.eof && done_calls)) {
		bool moved = false;
		xfer_step(&xa, &moved);
		xfer_step(&xb, &moved);
		assert_true(urs_loop_run_once(&loop, false) >= 0);
		if (!moved)
			poll(NULL, 0, 0);
		assert_true(now_ms() < deadline);
	}
	assert_int_equal(done_res, 0);
	assert_int_equal(done_calls, 1);
	assert_int_equal(xb.got, len_ab);
	assert_int_equal(xa.got, len_ba);
	assert_memory_equal(ab, ab_got, len_ab);
	assert_memory_equal(ba, ba_got, len_ba);
	assert_int_equal(r.bytes[0], len_ab);
	assert_int_equal(r.bytes[1], len_ba);
	close(a0);
	close(b1);
	free(ab);
	free(ba);
	free(ab_got);
	free(ba_got);
	urs_loop_fini(&loop);
}

static void test_socketpair_both_ways(void **state)
{
	(void) state;
	run_transfer(false, false, 0, 8u << 20, 3u << 20);
}

static void test_tcp_both_ways(void **state)
{
	(void) state;
	run_transfer(true, false, 0, 16u << 20, 16u << 20);
}

static void test_tcp_single_shot_small_pipe(void **state)
{
	(void) state;
	/* 4 KiB pipes: the pipe-full path and single-shot re-arming */
	run_transfer(true, true, 4096, 4u << 20, 1u << 20);
}

static void test_one_way_then_other(void **state)
{
	(void) state;
	/* one direction ends (EOF, half-close) long before the other starts */
	run_transfer(true, false, 0, 0, 2u << 20);
	run_transfer(false, true, 0, 1u << 20, 0);
}

/* drive the loop until @pred or a deadline */
#define TURN_UNTIL(loop, cond)                                              \
	do {                                                                \
		uint64_t dl_ = now_ms() + 10000;                            \
		while (!(cond)) {                                           \
			assert_true(urs_loop_run_once((loop), false) >= 0); \
			poll(NULL, 0, 1);                                   \
			assert_true(now_ms() < dl_);                        \
		}                                                           \
	} while (0)

static void test_reset_propagates(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int a0, a1, b0, b1;
	tcp_pair(&a0, &a1);
	tcp_pair(&b0, &b1);
	struct urs_relay r;
	done_calls = 0;
	assert_int_equal(urs_relay_start(&r, &loop, a1, b0, NULL, on_done), 0);
	/* some data first, so the relay is in its steady state */
	assert_int_equal(write(b1, "hello", 5), 5);
	char buf[16];
	ssize_t n = -1;
	TURN_UNTIL(&loop, (n = read(a0, buf, sizeof(buf))) > 0);
	assert_int_equal(n, 5);
	/* a0 aborts: a1 gets an RST; b1 must see a reset too, not an EOF */
	struct linger l = {1, 0};
	assert_int_equal(setsockopt(a0, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
	close(a0);
	TURN_UNTIL(&loop, done_calls == 1);
	assert_int_equal(done_res, -ECONNRESET);
	TURN_UNTIL(&loop, (n = read(b1, buf, sizeof(buf))) >= 0 || errno != EAGAIN);
	assert_int_equal(n, -1);
	assert_int_equal(errno, ECONNRESET);
	close(b1);
	urs_loop_fini(&loop);
}

static void test_close_cancels(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int base = count_fds();
	int a0, a1, b0, b1;
	tcp_pair(&a0, &a1);
	tcp_pair(&b0, &b1);
	struct urs_relay r;
	done_calls = 0;
	assert_int_equal(urs_relay_start(&r, &loop, a1, b0, NULL, on_done), 0);
	assert_int_equal(urs_loop_run_once(&loop, false), 0);
	urs_relay_close(&r, true);
	urs_relay_close(&r, true);	 /* idempotent */
	assert_int_equal(done_calls, 0); /* never from inside the call */
	TURN_UNTIL(&loop, done_calls == 1);
	assert_int_equal(done_res, -ECANCELED);
	char c;
	ssize_t n;
	TURN_UNTIL(&loop, (n = read(a0, &c, 1)) >= 0 || errno != EAGAIN);
	assert_int_equal(errno, ECONNRESET);
	close(a0);
	close(b1);
	assert_int_equal(count_fds(), base);
	urs_loop_fini(&loop);
}

static void test_no_fd_leak(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int base = count_fds();
	for (int i = 0; i < 200; i++) {
		int a0, a1, b0, b1;
		make_pair(i & 1, &a0, &a1);
		make_pair(i & 1, &b0, &b1);
		struct urs_relay r;
		done_calls = 0;
		assert_int_equal(urs_relay_start(&r, &loop, a1, b0, NULL, on_done), 0);
		assert_int_equal(write(a0, "x", 1), 1);
		shutdown(a0, SHUT_WR);
		shutdown(b1, SHUT_WR);
		TURN_UNTIL(&loop, done_calls == 1);
		assert_int_equal(done_res, 0);
		char c;
		assert_int_equal(read(b1, &c, 1), 1);
		assert_int_equal(read(b1, &c, 1), 0);
		assert_int_equal(read(a0, &c, 1), 0);
		close(a0);
		close(b1);
	}
	assert_int_equal(count_fds(), base);
	assert_int_equal(loop.live, 0);
	urs_loop_fini(&loop);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* as relay.h asks of its users */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_socketpair_both_ways),
		cmocka_unit_test(test_tcp_both_ways),
		cmocka_unit_test(test_tcp_single_shot_small_pipe),
		cmocka_unit_test(test_one_way_then_other),
		cmocka_unit_test(test_reset_propagates),
		cmocka_unit_test(test_close_cancels),
		cmocka_unit_test(test_no_fd_leak),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
