/*
 * host/proc.c — see proc.h.
 */
#include "host/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common.h"
#include "runtime/io.h"

int urs_pidfd_open(pid_t pid, unsigned flags)
{
	int fd = (int) syscall(SYS_pidfd_open, pid, flags);
	return fd < 0 ? -errno : fd;
}

int urs_pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

int urs_proc_renice(pid_t pid, int nice)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    setpriority(PRIO_PROCESS, (id_t) atoi(e->d_name), nice) < 0 && errno != ESRCH &&
		    !r)
			r = -errno;
	closedir(d);
	return r;
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

/* Field @field (>= 3) of /proc/@pid/stat as a number. */
static int stat_field(pid_t pid, int field, unsigned long long *v)
{
	char buf[1024], *p = NULL;
	int r = stat_fields(pid, buf, sizeof(buf), &p);
	if (r < 0)
		return r;
	for (int i = 3; i < field; i++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	return sscanf(p, "%llu", v) == 1 ? 0 : -EINVAL;
}

pid_t urs_proc_ppid(pid_t pid)
{
	unsigned long long v;
	int r = stat_field(pid, 4, &v); /* ppid */
	return r < 0 ? r : (pid_t) v;
}

pid_t urs_pidfd_pid(int pidfd)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	ssize_t n = urs_read_small(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENODATA ? -EINVAL : (pid_t) n;
	const char *p = strstr(buf, "\nPid:\t");
	int pid;
	if (!p || sscanf(p + 6, "%d", &pid) != 1)
		return -EINVAL;
	return pid > 0 ? pid : -ESRCH; /* -1: reaped */
}

int urs_proc_start_time(pid_t pid, uint64_t *ticks)
{
	unsigned long long v;
	int r = stat_field(pid, 22, &v); /* starttime */
	if (r == 0)
		*ticks = v;
	return r;
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

/* PIDFD_GET_INFO (Linux 6.13; its exit code since 6.15), declared here:
 * glibc 2.36's and Debian 12's kernel headers lack it. */
struct urs_pidfd_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
	uint32_t coredump_mask, spare;
};
#define URS_PIDFD_GET_INFO  _IOWR(0xFF, 11, struct urs_pidfd_info)
#define URS_PIDFD_INFO_EXIT (1ull << 3)

/* The exit status pidfs recorded when @pidfd's process was reaped. */
static int reaped_status(int pidfd, int *status)
{
	struct urs_pidfd_info i = {.mask = URS_PIDFD_INFO_EXIT};
	if (ioctl(pidfd, URS_PIDFD_GET_INFO, &i) < 0)
		return -errno;
	if (!(i.mask & URS_PIDFD_INFO_EXIT))
		return -EAGAIN;
	*status = i.exit_code;
	return 0;
}

int urs_pidfd_exit_status(int pidfd, pid_t pid, int *status)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	if (poll(&p, 1, 0) < 0)
		return -errno;
	if (!(p.revents & (POLLIN | POLLHUP)))
		return -EAGAIN; /* running */
	if (reaped_status(pidfd, status) == 0)
		return 0;
	/* a zombie nobody reaped yet: its exit code (field 52), read while
	 * the pidfd shows it unreaped, so the pid was still that process */
	unsigned long long code;
	int r = stat_field(pid, 52, &code);
	if (reaped_status(pidfd, status) == 0)
		return 0; /* reaped meanwhile */
	if (r < 0)
		return r == -ESRCH ? -ECHILD : r;
	*status = (int) code;
	return 0;
}

void urs_proc_stdio_ids(pid_t pid, uint64_t dev[3], uint64_t ino[3])
{
	for (int k = 0; k < 3; k++) {
		char path[64];
		struct stat sb;
		if (pid)
			snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, k);
		else
			snprintf(path, sizeof(path), "/proc/self/fd/%d", k);
		bool ok = stat(path, &sb) == 0;
		dev[k] = ok ? (uint64_t) sb.st_dev : 0;
		ino[k] = ok ? (uint64_t) sb.st_ino : 0;
	}
}
