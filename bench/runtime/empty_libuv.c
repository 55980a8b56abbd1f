/*
 * bench/runtime/empty_libuv.c — the libuv peer of empty_ursa.c: the default
 * loop with one long timer armed, parked in epoll_wait, for the
 * EmptyLoopPssAnon comparison. No stdio, as in empty_ursa.c.
 */
#include <string.h>
#include <unistd.h>
#include <uv.h>

static void never_cb(uv_timer_t *t)
{
	uv_stop(t->loop);
}

static void say(const char *s)
{
	if (write(STDOUT_FILENO, s, strlen(s)) < 0)
		_exit(2);
}

int main(void)
{
	static uv_timer_t t;
	uv_loop_t *loop = uv_default_loop();
	if (!loop) {
		say("empty_libuv: uv_default_loop failed\n");
		return 1;
	}
	uv_timer_init(loop, &t);
	uv_timer_start(&t, never_cb, 3600ull * 1000, 0);
	say("ready\n");
	return uv_run(loop, UV_RUN_DEFAULT) < 0;
}
