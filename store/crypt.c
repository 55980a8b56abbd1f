/*
 * store/crypt.c — sealed objects (store/crypt.h): the header, the image key
 * by HKDF-SHA256 (on state/sha256.h's HMAC), chunks by libcrypto's
 * AES-256-GCM. One EVP context per image, keyed once; each chunk only sets
 * its nonce, so sealing allocates nothing.
 */
#include "runtime/endian.h"
#include "store/crypt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/evp.h>

#include "state/sha256.h"

static const char MAGIC[8] = "URSAOBJ1";
#define VERSION 2u

struct urs_crypt {
	uint8_t id[URS_CRYPT_ID_LEN];
	uint8_t place[URS_CRYPT_PLACE_LEN];
	EVP_CIPHER_CTX *enc, *dec;
};

#define INFO "ursa object key v2" /* with its NUL, then the place */

/* RFC 5869 with one block of output: PRK = HMAC(salt, ikm), OKM = HMAC(PRK,
 * info | 1), info = INFO | NUL | @place */
static void hkdf32(const uint8_t *ikm, size_t ikm_len, const uint8_t *salt, size_t salt_len,
		   const char *place, uint8_t out[32])
{
	struct urs_hmac_sha256 h;
	uint8_t prk[32], one = 1;
	urs_hmac_sha256_init(&h, salt, salt_len);
	urs_hmac_sha256_update(&h, ikm, ikm_len);
	urs_hmac_sha256_final(&h, prk);
	urs_hmac_sha256_init(&h, prk, sizeof(prk));
	urs_hmac_sha256_update(&h, INFO, sizeof(INFO));
	urs_hmac_sha256_update(&h, place, strlen(place));
	urs_hmac_sha256_update(&h, &one, 1);
	urs_hmac_sha256_final(&h, out);
	explicit_bzero(prk, sizeof(prk));
}

/* what an object's header says of its place: the first URS_CRYPT_PLACE_LEN
 * bytes of SHA-256(@place) */
static void place_hash(const char *place, uint8_t out[URS_CRYPT_PLACE_LEN])
{
	struct urs_sha256 h;
	uint8_t d[32];
	urs_sha256_init(&h);
	urs_sha256_update(&h, place, strlen(place));
	urs_sha256_final(&h, d);
	memcpy(out, d, URS_CRYPT_PLACE_LEN);
}

int urs_crypt_new(const uint8_t master[URS_CRYPT_KEY_LEN], const uint8_t id[URS_CRYPT_ID_LEN],
		  const char *place, struct urs_crypt **out, struct urs_err *err)
{
	struct urs_crypt *c = calloc(1, sizeof(*c));
	uint8_t key[32];
	if (!c)
		return urs_err_set(err, -ENOMEM, "sealing: out of memory");
	memcpy(c->id, id, URS_CRYPT_ID_LEN);
	place_hash(place, c->place);
	hkdf32(master, URS_CRYPT_KEY_LEN, id, URS_CRYPT_ID_LEN, place, key);
	c->enc = EVP_CIPHER_CTX_new();
	c->dec = EVP_CIPHER_CTX_new();
	int ok = c->enc && c->dec &&
		 EVP_EncryptInit_ex(c->enc, EVP_aes_256_gcm(), NULL, key, NULL) == 1 &&
		 EVP_DecryptInit_ex(c->dec, EVP_aes_256_gcm(), NULL, key, NULL) == 1;
	explicit_bzero(key, sizeof(key));
	if (!ok) {
		urs_crypt_free(c);
		return urs_err_set(err, -ENOMEM,
				   "sealing: libcrypto refused an AES-256-GCM context");
	}
	*out = c;
	return 0;
}

void urs_crypt_free(struct urs_crypt *c)
{
	if (!c)
		return;
	EVP_CIPHER_CTX_free(c->enc); /* (wipes its key schedule) */
	EVP_CIPHER_CTX_free(c->dec);
	explicit_bzero(c, sizeof(*c));
	free(c);
}

static void hdr_bytes(const struct urs_crypt *c, uint32_t obj, uint8_t *out)
{
	memcpy(out, MAGIC, 8);
	urs_put_le32(out + 8, VERSION);
	urs_put_le32(out + 12, URS_CRYPT_CHUNK);
	memcpy(out + 16, c->id, URS_CRYPT_ID_LEN);
	urs_put_le32(out + 48, obj);
	memcpy(out + 52, c->place, URS_CRYPT_PLACE_LEN);
}

void urs_crypt_hdr_write(const struct urs_crypt *c, uint32_t obj, uint8_t out[URS_CRYPT_HDR_LEN])
{
	hdr_bytes(c, obj, out);
}

