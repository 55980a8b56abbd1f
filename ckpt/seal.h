/*
 * ckpt/seal.h — what makes a checkpoint image authentic: HMAC-SHA256
 * (state/sha256.h) under the host's checkpoint key (ckpt/key.h).
 *
 * core.img ends with the page-chunk MACs and then the core MAC (version 5,
 * docs/checkpoint.md "Image layout"):
 *   core MAC  = HMAC(key, "ursa core v5\0" || every byte of core.img before it)
 *   chunk MAC = HMAC(key, "ursa pages v5\0" || image id || le64(i) || chunk i)
 * where chunk i is bytes [i MiB, (i+1) MiB) of the page data (the last one
 * shorter). The core MAC covers the header (image id, page-data length),
 * the records (registers, fds, mappings, credentials) and the chunk MACs;
 * each chunk MAC binds its data to its image and place, so a chunk cannot
 * be altered, swapped, moved or taken from another image. CRC32C stays for
 * telling corruption from tampering in messages; it decides nothing.
 * Chunks are what a lazy or remote restore can check one at a time.
 */
#ifndef URSA_CKPT_SEAL_H
#define URSA_CKPT_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/key.h"
#include "runtime/err.h"
#include "state/sha256.h"

#define CKPT_MAC_LEN   32u
#define CKPT_MAC_CHUNK (1u << 20) /* bytes of page data per chunk MAC */

struct ckpt_seal {
	uint8_t key[CKPT_KEY_LEN];
};

/**
 * ckpt_seal_nchunks() - the number of chunk MACs for @len bytes of page data
 * @len: bytes of page data
 *
 * Return: @len / CKPT_MAC_CHUNK, rounded up.
 */
static inline uint64_t ckpt_seal_nchunks(uint64_t len)
{
	return (len + CKPT_MAC_CHUNK - 1) / CKPT_MAC_CHUNK;
}

/**
 * ckpt_seal_core() - the core MAC
 * @s: the key
 * @p: every byte of core.img before the MAC
 * @n: their count
 * @out: the MAC
 */
void ckpt_seal_core(const struct ckpt_seal *s, const void *p, size_t n, uint8_t out[CKPT_MAC_LEN]);

/**
 * ckpt_seal_labelled() - HMAC-SHA256 under the key of @label (with its NUL)
 *                        then @p: the MAC of each of an image's files, the
 *                        label keeping one file's MAC from passing for another's
 * @s: the key
 * @label: the file's label ("ursa manifest v1", ...)
 * @p: the bytes
 * @n: their count
 * @out: the MAC
 */
void ckpt_seal_labelled(const struct ckpt_seal *s, const char *label, const void *p, size_t n,
			uint8_t out[CKPT_MAC_LEN]);

/**
 * ckpt_seal_chunk() - the MAC of one chunk of page data
 * @s: the key
 * @id: the image id
 * @index: the chunk's number (its offset / CKPT_MAC_CHUNK)
 * @p: the chunk's bytes
 * @n: their count (CKPT_MAC_CHUNK but for the last chunk)
 * @out: the MAC
 */
void ckpt_seal_chunk(const struct ckpt_seal *s, const uint8_t id[16], uint64_t index, const void *p,
		     size_t n, uint8_t out[CKPT_MAC_LEN]);

/* Chunk MACs of page data as it is written, a chunk at a time. */
struct ckpt_pagemacs {
	const struct ckpt_seal *seal; /* NULL: not started */
	uint8_t id[16];
	struct urs_hmac_sha256 h; /* the chunk in progress */
	uint64_t fill;		  /* its bytes so far */
	uint8_t (*mac)[CKPT_MAC_LEN];
	uint32_t n, cap;
};

/**
 * ckpt_pagemacs_start() - start the chunk MACs of an image's page data
 * @pm: zeroed or finished state
 * @s: the key (must outlive @pm's use)
 * @id: the image id
 */
void ckpt_pagemacs_start(struct ckpt_pagemacs *pm, const struct ckpt_seal *s, const uint8_t id[16]);

/**
 * ckpt_pagemacs_update() - account for @n more bytes of page data
 * @pm: started state
 * @p: the bytes
 * @n: their count
 *
 * Allocates only when a chunk completes and the MAC array is full (it
 * doubles: one allocation per doubling, never per page).
 *
 * Return: 0 or -ENOMEM.
 */
int ckpt_pagemacs_update(struct ckpt_pagemacs *pm, const void *p, size_t n);

/**
 * ckpt_pagemacs_finish() - close the last (short) chunk
 * @pm: started state; @pm->mac holds ckpt_seal_nchunks(bytes) MACs after it
 *
 * Return: 0 or -ENOMEM.
 */
int ckpt_pagemacs_finish(struct ckpt_pagemacs *pm);

/**
 * ckpt_pagemacs_free() - free the MAC array (if the caller has not taken it)
 *                        and forget the key
 * @pm: the state; wiped (zeroed), ready to start again
 */
void ckpt_pagemacs_free(struct ckpt_pagemacs *pm);

/**
 * ckpt_seal_check_chunk() - check one chunk of page data against its MAC
 * @s: the key
 * @id: the image id
 * @p: the page data (all of it)
 * @len: its length
 * @i: the chunk (< ckpt_seal_nchunks(@len))
 * @mac: ckpt_seal_nchunks(@len) MACs
 * @what: the message's first words ("restore", "lazy restore")
 * @err: names the chunk if it does not match
 *
 * Return: 0, or -EBADMSG for a chunk that was altered, moved or swapped.
 */
int ckpt_seal_check_chunk(const struct ckpt_seal *s, const uint8_t id[16], const uint8_t *p,
			  uint64_t len, uint64_t i, const uint8_t (*mac)[CKPT_MAC_LEN],
			  const char *what, struct urs_err *err);

/**
 * ckpt_seal_check_pages() - check page data against its chunk MACs
 * @s: the key
 * @id: the image id
 * @p: the page data
 * @len: its length
 * @mac: ckpt_seal_nchunks(@len) MACs
 * @err: names the first chunk that does not match
 *
 * Return: 0, or -EBADMSG for a chunk that was altered, moved or swapped.
 */
int ckpt_seal_check_pages(const struct ckpt_seal *s, const uint8_t id[16], const uint8_t *p,
			  uint64_t len, const uint8_t (*mac)[CKPT_MAC_LEN], struct urs_err *err);

#endif
