/*
 * tests/ckpt/test_remote_ref.c — a local directory's reference to an image
 * in object storage (ckpt/remote_ref.h): written and read back under the
 * host's key (a key file of the test's, through $URSA_CKPT_KEY), the
 * directory's only once committed, an uncommitted one dropped leaving the
 * earlier; the default profile; none there (-ENOENT); refused when edited
 * (location, profile, MAC), cut, followed by more, read with another key,
 * or not a regular file (a symlink, a FIFO: not waited on); locations and
 * profiles it cannot hold refused at write, nothing written.
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

#include "ckpt/remote_ref.h"

static char dir[64], keyfile[96];

static void put_key(char c)
{
	int fd = open(keyfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	char k[CKPT_KEY_LEN];
	memset(k, c, sizeof(k));
	assert_int_equal(write(fd, k, sizeof(k)), (ssize_t) sizeof(k));
	close(fd);
}

static int setup(void **state)
{
	(void) state;
	snprintf(dir, sizeof(dir), "/tmp/ursa-ref.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(keyfile, sizeof(keyfile), "%s.key", dir);
	put_key('k');
	setenv("URSA_CKPT_KEY", keyfile, 1);
	return 0;
}

static int teardown(void **state)
{
	(void) state;
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, keyfile);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static char *slurp(const char *d, size_t *n)
{
	static char buf[CKPT_REF_MAX + 64];
	char p[128];
	snprintf(p, sizeof(p), "%s/" CKPT_REF_FILE, d);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	*n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[*n] = 0;
	fclose(f);
	return buf;
}

static void spit(const char *d, const char *p, size_t n)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/" CKPT_REF_FILE, d);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* @d's reference is refused as not one (-EBADMSG) */
static void refused(const char *d)
{
	char loc[CKPT_REF_LOC_MAX], prof[CKPT_REF_PROF_MAX];
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_ref_read(d, loc, prof, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, CKPT_REF_FILE));
}

static void test_round_trip(void **state)
{
	(void) state;
	char sub[96], loc[CKPT_REF_LOC_MAX], prof[CKPT_REF_PROF_MAX];
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_ref_read(dir, loc, prof, &err), -ENOENT); /* none yet */
	snprintf(sub, sizeof(sub), "%s/a/img", dir); /* made with its parent, 0700 */
	assert_int_equal(ckpt_ref_write(sub, "s3://b1/parked/c1-00ff", "minio", &err), 0);
	struct stat st;
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* not the directory's reference until committed */
	assert_int_equal(ckpt_ref_read(sub, loc, prof, &err), -ENOENT);
	assert_int_equal(ckpt_ref_commit(sub, &err), 0);
	assert_int_equal(ckpt_ref_read(sub, loc, prof, &err), 0);
	assert_string_equal(loc, "s3://b1/parked/c1-00ff");
	assert_string_equal(prof, "minio");
	/* another, dropped (a checkpoint that failed): the first one stays */
	assert_int_equal(ckpt_ref_write(sub, "s3://b1/p/c2", NULL, &err), 0);
	ckpt_ref_drop(sub);
	assert_int_equal(ckpt_ref_read(sub, loc, prof, &err), 0);
	assert_string_equal(loc, "s3://b1/parked/c1-00ff");
	/* committed: replaced */
	assert_int_equal(ckpt_ref_write(sub, "s3://b1/p/c2", NULL, &err), 0);
	assert_int_equal(ckpt_ref_commit(sub, &err), 0);
	assert_int_equal(ckpt_ref_read(sub, loc, prof, &err), 0);
	assert_string_equal(loc, "s3://b1/p/c2");
	assert_string_equal(prof, ""); /* the default */
}

/* set aside while a local image is written: put back when it fails,
 * removed once it is in */
static void test_aside(void **state)
{
	(void) state;
	char sub[96], old[128], loc[CKPT_REF_LOC_MAX], prof[CKPT_REF_PROF_MAX];
	struct urs_err err = {{0}};
	snprintf(sub, sizeof(sub), "%s/aside", dir);
	snprintf(old, sizeof(old), "%s/" CKPT_REF_OLD, sub);
	assert_int_equal(ckpt_ref_aside(sub), 0); /* nothing there */
	assert_int_equal(ckpt_ref_write(sub, "s3://b1/x", NULL, &err), 0);
	assert_int_equal(ckpt_ref_commit(sub, &err), 0);
	assert_int_equal(ckpt_ref_aside(sub), 1);
	assert_int_equal(ckpt_ref_read(sub, loc, prof, &err), -ENOENT); /* not followed now */
	assert_int_equal(ckpt_ref_aside_end(sub, false), 0);		/* failed: back */
	assert_int_equal(ckpt_ref_read(sub, loc, prof, &err), 0);
	assert_int_equal(ckpt_ref_aside(sub), 1);
	assert_int_equal(ckpt_ref_aside_end(sub, true), 0);	  /* the image is in: gone */
	assert_int_equal(ckpt_ref_aside_end(sub, true), -ENOENT); /* nothing set aside: said */
	assert_int_equal(ckpt_ref_read(sub, loc, prof, &err), -ENOENT);
	assert_int_equal(access(old, F_OK), -1);
}

