/*
 * net/csum.h — the Internet checksum (RFC 1071): partial sums over buffers,
 * folding, IPv4/IPv6 pseudo-headers and incremental updates (RFC 1624).
 *
 * Sums are kept in host order over memory read as native 16-bit words, so a
 * folded result stored with memcpy is already in network order; values that
 * are not in memory (protocol, length) are added in network order.
 */
#ifndef URSA_NET_CSUM_H
#define URSA_NET_CSUM_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* Add @len bytes at @buf to the running 32-bit sum @sum (an odd length pads
 * with a zero byte, so only the last piece of a concatenation may be odd). */
uint32_t urs_csum_partial(const void *buf, size_t len, uint32_t sum);

/* Fold to 16 bits WITHOUT complementing (for pseudo-header seeds). */
static inline uint16_t urs_csum_fold_raw(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t) sum;
}

/* Fold and complement: the value to store in a checksum field. */
static inline uint16_t urs_csum_fold(uint32_t sum)
{
	return (uint16_t) ~urs_csum_fold_raw(sum);
}

/* Pseudo-header sums (proto and length in host order; the sum is over the
 * network-order representation). */
uint32_t urs_csum_pseudo4(const struct in_addr *src, const struct in_addr *dst, uint8_t proto,
			  uint32_t len);
uint32_t urs_csum_pseudo6(const struct in6_addr *src, const struct in6_addr *dst, uint8_t proto,
			  uint32_t len);

/* RFC 1624 incremental update of stored checksum @check when a 16-bit word
 * (as read from memory) changes from @old to @new. */
uint16_t urs_csum_update16(uint16_t check, uint16_t old, uint16_t new_);

#endif
