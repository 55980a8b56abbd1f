/*
 * ckpt/manifest.c — DIR/manifest.img, the sealed list of an image's files
 * (format and rules in ckpt/manifest.h). Files are hashed through one fd
 * each, opened beneath the image directory without following symlinks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ckpt/manifest.h"
#include "runtime/common.h"
#include "runtime/io.h"

#define MAGIC	    "URSAMANF"
#define VERSION	    1u
#define MAX_ENTRIES 256u
#define NAME_LEN    48u
#define LABEL	    "ursa manifest v1" /* with its NUL */

struct mhdr {
	char magic[8];
	uint32_t version, n;
	uint8_t core_mac[CKPT_MAC_LEN];
};

struct mentry {
	char name[NAME_LEN];
	uint64_t size;
	uint8_t sha[32];
};

bool ckpt_manifest_file(const char *name)
{
	static const char *const fixed[] = {"supervisor.img",
					    "layer.img",
					    "layer.dev",
					    "tmpfs.lst",
					    "container/state.json",
					    "container/config.json"};
	for (size_t k = 0; k < URS_ARRAY_SIZE(fixed); k++)
		if (!strcmp(name, fixed[k]))
			return true;
	unsigned i;
	int used = 0;
	return sscanf(name, "tmpfs-%u.img%n", &i, &used) == 1 && (size_t) used == strlen(name);
}

/* ours and writable by nobody else: what is checked is what is read */
static int owned(const struct stat *st, const char *dir, const char *name, struct urs_err *err)
{
	if (st->st_uid == geteuid() && !(st->st_mode & 022))
		return 0;
	return urs_err_set(err, -EPERM,
			   "checkpoint image %s: %s must be owned by us and writable by nobody "
			   "else",
			   dir, name);
}

static int hash_file(int dfd, const char *dir, const char *name, struct mentry *e,
		     struct urs_err *err)
{
	/* O_NONBLOCK: a FIFO in a tampered image must not hang us before the
	 * type check */
	struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS};
	_cleanup_close_ int fd = (int) syscall(SYS_openat2, dfd, name, &how, sizeof(how));
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return urs_err_set(err, -errno, "checkpoint image %s: %s: %m", dir, name);
	if (!S_ISREG(st.st_mode))
		return urs_err_set(err, -EINVAL, "checkpoint image %s: %s is not a regular file",
				   dir, name);
	int r = owned(&st, dir, name, err);
	if (r)
		return r;
	struct urs_sha256 h;
	urs_sha256_init(&h);
	/* not static __thread: the supervisor links this, and 64 KiB of TLS
	 * in every thread made its small-stack threads fail to start */
	enum { BUF = 1 << 16 };
	_cleanup_free_ uint8_t *buf = malloc(BUF);
	if (!buf)
		return urs_err_set(err, -ENOMEM, "checkpoint image: out of memory");
	uint64_t total = 0;
	ssize_t n;
	while ((n = read(fd, buf, BUF)) > 0) {
		urs_sha256_update(&h, buf, (size_t) n);
		total += (uint64_t) n;
	}
	if (n < 0)
		return urs_err_set(err, -errno, "checkpoint image %s: reading %s: %m", dir, name);
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->size = total;
	urs_sha256_final(&h, e->sha);
	return 0;
}

/* the MAC core.img ends with (ckpt/seal.h) */
static int core_mac(int dfd, const char *dir, uint8_t mac[CKPT_MAC_LEN], struct urs_err *err)
{
	_cleanup_close_ int fd =
		openat(dfd, "core.img", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return urs_err_set(err, -errno, "checkpoint image %s: core.img: %m", dir);
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t) CKPT_MAC_LEN ||
	    pread(fd, mac, CKPT_MAC_LEN, st.st_size - CKPT_MAC_LEN) != CKPT_MAC_LEN)
		return urs_err_set(err, -EBADMSG, "checkpoint image %s: core.img is truncated",
				   dir);
	return 0;
}

/* Every file of @dir (and @dir/container/) a restore reads, in @names
 * (sorted, at most MAX_ENTRIES); returns their count or -errno. */
