/*
 * tests/store/test_s3_xml.c — store/s3_xml.c on replies shaped like S3's
 * (and s3rver's): Error, InitiateMultipartUploadResult, ListBucketResult
 * (keys, sizes, IsTruncated, NextContinuationToken, entities in keys),
 * CompleteMultipartUploadResult, an <Error> inside a 200; fed whole and one
 * byte at a time; and refusals: wrong root, DOCTYPE/entities (billion
 * laughs), oversize field and document, too many keys for the page, deep
 * nesting, missing fields, bad numbers, not well-formed. Also store/md5.c
 * against RFC 1321's test suite.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/md5.h"
#include "store/s3_xml.h"

static struct urs_s3_xml x;
static struct urs_s3_list_page pg;
static struct urs_s3_reply out;
static struct urs_err err;

static int parse(enum urs_s3_xml_kind k, const char *doc)
{
	out.list = &pg;
	err.msg[0] = 0;
	return urs_s3_xml_parse(&x, k, doc, strlen(doc), &out, &err);
}

/* the same document one byte per feed */
static int parse_bytes(enum urs_s3_xml_kind k, const char *doc)
{
	out.list = &pg;
	assert_int_equal(urs_s3_xml_begin(&x, k, &out), 0);
	for (const char *p = doc; *p; p++)
		urs_s3_xml_feed(&x, p, 1);
	return urs_s3_xml_end(&x, &err);
}

