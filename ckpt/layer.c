/*
 * ckpt/layer.c — the writable layer of a registered `ursa do --id ID`
 * sandbox, and what a checkpoint keeps of it. A plain `ursa do` puts its
 * overlay's upper layer on a tmpfs inside the sandbox's mount namespace,
 * where it dies with the sandbox. With --id the sandbox can be
 * checkpointed, and then that layer is part of its state (files it wrote,
 * whiteouts of files it deleted, its open files' paths): so the tmpfs is
 * mounted on the host instead, at ROOT/.do/ID (the state root) (mode 0700, private,
 * nosuid, nodev), holding config.json (the generated bundle), resolv.conf,
 * upper/, work/ and root/. `ursa checkpoint` saves config.json,
 * resolv.conf and upper/ into DIR/layer.img (ckpt/fstree.h) while the
 * sandbox is frozen; `ursa restore` finds layer.img, mounts a fresh tmpfs,
 * unpacks it there and uses it as the bundle. The layer is unmounted when
 * the sandbox's record is deleted (cmd/delete.c) or `ursa do` ends.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/fs.h"
#include "ckpt/fstree.h"
#include "ckpt/layer.h"
#include "runtime/common.h"

#define LAYER_IMG "layer.img"

/* ROOT/.do/ID: beside the sandbox's record (ROOT/ID), in the state root */
static void layer_path(char *path, size_t len, const char *root, const char *id)
{
	snprintf(path, len, "%s/.do/%s", root, id);
}

int ckpt_layer_make(const char *root, const char *id, bool fresh, char *path, size_t len,
		    struct urs_err *err)
{
	char top[PATH_MAX];
	snprintf(top, sizeof(top), "%s/.do", root);
	if ((mkdir(root, 0711) < 0 && errno != EEXIST) || (mkdir(top, 0700) < 0 && errno != EEXIST))
		return urs_err_set(err, -errno, "do: creating %s: %m", top);
	layer_path(path, len, root, id);
	if (mkdir(path, 0700) < 0)
		return urs_err_set(err, -errno, "do: --id %s: %s", id,
				   errno == EEXIST ? "its writable layer exists already (a sandbox "
						     "with that id runs, or was not deleted)"
						   : strerror(errno));
	/* size: what a plain `ursa do`'s tmpfs gets (half of RAM, the default) */
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0 ||
	    mount(NULL, path, NULL, MS_PRIVATE, NULL) < 0) {
		int e = -errno;
		umount2(path, MNT_DETACH);
		rmdir(path);
		return urs_err_set(err, e, "do: --id %s: a tmpfs on %s: %s", id, path,
				   strerror(-e));
	}
	static const char *const dirs[] = {"upper", "work", "root"};
	for (size_t k = fresh ? 0 : 1; k < URS_ARRAY_SIZE(dirs); k++) {
		char d[PATH_MAX];
		snprintf(d, sizeof(d), "%s/%s", path, dirs[k]);
		if (mkdir(d, 0755) < 0) {
			int e = -errno;
			ckpt_layer_remove(root, id, NULL);
			return urs_err_set(err, e, "do: creating %s: %s", d, strerror(-e));
		}
	}
	return 0;
}

int ckpt_layer_remove(const char *root, const char *id, struct urs_err *err)
{
	char path[PATH_MAX];
	layer_path(path, sizeof(path), root, id);
	if (umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
		return urs_err_set(err, -errno, "do: unmounting %s: %m", path);
	if (rmdir(path) < 0 && errno != ENOENT)
		return urs_err_set(err, -errno, "do: removing %s: %m", path);
	return 0;
}

bool ckpt_layer_of(const char *root, const char *id, const char *bundle)
{
	char path[PATH_MAX];
	layer_path(path, sizeof(path), root, id);
	return bundle && !strcmp(bundle, path);
}

/* The relative path of a regular file beneath @dfd (depth-first), in @rel. */
static bool find_reg(int dfd, char *rel, size_t len, size_t at, int depth)
{
	DIR *d = urs_opendir_at(dfd);
	if (!d)
		return false;
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    at + strlen(de->d_name) + 2 >= len)
			continue;
		snprintf(rel + at, len - at, "/%s", de->d_name);
		if (S_ISREG(st.st_mode)) {
			found = true;
		} else if (S_ISDIR(st.st_mode) && depth < 16) {
			_cleanup_close_ int fd = openat(
				dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			found = fd >= 0 && find_reg(fd, rel, len, strlen(rel), depth + 1);
		}
	}
	closedir(d);
	if (!found)
		rel[at] = 0;
	return found;
}

/*
 * DIR/layer.dev: "DEV<TAB>PATH", a file of the writable layer and its
 * st_dev as the sandbox sees it — an overlay whose layers are on different
 * file systems shows each layer's non-directories on a device of its own,
 * new at each mount, so the restore learns the new one from the same file
 * (actors/sup_restore.c) to match files held open on the layer. Not written
 * when that device is not the upper layer's alone (its inode numbers then
 * differ from the layer's own): files held open on the layer are then
 * refused at restore, not matched loosely.
 */
