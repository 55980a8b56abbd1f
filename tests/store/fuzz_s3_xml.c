/*
 * tests/store/fuzz_s3_xml.c — fuzz target for store/s3_xml.c: the first
 * byte picks the expected reply ('1' Error, '2' Initiate, '3' List,
 * '4' Complete; others modulo 4) and where the rest is split into two
 * feeds; the rest is the reply. A page of 4 keys and a 16 KiB document
 * bound keep the limits in reach. Whatever parses must satisfy the page's
 * invariants (keys inside the arena, NUL-terminated, at most cap).
 * Replayed over tests/store/corpus by tests/fuzz/fuzz_main.c in the unit
 * suite; a libFuzzer binary when clang has libFuzzer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/s3_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct urs_s3_xml x;
	static struct urs_s3_list_page pg;
	static struct urs_s3_reply out;
	static int init;
	if (!init) {
		if (urs_s3_xml_init(&x, 16384) < 0 || urs_s3_list_page_init(&pg, 4) < 0)
			abort();
		init = 1;
	}
	if (size < 2)
		return 0;
	unsigned sel = data[0] >= '1' && data[0] <= '4' ? (unsigned) (data[0] - '1') : data[0];
	enum urs_s3_xml_kind kind = (enum urs_s3_xml_kind)(URS_S3_XML_ERROR + sel % 4);
	size_t split = (size_t) data[1] * (size - 2) / 255;
	data += 2;
	size -= 2;
	out.list = &pg;
	struct urs_err err;
	if (urs_s3_xml_begin(&x, kind, &out) < 0)
		abort();
	urs_s3_xml_feed(&x, data, split);
	urs_s3_xml_feed(&x, data + split, size - split);
	if (urs_s3_xml_end(&x, &err) < 0) {
		if (!err.msg[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	if (out.is_error && !out.code[0])
		abort();
	if (kind == URS_S3_XML_LIST && !out.is_error) {
		if (pg.n > pg.cap || pg.arena_len > pg.arena_cap)
			abort();
		for (uint32_t i = 0; i < pg.n; i++) {
			if (pg.keys[i] < pg.arena || pg.keys[i] >= pg.arena + pg.arena_len ||
			    strlen(pg.keys[i]) > URS_S3_XML_FIELD_MAX)
				abort();
		}
		if (pg.truncated && !pg.next_token[0])
			abort();
	}
	return 0;
}