static const char list_doc[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Name>b</Name><Prefix>p/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>"
	"<NextContinuationToken>1WxP+/==</NextContinuationToken>"
	"<IsTruncated>true</IsTruncated>"
	"<Contents><Key>p/a</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>"
	"<ETag>&quot;abc&quot;</ETag><Size>0</Size><Owner><ID>x</ID></Owner>"
	"<StorageClass>STANDARD</StorageClass></Contents>"
	"<Contents><Size>18446744073709551615</Size><Key>p/b &amp; &lt;c&gt; \xc3\xa9</Key>"
	"</Contents>"
	"<Contents><Key>p/c</Key><Size>42</Size></Contents>"
	"</ListBucketResult>";

static void check_list(void)
{
	assert_int_equal(pg.n, 3);
	assert_string_equal(pg.keys[0], "p/a");
	assert_string_equal(pg.keys[1], "p/b & <c> \xc3\xa9");
	assert_string_equal(pg.keys[2], "p/c");
	assert_int_equal(pg.sizes[0], 0);
	assert_true(pg.sizes[1] == UINT64_MAX);
	assert_int_equal(pg.sizes[2], 42);
	assert_true(pg.truncated);
	assert_string_equal(pg.next_token, "1WxP+/==");
	assert_false(out.is_error);
}

static void test_list(void **state)
{
	(void) state;
	assert_int_equal(parse(URS_S3_XML_LIST, list_doc), 0);
	check_list();
	assert_int_equal(parse_bytes(URS_S3_XML_LIST, list_doc), 0);
	check_list();
	assert_int_equal(parse(URS_S3_XML_LIST, "<ListBucketResult><IsTruncated>false"
						"</IsTruncated></ListBucketResult>"),
			 0);
	assert_int_equal(pg.n, 0);
	assert_false(pg.truncated);
	assert_string_equal(pg.next_token, "");
}

static void test_error(void **state)
{
	(void) state;
	const char *doc =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
		"<Message>The specified key does not exist.</Message>"
		"<Key>a/b</Key><RequestId>1</RequestId></Error>";
	for (int k = URS_S3_XML_ERROR; k <= URS_S3_XML_COMPLETE; k++) {
		assert_int_equal(parse((enum urs_s3_xml_kind) k, doc), 0);
		assert_true(out.is_error);
		assert_string_equal(out.code, "NoSuchKey");
		assert_string_equal(out.message, "The specified key does not exist.");
	}
	assert_int_equal(parse(URS_S3_XML_ERROR, "<Error><Message>m</Message></Error>"), -EBADMSG);
	assert_non_null(strstr(err.msg, "without <Code>"));
	assert_int_equal(parse(URS_S3_XML_ERROR, "<ListBucketResult/>"), -EBADMSG);
	assert_non_null(strstr(err.msg, "root element <ListBucketResult>, expected <Error>"));
}

static void test_initiate_complete(void **state)
{
	(void) state;
	assert_int_equal(parse(URS_S3_XML_INITIATE,
			       "<InitiateMultipartUploadResult xmlns=\"x\"><Bucket>b</Bucket>"
			       "<Key>k</Key><UploadId>VXBsb2FkIElE</UploadId>"
			       "</InitiateMultipartUploadResult>"),
			 0);
	assert_string_equal(out.upload_id, "VXBsb2FkIElE");
	assert_int_equal(parse(URS_S3_XML_INITIATE, "<InitiateMultipartUploadResult>"
						    "</InitiateMultipartUploadResult>"),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "no <UploadId>"));
	assert_int_equal(parse(URS_S3_XML_COMPLETE,
			       "<CompleteMultipartUploadResult><Location>l</Location>"
			       "<ETag>\"3858f62230ac3c915f300c664312c11f-9\"</ETag>"
			       "</CompleteMultipartUploadResult>"),
			 0);
	assert_string_equal(out.etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
	/* S3 may answer 200 and then an error (the client checks is_error) */
	assert_int_equal(parse(URS_S3_XML_COMPLETE, "\n  <Error><Code>InternalError</Code>"
						    "<Message>m</Message></Error>"),
			 0);
	assert_true(out.is_error);
	assert_string_equal(out.code, "InternalError");
}

static void test_refusals(void **state)
{
	(void) state;
	const char *laughs = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
			     "<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">]>"
			     "<Error><Code>&lol2;</Code></Error>";
	assert_int_equal(parse(URS_S3_XML_ERROR, laughs), -EBADMSG);
	assert_non_null(strstr(err.msg, "DOCTYPE"));
	assert_int_equal(parse(URS_S3_XML_ERROR, "<Error><Code>x</Code>"), -EBADMSG);
	assert_non_null(strstr(err.msg, "not well-formed"));
	assert_int_equal(parse(URS_S3_XML_ERROR, ""), -EBADMSG);
	assert_int_equal(parse(URS_S3_XML_LIST, "<ListBucketResult><Contents><Key>a</Key>"
						"<Size>1x</Size></Contents></ListBucketResult>"),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "<Size> is not a number"));
	assert_int_equal(parse(URS_S3_XML_LIST, "<ListBucketResult><Contents><Key>a</Key>"
						"<Size>18446744073709551616</Size></Contents>"
						"</ListBucketResult>"),
			 -EBADMSG);
	assert_int_equal(parse(URS_S3_XML_LIST, "<ListBucketResult><Contents><Size>1</Size>"
						"</Contents></ListBucketResult>"),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "without <Key>"));
	assert_int_equal(parse(URS_S3_XML_LIST, "<ListBucketResult><IsTruncated>yes"
						"</IsTruncated></ListBucketResult>"),
			 -EBADMSG);
	assert_int_equal(parse(URS_S3_XML_LIST, "<ListBucketResult><IsTruncated>true"
						"</IsTruncated></ListBucketResult>"),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "without <NextContinuationToken>"));
	assert_int_equal(parse(URS_S3_XML_LIST, "<ListBucketResult><Contents><Key>a<b/></Key>"
						"</Contents></ListBucketResult>"),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "inside <Key>"));
	char deep[400] = "<Error>";
	for (int i = 0; i < 20; i++)
		strcat(deep, "<a>");
	assert_int_equal(parse(URS_S3_XML_ERROR, deep), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "nested deeper"));
}

