/*
 * bench/runtime/empty_ursa.c — the smallest ursa process that is really
 * running: one loop, one long timer armed, parked in io_uring_enter. The
 * runner reads /proc/PID/smaps_rollup (Pss_Anon) after about a second and
 * kills it; this is the EmptyLoopPssAnon figure. Built with glibc malloc and
 * (BENCH_MIMALLOC) with mimalloc, to decide the project's allocator.
 * No stdio: its buffer would be part of what is measured.
 */
#include <string.h>
#include <unistd.h>

#include "runtime/loop.h"
#include "runtime/timer.h"

#ifdef BENCH_MIMALLOC
#include <mimalloc.h>
#endif

static void never_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	(void) t;
	(void) res;
	urs_loop_stop(loop);
}

static void say(const char *s)
{
	if (write(STDOUT_FILENO, s, strlen(s)) < 0)
		_exit(2);
}

int main(void)
{
	static struct urs_loop loop;
	static struct urs_timer t;
#ifdef BENCH_MIMALLOC
	if (mi_version() <= 0) /* keeps libmimalloc linked under --as-needed */
		return 1;
#endif
	if (urs_loop_init(&loop, NULL) < 0) {
		say("empty_ursa: urs_loop_init failed\n");
		return 1;
	}
	urs_timer_start(&loop, &t, 3600ull * 1000000000ull, 0, never_cb);
	say("ready\n");
	int r = urs_loop_run(&loop);
	urs_loop_fini(&loop);
	return r < 0;
}
