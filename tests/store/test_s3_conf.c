/*
 * tests/store/test_s3_conf.c — store/s3_conf.c: settings from an
 * environment array and from config files written here (mode, owner and
 * contents set per case): [default] and [profile NAME] sections, the
 * environment over the file (credentials as a group), AWS_REGION over
 * AWS_DEFAULT_REGION, a custom endpoint implying path-style addressing,
 * refusal of group/other-readable or non-root files with a message naming
 * the file and why, malformed files; s3:// locations and S3's bucket rules.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/s3_conf.h"
#include "tests/lib/skip.h"

static char dir[] = "/tmp/ursa-s3conf.XXXXXX";
static char path[256];

static void write_conf(const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static int need_root(void **state)
{
	(void) state;
	if (geteuid() != 0)
		URS_CM_SKIP("config files must be owned by root: run as root");
	return 0;
}

static const char file[] = "# ursa S3 settings\n"
			   "[default]\n"
			   "aws_access_key_id = AKIDDEFAULT\n"
			   "aws_secret_access_key = secretdefault\n"
			   "region = eu-west-1\n"
			   "\n"
			   "[profile backup]\n"
			   "aws_access_key_id=AKIDBACKUP\n"
			   "aws_secret_access_key=secret/backup+x\n"
			   "aws_session_token = tok\n"
			   "endpoint_url = http://127.0.0.1:9000/\n"
			   "output = json\n"
			   "s3 =\n"
			   "    addressing_style = path\n"
			   "[bare]\n"
			   "aws_access_key_id = AKIDBARE\n"
			   "aws_secret_access_key = secretbare\n";

static void test_file_default(void **state)
{
	need_root(state);
	write_conf(file, 0600);
	struct urs_s3_conf c;
	struct urs_err err = {{0}};
	char *env[] = {NULL};
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), 0);
	assert_string_equal(c.access_key, "AKIDDEFAULT");
	assert_string_equal(c.secret_key, "secretdefault");
	assert_string_equal(c.session_token, "");
	assert_string_equal(c.region, "eu-west-1");
	assert_string_equal(c.endpoint, "");
	assert_false(c.path_style);
	assert_string_equal(c.profile, "default");
	assert_non_null(strstr(c.source, "[default]"));
}

static void test_file_profile(void **state)
{
	need_root(state);
	write_conf(file, 0400);
	struct urs_s3_conf c;
	struct urs_err err = {{0}};
	char *env[] = {"AWS_PROFILE=backup", NULL};
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), 0);
	assert_string_equal(c.access_key, "AKIDBACKUP");
	assert_string_equal(c.secret_key, "secret/backup+x");
	assert_string_equal(c.session_token, "tok");
	assert_string_equal(c.region, "us-east-1"); /* none in the section */
	assert_string_equal(c.endpoint, "http://127.0.0.1:9000");
	assert_true(c.path_style);
	/* the credentials file's spelling, and the caller's profile over $AWS_PROFILE */
	assert_int_equal(urs_s3_conf_load(&c, path, "bare", env, &err), 0);
	assert_string_equal(c.access_key, "AKIDBARE");
	assert_int_equal(urs_s3_conf_load(&c, path, "nosuch", env, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no [profile nosuch] section"));
}

static void test_env_over_file(void **state)
{
	need_root(state);
	write_conf(file, 0600);
	struct urs_s3_conf c;
	struct urs_err err = {{0}};
	char *env[] = {"AWS_ACCESS_KEY_ID=AKIDENV",
		       "AWS_SECRET_ACCESS_KEY=secretenv",
		       "AWS_DEFAULT_REGION=ap-south-1",
		       "AWS_REGION=us-west-2",
		       "AWS_ENDPOINT_URL=https://minio.example:9000",
		       NULL};
	/* profile backup has a session token: it must not pair with the env key */
	assert_int_equal(urs_s3_conf_load(&c, path, "backup", env, &err), 0);
	assert_string_equal(c.access_key, "AKIDENV");
	assert_string_equal(c.secret_key, "secretenv");
	assert_string_equal(c.session_token, "");
	assert_string_equal(c.region, "us-west-2");
	assert_string_equal(c.endpoint, "https://minio.example:9000");
	assert_true(c.path_style);
	assert_string_equal(c.source, "environment");
	char *env2[] = {"AWS_DEFAULT_REGION=ap-south-1", "AWS_ENDPOINT_URL=http://a:1",
			"AWS_ENDPOINT_URL_S3=http://s3only:2", NULL};
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env2, &err), 0);
	assert_string_equal(c.access_key, "AKIDDEFAULT"); /* the file's */
	assert_string_equal(c.region, "ap-south-1");
	assert_string_equal(c.endpoint, "http://s3only:2");
}

