/*
 * tests/ckpt/test_manifest.c — ckpt/manifest.c: an image's files sealed
 * and checked: round trip; each file altered, truncated, removed or added;
 * another key; another core.img; a symlink in place of a file; a directory
 * others may write; which names are listed.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckpt/manifest.h"

static char dir[64];

static void put(const char *name, const char *data)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t) strlen(data));
	close(fd);
}

static int setup(void **state)
{
	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/ursa-manifest.XXXXXX");
	assert_non_null(mkdtemp(dir));
	char sub[128];
	snprintf(sub, sizeof(sub), "%s/container", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	put("core.img", "core body ..... and a 32-byte core MAC at its end!!");
	put("pages.img", "pages are not listed");
	put("supervisor.img", "supervisor state");
	put("tmpfs.lst", "tmpfs-0.img\t22\t/tmp\n");
	put("tmpfs-0.img", "tmpfs contents");
	put("container/state.json", "{}");
	put("container/config.json", "{\"ociVersion\":\"1.0.2\"}");
	put("inventory.img", ""); /* a client's marker: not read, not listed */
	return 0;
}

static int teardown(void **state)
{
	(void) state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static struct ckpt_seal key(uint8_t b)
{
	struct ckpt_seal s;
	memset(s.key, b, sizeof(s.key));
	return s;
}

static int check(uint8_t k, const char *want)
{
	struct ckpt_seal s = key(k);
	struct urs_err err = {{0}};
	int r = ckpt_manifest_check(dir, &s, &err);
	if (want)
		assert_non_null(strstr(err.msg, want));
	return r;
}

static void sealed(void)
{
	struct ckpt_seal s = key(7);
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_manifest_write(dir, &s, &err), 0);
	assert_int_equal(check(7, NULL), 0);
}

static void test_roundtrip_and_key(void **state)
{
	(void) state;
	assert_int_equal(check(7, "no manifest.img"), -ENOENT);
	sealed();
	assert_int_equal(check(8, "fails authentication"), -EBADMSG);
	/* written again over an older one: still one manifest, still valid */
	sealed();
	char p[128];
	snprintf(p, sizeof(p), "%s/manifest.img.tmp", dir);
	assert_int_equal(access(p, F_OK), -1);
}

static void test_altered_files(void **state)
{
	(void) state;
	static const char *const names[] = {"supervisor.img", "tmpfs.lst", "tmpfs-0.img",
					    "container/state.json", "container/config.json"};
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		sealed();
		put(names[k], "something else");
		assert_int_equal(check(7, names[k]), -EBADMSG);
		assert_int_equal(check(7, "altered"), -EBADMSG);
		teardown(NULL);
		setup(NULL);
	}
	/* truncated to the same prefix */
	sealed();
	char p[128];
	snprintf(p, sizeof(p), "%s/tmpfs-0.img", dir);
	assert_int_equal(truncate(p, 3), 0);
	assert_int_equal(check(7, "tmpfs-0.img was altered"), -EBADMSG);
}

static void test_missing_and_added(void **state)
{
	(void) state;
	sealed();
	char p[128];
	snprintf(p, sizeof(p), "%s/supervisor.img", dir);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(check(7, "supervisor.img is missing"), -EBADMSG);
	put("supervisor.img", "supervisor state");
	assert_int_equal(check(7, NULL), 0);
	put("layer.img", "a layer nobody listed");
	assert_int_equal(check(7, "layer.img is not in the image's manifest"), -EBADMSG);
	snprintf(p, sizeof(p), "%s/layer.img", dir);
	unlink(p);
	put("pages.img", "pages change: the core's chunk MACs cover them, not this");
	put("stats-dump", "not read by a restore");
	assert_int_equal(check(7, NULL), 0);
}

static void test_other_core(void **state)
{
	(void) state;
	sealed();
	put("core.img", "another core body, so another core MAC at its end....");
	assert_int_equal(check(7, "belongs to another core.img"), -EBADMSG);
}

static void test_symlink_and_modes(void **state)
{
	(void) state;
	sealed();
	char p[128], q[128];
	snprintf(p, sizeof(p), "%s/tmpfs-0.img", dir);
	snprintf(q, sizeof(q), "%s/elsewhere", dir);
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(symlink(q, p), 0);
	assert_true(check(7, "tmpfs-0.img") < 0);
	unlink(p);
	assert_int_equal(rename(q, p), 0);
	assert_int_equal(check(7, NULL), 0);
	assert_int_equal(chmod(p, 0666), 0);
	assert_int_equal(check(7, "writable by nobody else"), -EPERM);
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(check(7, "writable by nobody else"), -EPERM);
	assert_int_equal(chmod(dir, 0700), 0);
}

static void test_names(void **state)
{
	(void) state;
	assert_true(ckpt_manifest_file("layer.img"));
	assert_true(ckpt_manifest_file("layer.dev"));
	assert_true(ckpt_manifest_file("tmpfs-12.img"));
	assert_true(ckpt_manifest_file("container/config.json"));
	assert_false(ckpt_manifest_file("core.img"));
	assert_false(ckpt_manifest_file("pages.img"));
	assert_false(ckpt_manifest_file("tmpfs-1.img.tmp"));
	assert_false(ckpt_manifest_file("tmpfs-x.img"));
	assert_false(ckpt_manifest_file("inventory.img"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip_and_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_altered_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_and_added, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_core, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_and_modes, setup, teardown),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
