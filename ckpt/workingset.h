/*
 * ckpt/workingset.h — the pages a lazy restore brings in before the
 * workload runs, as blocks of an image's page data (docs/checkpoint.md
 * "Working set"). Two kinds, one format:
 *
 * - the recorded working set (CKPT_WS_REC, DIR/workingset, or the object
 *   beside a remote image's index): the blocks the restored workload
 *   faulted on during its first second, recorded by the first lazy restore
 *   of the image for the next ones;
 * - the hot set (CKPT_WS_HOT, DIR/hotset, inline in a remote image's
 *   index, where it fits): written by a checkpoint that pre-copied, the
 *   blocks of the pages written while the tree was frozen (what it was
 *   writing last) and CKPT_HOT_NEXT blocks' worth of the run that follows
 *   each in its address space (where a sequential writer goes next); none
 *   past CKPT_HOT_MAX blocks. A lazy restore without a recorded
 *   working set brings these in first, and records from there.
 *
 * The file is a bitmap over CKPT_WS_BLOCK blocks of page data, bound to its
 * image and authenticated with the host's checkpoint key:
 *
 *   MAGIC | image id (16) | le64 page-data length | le32 block size
 *   | le32 blocks set | bitmap (blocks / 8, rounded up) | HMAC-SHA256 (32)
 *
 *   MAGIC = "URSAWS1\n" (recorded) or "URSAHS1\n" (hot)
 *   MAC = HMAC-SHA256(key, LABEL\0 | every byte before it), LABEL
 *         "ursa workingset v1" or "ursa hotset v1"
 *
 * One of another image (the image at that place was replaced) is stale:
 * ignored (a working set is recorded again). One that fails authentication,
 * or does not fit its image, is refused.
 */
#ifndef URSA_CKPT_WORKINGSET_H
#define URSA_CKPT_WORKINGSET_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/image.h"
#include "ckpt/seal.h"
#include "runtime/err.h"

#define CKPT_WS_FILE	  "workingset"
#define CKPT_HOT_FILE	  "hotset"
#define CKPT_WS_BLOCK	  (64u << 10) /* bytes of page data per bit */
#define CKPT_WS_HDR_LEN	  40u
#define CKPT_WS_MAX	  (1u << 20) /* a file at most: ~512 GiB of page data */
#define CKPT_WS_WINDOW_MS 1000u	     /* recorded: faults this long after the restore */
#define CKPT_HOT_NEXT	  4u	     /* hot: blocks' worth after each run written frozen */
#define CKPT_HOT_MAX	  1024u	     /* hot: blocks at most (64 MiB), else none */

/* which of the two: the file's name, magic and MAC label */
enum ckpt_ws_kind {
	CKPT_WS_REC, /* recorded by a lazy restore (CKPT_WS_FILE) */
	CKPT_WS_HOT, /* written by a checkpoint that pre-copied (CKPT_HOT_FILE) */
};

/**
 * ckpt_ws_name() - a kind's file name
 * @kind: CKPT_WS_REC or CKPT_WS_HOT
 *
 * Return: CKPT_WS_FILE or CKPT_HOT_FILE.
 */
static inline const char *ckpt_ws_name(enum ckpt_ws_kind kind)
{
	return kind == CKPT_WS_HOT ? CKPT_HOT_FILE : CKPT_WS_FILE;
}

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
 * ckpt_hot_bits() - an image's hot set
 * @img: the image, its tasks' runs and page-data length final
 * @from: where in the page data the freeze began to write
 * @bits: set here (ckpt_ws_nbytes(@img->pages_len) bytes, zeroed by the
 *        caller)
 *
 * Marks the blocks of each run whose page data lies at or after @from, and
 * the first CKPT_HOT_NEXT blocks' worth of the run that follows it in its
 * task's address space, if one begins where it ends (a task's runs are in
 * address order).
 *
 * Return: the number of blocks set.
 */
uint32_t ckpt_hot_bits(const struct ckpt_image *img, uint64_t from, uint8_t *bits);

/**
 * ckpt_ws_encode() - a working set's file
 * @kind: recorded or hot
 * @s: the host's checkpoint key
 * @id: the image id
 * @len: the image's page-data length
 * @bits: the bitmap (ckpt_ws_nbytes(@len) bytes)
 * @out: ckpt_ws_file_len(@len) bytes
 *
 * Return: the file's length, or -E2BIG when @len is past what one file
 * holds.
 */
long ckpt_ws_encode(enum ckpt_ws_kind kind, const struct ckpt_seal *s, const uint8_t id[16],
		    uint64_t len, const uint8_t *bits, uint8_t *out);

/**
 * ckpt_ws_decode() - check a working set's file (untrusted bytes)
 * @kind: the kind it must be (the other's magic and MAC are refused)
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
long ckpt_ws_decode(enum ckpt_ws_kind kind, const struct ckpt_seal *s, const uint8_t id[16],
		    uint64_t len, const uint8_t *p, size_t n, uint8_t *bits, struct urs_err *err);

/**
 * ckpt_ws_load() - read DIR/workingset or DIR/hotset, if there is one
 * @kind: which
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
long ckpt_ws_load(enum ckpt_ws_kind kind, const char *dir, const struct ckpt_seal *s,
		  const uint8_t id[16], uint64_t len, uint8_t *bits, struct urs_err *err);

/**
 * ckpt_ws_store() - write DIR/workingset or DIR/hotset (a new file, synced,
 *                   renamed over the old)
 * @kind: which
 * @dirfd: the image directory
 * @p: the file's bytes (ckpt_ws_encode)
 * @n: how many
 *
 * Return: 0 or a negative errno.
 */
int ckpt_ws_store(enum ckpt_ws_kind kind, int dirfd, const uint8_t *p, size_t n);

#endif
