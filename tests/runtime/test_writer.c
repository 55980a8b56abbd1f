/*
 * tests/runtime/test_writer.c — batched writes: a file written in many chunks
 * and verified byte for byte, many writes per io_uring_enter, backpressure
 * with on_ready, ordered writes to a pipe, short writes continued (RLIMIT_FSIZE)
 * and the sticky first error.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "runtime/writer.h"

#define CHUNK	(64u << 10)
#define NCHUNKS 256u
#define SLOTS	32u

struct prod {
	struct urs_writer w;
	struct urs_wchunk c[SLOTS];
	unsigned char *data;
	uint32_t queued, done, eagain;
	int last_err;
	uint32_t total;
};

static struct prod P;

static void pump(struct urs_writer *w);

static void done_cb(struct urs_writer *w, struct urs_wchunk *c, int res)
{
	(void) c;
	if (res < 0)
		P.last_err = res;
	else
		assert_int_equal(res, CHUNK);
	P.done++;
	/* no refill here: the producer refills in bulk from on_ready (the low
	 * watermark), which is what lets one io_uring_enter carry many writes */
	if (P.queued < P.total && !w->want_ready)
		pump(w);
}

static void pump(struct urs_writer *w)
{
	while (P.queued < P.total) {
		struct urs_wchunk *c = NULL;
		for (unsigned i = 0; i < SLOTS && !c; i++)
			if (!urs_wchunk_busy(&P.c[i]))
				c = &P.c[i];
		if (!c)
			return;
		int r = urs_writer_write(w, c, P.data + (size_t) P.queued * CHUNK, CHUNK, done_cb);
		if (r == -EAGAIN) {
			P.eagain++;
			return;
		}
		if (r < 0) {
			P.last_err = r;
			return;
		}
		P.queued++;
	}
}

static void fill(unsigned char *d, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		d[i] = (unsigned char) x;
	}
}

static void test_file_verified(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	memset(&P, 0, sizeof(P));
	P.total = NCHUNKS;
	P.data = malloc((size_t) NCHUNKS * CHUNK);
	fill(P.data, (size_t) NCHUNKS * CHUNK, 7);
	char path[] = "/tmp/ursa-writer-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	assert_true(fd >= 0);
	unlink(path);
	/* 1 MiB in flight at most: 16 chunks, so backpressure must happen */
	assert_int_equal(urs_writer_init(&P.w, &loop, fd, 4096, 1u << 20, SLOTS, pump), 0);
	pump(&P.w);
	assert_true(P.eagain > 0);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(P.done, NCHUNKS);
	assert_int_equal(P.last_err, 0);
	assert_int_equal(urs_writer_error(&P.w), 0);
	assert_true(urs_writer_idle(&P.w));
	assert_int_equal(P.w.bytes_done, (uint64_t) NCHUNKS * CHUNK);
	/* batching: the writes queued in a turn share one io_uring_enter */
	assert_true(loop.stats.sqes >= NCHUNKS);
	assert_true(loop.stats.batches * 4 <= loop.stats.sqes);

	/* byte for byte, at the starting offset */
	unsigned char *back = malloc((size_t) NCHUNKS * CHUNK);
	assert_int_equal(pread(fd, back, (size_t) NCHUNKS * CHUNK, 4096),
			 (ssize_t) NCHUNKS * CHUNK);
	assert_memory_equal(back, P.data, (size_t) NCHUNKS * CHUNK);
	char head[4096], zero[4096] = {0};
	assert_int_equal(pread(fd, head, sizeof(head), 0), (ssize_t) sizeof(head));
	assert_memory_equal(head, zero, sizeof(head));
	free(back);
	free(P.data);
	close(fd);
	urs_loop_fini(&loop);
}

struct drain {
	int fd;
	unsigned char *out;
	size_t got;
};

static void *drainer(void *arg)
{
	struct drain *d = arg;
	ssize_t n;
	while ((n = read(d->fd, d->out + d->got, 1 << 16)) > 0)
		d->got += (size_t) n;
	return NULL;
}

static void test_pipe_ordered(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	memset(&P, 0, sizeof(P));
	P.total = 64;
	P.data = malloc((size_t) P.total * CHUNK);
	fill(P.data, (size_t) P.total * CHUNK, 11);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct drain d = {.fd = p[0], .out = malloc((size_t) P.total * CHUNK + (1 << 16))};
	pthread_t t;
	pthread_create(&t, NULL, drainer, &d);
	assert_int_equal(urs_writer_init(&P.w, &loop, p[1], 0, 8u << 20, SLOTS, pump), 0);
	assert_false(P.w.seekable);
	pump(&P.w);
	assert_int_equal(urs_loop_run(&loop), 0);
	close(p[1]);
	pthread_join(t, NULL);
	close(p[0]);
	assert_int_equal(P.done, P.total);
	assert_int_equal(d.got, (size_t) P.total * CHUNK);
	assert_memory_equal(d.out, P.data, d.got); /* in order */
	free(d.out);
	free(P.data);
	urs_loop_fini(&loop);
}

/* RLIMIT_FSIZE cuts the second chunk short: the writer continues it, then the
 * kernel refuses with EFBIG, which sticks for everything after. */
static void test_short_write_then_error(void **state)
{
	(void) state;
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = CHUNK + CHUNK / 2;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);

	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	memset(&P, 0, sizeof(P));
	P.total = 4;
	P.data = calloc(P.total, CHUNK);
	char path[] = "/tmp/ursa-writer-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	unlink(path);
	/* one chunk in flight at a time: the error order is deterministic */
	assert_int_equal(urs_writer_init(&P.w, &loop, fd, 0, CHUNK, 1, pump), 0);
	pump(&P.w);
	assert_int_equal(urs_loop_run(&loop), 0);
	setrlimit(RLIMIT_FSIZE, &old);
	assert_int_equal(urs_writer_error(&P.w), -EFBIG);
	assert_int_equal(P.last_err, -EFBIG);
	assert_int_equal(P.w.bytes_done, CHUNK);
	struct stat st;
	fstat(fd, &st);
	assert_int_equal(st.st_size, CHUNK + CHUNK / 2); /* the short part landed */
	struct urs_wchunk extra;
	assert_int_equal(urs_writer_write(&P.w, &extra, P.data, 10, done_cb), -EFBIG);
	close(fd);
	free(P.data);
	urs_loop_fini(&loop);
}

static void test_bad_fd(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_writer w;
	assert_int_equal(urs_writer_init(&w, &loop, -1, 0, 0, 0, NULL), -EBADF);
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	memset(&P, 0, sizeof(P));
	P.total = 3;
	P.data = calloc(P.total, CHUNK);
	assert_int_equal(urs_writer_init(&P.w, &loop, fd, 0, 0, 0, pump), 0);
	pump(&P.w);
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(urs_writer_error(&P.w), -EBADF);
	assert_int_equal(P.w.bytes_done, 0);
	close(fd);
	free(P.data);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_verified),
		cmocka_unit_test(test_pipe_ordered),
		cmocka_unit_test(test_short_write_then_error),
		cmocka_unit_test(test_bad_fd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
