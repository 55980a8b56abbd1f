/*
 * state/sha256.h — SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104) in plain
 * C: the MAC of the statefile (state/statefile.c), state/'s one MAC
 * interface.
 *
 * Why not OpenSSL: linking libcrypto.so.3 into the ursa binary costs every
 * command ~0.9 ms of dynamic relocation at exec (measured: `ursa --version`
 * 0.7 -> 1.5 ms user) and ~390 kB of Pss at boot, for a MAC over a few KiB
 * of supervisor state at checkpoint and restore. Until issue #19 the
 * statefile called libcrypto's names and the ursa binary interposed them on
 * this code (cmd/crypto_shim.c); now it calls this directly and nothing in
 * state/ links libcrypto. Tests compare this implementation with OpenSSL's
 * (tests/ckpt/test_supstate.c) and with RFC 4231's vectors
 * (tests/state/test_sha256.c).
 */
#ifndef URSA_STATE_SHA256_H
#define URSA_STATE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct urs_sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed */
	uint8_t buf[64];
	uint32_t fill;
};

/**
 * urs_sha256_init() - start a hash
 * @s: the state
 */
void urs_sha256_init(struct urs_sha256 *s);

/**
 * urs_sha256_ni() - are the x86 SHA extensions used?
 *
 * Probed with CPUID at first use (thread-safe).
 *
 * Return: true if blocks are compressed with SHA-NI.
 */
bool urs_sha256_ni(void);

/**
 * urs_sha256_use_ni() - choose the implementation
 * @on: use the SHA extensions if the CPU has them (true, the default), or
 *      never (false: the portable code, for tests and comparisons)
 */
void urs_sha256_use_ni(bool on);

/**
 * urs_sha256_update() - hash @n more bytes
 * @s: a started state
 * @p: the bytes
 * @n: their count
 */
void urs_sha256_update(struct urs_sha256 *s, const void *p, size_t n);

/**
 * urs_sha256_final() - pad and write the digest
 * @s: the state (used up: init again for another hash)
 * @out: the 32-byte digest
 */
void urs_sha256_final(struct urs_sha256 *s, uint8_t out[32]);

struct urs_hmac_sha256 {
	struct urs_sha256 in, out;
};

/**
 * urs_hmac_sha256_init() - start an HMAC-SHA256 under @key
 * @h: the state
 * @key: the key (hashed first when longer than 64 bytes)
 * @keylen: its length (0 allowed)
 *
 * The padded key copies on the stack are wiped before returning.
 */
void urs_hmac_sha256_init(struct urs_hmac_sha256 *h, const void *key, size_t keylen);

/**
 * urs_hmac_sha256_update() - MAC @n more bytes
 * @h: a started state
 * @p: the bytes
 * @n: their count
 */
void urs_hmac_sha256_update(struct urs_hmac_sha256 *h, const void *p, size_t n);

/**
 * urs_hmac_sha256_final() - write the MAC and wipe the state
 * @h: the state (zeroed: init again for another MAC)
 * @out: the 32-byte MAC
 */
void urs_hmac_sha256_final(struct urs_hmac_sha256 *h, uint8_t out[32]);

/**
 * urs_mac_equal() - compare two MACs in constant time
 * @a: one MAC
 * @b: the other
 * @len: their length in bytes
 *
 * Return: true if the @len bytes are equal; the time taken does not depend
 * on where they differ.
 */
static inline bool urs_mac_equal(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;
	for (size_t i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

#endif
