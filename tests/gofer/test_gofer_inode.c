/*
 * tests/gofer/test_gofer_inode.c — cmocka unit tests for the gofer's inode
 * table (actors/gofer/inode.c): one entry per (dev, ino), nodeids never
 * reused, FORGET frees at zero, open files keep entries, the root is never
 * freed, the limit answers ENFILE, the tables grow and shrink back; file
 * handles and the fd cache: entries hold no fd past the cache size, evicted
 * ones are reopened to the same object (after renames, across hard links),
 * an unlinked object is ESTALE, a replaced one never reopens as the new
 * one, two fds at once survive a cache of 2, without handles fds are pinned
 * up to the cap (ENFILE past it). Runs on a private directory of /dev/shm
 * (tmpfs has handles).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/gofer/int.h"

static char dir[64];
static int dirfd_;

/* An O_PATH fd of DIR/name (made as a file if missing) and its stat. */
static int obj(const char *name, struct stat *st)
{
	int fd = openat(dirfd_, name, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	fd = openat(dirfd_, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), 0);
	return fd;
}

static int fakefd(struct stat *st, ino_t ino)
{
	/* an O_PATH fd plus a stat saying (dev, ino) as given: the dedupe and
	 * limit tests do not need real objects */
	int fd = open("/dev/null", O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	*st = (struct stat){.st_dev = 42, .st_ino = ino, .st_mode = S_IFREG | 0644};
	return fd;
}

static void new_table(struct gofer_itable *t, uint32_t max, uint32_t csize, uint32_t pinned)
{
	assert_int_equal(gofer_itable_init(t, max), 0);
	gofer_itable_limits(t, csize, pinned);
	int root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(gofer_inode_root(t, root), 0);
}

static int nfds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void test_root_and_dedupe(void **state)
{
	(void) state;
	struct gofer_itable t;
	new_table(&t, 0, 0, 0);
	assert_non_null(gofer_inode_get(&t, FUSE_ROOT_ID));
	assert_int_equal(gofer_inode_root(&t, 99), -EEXIST);
	int err = 0;
	struct stat st;
	struct ginode *a = gofer_inode_ref(&t, obj("seven", &st), true, &st, &err);
	struct ginode *b = gofer_inode_ref(&t, obj("seven", &st), true, &st, &err);
	assert_non_null(a);
	assert_ptr_equal(a, b); /* same (dev, ino): one entry, two lookups */
	assert_int_equal(a->nlookup, 2);
	assert_int_equal(t.live, 2);
	uint64_t id = gofer_inode_id(&t, a);
	assert_true(id > FUSE_ROOT_ID);
	gofer_inode_forget(&t, a, 1);
	assert_non_null(gofer_inode_get(&t, id));
	gofer_inode_forget(&t, a, 1);
	assert_null(gofer_inode_get(&t, id));
	assert_int_equal(t.live, 1);
	/* the same object again: a new nodeid, never the old one */
	struct ginode *c = gofer_inode_ref(&t, obj("seven", &st), true, &st, &err);
	assert_true(gofer_inode_id(&t, c) > id);
	/* the root ignores FORGET */
	gofer_inode_forget(&t, t.root, 1000);
	assert_non_null(gofer_inode_get(&t, FUSE_ROOT_ID));
	gofer_itable_fini(&t, NULL, NULL);
}

/* The host reused an inode number (the entry's object is gone, a new one
 * has its number): the new object gets its own entry, the old nodeid lives
 * on until the kernel forgets it, and a resize does not bring it back. */
static void test_stale_inode_number(void **state)
{
	(void) state;
	struct gofer_itable t;
	new_table(&t, 0, 0, 0);
	int err = 0;
	struct stat st, other;
	struct ginode *a = gofer_inode_ref(&t, obj("old-one", &st), true, &st, &err);
	assert_non_null(a);
	uint64_t aid = gofer_inode_id(&t, a);
	/* another object (another handle) reported under a's (dev, ino) */
	int fd = obj("new-one", &other);
	other.st_dev = st.st_dev;
	other.st_ino = st.st_ino;
	struct ginode *b = gofer_inode_ref(&t, fd, true, &other, &err);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_ptr_equal(gofer_inode_get(&t, aid), a);
	/* same number, another type: also another entry */
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat dst;
	assert_int_equal(fstat(dfd, &dst), 0);
	dst.st_dev = st.st_dev;
	dst.st_ino = st.st_ino;
	struct ginode *c = gofer_inode_ref(&t, dfd, true, &dst, &err);
	assert_non_null(c);
	assert_ptr_not_equal(c, b);
	/* growing the tables re-chains entries: the stale ones stay out */
	for (int k = 0; k < 64; k++) {
		struct stat fs;
		assert_non_null(gofer_inode_ref(&t, fakefd(&fs, 100000 + k), true, &fs, &err));
	}
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_ptr_equal(gofer_inode_ref(&t, dfd, true, &dst, &err), c);
	gofer_inode_forget(&t, a, 1);
	assert_null(gofer_inode_get(&t, aid));
	gofer_itable_fini(&t, NULL, NULL);
}

static void test_open_keeps_entry(void **state)
{
	(void) state;
	struct gofer_itable t;
	new_table(&t, 0, 0, 0);
	int err = 0;
	struct stat st;
	struct ginode *a = gofer_inode_ref(&t, obj("nine", &st), true, &st, &err);
	uint64_t id = gofer_inode_id(&t, a);
	a->opens = 1;
	gofer_inode_forget(&t, a, 1);
	assert_ptr_equal(gofer_inode_get(&t, id), a); /* still open */
	a->opens = 0;
	gofer_inode_forget(&t, a, 0); /* what RELEASE does */
	assert_null(gofer_inode_get(&t, id));
	gofer_itable_fini(&t, NULL, NULL);
}

static void test_limit_and_shrink(void **state)
{
	(void) state;
	struct gofer_itable t;
	new_table(&t, 500, 0, 1000); /* fake dev: no handles, pinned fds */
	static uint64_t ids[700];
	int err = 0, enfile = 0;
	for (int k = 0; k < 700; k++) {
		struct stat st;
		int fd = fakefd(&st, (ino_t) (1000 + k));
		err = 0;
		struct ginode *i = gofer_inode_ref(&t, fd, true, &st, &err);
		ids[k] = i ? gofer_inode_id(&t, i) : 0;
		if (!i) {
			assert_int_equal(err, -ENFILE);
			enfile++;
		}
	}
	assert_int_equal(t.live, 500);
	assert_int_equal(enfile, 201); /* the root counts */
	assert_true(t.nbuckets >= 256);
	size_t big = gofer_itable_mem(&t);
	for (int k = 0; k < 700; k++) {
		struct ginode *i = ids[k] ? gofer_inode_get(&t, ids[k]) : NULL;
		if (i)
			gofer_inode_forget(&t, i, 1);
	}
	assert_int_equal(t.live, 1);
	gofer_itable_compact(&t);
	assert_int_equal(t.nbuckets, 16);
	assert_true(gofer_itable_mem(&t) < big / 20);
	assert_non_null(gofer_inode_get(&t, FUSE_ROOT_ID));
	gofer_itable_fini(&t, NULL, NULL);
}

static void count(struct ginode *i, void *ctx)
{
	(void) i;
	(*(int *) ctx)++;
}

static void test_fini_visits_all(void **state)
{
	(void) state;
	struct gofer_itable t;
	new_table(&t, 0, 4, 0);
	int err = 0;
	for (int k = 0; k < 100; k++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "f%d", k);
		struct stat st;
		assert_non_null(gofer_inode_ref(&t, obj(nm, &st), true, &st, &err));
	}
	int n = 0;
	gofer_itable_fini(&t, count, &n);
	assert_int_equal(n, 101);
}

