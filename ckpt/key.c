/*
 * ckpt/key.c — the host's checkpoint key (ckpt/key.h).
 */
#include "ckpt/key.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/fs.h"
#include "runtime/common.h"
#include "runtime/io.h"

int ckpt_key_path(char *path, size_t len)
{
	const char *env = getenv("URSA_CKPT_KEY");
	int n = snprintf(path, len, "%s", env && *env ? env : CKPT_KEY_PATH);
	return n < 0 || (size_t) n >= len ? -ENAMETOOLONG : 0;
}

static int key_read(const char *path, uint8_t key[CKPT_KEY_LEN], struct urs_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return urs_err_set(err, -errno, "checkpoint key %s: %s", path, strerror(errno));
	if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 077))
		return urs_err_set(err, -EPERM,
				   "checkpoint key %s: must be a regular file owned by uid %u, "
				   "mode 0600",
				   path, (unsigned) geteuid());
	if (sb.st_size != CKPT_KEY_LEN || read(fd, key, CKPT_KEY_LEN) != (ssize_t) CKPT_KEY_LEN) {
		explicit_bzero(key, CKPT_KEY_LEN); /* no part of a key left behind */
		return urs_err_set(err, -EINVAL, "checkpoint key %s: not %d bytes", path,
				   CKPT_KEY_LEN);
	}
	return 0;
}

int ckpt_key(bool create, uint8_t key[CKPT_KEY_LEN], struct urs_err *err)
{
	char path[4096];
	if (ckpt_key_path(path, sizeof(path)) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "checkpoint key: path too long");
	return ckpt_key_file(path, create, key, err);
}

/* A fresh key at @path, in @dir (made 0700 if missing): whole in a
 * temporary file, then linked (a concurrent creator's link fails with
 * EEXIST and both read the one that won), the link made durable since
 * images are sealed under it at once. */
static int key_make(const char *path, const char *dir)
{
	char tmp[4200];
	int r = urs_mkdir_p(dir, 0700);
	if (r < 0)
		return r;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int) getpid());
	uint8_t fresh[CKPT_KEY_LEN];
	if (getrandom(fresh, sizeof(fresh), 0) != (ssize_t) sizeof(fresh))
		return -EIO;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = urs_write_all(fd, fresh, sizeof(fresh)); /* ENOSPC says so */
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	explicit_bzero(fresh, sizeof(fresh));
	close(fd);
	if (r == 0 && link(tmp, path) < 0 && errno != EEXIST)
		r = -errno;
	unlink(tmp);
	_cleanup_close_ int dfd = r ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r == 0 && (dfd < 0 || fsync(dfd) < 0))
		r = -errno;
	return r;
}

int ckpt_key_file(const char *path, bool create, uint8_t key[CKPT_KEY_LEN], struct urs_err *err)
{
	int r = key_read(path, key, err);
	if (r != -ENOENT)
		return r == 0 || err->msg[0]
			       ? r
			       : urs_err_set(err, r, "checkpoint key %s: %s", path, strerror(-r));
	if (!create)
		return urs_err_set(err, -ENOKEY,
				   "no checkpoint key %s on this host: the image cannot be "
				   "verified (made elsewhere?)",
				   path);
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int) (slash - path) + (slash == path) : 1,
		 slash ? path : ".");
	if ((r = key_make(path, dir)) < 0)
		return urs_err_set(err, r, "checkpoint key %s: %s", path, strerror(-r));
	r = key_read(path, key, err);
	if (r < 0 && !err->msg[0])
		urs_err_set(err, r, "checkpoint key %s: %s", path, strerror(-r));
	return r;
}
