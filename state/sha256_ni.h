/*
 * state/sha256_ni.h — SHA-256 blocks on the x86 SHA extensions, for
 * state/sha256.c (which picks them when the CPU has them).
 */
#ifndef URSA_STATE_SHA256_NI_H
#define URSA_STATE_SHA256_NI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * urs_sha256_ni_available() - does this CPU have SHA-NI (and SSE4.1, SSSE3)
 *
 * Return: true if urs_sha256_ni_blocks() may be called.
 */
bool urs_sha256_ni_available(void);

/**
 * urs_sha256_ni_blocks() - compress @nblocks 64-byte blocks into @h
 * @h: the eight state words
 * @p: the blocks
 * @nblocks: how many
 * @k: the 64 round constants
 */
void urs_sha256_ni_blocks(uint32_t h[8], const uint8_t *p, size_t nblocks, const uint32_t k[64]);

#endif
