/*
 * tests/gofer/test_gofer_inode.c — cmocka unit tests for the gofer's inode
 * table (actors/gofer_inode.c): one entry per (dev, ino), nodeids never
 * reused, FORGET frees at zero, open files keep entries, the root is never
 * freed, the limit answers ENFILE, the tables grow and shrink back.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/gofer_int.h"

static int devnull(void)
{
	int fd = open("/dev/null", O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static struct stat fake(ino_t ino)
{
	struct stat st = {.st_dev = 42, .st_ino = ino, .st_mode = S_IFREG | 0644};
	return st;
}

static void test_root_and_dedupe(void **state)
{
	(void) state;
	struct gofer_itable t;
	assert_int_equal(gofer_itable_init(&t, 0), 0);
	assert_int_equal(gofer_inode_root(&t, devnull()), 0);
	assert_non_null(gofer_inode_get(&t, FUSE_ROOT_ID));
	assert_int_equal(gofer_inode_root(&t, 99), -EEXIST);
	int err = 0;
	struct stat st = fake(7);
	struct ginode *a = gofer_inode_ref(&t, devnull(), &st, &err);
	struct ginode *b = gofer_inode_ref(&t, devnull(), &st, &err);
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
	struct ginode *c = gofer_inode_ref(&t, devnull(), &st, &err);
	assert_true(gofer_inode_id(&t, c) > id);
	/* the root ignores FORGET */
	gofer_inode_forget(&t, t.root, 1000);
	assert_non_null(gofer_inode_get(&t, FUSE_ROOT_ID));
	gofer_itable_fini(&t, NULL, NULL);
}

static void test_open_keeps_entry(void **state)
{
	(void) state;
	struct gofer_itable t;
	assert_int_equal(gofer_itable_init(&t, 0), 0);
	assert_int_equal(gofer_inode_root(&t, devnull()), 0);
	int err = 0;
	struct stat st = fake(9);
	struct ginode *a = gofer_inode_ref(&t, devnull(), &st, &err);
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
	assert_int_equal(gofer_itable_init(&t, 500), 0);
	assert_int_equal(gofer_inode_root(&t, devnull()), 0);
	static uint64_t ids[700];
	int err = 0, enfile = 0;
	for (int k = 0; k < 700; k++) {
		struct stat st = fake((ino_t) (1000 + k));
		err = 0;
		struct ginode *i = gofer_inode_ref(&t, devnull(), &st, &err);
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
	assert_int_equal(gofer_itable_init(&t, 0), 0);
	assert_int_equal(gofer_inode_root(&t, devnull()), 0);
	int err = 0;
	for (int k = 0; k < 100; k++) {
		struct stat st = fake((ino_t) (5 + k));
		assert_non_null(gofer_inode_ref(&t, devnull(), &st, &err));
	}
	int n = 0;
	gofer_itable_fini(&t, count, &n);
	assert_int_equal(n, 101);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_and_dedupe),
		cmocka_unit_test(test_open_keeps_entry),
		cmocka_unit_test(test_limit_and_shrink),
		cmocka_unit_test(test_fini_visits_all),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
