/*
 * runtime/err.h — struct urs_err, the project's one error type: the
 * human-readable message every layer fills next to its negative-errno
 * return. The message is meant to be shown to the user as-is (e.g. in
 * runc's --log JSON), so it names what failed, where and why, not just the
 * errno; a caller adds its own context in front with urs_err_wrap(). In
 * runtime/ (the lowest layer) so that every layer, store/ and net/ too,
 * speaks it.
 */
#ifndef URSA_RUNTIME_ERR_H
#define URSA_RUNTIME_ERR_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct urs_err {
	char msg[512];
};

/**
 * urs_err_set() - format the message into @err (if non-NULL)
 * @err: the error, or NULL
 * @rc: returned as is, so callers can `return urs_err_set(...)`
 * @fmt: printf format (glibc's %m included)
 *
 * Return: @rc.
 */
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

/**
 * urs_err_wrap() - put context in front of the message @err holds
 * @err: an error a callee filled, or NULL
 * @rc: returned as is
 * @fmt: printf format of the context ("restore: the writable layer %s")
 *
 * The message becomes "CONTEXT: MESSAGE" (cut at the buffer's end); an
 * empty message gets the context alone.
 *
 * Return: @rc.
 */
__attribute__((format(printf, 3, 4))) static inline int urs_err_wrap(struct urs_err *err, int rc,
								     const char *fmt, ...)
{
	if (err) {
		char inner[sizeof(err->msg)];
		memcpy(inner, err->msg, sizeof(inner));
		inner[sizeof(inner) - 1] = 0;
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t) n < sizeof(err->msg) - 2 && inner[0])
			snprintf(err->msg + n, sizeof(err->msg) - (size_t) n, ": %s", inner);
	}
	return rc;
}

#endif
