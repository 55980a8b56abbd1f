/*
 * tests/state/test_statefile.c — the statefile: round trip with and without
 * zstd (metadata, sizes around the 1 MiB chunk), and rejection of a wrong
 * key, a flipped byte anywhere, a truncated image and reordered chunks, each
 * before any payload byte is handed to the caller of urs_sf_read_all(); the
 * writer's compression thread: the same bytes as a single-threaded write for
 * every size and write pattern, and a failing sink with a chunk on the
 * thread ends cleanly.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "state/statefile.h"

struct mem {
	uint8_t *p;
	size_t len, off;
};

static int msink(void *ctx, const void *buf, size_t len)
{
	struct mem *m = ctx;
	m->p = realloc(m->p, m->len + len);
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

static ssize_t msrc(void *ctx, void *buf, size_t len)
{
	struct mem *m = ctx;
	size_t n = m->len - m->off < len ? m->len - m->off : len;
	memcpy(buf, m->p + m->off, n);
	m->off += n;
	return (ssize_t) n;
}

static const uint8_t KEY[32] = "0123456789abcdef0123456789abcdef";

static struct mem make_ex(const uint8_t *data, size_t len, int z, unsigned flags, size_t step)
{
	struct mem m = {0};
	struct urs_sf_writer w;
	struct urs_sf_meta meta[] = {{"sandbox", "abc"}, {"kernel", "6.18"}};
	assert_int_equal(urs_sf_writer_open_ex(&w, msink, &m, KEY, sizeof(KEY), z, meta, 2, flags),
			 0);
	if (z && (flags & URS_SF_W_THREAD))
		assert_non_null(w.par); /* the test machine has 2 CPUs */
	else
		assert_null(w.par);
	size_t off = 0;
	while (off < len) {
		size_t n = len - off < step ? len - off : step;
		assert_int_equal(urs_sf_write(&w, data + off, n), 0);
		off += n;
	}
	assert_int_equal(urs_sf_writer_close(&w), 0);
	return m;
}

/* odd-sized writes across chunk boundaries */
static struct mem make(const uint8_t *data, size_t len, int z)
{
	return make_ex(data, len, z, 0, 333333);
}

static int load(struct mem *m, const uint8_t *key, uint8_t **out, size_t *len, char *msg)
{
	struct urs_sf_reader r;
	m->off = 0;
	int rc = urs_sf_reader_open(&r, msrc, m, key, 32);
	if (!rc) {
		assert_string_equal(urs_sf_meta_get(&r, "kernel"), "6.18");
		rc = urs_sf_read_all(&r, out, len);
	}
	if (msg)
		strcpy(msg, r.msg);
	urs_sf_reader_close(&r);
	return rc;
}

/* the compression thread changes nothing in the file: byte-identical to a
 * single-threaded write, whatever the sizes and write pattern (chunks the
 * thread takes, chunks the caller builds while the thread is busy, a
 * partial last chunk either way, chunks that do not compress) */
static void test_threaded_same_bytes(void **state)
{
	(void) state;
	size_t sizes[] = {0, 5, 1u << 20, (2u << 20) + 1, (5u << 20) + 4097};
	size_t steps[] = {1u << 20, 333333, 4u << 20};
	size_t max = (5u << 20) + 4097;
	uint8_t *data = malloc(max);
	for (size_t j = 0; j < max; j++) /* compressible, with a random stretch */
		data[j] = (uint8_t) (j % 251 < 100 ? 0 : j * 31);
	uint32_t x = 12345;
	for (size_t j = (3u << 20); j < (3u << 20) + (1u << 20) + 100; j++) {
		x = x * 1103515245u + 12345u;
		data[j] = (uint8_t) (x >> 24);
	}
	int levels[] = {1, -1, 3};
	for (size_t li = 0; li < 3; li++)
		for (size_t si = 0; si < 5; si++)
			for (size_t ti = 0; ti < 3; ti++) {
				struct mem a = make_ex(data, sizes[si], levels[li], 0, steps[ti]);
				struct mem b = make_ex(data, sizes[si], levels[li], URS_SF_W_THREAD,
						       steps[ti]);
				assert_int_equal(a.len, b.len);
				assert_memory_equal(a.p, b.p, a.len);
				uint8_t *out;
				size_t ol;
				assert_int_equal(load(&b, KEY, &out, &ol, NULL), 0);
				assert_int_equal(ol, sizes[si]);
				assert_memory_equal(out, data, ol);
				free(out);
				free(a.p);
				free(b.p);
			}
	free(data);
}

