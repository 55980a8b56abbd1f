/*
 * host/fs.h — file-system helpers shared by the layers above host/ (the
 * container records, checkpoint images).
 */
#ifndef URSA_HOST_FS_H
#define URSA_HOST_FS_H

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

#endif