static void test_env_only(void **state)
{
	(void) state;
	struct urs_s3_conf c;
	struct urs_err err = {{0}};
	char *env[] = {"AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=sec",
		       "AWS_SESSION_TOKEN=tok", NULL};
	/* the default file missing is fine: the environment says everything */
	char missing[300];
	snprintf(missing, sizeof(missing), "%s/none.conf", dir);
	assert_int_equal(urs_s3_conf_load(&c, NULL, NULL, env, &err) == 0 ||
				 strstr(err.msg, URS_S3_CONF_PATH) != NULL,
			 1);
	/* a file the caller names must exist */
	assert_int_equal(urs_s3_conf_load(&c, missing, NULL, env, &err), -ENOENT);
	assert_non_null(strstr(err.msg, missing));
	char *half[] = {"AWS_ACCESS_KEY_ID=AKID", NULL};
	assert_int_equal(urs_s3_conf_load(&c, missing, NULL, half, &err), -ENOENT);
}

static void test_no_creds(void **state)
{
	need_root(state);
	write_conf("[default]\nregion = us-east-2\n", 0600);
	struct urs_s3_conf c;
	struct urs_err err = {{0}};
	char *env[] = {NULL};
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), -ENOKEY);
	assert_non_null(strstr(err.msg, "no S3 credentials"));
	assert_non_null(strstr(err.msg, path));
	char *half[] = {"AWS_ACCESS_KEY_ID=AKID", NULL};
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, half, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "AWS_SECRET_ACCESS_KEY"));
	write_conf("[default]\naws_access_key_id = A\n", 0600);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "aws_secret_access_key"));
}

static void test_permissions(void **state)
{
	need_root(state);
	struct urs_s3_conf c;
	struct urs_err err = {{0}};
	char *env[] = {"AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=sec", NULL};
	static const mode_t bad[] = {0644, 0640, 0604, 0660, 0602, 0610};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_conf(file, bad[i]);
		assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), -EACCES);
		char m[16];
		snprintf(m, sizeof(m), "mode %04o", (unsigned) bad[i]);
		assert_non_null(strstr(err.msg, path));
		assert_non_null(strstr(err.msg, m));
		assert_non_null(strstr(err.msg, "owned by root"));
	}
	write_conf(file, 0600);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), -EACCES);
	assert_non_null(strstr(err.msg, "owner uid 65534"));
	assert_int_equal(chown(path, 0, 0), 0);
	assert_int_equal(urs_s3_conf_load(&c, dir, NULL, env, &err), -EACCES);
	assert_non_null(strstr(err.msg, "not a regular file"));
}

static void test_malformed(void **state)
{
	need_root(state);
	struct urs_s3_conf c;
	struct urs_err err = {{0}};
	char *env[] = {NULL};
	write_conf("[default\naws_access_key_id = A\n", 0600);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), -EINVAL);
	assert_non_null(strstr(err.msg, ":1: malformed section"));
	write_conf("[default]\njust words\n", 0600);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), -EINVAL);
	assert_non_null(strstr(err.msg, ":2: expected"));
	write_conf("[default]\naws_access_key_id=A\naws_secret_access_key=B\n"
		   "endpoint_url = ftp://x\n",
		   0600);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "http:// or https://"));
	char big[600];
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	char text[800];
	snprintf(text, sizeof(text), "[default]\naws_access_key_id=%s\naws_secret_access_key=B\n",
		 big);
	write_conf(text, 0600);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, env, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "access key id is 599 bytes long"));
}

/* the uploads' checksum: crc32 on AWS, md5 with a custom endpoint (which
 * may not check crc32), else as the file's ursa_checksum or the
 * environment's URSA_S3_CHECKSUM says; anything else is refused, named */
