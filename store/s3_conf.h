/*
 * store/s3_conf.h — where S3 settings come from, read the way the AWS CLI
 * reads them: the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN, AWS_REGION / AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 /
 * AWS_ENDPOINT_URL, AWS_PROFILE) over an INI file readable by root only
 * (default /etc/ursa/s3.conf: [default] and [profile NAME] sections with
 * aws_access_key_id, aws_secret_access_key, aws_session_token, region,
 * endpoint_url); and s3://BUCKET/PREFIX locations with S3's bucket-name
 * rules. Pure parsing, no I/O beyond reading the one file: the client
 * (store/s3.h) takes the result. Format and precedence: docs/storage.md.
 */
#ifndef URSA_STORE_S3_CONF_H
#define URSA_STORE_S3_CONF_H

#include <stdbool.h>

#include "runtime/err.h"

#define URS_S3_CONF_PATH      "/etc/ursa/s3.conf"
#define URS_S3_DEFAULT_REGION "us-east-1"
#define URS_S3_KEY_MAX	      1024 /* S3's longest object key, bytes */
#define URS_S3_BUCKET_MAX     63

/* how a PutObject's or UploadPart's body is checksummed for the store to
 * verify before it keeps it (docs/storage.md "Checksums") */
enum urs_s3_sum {
	URS_S3_SUM_MD5 = 0, /* Content-MD5: every S3 implementation checks it */
	URS_S3_SUM_CRC32,   /* x-amz-checksum-crc32 (zlib's crc32, ~5x MD5's speed) */
};

struct urs_s3_conf {
	char access_key[129];
	char secret_key[129];
	char session_token[4097]; /* STS tokens run to ~1-2 KiB */
	char region[65];
	char endpoint[513];  /* "scheme://host[:port][/path]" without a trailing '/'; "" = AWS */
	bool path_style;     /* bucket in the path (any custom endpoint), else in the host */
	enum urs_s3_sum sum; /* ursa_checksum / URSA_S3_CHECKSUM; default: crc32 on AWS,
			      * md5 with a custom endpoint (it may not check crc32) */
	char profile[129];   /* the profile that was looked up */
	char source[600]; /* where the credentials came from: "environment" or "FILE [SECTION]" */
};

/**
 * urs_s3_conf_load() - read S3 settings from a config file and the environment
 * @conf: filled on success (zeroed first)
 * @path: the config file; NULL for URS_S3_CONF_PATH. A missing default file
 *        is not an error (the environment may say everything); a missing
 *        file the caller named is.
 * @profile: the section to read; NULL for $AWS_PROFILE, else "default"
 * @env: a NULL-terminated "NAME=VALUE" array to read instead of environ
 *       (NULL: the process environment)
 * @err: why it failed (what, where, why)
 *
 * The file must be a regular file owned by root and not readable, writable
 * or executable by group or others: it holds a secret. The environment
 * overrides the file: credentials as one group (a key id from the
 * environment never pairs with a secret or token from the file), region,
 * endpoint and the uploads' checksum (ursa_checksum, URSA_S3_CHECKSUM: md5
 * or crc32; by default crc32 on AWS, md5 with a custom endpoint) each on
 * their own. A custom endpoint implies path-style addressing.
 *
 * Return: 0; -ENOKEY when no credentials were found; -EACCES for a file
 * with unsafe ownership or mode; -EINVAL for a malformed file, value or
 * endpoint; -ENOENT for a named file that does not exist; other negative
 * errno from open/read.
 */
int urs_s3_conf_load(struct urs_s3_conf *conf, const char *path, const char *profile,
		     char *const *env, struct urs_err *err);

struct urs_s3_url {
	char bucket[URS_S3_BUCKET_MAX + 1];
	char prefix[URS_S3_KEY_MAX + 1]; /* may be "" */
};

/**
 * urs_s3_url_parse() - split an s3://BUCKET[/PREFIX] location
 * @s: the location
 * @out: bucket and key prefix (without the '/' after the bucket)
 * @err: why it was refused
 *
 * Return: 0, or -EINVAL with @err naming the rule broken.
 */
int urs_s3_url_parse(const char *s, struct urs_s3_url *out, struct urs_err *err);

/**
 * urs_s3_bucket_check() - check a bucket name against S3's naming rules
 * @name: the bucket name
 * @err: the rule it breaks
 *
 * 3-63 characters of a-z, 0-9, '.' and '-', starting and ending with a
 * letter or digit, no "..", not an IPv4 address, none of S3's reserved
 * prefixes (xn--, sthree-, amzn-s3-demo-) or suffixes (-s3alias, --ol-s3,
 * .mrap, --x-s3).
 *
 * Return: 0 or -EINVAL.
 */
int urs_s3_bucket_check(const char *name, struct urs_err *err);

#endif
