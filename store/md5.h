/*
 * store/md5.h — MD5 (RFC 1321), for S3's Content-MD5 header only: S3
 * verifies it against the bytes it received (BadDigest), and an object's or
 * part's plain ETag is the same digest in hex. Not a security primitive.
 * Written here rather than taken from libcrypto for the same reason
 * state/sha256.c is (no libcrypto in ursa's own code; see state/sha256.h).
 */
#ifndef URSA_STORE_MD5_H
#define URSA_STORE_MD5_H

#include <stddef.h>
#include <stdint.h>

struct urs_md5 {
	uint32_t h[4];
	uint64_t len; /* bytes hashed */
	uint8_t buf[64];
	uint32_t fill;
};

/**
 * urs_md5_init() - start a digest
 * @m: the state to reset
 */
void urs_md5_init(struct urs_md5 *m);

/**
 * urs_md5_update() - hash more bytes
 * @m: the state
 * @p: the bytes
 * @n: how many
 */
void urs_md5_update(struct urs_md5 *m, const void *p, size_t n);

/**
 * urs_md5_final() - finish a digest
 * @m: the state (unusable afterwards until urs_md5_init())
 * @out: the 16-byte digest
 */
void urs_md5_final(struct urs_md5 *m, uint8_t out[16]);

/**
 * urs_md5() - MD5 of one buffer
 * @p: the bytes
 * @n: how many
 * @out: the 16-byte digest
 */
void urs_md5(const void *p, size_t n, uint8_t out[16]);

#endif
