/*
 * store/s3_conf.c — S3 settings from the environment and a root-only INI
 * file, and s3:// locations (see s3_conf.h). The file is read whole (at most
 * 64 KiB) through one fd that is checked with fstat, so the checks apply to
 * the bytes read, not to whatever the path names a moment later.
 */
#include "store/s3_conf.h"

#include <ctype.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common.h"

#define CONF_FILE_MAX (64u << 10)

extern char **environ;

/* The settings one source (file section or environment) gave. */
struct conf_src {
	const char *key, *secret, *token, *region, *endpoint, *sum;
	size_t key_n, secret_n, token_n, region_n, endpoint_n, sum_n;
};

static const char *env_get(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (char *const *e = env ? env : environ; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* Copy a value of @n bytes into @dst (capacity @cap, NUL included), refusing
 * control characters and values that do not fit. */
static int put(char *dst, size_t cap, const char *v, size_t n, const char *what, const char *where,
	       struct urs_err *err)
{
	if (n >= cap)
		return urs_err_set(err, -EINVAL,
				   "%s: %s is %zu bytes long, at most %zu are accepted", where,
				   what, n, cap - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char) v[i] < 0x20 || v[i] == 0x7f)
			return urs_err_set(err, -EINVAL, "%s: %s contains a control character",
					   where, what);
	memcpy(dst, v, n);
	dst[n] = 0;
	return 0;
}

static int endpoint_check(char *ep, const char *where, struct urs_err *err)
{
	const char *host;
	if (!strncmp(ep, "http://", 7))
		host = ep + 7;
	else if (!strncmp(ep, "https://", 8))
		host = ep + 8;
	else
		return urs_err_set(err, -EINVAL,
				   "%s: endpoint URL \"%s\" must start with http:// or https://",
				   where, ep);
	if (!*host || *host == '/')
		return urs_err_set(err, -EINVAL, "%s: endpoint URL \"%s\" has no host", where, ep);
	for (const char *p = host; *p; p++)
		if (*p == ' ' || *p == '?' || *p == '#')
			return urs_err_set(err, -EINVAL,
					   "%s: endpoint URL \"%s\" may not contain '%c'", where,
					   ep, *p);
	size_t n = strlen(ep);
	while (n && ep[n - 1] == '/')
		ep[--n] = 0;
	return 0;
}

/* Open @path and check it is a root-owned regular file no one else can
 * read; read it whole into @buf (NUL-terminated). *len = 0 and return 0
 * for a missing default file. */
static int file_read(const char *path, bool named, char *buf, size_t *len, struct urs_err *err)
{
	*len = 0;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT && !named)
			return 0;
		return urs_err_set(err, -errno, "S3 config file %s: cannot open: %s", path,
				   strerror(errno));
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return urs_err_set(err, -errno, "S3 config file %s: fstat: %s", path,
				   strerror(errno));
	if (!S_ISREG(st.st_mode))
		return urs_err_set(err, -EACCES, "S3 config file %s: not a regular file", path);
	if (st.st_uid != 0 || (st.st_mode & 077))
		return urs_err_set(
			err, -EACCES,
			"S3 config file %s: refused: owner uid %u, mode %04o; it holds a "
			"secret key, so it must be owned by root and closed to group "
			"and others (chown root %s && chmod 600 %s)",
			path, (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777), path, path);
	if ((uint64_t) st.st_size > CONF_FILE_MAX)
		return urs_err_set(err, -EINVAL, "S3 config file %s: %lld bytes, at most %u", path,
				   (long long) st.st_size, CONF_FILE_MAX);
	size_t got = 0;
	for (;;) {
		ssize_t r = read(fd, buf + got, CONF_FILE_MAX - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return urs_err_set(err, -errno, "S3 config file %s: read: %s", path,
					   strerror(errno));
		if (r == 0)
			break;
		got += (size_t) r;
		if (got == CONF_FILE_MAX)
			return urs_err_set(err, -EINVAL, "S3 config file %s: larger than %u bytes",
					   path, CONF_FILE_MAX);
	}
	buf[got] = 0;
	*len = got;
	return 0;
}

static void trim(const char **s, const char **e)
{
	while (*s < *e && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
		(*e)--;
}

/* Whether the section header text [s, e) (between the brackets) names
 * @profile: "default", "profile NAME", or a bare "NAME" (the credentials
 * file's spelling). */
static bool section_is(const char *s, const char *e, const char *profile)
{
	size_t n = (size_t) (e - s);
	if (n > 8 && !strncmp(s, "profile", 7) && (s[7] == ' ' || s[7] == '\t')) {
		s += 8;
		trim(&s, &e);
		n = (size_t) (e - s);
	}
	return n == strlen(profile) && !strncmp(s, profile, n);
}

static void set_key(struct conf_src *src, const char *k, size_t kn, const char *v, size_t vn)
{
#define KEY(name, field)                                       \
	if (kn == sizeof(name) - 1 && !strncmp(k, name, kn)) { \
		src->field = v;                                \
		src->field##_n = vn;                           \
		return;                                        \
	}
	KEY("aws_access_key_id", key);
	KEY("aws_secret_access_key", secret);
	KEY("aws_session_token", token);
	KEY("region", region);
	KEY("endpoint_url", endpoint);
	KEY("ursa_checksum", sum);
#undef KEY
	/* any other key (output, s3 = ..., etc.) is the AWS CLI's, not ours */
}

/* Parse the INI text @buf: the keys of section @profile into @src (values
 * point into @buf). Refuses lines that are neither comment, section, key =
 * value nor an indented sub-key (AWS's nested "s3 =" blocks). */
static int ini_parse(const char *buf, const char *path, const char *profile, struct conf_src *src,
		     bool *found, struct urs_err *err)
{
	bool in = false;
	unsigned lineno = 0;
	for (const char *l = buf; *l;) {
		const char *nl = strchr(l, '\n');
		const char *e = nl ? nl : l + strlen(l), *s = l;
		l = nl ? nl + 1 : e;
		lineno++;
		bool indented = s < e && (*s == ' ' || *s == '\t');
		trim(&s, &e);
		if (s == e || *s == '#' || *s == ';' || indented)
			continue;
		if (*s == '[') {
			if (e[-1] != ']' || e - s < 3)
				return urs_err_set(err, -EINVAL,
						   "S3 config file %s:%u: malformed section header",
						   path, lineno);
			const char *ns = s + 1, *ne = e - 1;
			trim(&ns, &ne);
			in = section_is(ns, ne, profile);
			*found = *found || in;
			continue;
		}
		const char *eq = memchr(s, '=', (size_t) (e - s));
		if (!eq)
			return urs_err_set(err, -EINVAL,
					   "S3 config file %s:%u: expected \"key = value\"", path,
					   lineno);
		if (!in)
			continue;
		const char *ks = s, *ke = eq, *vs = eq + 1, *ve = e;
		trim(&ks, &ke);
		trim(&vs, &ve);
		set_key(src, ks, (size_t) (ke - ks), vs, (size_t) (ve - vs));
	}
	return 0;
}

static void env_src(char *const *env, struct conf_src *src)
{
#define ENV(field, name)                       \
	if ((src->field = env_get(env, name))) \
		src->field##_n = strlen(src->field);
	ENV(key, "AWS_ACCESS_KEY_ID");
	ENV(secret, "AWS_SECRET_ACCESS_KEY");
	ENV(token, "AWS_SESSION_TOKEN");
	ENV(region, "AWS_REGION");
	if (!src->region || !*src->region)
		ENV(region, "AWS_DEFAULT_REGION");
	ENV(endpoint, "AWS_ENDPOINT_URL_S3");
	if (!src->endpoint || !*src->endpoint)
		ENV(endpoint, "AWS_ENDPOINT_URL");
	ENV(sum, "URSA_S3_CHECKSUM");
#undef ENV
}

static bool given(const char *v)
{
	return v && *v;
}

/* Credentials as one group: the environment's if it has a key id, else the file's. */
static int pick_creds(struct urs_s3_conf *c, const struct conf_src *fe, const struct conf_src *ff,
		      const char *path, struct urs_err *err)
{
	const struct conf_src *s = NULL;
	const char *where = "environment";
	if (given(fe->key) || given(fe->secret)) {
		if (!given(fe->key) || !given(fe->secret))
			return urs_err_set(
				err, -EINVAL,
				"S3 credentials: %s is set in the environment but %s "
				"is not; set both (or neither, to use %s)",
				given(fe->key) ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
				given(fe->key) ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID",
				path);
		s = fe;
		snprintf(c->source, sizeof(c->source), "environment");
	} else if (given(ff->key) || given(ff->secret)) {
		if (!given(ff->key) || !given(ff->secret))
			return urs_err_set(
				err, -EINVAL, "S3 config file %s [%s]: %s is set but %s is not",
				path, c->profile,
				given(ff->key) ? "aws_access_key_id" : "aws_secret_access_key",
				given(ff->key) ? "aws_secret_access_key" : "aws_access_key_id");
		s = ff;
		where = path;
		snprintf(c->source, sizeof(c->source), "%s [%s]", path, c->profile);
	} else {
		return urs_err_set(err, -ENOKEY,
				   "no S3 credentials: set AWS_ACCESS_KEY_ID and "
				   "AWS_SECRET_ACCESS_KEY, or aws_access_key_id and "
				   "aws_secret_access_key in the [%s%s] section of %s",
				   strcmp(c->profile, "default") ? "profile " : "", c->profile,
				   path);
	}
	int r;
	if ((r = put(c->access_key, sizeof(c->access_key), s->key, s->key_n, "the access key id",
		     where, err)) < 0 ||
	    (r = put(c->secret_key, sizeof(c->secret_key), s->secret, s->secret_n,
		     "the secret access key", where, err)) < 0)
		return r;
	if (given(s->token) && (r = put(c->session_token, sizeof(c->session_token), s->token,
					s->token_n, "the session token", where, err)) < 0)
		return r;
	return 0;
}

/* the body checksum: the environment's, the file's, else by endpoint (AWS
 * checks crc32; a custom endpoint may be a store that ignores it) */
static int pick_sum(struct urs_s3_conf *c, const struct conf_src *fe, const struct conf_src *ff,
		    const char *path, struct urs_err *err)
{
	const char *v = given(fe->sum) ? fe->sum : ff->sum;
	size_t n = given(fe->sum) ? fe->sum_n : ff->sum_n;
	if (!given(v))
		c->sum = c->endpoint[0] ? URS_S3_SUM_MD5 : URS_S3_SUM_CRC32;
	else if (n == 3 && !strncasecmp(v, "md5", 3))
		c->sum = URS_S3_SUM_MD5;
	else if (n == 5 && !strncasecmp(v, "crc32", 5))
		c->sum = URS_S3_SUM_CRC32;
	else
		return urs_err_set(err, -EINVAL, "%s%s%s%.*s: the checksum is md5 or crc32",
				   given(fe->sum) ? "" : "S3 config file ",
				   given(fe->sum) ? "" : path,
				   given(fe->sum) ? "URSA_S3_CHECKSUM=" : ": ursa_checksum = ",
				   (int) (n < 40 ? n : 40), v);
	return 0;
}

int urs_s3_conf_load(struct urs_s3_conf *c, const char *path, const char *profile, char *const *env,
		     struct urs_err *err)
{
	memset(c, 0, sizeof(*c));
	bool named = path != NULL;
	path = path ? path : URS_S3_CONF_PATH;
	if (!profile)
		profile = given(env_get(env, "AWS_PROFILE")) ? env_get(env, "AWS_PROFILE")
							     : "default";
	int r = put(c->profile, sizeof(c->profile), profile, strlen(profile), "the profile name",
		    "S3 config", err);
	if (r < 0)
		return r;

	_cleanup_free_ char *buf = malloc(CONF_FILE_MAX + 1);
	if (!buf)
		return urs_err_set(err, -ENOMEM, "S3 config: out of memory");
	size_t len;
	if ((r = file_read(path, named, buf, &len, err)) < 0)
		return r;
	buf[len] = 0;
	struct conf_src ff = {0}, fe = {0};
	bool found = false;
	if ((r = ini_parse(buf, path, profile, &ff, &found, err)) < 0)
		return r;
	if (len && !found && strcmp(profile, "default"))
		return urs_err_set(err, -EINVAL, "S3 config file %s: no [profile %s] section", path,
				   profile);
	env_src(env, &fe);
	if ((r = pick_creds(c, &fe, &ff, path, err)) < 0)
		return r;

	const char *v = given(fe.region) ? fe.region : ff.region;
	size_t vn = given(fe.region) ? fe.region_n : ff.region_n;
	if (!given(v))
		v = URS_S3_DEFAULT_REGION, vn = strlen(v);
	if ((r = put(c->region, sizeof(c->region), v, vn, "the region",
		     given(fe.region) ? "environment" : path, err)) < 0)
		return r;
	const char *where = given(fe.endpoint) ? "environment" : path;
	v = given(fe.endpoint) ? fe.endpoint : ff.endpoint;
	vn = given(fe.endpoint) ? fe.endpoint_n : ff.endpoint_n;
	if (given(v)) {
		if ((r = put(c->endpoint, sizeof(c->endpoint), v, vn, "the endpoint URL", where,
			     err)) < 0 ||
		    (r = endpoint_check(c->endpoint, where, err)) < 0)
			return r;
		c->path_style = true;
	}
	return pick_sum(c, &fe, &ff, path, err);
}

static bool all_digits(const char *s, size_t n)
{
	if (!n || n > 3)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char) s[i]))
			return false;
	return true;
}

