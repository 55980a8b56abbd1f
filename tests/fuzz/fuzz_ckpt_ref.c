/*
 * tests/fuzz/fuzz_ckpt_ref.c — libFuzzer target for a local directory's
 * reference to an image in object storage (ckpt/remote_ref.h), which a
 * restore reads from a directory a client hands it: any bytes in,
 * ckpt_ref_decode() returns 0 or -EBADMSG with a message; then the same
 * bytes with a valid MAC line appended (what only the key's holder can
 * make), to reach the checks behind the MAC: a reference it accepts
 * encodes again to the same bytes. Replayed over its seed corpus by
 * fuzz_main.c as a unit test.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/remote_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct ckpt_seal key = {.key = "the fuzzer's key of 32 bytes...."};

static void one(const char *p, size_t n)
{
	char loc[CKPT_REF_LOC_MAX], prof[CKPT_REF_PROF_MAX], again[CKPT_REF_MAX];
	struct urs_err err = {{0}};
	int r = ckpt_ref_decode(&key, p, n, loc, prof, &err);
	if (r < 0) {
		if (r != -EBADMSG || !memchr(err.msg, '\0', sizeof(err.msg)) || !err.msg[0])
			__builtin_trap();
		return;
	}
	long m = ckpt_ref_encode(&key, loc, *prof ? prof : NULL, again, sizeof(again), &err);
	if (m != (long) n || memcmp(again, p, n))
		__builtin_trap(); /* what decodes must encode, byte for byte */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one((const char *) data, size);
	if (size > CKPT_REF_MAX)
		return 0;
	char *p = malloc(size + 6 + 2 * CKPT_MAC_LEN);
	if (!p)
		return 0;
	memcpy(p, data, size);
	uint8_t mac[CKPT_MAC_LEN];
	ckpt_seal_labelled(&key, "ursa remote ref v1", p, size, mac);
	size_t n = size;
	memcpy(p + n, "mac ", 4);
	n += 4;
	for (unsigned i = 0; i < CKPT_MAC_LEN; i++, n += 2)
		snprintf(p + n, 3, "%02x", mac[i]);
	p[n++] = '\n';
	one(p, n);
	free(p);
	return 0;
}
