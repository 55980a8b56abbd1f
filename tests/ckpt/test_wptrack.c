/*
 * tests/ckpt/test_wptrack.c — write tracking of a running process
 * (ckpt/wptrack.c) on a real child: after arming, exactly the pages the
 * child writes read as written (user writes and a kernel write into its
 * buffer alike, which must still succeed), the child keeps no fd of it,
 * a seccomp filter that forbids userfaultfd in the child does not stop the
 * arming, and after disarming nothing is protected any more.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/wptrack.h"
#include "host/pagemap.h"
#include "tests/lib/skip.h"

#define PG     4096u
#define NPAGES 64u

static uint8_t *mem;

/* the child: writes page i when sent byte i on its pipe ('k': a kernel
 * write with read(2) from /dev/zero into page 40); answers each with a byte */
static void child(int in, int out, bool no_uffd)
{
	if (no_uffd) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(3);
		if (syscall(SYS_userfaultfd, 0) >= 0 || errno != EPERM)
			_exit(4);
	}
	uint8_t c;
	while (read(in, &c, 1) == 1) {
		if (c == 'k') {
			int z = open("/dev/zero", O_RDONLY);
			ssize_t n = read(z, mem + 40 * PG + 100, 50);
			close(z);
			c = n == 50 ? 'K' : 'E';
		} else {
			mem[c * PG + 7] = 0x5a;
		}
		if (write(out, &c, 1) != 1)
			_exit(2);
	}
	_exit(0);
}

struct kid {
	pid_t pid;
	int to, from;
};

static struct kid start(bool no_uffd)
{
	int a[2], b[2];
	assert_int_equal(pipe(a), 0);
	assert_int_equal(pipe(b), 0);
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		close(a[1]), close(b[0]);
		child(a[0], b[1], no_uffd);
	}
	close(a[0]), close(b[1]);
	return (struct kid){p, a[1], b[0]};
}

static char ask(struct kid *k, uint8_t c)
{
	uint8_t r = 0;
	assert_int_equal(write(k->to, &c, 1), 1);
	assert_int_equal(read(k->from, &r, 1), 1);
	return (char) r;
}

static void stop(struct kid *k)
{
	close(k->to);
	close(k->from);
	int st = 0;
	assert_int_equal(waitpid(k->pid, &st, 0), k->pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

struct written {
	uint8_t page[NPAGES];
};

static int note(void *arg, const struct urs_pm_run *run)
{
	struct written *w = arg;
	for (uint64_t a = run->start; a < run->end; a += PG)
		w->page[(a - (uint64_t) (uintptr_t) mem) / PG] =
			(run->flags & URS_PM_WRITTEN) ? 'w' : '.';
	return 0;
}

static void written(pid_t pid, char out[NPAGES + 1])
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	int pm = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(pm >= 0);
	struct written w;
	memset(w.page, '-', sizeof(w.page));
	assert_int_equal(urs_pagemap_walk(pm, (uint64_t) (uintptr_t) mem,
					  (uint64_t) (uintptr_t) mem + NPAGES * PG, note, &w),
			 0);
	close(pm);
	memcpy(out, w.page, NPAGES);
	out[NPAGES] = 0;
}

static int uffd_fds(pid_t pid)
{
	char path[64], link[256], lp[300];
	int n = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		snprintf(lp, sizeof(lp), "%s/%s", path, de->d_name);
		ssize_t l = readlink(lp, link, sizeof(link) - 1);
		if (l > 0 && (link[l] = 0, strstr(link, "userfaultfd")))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

static void track(bool no_uffd)
{
	if (!ckpt_wptrack_supported())
		URS_CM_SKIP_OR_FAIL("no userfaultfd WP_ASYNC + PAGEMAP_SCAN (Linux 6.7)");
	memset(mem, 1, NPAGES * PG); /* every page present before the fork */
	struct kid k = start(no_uffd);
	ask(&k, 0); /* the child runs */
	struct ckpt_wptrack w;
	struct urs_err err = {{0}};
	if (ckpt_wptrack_arm(&w, k.pid, &err) < 0)
		fail_msg("arm: %s", err.msg);
	assert_true(w.uffd >= 0 && w.nranges > 0);
	assert_int_equal(uffd_fds(k.pid), 0); /* its own copy closed again */
	char got[NPAGES + 1], want[NPAGES + 1];
	memset(want, '.', NPAGES);
	want[NPAGES] = 0;
	written(k.pid, got);
	assert_string_equal(got, want);
	assert_int_equal(ask(&k, 3), 3);
	assert_int_equal(ask(&k, 17), 17);
	assert_int_equal(ask(&k, 'k'), 'K'); /* a kernel write succeeds */
	want[3] = want[17] = want[40] = 'w';
	written(k.pid, got);
	assert_string_equal(got, want);
	ckpt_wptrack_disarm(&w);
	assert_int_equal(w.uffd, -1);
	memset(want, 'w', NPAGES); /* nothing protected any more */
	written(k.pid, got);
	assert_string_equal(got, want);
	assert_int_equal(ask(&k, 5), 5);
	stop(&k);
}

static void tracks_writes(void **state)
{
	(void) state;
	track(false);
}

static void under_seccomp(void **state)
{
	(void) state;
	track(true);
}

static void gone_process(void **state)
{
	(void) state;
	struct ckpt_wptrack w;
	struct urs_err err = {{0}};
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	assert_true(ckpt_wptrack_arm(&w, p, &err) < 0);
	assert_true(err.msg[0] != 0);
	assert_int_equal(w.uffd, -1);
	ckpt_wptrack_disarm(&w);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("skip: needs root (ptrace, pagemap frame numbers)\n");
		return 77;
	}
	mem = mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(mem, NPAGES * PG, MADV_NOHUGEPAGE);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tracks_writes),
		cmocka_unit_test(under_seccomp),
		cmocka_unit_test(gone_process),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