/* 2000 entries with a cache of 8: the table holds 8 + root + mount fd */
static void test_cache_bounds_fds(void **state)
{
	(void) state;
	struct gofer_itable t;
	int before = nfds();
	new_table(&t, 0, 8, 0);
	static struct ginode *e[2000];
	int err = 0;
	for (int k = 0; k < 2000; k++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "m%d", k);
		struct stat st;
		e[k] = gofer_inode_ref(&t, obj(nm, &st), true, &st, &err);
		assert_non_null(e[k]);
		assert_true(e[k]->hlen > 0 && e[k]->hlen <= GOFER_HANDLE_INLINE);
	}
	assert_int_equal(t.live, 2001);
	assert_int_equal(gofer_itable_fds(&t), 8 + 2);
	assert_int_equal(nfds(), before + 8 + 2);
	assert_int_equal(t.evictions, 2000 - 8);
	/* every one reopens to its own object */
	for (int k = 0; k < 2000; k += 7) {
		int fd = gofer_inode_fd(&t, e[k]);
		assert_true(fd >= 0);
		struct stat st;
		assert_int_equal(fstatat(fd, "", &st, AT_EMPTY_PATH), 0);
		assert_int_equal(st.st_ino, e[k]->ino);
	}
	assert_true(t.reopens >= 2000 / 7);
	assert_int_equal(nfds(), before + 8 + 2);
	/* a hit keeps it: the same fd twice */
	int a = gofer_inode_fd(&t, e[3]);
	assert_int_equal(gofer_inode_fd(&t, e[3]), a);
	for (int k = 0; k < 2000; k++)
		gofer_inode_forget(&t, e[k], 1);
	assert_int_equal(t.live, 1);
	assert_int_equal(gofer_itable_fds(&t), 2);
	gofer_itable_fini(&t, NULL, NULL);
	assert_int_equal(nfds(), before);
	for (int k = 0; k < 2000; k++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "m%d", k);
		unlinkat(dirfd_, nm, 0);
	}
}

