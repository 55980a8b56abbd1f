/*
 * actors/gofer/ops.c — the gofer's FUSE operation handlers.
 *
 * Host-side rules, on every path:
 *  - a name from the kernel is one component (no '/', not "." or ".."),
 *    resolved with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 *    RESOLVE_NO_MAGICLINKS) from the O_PATH fd of its parent inode, with
 *    O_NOFOLLOW: a symlink is returned as a symlink and never followed here;
 *  - an inode is reopened only through its own O_PATH fd (/proc/self/fd/N
 *    names exactly that object, no path walk), never by path; that fd comes
 *    from gofer_inode_fd(): cached, or reopened from the file handle taken
 *    at lookup and checked to be the same (dev, ino);
 *  - *at() calls name one component relative to a held directory fd;
 *  - read-only volumes refuse every mutating op with EROFS; device nodes
 *    and whiteouts are refused (EPERM); setuid/setgid bits are stripped on
 *    create and chmod of non-directories; only user.* xattrs exist.
 * READ, WRITE (without passthrough; unless sync_rw) and FSYNC are io_uring
 * operations on the host fd, answered from their completion; everything else
 * is synchronous.
 * Locks are not negotiated (no FUSE_POSIX_LOCKS / FUSE_FLOCK_LOCKS), so the
 * kernel keeps POSIX and flock locks coherent among the sandbox's processes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "actors/gofer/int.h"

#define RESOLVE_SAFE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
#define FH_PT	     (1ull << 32) /* the open holds a passthrough backing reference */
/* a passthrough open keeps no host fd (the kernel holds the backing file):
 * the rare requests that need one reopen the inode with the open's access
 * mode (bits FH_ACC_SHIFT..+1) for the request */
#define FH_NOFD	     (1ull << 33)
#define FH_ACC_SHIFT 34

#define IN(type, var)                \
	type var;                    \
	if (r->inlen < sizeof(type)) \
		return -EINVAL;      \
	memcpy(&var, r->in, sizeof(type))

#define RO_CHECK(g)                    \
	do {                           \
		if ((g)->o.rdonly)     \
			return -EROFS; \
	} while (0)

