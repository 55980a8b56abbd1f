/*
 * tests/fuzz/fuzz_ckpt_image.c — libFuzzer target for the checkpoint image
 * core (core.img: header + records, ckpt/image.h): any bytes in,
 * ckpt_image_decode() must return cleanly, and an image it accepts must
 * encode again. Replayed over its seed corpus by fuzz_main.c as a unit test.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ckpt_image img;
	memset(&img, 0, sizeof(img));
	struct urs_err err = {{0}};
	int r = ckpt_image_decode(data, size, &img, &err);
	if (r < 0) {
		if (!memchr(err.msg, '\0', sizeof(err.msg)))
			__builtin_trap();
		return 0;
	}
	uint8_t *out = NULL;
	size_t len = 0;
	if (ckpt_image_encode(&img, &out, &len, &err) < 0)
		__builtin_trap(); /* what decodes must encode */
	free(out);
	ckpt_image_free(&img);
	return 0;
}
