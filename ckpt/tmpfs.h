/*
 * ckpt/tmpfs.h — the contents of a sandbox's tmpfs mounts in a
 * checkpoint image. A tmpfs (`/tmp`, `/dev/shm`, a tmpfs volume) holds files
 * that exist nowhere else: the dump saves each writable one that is not
 * empty into DIR/tmpfs-N.img (ckpt/fstree.h) with an index DIR/tmpfs.lst
 * (which also names the empty ones, to match files open on them);
 * the restore puts them back into the new sandbox's (empty) tmpfs mounts at
 * the same places before its processes come back. `/dev` is not saved (the
 * runtime fills it), nor read-only ones (masked paths), nor partial binds.
 */
#ifndef URSA_CKPT_TMPFS_H
#define URSA_CKPT_TMPFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/err.h"

struct ckpt_dev_map;

#define CKPT_TMPFS_INDEX "tmpfs.lst"

/**
 * ckpt_tmpfs_save() - save the tmpfs mounts of @pid's mount namespace
 * @pid: a task of the sandbox (paths as @pid sees them)
 * @dir: the image directory: tmpfs-N.img and tmpfs.lst go there (an older
 *       image's are removed first)
 * @frozen: the cgroup freezer holds the tasks; else a tmpfs that is not
 *          empty is refused, as its files could change while they are read
 * @err: what failed, naming the mount
 *
 * The tasks must be frozen. Blocks while the trees are packed
 * (urs_fstree_pack). On failure the files written so far are removed.
 *
 * Return: the number of images written (0: none; without any tmpfs no
 * index is written either), or a negative errno with @err: -ENOTSUP
 * (contents without the freezer), -ESTALE (a mount that is no longer where
 * it was listed), -ENOMEM, or the failing open's or pack's.
 */
int ckpt_tmpfs_save(pid_t pid, const char *dir, bool frozen, struct urs_err *err);

/**
 * ckpt_tmpfs_restore() - put the saved contents back beneath @pid's root
 * @pid: a restored sandbox's init, before its processes run
 * @dir: the image directory (its tmpfs.lst and tmpfs-N.img)
 * @map: gets one device mapping per place, at map[*n]
 * @max: the room in @map
 * @n: entries of @map in use; advanced
 * @err: what failed, naming the place
 *
 * Each place must be an empty tmpfs. For each, map[*n] (at most @max) maps
 * its old device to the new one, any inode (the files are new):
 * ckpt_restore_opts.dev_map. No index in @dir: nothing to do. An image
 * file must be ours and writable by nobody else.
 *
 * Return: 0, or a negative errno with @err: -ENOENT (no empty tmpfs at a
 * saved place), -EPERM (an image file others could write), -EINVAL or
 * -EFBIG (a malformed index), -E2BIG (@map full), or the unpack's.
 */
int ckpt_tmpfs_restore(pid_t pid, const char *dir, struct ckpt_dev_map *map, uint32_t max,
		       uint32_t *n, struct urs_err *err);

/**
 * ckpt_tmpfs_has_content() - does the image carry tmpfs file contents?
 * @dir: the image directory
 *
 * Return: true if its index names an image (not only empty places), or if
 * the index cannot be read to the end (assumed so); false without one.
 */
bool ckpt_tmpfs_has_content(const char *dir);

/**
 * ckpt_tmpfs_forget() - remove the files ckpt_tmpfs_save() wrote in @dir
 * @dir: the image directory (an abandoned image); the index and as many
 *       tmpfs-N.img as it has lines go, errors ignored
 */
void ckpt_tmpfs_forget(const char *dir);

#endif
