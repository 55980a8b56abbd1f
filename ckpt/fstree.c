/*
 * ckpt/fstree.c — a directory tree as one stream and back (ckpt/fstree.h).
 *
 * Stream: a header {"URSATREE", version, 0}, then records in walk order,
 * each a fixed struct ft_rec followed by its name (one path component), its
 * link (symlink target, or a hard link's earlier path relative to the top),
 * its xattrs ({u32 name_len, u32 value_len, name, value}...) and, for a
 * regular file, its contents as extents {u64 offset, u64 length, bytes},
 * ended by a zero length (holes are not in the stream). A directory's record opens it; DIREND
 * closes it (its owner, mode and times are applied then, after its children). END carries the
 * record count, and a CRC32C of everything before it follows. The unpacker makes two passes: the
 * first only parses and checks the CRC, so a damaged stream creates nothing; the second creates
 * each entry relative to the directory fd it made for the parent (O_EXCL, O_NOFOLLOW), and a hard
 * link's target is resolved beneath the top with RESOLVE_BENEATH and without symlinks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "host/fs.h"
#include "ckpt/image.h"
#include "ckpt/fstree.h"
#include "runtime/common.h"

#define FT_MAGIC     "URSATREE"
#define FT_VERSION   1u
#define FT_MAX_DEPTH 128
#define FT_MAX_XATTR (256u << 10)
#define FT_BUF	     (64u << 10)

enum {
	FT_DIR = 1,
	FT_REG,
	FT_SYMLINK,
	FT_HARDLINK,
	FT_CHR,
	FT_BLK,
	FT_FIFO,
	FT_DIREND,
	FT_END,
};

struct ft_hdr {
	char magic[8];
	uint32_t version, flags;
};

struct ft_rec {
	uint32_t kind, mode, uid, gid;
	uint32_t name_len, link_len, xattr_len, rdev_major;
	uint32_t rdev_minor, mtime_nsec;
	int64_t mtime_sec;
	uint64_t size; /* FT_REG: file size (extents follow); FT_END: records before it */
};

/* ---- buffered output with a running CRC ---- */

struct wbuf {
	int fd;
	uint32_t crc;
	size_t n;
	unsigned char b[FT_BUF];
};

