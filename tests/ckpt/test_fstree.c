/*
 * tests/ckpt/test_fstree.c — ckpt/fstree: a tree packed and unpacked comes
 * back the same (types, owners, modes incl. set-id bits, times, contents,
 * holes, xattrs incl. overlayfs' opaque marker, whiteouts, hard links,
 * symlinks left unfollowed); a damaged or truncated stream creates
 * nothing; crafted streams (names with "/" or "..", hard links out of the
 * tree or through a symlink) are refused.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckpt/image.h"
#include "ckpt/fstree.h"
#include "tests/lib/skip.h"

static char base[] = "/tmp/ursa-fstree-XXXXXX";

static void put(const char *rel, const char *text, mode_t mode)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
	close(fd);
	chmod(p, mode);
}

static void mk(const char *fmt, ...)
{
	char p[512], rel[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void path(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", base, rel);
}

/* The source tree: src/ with everything fstree keeps, plus skip-me/. */
static void make_src(void)
{
	char p[512], q[512];
	mk("src");
	mk("src/skip-me");
	mk("src/a");
	mk("src/a/b");
	mk("src/opaque");
	put("src/a/b/file", "hello, tree\n", 0644);
	put("src/empty", "", 0600);
	put("src/setuid", "#!/bin/sh\n", 04755);
	path(p, sizeof(p), "src/setuid");
	assert_int_equal(chown(p, 1234, 5678), 0);
	assert_int_equal(chmod(p, 04755), 0); /* chown cleared it */
	put("src/skip-me/x", "not saved", 0644);
	/* a sparse file: 1 MiB hole, then data */
	path(p, sizeof(p), "src/sparse");
	int fd = open(p, O_WRONLY | O_CREAT, 0640);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "tail", 4, 1 << 20), 4);
	close(fd);
	/* hard links, a symlink out of the tree, a fifo, a whiteout */
	path(p, sizeof(p), "src/a/b/file");
	path(q, sizeof(q), "src/hard");
	assert_int_equal(link(p, q), 0);
	path(q, sizeof(q), "src/out");
	assert_int_equal(symlink("/etc/passwd", q), 0);
	path(q, sizeof(q), "src/a/fifo");
	assert_int_equal(mkfifo(q, 0620), 0);
	path(q, sizeof(q), "src/a/whiteout");
	assert_int_equal(mknod(q, S_IFCHR | 0, makedev(0, 0)), 0);
	/* xattrs: user.* on a file, overlayfs' opaque marker on a directory */
	path(p, sizeof(p), "src/a/b/file");
	if (setxattr(p, "user.ursa", "v1", 2, 0) < 0)
		assert_int_equal(errno, ENOTSUP); /* a /tmp without user xattrs */
	path(p, sizeof(p), "src/opaque");
	assert_int_equal(setxattr(p, "trusted.overlay.opaque", "y", 1, 0), 0);
	/* an old mtime, kept */
	struct timespec ts[2] = {{.tv_sec = 1000000000, .tv_nsec = 5},
				 {.tv_sec = 1000000000, .tv_nsec = 5}};
	path(p, sizeof(p), "src/a");
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static int pack_src(void)
{
	char p[512];
	path(p, sizeof(p), "src");
	int d = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(d >= 0);
	int img = memfd_create("tree", 0);
	assert_true(img >= 0);
	static const char *const skip[] = {"skip-me", NULL};
	struct urs_err err = {{0}};
	struct urs_fstree_stats st;
	int r = urs_fstree_pack(d, img, skip, &st, &err);
	if (r)
		fprintf(stderr, "pack: %s\n", err.msg);
	assert_int_equal(r, 0);
	assert_true(st.entries >= 10);
	close(d);
	return img;
}

static int unpack_to(int img, const char *rel, struct urs_err *err)
{
	char p[512], cmd[600];
	path(p, sizeof(p), rel);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(mkdir(p, 0700), 0);
	int d = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(d >= 0);
	lseek(img, 0, SEEK_SET);
	int r = urs_fstree_unpack(img, d, NULL, err);
	close(d);
	return r;
}

