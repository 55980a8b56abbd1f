/*
 * actors/sup_footprint.c — what the supervisor process itself costs, kept
 * small at boot for the sandbox's whole life (bench/RESULTS.md, "Memory"):
 * its fd table grown once while it is single-threaded, every fd it does
 * not keep closed, and the boot's dead heap and stack given back before
 * the loop starts. Apart because it is about our own process, not the
 * sandbox's.
 */
#include "actors/sup_int.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/common.h"

/* Close every fd from 3 up except those in @keep (-1 entries ignored). */
void sup_close_all_but(int *keep, size_t n)
{
	for (size_t i = 1; i < n; i++) /* insertion sort: n is tiny */
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned from = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int) from)
			continue;
		if ((unsigned) keep[i] > from)
			syscall(SYS_close_range, from, (unsigned) keep[i] - 1, 0);
		from = (unsigned) keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0u, 0);
}

void sup_prewarm_fd_table(void)
{
	/* Grow the table to 256 slots now, while single-threaded; keep every fd
	 * we open below 256 afterwards. */
	int fd = fcntl(0, F_DUPFD_CLOEXEC, 255);
	if (fd < 0)
		fd = fcntl(open("/dev/null", O_RDONLY | O_CLOEXEC), F_DUPFD_CLOEXEC, 255);
	if (fd >= 0)
		close(fd);
}

/* ---- memory at boot (bench/RESULTS.md, "Memory") ----
 * We are a fork of the CLI: its freed heap and the stack pages its deep
 * calls touched (config parsing, seccomp compilation, PATH_MAX buffers) are
 * ours too, private and dirty, for the sandbox's whole life. Once the boot
 * is done they are dead: give them back before the loop starts. */

#define SUP_STACK_KEEP (1u << 10) /* below our frame: the loop's own calls */

/* the lowest address of the [stack] mapping, or 0 */
static uintptr_t stack_low(void)
{
	_cleanup_close_ int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	char buf[512];
	size_t have = 0;
	while (fd >= 0) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return 0;
		have += (size_t) n;
		buf[have] = 0;
		char *line = buf, *nl;
		for (; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = 0;
			if (nl - line > 7 && !strcmp(nl - 7, "[stack]"))
				return (uintptr_t) strtoull(line, NULL, 16);
		}
		have = strlen(line); /* a partial line, carried over */
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* no line is that long: skip it */
	}
	return 0;
}

__attribute__((noinline)) void sup_release_boot_memory(void)
{
	malloc_trim(0); /* free heap pages, the CLI's included */
	char here;
	uintptr_t pg = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t top = ((uintptr_t) &here - SUP_STACK_KEEP) & ~(pg - 1);
	uintptr_t low = stack_low();
	/* dead frames only: everything below our caller's, less a margin;
	 * they fault in again, zeroed, if a deeper call wants them */
	if (low && low < top)
		madvise((void *) low, top - low, MADV_DONTNEED);
}

/* ---- end of memory at boot */
