/*
 * tests/store/fuzz_remote.c — fuzz target for what a remote image reader
 * parses before or after authentication: an object's header
 * (store/crypt.c) and the index's text (store/remote.c). Whatever parses
 * must name files a restore may write (urs_remote_file_ok). Replayed over
 * tests/store/corpus-index by tests/fuzz/fuzz_main.c in the unit suite.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/crypt.h"
#include "store/remote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* what parsed is a name a restore may write, and an inline entry's bytes
 * lie inside the input (@arg: its bounds) */
static int visit(void *arg, uint32_t obj, uint64_t off, uint64_t len, const char *file,
		 const void *data)
{
	const uint8_t *const *in = arg;
	const uint8_t *d = data;
	if (!urs_remote_file_ok(file) || off + len < off || !obj != !!d ||
	    (d && (d < in[0] || d > in[1] || len > (uint64_t) (in[1] - d))))
		abort();
	for (uint64_t i = 0; d && i < len; i++) /* every byte readable (ASan) */
		(void) *(volatile const uint8_t *) (d + i);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct urs_err err;
	struct urs_crypt_hdr h;
	urs_crypt_hdr_parse(data, size, "fuzz/prefix", &h, &err);
	const uint8_t *in[2] = {data, data + size};
	int n = urs_remote_index_parse((const char *) data, size, visit, in, &err);
	if (n > URS_REMOTE_FILES)
		abort();
	return 0;
}
