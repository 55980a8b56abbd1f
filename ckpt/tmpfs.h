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

/*
 * Save the tmpfs mounts of @pid's mount namespace (paths as @pid sees
 * them) into @dir. The tasks must be frozen (@frozen: the cgroup freezer
 * holds them; else a tmpfs that is not empty is refused, as its files
 * could change while they are read). Returns the number of images written
 * or -errno with @err.
 */
int ckpt_tmpfs_save(pid_t pid, const char *dir, bool frozen, struct urs_err *err);

/*
 * Put the saved contents back beneath @pid's root (a restored sandbox's
 * init, before its processes run). Each place must be an empty tmpfs. For
 * each, map[*n] (at most @max) maps its old device to the new one, any
 * inode (the files are new): ckpt_restore_opts.dev_map. No index in @dir:
 * nothing to do. Returns 0 or -errno with @err.
 */
int ckpt_tmpfs_restore(pid_t pid, const char *dir, struct ckpt_dev_map *map, uint32_t max,
		       uint32_t *n, struct urs_err *err);

/* Does the image in @dir carry file contents for a tmpfs (not only empty
 * places)? */
bool ckpt_tmpfs_has_content(const char *dir);

/* Remove the files ckpt_tmpfs_save wrote in @dir (an abandoned image). */
void ckpt_tmpfs_forget(const char *dir);

#endif
