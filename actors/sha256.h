/*
 * actors/sha256.h — SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104) in plain
 * C, for the ursa executable's statefile MACs (cmd/crypto_shim.c).
 *
 * Why not OpenSSL: linking libcrypto.so.3 into the ursa binary costs every
 * command ~0.9 ms of dynamic relocation at exec (measured: `ursa --version`
 * 0.7 -> 1.5 ms user), for a MAC over a few KiB of supervisor state at
 * checkpoint and restore. Tests compare this implementation with
 * OpenSSL's (tests/ckpt/test_supstate.c).
 */
#ifndef URSA_ACTORS_SHA256_H
#define URSA_ACTORS_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct urs_sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed */
	uint8_t buf[64];
	uint32_t fill;
};

void urs_sha256_init(struct urs_sha256 *s);
void urs_sha256_update(struct urs_sha256 *s, const void *p, size_t n);
void urs_sha256_final(struct urs_sha256 *s, uint8_t out[32]);

struct urs_hmac_sha256 {
	struct urs_sha256 in, out;
};

void urs_hmac_sha256_init(struct urs_hmac_sha256 *h, const void *key, size_t keylen);
void urs_hmac_sha256_update(struct urs_hmac_sha256 *h, const void *p, size_t n);
void urs_hmac_sha256_final(struct urs_hmac_sha256 *h, uint8_t out[32]);

#endif
