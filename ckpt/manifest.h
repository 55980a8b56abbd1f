/*
 * ckpt/manifest.h — DIR/manifest.img: what makes a whole checkpoint image
 * authentic and complete, written last.
 *
 * core.img and pages.img authenticate themselves (ckpt/seal.h). The other
 * files a restore reads — the container's record and config.json
 * (container/), the supervisor's state (supervisor.img), the writable
 * layer of an `ursa do` sandbox (layer.img, layer.dev), the tmpfs contents
 * (tmpfs.lst, tmpfs-N.img) — decide what the restored sandbox sees, so
 * they are listed in the manifest with their size and SHA-256, beside the
 * core MAC of the core.img they belong to, all under one MAC:
 *
 *   "URSAMANF" | le32 version | le32 n | core MAC (32)
 *   n × { name (48, NUL-padded) | le64 size | SHA-256 (32) }
 *   HMAC(key, "ursa manifest v1\0" || every byte before it)
 *
 * Every file of the image is synced to disk first (the caller kills the
 * workload next), then the manifest is written to a temporary name, synced
 * and renamed, and the directory synced: an
 * image without one is incomplete (a checkpoint that failed or was killed)
 * and is refused, like one whose files do not match it, or that holds a
 * file a restore reads but the manifest does not list. docs/checkpoint.md,
 * "Image layout".
 */
#ifndef URSA_CKPT_MANIFEST_H
#define URSA_CKPT_MANIFEST_H

#include <stdbool.h>

#include "ckpt/seal.h"
#include "runtime/err.h"

#define CKPT_MANIFEST "manifest.img"

/**
 * ckpt_manifest_file() - is @name a file of an image a restore reads (and
 *                        so one the manifest must list)?
 * @name: a path relative to the image directory ("layer.img",
 *        "container/state.json", "tmpfs-3.img"...)
 *
 * core.img and pages.img are not: they carry their own MACs, which the
 * manifest binds through the core MAC.
 *
 * Return: true for supervisor.img, layer.img, layer.dev, tmpfs.lst,
 * tmpfs-N.img and container/state.json, container/config.json.
 */
bool ckpt_manifest_file(const char *name);

/**
 * ckpt_manifest_write() - seal the image in @dir: list every file of it a
 *                         restore reads, then commit by renaming
 * @dir: the image directory, core.img complete
 * @s: the key
 * @err: what failed, and where
 *
 * Return: 0 or a negative errno (no manifest.img is left then).
 */
int ckpt_manifest_write(const char *dir, const struct ckpt_seal *s, struct urs_err *err);

/**
 * ckpt_manifest_check() - is the image in @dir complete and authentic?
 * @dir: the image directory
 * @s: the key
 * @err: names the file that is missing, extra or altered, or the manifest's fault
 *
 * Checks the manifest's MAC, that it belongs to this core.img (its core
 * MAC), that every listed file has its size and hash, and that no file a
 * restore reads is present unlisted. The files must then be read as they
 * are (the image directory is ours and writable by nobody else: checked).
 *
 * Return: 0; -ENOENT without a manifest; -EBADMSG for a mismatch; -EPERM
 * for a directory or file others could write; another negative errno.
 */
int ckpt_manifest_check(const char *dir, const struct ckpt_seal *s, struct urs_err *err);

#endif
