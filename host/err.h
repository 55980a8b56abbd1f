/*
 * host/err.h — struct urs_err, the human-readable error that host/ functions
 * fill next to their negative-errno return. The message is meant to be shown
 * to the user as-is (e.g. in runc's --log JSON), so it names what failed and
 * why, not just the errno.
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
