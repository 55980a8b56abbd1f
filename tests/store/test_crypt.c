/*
 * tests/store/test_crypt.c — sealed objects (store/crypt.c) and the remote
 * image's index (store/remote.c): a chunk opens only as what it was sealed
 * as — its image, key, object, place and last flag — and the header and
 * index parsers refuse what is not theirs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/crypt.h"
#include "store/remote.h"

static const uint8_t master[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

static struct urs_crypt *ctx_at(const uint8_t *key, uint8_t idbyte, const char *place)
{
	uint8_t id[URS_CRYPT_ID_LEN];
	memset(id, idbyte, sizeof(id));
	struct urs_crypt *c = NULL;
	struct urs_err err = {{0}};
	assert_int_equal(urs_crypt_new(key, id, place, &c, &err), 0);
	return c;
}

static struct urs_crypt *ctx(const uint8_t *key, uint8_t idbyte)
{
	return ctx_at(key, idbyte, "tenant-a/img");
}

static void roundtrip_and_refusals(void **state)
{
	(void) state;
	struct urs_crypt *c = ctx(master, 7);
	static uint8_t plain[URS_CRYPT_CHUNK], sealed[URS_CRYPT_STRIDE], out[URS_CRYPT_CHUNK];
	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t) (i * 31 + 7);
	assert_int_equal(urs_crypt_seal(c, 3, 5, false, plain, sizeof(plain), sealed), 0);
	/* the ciphertext does not show the plaintext */
	assert_true(memcmp(sealed, plain, 4096) != 0);
	assert_int_equal(urs_crypt_open(c, 3, 5, false, sealed, sizeof(plain), out), 0);
	assert_memory_equal(out, plain, sizeof(plain));
	/* another object, place or last flag */
	assert_int_equal(urs_crypt_open(c, 4, 5, false, sealed, sizeof(plain), out), -EBADMSG);
	assert_int_equal(urs_crypt_open(c, 3, 6, false, sealed, sizeof(plain), out), -EBADMSG);
	assert_int_equal(urs_crypt_open(c, 3, 5, true, sealed, sizeof(plain), out), -EBADMSG);
	/* one bit of ciphertext or tag */
	sealed[1000] ^= 1;
	assert_int_equal(urs_crypt_open(c, 3, 5, false, sealed, sizeof(plain), out), -EBADMSG);
	sealed[1000] ^= 1;
	sealed[URS_CRYPT_CHUNK + 3] ^= 0x80;
	assert_int_equal(urs_crypt_open(c, 3, 5, false, sealed, sizeof(plain), out), -EBADMSG);
	sealed[URS_CRYPT_CHUNK + 3] ^= 0x80;
	/* another image (id) under the same host key, and another host key */
	struct urs_crypt *other = ctx(master, 8);
	assert_int_equal(urs_crypt_open(other, 3, 5, false, sealed, sizeof(plain), out), -EBADMSG);
	uint8_t k2[32] = {9};
	struct urs_crypt *wrong = ctx(k2, 7);
	assert_int_equal(urs_crypt_open(wrong, 3, 5, false, sealed, sizeof(plain), out), -EBADMSG);
	/* the same image and key under another prefix (copied there) */
	struct urs_crypt *moved = ctx_at(master, 7, "tenant-b/img");
	assert_int_equal(urs_crypt_open(moved, 3, 5, false, sealed, sizeof(plain), out), -EBADMSG);
	urs_crypt_free(moved);
	/* in place, and the empty last chunk */
	memcpy(out, plain, 100);
	assert_int_equal(urs_crypt_seal(c, 1, 0, true, out, 100, out), 0);
	assert_int_equal(urs_crypt_open(c, 1, 0, true, out, 100, out), 0);
	assert_memory_equal(out, plain, 100);
	assert_int_equal(urs_crypt_seal(c, 1, 2, true, NULL, 0, sealed), 0);
	assert_int_equal(urs_crypt_open(c, 1, 2, true, sealed, 0, out), 0);
	assert_int_equal(urs_crypt_open(c, 1, 2, false, sealed, 0, out), -EBADMSG);
	urs_crypt_free(c);
	urs_crypt_free(other);
	urs_crypt_free(wrong);
}

static void header(void **state)
{
	(void) state;
	struct urs_crypt *c = ctx(master, 0x42);
	uint8_t h[URS_CRYPT_HDR_LEN];
	struct urs_crypt_hdr d;
	struct urs_err err = {{0}};
	urs_crypt_hdr_write(c, 17, h);
	assert_int_equal(urs_crypt_hdr_parse(h, sizeof(h), "tenant-a/img", &d, &err), 0);
	assert_int_equal(urs_crypt_hdr_parse(h, sizeof(h), NULL, &d, &err), 0);
	assert_int_equal(d.obj, 17);
	assert_int_equal(d.id[31], 0x42);
	assert_int_equal(urs_crypt_hdr_parse(h, sizeof(h) - 1, NULL, &d, &err), -EBADMSG);
	/* found under another prefix: said so before any chunk is tried */
	assert_int_equal(urs_crypt_hdr_parse(h, sizeof(h), "tenant-b/img", &d, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "another place"));
	h[60] ^= 1;
	assert_int_equal(urs_crypt_hdr_parse(h, sizeof(h), "tenant-a/img", &d, &err), -EBADMSG);
	h[60] ^= 1;
	h[8] = 1; /* an older version (not bound to its place) is named */
	assert_int_equal(urs_crypt_hdr_parse(h, sizeof(h), NULL, &d, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "version 1"));
	h[8] = 2;
	/* sizes: header + plaintext + a tag per chunk (an empty object: one chunk) */
	assert_int_equal(urs_crypt_sealed_len(0), URS_CRYPT_HDR_LEN + URS_CRYPT_TAG_LEN);
	assert_int_equal(urs_crypt_sealed_len(URS_CRYPT_CHUNK),
			 URS_CRYPT_HDR_LEN + URS_CRYPT_STRIDE);
	assert_int_equal(urs_crypt_sealed_len(URS_CRYPT_CHUNK + 1),
			 URS_CRYPT_HDR_LEN + URS_CRYPT_CHUNK + 1 + 2 * URS_CRYPT_TAG_LEN);
	urs_crypt_free(c);
}

