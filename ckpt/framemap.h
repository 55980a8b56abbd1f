/*
 * ckpt/framemap.h — page data stored once per page frame: a page that
 * several processes of the tree map (a fork's children share their
 * parent's memory copy-on-write until they write) is written to pages.img
 * once, and every process's runs point at that copy.
 *
 * The frame number only finds the candidate; what decides is the page's
 * contents, by a keyed hash (SipHash-1-3 under a key drawn for each dump)
 * of the bytes just read against those of the stored copy. So a frame
 * freed and reused meanwhile (the tree runs during a pre-copy; the kernel
 * may migrate pages at any time) never makes a page point at other bytes:
 * only a hash collision could, which without the key no workload can aim
 * for.
 */
#ifndef URSA_CKPT_FRAMEMAP_H
#define URSA_CKPT_FRAMEMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "ckpt/image.h"
#include "runtime/err.h"

/**
 * ckpt_pages_append_frame() - ckpt_pages_append() of one page, stored once
 *                             per frame
 * @w: the page writer
 * @page: CKPT_PAGE_SIZE bytes, as just read from the process
 * @frame: its frame from urs_pagemap_frames() (host/pagemap.h): only a frame
 *         marked URS_PFN_SHARED is looked up and remembered; 0 or an
 *         unmarked frame is appended as ckpt_pages_append() does
 * @off: gets the offset of the page's data in pages.img
 * @stored: set to true when the page was stored already (nothing appended)
 * @err: what failed
 *
 * The map of frames is allocated at the first shared frame and grows by
 * doubling (at most 1 << 21 frames remembered: past that, or if it cannot
 * be allocated, pages are appended); ckpt_pages_finish(),
 * ckpt_pages_abort() and ckpt_pages_frames_free() free it.
 *
 * Return: 0 or a negative errno with @err.
 */
int ckpt_pages_append_frame(struct ckpt_pages_writer *w, const void *page, uint64_t frame,
			    uint64_t *off, bool *stored, struct urs_err *err);

/**
 * ckpt_pages_frames_free() - free the writer's map of frames
 * @w: the page writer (its map may be NULL)
 */
void ckpt_pages_frames_free(struct ckpt_pages_writer *w);

/**
 * ckpt_page_hash() - SipHash-1-3 of one page under a 128-bit key
 * @key: the key
 * @page: CKPT_PAGE_SIZE bytes
 *
 * Exported for its test.
 *
 * Return: the 64-bit hash.
 */
uint64_t ckpt_page_hash(const uint64_t key[2], const void *page);

/**
 * ckpt_siphash() - SipHash-c-d of @n bytes under a 128-bit key
 * @key: the key (its 16 bytes as two little-endian words)
 * @p: the bytes
 * @n: how many
 * @c: compression rounds (SipHash-1-3: 1)
 * @d: finalization rounds (SipHash-1-3: 3)
 *
 * Return: the 64-bit hash.
 */
uint64_t ckpt_siphash(const uint64_t key[2], const void *p, uint64_t n, int c, int d);

#endif
