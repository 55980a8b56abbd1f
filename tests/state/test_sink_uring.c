/*
 * tests/state/test_sink_uring.c — the io_uring file sink (state/sink_uring.c):
 * a statefile of a few MiB and an encoder stream written to a temp file
 * through it must be byte-identical to the in-memory path and read back with
 * the existing reader / decoder; small buffer rings force the wait-for-a-
 * buffer path; a read-only fd (-EBADF) and /dev/full (-ENOSPC) must surface
 * from the sink and from the flush.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/loop.h"
#include "runtime/sink.h"
#include "state/statefile.h"
#include "tests/lib/skip.h"
#include "tst_types.h"

/* hooks the tst schema names */
void tst_all_saving(struct all *obj)
{
	(void) obj;
}
void tst_node_loaded(struct node *obj)
{
	obj->loaded = 1;
}
uint64_t tst_fd_save(const int *v)
{
	return (uint64_t) (int64_t) *v;
}
void tst_fd_load(int *v, uint64_t x)
{
	*v = (int) (int64_t) x;
}

struct mem {
	uint8_t *p;
	size_t len;
};

static int msink(void *ctx, const void *buf, size_t len)
{
	struct mem *m = ctx;
	m->p = realloc(m->p, m->len + len);
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

static const uint8_t KEY[32] = "0123456789abcdef0123456789abcdef";

static int tmpfile_rw(void)
{
	char path[] = "/tmp/ursa-usink-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

static uint8_t *read_fd(int fd, size_t *len)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t *p = malloc((size_t) st.st_size + 1);
	assert_int_equal(pread(fd, p, (size_t) st.st_size, 0), st.st_size);
	*len = (size_t) st.st_size;
	return p;
}

/* Write @len bytes of @data as a statefile through @sink/@ctx. */
static int write_sf(urs_sf_sink sink, void *ctx, const uint8_t *data, size_t len, int z)
{
	struct urs_sf_writer w;
	struct urs_sf_meta meta[] = {{"sandbox", "abc"}};
	int r = urs_sf_writer_open(&w, sink, ctx, KEY, sizeof(KEY), z, meta, 1);
	if (r)
		return r;
	size_t off = 0, step = 333333;
	while (off < len && !r) {
		size_t n = len - off < step ? len - off : step;
		r = urs_sf_write(&w, data + off, n);
		off += n;
	}
	int c = urs_sf_writer_close(&w);
	return r ? r : c;
}

static void test_statefile(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	size_t len = (5u << 20) + 12345;
	uint8_t *data = malloc(len);
	for (size_t j = 0; j < len; j++)
		data[j] = (uint8_t) (j % 251 < 100 ? 0 : j * 31);
	/* default ring (4 × 1 MiB), a tiny ring that wraps often, odd sizes */
	uint32_t cfg[][2] = {{0, 0}, {2, 4096}, {3, 100000}};
	for (int z = 0; z < 2; z++) {
		struct mem m = {0};
		assert_int_equal(write_sf(msink, &m, data, len, z), 0);
		for (size_t i = 0; i < 3; i++) {
			int fd = tmpfile_rw();
			struct urs_sink s;
			assert_int_equal(urs_sink_init(&s, &loop, fd, 0, cfg[i][0], cfg[i][1]), 0);
			assert_int_equal(write_sf(urs_sink_write, &s, data, len, z), 0);
			assert_int_equal(urs_sink_flush(&s), 0);
			assert_int_equal(s.written, m.len);
			urs_sink_free(&s);

			size_t flen;
			uint8_t *file = read_fd(fd, &flen);
			assert_int_equal(flen, m.len);
			assert_memory_equal(file, m.p, m.len);
			free(file);

			/* and the existing reader verifies and returns the payload */
			struct urs_sf_reader r;
			assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
			assert_int_equal(urs_sf_reader_open(&r, urs_sf_fd_source, &fd, KEY, 32), 0);
			assert_string_equal(urs_sf_meta_get(&r, "sandbox"), "abc");
			uint8_t *out;
			size_t ol;
			assert_int_equal(urs_sf_read_all(&r, &out, &ol), 0);
			assert_int_equal(ol, len);
			assert_memory_equal(out, data, len);
			free(out);
			urs_sf_reader_close(&r);
			close(fd);
		}
		free(m.p);
	}
	free(data);
	urs_loop_fini(&loop);
}

/* The encoder writing straight into the sink (its own buffer smaller than
 * the sink's), compared with the in-memory stream and decoded back. */
static void test_encoder(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	static struct node nodes[1000];
	struct all a;
	memset(&a, 0, sizeof(a));
	memset(nodes, 0, sizeof(nodes));
	for (int i = 0; i < 1000; i++) {
		nodes[i].id = (uint32_t) i * 7;
		nodes[i].next = i + 1 < 1000 ? &nodes[i + 1] : NULL;
	}
	a.head = &nodes[0];
	a.data_len = 3u << 20;
	a.data = malloc(a.data_len);
	for (uint32_t j = 0; j < a.data_len; j++)
		a.data[j] = (uint8_t) (j * 13 + (j >> 12));
	a.u64v = 42;

	struct urs_st_enc mem;
	assert_int_equal(urs_st_enc_init(&mem, 0, NULL, NULL), 0);
	assert_int_equal(tst_save_all(&mem, &a), 0);
	size_t mlen;
	const uint8_t *mbuf = urs_st_enc_data(&mem, &mlen);

	int fd = tmpfile_rw();
	struct urs_sink s;
	assert_int_equal(urs_sink_init(&s, &loop, fd, 0, 3, 256 << 10), 0);
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 64 << 10, urs_sink_write, &s), 0);
	assert_int_equal(tst_save_all(&e, &a), 0);
	assert_int_equal(urs_sink_flush(&s), 0);
	urs_st_enc_free(&e);
	urs_sink_free(&s);

	size_t flen;
	uint8_t *file = read_fd(fd, &flen);
	assert_int_equal(flen, mlen);
	assert_memory_equal(file, mbuf, mlen);

	struct urs_st_dec d;
	urs_st_dec_init(&d, NULL);
	struct all *o = NULL;
	assert_int_equal(tst_load_all(&d, file, flen, NULL, &o), 0);
	assert_int_equal(o->u64v, 42);
	assert_int_equal(o->data_len, a.data_len);
	assert_memory_equal(o->data, a.data, a.data_len);
	uint32_t n = 0;
	for (struct node *p = o->head; p; p = p->next, n++)
		assert_int_equal(p->id, n * 7);
	assert_int_equal(n, 1000);
	urs_st_dec_free(&d);
	free(file);
	urs_st_enc_free(&mem);
	free(a.data);
	close(fd);
	urs_loop_fini(&loop);
}

