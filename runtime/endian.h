/*
 * runtime/endian.h — fixed-order integers in byte buffers, whatever the
 * host's order and alignment: the on-disk and on-wire formats (state files,
 * sealed objects) are little-endian; ttrpc's frame header is big-endian.
 */
#ifndef URSA_RUNTIME_ENDIAN_H
#define URSA_RUNTIME_ENDIAN_H

#include <stdint.h>

/**
 * urs_put_le32() - store @v at @p, little-endian
 * @p: 4 bytes
 * @v: the value
 */
static inline void urs_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

/**
 * urs_put_le64() - store @v at @p, little-endian
 * @p: 8 bytes
 * @v: the value
 */
static inline void urs_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

/**
 * urs_get_le32() - load a little-endian value from @p
 * @p: 4 bytes
 *
 * Return: the value.
 */
static inline uint32_t urs_get_le32(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
	       (uint32_t) p[3] << 24;
}

/**
 * urs_get_le64() - load a little-endian value from @p
 * @p: 8 bytes
 *
 * Return: the value.
 */
static inline uint64_t urs_get_le64(const uint8_t *p)
{
	return (uint64_t) urs_get_le32(p) | (uint64_t) urs_get_le32(p + 4) << 32;
}

/**
 * urs_put_be32() - store @v at @p, big-endian
 * @p: 4 bytes
 * @v: the value
 */
static inline void urs_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) (v >> 24);
	p[1] = (uint8_t) (v >> 16);
	p[2] = (uint8_t) (v >> 8);
	p[3] = (uint8_t) v;
}

/**
 * urs_get_be32() - load a big-endian value from @p
 * @p: 4 bytes
 *
 * Return: the value.
 */
static inline uint32_t urs_get_be32(const uint8_t *p)
{
	return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 |
	       (uint32_t) p[3];
}

#endif
