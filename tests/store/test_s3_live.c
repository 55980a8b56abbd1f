/*
 * tests/store/test_s3_live.c — the S3 client against a real s3rver 3.7.1,
 * started by tests/store/live.sh, which also starts tests/store/s3proxy.py
 * in front of it and passes both addresses:
 *   S3_DIRECT  s3rver itself
 *   S3_PROXY   the proxy: checks SigV4, x-amz-content-sha256 and
 *              Content-MD5 (s3rver checks none of them) and injects the
 *              faults a test arms through its control path
 *   S3_BUCKET  a bucket s3rver was started with
 * Every request runs on an ursa loop (urs_loop_run until the client has no
 * request left); nothing sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <zlib.h>

#include "runtime/loop.h"
#include "runtime/timer.h"
#include "store/md5.h"
#include "store/s3.h"
#include "tests/lib/skip.h"

static struct urs_loop loop;
static const char *bucket, *direct, *proxy;

struct done {
	int res, calls;
};

static void on_done(struct urs_s3_req *r, int res)
{
	struct done *d = r->arg;
	d->res = res;
	d->calls++;
}

static struct urs_s3_client *client_sum(const char *endpoint, const char *key, const char *secret,
					const struct urs_s3_opts *o, enum urs_s3_sum sum)
{
	struct urs_s3_conf conf = {.sum = sum};
	snprintf(conf.access_key, sizeof(conf.access_key), "%s", key);
	snprintf(conf.secret_key, sizeof(conf.secret_key), "%s", secret);
	snprintf(conf.region, sizeof(conf.region), "us-east-1");
	snprintf(conf.endpoint, sizeof(conf.endpoint), "%s", endpoint);
	conf.path_style = true;
	struct urs_s3_opts def = {
		.backoff_base_ms = 10, .backoff_max_ms = 100, .check_etag_md5 = true};
	struct urs_s3_client *c = NULL;
	struct urs_err err = {{0}};
	int r = urs_s3_client_new(&loop, &conf, o ? o : &def, &c, &err);
	if (r < 0)
		fail_msg("client: %s", err.msg);
	return c;
}

static struct urs_s3_client *client(const char *endpoint, const char *key, const char *secret,
				    const struct urs_s3_opts *o)
{
	return client_sum(endpoint, key, secret, o, URS_S3_SUM_MD5);
}

static void close_client(struct urs_s3_client *c)
{
	assert_int_equal(urs_s3_client_close(c), 0);
	assert_int_equal(urs_loop_run(&loop), 0); /* lets the client free itself */
}

/* Submit and run the loop until the request is done; its result. */
static int run(struct urs_s3_client *c, struct urs_s3_req *r)
{
	struct done d = {0};
	r->cb = on_done;
	r->arg = &d;
	int e = urs_s3_submit(c, r);
	if (e < 0)
		return e;
	assert_int_equal(urs_loop_run(&loop), 0);
	assert_int_equal(d.calls, 1);
	if (d.res < 0)
		print_message("        (expected or not: %s)\n", r->err.msg);
	return d.res;
}

/* The proxy's control path (plain blocking curl: test plumbing, not the client). */
static size_t sink(char *p, size_t s, size_t n, void *ud)
{
	char *out = ud;
	size_t len = strlen(out), k = s * n < 255 - len ? s * n : 255 - len;
	memcpy(out + len, p, k);
	out[len + k] = 0;
	return s * n;
}

static void proxy_ctl(const char *what, char out[256])
{
	char url[512];
	snprintf(url, sizeof(url), "%s/__%s", proxy, what);
	out[0] = 0;
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
	assert_int_equal(curl_easy_perform(e), CURLE_OK);
	curl_easy_cleanup(e);
}

static long stat_of(const char *stats, const char *name)
{
	const char *p = strstr(stats, name);
	assert_non_null(p);
	return strtol(p + strlen(name) + 1, NULL, 10);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t) (seed >> 16);
	}
}

