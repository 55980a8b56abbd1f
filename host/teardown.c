/*
 * host/teardown.c — ROOT/.teardown/ID: a killed sandbox's cgroups, taken by
 * its reaper or by the next sandbox of its ID, under a lock (host/teardown.h
 * says why).
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

/* @id's names: its record, and its record as each taker names it */
static const char *const as_names[] = {NULL, URS_TEARDOWN_REAPING, URS_TEARDOWN_ADOPT};

/* One of @id's records whose taker, if any, is gone: locked, renamed to
 * ID@AS, read. The lock's fd; -ENOENT if none is there; -EBUSY if one is,
 * held by a live taker (or renamed under us: look again). */
static int take_once(const char *root, const char *id, const char *as, char *cgroups, size_t len)
{
	char from[PATH_MAX], to[PATH_MAX];
	bool held = false;
	if (name_of(to, sizeof(to), root, id, as) < 0)
		return -ENAMETOOLONG;
	for (size_t k = 0; k < URS_ARRAY_SIZE(as_names); k++) {
		if (name_of(from, sizeof(from), root, id, as_names[k]) < 0)
			return -ENAMETOOLONG;
		_cleanup_close_ int fd = open(from, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		struct stat a, b;
		/* a process's own lock (not flock's, which a child cloned before
		 * the lock is closed would hold on to) */
		struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || fcntl(fd, F_SETLK, &lk) < 0 || fstat(fd, &a) < 0 ||
		    stat(from, &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev ||
		    rename(from, to) < 0) {
			held = true;
			continue;
		}
		ssize_t n = pread(fd, cgroups, len - 1, 0);
		if (n < 0 || (size_t) n == len - 1) {
			int r = n < 0 ? -errno : -EFBIG;
			rename(to, from);
			return r;
		}
		cgroups[n] = '\0';
		return steal_fd(&fd);
	}
	return held ? -EBUSY : -ENOENT;
}

int urs_teardown_take(const char *root, const char *id, const char *as, char *cgroups, size_t len,
		      int ms)
{
	char dir[PATH_MAX];
	if (!len || name_of(dir, sizeof(dir), root, NULL, NULL) < 0)
		return -EINVAL;
	/* every sandbox's creation asks: one syscall when nothing is pending */
	if (access(dir, F_OK) < 0 && errno == ENOENT)
		return -ENOENT;
	/* at once if nobody holds it: an inotify instance costs an RCU grace
	 * period when it is closed (~15 ms here), for waits only */
	int first = take_once(root, id, as, cgroups, len);
	if (first != -EBUSY)
		return first;
	_cleanup_close_ int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	/* the watch first, then the look: no change falls between the two */
	if (in >= 0 &&
	    inotify_add_watch(in, dir, IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE) < 0 &&
	    errno == ENOENT)
		return -ENOENT; /* never made: nothing pending */
	double end = urs_now_ms() + ms;
	char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		int r = take_once(root, id, as, cgroups, len);
		if (r != -EBUSY)
			return r;
		double left = end - urs_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		/* a taker's death makes no event: looked at again every 50 ms */
		struct pollfd p = {.fd = in, .events = POLLIN};
		if (poll(&p, in >= 0, left < 50 ? (int) left + 1 : 50) < 0 && errno != EINTR)
			return -errno;
		while (in >= 0 && read(in, ev, sizeof(ev)) > 0) {
		}
	}
}

void urs_teardown_give_back(const char *root, const char *id, const char *as, int fd)
{
	char from[PATH_MAX], to[PATH_MAX];
	if (name_of(from, sizeof(from), root, id, as) == 0 &&
	    name_of(to, sizeof(to), root, id, NULL) == 0)
		rename(from, to);
	if (fd >= 0)
		close(fd);
}

void urs_teardown_drop(const char *root, const char *id, const char *as, int fd)
{
	char path[PATH_MAX];
	if (name_of(path, sizeof(path), root, id, as) == 0)
		unlink(path);
	if (fd >= 0)
		close(fd);
	/* the directory too, once nothing else is pending (ENOTEMPTY otherwise):
	 * a state root holds only what is live */
	if (name_of(path, sizeof(path), root, NULL, NULL) == 0)
		rmdir(path);
}
