/*
 * tests/fuzz/fuzz_spec.c — libFuzzer target for the config.json parser:
 * any bytes in, urs_spec_parse() must return cleanly and free everything.
 * Built with -fsanitize=fuzzer under clang, and linked into fuzz_main.c's
 * corpus replayer everywhere else.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "host/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct urs_err err;
	struct urs_spec *spec = NULL;
	int r = urs_spec_parse((const char *) data, size, &spec, &err);
	if (r == 0) {
		/* touch what consumers walk first */
		if (spec->process && spec->process->args[0])
			(void) strlen(spec->process->args[0]);
		urs_spec_free(spec);
	} else if (spec || !memchr(err.msg, '\0', sizeof(err.msg))) {
		__builtin_trap(); /* failure must leave *out NULL and a terminated message */
	}
	return 0;
}