static void test_bounds(void **state)
{
	(void) state;
	size_t n = URS_S3_XML_FIELD_MAX + 100;
	char *doc = malloc(n + 100);
	assert_non_null(doc);
	strcpy(doc, "<ListBucketResult><Contents><Key>");
	memset(doc + strlen(doc), 'k', URS_S3_XML_FIELD_MAX + 1);
	doc[33 + URS_S3_XML_FIELD_MAX + 1] = 0;
	strcat(doc, "</Key></Contents></ListBucketResult>");
	assert_int_equal(parse(URS_S3_XML_LIST, doc), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "<Key> longer than 1024"));
	/* the longest key S3 allows fits */
	strcpy(doc, "<ListBucketResult><Contents><Key>");
	memset(doc + strlen(doc), 'k', URS_S3_XML_FIELD_MAX);
	doc[33 + URS_S3_XML_FIELD_MAX] = 0;
	strcat(doc, "</Key><Size>1</Size></Contents></ListBucketResult>");
	assert_int_equal(parse(URS_S3_XML_LIST, doc), 0);
	assert_int_equal(strlen(pg.keys[0]), URS_S3_XML_FIELD_MAX);
	free(doc);
	/* Code is kept in 63 bytes */
	assert_int_equal(parse(URS_S3_XML_ERROR,
			       "<Error><Code>"
			       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			       "</Code></Error>"),
			 -EMSGSIZE);
	/* more keys than the page holds */
	struct urs_s3_list_page small;
	assert_int_equal(urs_s3_list_page_init(&small, 2), 0);
	out.list = &small;
	assert_int_equal(
		urs_s3_xml_parse(&x, URS_S3_XML_LIST, list_doc, strlen(list_doc), &out, &err),
		-ENOSPC);
	assert_non_null(strstr(err.msg, "more than 2 keys"));
	urs_s3_list_page_fini(&small);
	/* the document bound */
	struct urs_s3_xml tiny;
	assert_int_equal(urs_s3_xml_init(&tiny, 64), 0);
	out.list = &pg;
	assert_int_equal(
		urs_s3_xml_parse(&tiny, URS_S3_XML_LIST, list_doc, strlen(list_doc), &out, &err),
		-EMSGSIZE);
	assert_non_null(strstr(err.msg, "longer than 64 bytes"));
	urs_s3_xml_fini(&tiny);
	assert_int_equal(urs_s3_list_page_init(&small, 0), -EINVAL);
	assert_int_equal(urs_s3_list_page_init(&small, 1001), -EINVAL);
}

static void test_md5(void **state)
{
	(void) state;
	static const struct {
		const char *in, *hex;
	} v[] = {
		/* RFC 1321, A.5 */
		{"", "d41d8cd98f00b204e9800998ecf8427e"},
		{"a", "0cc175b9c0f1b6a831c399e269772661"},
		{"abc", "900150983cd24fb0d6963f7d28e17f72"},
		{"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
		{"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		 "d174ab98d277d9f5a5611c2c9f419d9f"},
		{"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
		 "57edf4a22be3c955ac49da2e2107b67a"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t d[16];
		char h[33];
		/* whole, and in pieces of 1 and 7 bytes */
		for (size_t step = 0; step < 3; step++) {
			struct urs_md5 m;
			size_t n = strlen(v[i].in), k = step == 0 ? n : step == 1 ? 1 : 7;
			urs_md5_init(&m);
			for (size_t o = 0; o < n; o += k)
				urs_md5_update(&m, v[i].in + o, o + k > n ? n - o : k);
			urs_md5_final(&m, d);
			for (int j = 0; j < 16; j++)
				sprintf(h + 2 * j, "%02x", d[j]);
			assert_string_equal(h, v[i].hex);
		}
	}
}

int main(void)
{
	if (urs_s3_xml_init(&x, 0) < 0 || urs_s3_list_page_init(&pg, 1000) < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_error),
		cmocka_unit_test(test_initiate_complete),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_md5),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	urs_s3_xml_fini(&x);
	urs_s3_list_page_fini(&pg);
	return r;
}
