/*
 * host/fs.c — file-system helpers (host/fs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "host/fs.h"

int urs_mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0711) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

DIR *urs_opendir_at(int dfd)
{
	int d2 = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d) {
		int e = errno;
		if (d2 >= 0)
			close(d2);
		errno = e;
		return NULL;
	}
	rewinddir(d);
	return d;
}

static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *f)
{
	(void) sb, (void) f;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

int urs_rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return access(path, F_OK) == 0 ? -ENOTEMPTY : errno == ENOENT ? 0 : -errno;
}

void urs_rmdir_parent_named(const char *path, const char *name)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t) (slash - path) : 0, k = strlen(name);
	if (!n || n >= sizeof(dir) || n < k || memcmp(path + n - k, name, k))
		return;
	memcpy(dir, path, n);
	dir[n] = 0;
	rmdir(dir); /* (only if empty) */
}