static int put(struct urs_s3_client *c, const char *key, const void *p, size_t n)
{
	struct urs_s3_req r = {
		.op = URS_S3_PUT, .bucket = bucket, .key = key, .body = p, .body_len = n};
	return run(c, &r);
}

/* PUT, GET, ranged GET, HEAD, DELETE through the verifying proxy; keys
 * with characters that need encoding are signed as S3 canonicalizes them. */
static void test_object_roundtrip(void **state)
{
	(void) state;
	struct urs_s3_client *c = client(proxy, "S3RVER", "S3RVER", NULL);
	static const char *const keys[] = {"plain.bin", "dir/sub dir/a+b=c&d%e~f.bin",
					   "unicode/\xc3\xa9t\xc3\xa9.bin"};
	uint8_t data[3000], back[4096];
	fill(data, sizeof(data), 7);
	for (size_t k = 0; k < URS_ARRAY_SIZE(keys); k++) {
		struct urs_s3_req p = {.op = URS_S3_PUT,
				       .bucket = bucket,
				       .key = keys[k],
				       .body = data,
				       .body_len = sizeof(data)};
		assert_int_equal(run(c, &p), 0);
		assert_int_equal(p.status, 200);
		uint8_t md5[16];
		char want[40];
		urs_md5(data, sizeof(data), md5);
		for (int i = 0; i < 16; i++)
			sprintf(want + 2 * i, "%02x", md5[i]);
		assert_non_null(strstr(p.etag, want)); /* s3rver's ETag: the MD5 */

		struct urs_s3_req g = {.op = URS_S3_GET,
				       .bucket = bucket,
				       .key = keys[k],
				       .buf = back,
				       .buf_cap = sizeof(back)};
		assert_int_equal(run(c, &g), 0);
		assert_int_equal(g.len, sizeof(data));
		assert_memory_equal(back, data, sizeof(data));

		struct urs_s3_req rg = {.op = URS_S3_GET,
					.bucket = bucket,
					.key = keys[k],
					.buf = back,
					.buf_cap = sizeof(back),
					.range_off = 1000,
					.range_len = 777};
		assert_int_equal(run(c, &rg), 0);
		assert_int_equal(rg.status, 206);
		assert_int_equal(rg.len, 777);
		assert_int_equal(rg.object_size, sizeof(data));
		assert_memory_equal(back, data + 1000, 777);

		struct urs_s3_req h = {.op = URS_S3_HEAD, .bucket = bucket, .key = keys[k]};
		assert_int_equal(run(c, &h), 0);
		assert_int_equal(h.object_size, sizeof(data));
		assert_string_equal(h.etag, p.etag);
	}
	/* a buffer too small is the caller's error, not retried */
	struct urs_s3_req small = {
		.op = URS_S3_GET, .bucket = bucket, .key = keys[0], .buf = back, .buf_cap = 100};
	assert_int_equal(run(c, &small), -EMSGSIZE);
	assert_int_equal(small.attempts, 1);
	assert_non_null(strstr(small.err.msg, "100-byte buffer"));

	for (size_t k = 0; k < URS_ARRAY_SIZE(keys); k++) {
		struct urs_s3_req d = {.op = URS_S3_DELETE, .bucket = bucket, .key = keys[k]};
		assert_int_equal(run(c, &d), 0);
		assert_int_equal(d.status, 204);
	}
	struct urs_s3_req g = {.op = URS_S3_GET,
			       .bucket = bucket,
			       .key = keys[1],
			       .buf = back,
			       .buf_cap = sizeof(back)};
	assert_int_equal(run(c, &g), -ENOENT);
	assert_int_equal(g.attempts, 1); /* 4xx: never retried */
	assert_non_null(strstr(g.err.msg, "GetObject"));
	assert_non_null(strstr(g.err.msg, bucket));
	assert_non_null(strstr(g.err.msg, "sub dir"));
	assert_non_null(strstr(g.err.msg, "HTTP 404 NoSuchKey"));
	struct urs_s3_req h = {.op = URS_S3_HEAD, .bucket = bucket, .key = keys[0]};
	assert_int_equal(run(c, &h), -ENOENT);
	assert_non_null(strstr(h.err.msg, "HeadObject"));
	assert_non_null(strstr(h.err.msg, "HTTP 404"));
	char st[256];
	proxy_ctl("stats", st);
	assert_int_equal(stat_of(st, "sig_bad"), 0);
	close_client(c);
}