int urs_crypt_hdr_parse(const void *p, size_t n, const char *place, struct urs_crypt_hdr *h,
			struct urs_err *err)
{
	const uint8_t *b = p;
	if (n < URS_CRYPT_HDR_LEN || memcmp(b, MAGIC, 8))
		return urs_err_set(err, -EBADMSG, "not a sealed ursa object (no header)");
	if (urs_get_le32(b + 8) == 1)
		return urs_err_set(
			err, -EBADMSG,
			"a sealed object of version 1, made by an ursa before images were "
			"bound to their prefix (this ursa reads version %u): restore it "
			"with that ursa and checkpoint it again",
			VERSION);
	if (urs_get_le32(b + 8) != VERSION)
		return urs_err_set(err, -EBADMSG,
				   "a sealed object of version %u (this ursa reads version %u)",
				   urs_get_le32(b + 8), VERSION);
	if (urs_get_le32(b + 12) != URS_CRYPT_CHUNK)
		return urs_err_set(err, -EBADMSG, "a sealed object with a corrupted header");
	memcpy(h->id, b + 16, URS_CRYPT_ID_LEN);
	h->obj = urs_get_le32(b + 48);
	uint8_t want[URS_CRYPT_PLACE_LEN];
	if (place) /* (what the header says is authenticated with the first chunk) */
		place_hash(place, want);
	if (place && memcmp(b + 52, want, sizeof(want)))
		return urs_err_set(err, -EBADMSG,
				   "sealed for another place in the store (copied or moved "
				   "here from another prefix): an image opens only under the "
				   "prefix it was checkpointed to");
	return 0;
}

uint64_t urs_crypt_sealed_len(uint64_t plain)
{
	uint64_t chunks = plain / URS_CRYPT_CHUNK + 1; /* a full last chunk is followed
							  by none: see below */
	if (plain && plain % URS_CRYPT_CHUNK == 0)
		chunks--;
	return URS_CRYPT_HDR_LEN + plain + chunks * URS_CRYPT_TAG_LEN;
}

static void nonce_aad(const struct urs_crypt *c, uint32_t obj, uint64_t idx, bool last,
		      uint8_t nonce[12], uint8_t aad[URS_CRYPT_HDR_LEN + 9])
{
	urs_put_le32(nonce, obj);
	urs_put_le64(nonce + 4, idx);
	hdr_bytes(c, obj, aad);
	urs_put_le64(aad + URS_CRYPT_HDR_LEN, idx);
	aad[URS_CRYPT_HDR_LEN + 8] = last;
}

int urs_crypt_seal(struct urs_crypt *c, uint32_t obj, uint64_t idx, bool last, const void *in,
		   size_t n, uint8_t *out)
{
	uint8_t nonce[12], aad[URS_CRYPT_HDR_LEN + 9];
	int len = 0, fin = 0;
	if (n > URS_CRYPT_CHUNK)
		return -EINVAL;
	nonce_aad(c, obj, idx, last, nonce, aad);
	if (EVP_EncryptInit_ex(c->enc, NULL, NULL, NULL, nonce) != 1 ||
	    EVP_EncryptUpdate(c->enc, NULL, &len, aad, sizeof(aad)) != 1 ||
	    EVP_EncryptUpdate(c->enc, out, &len, in, (int) n) != 1 ||
	    EVP_EncryptFinal_ex(c->enc, out + len, &fin) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c->enc, EVP_CTRL_GCM_GET_TAG, URS_CRYPT_TAG_LEN, out + n) != 1)
		return -EIO;
	return 0;
}

int urs_crypt_open(struct urs_crypt *c, uint32_t obj, uint64_t idx, bool last, const uint8_t *in,
		   size_t n, uint8_t *out)
{
	uint8_t nonce[12], aad[URS_CRYPT_HDR_LEN + 9], tag[URS_CRYPT_TAG_LEN];
	int len = 0, fin = 0;
	if (n > URS_CRYPT_CHUNK)
		return -EBADMSG;
	memcpy(tag, in + n, sizeof(tag)); /* before @out (maybe @in) is written */
	nonce_aad(c, obj, idx, last, nonce, aad);
	if (EVP_DecryptInit_ex(c->dec, NULL, NULL, NULL, nonce) != 1 ||
	    EVP_DecryptUpdate(c->dec, NULL, &len, aad, sizeof(aad)) != 1 ||
	    EVP_DecryptUpdate(c->dec, out, &len, in, (int) n) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c->dec, EVP_CTRL_GCM_SET_TAG, URS_CRYPT_TAG_LEN, tag) != 1 ||
	    EVP_DecryptFinal_ex(c->dec, out + len, &fin) != 1)
		return -EBADMSG;
	return 0;
}

int urs_crypt_random_id(uint8_t id[URS_CRYPT_ID_LEN])
{
	return getrandom(id, URS_CRYPT_ID_LEN, 0) == (ssize_t) URS_CRYPT_ID_LEN ? 0 : -EIO;
}
