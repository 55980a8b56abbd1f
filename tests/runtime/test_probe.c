/*
 * tests/runtime/test_probe.c — feature probing: names and parsing of the
 * URSA_IOURING_DISABLE list, forcing features off (what every fallback test
 * relies on), and that a forced-off feature is really not used by a loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "runtime/loop.h"
#include "runtime/probe.h"

static void test_parse(void **state)
{
	(void) state;
	uint32_t m;
	assert_int_equal(urs_features_parse("defer_taskrun,read_multishot", &m), 0);
	assert_int_equal(m, URS_FEAT_DEFER_TASKRUN | URS_FEAT_READ_MSHOT);
	assert_int_equal(urs_features_parse("", &m), 0);
	assert_int_equal(m, 0);
	assert_int_equal(urs_features_parse("all", &m), 0);
	assert_int_equal(m, URS_FEAT_ALL);
	assert_int_equal(urs_features_parse("msg_ring,bogus", &m), -EINVAL);
	assert_string_equal(urs_feature_name(URS_FEAT_MSG_RING), "msg_ring");
	assert_null(urs_feature_name(1u << 30));
}

static void test_this_kernel(void **state)
{
	(void) state;
	/* The machines we ship on (6.18) have all of these; a regression in the
	 * probe itself must not silently push us onto fallbacks. */
	uint32_t f = urs_features();
	assert_true(f & URS_FEAT_MSG_RING);
	assert_true(f & URS_FEAT_BUF_RING);
	assert_true(f & URS_FEAT_DEFER_TASKRUN);
	assert_true(f & URS_FEAT_READ_MSHOT);
}

static void test_force_off(void **state)
{
	(void) state;
	urs_features_force_off(URS_FEAT_SINGLE_ISSUER | URS_FEAT_MSG_RING);
	assert_false(urs_has(URS_FEAT_SINGLE_ISSUER));
	assert_false(urs_has(URS_FEAT_DEFER_TASKRUN)); /* implied: needs SINGLE_ISSUER */
	assert_false(urs_has(URS_FEAT_MSG_RING));
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	assert_false(loop.setup_flags & (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN));
	assert_false(loop.feat & URS_FEAT_MSG_RING);
	assert_true(loop.efd >= 0); /* remote wake-ups fall back to an eventfd */
	urs_loop_fini(&loop);
	urs_features_reset();
	assert_true(urs_has(URS_FEAT_MSG_RING));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_this_kernel),
		cmocka_unit_test(test_force_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
