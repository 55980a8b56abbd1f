/*
 * store/s3_xml.h — S3's XML replies, parsed with expat as they arrive (the
 * client feeds each chunk curl hands it; no reply buffer): Error (Code,
 * Message), InitiateMultipartUploadResult (UploadId), ListBucketResult
 * (Contents/Key, Contents/Size, IsTruncated, NextContinuationToken) and
 * CompleteMultipartUploadResult (ETag). Everything else in a reply is
 * skipped without being copied.
 *
 * Bounded: a document longer than the parser's limit, a kept field longer
 * than URS_S3_XML_FIELD_MAX bytes, nesting deeper than URS_S3_XML_DEPTH, a
 * DOCTYPE (so no entity definitions at all) or more keys than the caller's
 * list page holds are refused with a message. Memory: the parser (one
 * expat parser, reset and reused per reply) and the caller's result; list
 * keys are copied into the page's arena, nothing is allocated per element.
 */
#ifndef URSA_STORE_S3_XML_H
#define URSA_STORE_S3_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/err.h"

#define URS_S3_XML_FIELD_MAX 1024 /* longest kept text (a key, an upload id, a token) */
#define URS_S3_XML_DEPTH     16
#define URS_S3_XML_DOC_MAX   (4u << 20) /* default document bound */

enum urs_s3_xml_kind {
	URS_S3_XML_ERROR = 1, /* only <Error> is expected */
	URS_S3_XML_INITIATE,  /* <InitiateMultipartUploadResult> (or <Error>) */
	URS_S3_XML_LIST,      /* <ListBucketResult> (or <Error>) */
	URS_S3_XML_COMPLETE,  /* <CompleteMultipartUploadResult> (or <Error>) */
};

/**
 * struct urs_s3_list_page - one page of ListObjectsV2 keys, caller-owned
 * @cap: keys it can hold (allocated once by urs_s3_list_page_init())
 * @n: keys in this page
 * @keys: @n NUL-terminated keys, pointing into @arena
 * @sizes: their sizes in bytes
 * @arena: key storage, @arena_cap bytes; @arena_len used
 * @truncated: the listing goes on: ask again with @next_token
 * @next_token: NextContinuationToken ("" when not truncated)
 */
struct urs_s3_list_page {
	uint32_t cap, n;
	char **keys;
	uint64_t *sizes;
	char *arena;
	size_t arena_cap, arena_len;
	bool truncated;
	char next_token[URS_S3_XML_FIELD_MAX + 1];
};

/**
 * urs_s3_list_page_init() - allocate a page for up to @cap keys
 * @page: the page
 * @cap: keys per page, 1..1000 (S3's largest page)
 *
 * The arena is sized for @cap keys of the longest S3 allows, so any page a
 * server sends for max-keys=@cap fits.
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int urs_s3_list_page_init(struct urs_s3_list_page *page, uint32_t cap);

/**
 * urs_s3_list_page_fini() - free a page's arrays and arena
 * @page: the page (zeroed; fini of a zeroed page does nothing)
 */
void urs_s3_list_page_fini(struct urs_s3_list_page *page);

/* What a reply said. */
struct urs_s3_reply {
	bool is_error;				/* the root was <Error> */
	char code[64];				/* Error/Code */
	char message[URS_S3_XML_FIELD_MAX + 1]; /* Error/Message */
	char upload_id[URS_S3_XML_FIELD_MAX + 1];
	char etag[URS_S3_XML_FIELD_MAX + 1];
	struct urs_s3_list_page *list; /* LIST: filled here (set by the caller) */
};

struct urs_s3_xml {
	void *parser; /* XML_Parser */
	size_t max_doc, fed;
	enum urs_s3_xml_kind kind;
	struct urs_s3_reply *out;
	int rc; /* first error, negative errno */
	char why[200];
	uint8_t stack[URS_S3_XML_DEPTH]; /* element tokens, root first */
	unsigned depth, skip_depth;
	bool root_seen;
	char text[URS_S3_XML_FIELD_MAX + 1];
	size_t text_len;
	bool collecting;
	/* the <Contents> being read */
	bool have_key, have_size;
	size_t key_off;
	uint64_t size;
};

/**
 * urs_s3_xml_init() - create a reusable reply parser
 * @x: the parser state
 * @max_doc: longest reply accepted, bytes (0: URS_S3_XML_DOC_MAX)
 *
 * Return: 0 or -ENOMEM.
 */
int urs_s3_xml_init(struct urs_s3_xml *x, size_t max_doc);

/**
 * urs_s3_xml_fini() - free the parser
 * @x: the parser state (fini twice is harmless)
 */
void urs_s3_xml_fini(struct urs_s3_xml *x);

/**
 * urs_s3_xml_begin() - start parsing one reply
 * @x: the parser
 * @kind: the expected document (an <Error> is always accepted)
 * @out: the result, cleared here except @out->list, which must point to a
 *       page for URS_S3_XML_LIST (cleared here)
 *
 * Return: 0 or -ENOMEM (expat could not reset).
 */
int urs_s3_xml_begin(struct urs_s3_xml *x, enum urs_s3_xml_kind kind, struct urs_s3_reply *out);

/**
 * urs_s3_xml_feed() - parse the next piece of the reply
 * @x: the parser
 * @p: bytes
 * @n: how many
 *
 * Return: 0, or the first error (negative errno; the reason is kept for
 * urs_s3_xml_end()). Later calls return it again.
 */
int urs_s3_xml_feed(struct urs_s3_xml *x, const void *p, size_t n);

/**
 * urs_s3_xml_end() - finish a reply and check it is complete
 * @x: the parser
 * @err: why it was refused
 *
 * Return: 0 with the result in the reply given to urs_s3_xml_begin();
 * -EBADMSG (not well-formed, wrong root, a required field missing),
 * -EMSGSIZE (a bound exceeded), -ENOSPC (more keys than the page holds).
 */
int urs_s3_xml_end(struct urs_s3_xml *x, struct urs_err *err);

/**
 * urs_s3_xml_parse() - begin, feed and end for one whole reply in memory
 * @x: the parser
 * @kind: the expected document
 * @p: the reply
 * @n: its length
 * @out: the result (see urs_s3_xml_begin())
 * @err: why it was refused
 *
 * Return: as urs_s3_xml_end().
 */
int urs_s3_xml_parse(struct urs_s3_xml *x, enum urs_s3_xml_kind kind, const void *p, size_t n,
		     struct urs_s3_reply *out, struct urs_err *err);

#endif