/* a FIFO or a symlink in place of the file: refused, not waited on or
 * followed */
static void test_not_a_file(void **state)
{
	(void) state;
	char sub[96], path[128], real[128], loc[CKPT_REF_LOC_MAX], prof[CKPT_REF_PROF_MAX];
	struct urs_err err = {{0}};
	snprintf(sub, sizeof(sub), "%s/odd", dir);
	assert_int_equal(ckpt_ref_write(sub, "s3://b1/x", NULL, &err), 0);
	assert_int_equal(ckpt_ref_commit(sub, &err), 0);
	snprintf(path, sizeof(path), "%s/" CKPT_REF_FILE, sub);
	snprintf(real, sizeof(real), "%s/real", sub);
	assert_int_equal(rename(path, real), 0);
	assert_int_equal(symlink(real, path), 0);
	assert_int_equal(ckpt_ref_read(sub, loc, prof, &err), -EINVAL);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(ckpt_ref_read(sub, loc, prof, &err), -EINVAL);
	assert_non_null(strstr(err.msg, CKPT_REF_FILE));
}

static void test_tampered(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_ref_write(dir, "s3://b1/parked/c1", "p1", &err), 0);
	assert_int_equal(ckpt_ref_commit(dir, &err), 0);
	size_t n;
	char good[CKPT_REF_MAX + 64], *b;
	b = slurp(dir, &n);
	memcpy(good, b, n + 1);
	const char *edits[][2] = {{"parked/c1", "parked/c2"}, {"p1\n", "p2\n"}};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char t[CKPT_REF_MAX + 64];
		char *at = strstr(good, edits[i][0]);
		assert_non_null(at);
		snprintf(t, sizeof(t), "%.*s%s%s", (int) (at - good), good, edits[i][1],
			 at + strlen(edits[i][0]));
		spit(dir, t, strlen(t));
		refused(dir);
	}
	char flip[CKPT_REF_MAX + 64];
	memcpy(flip, good, n + 1);
	char *mac = strstr(flip, "mac ") + 4;
	*mac = *mac == '0' ? '1' : '0'; /* one hex digit of the MAC */
	spit(dir, flip, n);
	refused(dir);
	spit(dir, good, n - 1); /* cut */
	refused(dir);
	char more[CKPT_REF_MAX + 64];
	snprintf(more, sizeof(more), "%sx\n", good); /* followed by more */
	spit(dir, more, strlen(more));
	refused(dir);
	spit(dir, good, n); /* as written: taken, then not under another key */
	char loc[CKPT_REF_LOC_MAX], prof[CKPT_REF_PROF_MAX];
	assert_int_equal(ckpt_ref_read(dir, loc, prof, &err), 0);
	put_key('o');
	refused(dir);
	put_key('k');
}

static void test_refused_at_write(void **state)
{
	(void) state;
	char sub[96];
	snprintf(sub, sizeof(sub), "%s/never", dir);
	struct urs_err err = {{0}};
	const char *bad_locs[] = {"/var/tmp/x",	  "s3://", "s3://b/with space",
				  "s3://b/nl\nx", "",	   "S3://b/x"};
	for (size_t i = 0; i < sizeof(bad_locs) / sizeof(bad_locs[0]); i++)
		assert_int_equal(ckpt_ref_write(sub, bad_locs[i], NULL, &err), -EINVAL);
	const char *bad_profs[] = {"", "-", "a b", "x\ny", "../p"};
	for (size_t i = 0; i < sizeof(bad_profs) / sizeof(bad_profs[0]); i++)
		assert_int_equal(ckpt_ref_write(sub, "s3://b/x", bad_profs[i], &err), -EINVAL);
	assert_int_equal(access(sub, F_OK), -1); /* nothing made */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),	 cmocka_unit_test(test_tampered),
		cmocka_unit_test(test_not_a_file),	 cmocka_unit_test(test_aside),
		cmocka_unit_test(test_refused_at_write),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
