/*
 * tests/gofer/conformance.c — the file-system conformance suite. Each test
 * runs in its own directory and records every result (values, errno names,
 * data digests) in a transcript; gofer_test.c runs it on a plain bind mount
 * (the oracle) and on gofer volumes and requires identical transcripts.
 * Nothing here may log what legitimately differs between two file systems
 * (inode numbers, times that were not set explicitly, fds, pids).
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "tests/gofer/conformance.h"

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;
	for (size_t k = 0; k < n; k++)
		h = (h ^ b[k]) * 1099511628211ull;
	return h;
}

/* Log a file's size and content digest. */
static void log_file(struct tctx *c, const char *rel)
{
	int fd = open(P(c, rel), O_RDONLY);
	if (fd < 0) {
		tlog(c, "file %s: open %s\n", rel, strerrorname_np(errno));
		return;
	}
	uint64_t h = 1469598103934665603ull, total = 0;
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t k = 0; k < n; k++)
			h = (h ^ (unsigned char) buf[k]) * 1099511628211ull;
		total += (uint64_t) n;
	}
	close(fd);
	tlog(c, "file %s: %llu bytes digest %016llx%s\n", rel, (unsigned long long) total,
	     (unsigned long long) h, n < 0 ? " READ-ERROR" : "");
}