static void error_case(int fd, int want)
{
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	size_t len = 3u << 20;
	uint8_t *data = calloc(1, len);
	struct urs_sink s;
	assert_int_equal(urs_sink_init(&s, &loop, fd, 0, 2, 64 << 10), 0);
	/* the sink reports the error once a chunk came back with it ... */
	int r = write_sf(urs_sink_write, &s, data, len, 0);
	assert_int_equal(r, want);
	/* ... it sticks, and the flush says it too */
	assert_int_equal(urs_sink_write(&s, data, 10), want);
	assert_int_equal(urs_sink_flush(&s), want);
	assert_int_equal(s.inflight, 0);
	urs_sink_free(&s);
	free(data);
	urs_loop_fini(&loop);
}

static void test_readonly_fd(void **state)
{
	(void) state;
	int fd = tmpfile_rw();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	int ro = open(path, O_RDONLY);
	assert_true(ro >= 0);
	error_case(ro, -EBADF);
	close(ro);
	close(fd);
}

static void test_enospc(void **state)
{
	(void) state;
	int fd = open("/dev/full", O_WRONLY);
	if (fd < 0)
		URS_CM_SKIP_OR_FAIL("no /dev/full");
	error_case(fd, -ENOSPC);
	close(fd);
}

/* Flushing a small write only (less than one buffer) reaches the file. */
static void test_small(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int fd = tmpfile_rw();
	struct urs_sink s;
	assert_int_equal(urs_sink_init(&s, &loop, fd, 0, 0, 0), 0);
	assert_int_equal(urs_sink_flush(&s), 0); /* nothing to write */
	assert_int_equal(urs_sink_write(&s, "hello", 5), 0);
	assert_int_equal(urs_sink_flush(&s), 0);
	assert_int_equal(urs_sink_write(&s, " world", 6), 0);
	assert_int_equal(urs_sink_flush(&s), 0);
	urs_sink_free(&s);
	size_t flen;
	uint8_t *file = read_fd(fd, &flen);
	assert_int_equal(flen, 11);
	assert_memory_equal(file, "hello world", 11);
	free(file);
	close(fd);
	assert_int_equal(urs_sink_init(&s, &loop, fd, 0, 99, 0), -EINVAL);
	urs_loop_fini(&loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statefile),   cmocka_unit_test(test_encoder),
		cmocka_unit_test(test_readonly_fd), cmocka_unit_test(test_enospc),
		cmocka_unit_test(test_small),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
