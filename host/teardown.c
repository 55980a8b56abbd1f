/*
 * host/teardown.c — ROOT/.teardown/ID: a killed sandbox's cgroups, taken by
 * its reaper or by the next sandbox of its ID (host/teardown.h says why).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/teardown.h"
#include "runtime/common.h"
#include "runtime/io.h"

/* ROOT/.teardown/ID, or ROOT/.teardown/ID@AS; NULL @id: the directory */
static int name_of(char *buf, size_t len, const char *root, const char *id, const char *as)
{
	int n = snprintf(buf, len, "%s/" URS_TEARDOWN_DIR "%s%s%s%s", root, id ? "/" : "",
			 id ? id : "", as ? "@" : "", as ? as : "");
	return n < 0 || (size_t) n >= len ? -ENAMETOOLONG : 0;
}

int urs_teardown_put(const char *root, const char *id, const char *cgroups, struct urs_err *err)
{
	char dir[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX];
	if (name_of(dir, sizeof(dir), root, NULL, NULL) < 0 ||
	    name_of(tmp, sizeof(tmp), root, id, "new") < 0 ||
	    name_of(path, sizeof(path), root, id, NULL) < 0)
		return urs_err_set(err, -ENAMETOOLONG, "the teardown record of %s: path too long",
				   id);
	/* (another ID's taker removes the directory once it is empty) */
	_cleanup_close_ int fd = -1;
	for (int tries = 0; fd < 0 && tries < 3; tries++) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return urs_err_set(err, -errno, "creating %s: %m", dir);
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 && errno != ENOENT)
			break;
	}
	if (fd < 0)
		return urs_err_set(err, -errno, "creating %s: %m", tmp);
	size_t n = strlen(cgroups);
	ssize_t w = write(fd, cgroups, n);
	int r = w == (ssize_t) n ? 0 : w < 0 ? -errno : -EIO;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return urs_err_set(err, r, "writing %s: %s", path, strerror(-r));
	}
	return 0;
}

int urs_teardown_take(const char *root, const char *id, const char *as, char *cgroups, size_t len)
{
	char from[PATH_MAX], to[PATH_MAX];
	if (name_of(from, sizeof(from), root, id, NULL) < 0 ||
	    name_of(to, sizeof(to), root, id, as) < 0 || !len)
		return -ENAMETOOLONG;
	if (rename(from, to) < 0)
		return -errno;
	_cleanup_close_ int fd = open(to, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd < 0 ? -1 : read(fd, cgroups, len - 1);
	int r = n < 0 ? -errno : (size_t) n == len - 1 ? -EFBIG : 0;
	if (r < 0) {
		rename(to, from);
		return r;
	}
	cgroups[n] = '\0';
	return 0;
}

void urs_teardown_give_back(const char *root, const char *id, const char *as)
{
	char from[PATH_MAX], to[PATH_MAX];
	if (name_of(from, sizeof(from), root, id, as) == 0 &&
	    name_of(to, sizeof(to), root, id, NULL) == 0)
		rename(from, to);
}

void urs_teardown_drop(const char *root, const char *id, const char *as)
{
	char path[PATH_MAX];
	if (name_of(path, sizeof(path), root, id, as) == 0)
		unlink(path);
	/* the directory too, once nothing else is pending (ENOTEMPTY otherwise):
	 * a state root holds only what is live */
	if (name_of(path, sizeof(path), root, NULL, NULL) == 0)
		rmdir(path);
}

/* one of ID, ID@reaping, ID@@what is there */
static bool pending(const char *root, const char *id, const char *what)
{
	const char *as[] = {NULL, URS_TEARDOWN_REAPING, what};
	char path[PATH_MAX];
	for (size_t i = 0; i < URS_ARRAY_SIZE(as); i++) {
		if (i == 2 && !what)
			break;
		if (name_of(path, sizeof(path), root, id, as[i]) == 0 && access(path, F_OK) == 0)
			return true;
	}
	return false;
}

int urs_teardown_wait(const char *root, const char *id, int ms, const char *what)
{
	char dir[PATH_MAX];
	if (name_of(dir, sizeof(dir), root, NULL, NULL) < 0)
		return -ENAMETOOLONG;
	_cleanup_close_ int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (in < 0)
		return -errno;
	/* the watch first, then the look: no change falls between the two */
	if (inotify_add_watch(in, dir, IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE) < 0)
		return errno == ENOENT ? 0 : -errno; /* never made: nothing pending */
	double end = urs_now_ms() + ms;
	char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	while (pending(root, id, what)) {
		double left = end - urs_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = in, .events = POLLIN};
		if (poll(&p, 1, (int) left + 1) < 0 && errno != EINTR)
			return -errno;
		while (read(in, ev, sizeof(ev)) > 0) {
		}
	}
	return 0;
}
