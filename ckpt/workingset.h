/*
 * ckpt/workingset.h — an image's recorded working set: which blocks of its
 * page data the restored workload faulted on during its first second, kept
 * with the image (DIR/workingset, or the object beside a remote image's
 * index) so that the next lazy restore of it brings those pages in before
 * the workload runs (docs/checkpoint.md "Working set").
 *
 * The file is a bitmap over CKPT_WS_BLOCK blocks of page data, bound to its
 * image and authenticated with the host's checkpoint key:
 *
 *   "URSAWS1\n" | image id (16) | le64 page-data length | le32 block size
 *   | le32 blocks set | bitmap (blocks / 8, rounded up) | HMAC-SHA256 (32)
 *
 *   MAC = HMAC-SHA256(key, "ursa workingset v1\0" | every byte before it)
 *
 * A working set of another image (the image at that place was replaced) is
 * stale: ignored, and recorded again. One that fails authentication, or
 * does not fit its image, is refused.
 */
#ifndef URSA_CKPT_WORKINGSET_H
#define URSA_CKPT_WORKINGSET_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/seal.h"
#include "runtime/err.h"

#define CKPT_WS_FILE	  "workingset"
#define CKPT_WS_BLOCK	  (64u << 10) /* bytes of page data per bit */
#define CKPT_WS_HDR_LEN	  40u
#define CKPT_WS_MAX	  (1u << 20) /* a file at most: ~512 GiB of page data */
#define CKPT_WS_WINDOW_MS 1000u	     /* recorded: faults this long after the restore */

/**
 * ckpt_ws_nbytes() - the bitmap's size for @len bytes of page data
 * @len: bytes of page data
 *
 * Return: one bit per CKPT_WS_BLOCK, in bytes, rounded up.
 */
static inline size_t ckpt_ws_nbytes(uint64_t len)
{
	uint64_t blocks = (len + CKPT_WS_BLOCK - 1) / CKPT_WS_BLOCK;
	return (size_t) ((blocks + 7) / 8);
}

/**
 * ckpt_ws_file_len() - a working set's file length for @len bytes of page data
 * @len: bytes of page data
 *
 * Return: header, bitmap and MAC, in bytes.
 */
static inline size_t ckpt_ws_file_len(uint64_t len)
{
	return CKPT_WS_HDR_LEN + ckpt_ws_nbytes(len) + CKPT_MAC_LEN;
}

/**
 * ckpt_ws_count() - the blocks a bitmap holds
 * @bits: the bitmap
 * @len: the page-data length it covers
 *
 * Return: the number of bits set.
 */
uint32_t ckpt_ws_count(const uint8_t *bits, uint64_t len);

/**
 * ckpt_ws_encode() - a working set's file
 * @s: the host's checkpoint key
 * @id: the image id
 * @len: the image's page-data length
 * @bits: the bitmap (ckpt_ws_nbytes(@len) bytes)
 * @out: ckpt_ws_file_len(@len) bytes
 *
 * Return: the file's length, or -E2BIG when @len is past what one file
 * holds.
 */
long ckpt_ws_encode(const struct ckpt_seal *s, const uint8_t id[16], uint64_t len,
		    const uint8_t *bits, uint8_t *out);

/**
 * ckpt_ws_decode() - check a working set's file (untrusted bytes)
 * @s: the host's checkpoint key
 * @id: the image id it must be of
 * @len: the image's page-data length
 * @p: the file's bytes
 * @n: how many
 * @bits: its bitmap, on success (ckpt_ws_nbytes(@len) bytes)
 * @err: what is wrong, naming the file
 *
 * Return: the number of blocks set; -ESTALE for a working set of another
 * image; -EBADMSG for one that is malformed, does not authenticate, or
 * does not fit the image.
 */
long ckpt_ws_decode(const struct ckpt_seal *s, const uint8_t id[16], uint64_t len, const uint8_t *p,
		    size_t n, uint8_t *bits, struct urs_err *err);

/**
 * ckpt_ws_load() - read DIR/workingset, if there is one
 * @dir: the image directory
 * @s: the host's checkpoint key
 * @id: the image id it must be of
 * @len: the image's page-data length
 * @bits: its bitmap, on success (ckpt_ws_nbytes(@len) bytes)
 * @err: what is wrong, naming the file
 *
 * Return: as ckpt_ws_decode(); -ENOENT when there is none (or it is
 * stale); another negative errno when it cannot be read.
 */
long ckpt_ws_load(const char *dir, const struct ckpt_seal *s, const uint8_t id[16], uint64_t len,
		  uint8_t *bits, struct urs_err *err);

/**
 * ckpt_ws_store() - write DIR/workingset (a new file renamed over the old)
 * @dir: the image directory
 * @p: the file's bytes (ckpt_ws_encode)
 * @n: how many
 *
 * Return: 0 or a negative errno.
 */
int ckpt_ws_store(const char *dir, const uint8_t *p, size_t n);

#endif
