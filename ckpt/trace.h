/*
 * ckpt/trace.h — off-by-default phase timing for `ursa checkpoint` and
 * `ursa restore` (docs/checkpoint.md, "Speed"). With URSA_CKPT_TRACE=1 in
 * the environment, ckpt_trace("phase") prints one stderr line
 *
 *     ursa-trace PID REALTIME_US phase
 *
 * so that the CLI's, the supervisor's and the restorer's lines (different
 * processes) sort into one timeline, and line up with `date +%s%N` taken
 * around the command. Off, it costs one cached getenv per process.
 */
#ifndef URSA_CKPT_TRACE_H
#define URSA_CKPT_TRACE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/**
 * ckpt_trace_on() - is URSA_CKPT_TRACE=1 set?
 *
 * getenv is read once per process and cached (not thread-safe on the first
 * call, harmlessly: every thread computes the same answer).
 *
 * Return: true when phases are traced.
 */
static inline bool ckpt_trace_on(void)
{
	static int on = -1;
	if (on < 0) {
		const char *e = getenv("URSA_CKPT_TRACE");
		on = e && e[0] == '1';
	}
	return on;
}

/**
 * ckpt_trace() - print "ursa-trace PID REALTIME_US @phase" to stderr
 * @phase: what just ended, e.g. "dump: seized"
 *
 * Nothing unless ckpt_trace_on().
 */
static inline void ckpt_trace(const char *phase)
{
	if (!ckpt_trace_on())
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "ursa-trace %d %lld %s\n", (int) getpid(),
		(long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000, phase);
}

#endif
