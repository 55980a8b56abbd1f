/*
 * net/csum.c — Internet checksum arithmetic (see csum.h). The partial sum
 * adds 32-bit words into a 64-bit accumulator (no carry handling needed for
 * any frame size) and folds once at the end.
 */
#include "net/csum.h"

#include <string.h>

uint32_t urs_csum_partial(const void *buf, size_t len, uint32_t sum)
{
	const uint8_t *p = buf;
	uint64_t acc = sum;
	while (len >= 16) {
		uint32_t w[4];
		memcpy(w, p, 16);
		acc += (uint64_t) w[0] + w[1] + w[2] + w[3];
		p += 16;
		len -= 16;
	}
	while (len >= 4) {
		uint32_t w;
		memcpy(&w, p, 4);
		acc += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t w;
		memcpy(&w, p, 2);
		acc += w;
		p += 2;
		len -= 2;
	}
	if (len) {
		uint16_t w = 0;
		memcpy(&w, p, 1);
		acc += w;
	}
	acc = (acc & 0xffffffffu) + (acc >> 32);
	acc = (acc & 0xffffffffu) + (acc >> 32);
	/* keep the sum small enough that callers can keep adding */
	acc = (acc & 0xffff) + (acc >> 16);
	acc = (acc & 0xffff) + (acc >> 16);
	return (uint32_t) acc;
}

uint32_t urs_csum_pseudo4(const struct in_addr *src, const struct in_addr *dst, uint8_t proto,
			  uint32_t len)
{
	uint32_t sum = urs_csum_partial(src, 4, 0);
	sum = urs_csum_partial(dst, 4, sum);
	uint16_t w[2] = {htons(proto), htons((uint16_t) len)};
	return urs_csum_partial(w, 4, sum);
}

uint32_t urs_csum_pseudo6(const struct in6_addr *src, const struct in6_addr *dst, uint8_t proto,
			  uint32_t len)
{
	uint32_t sum = urs_csum_partial(src, 16, 0);
	sum = urs_csum_partial(dst, 16, sum);
	uint32_t w[2] = {htonl(len), htonl(proto)};
	return urs_csum_partial(w, 8, sum);
}

uint16_t urs_csum_update16(uint16_t check, uint16_t old, uint16_t new_)
{
	/* HC' = ~(~HC + ~m + m') */
	uint32_t sum = (uint16_t) ~check;
	sum += (uint16_t) ~old;
	sum += new_;
	return urs_csum_fold(sum);
}