static void log_stat(struct tctx *c, const char *rel, bool follow)
{
	struct stat st;
	int r = follow ? stat(P(c, rel), &st) : lstat(P(c, rel), &st);
	if (r < 0) {
		tlog(c, "stat %s: %s\n", rel, strerrorname_np(errno));
		return;
	}
	tlog(c, "stat %s: mode %o nlink %lu uid %u gid %u size %lld%s\n", rel, st.st_mode,
	     (unsigned long) (S_ISDIR(st.st_mode) ? 0 : st.st_nlink), st.st_uid, st.st_gid,
	     S_ISDIR(st.st_mode) ? 0LL : (long long) st.st_size,
	     st.st_blocks > 0 ? " blocks>0" : "");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Log a directory's sorted listing (names and d_type) and count. */
static void log_dir(struct tctx *c, const char *rel, bool names)
{
	DIR *d = opendir(P(c, rel));
	if (!d) {
		tlog(c, "dir %s: %s\n", rel, strerrorname_np(errno));
		return;
	}
	size_t n = 0, cap = 64;
	char **v = malloc(cap * sizeof(*v));
	struct dirent *e;
	while ((e = readdir(d))) {
		if (n == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		char tmp[300];
		snprintf(tmp, sizeof(tmp), "%s:%d", e->d_name, e->d_type);
		v[n++] = strdup(tmp);
	}
	closedir(d);
	qsort(v, n, sizeof(*v), cmp_str);
	uint64_t h = 1469598103934665603ull;
	for (size_t k = 0; k < n; k++) {
		h = fnv(v[k], strlen(v[k])) ^ (h * 31);
		if (names)
			tlog(c, "  %s\n", v[k]);
		free(v[k]);
	}
	free(v);
	tlog(c, "dir %s: %zu entries digest %016llx\n", rel, n, (unsigned long long) h);
}

static int put(struct tctx *c, const char *rel, const char *data, int flags, mode_t mode)
{
	int fd = open(P(c, rel), flags, mode);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, data, strlen(data));
	close(fd);
	return w == (ssize_t) strlen(data) ? 0 : -1;
}

/* ---- tests ---- */

static void t_file_basic(struct tctx *c)
{
	int fd = (int) CKOK(c, open(P(c, "a"), O_CREAT | O_EXCL | O_RDWR, 0640));
	CK(c, write(fd, "hello world", 11));
	CK(c, lseek(fd, 0, SEEK_CUR));
	char buf[64] = {0};
	CK(c, pread(fd, buf, sizeof(buf), 6));
	tlog(c, "read '%s'\n", buf);
	CK(c, close(fd));
	log_stat(c, "a", false);
	CKOPEN(c, open(P(c, "a"), O_CREAT | O_EXCL | O_RDWR, 0640));
	CKOPEN(c, open(P(c, "missing"), O_RDONLY));
	CKOPEN(c, open(P(c, ""), O_WRONLY));
	CKOPEN(c, open(P(c, "a/x"), O_RDONLY));
	fd = (int) CKOK(c, open(P(c, "a"), O_RDONLY));
	CK(c, write(fd, "x", 1));
	CK(c, close(fd));
	fd = (int) CKOK(c, open(P(c, "a"), O_WRONLY));
	CK(c, read(fd, buf, 1));
	CK(c, close(fd));
	CKOPEN(c, open(P(c, "a"), O_RDONLY | O_DIRECTORY));
	CKOPEN(c, open(P(c, "nodir/x"), O_CREAT | O_RDWR, 0600));
	char longname[300];
	memset(longname, 'n', 256);
	longname[256] = 0;
	CKOPEN(c, open(P(c, longname), O_CREAT | O_RDWR, 0600));
	log_file(c, "a");
	CK(c, unlink(P(c, "a")));
	CK(c, unlink(P(c, "a")));
	log_stat(c, "a", false);
	/* unlinked but open: still readable */
	fd = (int) CKOK(c, open(P(c, "b"), O_CREAT | O_RDWR, 0600));
	CK(c, write(fd, "keep", 4));
	CK(c, unlink(P(c, "b")));
	memset(buf, 0, sizeof(buf));
	CK(c, pread(fd, buf, 4, 0));
	tlog(c, "read '%s'\n", buf);
	struct stat st;
	CK(c, fstat(fd, &st));
	tlog(c, "fstat nlink %lu size %lld\n", (unsigned long) st.st_nlink, (long long) st.st_size);
	CK(c, close(fd));
}

static void t_append_trunc(struct tctx *c)
{
	put(c, "f", "0123456789", O_CREAT | O_WRONLY, 0644);
	int a = (int) CKOK(c, open(P(c, "f"), O_WRONLY | O_APPEND));
	int b = (int) CKOK(c, open(P(c, "f"), O_WRONLY | O_APPEND));
	CK(c, write(a, "AA", 2));
	CK(c, write(b, "BBB", 3));
	CK(c, pwrite(a, "CC", 2, 0)); /* O_APPEND: Linux appends regardless */
	CK(c, close(a));
	CK(c, close(b));
	log_file(c, "f");
	int t = (int) CKOK(c, open(P(c, "f"), O_RDWR | O_TRUNC));
	log_stat(c, "f", false);
	CK(c, write(t, "xyz", 3));
	CK(c, ftruncate(t, 100));
	log_stat(c, "f", false);
	CK(c, ftruncate(t, 2));
	CK(c, close(t));
	log_file(c, "f");
	CK(c, truncate(P(c, "f"), 7));
	log_file(c, "f");
	CK(c, truncate(P(c, ""), 7));
	CK(c, truncate(P(c, "nope"), 7));
	/* a second writer without O_APPEND, interleaved with reads */
	int w = (int) CKOK(c, open(P(c, "f"), O_RDWR));
	CK(c, pwrite(w, "Q", 1, 5));
	char buf[16] = {0};
	CK(c, pread(w, buf, sizeof(buf), 0));
	tlog(c, "read %02x %02x %02x %02x %02x %02x %02x\n", buf[0], buf[1], buf[2], buf[3], buf[4],
	     buf[5], buf[6]);
	CK(c, close(w));
}

static void t_sparse_large(struct tctx *c)
{
	int fd = (int) CKOK(c, open(P(c, "s"), O_CREAT | O_RDWR, 0644));
	off_t big = 5ll << 30; /* > 4 GiB */
	CK(c, pwrite(fd, "tail", 4, big));
	CK(c, pwrite(fd, "head", 4, 0));
	struct stat st;
	CK(c, fstat(fd, &st));
	tlog(c, "size %lld\n", (long long) st.st_size);
	CK(c, lseek(fd, 0, SEEK_DATA));
	off_t hole = lseek(fd, 0, SEEK_HOLE);
	tlog(c, "first hole %s\n", hole > 0 && hole < big ? "before tail" : "wrong");
	off_t data = lseek(fd, 8192, SEEK_DATA);
	tlog(c, "next data %s\n", data > 8192 && data <= big ? "at tail page" : "wrong");
	CK(c, lseek(fd, big + 4, SEEK_DATA));
	CK(c, lseek(fd, big + 100, SEEK_HOLE));
	char buf[8] = {0};
	CK(c, pread(fd, buf, 4, big));
	tlog(c, "tail '%s'\n", buf);
	CK(c, pread(fd, buf, 4, big - 4096));
	tlog(c, "zeros %d%d%d%d\n", buf[0], buf[1], buf[2], buf[3]);
	CK(c, pread(fd, buf, 4, big + 4)); /* EOF */
	CK(c, fallocate(fd, 0, 1 << 20, 1 << 20));
	CK(c, fstat(fd, &st));
	tlog(c, "size %lld\n", (long long) st.st_size);
	CK(c, fallocate(fd, FALLOC_FL_KEEP_SIZE, big + 4096, 4096));
	CK(c, fstat(fd, &st));
	tlog(c, "size %lld\n", (long long) st.st_size);
	CK(c, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096));
	CK(c, pread(fd, buf, 4, 0));
	tlog(c, "punched %d%d%d%d\n", buf[0], buf[1], buf[2], buf[3]);
	CK(c, fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096)); /* EOPNOTSUPP without KEEP_SIZE */
	CK(c, ftruncate(fd, 0));
	CK(c, close(fd));
}

