/*
 * host/oom.c — the supervisor's oom_score_adj (host/oom.h says why).
 */
#include "host/oom.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ADJ_FILE "/proc/self/oom_score_adj"

static int saved_adj = INT_MIN; /* the score before urs_oom_protect_self() */

static int write_adj(int adj)
{
	char buf[16], *p = buf + sizeof(buf);
	unsigned v = adj < 0 ? (unsigned) -adj : (unsigned) adj;
	do /* no stdio: called between fork and exec */
		*--p = (char) ('0' + v % 10);
	while ((v /= 10));
	if (adj < 0)
		*--p = '-';
	int fd = open(ADJ_FILE, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, p, (size_t) (buf + sizeof(buf) - p));
	int r = n < 0 ? -errno : 0;
	close(fd);
	return r;
}

int urs_oom_protect_self(int adj, struct urs_err *err)
{
	char buf[16] = {0};
	int fd = open(ADJ_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return urs_err_set(err, -errno, "opening %s: %m", ADJ_FILE);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int e = errno;
	close(fd);
	if (n <= 0)
		return urs_err_set(err, n < 0 ? -e : -EIO, "reading %s", ADJ_FILE);
	int old = atoi(buf);
	if (old <= adj) /* already as low (a caller protected itself): keep it */
		return 0;
	int r = write_adj(adj);
	if (r < 0)
		return urs_err_set(err, r, "writing %d to %s: %s", adj, ADJ_FILE, strerror(-r));
	saved_adj = old;
	return 0;
}

int urs_oom_child_reset(void)
{
	return saved_adj == INT_MIN ? 0 : write_adj(saved_adj);
}
