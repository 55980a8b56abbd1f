/*
 * tests/state/test_sha256.c — state/sha256.c against published vectors:
 * SHA-256 of "abc", "" and the two-block message (FIPS 180-4 examples), a
 * million 'a's fed in uneven pieces, HMAC-SHA256 of RFC 4231's test cases
 * 1-4, 6 and 7 (keys shorter and longer than a block), and urs_mac_equal();
 * every vector through the portable code and through the SHA extensions
 * (state/sha256_ni.c, where the CPU has them), and the two agree on
 * random data of every length up to 300 bytes and on 1 MiB in odd pieces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "state/sha256.h"
#include "tests/lib/skip.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void assert_sha(const void *msg, size_t n, const char *want)
{
	struct urs_sha256 s;
	uint8_t d[32];
	char got[65];
	urs_sha256_init(&s);
	urs_sha256_update(&s, msg, n);
	urs_sha256_final(&s, d);
	hex(d, 32, got);
	assert_string_equal(got, want);
}

static void test_sha256(void **state)
{
	(void) state;
	assert_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	assert_sha(two, strlen(two),
		   "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	struct urs_sha256 s;
	uint8_t a[997], d[32];
	char got[65];
	memset(a, 'a', sizeof(a));
	urs_sha256_init(&s);
	for (size_t left = 1000000, k = 1; left; k = k % 997 + 1) { /* uneven pieces */
		size_t n = k < left ? k : left;
		urs_sha256_update(&s, a, n);
		left -= n;
	}
	urs_sha256_final(&s, d);
	hex(d, 32, got);
	assert_string_equal(got,
			    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = strlen(h) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (uint8_t) v;
	}
	return n;
}

static void assert_hmac(const char *key_hex, const void *msg, size_t n, const char *want)
{
	uint8_t key[256], d[32];
	char got[65];
	size_t kl = unhex(key_hex, key);
	struct urs_hmac_sha256 h;
	urs_hmac_sha256_init(&h, key, kl);
	urs_hmac_sha256_update(&h, msg, n);
	urs_hmac_sha256_final(&h, d);
	hex(d, 32, got);
	assert_string_equal(got, want);
}

static void test_hmac_rfc4231(void **state)
{
	(void) state;
	uint8_t m[64], k131[131];
	char k131h[263];
	assert_hmac("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "Hi There", 8,
		    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	assert_hmac("4a656665", "what do ya want for nothing?", 28,
		    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(m, 0xdd, 50);
	assert_hmac("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", m, 50,
		    "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	memset(m, 0xcd, 50);
	assert_hmac("0102030405060708090a0b0c0d0e0f10111213141516171819", m, 50,
		    "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	memset(k131, 0xaa, sizeof(k131));
	hex(k131, sizeof(k131), k131h);
	const char *c6 = "Test Using Larger Than Block-Size Key - Hash Key First";
	assert_hmac(k131h, c6, strlen(c6),
		    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	const char *c7 = "This is a test using a larger than block-size key and a larger "
			 "than block-size data. The key needs to be hashed before being "
			 "used by the HMAC algorithm.";
	assert_hmac(k131h, c7, strlen(c7),
		    "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

static void test_mac_equal(void **state)
{
	(void) state;
	uint8_t a[32], b[32];
	memset(a, 7, sizeof(a));
	memcpy(b, a, sizeof(b));
	assert_true(urs_mac_equal(a, b, 32));
	for (int i = 0; i < 32; i += 31) {
		b[i] ^= 0x80;
		assert_false(urs_mac_equal(a, b, 32));
		b[i] ^= 0x80;
	}
	assert_true(urs_mac_equal(a, b, 0));
}

static void digest(const uint8_t *p, size_t n, size_t piece, uint8_t out[32])
{
	struct urs_sha256 s;
	urs_sha256_init(&s);
	for (size_t off = 0; off < n; off += piece)
		urs_sha256_update(&s, p + off, n - off < piece ? n - off : piece);
	urs_sha256_final(&s, out);
}

static void test_ni_agrees(void **state)
{
	(void) state;
	urs_sha256_use_ni(true);
	if (!urs_sha256_ni())
		URS_CM_SKIP("this CPU has no SHA extensions (the portable code is tested)");
	static uint8_t data[1 << 20];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t) ((x = x * 1103515245u + 12345u) >> 16);
	uint8_t a[32], b[32];
	for (size_t n = 0; n <= 300; n++) {
		urs_sha256_use_ni(true);
		digest(data, n, 7, a);
		urs_sha256_use_ni(false);
		digest(data, n, 64, b);
		assert_memory_equal(a, b, 32);
	}
	urs_sha256_use_ni(true);
	digest(data, sizeof(data), 4093, a);
	urs_sha256_use_ni(false);
	digest(data, sizeof(data), 65536, b);
	assert_memory_equal(a, b, 32);
	urs_sha256_use_ni(true);
}

static int portable(void **state)
{
	(void) state;
	urs_sha256_use_ni(false);
	return 0;
}

static int native(void **state)
{
	(void) state;
	urs_sha256_use_ni(true);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_sha256, portable),
		cmocka_unit_test_setup(test_hmac_rfc4231, portable),
		cmocka_unit_test_setup(test_sha256, native),
		cmocka_unit_test_setup(test_hmac_rfc4231, native),
		cmocka_unit_test(test_mac_equal),
		cmocka_unit_test(test_ni_agrees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
