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
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/common.h"
#include "runtime/mem.h"

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

__attribute__((noinline)) void sup_release_boot_memory(void)
{
	urs_mem_settle(); /* the CLI's freed heap too */
}

/* ---- end of memory at boot */
