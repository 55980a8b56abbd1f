/*
 * ckpt/remote_ref.c — a local directory's reference to an image parked in
 * object storage (see remote_ref.h): written with its MAC before the image
 * is made, read and checked before anything is fetched.
 */
#include "ckpt/remote_ref.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/key.h"
#include "ckpt/seal.h"
#include "host/fs.h"
#include "runtime/common.h"
#include "runtime/io.h"

#define LABEL "ursa remote ref v1"
#define MAGIC "ursa remote image v1\n"

/* a location: s3:// then printable bytes, no blank */
static bool location_ok(const char *s)
{
	if (strncmp(s, "s3://", 5) || strlen(s) >= CKPT_REF_LOC_MAX || !s[5])
		return false;
	for (const char *p = s; *p; p++)
		if (*p <= ' ' || *p > '~')
			return false;
	return true;
}

/* a profile's name: a letter or digit, then letters, digits, '.', '_', '-' */
static bool profile_ok(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n < CKPT_REF_PROF_MAX && isalnum((unsigned char) s[0]) &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz"
			 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

long ckpt_ref_encode(const struct ckpt_seal *s, const char *location, const char *profile,
		     char *buf, size_t len, struct urs_err *err)
{
	if (!location_ok(location))
		return urs_err_set(err, -EINVAL, "%.200s: not an s3://BUCKET/PREFIX location",
				   location);
	if (profile && !profile_ok(profile))
		return urs_err_set(err, -EINVAL, "%.200s: not a profile's name", profile);
	int n = snprintf(buf, len, MAGIC "location %s\nprofile %s\n", location,
			 profile ? profile : "-");
	if (n < 0 || (size_t) n + 6 + 2 * CKPT_MAC_LEN > len)
		return urs_err_set(err, -ENOSPC, "a reference: no room");
	uint8_t mac[CKPT_MAC_LEN];
	ckpt_seal_labelled(s, LABEL, buf, (size_t) n, mac);
	memcpy(buf + n, "mac ", 4);
	hex(mac, sizeof(mac), buf + n + 4);
	n += 4 + 2 * CKPT_MAC_LEN;
	buf[n++] = '\n';
	buf[n] = 0;
	return n;
}

/* DIR/NAME, or -ENAMETOOLONG */
static int ref_path(char *out, size_t len, const char *dir, const char *name)
{
	return snprintf(out, len, "%s/%s", dir, name) < (int) len ? 0 : -ENAMETOOLONG;
}

int ckpt_ref_write(const char *dir, const char *location, const char *profile, struct urs_err *err)
{
	struct ckpt_seal s;
	int r = ckpt_key(true, s.key, err);
	if (r < 0)
		return r;
	char buf[CKPT_REF_MAX];
	long n = ckpt_ref_encode(&s, location, profile, buf, sizeof(buf), err);
	memset(&s, 0, sizeof(s));
	if (n < 0)
		return (int) n;
	if ((r = urs_mkdir_p(dir, 0700)) < 0)
		return urs_err_set(err, r, "image directory %s: %s", dir, strerror(-r));
	char path[4096], tmp[4096];
	if (ref_path(path, sizeof(path), dir, CKPT_REF_NEW) < 0 ||
	    ref_path(tmp, sizeof(tmp), dir, "." CKPT_REF_NEW ".tmp") < 0)
		return urs_err_set(err, -ENAMETOOLONG, "image directory %.200s: name too long",
				   dir);
	if ((r = urs_write_file_atomic(path, tmp, buf, (size_t) n, 0600)) < 0)
		return urs_err_set(err, r, "%s: %s", path, strerror(-r));
	return 0;
}

int ckpt_ref_commit(const char *dir, struct urs_err *err)
{
	char from[4096], to[4096];
	if (ref_path(from, sizeof(from), dir, CKPT_REF_NEW) < 0 ||
	    ref_path(to, sizeof(to), dir, CKPT_REF_FILE) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "image directory %.200s: name too long",
				   dir);
	if (rename(from, to) < 0)
		return urs_err_set(err, -errno, "%s: %m", to);
	return 0;
}

/* "KEY VALUE\n" at *@p (before @end) into @out (@len bytes): the line consumed */
static bool field(const char **p, const char *end, const char *key, char *out, size_t len)
{
	size_t k = strlen(key);
	const char *nl = memchr(*p, '\n', (size_t) (end - *p));
	if (!nl || (size_t) (nl - *p) <= k || memcmp(*p, key, k) || (*p)[k] != ' ' ||
	    (size_t) (nl - *p) - k - 1 >= len)
		return false;
	size_t n = (size_t) (nl - *p) - k - 1;
	memcpy(out, *p + k + 1, n);
	out[n] = 0;
	*p = nl + 1;
	return strlen(out) == n; /* no NUL inside */
}

int ckpt_ref_decode(const struct ckpt_seal *s, const char *buf, size_t n,
		    char location[CKPT_REF_LOC_MAX], char profile[CKPT_REF_PROF_MAX],
		    struct urs_err *err)
{
	const char *p = buf, *end = buf + n, *body_end;
	char mac_hex[2 * CKPT_MAC_LEN + 2];
	bool ok = n > strlen(MAGIC) && !memcmp(buf, MAGIC, strlen(MAGIC));
	if (ok) {
		p += strlen(MAGIC);
		ok = field(&p, end, "location", location, CKPT_REF_LOC_MAX) &&
		     field(&p, end, "profile", profile, CKPT_REF_PROF_MAX);
	}
	body_end = p;
	if (!ok || !field(&p, end, "mac", mac_hex, sizeof(mac_hex)) || p != end ||
	    strlen(mac_hex) != 2 * CKPT_MAC_LEN || !location_ok(location) ||
	    (strcmp(profile, "-") && !profile_ok(profile)))
		return urs_err_set(err, -EBADMSG, "not a reference to a remote image");
	uint8_t mac[CKPT_MAC_LEN], got[CKPT_MAC_LEN];
	ckpt_seal_labelled(s, LABEL, buf, (size_t) (body_end - buf), mac);
	bool hexed = strspn(mac_hex, "0123456789abcdef") == 2 * CKPT_MAC_LEN;
	for (unsigned i = 0; hexed && i < CKPT_MAC_LEN; i++)
		hexed = sscanf(mac_hex + 2 * i, "%2hhx", &got[i]) == 1;
	if (!hexed || !urs_mac_equal(mac, got, CKPT_MAC_LEN))
		return urs_err_set(err, -EBADMSG,
				   "its MAC is not this host's checkpoint key's (altered, or made "
				   "with another key)");
	if (!strcmp(profile, "-"))
		profile[0] = 0;
	return 0;
}

/* @path's bytes into @buf (@len), a regular file not reached through a
 * symlink (the directory is a client's: a FIFO there must not hang us);
 * -EFBIG (and nothing) for one longer than @len - 1 */
static ssize_t read_ref(const char *path, char *buf, size_t len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	ssize_t n = read(fd, buf, len);
	if (n < 0)
		return -errno;
	return (size_t) n >= len ? -EFBIG : n;
}

int ckpt_ref_read(const char *dir, char location[CKPT_REF_LOC_MAX], char profile[CKPT_REF_PROF_MAX],
		  struct urs_err *err)
{
	char path[4096], buf[CKPT_REF_MAX + 1];
	if (ref_path(path, sizeof(path), dir, CKPT_REF_FILE) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "image directory %.200s: name too long",
				   dir);
	ssize_t n = read_ref(path, buf, sizeof(buf));
	if (n == -ENOENT)
		return -ENOENT;
	if (n < 0 && n != -EFBIG)
		return urs_err_set(err, (int) n, "%s: %s", path, strerror((int) -n));
	struct ckpt_seal s;
	int r = ckpt_key(false, s.key, err);
	if (r < 0)
		return r;
	r = ckpt_ref_decode(&s, buf, n < 0 ? 0 : (size_t) n, location, profile, err);
	memset(&s, 0, sizeof(s));
	if (r < 0) {
		char why[sizeof(err->msg)];
		snprintf(why, sizeof(why), "%s", err->msg);
		urs_err_set(err, r, "%s: %s", path, why);
	}
	return r;
}

void ckpt_ref_drop(const char *dir)
{
	char path[4096];
	if (ref_path(path, sizeof(path), dir, CKPT_REF_NEW) == 0)
		unlink(path);
}

int ckpt_ref_aside(const char *dir)
{
	char from[4096], to[4096];
	if (ref_path(from, sizeof(from), dir, CKPT_REF_FILE) < 0 ||
	    ref_path(to, sizeof(to), dir, CKPT_REF_OLD) < 0)
		return -ENAMETOOLONG;
	if (rename(from, to) == 0)
		return 1;
	return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
}

int ckpt_ref_aside_end(const char *dir, bool image_in)
{
	char old[4096], ref[4096];
	if (ref_path(old, sizeof(old), dir, CKPT_REF_OLD) < 0 ||
	    ref_path(ref, sizeof(ref), dir, CKPT_REF_FILE) < 0)
		return -ENAMETOOLONG;
	int r = image_in ? unlink(old) : rename(old, ref);
	return r < 0 ? -errno : 0;
}
