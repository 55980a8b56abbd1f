/*
 * tests/shim/client.h — a blocking ttrpc client for the shim's unit tests:
 * it writes request frames and reads response frames, turning the server's
 * loop (same thread) whenever it would wait, so each test runs the server
 * and its client deterministically on one thread.
 */
#ifndef URSA_TESTS_SHIM_CLIENT_H
#define URSA_TESTS_SHIM_CLIENT_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/loop.h"
#include "shim/ttrpc.h"

#define TASK_SVC "containerd.task.v2.Task"

/* turn @loop until @fd has something to read (or its peer closed) */
static inline void tc_pump(struct urs_loop *loop, int fd)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 0) > 0)
			return;
		assert_true(urs_loop_run_once(loop, true) >= 0);
	}
}

static inline void tc_send(int fd, uint32_t sid, const char *method, const ProtobufCMessage *m)
{
	size_t n = ttrpc_request_size(TASK_SVC, method, m, "default");
	uint8_t *b = malloc(n);
	assert_int_equal(ttrpc_request_put(b, sid, TASK_SVC, method, m, "default"), (long) n);
	assert_int_equal(write(fd, b, n), (ssize_t) n);
	free(b);
}

/* read @n bytes, turning the loop while the server has more to send */
static inline void tc_read(struct urs_loop *loop, int fd, void *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, (uint8_t *) b + got, n - got, MSG_DONTWAIT);
		if (r < 0 && errno == EAGAIN) {
			assert_true(urs_loop_run_once(loop, true) >= 0);
			continue;
		}
		assert_true(r > 0);
		got += (size_t) r;
	}
}

/* the next response: its stream id; *resp decoded (free with _free_unpacked) */
static inline uint32_t tc_recv(struct urs_loop *loop, int fd, Ttrpc__Response **resp)
{
	tc_pump(loop, fd);
	uint8_t h[TTRPC_HDR_LEN];
	tc_read(loop, fd, h, sizeof(h));
	struct ttrpc_hdr hd;
	assert_int_equal(ttrpc_hdr_get(h, &hd), 0);
	assert_int_equal(hd.type, TTRPC_RESPONSE);
	uint8_t *p = malloc(hd.len + 1);
	tc_read(loop, fd, p, hd.len);
	*resp = ttrpc__response__unpack(NULL, hd.len, p);
	free(p);
	assert_non_null(*resp);
	return hd.sid;
}

#endif