static int wflush(struct wbuf *w)
{
	size_t off = 0;
	while (off < w->n) {
		ssize_t k = write(w->fd, w->b + off, w->n - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		off += (size_t) k;
	}
	w->n = 0;
	return 0;
}

static int wput(struct wbuf *w, const void *p, size_t len)
{
	const unsigned char *s = p;
	w->crc = ckpt_crc32c(w->crc, p, len);
	while (len) {
		size_t k = sizeof(w->b) - w->n < len ? sizeof(w->b) - w->n : len;
		memcpy(w->b + w->n, s, k);
		w->n += k;
		s += k;
		len -= k;
		if (w->n == sizeof(w->b)) {
			int r = wflush(w);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- pack ---- */

struct hlink {
	dev_t dev;
	ino_t ino;
	char *path;
};

struct packer {
	struct wbuf *w;
	uint64_t mnt; /* the top's mount: entries on another are mount points */
	struct urs_fstree_stats *st;
	struct urs_err *err;
	char path[PATH_MAX]; /* of the entry being written, relative to the top */
	struct hlink *links;
	size_t nlinks, caplinks;
	char *xa;      /* xattr blob being built */
	size_t xa_len; /* its length */
	char names[FT_MAX_XATTR];
};

/* The xattrs of the open file @fd into p->xa / p->xa_len. */
static int pack_xattrs(struct packer *p, int fd)
{
	p->xa_len = 0;
	ssize_t n = flistxattr(fd, p->names, sizeof(p->names));
	if (n < 0)
		return errno == ENOTSUP ? 0 : -errno;
	for (char *nm = p->names; nm < p->names + n; nm += strlen(nm) + 1) {
		ssize_t v = fgetxattr(fd, nm, NULL, 0);
		if (v < 0) {
			if (errno == ENODATA)
				continue;
			return -errno;
		}
		uint32_t hdr[2] = {(uint32_t) strlen(nm), 0};
		size_t need = p->xa_len + sizeof(hdr) + hdr[0] + (size_t) v;
		if (need > FT_MAX_XATTR)
			return -E2BIG;
		char *x = realloc(p->xa, need);
		if (!x)
			return -ENOMEM;
		p->xa = x;
		v = fgetxattr(fd, nm, x + p->xa_len + sizeof(hdr) + hdr[0], (size_t) v);
		if (v < 0)
			return -errno;
		hdr[1] = (uint32_t) v;
		memcpy(x + p->xa_len, hdr, sizeof(hdr));
		memcpy(x + p->xa_len + sizeof(hdr), nm, hdr[0]);
		p->xa_len += sizeof(hdr) + hdr[0] + (size_t) v;
	}
	return 0;
}

static int emit(struct packer *p, uint32_t kind, const struct stat *st, const char *name,
		const char *link, size_t link_len, bool xattrs, uint64_t size)
{
	struct ft_rec rec = {
		.kind = kind,
		.name_len = name ? (uint32_t) strlen(name) : 0,
		.link_len = (uint32_t) link_len,
		.xattr_len = xattrs ? (uint32_t) p->xa_len : 0,
		.size = size,
	};
	if (st) {
		rec.mode = st->st_mode & 07777;
		rec.uid = st->st_uid;
		rec.gid = st->st_gid;
		rec.rdev_major = major(st->st_rdev);
		rec.rdev_minor = minor(st->st_rdev);
		rec.mtime_sec = st->st_mtim.tv_sec;
		rec.mtime_nsec = (uint32_t) st->st_mtim.tv_nsec;
	}
	int r = wput(p->w, &rec, sizeof(rec));
	if (r == 0 && rec.name_len)
		r = wput(p->w, name, rec.name_len);
	if (r == 0 && link_len)
		r = wput(p->w, link, link_len);
	if (r == 0 && rec.xattr_len)
		r = wput(p->w, p->xa, rec.xattr_len);
	p->st->entries++;
	return r;
}

/* Bytes [@off, @off + @len) of @fd into the stream. */
static int pack_range(struct packer *p, int fd, uint64_t off, uint64_t len)
{
	unsigned char buf[16384];
	while (len) {
		ssize_t k =
			pread(fd, buf, len < sizeof(buf) ? (size_t) len : sizeof(buf), (off_t) off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -ESTALE; /* shrank while being saved */
		int r = wput(p->w, buf, (size_t) k);
		if (r < 0)
			return r;
		off += (uint64_t) k;
		len -= (uint64_t) k;
		p->st->data_bytes += (uint64_t) k;
	}
	return 0;
}

/* A file's contents as extents {u64 offset, u64 length, bytes}, ended by
 * a zero length: holes (SEEK_DATA/SEEK_HOLE) are not written, so a sparse
 * file as large as the file system allows costs what it holds. */
static int pack_data(struct packer *p, int fd, uint64_t size)
{
	uint64_t off = 0;
	int r;
	while (off < size) {
		off_t d = lseek(fd, (off_t) off, SEEK_DATA), h;
		if (d < 0 && errno == ENXIO)
			break; /* a hole to the end */
		if (d < 0) {   /* no hole support: all data */
			d = (off_t) off;
			h = (off_t) size;
		} else if ((h = lseek(fd, d, SEEK_HOLE)) < 0) {
			return -errno;
		}
		if ((uint64_t) h > size)
			h = (off_t) size;
		if ((uint64_t) d >= size)
			break;
		if (h <= d) /* the data went between the two seeks */
			return -ESTALE;
		uint64_t ext[2] = {(uint64_t) d, (uint64_t) (h - d)};
		if ((r = wput(p->w, ext, sizeof(ext))) < 0 ||
		    (r = pack_range(p, fd, ext[0], ext[1])) < 0)
			return r;
		off = (uint64_t) h;
	}
	uint64_t end[2] = {0, 0};
	return wput(p->w, end, sizeof(end));
}

static size_t hl_slot(const struct packer *p, dev_t dev, ino_t ino)
{
	uint64_t x =
		(uint64_t) ino * 0x9E3779B97F4A7C15ull ^ (uint64_t) dev * 0xC2B2AE3D27D4EB4Full;
	return (size_t) (x >> 17) & (p->caplinks - 1);
}

/* A regular file with more than one link: the path it was first saved
 * under, or NULL (and it is remembered under p->path). An open-addressing
 * table by (dev, ino): a tree of a million links stays linear. */
static const char *hardlink_of(struct packer *p, const struct stat *st, int *err)
{
	if (p->caplinks) {
		for (size_t k = hl_slot(p, st->st_dev, st->st_ino); p->links[k].path;
		     k = (k + 1) & (p->caplinks - 1))
			if (p->links[k].dev == st->st_dev && p->links[k].ino == st->st_ino)
				return p->links[k].path;
	}
	if ((p->nlinks + 1) * 2 > p->caplinks) { /* grow: rehash */
		size_t cap = p->caplinks ? p->caplinks * 2 : 64;
		struct hlink *old = p->links, *nl = calloc(cap, sizeof(*nl));
		if (!nl) {
			*err = -ENOMEM;
			return NULL;
		}
		size_t ocap = p->caplinks;
		p->links = nl;
		p->caplinks = cap;
		for (size_t k = 0; k < ocap; k++) {
			if (!old[k].path)
				continue;
			size_t m = hl_slot(p, old[k].dev, old[k].ino);
			while (nl[m].path)
				m = (m + 1) & (cap - 1);
			nl[m] = old[k];
		}
		free(old);
	}
	char *s = strdup(p->path);
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	size_t k = hl_slot(p, st->st_dev, st->st_ino);
	while (p->links[k].path)
		k = (k + 1) & (p->caplinks - 1);
	p->links[k] = (struct hlink){st->st_dev, st->st_ino, s};
	p->nlinks++;
	return NULL;
}

static int pack_dir(struct packer *p, int dfd, int depth, const char *const *skip);

/*
 * @name in @dfd without a request to another file system: AT_STATX_DONT_SYNC
 * (a FUSE mount's cached attributes: its server may be frozen with the
 * sandbox) and no automount; *mnt its mount id.
 */
static int stat_here(int dfd, const char *name, struct stat *st, uint64_t *mnt)
{
	struct statx sx;
	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT,
		  STATX_BASIC_STATS | STATX_MNT_ID, &sx) < 0)
		return -errno;
	*st = (struct stat){
		.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
		.st_ino = sx.stx_ino,
		.st_mode = sx.stx_mode,
		.st_nlink = sx.stx_nlink,
		.st_uid = sx.stx_uid,
		.st_gid = sx.stx_gid,
		.st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor),
		.st_size = (off_t) sx.stx_size,
		.st_mtim = {.tv_sec = sx.stx_mtime.tv_sec, .tv_nsec = sx.stx_mtime.tv_nsec},
	};
	*mnt = sx.stx_mnt_id;
	return 0;
}

static int pack_entry(struct packer *p, int dfd, const char *name, int depth)
{
	struct stat st;
	uint64_t mnt = 0;
	int r = stat_here(dfd, name, &st, &mnt);
	if (r < 0)
		return urs_err_set(p->err, r, "saving %s: %s", p->path, strerror(-r));
	if (mnt != p->mnt) { /* a mount point (any type): not ours to save */
		p->st->skipped++;
		return 0;
	}
	switch (st.st_mode & S_IFMT) {
	case S_IFDIR: {
		p->xa_len = 0;
		if (depth >= FT_MAX_DEPTH)
			return urs_err_set(p->err, -ELOOP, "saving %s: deeper than %d directories",
					   p->path, FT_MAX_DEPTH);
		_cleanup_close_ int fd =
			openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return urs_err_set(p->err, -errno, "saving %s: %m", p->path);
		if ((r = pack_xattrs(p, fd)) < 0)
			return urs_err_set(p->err, r, "saving %s: its xattrs: %s", p->path,
					   strerror(-r));
		if ((r = emit(p, FT_DIR, &st, name, NULL, 0, true, 0)) < 0)
			return r;
		if ((r = pack_dir(p, fd, depth + 1, NULL)) < 0)
			return r;
		return emit(p, FT_DIREND, NULL, NULL, NULL, 0, false, 0);
	}
	case S_IFREG: {
		if (st.st_nlink > 1) {
			int e = 0;
			const char *first = hardlink_of(p, &st, &e);
			if (e)
				return urs_err_set(p->err, e, "saving %s: %s", p->path,
						   strerror(-e));
			if (first) {
				p->xa_len = 0;
				return emit(p, FT_HARDLINK, &st, name, first, strlen(first), false,
					    0);
			}
		}
		/* O_NONBLOCK: if it became a FIFO meanwhile, do not wait on it */
		_cleanup_close_ int fd =
			openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat now;
		if (fd < 0 || fstat(fd, &now) < 0)
			return urs_err_set(p->err, -errno, "saving %s: %m", p->path);
		if (!S_ISREG(now.st_mode) || now.st_ino != st.st_ino)
			return urs_err_set(p->err, -ESTALE,
					   "saving %s: it changed while being saved", p->path);
		if ((r = pack_xattrs(p, fd)) < 0)
			return urs_err_set(p->err, r, "saving %s: its xattrs: %s", p->path,
					   strerror(-r));
		if ((r = emit(p, FT_REG, &st, name, NULL, 0, true, (uint64_t) st.st_size)) < 0)
			return r;
		if ((r = pack_data(p, fd, (uint64_t) st.st_size)) < 0)
			return urs_err_set(p->err, r, "saving %s: %s", p->path,
					   r == -ESTALE ? "it shrank while being saved"
							: strerror(-r));
		return 0;
	}
	case S_IFLNK: {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dfd, name, target, sizeof(target));
		if (n < 0)
			return urs_err_set(p->err, -errno, "saving %s: %m", p->path);
		if (n == 0 || (size_t) n >= sizeof(target))
			return urs_err_set(p->err, -ENAMETOOLONG, "saving %s: bad symlink",
					   p->path);
		p->xa_len = 0;
		return emit(p, FT_SYMLINK, &st, name, target, (size_t) n, false, 0);
	}
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
		p->xa_len = 0;
		return emit(p,
			    S_ISCHR(st.st_mode)	  ? FT_CHR
			    : S_ISBLK(st.st_mode) ? FT_BLK
						  : FT_FIFO,
			    &st, name, NULL, 0, false, 0);
	default: /* sockets: nothing can be bound to a restored one */
		p->st->skipped++;
		return 0;
	}
}

static int pack_dir(struct packer *p, int dfd, int depth, const char *const *skip)
{
	DIR *d = urs_opendir_at(dfd); /* rewound: a dup shares @dfd's offset */
	if (!d)
		return urs_err_set(p->err, -errno, "saving %s: %m", p->path);
	size_t base = strlen(p->path);
	int r = 0;
	struct dirent *de;
	errno = 0;
	while (r == 0 && (de = readdir(d))) {
		const char *n = de->d_name;
		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		bool skipped = false;
		for (size_t k = 0; skip && skip[k]; k++)
			skipped |= !strcmp(skip[k], n);
		if (skipped)
			continue;
		if (base + strlen(n) + 2 >= sizeof(p->path)) {
			r = urs_err_set(p->err, -ENAMETOOLONG, "saving %s/%s: path too long",
					p->path, n);
			break;
		}
		snprintf(p->path + base, sizeof(p->path) - base, "%s%s", base ? "/" : "", n);
		r = pack_entry(p, dfd, n, depth);
		p->path[base] = 0;
		errno = 0;
	}
	if (r == 0 && errno)
		r = urs_err_set(p->err, -errno, "saving %s: reading the directory: %m", p->path);
	closedir(d);
	return r;
}

int urs_fstree_pack(int dirfd, int fd, const char *const *skip, struct urs_fstree_stats *st,
		    struct urs_err *err)
{
	struct urs_fstree_stats local;
	if (!st)
		st = &local;
	*st = (struct urs_fstree_stats){0};
	struct statx top;
	if (statx(dirfd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_MNT_ID, &top) < 0 ||
	    !S_ISDIR(top.stx_mode))
		return urs_err_set(err, -ENOTDIR, "saving a tree: not a directory");
	_cleanup_free_ struct wbuf *w = malloc(sizeof(*w));
	_cleanup_free_ struct packer *p = calloc(1, sizeof(*p));
	if (!w || !p)
		return urs_err_set(err, -ENOMEM, "saving a tree: out of memory");
	w->fd = fd;
	w->crc = 0;
	w->n = 0;
	*p = (struct packer){.w = w, .mnt = top.stx_mnt_id, .st = st, .err = err};
	struct ft_hdr h = {.version = FT_VERSION};
	memcpy(h.magic, FT_MAGIC, 8);
	int r = wput(w, &h, sizeof(h));
	if (r == 0)
		r = pack_dir(p, dirfd, 0, skip);
	else
		urs_err_set(err, r, "saving a tree: %s", strerror(-r));
	if (r == 0) {
		struct ft_rec end = {.kind = FT_END, .size = st->entries};
		uint32_t crc;
		if ((r = wput(w, &end, sizeof(end))) == 0) {
			crc = w->crc;
			r = wput(w, &crc, sizeof(crc));
		}
		if (r == 0)
			r = wflush(w);
		if (r < 0)
			urs_err_set(err, r, "saving a tree: writing: %s", strerror(-r));
	}
	for (size_t i = 0; i < p->caplinks; i++)
		free(p->links[i].path);
	free(p->links);
	free(p->xa);
	return r;
}

/* ---- unpack ---- */

struct rbuf {
	int fd;
	uint32_t crc;
	size_t pos, len;
	uint64_t consumed;
	unsigned char b[FT_BUF];
};

static int rget(struct rbuf *r, void *p, size_t len)
{
	unsigned char *d = p;
	while (len) {
		if (r->pos == r->len) {
			ssize_t k = read(r->fd, r->b, sizeof(r->b));
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return -errno;
			if (k == 0)
				return -ENODATA; /* truncated */
			r->pos = 0;
			r->len = (size_t) k;
		}
		size_t k = r->len - r->pos < len ? r->len - r->pos : len;
		if (d) {
			memcpy(d, r->b + r->pos, k);
			d += k;
		}
		r->crc = ckpt_crc32c(r->crc, r->b + r->pos, k);
		r->pos += k;
		r->consumed += k;
		len -= k;
	}
	return 0;
}

struct frame {
	int fd;
	struct ft_rec meta;
};

struct unpacker {
	struct rbuf *r;
	bool dry; /* first pass: parse and check only */
	int top;
	struct frame stack[FT_MAX_DEPTH + 1];
	int depth;
	struct urs_fstree_stats *st;
	struct urs_err *err;
	char name[256], link[PATH_MAX];
	char *xa;
	size_t xa_cap;
};

static bool good_name(const char *n, size_t len)
{
	return len && len < 256 && !memchr(n, '/', len) && !memchr(n, 0, len) &&
	       !(len == 1 && n[0] == '.') && !(len == 2 && n[0] == '.' && n[1] == '.');
}

static bool good_relpath(const char *s, size_t len)
{
	if (!len || s[0] == '/' || memchr(s, 0, len))
		return false;
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && s[j] != '/')
			j++;
		if (!good_name(s + i, j - i))
			return false;
		i = j + 1;
	}
	return s[len - 1] != '/';
}