/* ListObjectsV2 pages of 2 with continuation tokens, a prefix, sizes. */
static void test_list(void **state)
{
	(void) state;
	struct urs_s3_client *c = client(proxy, "S3RVER", "S3RVER", NULL);
	char key[64];
	uint8_t data[64] = {0};
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "list/k%d", i);
		assert_int_equal(put(c, key, data, (size_t) i + 1), 0);
	}
	assert_int_equal(put(c, "listing-not/x", data, 1), 0);
	struct urs_s3_list_page pg;
	assert_int_equal(urs_s3_list_page_init(&pg, 2), 0);
	char token[URS_S3_XML_FIELD_MAX + 1] = "";
	int seen = 0, pages = 0;
	do {
		struct urs_s3_req l = {.op = URS_S3_LIST,
				       .bucket = bucket,
				       .prefix = "list/",
				       .token = token[0] ? token : NULL,
				       .page = &pg};
		assert_int_equal(run(c, &l), 0);
		assert_true(pg.n <= 2);
		for (uint32_t i = 0; i < pg.n; i++, seen++) {
			snprintf(key, sizeof(key), "list/k%d", seen);
			assert_string_equal(pg.keys[i], key);
			assert_int_equal(pg.sizes[i], seen + 1);
		}
		snprintf(token, sizeof(token), "%s", pg.next_token);
		pages++;
	} while (pg.truncated && pages < 10);
	assert_int_equal(seen, 5);
	assert_int_equal(pages, 3);
	urs_s3_list_page_fini(&pg);
	close_client(c);
}

#define PART (5u << 20)

/* CreateMultipartUpload, three parts of >= 5 MiB in flight together,
 * CompleteMultipartUpload, then the object read back whole and across a
 * part boundary. */
