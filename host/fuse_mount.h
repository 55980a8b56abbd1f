/*
 * host/fuse_mount.h — opening /dev/fuse and mounting a FUSE file system
 * served by ursa (the gofer) at a path of the current mount namespace.
 *
 * The options are fixed by what a sandbox needs, not by the caller:
 *   allow_other          sandbox processes are not the mounter
 *   default_permissions  the server runs as root; the kernel checks modes
 *   nosuid, nodev        a volume can never grant privileges or devices
 *   user_id/group_id=0   the mount's owner (the supervisor)
 * The sandbox never sees /dev/fuse: the fd stays with the supervisor.
 */
#ifndef URSA_HOST_FUSE_MOUNT_H
#define URSA_HOST_FUSE_MOUNT_H

#include <stdbool.h>
#include <stdint.h>

struct urs_fuse_mount_opts {
	bool rdonly;	    /* MS_RDONLY on the mount (the gofer refuses writes too) */
	uint32_t max_read;  /* bytes; 0 = 128 KiB */
	const char *source; /* shown in mountinfo; default "ursa-gofer" */
};

/*
 * Open /dev/fuse (O_RDWR | O_CLOEXEC | O_NONBLOCK) and mount it on @target
 * (a directory) as "fuse.ursa-gofer". Returns the connection fd or a
 * negative errno. The fd must then be served (INIT first) or closed.
 */
int urs_fuse_mount(const char *target, const struct urs_fuse_mount_opts *o);

/* Same, on an already-opened /dev/fuse fd (e.g. opened before a namespace
 * change); the fd is not closed on failure. */
int urs_fuse_mount_fd(int fuse_fd, const char *target, const struct urs_fuse_mount_opts *o);

#endif
