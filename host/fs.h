/*
 * host/fs.h — file-system helpers shared by the layers above host/ (the
 * container records, checkpoint images).
 */
#ifndef URSA_HOST_FS_H
#define URSA_HOST_FS_H

#include <dirent.h>
#include <sys/types.h>

/**
 * urs_mkdir_p() - create @path and its missing parents
 * @path: the directory
 * @mode: the mode of @path itself; parents made here get 0711
 *
 * An existing directory is fine (its mode is left as it is).
 *
 * Return: 0, -ENAMETOOLONG, or the negative errno of the mkdir that failed.
 */
int urs_mkdir_p(const char *path, mode_t mode);

/**
 * urs_opendir_at() - a directory stream over @dfd, from its first entry,
 *                    leaving @dfd itself open and usable
 * @dfd: a directory fd (a dup is what the stream owns; it shares @dfd's
 *       offset, so the stream is rewound)
 *
 * Return: the stream (closedir() it), or NULL with errno set.
 */
DIR *urs_opendir_at(int dfd);

/**
 * urs_rm_tree() - remove @path and everything under it, not following
 *                 symbolic links (a link is removed, not its target)
 * @path: a file or directory; nothing there is fine
 *
 * Best effort: what cannot be removed is left, the rest goes.
 *
 * Return: 0 once @path is gone, or the negative errno that kept it.
 */
int urs_rm_tree(const char *path);

/**
 * urs_rmdir_parent_named() - remove @path's directory if it is called
 *                            @name and is empty
 * @path: a file or directory inside it (already removed, or not)
 * @name: the directory's last component ("/.remote": with its slash)
 *
 * For a directory that goes with its last entry (ROOT/.remote). A creator
 * of entries in it must make it again if a mkdir-then-create loses it
 * meanwhile (ENOENT).
 */
void urs_rmdir_parent_named(const char *path, const char *name);

#endif