static void t_mmap(struct tctx *c)
{
	int fd = (int) CKOK(c, open(P(c, "m"), O_CREAT | O_RDWR, 0644));
	CK(c, ftruncate(fd, 8192));
	char *sh = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	tlog(c, "mmap shared %s\n", sh == MAP_FAILED ? strerrorname_np(errno) : "ok");
	if (sh == MAP_FAILED)
		return;
	memcpy(sh + 100, "shared-write", 12);
	CK(c, msync(sh, 8192, MS_SYNC));
	char buf[16] = {0};
	CK(c, pread(fd, buf, 12, 100));
	tlog(c, "read after shared store '%s'\n", buf);
	CK(c, pwrite(fd, "via-write", 9, 4096));
	tlog(c, "mapping sees write '%.9s'\n", sh + 4096);
	char *pr = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	tlog(c, "mmap private %s\n", pr == MAP_FAILED ? strerrorname_np(errno) : "ok");
	if (pr != MAP_FAILED) {
		memcpy(pr + 200, "private", 7);
		memset(buf, 0, sizeof(buf));
		CK(c, pread(fd, buf, 7, 200));
		tlog(c, "file after private store %d\n", buf[0]);
		tlog(c, "private sees '%.7s' shared sees %d\n", pr + 200, sh[200]);
		munmap(pr, 8192);
	}
	munmap(sh, 8192);
	CK(c, close(fd));
	/* a mapping outlives its fd; the file is re-read after close */
	fd = (int) CKOK(c, open(P(c, "m"), O_RDONLY));
	char *ro = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
	CK(c, close(fd));
	if (ro != MAP_FAILED) {
		tlog(c, "ro map '%.12s' '%.9s'\n", ro + 100, ro + 4096);
		munmap(ro, 8192);
	}
	fd = (int) CKOK(c, open(P(c, "m"), O_RDONLY));
	void *bad = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, 0);
	tlog(c, "writable shared map of O_RDONLY: %s\n",
	     bad == MAP_FAILED ? strerrorname_np(errno) : "ok");
	CK(c, close(fd));
	log_file(c, "m");
}