static bool good_xattr_name(const char *n, size_t len)
{
	static const char *const ok[] = {"user.", "trusted.", "security.", "system.posix_acl_"};
	if (!len || len > 255 || memchr(n, 0, len))
		return false;
	for (size_t k = 0; k < URS_ARRAY_SIZE(ok); k++)
		if (len > strlen(ok[k]) && !strncmp(n, ok[k], strlen(ok[k])))
			return true;
	return false;
}

/* Check the blob in u->xa and (second pass) set it on @fd. */
static int apply_xattrs(struct unpacker *u, const struct ft_rec *rec, int fd, const char *what)
{
	size_t off = 0;
	while (off < rec->xattr_len) {
		uint32_t h[2];
		if (rec->xattr_len - off < sizeof(h))
			return urs_err_set(u->err, -EINVAL, "%s: bad xattr list", what);
		memcpy(h, u->xa + off, sizeof(h));
		off += sizeof(h);
		if (h[0] > rec->xattr_len - off || h[1] > rec->xattr_len - off - h[0] ||
		    !good_xattr_name(u->xa + off, h[0]))
			return urs_err_set(u->err, -EINVAL, "%s: bad or refused xattr", what);
		if (!u->dry) {
			char nm[256];
			memcpy(nm, u->xa + off, h[0]);
			nm[h[0]] = 0;
			if (fsetxattr(fd, nm, u->xa + off + h[0], h[1], 0) < 0)
				return urs_err_set(u->err, -errno, "%s: setting xattr %s: %m", what,
						   nm);
		}
		off += h[0] + h[1];
	}
	return 0;
}

