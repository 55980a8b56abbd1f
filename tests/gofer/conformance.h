/*
 * tests/gofer/conformance.h — the test tables of the gofer suites.
 */
#ifndef URSA_TESTS_GOFER_CONFORMANCE_H
#define URSA_TESTS_GOFER_CONFORMANCE_H

#include "tests/gofer/harness.h"

struct ctest {
	const char *name;
	test_fn fn;
};

/* Transcript-compared against the oracle (conformance.c). */
extern const struct ctest ctests[];

#endif
