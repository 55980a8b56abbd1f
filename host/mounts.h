/*
 * host/mounts.h — building a container's filesystem view inside its new
 * mount namespace: the spec's mounts, devices, masked and read-only paths,
 * then pivot_root (or MS_MOVE + chroot with --no-pivot).
 *
 * Mount destinations are resolved inside the rootfs with
 * openat2(RESOLVE_IN_ROOT), created component by component under that same
 * rule, and mounted through /proc/self/fd/N: a symlink planted in the image
 * (e.g. /proc -> /) can never redirect a mount onto the host.
 */
#ifndef URSA_HOST_MOUNTS_H
#define URSA_HOST_MOUNTS_H

#include <stdbool.h>

#include "runtime/err.h"
#include "host/spec.h"

struct urs_rootfs_opts {
	const char *rootfs; /* absolute host path of the root (already prepared) */
	bool no_pivot;
	bool userns; /* inside a new user namespace: bind devices, keep locked flags */
	bool cgroupns;
	/* called after the mounts, before pivot_root (createContainer hooks) */
	int (*before_pivot)(void *ctx, struct urs_err *err);
	/* called after pivot_root, before masked/read-only paths (sysctl) */
	int (*after_pivot)(void *ctx, struct urs_err *err);
	void *ctx;
	/* the sandbox's cgroups (urs_cg_to_string), for a "cgroup" mount on v1
	 * and hybrid hosts: each hierarchy's own directory is bound there */
	const char *cgroup;
	/* "ursa-gofer" mounts (docs/gofer.md): the /dev/fuse fd for each, in
	 * the spec's order; mounted after everything else, right before
	 * pivot_root (nothing here may touch them: their server answers only
	 * once the init is READY) */
	const int *gofer_fuse;
	int n_gofer;
};

/* Everything from the first propagation change to the read-only remount of /.
 * Runs in the container's init, in its new mount namespace. */
int urs_rootfs_setup(const struct urs_spec *spec, const struct urs_rootfs_opts *o,
		     struct urs_err *err);

/*
 * `ursa do`: make a root that is the host's / read-only under a writable
 * overlay whose upper layer is a tmpfs that lives as long as the mount
 * namespace. @scratch is an existing host directory used as the mount point
 * of that tmpfs (inside our namespace only). Writes the root path to @root.
 * @prepared: the caller already mounted a tmpfs on @scratch (on the host,
 * so that a checkpoint can save the writable layer) with upper/, work/ and
 * root/ in it: only the overlay is mounted.
 */
int urs_rootfs_host_overlay(const char *scratch, bool prepared, char *root, size_t len,
			    struct urs_err *err);

/* Does the path exist inside @rootfs, resolved as the container would? */
int urs_open_in_root(int rootfd, const char *path, int flags, bool create_dir, bool create_file);

#endif
