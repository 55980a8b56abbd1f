/*
 * tests/shim/test_rootfs.c — containerd's rootfs mounts (shim/rootfs.c), in
 * a mount namespace of the test's own (nothing reaches the host's table):
 * a read-only bind is read-only (the kernel ignores ro on the bind itself),
 * an overlay writes to its upper layer, a failing mount says which and why
 * and leaves nothing mounted, 100 layers whose list is longer than a page
 * mount relative to their parent, options past a page that cannot be made
 * shorter are refused, and shim_rootfs_umount() takes every mount off.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "shim/rootfs.h"

static char dir[64], bundle[128], src[128];

static int setup(void **state)
{
	(void) state;
	if (geteuid() != 0)
		return 0;
	assert_int_equal(unshare(CLONE_NEWNS), 0);
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(dir, sizeof(dir), "/tmp/ursa-test-rootfs.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(bundle, sizeof(bundle), "%s/bundle", dir);
	snprintf(src, sizeof(src), "%s/src", dir);
	char p[192];
	snprintf(p, sizeof(p), "%s/rootfs", bundle);
	assert_int_equal(mkdir(bundle, 0700), 0);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(mkdir(src, 0700), 0);
	return 0;
}

static int teardown(void **state)
{
	(void) state;
	if (geteuid() != 0)
		return 0;
	shim_rootfs_umount(bundle);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static int mounts_at(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];
	int n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char mp[512];
		if (sscanf(line, "%*s %*s %*s %*s %511s", mp) == 1 && !strcmp(mp, path))
			n++;
	}
	if (f)
		fclose(f);
	return n;
}

static Containerd__Task__V2__Mount mnt(const char *type, const char *source, char **opts, size_t n)
{
	Containerd__Task__V2__Mount m = CONTAINERD__TASK__V2__MOUNT__INIT;
	m.type = (char *) type;
	m.source = (char *) source;
	m.options = opts;
	m.n_options = n;
	return m;
}

static void test_bind_readonly(void **state)
{
	(void) state;
	if (geteuid() != 0)
		skip();
	char *opts[] = {"ro", "rbind", "rprivate"};
	Containerd__Task__V2__Mount m = mnt("bind", src, opts, 3), *ms[] = {&m};
	struct urs_err err = {{0}};
	char root[192], f[256];
	assert_int_equal(shim_rootfs_mount(bundle, ms, 1, &err), 0);
	snprintf(root, sizeof(root), "%s/rootfs", bundle);
	assert_int_equal(mounts_at(root), 1);
	snprintf(f, sizeof(f), "%s/x", root);
	assert_true(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) < 0);
	assert_int_equal(errno, EROFS);
	assert_int_equal(shim_rootfs_umount(bundle), 0);
	assert_int_equal(mounts_at(root), 0);
}

static void test_overlay_and_errors(void **state)
{
	(void) state;
	if (geteuid() != 0)
		skip();
	char lower[192], upper[192], work[192], o1[512], o2[256], o3[256], root[192], f[256];
	snprintf(lower, sizeof(lower), "%s/lower", dir);
	snprintf(upper, sizeof(upper), "%s/upper", dir);
	snprintf(work, sizeof(work), "%s/work", dir);
	assert_int_equal(mkdir(lower, 0700) | mkdir(upper, 0700) | mkdir(work, 0700), 0);
	snprintf(o1, sizeof(o1), "lowerdir=%s", lower);
	snprintf(o2, sizeof(o2), "upperdir=%s", upper);
	snprintf(o3, sizeof(o3), "workdir=%s", work);
	char *opts[] = {o1, o2, o3};
	Containerd__Task__V2__Mount m = mnt("overlay", "overlay", opts, 3), *ms[] = {&m};
	struct urs_err err = {{0}};
	assert_int_equal(shim_rootfs_mount(bundle, ms, 1, &err), 0);
	snprintf(root, sizeof(root), "%s/rootfs", bundle);
	snprintf(f, sizeof(f), "%s/new", root);
	int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(f, sizeof(f), "%s/new", upper);
	assert_int_equal(access(f, F_OK), 0); /* written to the upper layer */
	assert_int_equal(shim_rootfs_umount(bundle), 0);

	/* a second mount that fails: which one and why, the first taken off */
	char *bad[] = {"lowerdir=/nonexistent-layer"};
	Containerd__Task__V2__Mount b = mnt("overlay", "overlay", bad, 1), *two[] = {&m, &b};
	assert_true(shim_rootfs_mount(bundle, two, 2, &err) < 0);
	assert_non_null(strstr(err.msg, "rootfs mount 1"));
	assert_int_equal(mounts_at(root), 0);

	/* data past a page */
	char big[5000];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	memcpy(big, "lowerdir=", 9);
	char *longo[] = {big};
	Containerd__Task__V2__Mount l = mnt("overlay", "overlay", longo, 1), *one[] = {&l};
	assert_int_equal(shim_rootfs_mount(bundle, one, 1, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "longer than a page"));
	assert_int_equal(mounts_at(root), 0);
}

/* 100 layers whose lowerdir list is longer than a page: mounted relative to
 * their parent (containerd's compaction), the union visible */
static void test_overlay_many_layers(void **state)
{
	(void) state;
	if (geteuid() != 0)
		skip();
	char layers[192], upper[192], work[192], root[192], f[256];
	snprintf(layers, sizeof(layers), "%s/layers", dir);
	snprintf(upper, sizeof(upper), "%s/upper", dir);
	snprintf(work, sizeof(work), "%s/work", dir);
	assert_int_equal(mkdir(layers, 0700) | mkdir(upper, 0700) | mkdir(work, 0700), 0);
	size_t cap = 16384, used = 0;
	char *lower = malloc(cap);
	used = (size_t) snprintf(lower, cap, "lowerdir=");
	for (int i = 0; i < 100; i++) {
		char l[256];
		snprintf(l, sizeof(l), "%s/a-layer-with-a-rather-long-name-%03d", layers, i);
		assert_int_equal(mkdir(l, 0700), 0);
		used += (size_t) snprintf(lower + used, cap - used, "%s%s", i ? ":" : "", l);
		if (i == 42) { /* one file in one layer */
			snprintf(f, sizeof(f), "%s/from-layer-42", l);
			close(open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
		}
	}
	assert_true(used > 4096);
	char o2[256], o3[256];
	snprintf(o2, sizeof(o2), "upperdir=%s", upper);
	snprintf(o3, sizeof(o3), "workdir=%s", work);
	char *opts[] = {lower, o2, o3};
	Containerd__Task__V2__Mount m = mnt("overlay", "overlay", opts, 3), *ms[] = {&m};
	struct urs_err err = {{0}};
	char cwd[512], cwd2[512];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(shim_rootfs_mount(bundle, ms, 1, &err), 0);
	assert_non_null(getcwd(cwd2, sizeof(cwd2)));
	assert_string_equal(cwd, cwd2); /* the mount's working directory was put back */
	snprintf(root, sizeof(root), "%s/rootfs", bundle);
	snprintf(f, sizeof(f), "%s/from-layer-42", root);
	assert_int_equal(access(f, F_OK), 0);
	assert_int_equal(shim_rootfs_umount(bundle), 0);
	free(lower);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bind_readonly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlay_many_layers, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
