/* tests/lib/skip.h — how a C test skips (issue #18: a green run ran
 * everything). Include it with #include "tests/lib/skip.h".
 *
 * A whole program (protocol exitcode or TAP):
 *   return urs_skip("needs root");            always a skip (exit 77)
 *   return urs_skip_or_fail("no /dev/fuse");  a dependency scripts/setup
 *	installs, or a device or kernel feature this machine has, is missing:
 *	77, or 1 with CI=true
 * A cmocka test (after cmocka.h):
 *   URS_CM_SKIP("host is unified");           skip(), saying why
 *   URS_CM_SKIP_OR_FAIL("no buffer rings");   skip() saying why, or with
 *	CI=true fail_msg()
 * Either way the reason is printed on the line that says SKIP. */
#ifndef URS_TESTS_SKIP_H
#define URS_TESTS_SKIP_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline bool urs_test_ci(void)
{
	const char *c = getenv("CI");
	return c && !strcmp(c, "true");
}

static inline int urs_skip(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	fflush(stdout);
	return 77;
}

static inline int urs_skip_or_fail(const char *why)
{
	if (urs_test_ci()) {
		printf("Bail out! %s (CI=true: scripts/setup provides it, so a skip would "
		       "hide a test)\n",
		       why);
		fflush(stdout);
		return 1;
	}
	return urs_skip(why);
}

#define URS_CM_SKIP(why)                                   \
	do {                                               \
		print_message("[   SKIP   ] %s\n", (why)); \
		skip();                                    \
	} while (0)

#define URS_CM_SKIP_OR_FAIL(why)                                                    \
	do {                                                                        \
		if (urs_test_ci())                                                  \
			fail_msg("CI=true: %s (scripts/setup provides it)", (why)); \
		URS_CM_SKIP(why);                                                   \
	} while (0)

/* A kernel feature the test needs is missing: with URSA_IOURING_DISABLE
 * set (the fallback runs turn features off on purpose) a plain skip,
 * otherwise URS_CM_SKIP_OR_FAIL. */
#define URS_CM_NEED_FEATURE(why)                               \
	do {                                                   \
		if (getenv("URSA_IOURING_DISABLE"))            \
			URS_CM_SKIP(why " (turned off here)"); \
		URS_CM_SKIP_OR_FAIL(why);                      \
	} while (0)

#endif
