/*
 * actors/gofer/quota.c — per-volume quotas for the gofer: bytes of
 * regular-file data (st_size) and inodes (every object: files, directories,
 * symlinks, fifos, sockets), see docs/gofer.md "Quotas".
 *
 * Usage is counted once, when the volume is served, by walking it beneath
 * the root (the same openat2 rules as every lookup: RESOLVE_BENEATH, no
 * symlinks followed, no magic links) with a bound on entries and depth, and
 * then kept up to date by the handlers in gofer/ops.c, which charge before
 * they grow anything (create, mkdir, mknod, symlink, write, truncate,
 * fallocate, copy_file_range) and release what unlink, rmdir, rename over a
 * target and truncation free. A hard-linked file found by the walk counts
 * its size divided among its links (its inode once per link); its bytes
 * and inode are released when its last link goes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "actors/gofer/int.h"

struct walk {
	uint64_t bytes, inodes, entries;
};

static int open_beneath(int dirfd, const char *name)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS};
	int fd = (int) syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* Count the directory open as @fd (consumed) and everything beneath it. */
static int walk_dir(int fd, unsigned depth, struct walk *w)
{
	if (depth > GOFER_QUOTA_DEPTH) {
		close(fd);
		return -EFBIG;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		int err = -errno;
		close(fd);
		return err;
	}
	int err = 0;
	struct dirent *e;
	while (!err && (errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (++w->entries > GOFER_QUOTA_WALK_MAX) {
			err = -EFBIG;
			break;
		}
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* gone meanwhile */
			err = -errno;
			break;
		}
		w->inodes++;
		if (S_ISREG(st.st_mode))
			w->bytes += (uint64_t) st.st_size / (st.st_nlink ? st.st_nlink : 1);
		if (S_ISDIR(st.st_mode)) {
			int sub = open_beneath(dirfd(d), e->d_name);
			if (sub == -ENOENT)
				continue;
			err = sub < 0 ? sub : walk_dir(sub, depth + 1, w);
		}
	}
	if (!err && errno)
		err = -errno;
	closedir(d);
	return err;
}

int gofer_quota_init(struct urs_gofer *g)
{
	g->quota = g->o.quota_bytes || g->o.quota_inodes;
	if (!g->quota)
		return 0;
	int fd = open_beneath(g->root_fd, ".");
	if (fd < 0)
		return fd;
	struct walk w = {0};
	int err = walk_dir(fd, 0, &w);
	if (err < 0)
		return err;
	g->q_bytes = w.bytes;
	g->q_inodes = w.inodes;
	return 0;
}

static bool over(uint64_t used, int64_t d, uint64_t quota)
{
	return quota && d > 0 && (used + (uint64_t) d < used || used + (uint64_t) d > quota);
}

static uint64_t sub(uint64_t used, int64_t d)
{
	return d < 0 && (uint64_t) -d > used ? 0 : used + (uint64_t) d;
}

int gofer_quota_charge(struct urs_gofer *g, int64_t dbytes, int64_t dinodes)
{
	if (!g->quota)
		return 0;
	if (over(g->q_bytes, dbytes, g->o.quota_bytes) ||
	    over(g->q_inodes, dinodes, g->o.quota_inodes))
		return -EDQUOT;
	g->q_bytes = sub(g->q_bytes, dbytes);
	g->q_inodes = sub(g->q_inodes, dinodes);
	return 0;
}

void gofer_quota_gone(struct urs_gofer *g, const struct stat *st)
{
	if (!g->quota || (st->st_nlink > 1 && !S_ISDIR(st->st_mode)))
		return;
	gofer_quota_charge(g, S_ISREG(st->st_mode) ? -(int64_t) st->st_size : 0, -1);
}