/* a.b.c.d, each 1-3 digits: S3 refuses names formatted as an IP address */
static bool looks_ipv4(const char *name)
{
	const char *s = name;
	for (int i = 0; i < 4; i++) {
		const char *dot = strchr(s, '.');
		size_t n = dot ? (size_t) (dot - s) : strlen(s);
		if (!all_digits(s, n) || (i < 3) != (dot != NULL))
			return false;
		s = dot ? dot + 1 : s + n;
	}
	return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

int urs_s3_bucket_check(const char *b, struct urs_err *err)
{
	size_t n = strlen(b);
	if (n < 3 || n > URS_S3_BUCKET_MAX)
		return urs_err_set(err, -EINVAL,
				   "S3 bucket name \"%.80s\": %zu characters, must be 3 to 63", b,
				   n);
	for (size_t i = 0; i < n; i++) {
		char ch = b[i];
		if (!(islower((unsigned char) ch) || isdigit((unsigned char) ch) || ch == '.' ||
		      ch == '-') ||
		    (ch & 0x80))
			return urs_err_set(err, -EINVAL,
					   "S3 bucket name \"%s\": character %zu is not one of "
					   "a-z 0-9 . -",
					   b, i + 1);
	}
	if (!isalnum((unsigned char) b[0]) || !isalnum((unsigned char) b[n - 1]))
		return urs_err_set(
			err, -EINVAL,
			"S3 bucket name \"%s\": must begin and end with a letter or digit", b);
	if (strstr(b, ".."))
		return urs_err_set(err, -EINVAL,
				   "S3 bucket name \"%s\": two adjacent periods are not allowed",
				   b);
	if (looks_ipv4(b))
		return urs_err_set(err, -EINVAL,
				   "S3 bucket name \"%s\": may not be formatted as an IP address",
				   b);
	static const char *const pre[] = {"xn--", "sthree-", "amzn-s3-demo-"};
	static const char *const suf[] = {"-s3alias", "--ol-s3", ".mrap", "--x-s3"};
	for (size_t i = 0; i < URS_ARRAY_SIZE(pre); i++)
		if (!strncmp(b, pre[i], strlen(pre[i])))
			return urs_err_set(err, -EINVAL,
					   "S3 bucket name \"%s\": the prefix \"%s\" is reserved",
					   b, pre[i]);
	for (size_t i = 0; i < URS_ARRAY_SIZE(suf); i++)
		if (ends_with(b, n, suf[i]))
			return urs_err_set(err, -EINVAL,
					   "S3 bucket name \"%s\": the suffix \"%s\" is reserved",
					   b, suf[i]);
	return 0;
}

int urs_s3_url_parse(const char *s, struct urs_s3_url *out, struct urs_err *err)
{
	memset(out, 0, sizeof(*out));
	if (strncmp(s, "s3://", 5))
		return urs_err_set(err, -EINVAL,
				   "\"%.200s\" is not an S3 location (s3://BUCKET/PREFIX)", s);
	const char *b = s + 5, *slash = strchr(b, '/');
	size_t bn = slash ? (size_t) (slash - b) : strlen(b);
	if (!bn)
		return urs_err_set(err, -EINVAL, "S3 location \"%.200s\" names no bucket", s);
	if (bn > URS_S3_BUCKET_MAX)
		return urs_err_set(err, -EINVAL,
				   "S3 location \"%.200s\": bucket name of %zu characters, must be "
				   "3 to 63",
				   s, bn);
	memcpy(out->bucket, b, bn);
	int r = urs_s3_bucket_check(out->bucket, err);
	if (r < 0)
		return r;
	const char *p = slash ? slash + 1 : "";
	size_t pn = strlen(p);
	if (pn > URS_S3_KEY_MAX)
		return urs_err_set(
			err, -EINVAL,
			"S3 location \"%.200s...\": key prefix of %zu bytes, S3 keys are "
			"at most %d",
			s, pn, URS_S3_KEY_MAX);
	return put(out->prefix, sizeof(out->prefix), p, pn, "the key prefix", "S3 location", err);
}