static int fail_after;

static int fsink(void *ctx, const void *buf, size_t len)
{
	if (fail_after-- <= 0)
		return -ENOSPC;
	return msink(ctx, buf, len);
}

/* a sink that fails while a chunk is on the thread: the error comes back
 * and close() still ends the thread (ASan: nothing leaks) */
static void test_threaded_sink_error(void **state)
{
	(void) state;
	size_t len = 6u << 20;
	uint8_t *data = calloc(1, len);
	for (int after = 0; after < 5; after++) {
		struct mem m = {0};
		struct urs_sf_writer w;
		fail_after = after;
		assert_int_equal(urs_sf_writer_open_ex(&w, fsink, &m, KEY, sizeof(KEY), 1, NULL, 0,
						       URS_SF_W_THREAD),
				 after == 0 ? -ENOSPC : 0);
		if (after == 0)
			continue;
		int r = 0;
		for (size_t off = 0; off < len && !r; off += 1u << 20)
			r = urs_sf_write(&w, data + off, 1u << 20);
		int c = urs_sf_writer_close(&w);
		assert_int_equal(r ? r : c, -ENOSPC);
		free(m.p);
	}
	free(data);
}

static void test_roundtrip(void **state)
{
	(void) state;
	size_t sizes[] = {0, 1, (1u << 20) - 1, 1u << 20, (3u << 20) + 17};
	for (int z = 0; z < 2; z++) {
		for (size_t i = 0; i < 5; i++) {
			size_t len = sizes[i];
			uint8_t *data = malloc(len + 1);
			for (size_t j = 0; j < len; j++)
				data[j] = (uint8_t) (j % 251 < 100 ? 0 : j * 31);
			struct mem m = make(data, len, z);
			uint8_t *out;
			size_t ol;
			assert_int_equal(load(&m, KEY, &out, &ol, NULL), 0);
			assert_int_equal(ol, len);
			assert_memory_equal(out, data, len);
			free(out);
			free(m.p);
			free(data);
		}
	}
}

static void test_tamper(void **state)
{
	(void) state;
	size_t len = (2u << 20) + 5000;
	uint8_t *data = malloc(len);
	for (size_t j = 0; j < len; j++)
		data[j] = (uint8_t) (j * 7);
	for (int z = 0; z < 2; z++) {
		struct mem m = make(data, len, z);
		uint8_t *out;
		size_t ol;
		char msg[200];
		uint8_t bad[32];
		memcpy(bad, KEY, 32);
		bad[0] ^= 1;
		assert_int_equal(load(&m, bad, &out, &ol, msg), -EBADMSG);
		assert_non_null(strstr(msg, "MAC"));
		/* flipped bytes: header, metadata, chunk headers, payload, MACs */
		for (size_t pos = 0; pos < m.len; pos += m.len / 97 + 1) {
			m.p[pos] ^= 0x40;
			assert_true(load(&m, KEY, &out, &ol, msg) < 0);
			assert_true(msg[0] != 0);
			m.p[pos] ^= 0x40;
		}
		/* truncated at many points */
		size_t full = m.len;
		for (size_t cut = 0; cut < full; cut += full / 31 + 1) {
			m.len = cut;
			assert_int_equal(load(&m, KEY, &out, &ol, msg), -EBADMSG);
		}
		m.len = full - 1;
		assert_int_equal(load(&m, KEY, &out, &ol, msg), -EBADMSG);
		m.len = full;
		assert_int_equal(load(&m, KEY, &out, &ol, NULL), 0);
		free(out);
		free(m.p);
	}
	/* reordered: swap the first two (equal-size, uncompressed) chunks */
	struct mem m = make(data, len, 0);
	size_t hdr = 16 + 4 + 4 + 7 + 4 + 3 + 4 + 6 + 4 + 4 + 32, csz = 12 + (1u << 20) + 32;
	uint8_t *tmp = malloc(csz);
	memcpy(tmp, m.p + hdr, csz);
	memmove(m.p + hdr, m.p + hdr + csz, csz);
	memcpy(m.p + hdr + csz, tmp, csz);
	uint8_t *out;
	size_t ol;
	char msg[200];
	assert_int_equal(load(&m, KEY, &out, &ol, msg), -EBADMSG);
	assert_non_null(strstr(msg, "chunk 0"));
	free(tmp);
	free(m.p);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_tamper),
		cmocka_unit_test(test_threaded_same_bytes),
		cmocka_unit_test(test_threaded_sink_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