static bool is_empty(const char *rel)
{
	char p[512];
	path(p, sizeof(p), rel);
	DIR *d = opendir(p);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n++;
	closedir(d);
	return n == 2;
}

static void same_xattrs(const char *a, const char *b)
{
	char la[1024], lb[1024];
	ssize_t na = llistxattr(a, la, sizeof(la)), nb = llistxattr(b, lb, sizeof(lb));
	assert_int_equal(na, nb);
	for (char *n = la; na > 0 && n < la + na; n += strlen(n) + 1) {
		char va[256], vb[256];
		ssize_t x = lgetxattr(a, n, va, sizeof(va)), y = lgetxattr(b, n, vb, sizeof(vb));
		assert_int_equal(x, y);
		assert_memory_equal(va, vb, (size_t) x);
	}
}

/* @a and @b (absolute) are the same tree; @a's top-level @skip is absent in @b. */
static void same_tree(const char *a, const char *b, const char *skip)
{
	DIR *d = opendir(a);
	assert_non_null(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char pa[1024], pb[1024];
		snprintf(pa, sizeof(pa), "%s/%s", a, de->d_name);
		snprintf(pb, sizeof(pb), "%s/%s", b, de->d_name);
		struct stat sa, sb;
		assert_int_equal(lstat(pa, &sa), 0);
		if (skip && !strcmp(de->d_name, skip)) {
			assert_int_equal(lstat(pb, &sb), -1);
			continue;
		}
		n++;
		assert_int_equal(lstat(pb, &sb), 0);
		assert_int_equal(sa.st_mode, sb.st_mode);
		assert_int_equal(sa.st_uid, sb.st_uid);
		assert_int_equal(sa.st_gid, sb.st_gid);
		assert_int_equal(sa.st_rdev, sb.st_rdev);
		assert_int_equal(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec);
		assert_int_equal(sa.st_mtim.tv_nsec, sb.st_mtim.tv_nsec);
		assert_int_equal(sa.st_nlink, sb.st_nlink);
		if (S_ISREG(sa.st_mode)) {
			assert_int_equal(sa.st_size, sb.st_size);
			char ca[8192], cb[8192];
			int fa = open(pa, O_RDONLY), fb = open(pb, O_RDONLY);
			ssize_t x, y;
			off_t off = 0;
			while ((x = pread(fa, ca, sizeof(ca), off)) > 0) {
				y = pread(fb, cb, sizeof(cb), off);
				assert_int_equal(x, y);
				assert_memory_equal(ca, cb, (size_t) x);
				off += x;
			}
			close(fa);
			close(fb);
			/* holes stay holes */
			assert_true(sb.st_blocks <= sa.st_blocks + 8);
		}
		if (S_ISLNK(sa.st_mode)) {
			char ta[512] = "", tb[512] = "";
			assert_true(readlink(pa, ta, sizeof(ta) - 1) > 0);
			assert_true(readlink(pb, tb, sizeof(tb) - 1) > 0);
			assert_string_equal(ta, tb);
		} else if (!S_ISFIFO(sa.st_mode) && !S_ISCHR(sa.st_mode)) {
			same_xattrs(pa, pb);
		}
		if (S_ISDIR(sa.st_mode))
			same_tree(pa, pb, NULL);
	}
	closedir(d);
	assert_true(n > 0 || !skip);
}

static void test_round_trip(void **state)
{
	(void) state;
	int img = pack_src();
	struct urs_err err = {{0}};
	int r = unpack_to(img, "dst", &err);
	if (r)
		fprintf(stderr, "unpack: %s\n", err.msg);
	assert_int_equal(r, 0);
	char a[512], b[512];
	path(a, sizeof(a), "src");
	path(b, sizeof(b), "dst");
	same_tree(a, b, "skip-me");
	/* the hard link is one inode again */
	struct stat x, y;
	path(a, sizeof(a), "dst/hard");
	path(b, sizeof(b), "dst/a/b/file");
	assert_int_equal(stat(a, &x), 0);
	assert_int_equal(stat(b, &y), 0);
	assert_int_equal(x.st_ino, y.st_ino);
	/* the symlink out of the tree is a symlink, nothing was copied through it */
	path(a, sizeof(a), "dst/out");
	assert_int_equal(lstat(a, &x), 0);
	assert_true(S_ISLNK(x.st_mode));
	close(img);
}