static void t_dirs(struct tctx *c)
{
	CK(c, mkdir(P(c, "d"), 0755));
	CK(c, mkdir(P(c, "d"), 0755));
	CK(c, mkdir(P(c, "d/e"), 0700));
	CK(c, mkdir(P(c, "nope/e"), 0700));
	put(c, "d/f", "x", O_CREAT | O_WRONLY, 0644);
	CK(c, mkdir(P(c, "d/f/g"), 0700));
	CK(c, rmdir(P(c, "d")));
	CK(c, rmdir(P(c, "d/f")));
	CK(c, unlink(P(c, "d/e")));
	CK(c, rmdir(P(c, "d/e/.")));
	log_stat(c, "d/e", false);
	log_dir(c, "d", true);
	log_dir(c, "d/f", false);
	CK(c, rmdir(P(c, "d/e")));
	CK(c, rmdir(P(c, "d/e")));
	CK(c, unlink(P(c, "d/f")));
	CK(c, rmdir(P(c, "d")));
	log_dir(c, "", true);
	/* readdir with seekdir/telldir */
	CK(c, mkdir(P(c, "s"), 0755));
	for (int k = 0; k < 50; k++) {
		char n[32];
		snprintf(n, sizeof(n), "s/entry-%02d", k);
		put(c, n, "", O_CREAT | O_WRONLY, 0644);
	}
	DIR *d = opendir(P(c, "s"));
	if (d) {
		int seen = 0;
		long pos = -1;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (++seen == 20)
				pos = telldir(d);
		}
		seekdir(d, pos);
		int after = 0;
		while (readdir(d))
			after++;
		rewinddir(d);
		int again = 0;
		while (readdir(d))
			again++;
		tlog(c, "readdir %d, after seek %d, after rewind %d\n", seen, after, again);
		closedir(d);
	}
	int dfd = (int) CKOK(c, open(P(c, "s"), O_RDONLY | O_DIRECTORY));
	CK(c, fsync(dfd));
	CK(c, fdatasync(dfd));
	CK(c, syncfs(dfd));
	char buf[8];
	CK(c, read(dfd, buf, sizeof(buf)));
	CK(c, close(dfd));
}