static void test_multipart(void **state)
{
	(void) state;
	struct urs_s3_opts o = {.max_inflight = 4, .backoff_base_ms = 10, .check_etag_md5 = true};
	struct urs_s3_client *c = client(proxy, "S3RVER", "S3RVER", &o);
	const char *key = "mpu/three-parts.bin";
	size_t sizes[3] = {PART, PART + 4096, PART + 123}, total = sizes[0] + sizes[1] + sizes[2];
	uint8_t *data = malloc(total), *back = malloc(total);
	assert_non_null(data);
	assert_non_null(back);
	fill(data, total, 42);

	struct urs_s3_req cr = {.op = URS_S3_MPU_CREATE, .bucket = bucket, .key = key};
	assert_int_equal(run(c, &cr), 0);
	assert_true(strlen(cr.upload_id_out) > 0);

	struct urs_s3_req pr[3];
	struct done d[3] = {{0}};
	size_t off = 0;
	uint64_t t0 = urs_now_ns(); /* from submission: the hashing is done there */
	for (int i = 0; i < 3; i++) {
		pr[i] = (struct urs_s3_req){.op = URS_S3_MPU_PART,
					    .bucket = bucket,
					    .key = key,
					    .upload_id = cr.upload_id_out,
					    .part_number = (uint32_t) i + 1,
					    .body = data + off,
					    .body_len = sizes[i],
					    .cb = on_done,
					    .arg = &d[i]};
		off += sizes[i];
		assert_int_equal(urs_s3_submit(c, &pr[i]), 0);
	}
	assert_int_equal(urs_loop_run(&loop), 0);
	double secs = (double) (urs_now_ns() - t0) / 1e9;
	print_message(
		"        3 parts, %.1f MiB in %.3f s (%.0f MiB/s: hashing, s3proxy, s3rver)\n",
		(double) total / (1 << 20), secs, (double) total / (1 << 20) / secs);
	struct urs_s3_part parts[3];
	for (int i = 0; i < 3; i++) {
		assert_int_equal(d[i].calls, 1);
		if (d[i].res)
			fail_msg("part %d: %s", i + 1, pr[i].err.msg);
		parts[i].number = (uint32_t) i + 1;
		snprintf(parts[i].etag, sizeof(parts[i].etag), "%s", pr[i].etag);
	}
	print_message("        peak transfers in flight: %u\n",
		      urs_s3_client_stats(c)->peak_inflight);
	assert_true(urs_s3_client_stats(c)->peak_inflight >= 3);

	struct urs_s3_req co = {.op = URS_S3_MPU_COMPLETE,
				.bucket = bucket,
				.key = key,
				.upload_id = cr.upload_id_out,
				.parts = parts,
				.nparts = 3};
	assert_int_equal(run(c, &co), 0);
	assert_true(co.etag[0]);

	struct urs_s3_req h = {.op = URS_S3_HEAD, .bucket = bucket, .key = key};
	assert_int_equal(run(c, &h), 0);
	assert_int_equal(h.object_size, total);
	struct urs_s3_req g = {
		.op = URS_S3_GET, .bucket = bucket, .key = key, .buf = back, .buf_cap = total};
	assert_int_equal(run(c, &g), 0);
	assert_int_equal(g.len, total);
	assert_memory_equal(back, data, total);
	struct urs_s3_req rg = {.op = URS_S3_GET,
				.bucket = bucket,
				.key = key,
				.buf = back,
				.buf_cap = total,
				.range_off = PART - 10,
				.range_len = 20};
	assert_int_equal(run(c, &rg), 0);
	assert_memory_equal(back, data + PART - 10, 20);
	struct urs_s3_req del = {.op = URS_S3_DELETE, .bucket = bucket, .key = key};
	assert_int_equal(run(c, &del), 0);
	free(data);
	free(back);
	close_client(c);
}

/* AbortMultipartUpload: the request is correctly formed and signed (the
 * proxy checks it). s3rver 3.7.1 does not implement it (405), so the proxy
 * answers it as S3 does (tests/store/s3proxy.py): 204, the upload no
 * longer open; a second abort of it: 404 NoSuchUpload, -ENOENT, not
 * retried. */
static void test_abort(void **state)
{
	(void) state;
	struct urs_s3_client *c = client(proxy, "S3RVER", "S3RVER", NULL);
	const char *key = "mpu/aborted.bin";
	static uint8_t part[PART];
	struct urs_s3_req cr = {.op = URS_S3_MPU_CREATE, .bucket = bucket, .key = key};
	assert_int_equal(run(c, &cr), 0);
	struct urs_s3_req p = {.op = URS_S3_MPU_PART,
			       .bucket = bucket,
			       .key = key,
			       .upload_id = cr.upload_id_out,
			       .part_number = 1,
			       .body = part,
			       .body_len = sizeof(part)};
	assert_int_equal(run(c, &p), 0);
	char st[256];
	proxy_ctl("stats", st);
	long open0 = stat_of(st, "mpu_open"), aborted0 = stat_of(st, "aborted");
	assert_true(open0 >= 1);
	struct urs_s3_req a = {.op = URS_S3_MPU_ABORT,
			       .bucket = bucket,
			       .key = key,
			       .upload_id = cr.upload_id_out};
	assert_int_equal(run(c, &a), 0);
	proxy_ctl("stats", st);
	assert_int_equal(stat_of(st, "sig_bad"), 0); /* signed right */
	assert_int_equal(stat_of(st, "aborted"), aborted0 + 1);
	assert_int_equal(stat_of(st, "mpu_open"), open0 - 1);
	struct urs_s3_req again = a;
	assert_int_equal(run(c, &again), -ENOENT);
	assert_int_equal(again.attempts, 1);
	assert_non_null(strstr(again.err.msg, "AbortMultipartUpload"));
	assert_non_null(strstr(again.err.msg, "NoSuchUpload"));
	close_client(c);
}