static void test_damage_creates_nothing(void **state)
{
	(void) state;
	int img = pack_src();
	off_t len = lseek(img, 0, SEEK_END);
	unsigned char *orig = malloc((size_t) len);
	assert_int_equal(pread(img, orig, (size_t) len, 0), len);
	/* one byte flipped at a time: every byte of the first 1 KiB (header,
	 * first records), then ~300 spread over the rest (the contents) */
	for (off_t pos = 0; pos < len; pos += pos < 1024 ? 1 : len / 300 + 1) {
		unsigned char c = orig[pos] ^ 0x20;
		assert_int_equal(pwrite(img, &c, 1, pos), 1);
		struct urs_err err = {{0}};
		assert_true(unpack_to(img, "bad", &err) < 0);
		assert_true(is_empty("bad"));
		assert_int_equal(pwrite(img, orig + pos, 1, pos), 1);
	}
	/* truncations */
	for (off_t cut = 0; cut < len; cut += len / 37 + 1) {
		assert_int_equal(ftruncate(img, cut), 0);
		struct urs_err err = {{0}};
		assert_true(unpack_to(img, "bad", &err) < 0);
		assert_true(is_empty("bad"));
	}
	/* a byte appended */
	assert_int_equal(ftruncate(img, 0), 0);
	assert_int_equal(pwrite(img, orig, (size_t) len, 0), len);
	assert_int_equal(pwrite(img, "x", 1, len), 1);
	struct urs_err err = {{0}};
	assert_true(unpack_to(img, "bad", &err) < 0);
	assert_true(is_empty("bad"));
	free(orig);
	close(img);
}

/* A crafted stream with a valid checksum: header, records, END, CRC. */
struct rec {
	uint32_t kind, mode, uid, gid, name_len, link_len, xattr_len, maj, min, nsec;
	int64_t sec;
	uint64_t size;
};

/* ... for a regular file (kind 2) of @size bytes, @ext extents follow
 * (pairs of offset, length; their bytes are 'x'), then the end marker */

static int crafted_file2(const char *name, const char *link, uint32_t kind, bool first_dir,
			 uint64_t size, const uint64_t *ext, int next);

static int crafted(const char *name, const char *link, uint32_t kind, bool first_dir)
{
	return crafted_file2(name, link, kind, first_dir, 0, NULL, 0);
}

static int crafted_file2(const char *name, const char *link, uint32_t kind, bool first_dir,
			 uint64_t size, const uint64_t *ext, int next)
{
	int fd = memfd_create("crafted", 0);
	unsigned char buf[4096];
	size_t n = 0;
	struct {
		char magic[8];
		uint32_t v, f;
	} h = {{'U', 'R', 'S', 'A', 'T', 'R', 'E', 'E'}, 1, 0};
	memcpy(buf, &h, sizeof(h));
	n = sizeof(h);
	uint64_t count = 0;
	if (first_dir) { /* "d" and inside it a symlink "l" -> "/" */
		struct rec d = {.kind = 1, .mode = 0755, .name_len = 1};
		memcpy(buf + n, &d, sizeof(d));
		n += sizeof(d);
		buf[n++] = 'd';
		struct rec l = {.kind = 3, .mode = 0777, .name_len = 1, .link_len = 1};
		memcpy(buf + n, &l, sizeof(l));
		n += sizeof(l);
		buf[n++] = 'l';
		buf[n++] = '/';
		struct rec e = {.kind = 8};
		memcpy(buf + n, &e, sizeof(e));
		n += sizeof(e);
		count = 2;
	}
	struct rec r = {.kind = kind,
			.mode = 0644,
			.name_len = (uint32_t) strlen(name),
			.link_len = link ? (uint32_t) strlen(link) : 0,
			.size = size};
	memcpy(buf + n, &r, sizeof(r));
	n += sizeof(r);
	memcpy(buf + n, name, strlen(name));
	n += strlen(name);
	if (link) {
		memcpy(buf + n, link, strlen(link));
		n += strlen(link);
	}
	for (int k = 0; kind == 2 && k <= next; k++) {
		uint64_t e[2] = {k < next ? ext[2 * k] : 0, k < next ? ext[2 * k + 1] : 0};
		memcpy(buf + n, e, sizeof(e));
		n += sizeof(e);
		for (uint64_t b = 0; b < e[1] && n < sizeof(buf) - 64; b++)
			buf[n++] = 'x';
	}
	struct rec end = {.kind = 9, .size = count + 1};
	memcpy(buf + n, &end, sizeof(end));
	n += sizeof(end);
	uint32_t crc = ckpt_crc32c(0, buf, n);
	memcpy(buf + n, &crc, 4);
	n += 4;
	assert_int_equal(write(fd, buf, n), (ssize_t) n);
	return fd;
}

