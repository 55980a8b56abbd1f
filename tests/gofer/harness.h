/*
 * tests/gofer/harness.h — shared by the gofer test suites: the transcript
 * log (every checked call records its result and errno; the same test run
 * against the gofer and against a plain bind mount must produce identical
 * transcripts), path helpers and hard assertions.
 */
#ifndef URSA_TESTS_GOFER_HARNESS_H
#define URSA_TESTS_GOFER_HARNESS_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tctx {
	const char *root; /* the mount under test (or the oracle) */
	const char *name; /* test name: its directory under root */
	char *log;
	size_t len, cap;
	char pbuf[8][4096];
	unsigned pk;
	int failed; /* hard assertion failures */
};

static inline void tlog(struct tctx *c, const char *fmt, ...)
{
	va_list ap;
	char tmp[1024];
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t) n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	if (c->len + (size_t) n + 1 > c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 1 << 16;
		while (nc < c->len + (size_t) n + 1)
			nc *= 2;
		char *p = realloc(c->log, nc);
		if (!p)
			abort();
		c->log = p;
		c->cap = nc;
	}
	memcpy(c->log + c->len, tmp, (size_t) n);
	c->len += (size_t) n;
	c->log[c->len] = 0;
}

/* A path under this test's directory. */
static inline const char *P(struct tctx *c, const char *rel)
{
	char *b = c->pbuf[c->pk++ % 8];
	if (rel && *rel)
		snprintf(b, sizeof(c->pbuf[0]), "%s/%s/%s", c->root, c->name, rel);
	else
		snprintf(b, sizeof(c->pbuf[0]), "%s/%s", c->root, c->name);
	return b;
}

/* Record the result of a call: value, and errno name when negative. */
#define CK(c, expr)                                                                 \
	({                                                                          \
		errno = 0;                                                          \
		long _r = (long) (expr);                                            \
		int _e = errno;                                                     \
		tlog((c), "%d: %s = %ld%s%s\n", __LINE__, #expr, _r < 0 ? -1L : _r, \
		     _r < 0 ? " " : "", _r < 0 ? strerrorname_np(_e) : "");         \
		errno = _e;                                                         \
		_r;                                                                 \
	})

/* Same, but only success/failure+errno are recorded (fds, pids vary). */
#define CKOK(c, expr)                                                                 \
	({                                                                            \
		errno = 0;                                                            \
		long _r = (long) (expr);                                              \
		int _e = errno;                                                       \
		tlog((c), "%d: %s %s%s\n", __LINE__, #expr, _r < 0 ? "fails " : "ok", \
		     _r < 0 ? strerrorname_np(_e) : "");                              \
		errno = _e;                                                           \
		_r;                                                                   \
	})

/* An open whose success or failure is recorded; a resulting fd is closed
 * (an fd left open on a volume would keep it alive after unmount). */
#define CKOPEN(c, expr)                   \
	({                                \
		long _fd = CKOK(c, expr); \
		if (_fd >= 0)             \
			close((int) _fd); \
		_fd;                      \
	})

/* Hard expectation (security and gofer-only properties). */
#define EXPECT(c, cond, ...)                                                                   \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "FAIL %s:%d [%s] %s: ", __FILE__, __LINE__, (c)->name, \
				#cond);                                                        \
			fprintf(stderr, __VA_ARGS__);                                          \
			fprintf(stderr, "\n");                                                 \
			(c)->failed++;                                                         \
		}                                                                              \
	} while (0)

typedef void (*test_fn)(struct tctx *c);

#endif
