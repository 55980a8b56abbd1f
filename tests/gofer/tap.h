/*
 * tests/gofer/tap.h — what the gofer's root tests share (gofer_test.c,
 * uring_test.c, thread_test.c): TAP-style "ok N - what" lines, a fatal
 * error, and the fuse module's enable_uring parameter set for the test's
 * duration (the old value restored at exit by the process that set it).
 */
#ifndef URSA_TESTS_GOFER_TAP_H
#define URSA_TESTS_GOFER_TAP_H

#include <stdbool.h>

extern int tap_failures, tap_count;

void tap_report(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "@prog: @what: strerror(errno)" on stderr, exit 1 */
_Noreturn void tap_die(const char *prog, const char *what);

/* Set enable_uring to @v ('0' or '1'). The first call saves the old value
 * and restores it at exit; if the parameter is missing or not writable it
 * prints a SKIP plan and returns false (the caller exits 77). */
bool tap_uring_param(char v);

/* The plan line; the exit code (0, or 1 after a failure). */
int tap_done(void);

#endif