/* Wrong credentials. s3rver knows one access key id (S3RVER) and refuses
 * others; it does not verify SigV4 signatures, so a wrong secret passes
 * it — the proxy's verifier refuses that one. Neither is retried. */
static void test_credentials(void **state)
{
	(void) state;
	uint8_t data[16] = {1};
	struct urs_s3_client *c = client(direct, "NOSUCHKEY", "S3RVER", NULL);
	struct urs_s3_req p = {.op = URS_S3_PUT,
			       .bucket = bucket,
			       .key = "cred/x",
			       .body = data,
			       .body_len = sizeof(data)};
	assert_int_equal(run(c, &p), -EACCES);
	assert_int_equal(p.attempts, 1);
	assert_non_null(strstr(p.err.msg, "PutObject"));
	assert_non_null(strstr(p.err.msg, "HTTP 403 InvalidAccessKeyId"));
	close_client(c);

	c = client(proxy, "S3RVER", "wrong-secret", NULL);
	assert_int_equal(run(c, &p), -EACCES);
	assert_int_equal(p.attempts, 1);
	assert_non_null(strstr(p.err.msg, "HTTP 403 SignatureDoesNotMatch"));
	close_client(c);

	c = client(direct, "S3RVER", "wrong-secret", NULL);
	int r = run(c, &p);
	print_message("        s3rver direct, wrong secret: %s\n",
		      r ? p.err.msg : "accepted (s3rver does not verify SigV4 signatures)");
	close_client(c);
}

/* Content-MD5 is what the server checks the body against: a wrong one
 * (given by the caller here) is refused with 400 BadDigest (by the proxy;
 * s3rver ignores the header), not retried. */
static void test_bad_md5(void **state)
{
	(void) state;
	struct urs_s3_client *c = client(proxy, "S3RVER", "S3RVER", NULL);
	uint8_t data[100] = {3}, md5[16] = {0};
	struct urs_s3_req p = {.op = URS_S3_PUT,
			       .bucket = bucket,
			       .key = "md5/x",
			       .body = data,
			       .body_len = sizeof(data),
			       .md5 = md5};
	assert_int_equal(run(c, &p), -EINVAL);
	assert_int_equal(p.attempts, 1);
	assert_non_null(strstr(p.err.msg, "HTTP 400 BadDigest"));
	close_client(c);
}

/* URS_S3_SUM_CRC32: an upload created with x-amz-checksum-algorithm CRC32,
 * each part sent with its x-amz-checksum-crc32 (zlib's crc32 of the body,
 * made by the client), no Content-MD5, CompleteMultipartUpload naming each
 * part's CRC32: the proxy checks all of it as S3 does. A Complete naming a
 * wrong one is refused (400 InvalidPart), a PUT with a wrong one too (400
 * BadDigest); neither is retried. */
