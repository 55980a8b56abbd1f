/*
 * actors/sc_count.h — counted seccomp denials of one sandbox: its filter's
 * listener answered on a loop from the profile's errno table, and a counter
 * per denied syscall (actors/metrics.h exposes them). A supervisor process
 * has one (metrics.c's own); a host serving several sandboxes
 * (actors/hosted.h) has one per sandbox.
 */
#ifndef URSA_ACTORS_SC_COUNT_H
#define URSA_ACTORS_SC_COUNT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/seccomp.h"
#include "runtime/loop.h"
#include "runtime/timer.h"

/* At most this many syscalls get a series of their own (then "other"). */
#define URS_SC_SERIES 64
/* An errno table with more exceptions is not handed over (actors/hosted.h). */
#define URS_SC_EXC_MAX 64
/* Answers at most URS_SC_BURST denials per URS_SC_WINDOW_NS. */
#define URS_SC_BURST	 32
#define URS_SC_WINDOW_NS (1000ull * 1000ull)

struct urs_sc_count {
	int fd; /* the listener, or -1 */
	struct urs_seccomp_denials d;
	struct urs_seccomp_deny_exc exc[URS_SC_EXC_MAX]; /* d.exc: our copy, or the caller's */
	struct urs_op op;
	bool active;
	/* one counter per native syscall below URS_SECCOMP_COUNT_NR, then
	 * "other"; .bss or calloc'd: untouched until something is denied */
	_Atomic uint64_t denied[URS_SECCOMP_COUNT_NR + 1];
	bool shown[URS_SECCOMP_COUNT_NR + 1]; /* has a series of its own */
	unsigned nshown;
	_Atomic uint64_t errors; /* notifications we could not answer */
	/* its owner's word when its op or pacing timer ended for good (the
	 * owner checks urs_sc_busy: this may be the last thing it waited for) */
	void (*ended)(void *arg);
	void *ended_arg;
	/* pacing: at most URS_SC_BURST answers per URS_SC_WINDOW_NS, then the
	 * next waits for the window's end (a denial storm throttles its own
	 * sandbox, not the loop that answers it, which may serve a whole pod) */
	struct urs_timer pace;
	uint64_t window_ns;
	uint32_t in_window;
	uint64_t pace_window_ns; /* 0: URS_SC_WINDOW_NS (tests set their own) */
};

/* Its op's callback, for --profile's names (actors/metrics.c). */
extern const void *const urs_sc_handler;

/* Take @listener and the table @d (kept by the caller, or copied with
 * @copy when it fits URS_SC_EXC_MAX: -E2BIG otherwise); (-1, NULL) closes
 * one taken before. 0 or a negative errno (nothing taken). */
int urs_sc_take(struct urs_sc_count *c, int listener, const struct urs_seccomp_denials *d,
		bool copy);
/* Answer its notifications on @loop from now on (a weak op). 0, or a
 * negative errno (the listener is closed: denied calls fail with ENOSYS).
 * No-op without a listener. */
int urs_sc_start(struct urs_sc_count *c, struct urs_loop *loop);
/* Stop answering: the listener closed (its op and timer cancelled, if in
 * flight: their final completions come later, then ->ended). */
void urs_sc_stop(struct urs_sc_count *c, struct urs_loop *loop);
/* Its op or pacing timer still in flight (do not free it yet)? */
bool urs_sc_busy(const struct urs_sc_count *c);
/* The exposition of its counters with labels @cl. Length or -ENOSPC. */
int urs_sc_render(const struct urs_sc_count *c, const char *cl, char *buf, size_t len);
/* Saved counters added back (checkpoint restore): the series shown
 * rebuilt. -EINVAL if @n is not its shape. */
int urs_sc_load_denied(struct urs_sc_count *c, const uint64_t *vals, uint32_t n);

#endif