static int save_layer_dev(const char *layer, pid_t pid, const char *image, struct urs_err *err)
{
	char up[PATH_MAX], rel[PATH_MAX] = "", p[PATH_MAX + 32];
	snprintf(up, sizeof(up), "%s/upper", layer);
	_cleanup_close_ int ufd = open(up, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd < 0 || !find_reg(ufd, rel, sizeof(rel), 0, 0))
		return 0; /* no file: nothing can be open on the layer */
	snprintf(p, sizeof(p), "/proc/%d/root", (int) pid);
	_cleanup_close_ int rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd =
		rootfd < 0 ? -1 : (int) syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
	struct stat st, host;
	if (fd < 0 || fstat(fd, &st) < 0)
		return urs_err_set(err, -errno, "checkpoint: %s in the sandbox: %m", rel);
	/* only a device of the upper layer's own: with xino (or layers on one
	 * file system) the overlay shows host files of the lower layer on the
	 * same device, and "any inode" would then cover them too */
	if (fstatat(ufd, rel + 1, &host, AT_SYMLINK_NOFOLLOW) < 0 || host.st_ino != st.st_ino)
		return 0;
	snprintf(p, sizeof(p), "%s/layer.dev", image);
	_cleanup_close_ int out =
		open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0 || dprintf(out, "%llx\t%s\n", (unsigned long long) st.st_dev, rel) < 0)
		return urs_err_set(err, -errno, "checkpoint: writing %s: %m", p);
	return 0;
}

int ckpt_layer_save(const char *root, const char *id, pid_t pid, const char *image,
		    struct urs_fstree_stats *stats, struct urs_err *err)
{
	char path[PATH_MAX], out[PATH_MAX + 16];
	layer_path(path, sizeof(path), root, id);
	_cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return urs_err_set(err, -errno, "checkpoint: the writable layer %s: %m", path);
	snprintf(out, sizeof(out), "%s/%s", image, LAYER_IMG);
	unlink(out);
	_cleanup_close_ int fd =
		open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return urs_err_set(err, -errno, "checkpoint: creating %s: %m", out);
	/* the overlay's work directory and the root's mount point are made anew */
	static const char *const skip[] = {"work", "root", NULL};
	struct urs_fstree_stats st;
	int r = urs_fstree_pack(dfd, fd, skip, stats ? stats : &st, err);
	if (r == 0 && fsync(fd) < 0)
		r = urs_err_set(err, -errno, "%m");
	if (r < 0) {
		unlink(out);
		return urs_err_wrap(err, r, "checkpoint: saving the writable layer into %s", out);
	}
	snprintf(out, sizeof(out), "%s/layer.dev", image);
	unlink(out);
	if ((r = save_layer_dev(path, pid, image, err)) < 0) {
		snprintf(out, sizeof(out), "%s/%s", image, LAYER_IMG);
		unlink(out);
	}
	return r;
}

bool ckpt_layer_in_image(const char *image)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/%s", image, LAYER_IMG);
	return access(p, F_OK) == 0;
}

int ckpt_layer_load(const char *root, const char *id, const char *image, char *bundle, size_t len,
		    struct urs_err *err)
{
	char in[PATH_MAX + 16];
	snprintf(in, sizeof(in), "%s/%s", image, LAYER_IMG);
	_cleanup_close_ int fd = open(in, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0)
		return urs_err_set(err, -errno, "restore: %s: %m", in);
	/* like core.img: whoever can write it decides what the sandbox sees */
	if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 022))
		return urs_err_set(err, -EPERM,
				   "restore: %s must be a regular file owned by us and writable by "
				   "nobody else",
				   in);
	int r = ckpt_layer_make(root, id, false, bundle, len, err);
	if (r < 0)
		return r;
	_cleanup_close_ int dfd = open(bundle, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = dfd < 0 ? urs_err_set(err, -errno, "%m") : urs_fstree_unpack(fd, dfd, NULL, err);
	char cfg[PATH_MAX + 16], up[PATH_MAX + 16];
	snprintf(cfg, sizeof(cfg), "%s/config.json", bundle);
	snprintf(up, sizeof(up), "%s/upper", bundle);
	struct stat a, b;
	if (r == 0 &&
	    (lstat(cfg, &a) < 0 || !S_ISREG(a.st_mode) || lstat(up, &b) < 0 || !S_ISDIR(b.st_mode)))
		r = urs_err_set(err, -EINVAL, "it has no config.json or no upper/");
	if (r < 0) {
		ckpt_layer_remove(root, id, NULL);
		return urs_err_wrap(err, r, "restore: the writable layer %s", in);
	}
	return 0;
}
