/*
 * ckpt/wptrack.c — write tracking of a running process (ckpt/wptrack.h):
 * its writable private anonymous mappings from /proc/PID/maps, a
 * userfaultfd injected into one of its threads and taken over, the
 * registration and write-protection done from here.
 */
#include "ckpt/wptrack.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ckpt/ptrace.h"
#include "host/pagemap.h"
#include "runtime/common.h"

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1ull << 15) /* Linux 6.7; Debian 12's headers are 6.1 */
#endif
#ifndef PTRACE_O_SUSPEND_SECCOMP
#define PTRACE_O_SUSPEND_SECCOMP (1 << 21)
#endif

#define MAX_RANGES 4096

static int uffd_api(int fd)
{
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC};
	return ioctl(fd, UFFDIO_API, &api) < 0 ? -errno : 0;
}

bool ckpt_wptrack_supported(void)
{
	static int state; /* 0 unknown, 1 yes, -1 no */
	if (state)
		return state > 0;
	int fd = (int) syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	state = fd >= 0 && pm >= 0 && uffd_api(fd) == 0 && urs_pagemap_scan_supported(pm) ? 1 : -1;
	if (fd >= 0)
		close(fd);
	if (pm >= 0)
		close(pm);
	return state > 0;
}

/* the writable private anonymous mappings, and the vDSO (to inject with) */
static int read_maps(struct ckpt_wptrack *w, uint64_t vdso[2], struct urs_err *err)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", w->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return urs_err_set(err, -errno, "pid %d: reading its maps: %m", w->pid);
	w->ranges = calloc(MAX_RANGES, sizeof(*w->ranges));
	int r = w->ranges ? 0 : -ENOMEM;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, ino;
		char perms[8], name[256] = "";
		if (sscanf(line, "%llx-%llx %7s %*s %*s %llu %255s", &s, &e, perms, &ino, name) < 4)
			continue;
		if (!strcmp(name, "[vdso]"))
			vdso[0] = s, vdso[1] = e;
		if (ino || perms[1] != 'w' || perms[3] != 'p' ||
		    (name[0] == '[' && name[1] == 'v') || w->nranges == MAX_RANGES)
			continue;
		w->ranges[w->nranges++] = (struct ckpt_wp_range){s, e};
	}
	fclose(f);
	return r;
}

/* userfaultfd() made by the process, a copy taken, its own closed */
static int inject_uffd(struct ckpt_wptrack *w, const uint64_t vdso[2], struct urs_err *err)
{
	struct ckpt_tracee t;
	int r = ckpt_seize(&t, w->pid, PTRACE_O_SUSPEND_SECCOMP, err);
	if (r)
		return r;
	uint64_t mask = 0, all = ~0ull;
	long fd = -1, ret = 0;
	r = ckpt_find_syscall_insn(w->pid, vdso[0], vdso[1], &t.syscall_ip);
	if (r == 0 && (ptrace(PTRACE_GETSIGMASK, w->pid, (void *) 8, &mask) < 0 ||
		       ptrace(PTRACE_SETSIGMASK, w->pid, (void *) 8, &all) < 0))
		r = -errno;
	if (r == 0)
		r = ckpt_inject(&t, SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY,
				0, 0, 0, 0, 0, &fd);
	if (r == 0 && fd < 0)
		r = (int) fd;
	if (r == 0) {
		int pfd = (int) syscall(SYS_pidfd_open, w->pid, 0);
		w->uffd = pfd < 0 ? -errno : (int) syscall(SYS_pidfd_getfd, pfd, (int) fd, 0);
		if (w->uffd < 0)
			r = -errno;
		if (pfd >= 0)
			close(pfd);
		int rc = ckpt_inject(&t, SYS_close, (uint64_t) fd, 0, 0, 0, 0, 0, &ret);
		if (!r)
			r = rc;
	}
	ptrace(PTRACE_SETSIGMASK, w->pid, (void *) 8, &mask);
	int rd = ckpt_detach(&t);
	if (r == 0)
		r = rd;
	return r < 0 ? urs_err_set(err, r, "pid %d: a userfaultfd for write tracking: %s", w->pid,
				   strerror(-r))
		     : 0;
}

int ckpt_wptrack_arm(struct ckpt_wptrack *w, pid_t pid, struct urs_err *err)
{
	*w = (struct ckpt_wptrack){.pid = pid, .uffd = -1};
	uint64_t vdso[2] = {0, 0};
	int r = read_maps(w, vdso, err);
	if (r == 0 && !vdso[0])
		r = urs_err_set(err, -ENOENT, "pid %d: no vDSO to inject with", pid);
	if (r == 0)
		r = inject_uffd(w, vdso, err);
	if (r == 0 && (r = uffd_api(w->uffd)) < 0)
		urs_err_set(err, r, "pid %d: UFFDIO_API: %s", pid, strerror(-r));
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	_cleanup_close_ int pm = r == 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (r == 0 && pm < 0)
		r = urs_err_set(err, -errno, "pid %d: opening pagemap: %m", pid);
	uint32_t kept = 0;
	for (uint32_t i = 0; r == 0 && i < w->nranges; i++) {
		struct ckpt_wp_range g = w->ranges[i];
		struct uffdio_register reg = {.range = {g.start, g.end - g.start},
					      .mode = UFFDIO_REGISTER_MODE_WP};
		/* a mapping changed since the maps were read (unmapped, split,
		 * sealed): not tracked, its pages read as written. Only its
		 * populated pages are protected (urs_pagemap_protect says why). */
		if (ioctl(w->uffd, UFFDIO_REGISTER, &reg) < 0)
			continue;
		if (urs_pagemap_protect(pm, g.start, g.end) < 0) {
			ioctl(w->uffd, UFFDIO_UNREGISTER, &reg.range);
			continue;
		}
		w->ranges[kept++] = g;
	}
	w->nranges = kept;
	if (r < 0)
		ckpt_wptrack_disarm(w);
	return r;
}

void ckpt_wptrack_disarm(struct ckpt_wptrack *w)
{
	for (uint32_t i = 0; w->uffd >= 0 && i < w->nranges; i++) {
		struct uffdio_range g = {w->ranges[i].start, w->ranges[i].end - w->ranges[i].start};
		ioctl(w->uffd, UFFDIO_UNREGISTER, &g); /* (closing would do it too) */
	}
	if (w->uffd >= 0)
		close(w->uffd);
	w->uffd = -1;
	free(w->ranges);
	w->ranges = NULL;
	w->nranges = 0;
}