static int openat2_fd(int dirfd, const char *name, uint64_t flags, uint64_t mode)
{
	struct open_how how = {.flags = flags, .mode = mode, .resolve = RESOLVE_SAFE};
	int fd = (int) syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

static void proc_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* The @k-th NUL-terminated string of the request, after @skip bytes of
 * fixed input; validated as one path component when @component. */
static const char *in_str(struct greq *r, size_t skip, int k, bool component)
{
	if (skip > r->inlen)
		return NULL;
	const char *p = (const char *) r->in + skip, *end = (const char *) r->in + r->inlen;
	for (;;) {
		const char *z = memchr(p, 0, (size_t) (end - p));
		if (!z)
			return NULL;
		if (k-- == 0) {
			if (component) {
				if (z == p || memchr(p, '/', (size_t) (z - p)) || !strcmp(p, ".") ||
				    !strcmp(p, ".."))
					return NULL;
			}
			return p;
		}
		p = z + 1;
		if (p >= end)
			return NULL;
	}
}

#define IFD(g, i) gofer_inode_fd(&(g)->it, (i))

static int istat(struct urs_gofer *g, struct ginode *i, struct stat *st)
{
	int fd = IFD(g, i);
	if (fd < 0)
		return fd;
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

static void fill_attr(struct fuse_attr *a, const struct stat *st)
{
	*a = (struct fuse_attr){
		.ino = st->st_ino,
		.size = (uint64_t) st->st_size,
		.blocks = (uint64_t) st->st_blocks,
		.atime = (uint64_t) st->st_atim.tv_sec,
		.mtime = (uint64_t) st->st_mtim.tv_sec,
		.ctime = (uint64_t) st->st_ctim.tv_sec,
		.atimensec = (uint32_t) st->st_atim.tv_nsec,
		.mtimensec = (uint32_t) st->st_mtim.tv_nsec,
		.ctimensec = (uint32_t) st->st_ctim.tv_nsec,
		.mode = st->st_mode,
		.nlink = (uint32_t) st->st_nlink,
		.uid = st->st_uid,
		.gid = st->st_gid,
		.rdev = (uint32_t) st->st_rdev,
		.blksize = (uint32_t) st->st_blksize,
	};
}

static void fill_entry(struct urs_gofer *g, struct fuse_entry_out *e, const struct ginode *i,
		       const struct stat *st)
{
	*e = (struct fuse_entry_out){.nodeid = gofer_inode_id(&g->it, i),
				     .entry_valid = g->attr_sec,
				     .attr_valid = g->attr_sec,
				     .entry_valid_nsec = g->attr_nsec,
				     .attr_valid_nsec = g->attr_nsec};
	fill_attr(&e->attr, st);
}

/* Look @name up beneath @parent and take a kernel reference on it. */
static int lookup_ref(struct urs_gofer *g, struct ginode *parent, const char *name,
		      struct fuse_entry_out *e)
{
	if (parent->type != S_IFDIR)
		return -ENOTDIR;
	int pfd = IFD(g, parent);
	if (pfd < 0)
		return pfd;
	int fd = openat2_fd(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return fd == -EXDEV || fd == -ELOOP ? -EACCES : fd;
	struct stat st;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	int err = 0;
	struct ginode *i = gofer_inode_ref(&g->it, fd, true, &st, &err);
	if (!i)
		return err;
	fill_entry(g, e, i, &st);
	return 0;
}

static struct ginode *node(struct greq *r)
{
	return gofer_inode_get(&r->g->it, r->h->nodeid);
}

#define NODE(var)                     \
	struct ginode *var = node(r); \
	if (!var)                     \
	return -ESTALE

/* A missing name: a negative entry (nodeid 0) the kernel may cache for the
 * entry timeout, like a positive one, instead of asking again on every
 * lookup of it (PATH searches, imports, stat of absent files). */
static int reply_negative(struct greq *r)
{
	struct fuse_entry_out e = {.entry_valid = r->g->attr_sec,
				   .entry_valid_nsec = r->g->attr_nsec};
	return gofer_reply(r, 0, &e, sizeof(e));
}

static int reply_entry(struct greq *r, struct ginode *parent, const char *name)
{
	struct fuse_entry_out e;
	int err = lookup_ref(r->g, parent, name, &e);
	if (err < 0)
		return err;
	return gofer_reply(r, 0, &e, sizeof(e));
}

/* New objects belong to the caller (setgid directories pass their group on),
 * with exactly the mode asked for (the kernel applied the umask; ours must
 * not apply again). @st is the new object's stat, refreshed if anything is
 * changed; nothing is called when it is right already (the common case: the
 * host applied the same setgid rule and the same umask). */
static int own_new(struct urs_gofer *g, struct greq *r, struct ginode *parent, int fd,
		   uint32_t mode, bool is_link, struct stat *st)
{
	gid_t gid = r->h->gid;
	if (st->st_gid != gid) {
		/* the host gave the directory's group: right if it is setgid */
		struct stat pst;
		if (istat(g, parent, &pst) == 0 && (pst.st_mode & S_ISGID))
			gid = pst.st_gid;
	}
	bool changed = false;
	if (st->st_uid != r->h->uid || st->st_gid != gid) {
		if (fchownat(fd, "", r->h->uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		changed = true;
	}
	if (!is_link && (changed || (st->st_mode & 07777) != (mode & 07777))) {
		/* chown may have cleared setgid: compare again */
		if (changed && fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if ((st->st_mode & 07777) != (mode & 07777)) {
			char p[32];
			proc_path(p, sizeof(p), fd);
			if (chmod(p, mode & 07777) < 0)
				return -errno;
			changed = true;
		}
	}
	if (changed && fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

/* own_new() for an object just made under @name (mkdir, mknod, symlink). */
static void own_name(struct greq *r, struct ginode *p, const char *name, uint32_t mode,
		     bool is_link)
{
	int pfd = IFD(r->g, p);
	if (pfd < 0)
		return;
	int fd = openat2_fd(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	struct stat st;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0)
		own_new(r->g, r, p, fd, mode, is_link, &st);
	close(fd);
}

/* FUSE_HANDLE_KILLPRIV_V2: a write or truncate by someone without
 * CAP_FSETID clears setuid, and setgid if group-executable (as the VFS
 * would; our host calls run as root, which keeps them). @fd: any fd of the
 * file, O_PATH included. */
static int kill_suidgid(int fd)
{
	struct stat st;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH) < 0)
		return -errno;
	mode_t kill = S_ISUID | ((st.st_mode & S_IXGRP) ? S_ISGID : 0);
	if (!S_ISREG(st.st_mode) || !(st.st_mode & kill))
		return 0;
	char p[32];
	proc_path(p, sizeof(p), fd);
	return chmod(p, st.st_mode & 07777 & ~kill) < 0 ? -errno : 0;
}

static uint32_t strip_mode(uint32_t mode, bool dir)
{
	mode &= 07777;
	mode &= ~(uint32_t) S_ISUID;
	if (!dir)
		mode &= ~(uint32_t) S_ISGID;
	return mode;
}

/* ---- connection ---- */

static int op_init(struct greq *r)
{
	struct urs_gofer *g = r->g;
	struct fuse_init_in in = {0};
	if (r->inlen < 16)
		return -EINVAL;
	memcpy(&in, r->in, r->inlen < sizeof(in) ? r->inlen : sizeof(in));
	struct fuse_init_out out = {.major = FUSE_KERNEL_VERSION};
	if (in.major != FUSE_KERNEL_VERSION) {
		/* the kernel retries with our major; nothing else is read */
		return in.major > FUSE_KERNEL_VERSION ? gofer_reply(r, 0, &out, 8) : -EPROTO;
	}
	uint64_t kflags = in.flags;
	if (kflags & FUSE_INIT_EXT)
		kflags |= (uint64_t) in.flags2 << 32;
	/* HANDLE_KILLPRIV_V2: we clear suid/sgid on write/truncate (below),
	 * and the kernel marks the superblock NOSEC, so it stops asking for
	 * security.capability (GETXATTR) before every write */
	uint64_t want = FUSE_ASYNC_READ | FUSE_ATOMIC_O_TRUNC | FUSE_BIG_WRITES |
			FUSE_AUTO_INVAL_DATA | FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES |
			FUSE_INIT_EXT | FUSE_HANDLE_KILLPRIV_V2;
	if (!g->o.no_readdirplus)
		want |= FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO;
	uint64_t pt = (uint64_t) URS_FUSE_PASSTHROUGH_FLAG2 << 32;
	if (!g->o.no_passthrough)
		want |= pt;
	want |= gofer_uring_offer(g, kflags); /* FUSE over io_uring (gofer/uring.c) */
	uint64_t got = kflags & want;
	g->minor = in.minor;
	out.minor = in.minor < 40 ? in.minor : 40;
	out.max_readahead = in.max_readahead;
	out.flags = (uint32_t) got;
	out.flags2 = (uint32_t) (got >> 32);
	out.max_background = 16;
	out.congestion_threshold = 12;
	out.max_write = g->o.max_write;
	out.time_gran = 1;
	out.max_pages = (uint16_t) (g->o.max_write / 4096);
	if (got & pt) {
		out.unused[0] = 1; /* max_stack_depth: our backing files are not stacked */
		g->passthrough = true;
	}
	g->st.initialized = true;
	return gofer_reply(r, 0, &out, sizeof(out));
}

/* ---- names ---- */

static int op_lookup(struct greq *r)
{
	NODE(p);
	const char *name = in_str(r, 0, 0, true);
	if (!name)
		return -EINVAL;
	int err = reply_entry(r, p, name);
	if (err == -ENOENT && (r->g->attr_sec || r->g->attr_nsec))
		return reply_negative(r);
	return err;
}

static int op_forget(struct greq *r)
{
	if (r->inlen >= sizeof(struct fuse_forget_in)) {
		struct fuse_forget_in in;
		memcpy(&in, r->in, sizeof(in));
		struct ginode *i = node(r);
		if (i)
			gofer_inode_forget(&r->g->it, i, in.nlookup);
	}
	return GOFER_NOREPLY;
}

static int op_batch_forget(struct greq *r)
{
	struct fuse_batch_forget_in in;
	if (r->inlen < sizeof(in))
		return GOFER_NOREPLY;
	memcpy(&in, r->in, sizeof(in));
	size_t avail = (r->inlen - sizeof(in)) / sizeof(struct fuse_forget_one);
	if (in.count > avail)
		in.count = (uint32_t) avail;
	for (uint32_t k = 0; k < in.count; k++) {
		struct fuse_forget_one one;
		memcpy(&one, r->in + sizeof(in) + k * sizeof(one), sizeof(one));
		struct ginode *i = gofer_inode_get(&r->g->it, one.nodeid);
		if (i)
			gofer_inode_forget(&r->g->it, i, one.nlookup);
	}
	return GOFER_NOREPLY;
}

/* ---- attributes ---- */

static int reply_attr(struct greq *r, const struct stat *st)
{
	struct fuse_attr_out out = {.attr_valid = r->g->attr_sec,
				    .attr_valid_nsec = r->g->attr_nsec};
	fill_attr(&out.attr, st);
	return gofer_reply(r, 0, &out, sizeof(out));
}

static int op_getattr(struct greq *r)
{
	NODE(i);
	struct stat st;
	int err = istat(r->g, i, &st);
	if (err < 0)
		return err;
	return reply_attr(r, &st);
}

static int op_setattr(struct greq *r)
{
	NODE(i);
	IN(struct fuse_setattr_in, in);
	struct urs_gofer *g = r->g;
	RO_CHECK(g);
	/* by fh when the open keeps an fd (else through the inode, as root:
	 * the kernel checked the caller's rights on its open) */
	int fh = (in.valid & FATTR_FH) && !(in.fh & FH_NOFD) ? (int) (uint32_t) in.fh : -1;
	/* only @i's fd is used below: it stays cached throughout */
	int ifd = IFD(g, i);
	if (ifd < 0)
		return ifd;
	char p[32];
	proc_path(p, sizeof(p), ifd);
	if (in.valid & FATTR_MODE) {
		if (i->type == S_IFLNK)
			return -EOPNOTSUPP;
		mode_t m = strip_mode(in.mode, i->type == S_IFDIR);
		if ((fh >= 0 ? fchmod(fh, m) : chmod(p, m)) < 0)
			return -errno;
	}
	if (in.valid & (FATTR_UID | FATTR_GID)) {
		uid_t u = (in.valid & FATTR_UID) ? in.uid : (uid_t) -1;
		gid_t gr = (in.valid & FATTR_GID) ? in.gid : (gid_t) -1;
		if (fchownat(ifd, "", u, gr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	if (in.valid & FATTR_SIZE) {
		if (i->type == S_IFDIR)
			return -EISDIR;
		if (i->type != S_IFREG)
			return -EINVAL;
		int64_t grow = 0;
		if (g->quota) {
			struct stat ost;
			int err = istat(g, i, &ost);
			if (err < 0)
				return err;
			grow = (int64_t) in.size - (int64_t) ost.st_size;
			if ((err = gofer_quota_charge(g, grow, 0)) < 0)
				return err;
		}
		if ((fh >= 0 ? ftruncate(fh, (off_t) in.size) : truncate(p, (off_t) in.size)) < 0) {
			int err = -errno;
			gofer_quota_charge(g, -grow, 0);
			return err;
		}
	}
	if (in.valid & (FATTR_ATIME | FATTR_MTIME | FATTR_ATIME_NOW | FATTR_MTIME_NOW)) {
		struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};
		if (in.valid & FATTR_ATIME_NOW)
			ts[0].tv_nsec = UTIME_NOW;
		else if (in.valid & FATTR_ATIME)
			ts[0] = (struct timespec){(time_t) in.atime, in.atimensec};
		if (in.valid & FATTR_MTIME_NOW)
			ts[1].tv_nsec = UTIME_NOW;
		else if (in.valid & FATTR_MTIME)
			ts[1] = (struct timespec){(time_t) in.mtime, in.mtimensec};
		int rc = fh >= 0	      ? futimens(fh, ts)
			 : i->type == S_IFLNK ? -2
					      : utimensat(AT_FDCWD, p, ts, 0);
		if (rc == -2)
			return -EOPNOTSUPP;
		if (rc < 0)
			return -errno;
	}
	if ((in.valid & FATTR_KILL_SUIDGID) && i->type == S_IFREG) {
		int err = kill_suidgid(ifd);
		if (err < 0)
			return err;
	}
	struct stat st;
	int err = istat(g, i, &st);
	if (err < 0)
		return err;
	return reply_attr(r, &st);
}

static int op_access(struct greq *r)
{
	NODE(i);
	IN(struct fuse_access_in, in);
	struct stat st;
	int err = istat(r->g, i, &st);
	if (err < 0)
		return err;
	if ((in.mask & W_OK) && r->g->o.rdonly)
		return -EROFS;
	unsigned m = st.st_mode;
	unsigned bits = st.st_uid == r->h->uid ? (m >> 6) : st.st_gid == r->h->gid ? (m >> 3) : m;
	if (r->h->uid == 0) {
		if ((in.mask & X_OK) && !S_ISDIR(m) && !(m & 0111))
			return -EACCES;
		return gofer_reply(r, 0, NULL, 0);
	}
	if (in.mask & ~bits & 7)
		return -EACCES;
	return gofer_reply(r, 0, NULL, 0);
}

/* ---- links ---- */

static int op_readlink(struct greq *r)
{
	NODE(i);
	if (i->type != S_IFLNK)
		return -EINVAL;
	size_t cap = r->bufsz < 4096 + 16 ? r->bufsz : 4096 + 16;
	int fd = IFD(r->g, i);
	if (fd < 0)
		return fd;
	ssize_t n = readlinkat(fd, "", (char *) r->buf, cap);
	if (n < 0)
		return -errno;
	return gofer_reply(r, 0, r->buf, (size_t) n);
}

/* A make that failed after its inode was charged to the quota: uncharge,
 * and its -errno. */
static int uncharge_errno(struct urs_gofer *g)
{
	int err = -errno;
	gofer_quota_charge(g, 0, -1);
	return err;
}

static int op_symlink(struct greq *r)
{
	NODE(p);
	RO_CHECK(r->g);
	const char *name = in_str(r, 0, 0, true), *target = in_str(r, 0, 1, false);
	if (!name || !target)
		return -EINVAL;
	int pfd = IFD(r->g, p);
	if (pfd < 0)
		return pfd;
	int err = gofer_quota_charge(r->g, 0, 1);
	if (err < 0)
		return err;
	if (symlinkat(target, pfd, name) < 0)
		return uncharge_errno(r->g);
	own_name(r, p, name, 0, true);
	return reply_entry(r, p, name);
}

static int op_mknod(struct greq *r)
{
	NODE(p);
	IN(struct fuse_mknod_in, in);
	RO_CHECK(r->g);
	const char *name = in_str(r, sizeof(in), 0, true);
	if (!name)
		return -EINVAL;
	uint32_t t = in.mode & S_IFMT;
	if (t != S_IFREG && t != S_IFIFO && t != S_IFSOCK)
		return -EPERM; /* no device nodes, ever */
	uint32_t mode = strip_mode(in.mode, false);
	int pfd = IFD(r->g, p);
	if (pfd < 0)
		return pfd;
	int err = gofer_quota_charge(r->g, 0, 1);
	if (err < 0)
		return err;
	if (mknodat(pfd, name, t | mode, 0) < 0)
		return uncharge_errno(r->g);
	own_name(r, p, name, mode, false);
	return reply_entry(r, p, name);
}

static int op_mkdir(struct greq *r)
{
	NODE(p);
	IN(struct fuse_mkdir_in, in);
	RO_CHECK(r->g);
	const char *name = in_str(r, sizeof(in), 0, true);
	if (!name)
		return -EINVAL;
	uint32_t mode = strip_mode(in.mode, true);
	int pfd = IFD(r->g, p);
	if (pfd < 0)
		return pfd;
	int err = gofer_quota_charge(r->g, 0, 1);
	if (err < 0)
		return err;
	if (mkdirat(pfd, name, mode) < 0)
		return uncharge_errno(r->g);
	struct stat pst;
	if (istat(r->g, p, &pst) == 0 && (pst.st_mode & S_ISGID))
		mode |= S_ISGID; /* inherited, as the host would */
	own_name(r, p, name, mode, false);
	return reply_entry(r, p, name);
}

static int op_unlink(struct greq *r, int flags)
{
	NODE(p);
	RO_CHECK(r->g);
	const char *name = in_str(r, 0, 0, true);
	if (!name)
		return -EINVAL;
	int pfd = IFD(r->g, p);
	if (pfd < 0)
		return pfd;
	struct stat st;
	bool counted = r->g->quota && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (unlinkat(pfd, name, flags) < 0)
		return -errno;
	if (counted)
		gofer_quota_gone(r->g, &st);
	return gofer_reply(r, 0, NULL, 0);
}

static int op_rename(struct greq *r, bool v2)
{
	NODE(p);
	struct urs_gofer *g = r->g;
	RO_CHECK(g);
	uint64_t newdir;
	uint32_t flags = 0;
	size_t skip;
	if (v2) {
		IN(struct fuse_rename2_in, in);
		newdir = in.newdir;
		flags = in.flags;
		skip = sizeof(in);
	} else {
		IN(struct fuse_rename_in, in);
		newdir = in.newdir;
		skip = sizeof(in);
	}
	if (flags & ~(uint32_t) (RENAME_NOREPLACE | RENAME_EXCHANGE))
		return flags & RENAME_WHITEOUT ? -EPERM : -EINVAL; /* a whiteout is a device */
	struct ginode *np = gofer_inode_get(&g->it, newdir);
	if (!np)
		return -ESTALE;
	const char *oldn = in_str(r, skip, 0, true), *newn = in_str(r, skip, 1, true);
	if (!oldn || !newn)
		return -EINVAL;
	int pfd, npfd;
	int err = gofer_inode_fd2(&g->it, p, np, &pfd, &npfd);
	if (err < 0)
		return err;
	struct stat tst; /* a replaced target is gone */
	bool counted = g->quota && !(flags & RENAME_EXCHANGE) &&
		       fstatat(npfd, newn, &tst, AT_SYMLINK_NOFOLLOW) == 0;
	if (syscall(SYS_renameat2, pfd, oldn, npfd, newn, flags) < 0)
		return -errno;
	if (counted)
		gofer_quota_gone(g, &tst);
	return gofer_reply(r, 0, NULL, 0);
}

static int op_link(struct greq *r)
{
	NODE(np);
	IN(struct fuse_link_in, in);
	RO_CHECK(r->g);
	struct ginode *old = gofer_inode_get(&r->g->it, in.oldnodeid);
	if (!old)
		return -ESTALE;
	const char *name = in_str(r, sizeof(in), 0, true);
	if (!name)
		return -EINVAL;
	if (old->type == S_IFDIR)
		return -EPERM;
	int ofd, npfd;
	int err = gofer_inode_fd2(&r->g->it, old, np, &ofd, &npfd);
	if (err < 0)
		return err;
	if (linkat(ofd, "", npfd, name, AT_EMPTY_PATH) < 0)
		return -errno;
	return reply_entry(r, np, name);
}

/* ---- open files ---- */

/* Passthrough for a regular file opened as @fd: register the inode's backing
 * file on the connection once and share it among its opens (the kernel
 * requires one backing file per inode). Returns the backing id or 0. */
static int32_t backing_get(struct urs_gofer *g, struct ginode *i, int fd)
{
	if (!g->passthrough || i->type != S_IFREG)
		return 0;
	if (i->backing_id <= 0) {
		struct urs_fuse_backing_map map = {.fd = fd};
		int id = ioctl(g->fuse_fd, URS_FUSE_DEV_IOC_BACKING_OPEN, &map);
		if (id <= 0) {
			if (errno == EPERM || errno == ENOTTY || errno == EOPNOTSUPP ||
			    errno == EINVAL)
				g->passthrough =
					false; /* not for us: data goes through the gofer */
			return 0;
		}
		i->backing_id = id;
		i->backing_refs = 0;
	}
	i->backing_refs++;
	return i->backing_id;
}

static void backing_put(struct urs_gofer *g, struct ginode *i)
{
	if (i->backing_id <= 0 || i->backing_refs == 0)
		return;
	if (--i->backing_refs == 0) {
		uint32_t id = (uint32_t) i->backing_id;
		ioctl(g->fuse_fd, URS_FUSE_DEV_IOC_BACKING_CLOSE, &id);
		i->backing_id = 0;
	}
}

/*
 * Open files and directories hold a host fd each while open (READ, WRITE,
 * FSYNC, FALLOCATE, SETATTR by fh, READDIR use it; with passthrough the
 * kernel holds its own reference to the backing file but the gofer still
 * answers FSYNC/FALLOCATE/LSEEK/... with it). So that the supervisor's fd
 * table stays bounded, their number is capped: o.max_open per volume, or a
 * budget shared by all the gofers of the process (o.budget); past it OPEN,
 * OPENDIR and CREATE answer ENFILE ("Too many open files in system").
 * Passthrough opens are not counted: once the backing file is registered
 * the kernel holds it, and the gofer closes its fd (FH_NOFD).
 */
static void open_count(struct urs_gofer *g, int d, bool holds_fd)
{
	g->open_files = (uint32_t) ((int) g->open_files + d);
	if (!holds_fd)
		return;
	g->open_fds = (uint32_t) ((int) g->open_fds + d);
	if (g->o.budget)
		g->o.budget->open_files = (uint32_t) ((int) g->o.budget->open_files + d);
}

static int open_admit(struct urs_gofer *g)
{
	uint32_t n = g->o.budget ? g->o.budget->open_files : g->open_fds;
	uint32_t max = g->o.budget ? g->o.budget->max_open : g->o.max_open;
	if (n >= max) {
		g->st.open_refused++;
		return -ENFILE;
	}
	return 0;
}

static int host_open_flags(uint32_t flags)
{
	return (int) (flags & ~(uint32_t) (O_CREAT | O_EXCL | O_NOCTTY | O_DIRECT | O_NOFOLLOW |
					   O_PATH | O_TMPFILE)) |
	       O_CLOEXEC;
}

static bool wants_write(uint32_t flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

/*
 * The host fd of the open @fh of inode @nodeid: its own, or for a
 * passthrough open that keeps none (FH_NOFD) a new one of the inode with
 * the open's access mode, for this request: *@tmp is set to it, the caller
 * closes it (an fd of the very object: /proc/self/fd of its O_PATH fd).
 */
static int fh_fd(struct greq *r, uint64_t nodeid, uint64_t fh, int *tmp)
{
	*tmp = -1;
	if (!(fh & FH_NOFD))
		return (int) (uint32_t) fh;
	struct ginode *i = gofer_inode_get(&r->g->it, nodeid);
	if (!i)
		return -ESTALE;
	int ifd = IFD(r->g, i);
	if (ifd < 0)
		return ifd;
	char p[32];
	proc_path(p, sizeof(p), ifd);
	int fd = open(p, (int) ((fh >> FH_ACC_SHIFT) & O_ACCMODE) | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return *tmp = fd;
}

#define FH_FD(var, tmp, nodeid, fh)               \
	int tmp;                                  \
	int var = fh_fd(r, (nodeid), (fh), &tmp); \
	if (var < 0)                              \
		return var;                       \
	_cleanup_close_ int tmp##_c = tmp

static int open_reply(struct greq *r, struct ginode *i, int fd, struct fuse_entry_out *e,
		      uint32_t flags)
{
	struct urs_gofer *g = r->g;
	/* FLUSH does nothing here (locks stay in the kernel): not sent at all */
	struct fuse_open_out out = {.fh = (uint64_t) (uint32_t) fd, .open_flags = FOPEN_NOFLUSH};
	bool pt = g->passthrough && i->type == S_IFREG; /* as op_open/op_create decided */
	int32_t id = backing_get(g, i, fd);
	if (id > 0 && wants_write(flags) && r->h->uid != 0) {
		/* passthrough writes reach the host file as ours (root keeps
		 * setuid), and with KILLPRIV_V2 the kernel leaves killing the
		 * bits to us but never tells us of these writes: a non-root
		 * opener for writing clears them now (rare: the gofer never
		 * lets a file get them) */
		int err = kill_suidgid(fd);
		if (err < 0) {
			backing_put(g, i);
			close(fd);
			if (e)
				gofer_inode_forget(&g->it, i, 1);
			return err;
		}
	}
	if (id == 0 && pt) {
		/* passthrough was expected (so not admitted before) and failed:
		 * this open keeps its fd, the cap applies now */
		int err = open_admit(g);
		if (err < 0) {
			close(fd);
			if (e)
				gofer_inode_forget(&g->it, i, 1);
			return err;
		}
	}
	if (id > 0) {
		out.open_flags |= URS_FOPEN_PASSTHROUGH;
		out.padding = (uint32_t) id; /* backing_id */
		/* the kernel holds the backing file: no fd kept here */
		out.fh = FH_PT | FH_NOFD | ((uint64_t) (flags & O_ACCMODE) << FH_ACC_SHIFT);
		close(fd);
		fd = -1;
	}
	i->opens++;
	open_count(g, 1, fd >= 0);
	if (e)
		gofer_reply2(r, e, sizeof(*e), &out, sizeof(out));
	else
		gofer_reply(r, 0, &out, sizeof(out));
	if (r->reply_err == -ENOENT) {
		/* interrupted: the kernel will not release what it never got */
		if (id > 0)
			backing_put(g, i);
		i->opens--;
		open_count(g, -1, fd >= 0);
		if (fd >= 0)
			close(fd);
		if (e)
			gofer_inode_forget(&g->it, i, 1);
	}
	return 0;
}

/* O_TRUNC on a quota'd volume: done here, so the freed bytes are known. */
static int quota_flags(struct urs_gofer *g, int fl)
{
	return g->quota ? fl & ~O_TRUNC : fl;
}

static int quota_trunc(struct urs_gofer *g, int fd, uint32_t flags)
{
	if (!g->quota || !(flags & O_TRUNC))
		return 0;
	struct stat st;
	if (fstat(fd, &st) < 0 || ftruncate(fd, 0) < 0)
		return -errno;
	gofer_quota_charge(g, -(int64_t) st.st_size, 0);
	return 0;
}

static int op_open(struct greq *r, bool dir)
{
	NODE(i);
	IN(struct fuse_open_in, in);
	if (r->g->o.rdonly && !dir && wants_write(in.flags))
		return -EROFS;
	if (dir != (i->type == S_IFDIR))
		return dir ? -ENOTDIR : -EISDIR;
	/* a passthrough open keeps no fd: open_reply decides */
	int err = dir || !r->g->passthrough || i->type != S_IFREG ? open_admit(r->g) : 0;
	if (err < 0)
		return err;
	int ifd = IFD(r->g, i);
	if (ifd < 0)
		return ifd;
	char p[32];
	proc_path(p, sizeof(p), ifd);
	int fd = dir ? open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
		     : open(p, quota_flags(r->g, host_open_flags(in.flags)));
	if (fd < 0)
		return -errno;
	err = dir ? 0 : quota_trunc(r->g, fd, in.flags);
	if (!err && !dir && (in.open_flags & FUSE_OPEN_KILL_SUIDGID) && (in.flags & O_TRUNC))
		err = kill_suidgid(fd);
	if (err < 0) {
		close(fd);
		return err;
	}
	if (dir) {
		struct fuse_open_out out = {.fh = (uint64_t) (uint32_t) fd};
		open_count(r->g, 1, true);
		gofer_reply(r, 0, &out, sizeof(out));
		if (r->reply_err == -ENOENT) {
			close(fd);
			open_count(r->g, -1, true);
		}
		return 0;
	}
	return open_reply(r, i, fd, NULL, in.flags);
}

static int op_create(struct greq *r)
{
	NODE(p);
	IN(struct fuse_create_in, in);
	struct urs_gofer *g = r->g;
	RO_CHECK(g);
	const char *name = in_str(r, sizeof(in), 0, true);
	if (!name)
		return -EINVAL;
	if (p->type != S_IFDIR)
		return -ENOTDIR;
	int pfd = g->passthrough ? 0 : open_admit(g); /* else open_reply decides */
	if (pfd < 0)
		return pfd;
	if ((pfd = IFD(g, p)) < 0)
		return pfd;
	uint32_t mode = strip_mode(in.mode, false);
	int fl = quota_flags(g, host_open_flags(in.flags) | O_NOFOLLOW);
	bool created = true;
	/* a new inode must fit the quota; an existing file may still be opened */
	int fd = gofer_quota_charge(g, 0, 1);
	if (fd == 0) {
		fd = openat2_fd(pfd, name, (uint64_t) (fl | O_CREAT | O_EXCL), mode);
		if (fd < 0)
			gofer_quota_charge(g, 0, -1);
	}
	if ((fd == -EEXIST || fd == -EDQUOT) && !(in.flags & O_EXCL)) {
		int efd = openat2_fd(pfd, name, (uint64_t) fl, 0);
		if (efd != -ENOENT || fd == -EEXIST) {
			created = false;
			fd = efd;
		}
	}
	if (fd < 0)
		return fd == -EXDEV ? -EACCES : fd;
	if (!created) {
		int err = quota_trunc(g, fd, in.flags);
		if (!err && (in.open_flags & FUSE_OPEN_KILL_SUIDGID) && (in.flags & O_TRUNC))
			err = kill_suidgid(fd);
		if (err < 0) {
			close(fd);
			return err;
		}
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	if (created) {
		int err = own_new(g, r, p, fd, mode, false, &st);
		if (err < 0) {
			close(fd);
			if ((pfd = IFD(g, p)) >= 0)
				unlinkat(pfd, name, 0);
			return err;
		}
	}
	/* the entry takes this very object's handle (from the open file, not
	 * from whatever the name means by now); no O_PATH fd is opened: the
	 * first handler that needs one reopens it from the handle */
	int err = 0;
	struct ginode *i = gofer_inode_ref(&g->it, fd, false, &st, &err);
	if (!i) {
		close(fd);
		return err;
	}
	struct fuse_entry_out e;
	fill_entry(g, &e, i, &st);
	return open_reply(r, i, fd, &e, in.flags);
}

static int op_release(struct greq *r, bool dir)
{
	IN(struct fuse_release_in, in);
	struct urs_gofer *g = r->g;
	if (!(in.fh & FH_NOFD))
		close((int) (uint32_t) in.fh);
	open_count(g, -1, !(in.fh & FH_NOFD));
	struct ginode *i = node(r);
	if (!dir && i) {
		if (in.fh & FH_PT)
			backing_put(g, i);
		if (i->opens)
			i->opens--;
		gofer_inode_forget(&g->it, i, 0);
	}
	return gofer_reply(r, 0, NULL, 0);
}

static int op_read(struct greq *r)
{
	IN(struct fuse_read_in, in);
	size_t max = r->bufsz - sizeof(struct fuse_out_header);
	size_t n = in.size < max ? in.size : max;
	FH_FD(fd, tmp, r->h->nodeid, in.fh);
	struct io_uring_sqe *sqe = r->g->o.sync_rw || tmp >= 0 ? NULL : gofer_async_sqe(r);
	if (sqe) {
		/* the request is consumed: its buffer takes the data */
		io_uring_prep_read(sqe, fd, r->buf, (unsigned) n, in.offset);
		return gofer_async_submit(r, GOFER_ASYNC_READ);
	}
	ssize_t got = pread(fd, r->buf, n, (off_t) in.offset);
	if (got < 0)
		return -errno;
	r->g->st.bytes_read += (uint64_t) got;
	return gofer_reply(r, 0, r->buf, (size_t) got);
}

/*
 * Before a write of @len bytes at @off to @fd on a quota'd volume: charge
 * what it would add past the end of the file (*@size: the size before).
 */
static int quota_grow(struct urs_gofer *g, int fd, uint64_t off, uint64_t len, off_t *size,
		      int64_t *grow)
{
	*grow = 0;
	if (!g->quota)
		return 0;
	struct stat st;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fstat(fd, &st) < 0)
		return -errno;
	*size = st.st_size;
	if (fl & O_APPEND)
		off = (uint64_t) st.st_size; /* pwrite appends whatever the offset */
	if (off + len > (uint64_t) st.st_size)
		*grow = (int64_t) (off + len - (uint64_t) st.st_size);
	return gofer_quota_charge(g, *grow, 0);
}

/* After it: give back what was charged and not written. */
static void quota_settle(struct urs_gofer *g, int fd, off_t size, int64_t grow)
{
	struct stat st;
	if (!g->quota || !grow || fstat(fd, &st) < 0)
		return;
	int64_t real = st.st_size > size ? (int64_t) (st.st_size - size) : 0;
	if (real < grow)
		gofer_quota_charge(g, real - grow, 0);
}

static int op_write(struct greq *r)
{
	IN(struct fuse_write_in, in);
	RO_CHECK(r->g);
	if (r->inlen - sizeof(in) < in.size)
		return -EINVAL;
	FH_FD(fd, tmp, r->h->nodeid, in.fh);
	if (in.write_flags & FUSE_WRITE_KILL_SUIDGID) {
		int err = kill_suidgid(fd);
		if (err < 0)
			return err;
	}
	if (r->g->quota) {
		/* synchronous, so that what is charged is settled at once */
		off_t size = 0;
		int64_t grow;
		int err = quota_grow(r->g, fd, in.offset, in.size, &size, &grow);
		if (err < 0)
			return err;
		ssize_t w = pwrite(fd, r->in + sizeof(in), in.size, (off_t) in.offset);
		err = -errno;
		quota_settle(r->g, fd, size, grow);
		if (w < 0)
			return err;
		r->g->st.bytes_written += (uint64_t) w;
		struct fuse_write_out out = {.size = (uint32_t) w};
		return gofer_reply(r, 0, &out, sizeof(out));
	}
	struct io_uring_sqe *sqe = r->g->o.sync_rw || tmp >= 0 ? NULL : gofer_async_sqe(r);
	if (sqe) {
		/* the data stays in the slot's buffer until the completion */
		io_uring_prep_write(sqe, fd, r->in + sizeof(in), in.size, in.offset);
		return gofer_async_submit(r, GOFER_ASYNC_WRITE);
	}
	ssize_t w = pwrite(fd, r->in + sizeof(in), in.size, (off_t) in.offset);
	if (w < 0)
		return -errno;
	r->g->st.bytes_written += (uint64_t) w;
	struct fuse_write_out out = {.size = (uint32_t) w};
	return gofer_reply(r, 0, &out, sizeof(out));
}

static int op_fsync(struct greq *r)
{
	IN(struct fuse_fsync_in, in);
	FH_FD(fd, tmp, r->h->nodeid, in.fh);
	struct io_uring_sqe *sqe = tmp >= 0 ? NULL : gofer_async_sqe(r); /* @tmp closes here */
	if (sqe) {
		/* a sync can take long: the loop keeps serving meanwhile */
		io_uring_prep_fsync(sqe, fd,
				    (in.fsync_flags & FUSE_FSYNC_FDATASYNC) ? IORING_FSYNC_DATASYNC
									    : 0);
		return gofer_async_submit(r, GOFER_ASYNC_FSYNC);
	}
	if (((in.fsync_flags & FUSE_FSYNC_FDATASYNC) ? fdatasync(fd) : fsync(fd)) < 0)
		return -errno;
	return gofer_reply(r, 0, NULL, 0);
}

static int op_fallocate(struct greq *r)
{
	IN(struct fuse_fallocate_in, in);
	RO_CHECK(r->g);
	FH_FD(fd, tmp, r->h->nodeid, in.fh);
	off_t size = 0;
	int64_t grow = 0;
	if (r->g->quota) {
		/* growing the file is charged; blocks past EOF (KEEP_SIZE alone)
		 * and shifting ranges would not be counted: refused */
		uint32_t m = in.mode;
		if (m &
		    ~(uint32_t) (FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
			return -EOPNOTSUPP;
		if (m == FALLOC_FL_KEEP_SIZE)
			return -EOPNOTSUPP;
		if (!(m & FALLOC_FL_KEEP_SIZE)) {
			int err = quota_grow(r->g, fd, in.offset, in.length, &size, &grow);
			if (err < 0)
				return err;
		}
	}
	int rc = fallocate(fd, (int) in.mode, (off_t) in.offset, (off_t) in.length);
	int err = -errno;
	quota_settle(r->g, fd, size, grow);
	if (rc < 0)
		return err;
	return gofer_reply(r, 0, NULL, 0);
}

static int op_lseek(struct greq *r)
{
	IN(struct fuse_lseek_in, in);
	FH_FD(fd, tmp, r->h->nodeid, in.fh);
	off_t o = lseek(fd, (off_t) in.offset, (int) in.whence);
	if (o < 0)
		return -errno;
	struct fuse_lseek_out out = {.offset = (uint64_t) o};
	return gofer_reply(r, 0, &out, sizeof(out));
}

static int op_copy_file_range(struct greq *r)
{
	IN(struct fuse_copy_file_range_in, in);
	RO_CHECK(r->g);
	loff_t oi = (loff_t) in.off_in, oo = (loff_t) in.off_out;
	size_t len = in.len < (64u << 20) ? in.len : (64u << 20); /* the loop is not held long */
	FH_FD(ifd, itmp, r->h->nodeid, in.fh_in);
	FH_FD(ofd, otmp, in.nodeid_out, in.fh_out);
	off_t size = 0;
	int64_t grow = 0;
	int err = quota_grow(r->g, ofd, in.off_out, len, &size, &grow);
	if (err < 0)
		return err;
	ssize_t n = copy_file_range(ifd, &oi, ofd, &oo, len, (unsigned) in.flags);
	err = -errno;
	quota_settle(r->g, ofd, size, grow);
	if (n < 0)
		return err;
	struct fuse_write_out out = {.size = (uint32_t) n};
	return gofer_reply(r, 0, &out, sizeof(out));
}

/* ---- directories ---- */

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static int op_readdir(struct greq *r, bool plus)
{
	NODE(dir);
	IN(struct fuse_read_in, in);
	struct urs_gofer *g = r->g;
	int fd = (int) (uint32_t) in.fh;
	/* output at the start of the buffer, host dirents after it */
	size_t half = r->bufsz / 2;
	size_t cap = in.size < half ? in.size : half;
	unsigned char *out = r->buf, *scratch = r->buf + half;
	size_t scap = r->bufsz - half < 8192 ? r->bufsz - half : 8192;
	size_t used = 0;
	if (lseek(fd, (off_t) in.offset, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, scratch, scap);
		if (n < 0) {
			if (used)
				break;
			return -errno;
		}
		if (n == 0)
			break;
		bool full = false;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *) (scratch + off);
			off += d->d_reclen;
			size_t nl = strlen(d->d_name);
			size_t base = plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET;
			size_t rec = (base + nl + 7) & ~(size_t) 7;
			if (used + rec > cap) {
				full = true;
				break;
			}
			struct fuse_dirent *fd_ent;
			if (plus) {
				struct fuse_direntplus *dp =
					(struct fuse_direntplus *) (out + used);
				memset(dp, 0, rec);
				bool dot = !strcmp(d->d_name, ".") || !strcmp(d->d_name, "..");
				if (!dot && lookup_ref(g, dir, d->d_name, &dp->entry_out) < 0)
					memset(&dp->entry_out, 0, sizeof(dp->entry_out));
				fd_ent = &dp->dirent;
			} else {
				fd_ent = (struct fuse_dirent *) (out + used);
				memset(fd_ent, 0, rec);
			}
			fd_ent->ino = d->d_ino;
			fd_ent->off = (uint64_t) d->d_off;
			fd_ent->namelen = (uint32_t) nl;
			fd_ent->type = d->d_type;
			memcpy(fd_ent->name, d->d_name, nl);
			used += rec;
		}
		if (full)
			break;
	}
	return gofer_reply(r, 0, out, used);
}

static int op_fsyncdir(struct greq *r)
{
	return op_fsync(r);
}

static int op_statfs(struct greq *r)
{
	struct statfs s;
	if (fstatfs(r->g->root_fd, &s) < 0)
		return -errno;
	struct fuse_statfs_out out = {.st = {.blocks = s.f_blocks,
					     .bfree = s.f_bfree,
					     .bavail = s.f_bavail,
					     .files = s.f_files,
					     .ffree = s.f_ffree,
					     .bsize = (uint32_t) s.f_bsize,
					     .namelen = (uint32_t) s.f_namelen,
					     .frsize = (uint32_t) s.f_frsize}};
	const struct urs_gofer *g = r->g;
	uint64_t fr = s.f_frsize ? (uint64_t) s.f_frsize : 4096;
	if (g->o.quota_bytes) {
		/* the quota is the size; free is what is left of it (or of the
		 * host, when that is less) */
		uint64_t left = g->q_bytes < g->o.quota_bytes ? g->o.quota_bytes - g->q_bytes : 0;
		out.st.blocks = g->o.quota_bytes / fr;
		out.st.bfree = left / fr < s.f_bfree ? left / fr : s.f_bfree;
		out.st.bavail = left / fr < s.f_bavail ? left / fr : s.f_bavail;
	}
	if (g->o.quota_inodes) {
		uint64_t left =
			g->q_inodes < g->o.quota_inodes ? g->o.quota_inodes - g->q_inodes : 0;
		out.st.files = g->o.quota_inodes;
		out.st.ffree = left < s.f_ffree || !s.f_files ? left : s.f_ffree;
	}
	return gofer_reply(r, 0, &out, sizeof(out));
}

/* ---- xattrs: user.* only ---- */

static bool user_xattr(const char *name)
{
	return !strncmp(name, "user.", 5) && name[5];
}

static int op_setxattr(struct greq *r)
{
	NODE(i);
	RO_CHECK(r->g);
	if (r->inlen < URS_FUSE_COMPAT_SETXATTR_IN)
		return -EINVAL;
	uint32_t size, flags;
	memcpy(&size, r->in, 4);
	memcpy(&flags, r->in + 4, 4);
	const char *name = in_str(r, URS_FUSE_COMPAT_SETXATTR_IN, 0, false);
	if (!name)
		return -EINVAL;
	size_t voff = URS_FUSE_COMPAT_SETXATTR_IN + strlen(name) + 1;
	if (r->inlen < voff || r->inlen - voff < size)
		return -EINVAL;
	if (!user_xattr(name))
		return -EOPNOTSUPP;
	if (i->type != S_IFREG && i->type != S_IFDIR)
		return -EPERM; /* as Linux does for user.* on links, fifos, sockets */
	int ifd = IFD(r->g, i);
	if (ifd < 0)
		return ifd;
	char p[32];
	proc_path(p, sizeof(p), ifd);
	if (setxattr(p, name, r->in + voff, size, (int) flags) < 0)
		return -errno;
	return gofer_reply(r, 0, NULL, 0);
}

static int op_getxattr(struct greq *r)
{
	NODE(i);
	IN(struct fuse_getxattr_in, in);
	const char *name = in_str(r, sizeof(in), 0, false);
	if (!name)
		return -EINVAL;
	if (!user_xattr(name) || (i->type != S_IFREG && i->type != S_IFDIR))
		return -ENODATA;
	int ifd = IFD(r->g, i);
	if (ifd < 0)
		return ifd;
	char p[32];
	proc_path(p, sizeof(p), ifd);
	unsigned char *val = r->buf + 4096;
	size_t cap = r->bufsz - 4096 - sizeof(struct fuse_out_header);
	ssize_t n = getxattr(p, name, in.size ? val : NULL,
			     in.size ? (in.size < cap ? in.size : cap) : 0);
	if (n < 0)
		return -errno;
	if (in.size == 0) {
		struct fuse_getxattr_out out = {.size = (uint32_t) n};
		return gofer_reply(r, 0, &out, sizeof(out));
	}
	return gofer_reply(r, 0, val, (size_t) n);
}

static int op_listxattr(struct greq *r)
{
	NODE(i);
	IN(struct fuse_getxattr_in, in);
	size_t filtered = 0;
	unsigned char *val = r->buf + 4096;
	size_t cap = r->bufsz - 4096 - sizeof(struct fuse_out_header);
	if (i->type == S_IFREG || i->type == S_IFDIR) {
		int ifd = IFD(r->g, i);
		if (ifd < 0)
			return ifd;
		char p[32];
		proc_path(p, sizeof(p), ifd);
		ssize_t n = listxattr(p, (char *) val, cap);
		if (n < 0)
			return -errno;
		/* keep user.* names only, in place */
		for (ssize_t off = 0; off < n;) {
			const char *nm = (const char *) val + off;
			size_t l = strnlen(nm, (size_t) (n - off));
			if (user_xattr(nm)) {
				memmove(val + filtered, nm, l);
				val[filtered + l] = 0;
				filtered += l + 1;
			}
			off += (ssize_t) l + 1;
		}
	}
	if (in.size == 0) {
		struct fuse_getxattr_out out = {.size = (uint32_t) filtered};
		return gofer_reply(r, 0, &out, sizeof(out));
	}
	if (filtered > in.size)
		return -ERANGE;
	return gofer_reply(r, 0, val, filtered);
}

static int op_removexattr(struct greq *r)
{
	NODE(i);
	RO_CHECK(r->g);
	const char *name = in_str(r, 0, 0, false);
	if (!name)
		return -EINVAL;
	if (!user_xattr(name) || (i->type != S_IFREG && i->type != S_IFDIR))
		return -ENODATA;
	int ifd = IFD(r->g, i);
	if (ifd < 0)
		return ifd;
	char p[32];
	proc_path(p, sizeof(p), ifd);
	if (removexattr(p, name) < 0)
		return -errno;
	return gofer_reply(r, 0, NULL, 0);
}

static int dispatch(struct greq *r);

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Smallest i with @ns <= first << i, URS_GOFER_LAT_BUCKETS for +Inf. */
static uint32_t lat_bucket(uint64_t ns)
{
	if (ns <= URS_GOFER_LAT_FIRST_NS)
		return 0;
	uint32_t b = 64u - (uint32_t) __builtin_clzll((ns - 1) / URS_GOFER_LAT_FIRST_NS);
	return b < URS_GOFER_LAT_BUCKETS ? b : URS_GOFER_LAT_BUCKETS;
}

int gofer_dispatch(struct greq *r)
{
	uint64_t t0 = now_ns();
	int res = dispatch(r);
	uint64_t d = now_ns() - t0;
	struct urs_gofer_stats *st = &r->g->st;
	st->lat_hist[lat_bucket(d)]++;
	st->lat_count++;
	st->lat_sum_ns += d;
	return res;
}

static int dispatch(struct greq *r)
{
	struct urs_gofer *g = r->g;
	uint32_t op = r->h->opcode;
	if (!g->st.initialized && op != FUSE_INIT)
		return -EIO;
	switch (op) {
	case FUSE_INIT:
		return op_init(r);
	case FUSE_DESTROY:
		g->stopping = true;
		return gofer_reply(r, 0, NULL, 0);
	case FUSE_INTERRUPT:
		return GOFER_NOREPLY; /* every handler finishes before the next request */
	case FUSE_LOOKUP:
		return op_lookup(r);
	case FUSE_FORGET:
		return op_forget(r);
	case FUSE_BATCH_FORGET:
		return op_batch_forget(r);
	case FUSE_GETATTR:
		return op_getattr(r);
	case FUSE_SETATTR:
		return op_setattr(r);
	case FUSE_ACCESS:
		return op_access(r);
	case FUSE_READLINK:
		return op_readlink(r);
	case FUSE_SYMLINK:
		return op_symlink(r);
	case FUSE_MKNOD:
		return op_mknod(r);
	case FUSE_MKDIR:
		return op_mkdir(r);
	case FUSE_UNLINK:
		return op_unlink(r, 0);
	case FUSE_RMDIR:
		return op_unlink(r, AT_REMOVEDIR);
	case FUSE_RENAME:
		return op_rename(r, false);
	case FUSE_RENAME2:
		return op_rename(r, true);
	case FUSE_LINK:
		return op_link(r);
	case FUSE_OPEN:
		return op_open(r, false);
	case FUSE_OPENDIR:
		return op_open(r, true);
	case FUSE_CREATE:
		return op_create(r);
	case FUSE_RELEASE:
		return op_release(r, false);
	case FUSE_RELEASEDIR:
		return op_release(r, true);
	case FUSE_READ:
		return op_read(r);
	case FUSE_WRITE:
		return op_write(r);
	case FUSE_FLUSH:
		return gofer_reply(r, 0, NULL, 0);
	case FUSE_FSYNC:
		return op_fsync(r);
	case FUSE_FSYNCDIR:
		return op_fsyncdir(r);
	case FUSE_READDIR:
		return op_readdir(r, false);
	case FUSE_READDIRPLUS:
		return op_readdir(r, true);
	case FUSE_STATFS:
		return op_statfs(r);
	case FUSE_SETXATTR:
	case FUSE_GETXATTR:
	case FUSE_LISTXATTR:
	case FUSE_REMOVEXATTR:
		if (g->o.no_xattr)
			return -ENOSYS; /* the kernel stops asking (and stops asking
					 * for security.capability on every write) */
		break;
	default:
		break;
	}
	switch (op) {
	case FUSE_SETXATTR:
		return op_setxattr(r);
	case FUSE_GETXATTR:
		return op_getxattr(r);
	case FUSE_LISTXATTR:
		return op_listxattr(r);
	case FUSE_REMOVEXATTR:
		return op_removexattr(r);
	case FUSE_FALLOCATE:
		return op_fallocate(r);
	case FUSE_LSEEK:
		return op_lseek(r);
	case FUSE_COPY_FILE_RANGE:
		return op_copy_file_range(r);
	case FUSE_SYNCFS: {
		char p[32];
		proc_path(p, sizeof(p), g->root_fd);
		int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int rc = fd < 0 ? -errno : syncfs(fd) < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
		return rc < 0 ? rc : gofer_reply(r, 0, NULL, 0);
	}
	default:
		/* GETLK/SETLK/SETLKW are not negotiated (the kernel locks
		 * locally); IOCTL, POLL, BMAP, TMPFILE, STATX, ...: ENOSYS */
		return -ENOSYS;
	}
}
