/*
 * host/proc.c — see proc.h.
 */
#include "host/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/common.h"

int urs_pidfd_open(pid_t pid, unsigned flags)
{
	int fd = (int) syscall(SYS_pidfd_open, pid, flags);
	return fd < 0 ? -errno : fd;
}

int urs_pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

/* Fields after the command (which may contain spaces and parens). */
static int stat_fields(pid_t pid, char *buf, size_t len, char **after)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ssize_t n = read(fd, buf, len - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EINVAL;
	*after = p + 2; /* field 3 (state) */
	return 0;
}

int urs_proc_start_time(pid_t pid, uint64_t *ticks)
{
	char buf[1024], *p = NULL;
	int r = stat_fields(pid, buf, sizeof(buf), &p);
	if (r < 0)
		return r;
	/* p is field 3; start time is field 22: skip 19 fields */
	for (int i = 3; i < 22; i++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	unsigned long long v;
	if (sscanf(p, "%llu", &v) != 1)
		return -EINVAL;
	*ticks = v;
	return 0;
}

int urs_proc_state(pid_t pid)
{
	char buf[1024], *p = NULL;
	int r = stat_fields(pid, buf, sizeof(buf), &p);
	return r < 0 ? r : (unsigned char) p[0];
}

int urs_pidfd_open_checked(pid_t pid, uint64_t ticks)
{
	if (pid <= 0)
		return -ESRCH;
	int fd = urs_pidfd_open(pid, 0);
	if (fd < 0)
		return fd;
	uint64_t now;
	/* checked after opening: the pidfd pins the identity we verify */
	if (urs_proc_start_time(pid, &now) < 0 || now != ticks) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

bool urs_proc_alive(pid_t pid, uint64_t ticks)
{
	uint64_t now;
	if (pid <= 0 || urs_proc_start_time(pid, &now) < 0 || now != ticks)
		return false;
	int st = urs_proc_state(pid);
	return st > 0 && st != 'Z' && st != 'X';
}
