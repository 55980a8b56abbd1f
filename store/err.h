/*
 * store/err.h — struct urs_err for store/: the same human-readable error
 * record as host/err.h (a message naming what failed, where and why, filled
 * next to a negative-errno return).
 *
 * store/ may not include host/ (tests/layers.sh), and the record has no home
 * below both layers yet, so this header defines it under host/err.h's own
 * include guard: whichever of the two a file includes first defines the one
 * struct, and a file may include both in either order.
 * tests/store/test_err_same.c fails if the two definitions drift apart. The
 * proper fix is moving host/err.h to runtime/ (outside this layer's files).
 */
#ifndef URSA_HOST_ERR_H
#define URSA_HOST_ERR_H

#include <stdarg.h>
#include <stdio.h>

struct urs_err {
	char msg[512];
};

/* Format into err (if non-NULL); returns rc so callers can `return urs_err_set(...)`. */
__attribute__((format(printf, 3, 4))) static inline int urs_err_set(struct urs_err *err, int rc,
								    const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return rc;
}

#endif