struct seen {
	int n;
	char files[4][64];
	uint64_t off[4], len[4];
	char data[4][16]; /* an inline entry's bytes ("" for an object) */
};

static int visit(void *arg, uint32_t obj, uint64_t off, uint64_t len, const char *file,
		 const void *data)
{
	struct seen *s = arg;
	if (s->n == 4)
		return -E2BIG;
	if (!obj != !!data || (data && len >= sizeof(s->data[0])))
		return -EPROTO; /* data for the inline ones, only they */
	snprintf(s->files[s->n], sizeof(s->files[0]), "%s", file);
	if (data)
		memcpy(s->data[s->n], data, len);
	s->off[s->n] = off;
	s->len[s->n++] = len;
	return 0;
}

static int parse_n(const char *text, size_t n, struct seen *s)
{
	struct urs_err err = {{0}};
	memset(s, 0, sizeof(*s));
	return urs_remote_index_parse(text, n, visit, s, &err);
}

static int parse(const char *text, struct seen *s)
{
	return parse_n(text, strlen(text), s);
}

static void index_text(void **state)
{
	(void) state;
	struct seen s;
	/* version 1: objects only (images written before version 2) */
	assert_int_equal(parse("ursa-index 1\n1 4096 8192 pages.img\n2 0 4096 pages.img\n"
			       "3 0 10 container/state.json\n",
			       &s),
			 3);
	assert_string_equal(s.files[2], "container/state.json");
	assert_int_equal(s.off[0], 4096);
	assert_int_equal(s.len[1], 4096);
	assert_int_equal(parse("ursa-index 1\n", &s), 0);
	/* version 2: inline files (object 0) after the empty line, in order;
	 * the object numbers count every line */
	assert_int_equal(parse("ursa-index 2\n0 0 3 core.img\n2 4096 8192 pages.img\n"
			       "0 5 4 a/b\n\nxyzabcd",
			       &s),
			 3);
	assert_string_equal(s.data[0], "xyz");
	assert_string_equal(s.data[1], "");
	assert_string_equal(s.data[2], "abcd");
	assert_int_equal(s.off[2], 5);
	assert_string_equal(s.files[2], "a/b");
	static const char bin[] = "ursa-index 2\n0 0 2 z\n\n\0\n"; /* any bytes */
	assert_int_equal(parse_n(bin, sizeof(bin) - 1, &s), 1);
	assert_int_equal(s.len[0], 2);
	assert_int_equal(parse("ursa-index 2\n\n", &s), 0);
	static const char *const bad[] = {
		"ursa-index 3\n",
		"ursa-index 2\n",			     /* no end of the lines */
		"ursa-index 2\n1 0 1 a\n",		     /* ditto */
		"ursa-index 2\n0 0 3 a\n\nxy",		     /* fewer inline bytes */
		"ursa-index 2\n0 0 3 a\n\nxyzw",	     /* more */
		"ursa-index 2\n\nx",			     /* bytes no line names */
		"ursa-index 2\n0 0 2 a\n1 0 1 b\n\nxy",	     /* the second line is 2 */
		"ursa-index 2\n0 0 99999 a\n\nxy",	     /* longer than the index */
		"ursa-index 1\n0 0 1 a\n",		     /* no inline file in 1 */
		"ursa-index 1\n1 0 1 a\n\n",		     /* no empty line in 1 */
		"ursa-index 1\n2 0 1 a\n",		     /* numbers in order from 1 */
		"ursa-index 1\n1 0 1 ../etc/passwd\n",	     /* no way out */
		"ursa-index 2\n0 0 1 ../etc/passwd\n\nx",    /* inline neither */
		"ursa-index 1\n1 0 1 /etc/passwd\n",	     /* relative */
		"ursa-index 1\n1 0 1 a//b\n",		     /* no empty component */
		"ursa-index 1\n1 0 1 a b\n",		     /* one name */
		"ursa-index 1\n1 0 1 a",		     /* unterminated */
		"ursa-index 1\n1 -1 1 a\n",		     /* unsigned */
		"ursa-index 1\n1 9223372036854775807 1 a\n", /* past the largest file */
		"ursa-index 1\n 1 0 1 a\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(bad[i], &s);
		if (r != -EBADMSG)
			fail_msg("index %zu parsed (%d): %s", i, r, bad[i]);
	}
	assert_true(urs_remote_file_ok("tmpfs-1.img"));
	assert_false(urs_remote_file_ok("a/./b"));
	assert_false(urs_remote_file_ok("a/b/"));
	assert_false(urs_remote_file_ok("a\nb"));
	assert_false(urs_remote_file_ok(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roundtrip_and_refusals),
		cmocka_unit_test(header),
		cmocka_unit_test(index_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