static void test_checksum(void **state)
{
	need_root(state);
	struct urs_s3_conf c;
	struct urs_err err = {{0}};
	char *none[] = {NULL}, *ep[] = {"AWS_ENDPOINT_URL=http://127.0.0.1:9000", NULL},
	     *md5[] = {"URSA_S3_CHECKSUM=md5", NULL}, *crc[] = {"URSA_S3_CHECKSUM=CRC32", NULL},
	     *bad[] = {"URSA_S3_CHECKSUM=sha1", NULL};
	write_conf(file, 0600);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, none, &err), 0);
	assert_int_equal(c.sum, URS_S3_SUM_CRC32);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, ep, &err), 0);
	assert_int_equal(c.sum, URS_S3_SUM_MD5);
	assert_int_equal(urs_s3_conf_load(&c, path, "backup", none, &err), 0);
	assert_int_equal(c.sum, URS_S3_SUM_MD5);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, md5, &err), 0);
	assert_int_equal(c.sum, URS_S3_SUM_MD5);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, bad, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "URSA_S3_CHECKSUM=sha1"));
	write_conf("[default]\naws_access_key_id = A\naws_secret_access_key = B\n"
		   "endpoint_url = http://127.0.0.1:9000\nursa_checksum = crc32\n",
		   0600);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, none, &err), 0);
	assert_int_equal(c.sum, URS_S3_SUM_CRC32);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, md5, &err), 0);
	assert_int_equal(c.sum, URS_S3_SUM_MD5); /* the environment over the file */
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, crc, &err), 0);
	assert_int_equal(c.sum, URS_S3_SUM_CRC32);
	write_conf("[default]\naws_access_key_id = A\naws_secret_access_key = B\n"
		   "ursa_checksum = crc64\n",
		   0600);
	assert_int_equal(urs_s3_conf_load(&c, path, NULL, none, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ursa_checksum = crc64: the checksum is md5 or crc32"));
	assert_non_null(strstr(err.msg, path));
}

static void test_url(void **state)
{
	(void) state;
	struct urs_s3_url u;
	struct urs_err err = {{0}};
	assert_int_equal(urs_s3_url_parse("s3://my-bucket.1/ckpt/node-a/", &u, &err), 0);
	assert_string_equal(u.bucket, "my-bucket.1");
	assert_string_equal(u.prefix, "ckpt/node-a/");
	assert_int_equal(urs_s3_url_parse("s3://abc", &u, &err), 0);
	assert_string_equal(u.prefix, "");
	assert_int_equal(urs_s3_url_parse("s3://abc/", &u, &err), 0);
	assert_string_equal(u.prefix, "");
	static const struct {
		const char *url, *why;
	} bad[] = {
		{"http://abc/x", "not an S3 location"},
		{"s3:///x", "names no bucket"},
		{"s3://ab/x", "must be 3 to 63"},
		{"s3://Abc/x", "not one of a-z 0-9"},
		{"s3://a_b/x", "not one of a-z 0-9"},
		{"s3://-abc/x", "begin and end with a letter or digit"},
		{"s3://abc-/x", "begin and end with a letter or digit"},
		{"s3://a..b/x", "two adjacent periods"},
		{"s3://192.168.5.4/x", "IP address"},
		{"s3://xn--abc/x", "prefix \"xn--\" is reserved"},
		{"s3://sthree-abc", "prefix \"sthree-\" is reserved"},
		{"s3://abc-s3alias", "suffix \"-s3alias\" is reserved"},
		{"s3://abc--ol-s3", "suffix \"--ol-s3\" is reserved"},
		{"s3://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x",
		 "3 to 63"},
		{"s3://abc/a\nb", "control character"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = 0;
		assert_int_equal(urs_s3_url_parse(bad[i].url, &u, &err), -EINVAL);
		if (!strstr(err.msg, bad[i].why))
			fail_msg("%s: got \"%s\", wanted \"%s\"", bad[i].url, err.msg, bad[i].why);
	}
	char longp[1100] = "s3://abc/";
	memset(longp + 9, 'p', 1025);
	assert_int_equal(urs_s3_url_parse(longp, &u, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "at most 1024"));
	assert_int_equal(urs_s3_bucket_check("1.2.3.4a", &err), 0); /* not an address */
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/s3.conf", dir);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_default),  cmocka_unit_test(test_file_profile),
		cmocka_unit_test(test_env_over_file), cmocka_unit_test(test_env_only),
		cmocka_unit_test(test_no_creds),      cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_malformed),     cmocka_unit_test(test_url),
		cmocka_unit_test(test_checksum),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	rmdir(dir);
	return r;
}