static void test_crafted_refused(void **state)
{
	(void) state;
	struct {
		const char *name, *link;
		uint32_t kind;
		bool dir;
	} bad[] = {
		{"..", NULL, 2, false},		{".", NULL, 1, false},
		{"a/b", NULL, 2, false},	{"x", "../etc/passwd", 4, false},
		{"x", "/etc/passwd", 4, false}, {"x", "d/l/etc/passwd", 4, true},
		{"x", "d/../d", 4, true},	{"x", NULL, 4, false},
		{"x", NULL, 3, false},		{"x", NULL, 77, false},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int fd = crafted(bad[i].name, bad[i].link, bad[i].kind, bad[i].dir);
		struct urs_err err = {{0}};
		int r = unpack_to(fd, "bad", &err);
		assert_true(r < 0);
		assert_true(err.msg[0]);
		close(fd);
	}
	/* file extents: past the size, overlapping, out of order */
	static const uint64_t e1[] = {5, 10}, e2[] = {0, 4, 2, 4}, e3[] = {6, 2, 0, 2};
	const uint64_t *exts[] = {e1, e2, e3};
	int nexts[] = {1, 2, 2};
	for (int i = 0; i < 3; i++) {
		int fd = crafted_file2("f", NULL, 2, false, 10, exts[i], nexts[i]);
		struct urs_err err = {{0}};
		assert_true(unpack_to(fd, "bad", &err) < 0);
		assert_true(is_empty("bad"));
		close(fd);
	}
	/* ... and in order within the size: a file with a hole */
	static const uint64_t good[] = {0, 2, 6, 4};
	int gf = crafted_file2("f", NULL, 2, false, 10, good, 2);
	struct urs_err gerr = {{0}};
	assert_int_equal(unpack_to(gf, "bad", &gerr), 0);
	char fp[512], got[16] = "";
	path(fp, sizeof(fp), "bad/f");
	int ff = open(fp, O_RDONLY);
	assert_int_equal(read(ff, got, sizeof(got)), 10);
	assert_memory_equal(got, "xx\0\0\0\0xxxx", 10);
	close(ff);
	close(gf);
	/* the control: a well-formed crafted stream is accepted */
	int fd = crafted("ok", NULL, 2, true);
	struct urs_err err = {{0}};
	assert_int_equal(unpack_to(fd, "bad", &err), 0);
	close(fd);
}

/* A 1 TiB sparse file costs what it holds, and comes back sparse. */
static void test_sparse_huge(void **state)
{
	(void) state;
	char p[512];
	mk("huge");
	path(p, sizeof(p), "huge/f");
	int fd = open(p, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "head", 4, 0), 4);
	assert_int_equal(pwrite(fd, "tail", 4, (1ll << 40) - 4), 4);
	close(fd);
	path(p, sizeof(p), "huge");
	int d = open(p, O_RDONLY | O_DIRECTORY);
	int img = memfd_create("huge", 0);
	struct urs_err err = {{0}};
	assert_int_equal(urs_fstree_pack(d, img, NULL, NULL, &err), 0);
	close(d);
	assert_true(lseek(img, 0, SEEK_END) < (1 << 20));
	assert_int_equal(unpack_to(img, "huge2", &err), 0);
	path(p, sizeof(p), "huge2/f");
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 1ll << 40);
	assert_true(st.st_blocks < 1024);
	char got[5] = "";
	fd = open(p, O_RDONLY);
	assert_int_equal(pread(fd, got, 4, (1ll << 40) - 4), 4);
	assert_string_equal(got, "tail");
	assert_int_equal(pread(fd, got, 4, 0), 4);
	assert_string_equal(got, "head");
	close(fd);
	close(img);
}

