/*
 * state/sha256.c — SHA-256 and HMAC-SHA256; see sha256.h.
 */
#include "state/sha256.h"

#include <stdatomic.h>
#include <string.h>

#include "state/sha256_ni.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static void block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t) p[4 * i] << 24 | (uint32_t) p[4 * i + 1] << 16 |
		       (uint32_t) p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) +
			      K[i] + w[i];
		uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += k;
}

/* SHA-NI when the CPU has it (state/sha256_ni.c), probed once: 0 unknown,
 * 1 yes, -1 no (or turned off by urs_sha256_use_ni(false)) */
static _Atomic int use_ni;

void urs_sha256_use_ni(bool on)
{
	atomic_store(&use_ni, on && urs_sha256_ni_available() ? 1 : -1);
}

bool urs_sha256_ni(void)
{
	int u = atomic_load(&use_ni);
	if (!u) {
		u = urs_sha256_ni_available() ? 1 : -1;
		atomic_store(&use_ni, u);
	}
	return u > 0;
}

static void blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
	if (urs_sha256_ni()) {
		urs_sha256_ni_blocks(h, p, n, K);
		return;
	}
	for (; n; n--, p += 64)
		block(h, p);
}

void urs_sha256_init(struct urs_sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->fill = 0;
}

void urs_sha256_update(struct urs_sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	s->len += n;
	if (s->fill) {
		size_t k = 64 - s->fill < n ? 64 - s->fill : n;
		memcpy(s->buf + s->fill, p, k);
		s->fill += (uint32_t) k;
		p += k;
		n -= k;
		if (s->fill < 64)
			return;
		blocks(s->h, s->buf, 1);
		s->fill = 0;
	}
	size_t nb = n / 64;
	if (nb)
		blocks(s->h, p, nb);
	p += nb * 64;
	n -= nb * 64;
	memcpy(s->buf, p, n);
	s->fill = (uint32_t) n;
}

void urs_sha256_final(struct urs_sha256 *s, uint8_t out[32])
{
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = {0x80};
	size_t np = (s->fill < 56 ? 56 : 120) - s->fill;
	for (int i = 0; i < 8; i++)
		pad[np + (size_t) i] = (uint8_t) (bits >> (56 - 8 * i));
	urs_sha256_update(s, pad, np + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t) (s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t) (s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t) (s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t) s->h[i];
	}
}

void urs_hmac_sha256_init(struct urs_hmac_sha256 *h, const void *key, size_t keylen)
{
	uint8_t k[64] = {0}, pad[64];
	if (keylen > 64) {
		struct urs_sha256 s;
		urs_sha256_init(&s);
		urs_sha256_update(&s, key, keylen);
		urs_sha256_final(&s, k);
	} else if (keylen) {
		memcpy(k, key, keylen);
	}
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	urs_sha256_init(&h->in);
	urs_sha256_update(&h->in, pad, 64);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	urs_sha256_init(&h->out);
	urs_sha256_update(&h->out, pad, 64);
	explicit_bzero(k, sizeof(k));
	explicit_bzero(pad, sizeof(pad));
}

void urs_hmac_sha256_update(struct urs_hmac_sha256 *h, const void *p, size_t n)
{
	urs_sha256_update(&h->in, p, n);
}

void urs_hmac_sha256_final(struct urs_hmac_sha256 *h, uint8_t out[32])
{
	uint8_t inner[32];
	urs_sha256_final(&h->in, inner);
	urs_sha256_update(&h->out, inner, 32);
	urs_sha256_final(&h->out, out);
	explicit_bzero(h, sizeof(*h));
}
