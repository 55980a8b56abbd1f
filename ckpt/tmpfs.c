/*
 * ckpt/tmpfs.c — a sandbox's tmpfs contents in its checkpoint image
 * (ckpt/tmpfs.h). The mounts are found in /proc/PID/mountinfo (paths
 * as the task sees them, relative to its root) and opened beneath
 * /proc/PID/root with RESOLVE_IN_ROOT, so a symlink the sandbox planted
 * cannot point the dumper or the restorer at a host directory. The index
 * DIR/tmpfs.lst has one line per writable tmpfs: "IMAGE<TAB>DEV<TAB>PATH",
 * IMAGE "tmpfs-N.img" or "-" (it was empty), DEV its st_dev in hex (files
 * open on it are matched on the new one: ckpt_dev_map), PATH escaped as
 * mountinfo does (\ooo for space, tab, newline, backslash).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "host/fs.h"
#include "ckpt/restore.h"
#include "ckpt/tmpfs.h"
#include "ckpt/fstree.h"
#include "runtime/common.h"
#include "runtime/io.h"

#define MAX_TMPFS 32
#define MAX_INDEX (MAX_TMPFS * (PATH_MAX + 32))

struct tmnt {
	char path[PATH_MAX]; /* unescaped */
	char esc[PATH_MAX];  /* as in mountinfo */
	dev_t dev;
};

static void unescape(char *s)
{
	char *d = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char) ((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = 0;
}

static bool is_ro(const char *opts)
{
	return !strcmp(opts, "ro") || !strncmp(opts, "ro,", 3);
}

/* Is @mp (escaped) @top or beneath it? */
static bool beneath(const char *mp, const char *top)
{
	size_t n = strlen(top);
	return !strncmp(mp, top, n) && (mp[n] == '/' || !mp[n] || (n == 1 && top[0] == '/'));
}

/* The writable tmpfs mounts of @pid's namespace, each superblock once. One
 * beneath a FUSE mount (a gofer volume) is refused: reaching it would ask
 * that file system's server, which is frozen with the sandbox. */
static int list_tmpfs(pid_t pid, struct tmnt *m, struct urs_err *err)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mountinfo", (int) pid);
	_cleanup_fclose_ FILE *f = fopen(p, "re");
	if (!f)
		return urs_err_set(err, -errno, "pid %d: reading its mounts: %m", (int) pid);
	_cleanup_free_ char *line = NULL;
	_cleanup_free_ char(*fuse)[PATH_MAX] = malloc(MAX_TMPFS * PATH_MAX); /* as above */
	if (!fuse)
		return urs_err_set(err, -ENOMEM, "pid %d: out of memory", (int) pid);
	size_t cap = 0;
	int n = 0, nfuse = 0;
	while (getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - ");
		char fstype[32], root[PATH_MAX], mp[PATH_MAX], opts[256];
		unsigned maj, min;
		if (!sep || sscanf(sep + 3, "%31s", fstype) != 1 ||
		    sscanf(line, "%*d %*d %u:%u %4095s %4095s %255s", &maj, &min, root, mp, opts) !=
			    5)
			continue;
		if (!strcmp(fstype, "fuse") || !strncmp(fstype, "fuse.", 5)) {
			if (nfuse == MAX_TMPFS)
				return urs_err_set(err, -E2BIG, "pid %d: more than %d FUSE mounts",
						   (int) pid, MAX_TMPFS);
			snprintf(fuse[nfuse++], PATH_MAX, "%s", mp);
			continue;
		}
		/* a bind of part of one (/proc/keys -> /dev/null), read-only ones
		 * (masked paths), /dev (the runtime fills it), the root */
		if (strcmp(fstype, "tmpfs") || strcmp(root, "/") || is_ro(opts) ||
		    !strcmp(mp, "/dev") || !strcmp(mp, "/") || !strncmp(mp, "/proc/", 6) ||
		    !strncmp(mp, "/sys/", 5))
			continue;
		bool seen = false;
		for (int k = 0; k < n; k++)
			seen |= m[k].dev == makedev(maj, min);
		if (seen)
			continue;
		if (n == MAX_TMPFS)
			return urs_err_set(err, -E2BIG, "pid %d: more than %d tmpfs mounts",
					   (int) pid, MAX_TMPFS);
		snprintf(m[n].esc, sizeof(m[n].esc), "%s", mp);
		unescape(mp);
		snprintf(m[n].path, sizeof(m[n].path), "%s", mp);
		m[n].dev = makedev(maj, min);
		n++;
	}
	for (int k = 0; k < n; k++)
		for (int j = 0; j < nfuse; j++)
			if (beneath(m[k].esc, fuse[j]))
				return urs_err_set(err, -ENOTSUP,
						   "pid %d: the tmpfs at %s lies beneath the FUSE "
						   "mount %s (a gofer volume): it cannot be saved",
						   (int) pid, m[k].path, fuse[j]);
	return n;
}