/* evicted entries after rename, hard link, unlink and replacement */
static void test_reopen_rules(void **state)
{
	(void) state;
	struct gofer_itable t;
	new_table(&t, 0, 2, 0);
	int err = 0;
	struct stat st;
	struct ginode *a = gofer_inode_ref(&t, obj("ra", &st), true, &st, &err);
	struct ginode *b = gofer_inode_ref(&t, obj("rb", &st), true, &st, &err);
	struct ginode *c = gofer_inode_ref(&t, obj("rc", &st), true, &st, &err);
	assert_true(a && b && c);
	assert_int_equal(a->fd, -1); /* evicted by c (cache of 2) */
	/* renamed while evicted: still the same object */
	assert_int_equal(renameat(dirfd_, "ra", dirfd_, "ra2"), 0);
	int fd = gofer_inode_fd(&t, a);
	assert_true(fd >= 0);
	assert_int_equal(fstatat(fd, "", &st, AT_EMPTY_PATH), 0);
	assert_int_equal(st.st_ino, a->ino);
	/* a hard link is the same entry */
	assert_int_equal(linkat(dirfd_, "rb", dirfd_, "rb-link", 0), 0);
	struct ginode *b2 = gofer_inode_ref(&t, obj("rb-link", &st), true, &st, &err);
	assert_ptr_equal(b2, b);
	assert_int_equal(b->nlookup, 2);
	/* both fds at once with a cache of 2: neither evicts the other */
	int fa, fb;
	gofer_inode_fd(&t, c);
	assert_int_equal(gofer_inode_fd2(&t, a, b, &fa, &fb), 0);
	assert_true(a->fd == fa && b->fd == fb && fa >= 0 && fb >= 0);
	/* the last name of c unlinked while evicted: ESTALE, never another */
	gofer_inode_fd(&t, a);
	gofer_inode_fd(&t, b);
	assert_int_equal(c->fd, -1);
	assert_int_equal(unlinkat(dirfd_, "rc", 0), 0);
	assert_int_equal(gofer_inode_fd(&t, c), -ESTALE);
	/* a new file where it was (the inode number may be reused): the old
	 * entry still does not reopen as the new one */
	close(obj("rc", &st));
	assert_int_equal(gofer_inode_fd(&t, c), -ESTALE);
	assert_true(t.stale >= 2);
	gofer_itable_fini(&t, NULL, NULL);
	unlinkat(dirfd_, "ra2", 0);
	unlinkat(dirfd_, "rb", 0);
	unlinkat(dirfd_, "rb-link", 0);
	unlinkat(dirfd_, "rc", 0);
}

