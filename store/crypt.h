/*
 * store/crypt.h — sealed objects: how every byte of a checkpoint image is
 * encrypted and authenticated before it leaves the host (docs/storage.md,
 * "Sealed objects").
 *
 * An object is a 64-byte header and then chunks of URS_CRYPT_CHUNK bytes of
 * plaintext (the last one shorter, possibly empty), each sealed with
 * AES-256-GCM and followed by its 16-byte tag:
 *
 *   header = "URSAOBJ1" | le32 version (2) | le32 chunk size | image id (32)
 *            | le32 object number | place (12)
 *   place  = the first 12 bytes of SHA-256(the image's key prefix)
 *   key    = HKDF-SHA256(ikm = the host's checkpoint key, salt = image id,
 *                        info = "ursa object key v2" NUL the key prefix)
 *   nonce  = le32 object number | le64 chunk index
 *   aad    = header | le64 chunk index | u8 last
 *
 * The image id is 32 random bytes per checkpoint, so each image has its own
 * key and a (object, chunk) pair never repeats a nonce under it. The header
 * in the AAD binds every chunk to its image and its object; the index and
 * the last flag bind it to its place: a chunk moved, swapped between
 * objects or images, dropped from the end or followed by another fails to
 * open. The key prefix in the key binds an image to where it was put: one
 * copied or moved under another prefix (another tenant's image of the same
 * host put in place of this one) does not open; the place in the header
 * only lets a reader say so before trying. AES-GCM from libcrypto: hardware AES and carry-less
 * multiply on every x86-64 and arm64 server this runs on (~4 GB/s a core here), in the short-lived
 * process that moves images (ursa-store), never in the supervisor. docs/storage.md says why not
 * ChaCha20-Poly1305.
 */
#ifndef URSA_STORE_CRYPT_H
#define URSA_STORE_CRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/err.h"

#define URS_CRYPT_KEY_LEN   32u
#define URS_CRYPT_ID_LEN    32u
#define URS_CRYPT_HDR_LEN   64u
#define URS_CRYPT_TAG_LEN   16u
#define URS_CRYPT_PLACE_LEN 12u
#define URS_CRYPT_CHUNK	    (1u << 20) /* plaintext bytes per sealed chunk */
#define URS_CRYPT_STRIDE    (URS_CRYPT_CHUNK + URS_CRYPT_TAG_LEN)

/**
 * struct urs_crypt_hdr - an object's header, decoded
 * @id: the image id
 * @obj: the object's number within its image
 */
struct urs_crypt_hdr {
	uint8_t id[URS_CRYPT_ID_LEN];
	uint32_t obj;
};

struct urs_crypt; /* one image's key, ready to seal and open chunks */

/**
 * urs_crypt_new() - derive an image's key from the host's key
 * @master: the host's checkpoint key
 * @id: the image id
 * @place: the image's key prefix in its bucket, without a trailing '/' (the
 *         bucket is not bound: a bucket replicated or copied whole keeps
 *         its images)
 * @out: the context (urs_crypt_free)
 * @err: why it failed
 *
 * Return: 0 or -ENOMEM (libcrypto refused a context).
 */
int urs_crypt_new(const uint8_t master[URS_CRYPT_KEY_LEN], const uint8_t id[URS_CRYPT_ID_LEN],
		  const char *place, struct urs_crypt **out, struct urs_err *err);

/**
 * urs_crypt_free() - wipe and release a context
 * @c: the context, or NULL
 */
void urs_crypt_free(struct urs_crypt *c);

/**
 * urs_crypt_hdr_write() - an object's header
 * @c: the image's context (its id goes in)
 * @obj: the object's number
 * @out: URS_CRYPT_HDR_LEN bytes
 */
void urs_crypt_hdr_write(const struct urs_crypt *c, uint32_t obj, uint8_t out[URS_CRYPT_HDR_LEN]);

/**
 * urs_crypt_hdr_parse() - decode an object's header (untrusted bytes)
 * @p: the bytes
 * @n: how many
 * @place: the key prefix the reader found the object under, or NULL: not
 *         compared
 * @h: filled
 * @err: what is wrong
 *
 * Checks the magic, the version, the chunk size and the place; the header
 * is authenticated later, with the first chunk (the place through the key).
 *
 * Return: 0 or -EBADMSG.
 */
int urs_crypt_hdr_parse(const void *p, size_t n, const char *place, struct urs_crypt_hdr *h,
			struct urs_err *err);

/**
 * urs_crypt_sealed_len() - an object's size for @plain bytes of plaintext
 * @plain: the plaintext's length
 *
 * Return: header + chunks + tags (an empty object is one empty chunk).
 */
uint64_t urs_crypt_sealed_len(uint64_t plain);

/**
 * urs_crypt_seal() - seal one chunk
 * @c: the image's context
 * @obj: the object's number
 * @idx: the chunk's index in the object
 * @last: this is the object's last chunk
 * @in: the plaintext, at most URS_CRYPT_CHUNK bytes (all but the last
 *      chunk exactly that)
 * @n: its length
 * @out: @n + URS_CRYPT_TAG_LEN bytes: ciphertext then tag (may be @in)
 *
 * Return: 0 or -EIO (libcrypto failed).
 */
int urs_crypt_seal(struct urs_crypt *c, uint32_t obj, uint64_t idx, bool last, const void *in,
		   size_t n, uint8_t *out);

/**
 * urs_crypt_open() - authenticate and decrypt one chunk
 * @c: the image's context
 * @obj: the object number the reader expects (from the index)
 * @idx: the chunk's index
 * @last: whether the reader expects it to be the last
 * @in: ciphertext then tag, @n + URS_CRYPT_TAG_LEN bytes
 * @n: the plaintext's length
 * @out: @n bytes (may be @in)
 *
 * After a failure @out holds garbage: the caller discards it.
 *
 * Return: 0, or -EBADMSG: not this image's, object's or place's chunk, or
 * altered, or sealed under another key.
 */
int urs_crypt_open(struct urs_crypt *c, uint32_t obj, uint64_t idx, bool last, const uint8_t *in,
		   size_t n, uint8_t *out);

/**
 * urs_crypt_random_id() - a fresh image id
 * @id: filled from getrandom(2)
 *
 * Return: 0 or -EIO.
 */
int urs_crypt_random_id(uint8_t id[URS_CRYPT_ID_LEN]);

#endif
