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

/**
 * urs_csum_partial() - add @len bytes at @buf to the running sum @sum
 * @buf: the bytes, read as native 16-bit words (any alignment)
 * @len: their count; an odd length pads with a zero byte, so only the last
 *       piece of a concatenation may be odd
 * @sum: the running 32-bit sum (0 to start)
 *
 * Return: the new sum, folded to 16 bits but not complemented (more can be
 * added to it).
 */
uint32_t urs_csum_partial(const void *buf, size_t len, uint32_t sum);

/**
 * urs_csum_fold_raw() - fold to 16 bits WITHOUT complementing
 * @sum: a running sum
 *
 * For pseudo-header seeds (a value to add, not to store).
 *
 * Return: the folded sum.
 */
static inline uint16_t urs_csum_fold_raw(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t) sum;
}

/**
 * urs_csum_fold() - fold and complement
 * @sum: the running sum over everything the checksum covers
 *
 * Return: the value to store in a checksum field (with memcpy: it is
 * already in network order).
 */
static inline uint16_t urs_csum_fold(uint32_t sum)
{
	return (uint16_t) ~urs_csum_fold_raw(sum);
}

/**
 * urs_csum_pseudo4() - the sum of an IPv4 pseudo-header
 * @src: source address (network order, as in the header)
 * @dst: destination address
 * @proto: IPPROTO_*, in host order
 * @len: L4 length (header + payload), in host order (16 bits used)
 *
 * The sum is over the network-order representation.
 *
 * Return: the running sum, to seed urs_csum_partial() over the L4 bytes.
 */
uint32_t urs_csum_pseudo4(const struct in_addr *src, const struct in_addr *dst, uint8_t proto,
			  uint32_t len);

/**
 * urs_csum_pseudo6() - the sum of an IPv6 pseudo-header (RFC 8200 8.1)
 * @src: source address
 * @dst: destination address
 * @proto: the upper-layer protocol (IPPROTO_*), in host order
 * @len: upper-layer length, in host order
 *
 * The sum is over the network-order representation.
 *
 * Return: the running sum, to seed urs_csum_partial() over the L4 bytes.
 */
uint32_t urs_csum_pseudo6(const struct in6_addr *src, const struct in6_addr *dst, uint8_t proto,
			  uint32_t len);

/**
 * urs_csum_update16() - RFC 1624 incremental update of a stored checksum
 * @check: the checksum field as stored
 * @old: the 16-bit word it covered (as read from memory)
 * @new_: what that word becomes
 *
 * Return: the checksum to store instead.
 */
uint16_t urs_csum_update16(uint16_t check, uint16_t old, uint16_t new_);

#endif
