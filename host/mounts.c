/*
 * host/mounts.c — see mounts.h.
 */
#include "host/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "host/cgroup.h"
#include "host/fuse_mount.h"
#include "runtime/common.h"

static int sys_openat2(int dirfd, const char *path, struct open_how *how)
{
	int fd = (int) syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
	return fd < 0 ? -errno : fd;
}

static int open_beneath(int rootfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t) (flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	while (*path == '/')
		path++;
	return sys_openat2(rootfd, *path ? path : ".", &how);
}

int urs_open_in_root(int rootfd, const char *path, int flags, bool create_dir, bool create_file)
{
	int fd = open_beneath(rootfd, path, flags);
	if (fd != -ENOENT || (!create_dir && !create_file))
		return fd;
	/* Create missing components one at a time, each resolved in the root. */
	char buf[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	char *p = buf;
	while (*p == '/')
		p++;
	for (;;) {
		char *slash = strchr(p, '/');
		bool last = !slash || !slash[strspn(slash, "/")];
		if (slash)
			*slash = 0;
		/* parent = everything before p */
		char saved = *p;
		*p = 0;
		_cleanup_close_ int parent = open_beneath(rootfd, buf, O_PATH | O_DIRECTORY);
		*p = saved;
		if (parent < 0)
			return parent;
		if (last && create_file) {
			int f = openat(parent, p, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW,
				       0644);
			if (f < 0 && errno != EEXIST && errno != EISDIR)
				return -errno;
			if (f >= 0)
				close(f);
		} else if (mkdirat(parent, p, 0755) < 0 && errno != EEXIST) {
			return -errno;
		}
		if (last)
			break;
		*slash = '/';
		p = slash + 1;
		while (*p == '/')
			p++;
	}
	return open_beneath(rootfd, path, flags);
}

static void fdpath(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* Flags a user namespace may not drop on remount: keep what the mount has. */
static unsigned long locked_flags(const char *target)
{
	struct statvfs sv;
	unsigned long f = 0;
	if (statvfs(target, &sv) < 0)
		return 0;
	if (sv.f_flag & ST_NOSUID)
		f |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		f |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		f |= MS_NOEXEC;
	if (sv.f_flag & ST_RDONLY)
		f |= MS_RDONLY;
	if (sv.f_flag & ST_NOATIME)
		f |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		f |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		f |= MS_RELATIME;
	return f;
}

#define REMOUNT_FLAGS                                                                              \
	(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME | \
	 MS_STRICTATIME)

/*
 * /sys/fs/cgroup. Unified hosts: cgroup2 (the cgroup namespace makes the
 * sandbox's cgroup its root). v1 and hybrid hosts: a tmpfs with, for each
 * hierarchy the sandbox is in, that hierarchy's directory of the sandbox
 * bound at /sys/fs/cgroup/NAME — what runc shows a container there.
 */
static int mount_cgroups(int rootfd, const char *dest, const char *target, unsigned long flags,
			 const struct urs_rootfs_opts *o, struct urs_err *err)
{
	struct statvfs sv;
	if (statvfs("/sys/fs/cgroup/cgroup.controllers", &sv) == 0)
		return mount("cgroup2", target, "cgroup2", flags, NULL) < 0
			       ? urs_err_set(err, -errno, "cgroup2: %m")
			       : 0;
	if (mount("tmpfs", target, "tmpfs", flags & ~MS_RDONLY, "mode=755") < 0)
		return urs_err_set(err, -errno, "tmpfs: %m");
	/* the old fd names the directory under the new mount: look again */
	_cleanup_close_ int nfd =
		urs_open_in_root(rootfd, dest, O_PATH | O_DIRECTORY, false, false);
	if (nfd < 0)
		return urs_err_set(err, nfd, "reopening: %s", strerror(-nfd));
	char top[64];
	fdpath(top, sizeof(top), nfd);
	target = top;
	struct urs_cgroup cg;
	if (o->cgroup && *o->cgroup && urs_cg_from_string(&cg, o->cgroup, NULL) == 0) {
		for (int h = 0; h < URS_CG_NHIER; h++) {
			const char *name = h == URS_CG_V2 ? "unified" : urs_cg_hier_name(h);
			if (!cg.h[h].path[0] || cg.h[h].alias >= 0)
				continue;
			char dst[PATH_MAX];
			snprintf(dst, sizeof(dst), "%s/%s", target, name);
			if (mkdir(dst, 0755) < 0 && errno != EEXIST)
				return urs_err_set(err, -errno, "mkdir %s: %m", dst);
			if (mount(cg.h[h].path, dst, NULL, MS_BIND, NULL) < 0)
				return urs_err_set(err, -errno, "bind %s: %m", cg.h[h].path);
			if ((flags & MS_RDONLY) &&
			    mount(NULL, dst, NULL,
				  MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags(dst), NULL) < 0)
				return urs_err_set(err, -errno, "read-only %s: %m", dst);
		}
		urs_cg_close(&cg);
	}
	if ((flags & MS_RDONLY) &&
	    mount(NULL, target, NULL, MS_REMOUNT | (flags & REMOUNT_FLAGS), "mode=755") < 0)
		return urs_err_set(err, -errno, "read-only tmpfs: %m");
	return 0;
}

static bool is_bind(const struct urs_mount *m)
{
	return (m->flags & MS_BIND) || (m->type && !strcmp(m->type, "bind"));
}

/* linux.mountLabel on a new file system's options (SELinux hosts only, see
 * urs_spec_check_host), as runc's label.FormatMountLabel: not for proc,
 * sysfs and mqueue; NULL when the label does not apply. */
static const char *with_label(const struct urs_mount *m, const char *label, char *buf, size_t len)
{
	static const char *const none[] = {"proc", "sysfs", "mqueue"};
	if (!label || !label[0] || !m->type)
		return NULL;
	for (size_t i = 0; i < URS_ARRAY_SIZE(none); i++)
		if (!strcmp(m->type, none[i]))
			return NULL;
	int n = snprintf(buf, len, "%s%scontext=\"%s\"", m->data ? m->data : "", m->data ? "," : "",
			 label);
	return n > 0 && (size_t) n < len ? buf : NULL;
}

static int do_mount(const struct urs_mount *m, size_t idx, int rootfd,
		    const struct urs_rootfs_opts *o, const char *label, struct urs_err *err)
{
	bool bind = is_bind(m);
	bool src_is_dir = true;
	if (bind && m->source) {
		struct stat sb;
		if (stat(m->source, &sb) < 0)
			return urs_err_set(err, -errno, "mounts[%zu] (%s): source %s: %m", idx,
					   m->destination, m->source);
		src_is_dir = S_ISDIR(sb.st_mode);
	}
	_cleanup_close_ int dfd =
		urs_open_in_root(rootfd, m->destination, O_PATH, src_is_dir, !src_is_dir);
	if (dfd < 0)
		return urs_err_set(err, dfd, "mounts[%zu]: destination %s in the rootfs: %s", idx,
				   m->destination, strerror(-dfd));
	char target[64];
	fdpath(target, sizeof(target), dfd);

	const char *type = m->type;
	unsigned long flags = m->flags & ~(MS_BIND | MS_REC);
	if (bind) {
		if (mount(m->source, target, NULL, MS_BIND | (m->flags & MS_REC), NULL) < 0)
			return urs_err_set(err, -errno, "mounts[%zu]: bind %s on %s: %m", idx,
					   m->source ? m->source : "(none)", m->destination);
		/* the bind itself ignores flags: remount to apply them */
		if (flags & REMOUNT_FLAGS) {
			_cleanup_close_ int nfd =
				urs_open_in_root(rootfd, m->destination, O_PATH, false, false);
			char t2[64];
			fdpath(t2, sizeof(t2), nfd);
			unsigned long keep = o->userns ? locked_flags(t2) : 0;
			keep &= ~(m->clear_flags & ~(MS_NOSUID | MS_NODEV | MS_NOEXEC));
			if (mount(NULL, t2, NULL,
				  MS_BIND | MS_REMOUNT | (flags & REMOUNT_FLAGS) | keep, NULL) < 0)
				return urs_err_set(err, -errno,
						   "mounts[%zu]: remount %s with options: %m", idx,
						   m->destination);
		}
	} else if (type && !strcmp(type, "cgroup")) {
		struct urs_err e = {{0}};
		int r = mount_cgroups(rootfd, m->destination, target, flags, o, &e);
		if (r < 0)
			return urs_err_set(err, r, "mounts[%zu]: cgroup on %s: %s", idx,
					   m->destination, e.msg);
	} else {
		char lb[4096];
		const char *data = with_label(m, label, lb, sizeof(lb));
		if (mount(m->source ? m->source : type, target, type, flags,
			  data ? data : m->data) < 0) {
			int e = errno;
			/* sysfs needs a netns we own; fall back to the host's, read-only */
			if (type && !strcmp(type, "sysfs") && (e == EPERM || e == EBUSY)) {
				if (mount("/sys", target, NULL, MS_BIND | MS_REC, NULL) == 0 &&
				    mount(NULL, target, NULL,
					  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC, NULL) >= 0)
					goto propagation;
			}
			return urs_err_set(err, -e, "mounts[%zu]: mount %s (type %s%s%s) on %s: %s",
					   idx, m->source ? m->source : "none",
					   type ? type : "none", m->data ? ", options " : "",
					   m->data ? m->data : "", m->destination, strerror(e));
		}
	}
propagation:
	if (m->propagation) {
		_cleanup_close_ int nfd =
			urs_open_in_root(rootfd, m->destination, O_PATH, false, false);
		char t2[64];
		fdpath(t2, sizeof(t2), nfd);
		if (mount(NULL, t2, NULL, m->propagation, NULL) < 0)
			return urs_err_set(err, -errno, "mounts[%zu]: propagation on %s: %m", idx,
					   m->destination);
	}
	return 0;
}

/*
 * A mediated volume: the destination is created and resolved as for a bind,
 * and the supervisor's /dev/fuse connection is mounted there (nosuid, nodev,
 * + ro). mount(2) does not wait for the server's INIT answer; any access to
 * the mount would, so nothing after this looks inside it.
 */
static int do_gofer_mount(const struct urs_mount *m, size_t idx, int rootfd, int fuse_fd,
			  struct urs_err *err)
{
	_cleanup_close_ int dfd =
		urs_open_in_root(rootfd, m->destination, O_PATH | O_DIRECTORY, true, false);
	if (dfd < 0)
		return urs_err_set(err, dfd, "mounts[%zu]: destination %s in the rootfs: %s", idx,
				   m->destination, strerror(-dfd));
	char target[64];
	fdpath(target, sizeof(target), dfd);
	struct urs_fuse_mount_opts fo = {.rdonly = (m->flags & MS_RDONLY) != 0};
	int r = urs_fuse_mount_fd(fuse_fd, target, &fo);
	if (r < 0)
		return urs_err_set(err, r, "mounts[%zu]: gofer volume on %s: %s", idx,
				   m->destination, strerror(-r));
	return 0;
}

struct dev {
	const char *path;
	mode_t mode;
	unsigned maj, min;
};

static const struct dev default_devs[] = {
	{"/dev/null", S_IFCHR | 0666, 1, 3},	{"/dev/zero", S_IFCHR | 0666, 1, 5},
	{"/dev/full", S_IFCHR | 0666, 1, 7},	{"/dev/random", S_IFCHR | 0666, 1, 8},
	{"/dev/urandom", S_IFCHR | 0666, 1, 9}, {"/dev/tty", S_IFCHR | 0666, 5, 0},
};

static int make_dev(int rootfd, const char *path, mode_t mode, unsigned maj, unsigned min,
		    uid_t uid, gid_t gid, bool userns, struct urs_err *err)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%.*s", (int) (slash - path), path);
	_cleanup_close_ int dfd =
		urs_open_in_root(rootfd, *dir ? dir : "/", O_PATH | O_DIRECTORY, true, false);
	if (dfd < 0)
		return urs_err_set(err, dfd, "devices: %s: parent directory: %s", path,
				   strerror(-dfd));
	const char *name = slash + 1;
	if (userns) { /* no mknod in a user namespace: bind the host's node */
		int f = openat(dfd, name, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (f < 0 && errno != EEXIST)
			return urs_err_set(err, -errno, "devices: creating %s: %m", path);
		if (f >= 0)
			close(f);
		_cleanup_close_ int t = openat(dfd, name, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		char tp[64];
		fdpath(tp, sizeof(tp), t);
		if (t < 0 || mount(path, tp, NULL, MS_BIND, NULL) < 0)
			return urs_err_set(err, -errno, "devices: bind %s from the host: %m", path);
		return 0;
	}
	unlinkat(dfd, name, 0);
	/* exact mode through the umask rather than a chmod afterwards, which
	 * would follow a symlink raced into the node's place */
	mode_t old = umask(0);
	int r = mknodat(dfd, name, mode, makedev(maj, min));
	umask(old);
	if (r < 0)
		return urs_err_set(err, -errno, "devices: mknod %s: %m", path);
	if (fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
		return urs_err_set(err, -errno, "devices: chown %s: %m", path);
	return 0;
}

static int setup_dev(const struct urs_spec *spec, int rootfd, bool userns, struct urs_err *err)
{
	int r;
	for (size_t i = 0; i < URS_ARRAY_SIZE(default_devs); i++) {
		const struct dev *d = &default_devs[i];
		if ((r = make_dev(rootfd, d->path, d->mode, d->maj, d->min, 0, 0, userns, err)) < 0)
			return r;
	}
	for (size_t i = 0; spec->lnx && i < spec->lnx->n_devices; i++) {
		const struct urs_device *d = &spec->lnx->devices[i];
		mode_t t = d->type == 'b' ? S_IFBLK : d->type == 'p' ? S_IFIFO : S_IFCHR;
		mode_t mode = t | (d->has_file_mode ? (d->file_mode & 07777) : 0666);
		r = make_dev(rootfd, d->path, mode, (unsigned) (d->major < 0 ? 0 : d->major),
			     (unsigned) (d->minor < 0 ? 0 : d->minor), d->has_uid ? d->uid : 0,
			     d->has_gid ? d->gid : 0, userns && d->type != 'p', err);
		if (r < 0)
			return r;
	}
	static const char *links[][2] = {
		{"/proc/self/fd", "/dev/fd"},	    {"/proc/self/fd/0", "/dev/stdin"},
		{"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"},
		{"/proc/kcore", "/dev/core"},
	};
	_cleanup_close_ int dev =
		urs_open_in_root(rootfd, "/dev", O_PATH | O_DIRECTORY, true, false);
	if (dev < 0)
		return urs_err_set(err, dev, "devices: /dev: %s", strerror(-dev));
	for (size_t i = 0; i < URS_ARRAY_SIZE(links); i++)
		if (symlinkat(links[i][0], dev, links[i][1] + 5) < 0 && errno != EEXIST)
			return urs_err_set(err, -errno, "devices: symlink %s: %m", links[i][1]);
	/* /dev/ptmx -> pts/ptmx when devpts is mounted (runc does the same) */
	struct stat sb;
	if (fstatat(dev, "pts/ptmx", &sb, 0) == 0) {
		unlinkat(dev, "ptmx", 0);
		if (symlinkat("pts/ptmx", dev, "ptmx") < 0)
			return urs_err_set(err, -errno, "devices: /dev/ptmx: %m");
	}
	return 0;
}

static int pivot(const char *rootfs, bool no_pivot, struct urs_err *err)
{
	if (no_pivot) {
		if (chdir(rootfs) < 0 || mount(rootfs, "/", NULL, MS_MOVE, NULL) < 0 ||
		    chroot(".") < 0 || chdir("/") < 0)
			return urs_err_set(err, -errno, "--no-pivot: moving %s to / : %m", rootfs);
		return 0;
	}
	_cleanup_close_ int oldroot = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int newroot = open(rootfs, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (oldroot < 0 || newroot < 0)
		return urs_err_set(err, -errno, "pivot_root: opening %s: %m", rootfs);
	if (fchdir(newroot) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
		return urs_err_set(err, -errno, "pivot_root into %s: %m", rootfs);
	/* the old root is now stacked under the new one at "/": detach it */
	if (fchdir(oldroot) < 0 || mount("", ".", "", MS_SLAVE | MS_REC, NULL) < 0 ||
	    umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
		return urs_err_set(err, -errno, "pivot_root: detaching the old root: %m");
	return 0;
}

static int mask_paths(const struct urs_linux *l, struct urs_err *err)
{
	for (size_t i = 0; l && i < l->n_masked_paths; i++) {
		const char *p = l->masked_paths[i];
		struct stat sb;
		if (stat(p, &sb) < 0)
			continue; /* absent: nothing to hide */
		int r = S_ISDIR(sb.st_mode) ? mount("tmpfs", p, "tmpfs", MS_RDONLY, "size=0")
					    : mount("/dev/null", p, NULL, MS_BIND, NULL);
		if (r < 0 && errno != ENOENT)
			return urs_err_set(err, -errno, "linux.maskedPaths[%zu] (%s): %m", i, p);
	}
	for (size_t i = 0; l && i < l->n_readonly_paths; i++) {
		const char *p = l->readonly_paths[i];
		if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0) {
			if (errno == ENOENT)
				continue;
			return urs_err_set(err, -errno, "linux.readonlyPaths[%zu] (%s): %m", i, p);
		}
		if (mount(NULL, p, NULL,
			  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC | locked_flags(p), NULL) < 0)
			return urs_err_set(err, -errno,
					   "linux.readonlyPaths[%zu] (%s): remount: %m", i, p);
	}
	return 0;
}

int urs_rootfs_setup(const struct urs_spec *spec, const struct urs_rootfs_opts *o,
		     struct urs_err *err)
{
	const struct urs_linux *l = spec->lnx;
	unsigned long prop = l && l->rootfs_propagation ? l->rootfs_propagation : MS_SLAVE | MS_REC;
	/* Nothing we mount may propagate back to the host. Shared and
	 * unbindable are for the container's root once it is "/" (below), as
	 * crun and runc 1.2 do: an unbindable rootfs cannot be bound onto
	 * itself (EINVAL), a shared / would propagate to the host. */
	unsigned long later = prop & (MS_SHARED | MS_UNBINDABLE);
	/* No mount namespace in linux.namespaces: the host's is shared, as with
	 * runc: the rootfs and the mounts go up in it (and stay there), the
	 * root is entered with chroot, the host's / is left as it is (the
	 * parser refuses masked/read-only paths, rootfsPropagation and gofer
	 * volumes there, as runc refuses the first two). */
	bool own_ns = urs_spec_has_ns(spec, URS_NS_MOUNT);
	if (own_ns && mount(NULL, "/", NULL, later ? (MS_SLAVE | MS_REC) : prop, NULL) < 0)
		return urs_err_set(err, -errno, "making / %s: %m", "a slave mount");
	if (mount(o->rootfs, o->rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
		return urs_err_set(err, -errno, "root.path %s: bind onto itself: %m", o->rootfs);
	if (!own_ns && mount(NULL, o->rootfs, NULL, MS_PRIVATE | MS_REC, NULL) < 0)
		return urs_err_set(err, -errno, "root.path %s: making it private: %m", o->rootfs);

	_cleanup_close_ int rootfd = open(o->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return urs_err_set(err, -errno, "root.path %s: %m", o->rootfs);
	int r;
	bool dev_mounted = false;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		if (spec->mounts[i].gofer)
			continue; /* below, last */
		if ((r = do_mount(&spec->mounts[i], i, rootfd, o, l ? l->mount_label : NULL, err)) <
		    0)
			return r;
		if (!strcmp(spec->mounts[i].destination, "/dev"))
			dev_mounted = true;
	}
	(void) dev_mounted;
	if ((r = setup_dev(spec, rootfd, o->userns, err)) < 0)
		return r;
	if (o->before_pivot && (r = o->before_pivot(o->ctx, err)) < 0)
		return r;
	/* mediated volumes last: nothing above may wait on their server */
	for (size_t i = 0, k = 0; i < spec->n_mounts; i++) {
		if (!spec->mounts[i].gofer)
			continue;
		if (!o->gofer_fuse || (int) k >= o->n_gofer)
			return urs_err_set(err, -EINVAL,
					   "mounts[%zu]: \"ursa-gofer\" volume without a server "
					   "(not supported here)",
					   i);
		if ((r = do_gofer_mount(&spec->mounts[i], i, rootfd, o->gofer_fuse[k++], err)) < 0)
			return r;
	}
	if (!own_ns && (chroot(o->rootfs) < 0 || chdir("/") < 0))
		return urs_err_set(err, -errno, "chroot into %s: %m", o->rootfs);
	if (own_ns && (r = pivot(o->rootfs, o->no_pivot, err)) < 0)
		return r;
	if (o->after_pivot && (r = o->after_pivot(o->ctx, err)) < 0)
		return r;
	if ((r = mask_paths(l, err)) < 0)
		return r;
	if (spec->root.readonly &&
	    mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags("/"), NULL) < 0)
		return urs_err_set(err, -errno, "root.readonly: remounting / read-only: %m");
	if (later && mount(NULL, "/", NULL, prop, NULL) < 0)
		return urs_err_set(err, -errno, "linux.rootfsPropagation: %m");
	return 0;
}

int urs_rootfs_host_overlay(const char *scratch, bool prepared, char *root, size_t len,
			    struct urs_err *err)
{
	/* private first: the tmpfs and the overlay must not show up on the host */
	if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
		return urs_err_set(err, -errno, "do: making / a slave: %m");
	if (!prepared && mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		return urs_err_set(err, -errno, "do: tmpfs on %s: %m", scratch);
	char up[PATH_MAX], wk[PATH_MAX], data[3 * PATH_MAX];
	snprintf(up, sizeof(up), "%s/upper", scratch);
	snprintf(wk, sizeof(wk), "%s/work", scratch);
	snprintf(root, len, "%s/root", scratch);
	if (!prepared && (mkdir(up, 0755) < 0 || mkdir(wk, 0755) < 0 || mkdir(root, 0755) < 0))
		return urs_err_set(err, -errno, "do: overlay directories in %s: %m", scratch);
	snprintf(data, sizeof(data), "lowerdir=/,upperdir=%s,workdir=%s", up, wk);
	/* nodev: no device node on the writable root opens a host device */
	if (mount("overlay", root, "overlay", MS_NODEV | MS_NOSUID, data) < 0)
		return urs_err_set(err, -errno, "do: overlay of / (%s): %m", data);
	return 0;
}