/* CREATE borrows an open fd: the entry takes the handle, no fd */
static void test_borrowed_fd(void **state)
{
	(void) state;
	struct gofer_itable t;
	new_table(&t, 0, 4, 0);
	int fd = openat(dirfd_, "cr", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	int err = 0;
	struct ginode *i = gofer_inode_ref(&t, fd, false, &st, &err);
	assert_non_null(i);
	assert_int_equal(i->fd, -1);
	assert_int_equal(fcntl(fd, F_GETFD), FD_CLOEXEC); /* still the caller's */
	close(fd);
	int o = gofer_inode_fd(&t, i);
	assert_true(o >= 0);
	assert_int_equal(fstatat(o, "", &st, AT_EMPTY_PATH), 0);
	assert_int_equal(st.st_ino, i->ino);
	gofer_itable_fini(&t, NULL, NULL);
	unlinkat(dirfd_, "cr", 0);
}

/* without handles: pinned fds up to the cap, then ENFILE, counted; a
 * budget shared with another table counts both */
static void test_pinned_cap(void **state)
{
	(void) state;
	struct gofer_itable t, u;
	new_table(&t, 0, 2, 5);
	new_table(&u, 0, 2, 5);
	t.no_handles = u.no_handles = true;
	uint32_t shared = 0;
	t.shared_pinned = u.shared_pinned = &shared;
	int err = 0;
	struct ginode *e[8] = {0};
	for (int k = 0; k < 8; k++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "p%d", k);
		struct stat st;
		err = 0;
		e[k] = gofer_inode_ref(k < 3 ? &t : &u, obj(nm, &st), true, &st, &err);
		if (k < 5) {
			assert_non_null(e[k]);
			assert_int_equal(e[k]->hlen, 0);
			assert_true(e[k]->fd >= 0);
		} else {
			assert_null(e[k]);
			assert_int_equal(err, -ENFILE);
		}
	}
	assert_int_equal(shared, 5);
	assert_int_equal(u.refused, 3);
	/* a pinned fd is its own: never evicted */
	assert_int_equal(gofer_inode_fd(&t, e[0]), e[0]->fd);
	gofer_inode_forget(&t, e[0], 1);
	assert_int_equal(shared, 4);
	struct stat st;
	assert_non_null(gofer_inode_ref(&u, obj("p7", &st), true, &st, &err));
	gofer_itable_fini(&t, NULL, NULL);
	gofer_itable_fini(&u, NULL, NULL);
	assert_int_equal(shared, 0);
	for (int k = 0; k < 8; k++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "p%d", k);
		unlinkat(dirfd_, nm, 0);
	}
}

static int setup(void **state)
{
	(void) state;
	snprintf(dir, sizeof(dir), "/dev/shm/gofer-inode-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	dirfd_ = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return dirfd_ < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void) state;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd_, de->d_name, 0);
	if (d)
		closedir(d);
	close(dirfd_);
	rmdir(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_and_dedupe),	 cmocka_unit_test(test_stale_inode_number),
		cmocka_unit_test(test_open_keeps_entry), cmocka_unit_test(test_limit_and_shrink),
		cmocka_unit_test(test_fini_visits_all),	 cmocka_unit_test(test_cache_bounds_fds),
		cmocka_unit_test(test_reopen_rules),	 cmocka_unit_test(test_borrowed_fd),
		cmocka_unit_test(test_pinned_cap),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
