/*
 * runtime/io.c — whole writes, whole reads, files replaced whole and a
 * millisecond clock (runtime/io.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/io.h"

int urs_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		c += k;
		n -= (size_t) k;
	}
	return 0;
}

int urs_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	const uint8_t *c = p;
	while (n) {
		ssize_t k = pwrite(fd, c, n, (off_t) off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		c += k;
		n -= (size_t) k;
		off += (uint64_t) k;
	}
	return 0;
}

int urs_pread_all(int fd, void *p, size_t n, uint64_t off)
{
	uint8_t *c = p;
	while (n) {
		ssize_t k = pread(fd, c, n, (off_t) off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		c += k;
		n -= (size_t) k;
		off += (uint64_t) k;
	}
	return 0;
}

size_t urs_read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	while (n + 1 < len) {
		ssize_t k = read(fd, buf + n, 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return n;
}

double urs_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

ssize_t urs_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? -e : -ENODATA;
	buf[n] = 0;
	return n;
}

int urs_write_file_atomic(const char *path, const char *tmp, const void *p, size_t n, unsigned mode)
{
	/* a fresh file, never one reached through a link left at @tmp (in a
	 * directory others may write to, it could name any file of ours) */
	unlink(tmp);
	int r = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0)
		r = -errno;
	if (!r)
		r = urs_write_all(fd, p, n);
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	return r;
}
