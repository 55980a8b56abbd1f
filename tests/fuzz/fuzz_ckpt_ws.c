/*
 * tests/fuzz/fuzz_ckpt_ws.c — libFuzzer target for a recorded working set
 * (ckpt/workingset.h), which a restore reads from the image directory or
 * from object storage (a recorded working set, or a hot set inline in an
 * index): any bytes in, ckpt_ws_decode() of either kind returns cleanly;
 * then the same bytes with a valid MAC appended (what only the key's
 * holder can make), to reach the checks behind the MAC: a set it accepts
 * encodes again to the same bytes. Replayed over its seed corpus by
 * fuzz_main.c as a unit test.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/workingset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct ckpt_seal key = {.key = "the fuzzer's key of 32 bytes...."};
static const uint8_t id[16] = "fuzzed image id.";
#define LEN ((uint64_t) 100 * CKPT_WS_BLOCK) /* 13 bytes of bitmap */

static void one(enum ckpt_ws_kind kind, const uint8_t *p, size_t n)
{
	uint8_t bits[16], again[256];
	struct urs_err err = {{0}};
	long r = ckpt_ws_decode(kind, &key, id, LEN, p, n, bits, &err);
	if (r < 0) {
		if (!memchr(err.msg, '\0', sizeof(err.msg)) || (r != -EBADMSG && r != -ESTALE))
			__builtin_trap();
		return;
	}
	if (ckpt_ws_count(bits, LEN) != (uint32_t) r ||
	    ckpt_ws_encode(kind, &key, id, LEN, bits, again) != (long) n ||
	    memcmp(again, p, n - 32))
		__builtin_trap(); /* what decodes must encode, byte for byte */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(CKPT_WS_REC, data, size);
	one(CKPT_WS_HOT, data, size);
	if (size > 4096)
		return 0;
	uint8_t *p = malloc(size + CKPT_MAC_LEN);
	if (!p)
		return 0;
	memcpy(p, data, size);
	/* the MACs ckpt/workingset.c computes, for each kind */
	ckpt_seal_labelled(&key, "ursa workingset v1", p, size, p + size);
	one(CKPT_WS_REC, p, size + CKPT_MAC_LEN);
	one(CKPT_WS_HOT, p, size + CKPT_MAC_LEN);
	ckpt_seal_labelled(&key, "ursa hotset v1", p, size, p + size);
	one(CKPT_WS_REC, p, size + CKPT_MAC_LEN);
	one(CKPT_WS_HOT, p, size + CKPT_MAC_LEN);
	free(p);
	return 0;
}
