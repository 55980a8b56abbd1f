/*
 * tests/state/fuzz_probe.c — configure-time probe: does clang link a
 * libFuzzer + ASan binary here? (tests/state/meson.build builds the state
 * fuzz target with clang only when this links.)
 */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void) data;
	(void) size;
	return 0;
}