static void test_crc32(void **state)
{
	(void) state;
	struct urs_s3_client *c = client_sum(proxy, "S3RVER", "S3RVER", NULL, URS_S3_SUM_CRC32);
	const char *key = "crc/two-parts.bin";
	size_t sizes[2] = {PART, 777}, total = sizes[0] + sizes[1];
	uint8_t *data = malloc(total), *back = malloc(total);
	assert_non_null(data);
	assert_non_null(back);
	fill(data, total, 7);
	char st[256];
	proxy_ctl("clear", st);
	struct urs_s3_req cr = {.op = URS_S3_MPU_CREATE, .bucket = bucket, .key = key};
	assert_int_equal(run(c, &cr), 0);
	struct urs_s3_part parts[2];
	for (uint32_t i = 0, off = 0; i < 2; off += (uint32_t) sizes[i++]) {
		struct urs_s3_req p = {.op = URS_S3_MPU_PART,
				       .bucket = bucket,
				       .key = key,
				       .upload_id = cr.upload_id_out,
				       .part_number = i + 1,
				       .body = data + off,
				       .body_len = sizes[i]};
		assert_int_equal(run(c, &p), 0);
		parts[i] = (struct urs_s3_part){
			.number = i + 1, .crc32 = (uint32_t) crc32_z(0, data + off, sizes[i])};
		snprintf(parts[i].etag, sizeof(parts[i].etag), "%s", p.etag);
	}
	proxy_ctl("stats", st);
	assert_int_equal(stat_of(st, "crc32_ok"), 2);
	assert_int_equal(stat_of(st, "md5_ok"), 0);
	struct urs_s3_req co = {.op = URS_S3_MPU_COMPLETE,
				.bucket = bucket,
				.key = key,
				.upload_id = cr.upload_id_out,
				.parts = parts,
				.nparts = 2};
	parts[1].crc32 ^= 1;
	assert_int_equal(run(c, &co), -EINVAL);
	assert_non_null(strstr(co.err.msg, "HTTP 400 InvalidPart"));
	assert_int_equal(co.attempts, 1);
	parts[1].crc32 ^= 1;
	assert_int_equal(run(c, &co), 0);
	struct urs_s3_req g = {
		.op = URS_S3_GET, .bucket = bucket, .key = key, .buf = back, .buf_cap = total};
	assert_int_equal(run(c, &g), 0);
	assert_int_equal(g.len, total);
	assert_memory_equal(back, data, total);

	uint32_t wrong = (uint32_t) crc32_z(0, data, 100) ^ 0x80;
	struct urs_s3_req p = {.op = URS_S3_PUT,
			       .bucket = bucket,
			       .key = "crc/x",
			       .body = data,
			       .body_len = 100,
			       .crc32 = &wrong};
	assert_int_equal(run(c, &p), -EINVAL);
	assert_int_equal(p.attempts, 1);
	assert_non_null(strstr(p.err.msg, "HTTP 400 BadDigest"));
	free(data);
	free(back);
	close_client(c);
}

/* 5xx and resets are retried with backoff, up to max_retries. */
static void test_retries(void **state)
{
	(void) state;
	struct urs_s3_opts o = {.max_retries = 3, .backoff_base_ms = 10, .backoff_max_ms = 50};
	struct urs_s3_client *c = client(proxy, "S3RVER", "S3RVER", &o);
	char st[256];
	uint8_t data[4096], back[4096];
	fill(data, sizeof(data), 9);

	proxy_ctl("clear", st);
	proxy_ctl("fault?mode=status&status=503&n=2", st);
	struct urs_s3_req p = {.op = URS_S3_PUT,
			       .bucket = bucket,
			       .key = "retry/x",
			       .body = data,
			       .body_len = sizeof(data)};
	assert_int_equal(run(c, &p), 0);
	assert_int_equal(p.attempts, 3);
	proxy_ctl("stats", st);
	assert_int_equal(stat_of(st, "injected"), 2);
	assert_int_equal(stat_of(st, "forwarded"), 1);

	/* a reset: on a connection curl reused it re-sends once by itself
	 * ("Connection died, retrying a fresh connect"), so the reset is
	 * given to a fresh client's first, new connection: our retry */
	struct urs_s3_client *c2 = client(proxy, "S3RVER", "S3RVER", &o);
	proxy_ctl("fault?mode=reset&n=1", st);
	struct urs_s3_req g = {.op = URS_S3_GET,
			       .bucket = bucket,
			       .key = "retry/x",
			       .buf = back,
			       .buf_cap = sizeof(back)};
	assert_int_equal(run(c2, &g), 0);
	assert_int_equal(g.attempts, 2);
	assert_memory_equal(back, data, sizeof(data));
	close_client(c2);
	proxy_ctl("stats", st);
	assert_int_equal(stat_of(st, "injected"), 3);

	proxy_ctl("fault?mode=status&status=500&n=10", st);
	struct urs_s3_req h = {.op = URS_S3_HEAD, .bucket = bucket, .key = "retry/x"};
	assert_int_equal(run(c, &h), -EIO);
	assert_int_equal(h.attempts, 4); /* 1 + max_retries */
	assert_non_null(strstr(h.err.msg, "HTTP 500"));
	assert_non_null(strstr(h.err.msg, "(4 attempts)"));
	proxy_ctl("fault?mode=status&status=500&n=10", st);
	struct urs_s3_req p2 = p;
	assert_int_equal(run(c, &p2), -EIO);
	assert_non_null(strstr(p2.err.msg, "HTTP 500 InternalError: injected by s3proxy"));
	proxy_ctl("clear", st);

	/* a 4xx is final at once: one request reaches the proxy */
	struct urs_s3_req m = {.op = URS_S3_GET,
			       .bucket = bucket,
			       .key = "retry/missing",
			       .buf = back,
			       .buf_cap = sizeof(back)};
	assert_int_equal(run(c, &m), -ENOENT);
	proxy_ctl("stats", st);
	assert_int_equal(stat_of(st, "seen"), 1);
	close_client(c);
}