static void t_bigdir(struct tctx *c)
{
	CK(c, mkdir(P(c, "big"), 0755));
	int bad = 0;
	for (int k = 0; k < 10000; k++) {
		char n[64];
		snprintf(n, sizeof(n), "big/file-with-a-longer-name-%05d", k);
		int fd = open(P(c, n), O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			bad++;
		else
			close(fd);
	}
	tlog(c, "create failures %d\n", bad);
	log_dir(c, "big", false);
	struct stat st;
	CK(c, stat(P(c, "big/file-with-a-longer-name-09999"), &st));
	CK(c, stat(P(c, "big/file-with-a-longer-name-10000"), &st));
	bad = 0;
	for (int k = 0; k < 10000; k++) {
		char n[64];
		snprintf(n, sizeof(n), "big/file-with-a-longer-name-%05d", k);
		if (unlink(P(c, n)) < 0)
			bad++;
	}
	tlog(c, "unlink failures %d\n", bad);
	log_dir(c, "big", true);
	CK(c, rmdir(P(c, "big")));
}

static int rn2(const char *a, const char *b, unsigned flags)
{
	return (int) syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static void t_rename(struct tctx *c)
{
	put(c, "a", "A", O_CREAT | O_WRONLY, 0644);
	put(c, "b", "B", O_CREAT | O_WRONLY, 0644);
	CK(c, mkdir(P(c, "d"), 0755));
	CK(c, mkdir(P(c, "e"), 0755));
	put(c, "e/x", "X", O_CREAT | O_WRONLY, 0644);
	CK(c, rename(P(c, "a"), P(c, "a2")));
	log_file(c, "a2");
	CK(c, rename(P(c, "a"), P(c, "a3")));
	CK(c, rename(P(c, "a2"), P(c, "b")));
	log_file(c, "b");
	CK(c, rename(P(c, "d"), P(c, "e")));
	CK(c, rename(P(c, "b"), P(c, "d")));
	CK(c, rename(P(c, "d"), P(c, "b")));
	CK(c, rename(P(c, "e"), P(c, "e/x/y")));
	CK(c, rename(P(c, "e"), P(c, "e/sub")));
	CK(c, rename(P(c, "b"), P(c, "e/b")));
	log_file(c, "e/b");
	CK(c, rename(P(c, "e/b"), P(c, "e/b")));
	CK(c, rn2(P(c, "e/b"), P(c, "e/x"), RENAME_NOREPLACE));
	CK(c, rn2(P(c, "e/b"), P(c, "c"), RENAME_NOREPLACE));
	log_file(c, "c");
	CK(c, rn2(P(c, "c"), P(c, "e"), RENAME_EXCHANGE));
	log_stat(c, "c", false);
	log_stat(c, "e", false);
	log_file(c, "e");
	log_file(c, "c/x");
	CK(c, rn2(P(c, "c"), P(c, "missing"), RENAME_EXCHANGE));
	CK(c, rn2(P(c, "c"), P(c, "e"), RENAME_EXCHANGE | RENAME_NOREPLACE));
	CK(c, rn2(P(c, "c"), P(c, "e"), RENAME_EXCHANGE));
	log_dir(c, "", true);
	log_dir(c, "e", true);
	CK(c, mkdir(P(c, "full"), 0755));
	put(c, "full/z", "", O_CREAT | O_WRONLY, 0644);
	CK(c, mkdir(P(c, "empty"), 0755));
	CK(c, rename(P(c, "empty"), P(c, "full")));
	CK(c, rename(P(c, "full"), P(c, "empty")));
	log_dir(c, "", true);
	/* an open file keeps working across renames of its directory */
	int fd = (int) CKOK(c, open(P(c, "empty/z"), O_RDWR));
	CK(c, rename(P(c, "empty"), P(c, "moved")));
	CK(c, write(fd, "still", 5));
	CK(c, close(fd));
	log_file(c, "moved/z");
}

static void t_links(struct tctx *c)
{
	put(c, "f", "data", O_CREAT | O_WRONLY, 0644);
	CK(c, link(P(c, "f"), P(c, "g")));
	log_stat(c, "f", false);
	struct stat a, b;
	CK(c, stat(P(c, "f"), &a));
	CK(c, stat(P(c, "g"), &b));
	tlog(c, "same inode %d\n", a.st_ino == b.st_ino);
	CK(c, link(P(c, "f"), P(c, "g")));
	CK(c, mkdir(P(c, "d"), 0755));
	CK(c, link(P(c, "d"), P(c, "d2")));
	CK(c, link(P(c, "nope"), P(c, "n2")));
	CK(c, unlink(P(c, "f")));
	log_stat(c, "g", false);
	CK(c, symlink("g", P(c, "l")));
	CK(c, symlink("g", P(c, "l")));
	CK(c, symlink("../../nowhere", P(c, "dangling")));
	CK(c, symlink("d", P(c, "ld")));
	char buf[256] = {0};
	CK(c, readlink(P(c, "l"), buf, sizeof(buf)));
	tlog(c, "readlink '%s'\n", buf);
	memset(buf, 0, sizeof(buf));
	CK(c, readlink(P(c, "dangling"), buf, sizeof(buf)));
	tlog(c, "readlink '%s'\n", buf);
	CK(c, readlink(P(c, "l"), buf, 1));
	CK(c, readlink(P(c, "g"), buf, sizeof(buf)));
	log_stat(c, "l", false);
	log_stat(c, "l", true);
	log_file(c, "l");
	CKOPEN(c, open(P(c, "dangling"), O_RDONLY));
	CKOPEN(c, open(P(c, "l"), O_RDONLY | O_NOFOLLOW));
	CKOPEN(c, open(P(c, "l"), O_PATH | O_NOFOLLOW));
	put(c, "ld/inside", "via-link", O_CREAT | O_WRONLY, 0644);
	log_file(c, "d/inside");
	log_dir(c, "", true);
	CK(c, unlink(P(c, "l")));
	log_file(c, "g");
	/* a long symlink target */
	char tgt[2000];
	memset(tgt, 'x', sizeof(tgt) - 1);
	tgt[sizeof(tgt) - 1] = 0;
	CK(c, symlink(tgt, P(c, "long")));
	char rb[4096];
	CK(c, readlink(P(c, "long"), rb, sizeof(rb)));
}

static void t_attr(struct tctx *c)
{
	put(c, "f", "attr", O_CREAT | O_WRONLY, 0644);
	CK(c, chmod(P(c, "f"), 0600));
	log_stat(c, "f", false);
	CK(c, chmod(P(c, "f"), 01755));
	log_stat(c, "f", false);
	CK(c, chown(P(c, "f"), 1000, 1001));
	log_stat(c, "f", false);
	CK(c, chown(P(c, "f"), (uid_t) -1, 0));
	log_stat(c, "f", false);
	CK(c, lchown(P(c, "f"), 0, (gid_t) -1));
	CK(c, symlink("f", P(c, "l")));
	CK(c, lchown(P(c, "l"), 1000, 1000));
	log_stat(c, "l", false);
	log_stat(c, "f", false);
	struct timespec ts[2] = {{1000000000, 123456789}, {1100000000, 987654321}};
	CK(c, utimensat(AT_FDCWD, P(c, "f"), ts, 0));
	struct stat st;
	CK(c, stat(P(c, "f"), &st));
	tlog(c, "times %ld.%09ld %ld.%09ld\n", (long) st.st_atim.tv_sec, st.st_atim.tv_nsec,
	     (long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	int fd = (int) CKOK(c, open(P(c, "f"), O_RDWR));
	struct timespec ts2[2] = {{.tv_nsec = UTIME_OMIT}, {2000000000, 5}};
	CK(c, futimens(fd, ts2));
	CK(c, fchmod(fd, 0640));
	CK(c, fstat(fd, &st));
	tlog(c, "fd mode %o mtime %ld.%09ld\n", st.st_mode, (long) st.st_mtim.tv_sec,
	     st.st_mtim.tv_nsec);
	CK(c, close(fd));
	CK(c, utimensat(AT_FDCWD, P(c, "f"), NULL, 0));
	CK(c, stat(P(c, "f"), &st));
	tlog(c, "touched now: %d\n",
	     st.st_mtim.tv_sec < 2000000000 && st.st_mtim.tv_sec > time(NULL) - 600);
	CK(c, access(P(c, "f"), F_OK));
	CK(c, access(P(c, "f"), R_OK | W_OK));
	CK(c, access(P(c, "f"), X_OK));
	CK(c, access(P(c, "nope"), F_OK));
	CK(c, chmod(P(c, "nope"), 0600));
	CK(c, mkdir(P(c, "d"), 0700));
	CK(c, chmod(P(c, "d"), 0751));
	log_stat(c, "d", false);
	/* non-root caller: permission checks by the kernel */
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(1001) < 0 || setuid(1001) < 0)
			_exit(90);
		int r1 = open(P(c, "f"), O_RDONLY) < 0 ? errno : 0; /* 0640 root:0 */
		int r2 = mkdir(P(c, "d/x"), 0700) < 0 ? errno : 0;
		int r3 = chmod(P(c, "f"), 0777) < 0 ? errno : 0;
		_exit((r1 == EACCES) + 2 * (r2 == EACCES) + 4 * (r3 == EPERM));
	}
	int ws = 0;
	waitpid(pid, &ws, 0);
	tlog(c, "unprivileged child: %d\n", WEXITSTATUS(ws));
}

static void t_xattr(struct tctx *c)
{
	put(c, "f", "x", O_CREAT | O_WRONLY, 0644);
	CK(c, setxattr(P(c, "f"), "user.one", "value1", 6, 0));
	CK(c, setxattr(P(c, "f"), "user.two", "", 0, 0));
	CK(c, setxattr(P(c, "f"), "user.one", "v", 1, XATTR_CREATE));
	CK(c, setxattr(P(c, "f"), "user.three", "v", 1, XATTR_REPLACE));
	char buf[256] = {0};
	CK(c, getxattr(P(c, "f"), "user.one", NULL, 0));
	CK(c, getxattr(P(c, "f"), "user.one", buf, sizeof(buf)));
	tlog(c, "value '%s'\n", buf);
	CK(c, getxattr(P(c, "f"), "user.one", buf, 2));
	CK(c, getxattr(P(c, "f"), "user.none", buf, sizeof(buf)));
	ssize_t n = CK(c, listxattr(P(c, "f"), buf, sizeof(buf)));
	/* sorted user.* names */
	char *names[16];
	int k = 0;
	for (ssize_t o = 0; o < n && k < 16; o += (ssize_t) strlen(buf + o) + 1)
		if (!strncmp(buf + o, "user.", 5))
			names[k++] = buf + o;
	qsort(names, (size_t) k, sizeof(*names), cmp_str);
	for (int j = 0; j < k; j++)
		tlog(c, "  xattr %s\n", names[j]);
	CK(c, removexattr(P(c, "f"), "user.one"));
	CK(c, removexattr(P(c, "f"), "user.one"));
	CK(c, getxattr(P(c, "f"), "user.one", buf, sizeof(buf)));
	CK(c, mkdir(P(c, "d"), 0755));
	CK(c, setxattr(P(c, "d"), "user.dir", "dv", 2, 0));
	CK(c, getxattr(P(c, "d"), "user.dir", buf, sizeof(buf)));
	CK(c, symlink("f", P(c, "l")));
	CK(c, lsetxattr(P(c, "l"), "user.link", "v", 1, 0));
	char big[4000];
	memset(big, 'v', sizeof(big));
	CK(c, setxattr(P(c, "f"), "user.big", big, sizeof(big), 0));
	char rb[8000];
	CK(c, getxattr(P(c, "f"), "user.big", rb, sizeof(rb)));
	tlog(c, "big same %d\n", !memcmp(rb, big, sizeof(big)));
}

static void t_statfs(struct tctx *c)
{
	struct statvfs s;
	CK(c, statvfs(P(c, ""), &s));
	tlog(c, "namemax %lu bsize>0 %d blocks>0 %d\n", s.f_namemax, s.f_bsize > 0, s.f_blocks > 0);
}

static void t_fsync(struct tctx *c)
{
	int fd = (int) CKOK(c, open(P(c, "f"), O_CREAT | O_RDWR, 0644));
	CK(c, write(fd, "sync", 4));
	CK(c, fsync(fd));
	CK(c, fdatasync(fd));
	CK(c, syncfs(fd));
	CK(c, close(fd));
	sync();
	log_file(c, "f");
}

static void t_locks(struct tctx *c)
{
	int fd = (int) CKOK(c, open(P(c, "l"), O_CREAT | O_RDWR, 0644));
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
	CK(c, fcntl(fd, F_SETLK, &fl));
	int pfd[2], qfd[2]; /* child -> parent, parent -> child */
	if (pipe(pfd) < 0)
		return;
	if (pipe(qfd) < 0)
		return;
	/* the parent holds flock before the child tries it */
	CK(c, flock(fd, LOCK_EX));
	pid_t pid = fork();
	if (pid == 0) {
		int f2 = open(P(c, "l"), O_RDWR);
		struct flock t = {
			.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 5, .l_len = 1};
		int r1 = fcntl(f2, F_SETLK, &t) < 0 ? errno : 0;
		struct flock q = {
			.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
		fcntl(f2, F_GETLK, &q);
		int r2 = q.l_type == F_WRLCK && q.l_pid == getppid();
		struct flock u = {
			.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 20, .l_len = 1};
		int r3 = fcntl(f2, F_SETLK, &u) < 0 ? errno : 0;
		int r4 = flock(f2, LOCK_EX | LOCK_NB) < 0 ? errno : 0; /* the parent holds flock */
		char ch;
		if (write(pfd[1], "x", 1) != 1 || read(qfd[0], &ch, 1) != 1)
			_exit(99);
		int r5 = flock(f2, LOCK_EX | LOCK_NB) < 0 ? errno : 0; /* released now */
		/* a blocking lock: granted when the parent unlocks */
		struct flock w = {
			.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
		int r6 = fcntl(f2, F_SETLKW, &w) < 0 ? errno : 0;
		_exit((r1 == EAGAIN) | (r2 << 1) | ((r3 == 0) << 2) | ((r4 == EWOULDBLOCK) << 3) |
		      ((r5 == 0) << 4) | ((r6 == 0) << 5));
	}
	char ch;
	if (read(pfd[0], &ch, 1) != 1) {
		tlog(c, "child sync failed\n");
	}
	CK(c, flock(fd, LOCK_UN));
	if (write(qfd[1], "y", 1) != 1)
		tlog(c, "child sync failed\n");
	usleep(100000); /* let the child block in F_SETLKW (either way it passes) */
	fl.l_type = F_UNLCK;
	CK(c, fcntl(fd, F_SETLK, &fl));
	int ws = 0;
	waitpid(pid, &ws, 0);
	tlog(c, "lock child bits %d\n", WEXITSTATUS(ws));
	close(pfd[0]);
	close(pfd[1]);
	close(qfd[0]);
	close(qfd[1]);
	CK(c, close(fd));
}

static void t_copy_range(struct tctx *c)
{
	char data[100000];
	for (size_t k = 0; k < sizeof(data); k++)
		data[k] = (char) (k * 7);
	int a = (int) CKOK(c, open(P(c, "src"), O_CREAT | O_RDWR, 0644));
	CK(c, write(a, data, sizeof(data)));
	int b = (int) CKOK(c, open(P(c, "dst"), O_CREAT | O_RDWR, 0644));
	loff_t oi = 1000, oo = 10;
	ssize_t total = 0, n;
	while (total < 50000 &&
	       (n = copy_file_range(a, &oi, b, &oo, (size_t) (50000 - total), 0)) > 0)
		total += n;
	tlog(c, "copied %zd\n", total);
	CK(c, copy_file_range(a, NULL, a, NULL, 10, 0)); /* overlapping same file */
	CK(c, close(a));
	CK(c, close(b));
	log_file(c, "dst");
}

static void t_concurrent(struct tctx *c)
{
	enum { W = 4, N = 64, BS = 16384 };
	int fd = (int) CKOK(c, open(P(c, "shared"), O_CREAT | O_RDWR, 0644));
	CK(c, close(fd));
	int afd = (int) CKOK(c, open(P(c, "log"), O_CREAT | O_RDWR, 0644));
	CK(c, close(afd));
	pid_t pids[W];
	for (int w = 0; w < W; w++) {
		pids[w] = fork();
		if (pids[w] == 0) {
			int f = open(P(c, "shared"), O_RDWR);
			int l = open(P(c, "log"), O_WRONLY | O_APPEND);
			char blk[BS], line[32];
			memset(blk, 'a' + w, sizeof(blk));
			int bad = f < 0 || l < 0;
			for (int k = 0; k < N && !bad; k++) {
				off_t off = ((off_t) k * W + w) * BS;
				if (pwrite(f, blk, BS, off) != BS)
					bad = 1;
				snprintf(line, sizeof(line), "writer %d line %04d\n", w, k);
				if (write(l, line, strlen(line)) != (ssize_t) strlen(line))
					bad = 1;
			}
			_exit(bad);
		}
	}
	int bad = 0;
	for (int w = 0; w < W; w++) {
		int ws = 0;
		waitpid(pids[w], &ws, 0);
		bad += !WIFEXITED(ws) || WEXITSTATUS(ws);
	}
	tlog(c, "writers failed %d\n", bad);
	log_file(c, "shared");
	/* appends: all lines present, none torn */
	FILE *f = fopen(P(c, "log"), "r");
	int lines = 0, torn = 0, per[W] = {0};
	char ln[64];
	while (f && fgets(ln, sizeof(ln), f)) {
		int w, k;
		if (sscanf(ln, "writer %d line %d", &w, &k) == 2 && w >= 0 && w < W)
			per[w]++;
		else
			torn++;
		lines++;
	}
	if (f)
		fclose(f);
	tlog(c, "lines %d torn %d per %d %d %d %d\n", lines, torn, per[0], per[1], per[2], per[3]);
}

static void t_special(struct tctx *c)
{
	CK(c, mkfifo(P(c, "fifo"), 0644));
	log_stat(c, "fifo", false);
	CK(c, mknod(P(c, "sock"), S_IFSOCK | 0644, 0));
	log_stat(c, "sock", false);
	CK(c, mknod(P(c, "reg"), S_IFREG | 0600, 0));
	log_stat(c, "reg", false);
	pid_t pid = fork();
	if (pid == 0) {
		int f = open(P(c, "fifo"), O_WRONLY);
		_exit(f < 0 || write(f, "pipe", 4) != 4);
	}
	int f = (int) CKOK(c, open(P(c, "fifo"), O_RDONLY));
	char buf[8] = {0};
	CK(c, read(f, buf, 4));
	tlog(c, "fifo '%s'\n", buf);
	close(f);
	int ws = 0;
	waitpid(pid, &ws, 0);
	log_dir(c, "", true);
}

const struct ctest ctests[] = {
	{"file_basic", t_file_basic},
	{"append_trunc", t_append_trunc},
	{"sparse_large", t_sparse_large},
	{"mmap", t_mmap},
	{"dirs", t_dirs},
	{"bigdir", t_bigdir},
	{"rename", t_rename},
	{"links", t_links},
	{"attr", t_attr},
	{"xattr", t_xattr},
	{"statfs", t_statfs},
	{"fsync", t_fsync},
	{"locks", t_locks},
	{"copy_range", t_copy_range},
	{"concurrent", t_concurrent},
	{"special", t_special},
	{NULL, NULL},
};
