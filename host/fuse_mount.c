/*
 * host/fuse_mount.c — see fuse_mount.h. Classic mount(2) with the
 * connection passed as "fd=N": it works on every kernel we accept and in a
 * mount namespace owned by a user namespace (fuse is FS_USERNS_MOUNT).
 */
#include "host/fuse_mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common.h"

int urs_fuse_mount_fd(int fd, const char *target, const struct urs_fuse_mount_opts *o)
{
	struct stat st;
	if (stat(target, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	uint32_t max_read = o && o->max_read ? o->max_read : 128u << 10;
	char data[256];
	int n = snprintf(data, sizeof(data),
			 "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,"
			 "default_permissions,max_read=%u",
			 fd, max_read);
	if (n < 0 || (size_t) n >= sizeof(data))
		return -ENAMETOOLONG;
	unsigned long flags = MS_NOSUID | MS_NODEV;
	if (o && o->rdonly)
		flags |= MS_RDONLY;
	const char *src = o && o->source ? o->source : "ursa-gofer";
	if (mount(src, target, "fuse.ursa-gofer", flags, data) < 0)
		return -errno;
	return 0;
}

int urs_fuse_mount(const char *target, const struct urs_fuse_mount_opts *o)
{
	_cleanup_close_ int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	int r = urs_fuse_mount_fd(fd, target, o);
	if (r < 0)
		return r;
	return steal_fd(&fd);
}