/* Many hard links: one inode each again, and linear (a hash, not a scan). */
static void test_many_hardlinks(void **state)
{
	(void) state;
	char p[512], q[512];
	mk("links");
	for (int i = 0; i < 3000; i++) {
		snprintf(p, sizeof(p), "%s/links/a%d", base, i);
		snprintf(q, sizeof(q), "%s/links/b%d", base, i);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(link(p, q), 0);
	}
	path(p, sizeof(p), "links");
	int d = open(p, O_RDONLY | O_DIRECTORY);
	int img = memfd_create("links", 0);
	struct urs_err err = {{0}};
	assert_int_equal(urs_fstree_pack(d, img, NULL, NULL, &err), 0);
	close(d);
	assert_int_equal(unpack_to(img, "links2", &err), 0);
	for (int i = 0; i < 3000; i += 299) {
		struct stat x, y;
		snprintf(p, sizeof(p), "%s/links2/a%d", base, i);
		snprintf(q, sizeof(q), "%s/links2/b%d", base, i);
		assert_int_equal(stat(p, &x), 0);
		assert_int_equal(stat(q, &y), 0);
		assert_int_equal(x.st_ino, y.st_ino);
		assert_int_equal(x.st_nlink, 2);
	}
	close(img);
}

/* Mount points below the top (a directory, a file bind mount) are left out. */
static void test_mount_points_skipped(void **state)
{
	(void) state;
	char p[512], q[512];
	mk("mnts");
	mk("mnts/dir");
	put("mnts/file", "under the bind", 0644);
	put("mnts/keep", "kept", 0644);
	put("outside", "host file", 0644);
	path(p, sizeof(p), "mnts/dir");
	if (mount("tmpfs", p, "tmpfs", 0, NULL) < 0) {
		if (geteuid() == 0)
			URS_CM_SKIP_OR_FAIL("cannot mount a tmpfs as root");
		URS_CM_SKIP("needs root (mount)");
	}
	put("mnts/dir/inside", "in the mounted tmpfs", 0644);
	path(q, sizeof(q), "outside");
	char f[512];
	path(f, sizeof(f), "mnts/file");
	assert_int_equal(mount(q, f, NULL, MS_BIND, NULL), 0);
	char top[512];
	path(top, sizeof(top), "mnts");
	int d = open(top, O_RDONLY | O_DIRECTORY);
	int img = memfd_create("mnts", 0);
	struct urs_err err = {{0}};
	struct urs_fstree_stats st;
	int r = urs_fstree_pack(d, img, NULL, &st, &err);
	close(d);
	umount2(f, MNT_DETACH);
	umount2(p, MNT_DETACH);
	assert_int_equal(r, 0);
	assert_int_equal(st.skipped, 2);
	assert_int_equal(unpack_to(img, "mnts2", &err), 0);
	path(p, sizeof(p), "mnts2/keep");
	assert_int_equal(access(p, F_OK), 0);
	path(p, sizeof(p), "mnts2/dir");
	assert_int_equal(access(p, F_OK), -1);
	path(p, sizeof(p), "mnts2/file");
	assert_int_equal(access(p, F_OK), -1);
	close(img);
}

static int setup(void **state)
{
	(void) state;
	if (!mkdtemp(base))
		return -1;
	make_src();
	return 0;
}

static int teardown(void **state)
{
	(void) state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_damage_creates_nothing),
		cmocka_unit_test(test_crafted_refused),
		cmocka_unit_test(test_sparse_huge),
		cmocka_unit_test(test_many_hardlinks),
		cmocka_unit_test(test_mount_points_skipped),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
