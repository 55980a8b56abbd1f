/*
 * ckpt/remote_ref.h — a checkpoint parked in object storage, named from a
 * local image directory: DIR/remote.ref holds the image's location and the
 * profile of the S3 settings that reach it, authenticated under the host's
 * checkpoint key.
 *
 * What lets a client that only knows local directories (containerd's
 * shims, podman, CRI) park a container's image in object storage: a
 * container whose config.json names `run.ursa.checkpoint.location`
 * (docs/checkpoint.md "Parked in object storage") is checkpointed there,
 * and the directory the client asked for, which it keeps, tars or moves
 * between hosts, holds this reference of a few hundred bytes instead of
 * the image. A restore from that directory restores from the location.
 *
 * The file is three lines and a MAC:
 *   ursa remote image v1
 *   location s3://BUCKET/PREFIX
 *   profile NAME            ("-": the default)
 *   mac HEX                 HMAC(key, "ursa remote ref v1\0" || the lines above)
 * so a reference is taken only from a host holding the key that made it
 * (the image itself is sealed with the same key), and cannot be edited to
 * point at another image.
 */
#ifndef URSA_CKPT_REMOTE_REF_H
#define URSA_CKPT_REMOTE_REF_H

#include <stdbool.h>
#include <stddef.h>

#include "ckpt/seal.h"
#include "runtime/err.h"

#define CKPT_REF_FILE "remote.ref"
#define CKPT_REF_NEW  "remote.ref.new" /* written first, renamed once the image is in */
#define CKPT_REF_OLD  "remote.ref.old" /* set aside while a local image is written */
#define CKPT_REF_MAX  (CKPT_REF_LOC_MAX + CKPT_REF_PROF_MAX + 128) /* a whole reference */
/* the container's annotations that park its checkpoints (no secret: the
 * credentials stay in the S3 settings, docs/storage.md) */
#define CKPT_ANN_LOCATION "run.ursa.checkpoint.location" /* s3://BUCKET/PREFIX */
#define CKPT_ANN_PROFILE  "run.ursa.s3-profile"		 /* a profile of the settings */
#define CKPT_REF_LOC_MAX  1024				 /* bytes of a location, with its NUL */
#define CKPT_REF_PROF_MAX 128 /* bytes of a profile's name, with its NUL */

/**
 * ckpt_ref_write() - a reference to @location, to be, in @dir
 * @dir: the image directory the caller asked for (made 0700, with its
 *       parents, if missing)
 * @location: where the image will be (s3://BUCKET/PREFIX)
 * @profile: the settings' profile for it, or NULL for the default
 * @err: what failed, and where
 *
 * Written whole or not at all as DIR/remote.ref.new, before the image is
 * made (an image never exists that nothing names); ckpt_ref_commit() makes
 * it DIR's reference once the image is in, ckpt_ref_drop() removes it if
 * it is not, so a failed checkpoint leaves DIR's earlier reference as it
 * was. The host's key is made at first use, as a checkpoint makes it.
 *
 * Return: 0 or a negative errno.
 */
int ckpt_ref_write(const char *dir, const char *location, const char *profile, struct urs_err *err);

/**
 * ckpt_ref_encode() - a reference's bytes, sealed under @s
 * @s: the key
 * @location: where the image is (s3://BUCKET/PREFIX)
 * @profile: the settings' profile for it, or NULL for the default
 * @buf: filled, NUL-terminated
 * @len: its size (CKPT_REF_MAX is enough)
 * @err: why not
 *
 * Return: the length, or -EINVAL (a location or profile it cannot hold),
 * -ENOSPC.
 */
long ckpt_ref_encode(const struct ckpt_seal *s, const char *location, const char *profile,
		     char *buf, size_t len, struct urs_err *err);

/**
 * ckpt_ref_decode() - a reference's location and profile, checked
 * @s: the key
 * @buf: the reference's bytes (untrusted)
 * @n: their count
 * @location: filled (CKPT_REF_LOC_MAX bytes)
 * @profile: filled, "" for the default (CKPT_REF_PROF_MAX bytes)
 * @err: why not
 *
 * Return: 0, or -EBADMSG for anything but the exact bytes
 * ckpt_ref_encode() makes under @s.
 */
int ckpt_ref_decode(const struct ckpt_seal *s, const char *buf, size_t n,
		    char location[CKPT_REF_LOC_MAX], char profile[CKPT_REF_PROF_MAX],
		    struct urs_err *err);

/**
 * ckpt_ref_read() - the location and profile @dir's reference names
 * @dir: an image directory
 * @location: filled (CKPT_REF_LOC_MAX bytes)
 * @profile: filled, "" for the default (CKPT_REF_PROF_MAX bytes)
 * @err: what failed, and where
 *
 * The file must be a regular one, not reached through a symlink, of at
 * most CKPT_REF_MAX bytes.
 *
 * Return: 0; -ENOENT when @dir holds no reference (a local image, or
 * none); -EBADMSG for a malformed one or one whose MAC is not this host's
 * key's (altered, or made elsewhere), naming the file; another negative
 * errno (-EINVAL: not a regular file).
 */
int ckpt_ref_read(const char *dir, char location[CKPT_REF_LOC_MAX], char profile[CKPT_REF_PROF_MAX],
		  struct urs_err *err);

/**
 * ckpt_ref_commit() - ckpt_ref_write()'s reference becomes @dir's
 * @dir: the image directory
 * @err: what failed
 *
 * Return: 0 or a negative errno.
 */
int ckpt_ref_commit(const char *dir, struct urs_err *err);

/**
 * ckpt_ref_drop() - remove a reference ckpt_ref_write() wrote, not committed
 * @dir: the image directory
 *
 * For a checkpoint that failed: DIR's earlier reference, if any, stays.
 */
void ckpt_ref_drop(const char *dir);

/**
 * ckpt_ref_aside() - set @dir's committed reference aside before a local
 *                    image is written into @dir
 * @dir: the image directory
 *
 * Renamed to remote.ref.old: a restore from @dir, even after a crash
 * halfway, takes the local image, never the older parked one.
 * ckpt_ref_aside_end() puts it back or removes it.
 *
 * Return: 1 when set aside, 0 when @dir held none, or a negative errno.
 */
int ckpt_ref_aside(const char *dir);

/**
 * ckpt_ref_aside_end() - what ckpt_ref_aside() set aside: removed once the
 *                        local image is in, put back if it is not
 * @dir: the image directory
 * @image_in: the local image was written
 *
 * Return: 0, or the negative errno of the unlink or the rename (then
 * remote.ref.old is still there: the caller says so).
 */
int ckpt_ref_aside_end(const char *dir, bool image_in);

#endif