/* Owner, mode, times of an entry made by us (@fd, or @name in the top directory). */
static int apply_meta(struct unpacker *u, const struct ft_rec *m, int fd, const char *name)
{
	int dfd = u->stack[u->depth].fd;
	struct timespec ts[2] = {{.tv_sec = m->mtime_sec, .tv_nsec = m->mtime_nsec},
				 {.tv_sec = m->mtime_sec, .tv_nsec = m->mtime_nsec}};
	if (fd >= 0) {
		/* owner first: chown clears the set-id bits */
		if (fchown(fd, m->uid, m->gid) < 0 || fchmod(fd, m->mode & 07777) < 0 ||
		    futimens(fd, ts) < 0)
			return -errno;
		return 0;
	}
	if (fchownat(dfd, name, m->uid, m->gid, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (m->kind != FT_SYMLINK && fchmodat(dfd, name, m->mode & 07777, 0) < 0)
		return -errno;
	if (utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

/* The extents of a file of @size bytes (pack_data) into @fd. */
static int copy_data(struct unpacker *u, int fd, uint64_t size)
{
	unsigned char buf[16384];
	uint64_t next = 0; /* extents are sorted and do not overlap */
	for (;;) {
		uint64_t ext[2];
		int r = rget(u->r, ext, sizeof(ext));
		if (r < 0)
			return r;
		if (!ext[1]) {
			if (ext[0]) /* only the end marker is empty */
				return -EINVAL;
			break;
		}
		if (ext[0] < next || ext[0] > size || ext[1] > size - ext[0])
			return -EINVAL;
		next = ext[0] + ext[1];
		if (!u->dry && lseek(fd, (off_t) ext[0], SEEK_SET) < 0)
			return -errno;
		for (uint64_t left = ext[1]; left;) {
			size_t k = left < sizeof(buf) ? (size_t) left : sizeof(buf);
			if ((r = rget(u->r, u->dry ? NULL : buf, k)) < 0)
				return r;
			left -= k;
			u->st->data_bytes += k;
			for (size_t off = 0; !u->dry && off < k;) {
				ssize_t w = write(fd, buf + off, k - off);
				if (w < 0 && errno == EINTR)
					continue;
				if (w < 0)
					return -errno;
				off += (size_t) w;
			}
		}
	}
	if (!u->dry && ftruncate(fd, (off_t) size) < 0)
		return -errno;
	return 0;
}

static int hardlink(struct unpacker *u, const char *name)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_XDEV,
	};
	_cleanup_close_ int fd = (int) syscall(SYS_openat2, u->top, u->link, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (linkat(fd, "", u->stack[u->depth].fd, name, AT_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

/* the end of a directory: its owner, mode and times, now that its entries
 * are in */
static int dir_end(struct unpacker *u)
{
	if (u->depth == 0)
		return urs_err_set(u->err, -EINVAL, "tree image: unbalanced directory end");
	struct frame *f = &u->stack[u->depth--];
	if (u->dry)
		return 0;
	int r = apply_meta(u, &f->meta, f->fd, NULL);
	close(f->fd);
	if (r < 0)
		return urs_err_set(u->err, r, "restoring a directory's owner, mode or times: %s",
				   strerror(-r));
	return 0;
}

/* a record's name, link target and xattrs, read and checked */
static int read_record(struct unpacker *u, const struct ft_rec *rec)
{
	struct urs_err *err = u->err;
	if (rec->name_len > 255 || rec->link_len >= PATH_MAX || rec->xattr_len > FT_MAX_XATTR)
		return urs_err_set(err, -EINVAL, "tree image: record %llu: bad lengths",
				   (unsigned long long) u->st->entries);
	int r = rget(u->r, u->name, rec->name_len);
	if (r == 0)
		r = rget(u->r, u->link, rec->link_len);
	if (r == 0 && rec->xattr_len > u->xa_cap) {
		char *x = realloc(u->xa, rec->xattr_len);
		if (!x)
			return urs_err_set(err, -ENOMEM, "tree image: out of memory");
		u->xa = x;
		u->xa_cap = rec->xattr_len;
	}
	if (r == 0)
		r = rget(u->r, u->xa, rec->xattr_len);
	if (r < 0)
		return urs_err_set(err, r, "tree image: %s",
				   r == -ENODATA ? "truncated" : strerror(-r));
	u->name[rec->name_len] = 0;
	u->link[rec->link_len] = 0;
	const char *n = u->name;
	if (!good_name(n, rec->name_len))
		return urs_err_set(err, -EINVAL, "tree image: record %llu: bad name",
				   (unsigned long long) u->st->entries);
	if (rec->kind != FT_REG && rec->size)
		return urs_err_set(err, -EINVAL, "tree image: %s: data on a non-file", n);
	if ((rec->kind == FT_SYMLINK || rec->kind == FT_HARDLINK) !=
	    (rec->link_len > 0 && !memchr(u->link, 0, rec->link_len)))
		return urs_err_set(err, -EINVAL, "tree image: %s: bad link", n);
	if (rec->kind == FT_HARDLINK && !good_relpath(u->link, rec->link_len))
		return urs_err_set(err, -EINVAL, "tree image: %s: bad hard link target", n);
	if (rec->xattr_len && rec->kind != FT_DIR && rec->kind != FT_REG)
		return urs_err_set(err, -EINVAL, "tree image: %s: xattrs on this type", n);
	if (u->dry && (r = apply_xattrs(u, rec, -1, n)) < 0)
		return r;
	return 0;
}

static int one_record(struct unpacker *u, const struct ft_rec *rec)
{
	struct urs_err *err = u->err;
	if (rec->kind == FT_DIREND)
		return dir_end(u);
	int r = read_record(u, rec);
	if (r < 0)
		return r;
	const char *n = u->name;
	int dfd = u->stack[u->depth].fd;
	switch (rec->kind) {
	case FT_DIR: {
		if (u->depth >= FT_MAX_DEPTH)
			return urs_err_set(err, -ELOOP, "tree image: too deep at %s", n);
		int fd = -1;
		if (!u->dry) {
			if (mkdirat(dfd, n, 0700) < 0)
				return urs_err_set(err, -errno, "restoring directory %s: %m", n);
			fd = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				return urs_err_set(err, -errno, "restoring directory %s: %m", n);
			if ((r = apply_xattrs(u, rec, fd, n)) < 0) {
				close(fd);
				return r;
			}
		}
		u->stack[++u->depth] = (struct frame){.fd = fd, .meta = *rec};
		return 0;
	}
	case FT_REG: {
		_cleanup_close_ int fd = -1;
		if (!u->dry) {
			fd = openat(dfd, n, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				    0600);
			if (fd < 0)
				return urs_err_set(err, -errno, "restoring file %s: %m", n);
		}
		if ((r = copy_data(u, fd, rec->size)) < 0)
			return urs_err_set(err, r, "restoring file %s: %s", n,
					   r == -ENODATA ? "tree image truncated" : strerror(-r));
		if (!u->dry && ((r = apply_xattrs(u, rec, fd, n)) < 0 ||
				(r = apply_meta(u, rec, fd, NULL)) < 0))
			return urs_err_set(err, r, "restoring file %s: %s", n, strerror(-r));
		return 0;
	}
	case FT_SYMLINK:
		if (!u->dry && (symlinkat(u->link, dfd, n) < 0 || apply_meta(u, rec, -1, n) < 0))
			return urs_err_set(err, -errno, "restoring symlink %s: %m", n);
		return 0;
	case FT_HARDLINK:
		if (!u->dry && (r = hardlink(u, n)) < 0)
			return urs_err_set(err, r, "restoring hard link %s to %s: %s", n, u->link,
					   strerror(-r));
		return 0;
	case FT_CHR:
	case FT_BLK:
	case FT_FIFO: {
		mode_t t = rec->kind == FT_CHR ? S_IFCHR : rec->kind == FT_BLK ? S_IFBLK : S_IFIFO;
		if (!u->dry &&
		    (mknodat(dfd, n, t | 0600, makedev(rec->rdev_major, rec->rdev_minor)) < 0 ||
		     apply_meta(u, rec, -1, n) < 0))
			return urs_err_set(err, -errno, "restoring %s: %m", n);
		return 0;
	}
	default:
		return urs_err_set(err, -EINVAL, "tree image: record %llu: unknown kind %u",
				   (unsigned long long) u->st->entries, rec->kind);
	}
}

static int unpack_pass(struct unpacker *u)
{
	struct rbuf *rb = u->r;
	struct ft_hdr h;
	int r = rget(rb, &h, sizeof(h));
	if (r < 0 || memcmp(h.magic, FT_MAGIC, 8))
		return urs_err_set(u->err, -EINVAL, "tree image: not one (bad magic)");
	if (h.version != FT_VERSION || h.flags)
		return urs_err_set(u->err, -EINVAL, "tree image: version %u is not supported",
				   h.version);
	u->depth = 0;
	for (;;) {
		struct ft_rec rec;
		if ((r = rget(rb, &rec, sizeof(rec))) < 0)
			return urs_err_set(u->err, r, "tree image: %s",
					   r == -ENODATA ? "truncated" : strerror(-r));
		if (rec.kind == FT_END)
			break;
		if ((r = one_record(u, &rec)) < 0)
			return r;
		u->st->entries++;
	}
	uint32_t want = rb->crc, crc;
	if ((r = rget(rb, &crc, sizeof(crc))) < 0)
		return urs_err_set(u->err, r, "tree image: truncated");
	if (crc != want)
		return urs_err_set(u->err, -EBADMSG, "tree image: checksum mismatch");
	char extra;
	if (u->depth || read(rb->fd, &extra, 1) != 0 || rb->pos != rb->len)
		return urs_err_set(u->err, -EBADMSG, "tree image: trailing or unbalanced data");
	return 0;
}

/* The first @passes of: check, create (into @dirfd). */
static int unpack(int fd, int dirfd, int passes, struct urs_fstree_stats *st, struct urs_err *err)
{
	struct urs_fstree_stats local;
	if (!st)
		st = &local;
	_cleanup_free_ struct rbuf *rb = malloc(sizeof(*rb));
	_cleanup_free_ struct unpacker *u = calloc(1, sizeof(*u));
	if (!rb || !u)
		return urs_err_set(err, -ENOMEM, "restoring a tree: out of memory");
	off_t start = lseek(fd, 0, SEEK_CUR);
	if (start < 0)
		return urs_err_set(err, -errno, "restoring a tree: the image must be seekable: %m");
	int r = 0;
	for (int pass = 0; pass < passes && r == 0; pass++) {
		if (lseek(fd, start, SEEK_SET) < 0)
			return urs_err_set(err, -errno, "restoring a tree: %m");
		*rb = (struct rbuf){.fd = fd};
		*st = (struct urs_fstree_stats){0};
		u->r = rb;
		u->dry = pass == 0;
		u->top = dirfd;
		u->st = st;
		u->err = err;
		u->stack[0] = (struct frame){.fd = dirfd};
		r = unpack_pass(u);
	}
	for (; u->depth > 0; u->depth--)
		if (u->stack[u->depth].fd >= 0)
			close(u->stack[u->depth].fd);
	free(u->xa);
	return r;
}

int urs_fstree_unpack(int fd, int dirfd, struct urs_fstree_stats *st, struct urs_err *err)
{
	return unpack(fd, dirfd, 2, st, err);
}

int urs_fstree_check(int fd, struct urs_fstree_stats *st, struct urs_err *err)
{
	return unpack(fd, -1, 1, st, err);
}
