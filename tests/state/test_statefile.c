/*
 * tests/state/test_statefile.c — the statefile: round trip with and without
 * zstd (metadata, sizes around the 1 MiB chunk), and rejection of a wrong
 * key, a flipped byte anywhere, a truncated image and reordered chunks, each
 * before any payload byte is handed to the caller of urs_sf_read_all().
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

static struct mem make(const uint8_t *data, size_t len, int z)
{
	struct mem m = {0};
	struct urs_sf_writer w;
	struct urs_sf_meta meta[] = {{"sandbox", "abc"}, {"kernel", "6.18"}};
	assert_int_equal(urs_sf_writer_open(&w, msink, &m, KEY, sizeof(KEY), z, meta, 2), 0);
	/* odd-sized writes across chunk boundaries */
	size_t off = 0, step = 333333;
	while (off < len) {
		size_t n = len - off < step ? len - off : step;
		assert_int_equal(urs_sf_write(&w, data + off, n), 0);
		off += n;
	}
	assert_int_equal(urs_sf_writer_close(&w), 0);
	return m;
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
