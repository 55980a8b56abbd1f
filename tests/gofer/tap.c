/*
 * tests/gofer/tap.c — the shared helpers of the gofer's root tests
 * (tests/gofer/tap.h).
 */
#include "tests/gofer/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/skip.h"

#define PARAM "/sys/module/fuse/parameters/enable_uring"

int tap_failures, tap_count;
static char old_param;
static pid_t setter;

void tap_report(bool ok, const char *fmt, ...)
{
	tap_count++;
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	printf("%s %d - %s\n", ok ? "ok" : "not ok", tap_count, what);
	fflush(stdout);
	if (!ok)
		tap_failures++;
}

void tap_die(const char *prog, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static bool param_write(char v)
{
	int fd = open(PARAM, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = write(fd, &v, 1) == 1;
	close(fd);
	return ok;
}

static void param_restore(void)
{
	if (getpid() == setter && old_param)
		param_write(old_param);
}

bool tap_uring_param(char v)
{
	if (!old_param) {
		int fd = open(PARAM, O_RDONLY | O_CLOEXEC);
		char c;
		if (fd < 0 || read(fd, &c, 1) != 1) {
			printf("%s no %s (kernel without FUSE over io_uring)\n",
			       urs_test_ci() ? "Bail out! (CI=true)" : "1..0 # SKIP", PARAM);
			if (fd >= 0)
				close(fd);
			return false;
		}
		close(fd);
		if (!param_write(v)) {
			printf("%s cannot set %s: %s\n",
			       urs_test_ci() ? "Bail out! (CI=true)" : "1..0 # SKIP", PARAM,
			       strerror(errno));
			return false;
		}
		old_param = c;
		setter = getpid();
		atexit(param_restore);
		return true;
	}
	return param_write(v);
}

int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failures ? 1 : 0;
}