static int list_files(int dfd, const char *dir, char (*names)[NAME_LEN], struct urs_err *err)
{
	int n = 0;
	static const char *const subs[] = {".", "container"};
	for (size_t k = 0; k < URS_ARRAY_SIZE(subs); k++) {
		int sfd = openat(dfd, subs[k], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0 && errno == ENOENT && k)
			continue;
		struct stat sst;
		if (sfd >= 0 && k && (fstat(sfd, &sst) < 0 || owned(&sst, dir, subs[k], err) < 0)) {
			close(sfd);
			return -EPERM;
		}
		DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
		if (!d) {
			if (sfd >= 0)
				close(sfd);
			return urs_err_set(err, -errno, "checkpoint image %s: listing %s: %m", dir,
					   subs[k]);
		}
		struct dirent *de;
		char name[NAME_LEN + 16];
		while ((de = readdir(d))) {
			snprintf(name, sizeof(name), "%s%s%s", k ? subs[k] : "", k ? "/" : "",
				 de->d_name);
			if (!ckpt_manifest_file(name))
				continue;
			if (n == MAX_ENTRIES || strlen(name) >= NAME_LEN) {
				closedir(d);
				return urs_err_set(err, -E2BIG,
						   "checkpoint image %s: too many files or a name "
						   "too long (%s)",
						   dir, name);
			}
			snprintf(names[n++], NAME_LEN, "%s", name);
		}
		closedir(d);
	}
	qsort(names, (size_t) n, NAME_LEN, (int (*)(const void *, const void *)) strcmp);
	return n;
}

/* Every directory above @dir: owned by root or us, and writable by nobody
 * else unless sticky (where only an entry's owner may rename it): nobody
 * can swap the image directory, or a file in it, after it was checked. */
static int ancestors_safe(const char *dir, struct urs_err *err)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s", dir) >= (int) sizeof(p))
		return urs_err_set(err, -ENAMETOOLONG, "checkpoint image %s: path too long", dir);
	for (char *slash = strrchr(p, '/'); slash; slash = strrchr(p, '/')) {
		*slash = 0;
		struct stat st;
		const char *up = *p ? p : "/";
		if (lstat(up, &st) < 0)
			return urs_err_set(err, -errno, "checkpoint image %s: %s: %m", dir, up);
		if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
		    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
			return urs_err_set(err, -EPERM,
					   "checkpoint image %s: %s is writable by others (it must "
					   "not be, or be sticky): the image could be swapped",
					   dir, up);
		if (!*p)
			break;
	}
	return 0;
}