/* @path (absolute, as the task sees it) opened beneath @rootfd. */
static int open_in_root(int rootfd, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int) syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* Does directory @dfd hold nothing but mount points (of the configuration:
 * they are made before the restore fills the tmpfs, and not saved)? Entries
 * are stat'ed without asking their file system (a FUSE server may be
 * frozen). */
static bool dir_empty(int dfd)
{
	struct statx top;
	DIR *d = urs_opendir_at(dfd);
	if (!d)
		return false;
	if (statx(dfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &top) < 0) {
		closedir(d);
		return false;
	}
	rewinddir(d); /* the dup shares its offset with @dfd and its other readers */
	struct dirent *de;
	bool empty = true;
	while (empty && (de = readdir(d))) {
		struct statx sx;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		empty = statx(dfd, de->d_name,
			      AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT,
			      STATX_MNT_ID, &sx) == 0 &&
			sx.stx_mnt_id != top.stx_mnt_id;
	}
	closedir(d);
	return empty;
}

bool ckpt_tmpfs_has_content(const char *dir)
{
	char p[PATH_MAX + 32], buf[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, CKPT_TMPFS_INDEX);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool bol = true;
	ssize_t k;
	while ((k = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < k; i++) {
			if (bol && buf[i] != '-')
				return true; /* "tmpfs-N.img\t...": contents */
			bol = buf[i] == '\n';
		}
	return k < 0; /* unreadable: assume there are */
}

void ckpt_tmpfs_forget(const char *dir)
{
	/* what an index there names (the images are numbered from 0 on) */
	char p[PATH_MAX + 32], buf[256];
	snprintf(p, sizeof(p), "%s/%s", dir, CKPT_TMPFS_INDEX);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	int n = 0;
	ssize_t k;
	while ((k = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < k; i++)
			n += buf[i] == '\n';
	unlink(p);
	for (int i = 0; i < n && i < MAX_TMPFS; i++) {
		snprintf(p, sizeof(p), "%s/tmpfs-%d.img", dir, i);
		unlink(p);
	}
}

int ckpt_tmpfs_save(pid_t pid, const char *dir, bool frozen, struct urs_err *err)
{
	ckpt_tmpfs_forget(dir); /* an older image's */
	/* not calloc: each entry is written before it is read, and zeroing
	 * 256 KiB (recycled heap memory after the dump's buffers) cost up to
	 * 0.5 ms of the checkpoint */
	_cleanup_free_ struct tmnt *m = malloc(MAX_TMPFS * sizeof(*m));
	_cleanup_free_ char *index = malloc(MAX_INDEX);
	if (!m || !index)
		return urs_err_set(err, -ENOMEM, "saving tmpfs mounts: out of memory");
	int n = list_tmpfs(pid, m, err);
	if (n <= 0)
		return n;
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/root", (int) pid);
	_cleanup_close_ int rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return urs_err_set(err, -errno, "pid %d: its root: %m", (int) pid);
	size_t ilen = 0;
	int saved = 0, r = 0;
	for (int k = 0; k < n && r == 0; k++) {
		_cleanup_close_ int dfd = open_in_root(rootfd, m[k].path);
		struct stat st;
		if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_dev != m[k].dev) {
			r = urs_err_set(err, dfd < 0 ? dfd : -ESTALE,
					"pid %d: tmpfs %s: cannot open it beneath its root",
					(int) pid, m[k].path);
			break;
		}
		if (dir_empty(dfd)) {
			ilen += (size_t) snprintf(index + ilen, MAX_INDEX - ilen, "-\t%llx\t%s\n",
						  (unsigned long long) m[k].dev, m[k].esc);
			continue;
		}
		if (!frozen) {
			r = urs_err_set(
				err, -ENOTSUP,
				"pid %d: files on the tmpfs at %s cannot be saved consistently "
				"without the cgroup v2 freezer (the sandbox runs on while "
				"they are read)",
				(int) pid, m[k].path);
			break;
		}
		char img[PATH_MAX + 32];
		snprintf(img, sizeof(img), "%s/tmpfs-%d.img", dir, saved);
		_cleanup_close_ int fd =
			open(img, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			r = urs_err_set(err, -errno, "creating %s: %m", img);
			break;
		}
		if ((r = urs_fstree_pack(dfd, fd, NULL, NULL, err)) < 0) {
			urs_err_wrap(err, r, "pid %d: tmpfs %s", (int) pid, m[k].path);
			break;
		}
		ilen += (size_t) snprintf(index + ilen, MAX_INDEX - ilen,
					  "tmpfs-%d.img\t%llx\t%s\n", saved,
					  (unsigned long long) m[k].dev, m[k].esc);
		saved++;
	}
	if (r == 0) {
		char ip[PATH_MAX + 32];
		snprintf(ip, sizeof(ip), "%s/%s", dir, CKPT_TMPFS_INDEX);
		_cleanup_close_ int fd =
			open(ip, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || (r = urs_write_all(fd, index, ilen)) < 0)
			r = urs_err_set(err, fd < 0 ? -errno : r, "writing %s: %s", ip,
					strerror(fd < 0 ? errno : -r));
	}
	if (r < 0) {
		char ip[PATH_MAX + 32];
		snprintf(ip, sizeof(ip), "%s/%s", dir, CKPT_TMPFS_INDEX);
		unlink(ip);
		for (int k = 0; k <= saved; k++) { /* and the one being written */
			snprintf(ip, sizeof(ip), "%s/tmpfs-%d.img", dir, k);
			unlink(ip);
		}
		return r;
	}
	return saved;
}

/* One line of the index: "IMAGE\tDEV\tPATH" -> @name (NULL for "-"), @dev,
 * @path (unescaped). */
static int parse_line(char *line, char **name, uint64_t *dev, char **path)
{
	char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
	if (!t2)
		return -EINVAL;
	*t1 = *t2 = 0;
	*path = t2 + 1;
	char *end;
	errno = 0;
	unsigned long long d = strtoull(t1 + 1, &end, 16);
	if (errno || *end || end == t1 + 1 || (*path)[0] != '/' || strchr(*path, ' '))
		return -EINVAL;
	*dev = d;
	unescape(*path);
	if (!strcmp(line, "-")) {
		*name = NULL;
		return 0;
	}
	*name = line;
	unsigned k;
	int used = 0;
	if (sscanf(line, "tmpfs-%u.img%n", &k, &used) != 1 || (size_t) used != strlen(line) ||
	    k >= MAX_TMPFS)
		return -EINVAL;
	return 0;
}

int ckpt_tmpfs_restore(pid_t pid, const char *dir, struct ckpt_dev_map *map, uint32_t max,
		       uint32_t *n, struct urs_err *err)
{
	char ip[PATH_MAX + 32];
	snprintf(ip, sizeof(ip), "%s/%s", dir, CKPT_TMPFS_INDEX);
	_cleanup_close_ int ifd = open(ip, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (ifd < 0)
		return errno == ENOENT ? 0 : urs_err_set(err, -errno, "restore: %s: %m", ip);
	_cleanup_free_ char *index = malloc(MAX_INDEX + 1);
	if (!index)
		return urs_err_set(err, -ENOMEM, "restore: out of memory");
	ssize_t len = read(ifd, index, MAX_INDEX + 1);
	if (len < 0 || len > MAX_INDEX)
		return urs_err_set(err, len < 0 ? -errno : -EFBIG, "restore: %s: %s", ip,
				   len < 0 ? strerror(errno) : "too long");
	index[len] = 0;
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/root", (int) pid);
	_cleanup_close_ int rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return urs_err_set(err, -errno, "restore: the sandbox's root: %m");
	_cleanup_close_ int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return urs_err_set(err, -errno, "restore: %s: %m", dir);
	char *save = NULL;
	for (char *line = strtok_r(index, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *name, *path;
		uint64_t dev;
		if (parse_line(line, &name, &dev, &path) < 0)
			return urs_err_set(err, -EINVAL, "restore: %s: a malformed line", ip);
		_cleanup_close_ int dfd = open_in_root(rootfd, path);
		struct statfs sf;
		struct statx sx;
		if (dfd < 0 || fstatfs(dfd, &sf) < 0 || sf.f_type != TMPFS_MAGIC ||
		    statx(dfd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) < 0 ||
		    !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) || !dir_empty(dfd))
			return urs_err_set(
				err, -ENOENT,
				"restore: the sandbox had a tmpfs at %s, but the restored "
				"one has no empty tmpfs there (config.json changed?)",
				path);
		if (*n == max)
			return urs_err_set(err, -E2BIG, "restore: %s: too many entries", ip);
		map[(*n)++] =
			(struct ckpt_dev_map){.from = dev,
					      .to = makedev(sx.stx_dev_major, sx.stx_dev_minor),
					      .any_ino = true};
		if (!name)
			continue;
		_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			return urs_err_set(err, -errno, "restore: %s/%s: %m", dir, name);
		/* like core.img: whoever can write it decides what the sandbox sees */
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
			return urs_err_set(err, -EPERM,
					   "restore: %s/%s must be a regular file owned by us and "
					   "writable by nobody else",
					   dir, name);
		int r = urs_fstree_unpack(fd, dfd, NULL, err);
		if (r < 0)
			return urs_err_wrap(err, r, "restore: tmpfs %s (%s)", path, name);
	}
	return 0;
}
