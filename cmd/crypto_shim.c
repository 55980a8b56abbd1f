/*
 * cmd/crypto_shim.c — the eleven libcrypto functions the statefile uses
 * (state/statefile.c: HMAC-SHA256 through EVP_MAC, CRYPTO_memcmp,
 * OPENSSL_cleanse), implemented on actors/sha256.h and linked into the
 * ursa executable only, so that the binary does not load libcrypto.so.3.
 *
 * Why: the dynamic loader's relocation of libcrypto costs every ursa
 * command ~0.9 ms (create, start, state, exec, ...), while the binary
 * needs one MAC: HMAC-SHA256 over the supervisor's checkpoint state
 * (actors/checkpointer.c). Symbols defined in the executable satisfy
 * statefile.c's references before libcrypto is considered, so the linker
 * (--as-needed) leaves libcrypto out. Only what statefile.c asks for is
 * supported — EVP_MAC_fetch("HMAC") with digest "SHA256"; anything else
 * fails the way OpenSSL fails (NULL / 0). Libraries and tests keep the real
 * libcrypto; test_supstate checks this MAC against it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "actors/sha256.h"

struct evp_mac_st {
	int hmac;
};

struct evp_mac_ctx_st {
	struct urs_hmac_sha256 h;
	uint8_t key[64];
	size_t keylen;
	int ready;
};

static struct evp_mac_st hmac_sha256 = {1};

EVP_MAC *EVP_MAC_fetch(OSSL_LIB_CTX *libctx, const char *algorithm, const char *properties)
{
	(void) libctx;
	(void) properties;
	return algorithm && !strcmp(algorithm, "HMAC") ? &hmac_sha256 : NULL;
}

void EVP_MAC_free(EVP_MAC *mac)
{
	(void) mac;
}

EVP_MAC_CTX *EVP_MAC_CTX_new(EVP_MAC *mac)
{
	return mac == &hmac_sha256 ? calloc(1, sizeof(EVP_MAC_CTX)) : NULL;
}

void EVP_MAC_CTX_free(EVP_MAC_CTX *ctx)
{
	if (ctx) {
		explicit_bzero(ctx, sizeof(*ctx));
		free(ctx);
	}
}

OSSL_PARAM OSSL_PARAM_construct_utf8_string(const char *key, char *buf, size_t bsize)
{
	OSSL_PARAM p = {key, OSSL_PARAM_UTF8_STRING, buf, bsize ? bsize : strlen(buf),
			OSSL_PARAM_UNMODIFIED};
	return p;
}

OSSL_PARAM OSSL_PARAM_construct_end(void)
{
	OSSL_PARAM p = {NULL, 0, NULL, 0, 0};
	return p;
}

int EVP_MAC_init(EVP_MAC_CTX *ctx, const unsigned char *key, size_t keylen,
		 const OSSL_PARAM params[])
{
	for (const OSSL_PARAM *p = params; p && p->key; p++)
		if (!strcmp(p->key, OSSL_MAC_PARAM_DIGEST) &&
		    (p->data_type != OSSL_PARAM_UTF8_STRING || strcmp(p->data, "SHA256")))
			return 0; /* only the digest statefile.c uses */
	if (key) {
		if (keylen > sizeof(ctx->key))
			return 0;
		memcpy(ctx->key, key, keylen);
		ctx->keylen = keylen;
	}
	urs_hmac_sha256_init(&ctx->h, ctx->key, ctx->keylen);
	ctx->ready = 1;
	return 1;
}

int EVP_MAC_update(EVP_MAC_CTX *ctx, const unsigned char *data, size_t datalen)
{
	if (!ctx->ready)
		return 0;
	urs_hmac_sha256_update(&ctx->h, data, datalen);
	return 1;
}

int EVP_MAC_final(EVP_MAC_CTX *ctx, unsigned char *out, size_t *outl, size_t outsize)
{
	if (!ctx->ready || outsize < 32)
		return 0;
	urs_hmac_sha256_final(&ctx->h, out);
	ctx->ready = 0;
	if (outl)
		*outl = 32;
	return 1;
}

int CRYPTO_memcmp(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;
	for (size_t i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d;
}

void OPENSSL_cleanse(void *ptr, size_t len)
{
	explicit_bzero(ptr, len);
}
