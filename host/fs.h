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

#endif