static int open_dir(const char *dir, struct urs_err *err)
{
	if (*dir == '/') {
		int r = ancestors_safe(dir, err);
		if (r)
			return r;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (dfd < 0 || fstat(dfd, &st) < 0) {
		int e = -errno;
		if (dfd >= 0)
			close(dfd);
		return urs_err_set(err, e, "checkpoint image %s: %s", dir, strerror(-e));
	}
	int r = owned(&st, dir, "the directory", err);
	if (r) {
		close(dfd);
		return r;
	}
	return dfd;
}

/* hdr + entries + MAC in one buffer; returns its length or -errno */
static ssize_t build(int dfd, const char *dir, const struct ckpt_seal *s, uint8_t **out,
		     struct urs_err *err)
{
	_cleanup_free_ char(*names)[NAME_LEN] = calloc(MAX_ENTRIES, NAME_LEN);
	if (!names)
		return urs_err_set(err, -ENOMEM, "checkpoint image: out of memory");
	int n = list_files(dfd, dir, names, err);
	if (n < 0)
		return n;
	size_t len = sizeof(struct mhdr) + (size_t) n * sizeof(struct mentry) + CKPT_MAC_LEN;
	_cleanup_free_ uint8_t *b = calloc(1, len);
	if (!b)
		return urs_err_set(err, -ENOMEM, "checkpoint image: out of memory");
	struct mhdr h = {.version = VERSION, .n = (uint32_t) n};
	memcpy(h.magic, MAGIC, 8);
	int r = core_mac(dfd, dir, h.core_mac, err);
	memcpy(b, &h, sizeof(h));
	struct mentry *e = (struct mentry *) (b + sizeof(h));
	for (int k = 0; k < n && !r; k++)
		r = hash_file(dfd, dir, names[k], &e[k], err);
	if (r)
		return r;
	ckpt_seal_labelled(s, LABEL, b, len - CKPT_MAC_LEN, b + len - CKPT_MAC_LEN);
	*out = steal_ptr(&b);
	return (ssize_t) len;
}

/* Every file of the image on disk before the manifest says it is complete
 * (and before the caller kills the workload it holds) */
static int sync_image(int dfd, const char *dir, struct urs_err *err)
{
	static const char *const more[] = {"core.img", "pages.img", "container", "hotset"};
	_cleanup_free_ char(*names)[NAME_LEN] =
		calloc(MAX_ENTRIES + URS_ARRAY_SIZE(more), NAME_LEN);
	if (!names)
		return urs_err_set(err, -ENOMEM, "checkpoint image: out of memory");
	int n = list_files(dfd, dir, names, err);
	if (n < 0)
		return n;
	for (size_t k = 0; k < URS_ARRAY_SIZE(more); k++)
		snprintf(names[n++], NAME_LEN, "%s", more[k]);
	for (int k = 0; k < n; k++) {
		_cleanup_close_ int fd = openat(dfd, names[k], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || fsync(fd) < 0)
			return urs_err_set(err, -errno, "checkpoint image %s: syncing %s: %m", dir,
					   names[k]);
	}
	return 0;
}

int ckpt_manifest_write(const char *dir, const struct ckpt_seal *s, struct urs_err *err)
{
	_cleanup_close_ int dfd = open_dir(dir, err);
	if (dfd < 0)
		return dfd;
	unlinkat(dfd, CKPT_MANIFEST, 0); /* an older image's */
	_cleanup_free_ uint8_t *b = NULL;
	ssize_t len = build(dfd, dir, s, &b, err);
	if (len < 0)
		return (int) len;
	int sr = sync_image(dfd, dir, err);
	if (sr < 0)
		return sr;
	static const char tmp[] = CKPT_MANIFEST ".tmp";
	unlinkat(dfd, tmp, 0);
	_cleanup_close_ int fd =
		openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r = fd < 0 ? -errno : urs_write_all(fd, b, (size_t) len);
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (!r && renameat(dfd, tmp, dfd, CKPT_MANIFEST) < 0)
		r = -errno;
	if (!r && fsync(dfd) < 0)
		r = -errno;
	if (r) {
		unlinkat(dfd, tmp, 0);
		unlinkat(dfd, CKPT_MANIFEST, 0);
		return urs_err_set(err, r, "checkpoint image %s: writing %s: %s", dir,
				   CKPT_MANIFEST, strerror(-r));
	}
	return 0;
}

/* manifest.img, read whole and its MAC checked; returns its length */
static ssize_t load(int dfd, const char *dir, const struct ckpt_seal *s, uint8_t **out,
		    struct urs_err *err)
{
	_cleanup_close_ int fd =
		openat(dfd, CKPT_MANIFEST, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 && errno == ENOENT)
		return urs_err_set(
			err, -ENOENT,
			"checkpoint image %s: no %s: the checkpoint did not complete (or "
			"an older ursa made it: checkpoint again)",
			dir, CKPT_MANIFEST);
	if (fd < 0 || fstat(fd, &st) < 0)
		return urs_err_set(err, -errno, "checkpoint image %s: %s: %m", dir, CKPT_MANIFEST);
	int r = owned(&st, dir, CKPT_MANIFEST, err);
	if (r)
		return r;
	size_t max = sizeof(struct mhdr) + MAX_ENTRIES * sizeof(struct mentry) + CKPT_MAC_LEN;
	if (!S_ISREG(st.st_mode) || (size_t) st.st_size > max ||
	    (size_t) st.st_size < sizeof(struct mhdr) + CKPT_MAC_LEN)
		return urs_err_set(err, -EBADMSG, "checkpoint image %s: %s has a bad size", dir,
				   CKPT_MANIFEST);
	size_t len = (size_t) st.st_size;
	_cleanup_free_ uint8_t *b = malloc(len);
	if (!b)
		return urs_err_set(err, -ENOMEM, "checkpoint image: out of memory");
	if (pread(fd, b, len, 0) != (ssize_t) len)
		return urs_err_set(err, -EIO, "checkpoint image %s: reading %s", dir,
				   CKPT_MANIFEST);
	uint8_t mac[CKPT_MAC_LEN];
	ckpt_seal_labelled(s, LABEL, b, len - CKPT_MAC_LEN, mac);
	if (!urs_mac_equal(mac, b + len - CKPT_MAC_LEN, CKPT_MAC_LEN))
		return urs_err_set(err, -EBADMSG,
				   "checkpoint image %s: %s fails authentication (altered, or "
				   "sealed under another key)",
				   dir, CKPT_MANIFEST);
	struct mhdr h;
	memcpy(&h, b, sizeof(h));
	if (memcmp(h.magic, MAGIC, 8) || h.version != VERSION || h.n > MAX_ENTRIES ||
	    len != sizeof(h) + h.n * sizeof(struct mentry) + CKPT_MAC_LEN)
		return urs_err_set(err, -EBADMSG, "checkpoint image %s: %s: bad header", dir,
				   CKPT_MANIFEST);
	*out = steal_ptr(&b);
	return (ssize_t) len;
}

/* every listed file as listed */
static int check_entries(int dfd, const char *dir, const struct mentry *e, uint32_t n,
			 struct urs_err *err)
{
	for (uint32_t k = 0; k < n; k++) {
		if (!memchr(e[k].name, 0, NAME_LEN) || !ckpt_manifest_file(e[k].name) ||
		    (k && strcmp(e[k - 1].name, e[k].name) >= 0))
			return urs_err_set(err, -EBADMSG, "checkpoint image %s: %s: bad entry %u",
					   dir, CKPT_MANIFEST, k);
		struct mentry got;
		int r = hash_file(dfd, dir, e[k].name, &got, err);
		if (r == -ENOENT)
			return urs_err_set(err, -EBADMSG, "checkpoint image %s: %s is missing", dir,
					   e[k].name);
		if (r)
			return r;
		if (got.size != e[k].size || !urs_mac_equal(got.sha, e[k].sha, sizeof(got.sha)))
			return urs_err_set(err, -EBADMSG,
					   "checkpoint image %s: %s was altered since the "
					   "checkpoint (%llu bytes, %llu listed)",
					   dir, e[k].name, (unsigned long long) got.size,
					   (unsigned long long) e[k].size);
	}
	return 0;
}

int ckpt_manifest_check(const char *dir, const struct ckpt_seal *s, struct urs_err *err)
{
	_cleanup_close_ int dfd = open_dir(dir, err);
	if (dfd < 0)
		return dfd;
	_cleanup_free_ uint8_t *b = NULL;
	ssize_t len = load(dfd, dir, s, &b, err);
	if (len < 0)
		return (int) len;
	struct mhdr h;
	memcpy(&h, b, sizeof(h));
	uint8_t mac[CKPT_MAC_LEN];
	int r = core_mac(dfd, dir, mac, err);
	if (r)
		return r;
	if (!urs_mac_equal(mac, h.core_mac, CKPT_MAC_LEN))
		return urs_err_set(err, -EBADMSG,
				   "checkpoint image %s: %s belongs to another core.img", dir,
				   CKPT_MANIFEST);
	const struct mentry *e = (const struct mentry *) (b + sizeof(h));
	if ((r = check_entries(dfd, dir, e, h.n, err)))
		return r;
	_cleanup_free_ char(*names)[NAME_LEN] = calloc(MAX_ENTRIES, NAME_LEN);
	if (!names)
		return urs_err_set(err, -ENOMEM, "checkpoint image: out of memory");
	int n = list_files(dfd, dir, names, err);
	if (n < 0)
		return n;
	for (int k = 0; k < n; k++) {
		bool listed = false;
		for (uint32_t j = 0; j < h.n && !listed; j++)
			listed = !strcmp(names[k], e[j].name);
		if (!listed)
			return urs_err_set(
				err, -EBADMSG,
				"checkpoint image %s: %s is not in the image's %s (added "
				"after the checkpoint)",
				dir, names[k], CKPT_MANIFEST);
	}
	return 0;
}
