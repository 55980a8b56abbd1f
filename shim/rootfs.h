/*
 * shim/rootfs.h — the container's root filesystem as containerd hands it
 * over: mounts (CreateTaskRequest.rootfs: an overlay of the snapshot's
 * layers, or a bind) for the shim to mount on BUNDLE/rootfs before the
 * runtime sees the bundle, and to unmount when the task is deleted.
 */
#ifndef URSA_SHIM_ROOTFS_H
#define URSA_SHIM_ROOTFS_H

#include <stddef.h>

#include "runtime/err.h"
#include "shim/proto/task.pb-c.h"

/**
 * shim_rootfs_mount() - mount @m in order on @bundle/rootfs
 * @bundle: the bundle directory
 * @m: the mounts
 * @n: how many (0: the bundle's rootfs is used as it is)
 * @err: on failure, which mount failed and why
 *
 * On failure what was mounted is unmounted again. Return: 0 or a negative errno.
 */
int shim_rootfs_mount(const char *bundle, Containerd__Task__V2__Mount *const *m, size_t n,
		      struct urs_err *err);

/**
 * shim_rootfs_umount() - unmount everything on @bundle/rootfs
 * @bundle: the bundle directory
 *
 * Return: 0 or a negative errno.
 */
int shim_rootfs_umount(const char *bundle);

#endif