/* A server that accepts the request and never answers: the attempt times
 * out (timeout_ms) and the retry succeeds. */
static void test_timeout(void **state)
{
	(void) state;
	struct urs_s3_opts o = {.timeout_ms = 3000, .backoff_base_ms = 10}; /* (the retry's
									     * too, under load) */
	struct urs_s3_client *c = client(proxy, "S3RVER", "S3RVER", &o);
	char st[256];
	proxy_ctl("fault?mode=stall&n=1", st);
	struct urs_s3_req h = {.op = URS_S3_HEAD, .bucket = bucket, .key = "retry/x"};
	assert_int_equal(run(c, &h), 0);
	assert_int_equal(h.attempts, 2);
	close_client(c);
}

/* More requests than slots: they queue and all complete. */
static void test_queue(void **state)
{
	(void) state;
	struct urs_s3_opts o = {.max_inflight = 2, .backoff_base_ms = 10};
	struct urs_s3_client *c = client(direct, "S3RVER", "S3RVER", &o);
	enum { N = 24 };
	struct urs_s3_req r[N];
	struct done d[N] = {{0}};
	char keys[N][32];
	uint8_t data[512] = {5};
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "queue/%02d", i);
		r[i] = (struct urs_s3_req){.op = URS_S3_PUT,
					   .bucket = bucket,
					   .key = keys[i],
					   .body = data,
					   .body_len = sizeof(data),
					   .cb = on_done,
					   .arg = &d[i]};
		assert_int_equal(urs_s3_submit(c, &r[i]), 0);
	}
	assert_int_equal(urs_loop_run(&loop), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(d[i].calls, 1);
		assert_int_equal(d[i].res, 0);
	}
	assert_true(urs_s3_client_stats(c)->peak_inflight <= 2);
	print_message("        %u connections for %d requests\n",
		      (unsigned) urs_s3_client_stats(c)->connects, N);
	assert_true(urs_s3_client_stats(c)->connects <= 4); /* kept alive, reused */
	close_client(c);
}

int main(void)
{
	bucket = getenv("S3_BUCKET");
	direct = getenv("S3_DIRECT");
	proxy = getenv("S3_PROXY");
	if (!bucket || !direct || !proxy)
		return urs_skip("run by tests/store/live.sh (S3_BUCKET, S3_DIRECT, S3_PROXY)");
	if (urs_loop_init(&loop, NULL) < 0)
		return urs_skip_or_fail("no io_uring");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object_roundtrip),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_multipart),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_credentials),
		cmocka_unit_test(test_bad_md5),
		cmocka_unit_test(test_crc32),
		cmocka_unit_test(test_retries),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_queue),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	urs_loop_fini(&loop);
	return r;
}
