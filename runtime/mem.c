/*
 * runtime/mem.c — settling: the heap's free pages and the main thread's
 * unused stack handed back after a burst of work (runtime/mem.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/mem.h"

#define STACK_KEEP 2u /* pages kept below the caller's frame */

/* the lowest address of the [stack] mapping, or 0 */
static uintptr_t stack_low(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	char buf[512];
	size_t have = 0;
	uintptr_t low = 0;
	while (fd >= 0 && !low) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t) n;
		buf[have] = 0;
		char *line = buf, *nl;
		for (; !low && (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = 0;
			if (nl - line > 7 && !strcmp(nl - 7, "[stack]"))
				low = (uintptr_t) strtoull(line, NULL, 16);
		}
		have = strlen(line); /* a partial line, carried over */
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* no line is that long: skip it */
	}
	if (fd >= 0)
		close(fd);
	return low;
}

long urs_mem_settle(void)
{
	malloc_trim(0);
	if (gettid() != getpid())
		return 0;
	uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t sp = (uintptr_t) __builtin_frame_address(0);
	uintptr_t hi = (sp & ~(page - 1)) - STACK_KEEP * page;
	uintptr_t lo = stack_low();
	/* dead frames only: they fault in again, zeroed, if a deeper call
	 * wants them */
	if (!lo || lo >= hi)
		return 0;
	if (madvise((void *) lo, hi - lo, MADV_DONTNEED) < 0)
		return -errno;
	return (long) (hi - lo);
}

static void settle_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct urs_mem_settler *s = (struct urs_mem_settler *) t;
	if (res < 0 || s->off)
		return;
	uint64_t now = urs_now_ns();
	if (now - s->last_ns < s->delay_ns && /* a call since it was armed */
	    urs_timer_start(loop, &s->t, s->last_ns + s->delay_ns - now, 0, settle_cb) == 0)
		return;
	urs_mem_settle();
	s->settled++;
}

void urs_mem_settle_soon(struct urs_loop *loop, struct urs_mem_settler *s)
{
	if (s->off)
		return;
	s->last_ns = urs_now_ns();
	if (urs_timer_busy(&s->t))
		return;
	/* -ENOMEM (the heap could not grow): no settle this time, no harm */
	(void) urs_timer_start(loop, &s->t, s->delay_ns, 0, settle_cb);
}

void urs_mem_settle_off(struct urs_loop *loop, struct urs_mem_settler *s)
{
	s->off = true;
	if (urs_timer_busy(&s->t))
		(void) urs_timer_cancel(loop, &s->t);
}
