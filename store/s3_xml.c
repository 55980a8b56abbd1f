/*
 * store/s3_xml.c — S3 reply parsing on expat (see s3_xml.h). Elements are
 * mapped to small tokens on a fixed stack; text is collected only for the
 * few fields a reply's caller needs, at the one place each may appear, into
 * one fixed buffer, and copied into the result when the element closes.
 * Any handler that finds something wrong records the first error and stops
 * expat; every later call returns that error.
 */
#include "store/s3_xml.h"

#include <errno.h>
#include <expat.h>
#include <string.h>

#include "runtime/common.h"

enum tok {
	T_OTHER = 0,
	T_ERROR,
	T_INIT,
	T_LIST,
	T_COMPLETE,
	T_CODE,
	T_MESSAGE,
	T_UPLOADID,
	T_ETAG,
	T_ISTRUNC,
	T_NEXTTOK,
	T_CONTENTS,
	T_KEY,
	T_SIZE,
};

static const char *const tok_name[] = {
	[T_ERROR] = "Error",
	[T_INIT] = "InitiateMultipartUploadResult",
	[T_LIST] = "ListBucketResult",
	[T_COMPLETE] = "CompleteMultipartUploadResult",
	[T_CODE] = "Code",
	[T_MESSAGE] = "Message",
	[T_UPLOADID] = "UploadId",
	[T_ETAG] = "ETag",
	[T_ISTRUNC] = "IsTruncated",
	[T_NEXTTOK] = "NextContinuationToken",
	[T_CONTENTS] = "Contents",
	[T_KEY] = "Key",
	[T_SIZE] = "Size",
};

static enum tok lookup(const char *name)
{
	for (unsigned i = 1; i < URS_ARRAY_SIZE(tok_name); i++)
		if (!strcmp(name, tok_name[i]))
			return (enum tok) i;
	return T_OTHER;
}

static const enum tok kind_root[] = {
	[URS_S3_XML_ERROR] = T_ERROR,
	[URS_S3_XML_INITIATE] = T_INIT,
	[URS_S3_XML_LIST] = T_LIST,
	[URS_S3_XML_COMPLETE] = T_COMPLETE,
};

__attribute__((format(printf, 3, 4))) static void fail(struct urs_s3_xml *x, int rc,
						       const char *fmt, ...)
{
	if (x->rc)
		return;
	x->rc = rc;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->why, sizeof(x->why), fmt, ap);
	va_end(ap);
	XML_StopParser(x->parser, XML_FALSE);
}

/* fail() and return from the (void) handler */
#define FAIL(x, ...)                    \
	do {                            \
		fail((x), __VA_ARGS__); \
		return;                 \
	} while (0)

/* Whether text of @t directly under @parent (at depth @d, root = 1) is kept. */
static bool wanted(enum tok parent, enum tok t, unsigned d)
{
	if (d == 2)
		return (parent == T_ERROR && (t == T_CODE || t == T_MESSAGE)) ||
		       (parent == T_INIT && t == T_UPLOADID) ||
		       (parent == T_COMPLETE && t == T_ETAG) ||
		       (parent == T_LIST && (t == T_ISTRUNC || t == T_NEXTTOK));
	return d == 3 && parent == T_CONTENTS && (t == T_KEY || t == T_SIZE);
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct urs_s3_xml *x = ud;
	(void) attrs;
	if (x->rc)
		return;
	if (x->collecting)
		FAIL(x, -EBADMSG, "element <%.40s> inside <%s>", name,
		     tok_name[x->stack[x->depth - 1]]);
	if (x->depth == URS_S3_XML_DEPTH)
		FAIL(x, -EMSGSIZE, "elements nested deeper than %d", URS_S3_XML_DEPTH);
	enum tok t = lookup(name);
	if (x->depth == 0) {
		enum tok want = kind_root[x->kind];
		if (t != T_ERROR && t != want)
			FAIL(x, -EBADMSG, "root element <%.60s>, expected <%s>", name,
			     tok_name[want]);
		x->root_seen = true;
		x->out->is_error = t == T_ERROR;
	} else if (x->depth == 1 && t == T_CONTENTS && x->stack[0] == T_LIST) {
		x->have_key = x->have_size = false;
		x->size = 0;
	}
	x->stack[x->depth++] = (uint8_t) t;
	if (x->depth >= 2 && wanted((enum tok) x->stack[x->depth - 2], t, x->depth)) {
		x->collecting = true;
		x->text_len = 0;
	}
}

static void on_text(void *ud, const XML_Char *s, int len)
{
	struct urs_s3_xml *x = ud;
	if (x->rc || !x->collecting)
		return;
	if ((size_t) len > URS_S3_XML_FIELD_MAX - x->text_len)
		FAIL(x, -EMSGSIZE, "<%s> longer than %d bytes", tok_name[x->stack[x->depth - 1]],
		     URS_S3_XML_FIELD_MAX);
	memcpy(x->text + x->text_len, s, (size_t) len);
	x->text_len += (size_t) len;
}

static void keep(struct urs_s3_xml *x, char *dst, size_t cap, enum tok t)
{
	if (x->text_len >= cap)
		FAIL(x, -EMSGSIZE, "<%s> longer than %zu bytes", tok_name[t], cap - 1);
	memcpy(dst, x->text, x->text_len);
	dst[x->text_len] = 0;
}

static void keep_key(struct urs_s3_xml *x)
{
	struct urs_s3_list_page *pg = x->out->list;
	if (x->have_key)
		FAIL(x, -EBADMSG, "two <Key> in one <Contents>");
	if (pg->n >= pg->cap)
		FAIL(x, -ENOSPC, "more than %u keys in one page", pg->cap);
	if (x->text_len + 1 > pg->arena_cap - pg->arena_len)
		FAIL(x, -ENOSPC, "keys of the page exceed its %zu-byte arena", pg->arena_cap);
	x->key_off = pg->arena_len;
	memcpy(pg->arena + pg->arena_len, x->text, x->text_len);
	pg->arena[pg->arena_len + x->text_len] = 0;
	pg->arena_len += x->text_len + 1;
	x->have_key = true;
}

static void keep_size(struct urs_s3_xml *x)
{
	uint64_t v = 0;
	if (!x->text_len || x->text_len > 20)
		FAIL(x, -EBADMSG, "<Size> is not a number");
	for (size_t i = 0; i < x->text_len; i++) {
		unsigned d = (unsigned) (x->text[i] - '0');
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			FAIL(x, -EBADMSG, "<Size> is not a number");
		v = v * 10 + d;
	}
	x->size = v;
	x->have_size = true;
}

static void field_done(struct urs_s3_xml *x, enum tok t)
{
	struct urs_s3_reply *o = x->out;
	switch (t) {
	case T_CODE:
		keep(x, o->code, sizeof(o->code), t);
		return;
	case T_MESSAGE:
		keep(x, o->message, sizeof(o->message), t);
		return;
	case T_UPLOADID:
		keep(x, o->upload_id, sizeof(o->upload_id), t);
		return;
	case T_ETAG:
		keep(x, o->etag, sizeof(o->etag), t);
		return;
	case T_NEXTTOK:
		keep(x, o->list->next_token, sizeof(o->list->next_token), t);
		return;
	case T_ISTRUNC:
		if (x->text_len == 4 && !memcmp(x->text, "true", 4))
			o->list->truncated = true;
		else if (x->text_len == 5 && !memcmp(x->text, "false", 5))
			o->list->truncated = false;
		else
			fail(x, -EBADMSG, "<IsTruncated> is neither true nor false");
		return;
	case T_KEY:
		keep_key(x);
		return;
	case T_SIZE:
		keep_size(x);
		return;
	default:
		return;
	}
}

static void on_end(void *ud, const XML_Char *name)
{
	struct urs_s3_xml *x = ud;
	(void) name;
	if (x->rc)
		return;
	enum tok t = (enum tok) x->stack[--x->depth];
	if (x->collecting) {
		x->collecting = false;
		field_done(x, t);
	} else if (t == T_CONTENTS && x->depth == 1 && x->stack[0] == T_LIST) {
		struct urs_s3_list_page *pg = x->out->list;
		if (!x->have_key || !x->have_size)
			FAIL(x, -EBADMSG, "a <Contents> without <%s>",
			     x->have_key ? "Size" : "Key");
		pg->keys[pg->n] = pg->arena + x->key_off;
		pg->sizes[pg->n++] = x->size;
	}
}

static void on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
		       int has_internal_subset)
{
	(void) name, (void) sysid, (void) pubid, (void) has_internal_subset;
	fail(ud, -EBADMSG, "a DOCTYPE declaration (not accepted in replies)");
}

static void on_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value,
		      int value_len, const XML_Char *base, const XML_Char *sysid,
		      const XML_Char *pubid, const XML_Char *notation)
{
	(void) name, (void) is_param, (void) value, (void) value_len, (void) base;
	(void) sysid, (void) pubid, (void) notation;
	fail(ud, -EBADMSG, "an entity declaration (not accepted in replies)");
}

int urs_s3_xml_init(struct urs_s3_xml *x, size_t max_doc)
{
	memset(x, 0, sizeof(*x));
	x->max_doc = max_doc ? max_doc : URS_S3_XML_DOC_MAX;
	x->parser = XML_ParserCreate("UTF-8");
	return x->parser ? 0 : -ENOMEM;
}

void urs_s3_xml_fini(struct urs_s3_xml *x)
{
	if (x->parser)
		XML_ParserFree(x->parser);
	x->parser = NULL;
}

int urs_s3_xml_begin(struct urs_s3_xml *x, enum urs_s3_xml_kind kind, struct urs_s3_reply *out)
{
	if (!XML_ParserReset(x->parser, "UTF-8"))
		return -ENOMEM;
	XML_SetUserData(x->parser, x);
	XML_SetElementHandler(x->parser, on_start, on_end);
	XML_SetCharacterDataHandler(x->parser, on_text);
	XML_SetStartDoctypeDeclHandler(x->parser, on_doctype);
	XML_SetEntityDeclHandler(x->parser, on_entity);
	x->kind = kind;
	x->out = out;
	x->fed = 0;
	x->rc = 0;
	x->why[0] = 0;
	x->depth = 0;
	x->root_seen = x->collecting = false;
	struct urs_s3_list_page *pg = out->list;
	memset(out, 0, offsetof(struct urs_s3_reply, list));
	if (kind == URS_S3_XML_LIST) {
		if (!pg)
			return -EINVAL;
		pg->n = 0;
		pg->arena_len = 0;
		pg->truncated = false;
		pg->next_token[0] = 0;
	}
	return 0;
}

static int feed(struct urs_s3_xml *x, const char *p, size_t n, bool final)
{
	do {
		int chunk = n > (1u << 20) ? 1 << 20 : (int) n;
		bool last = final && (size_t) chunk == n;
		if (XML_Parse(x->parser, p, chunk, last) == XML_STATUS_ERROR && !x->rc) {
			enum XML_Error e = XML_GetErrorCode(x->parser);
			x->rc = -EBADMSG;
			snprintf(x->why, sizeof(x->why), "not well-formed XML (line %lu): %s",
				 (unsigned long) XML_GetCurrentLineNumber(x->parser),
				 XML_ErrorString(e));
		}
		p += chunk;
		n -= (size_t) chunk;
	} while (n && !x->rc);
	return x->rc;
}

int urs_s3_xml_feed(struct urs_s3_xml *x, const void *p, size_t n)
{
	if (x->rc)
		return x->rc;
	if (n > x->max_doc - x->fed) {
		x->rc = -EMSGSIZE;
		snprintf(x->why, sizeof(x->why), "reply longer than %zu bytes", x->max_doc);
		return x->rc;
	}
	x->fed += n;
	return n ? feed(x, p, n, false) : 0;
}

int urs_s3_xml_end(struct urs_s3_xml *x, struct urs_err *err)
{
	if (!x->rc)
		feed(x, "", 0, true);
	const struct urs_s3_reply *o = x->out;
	if (!x->rc && !x->root_seen)
		fail(x, -EBADMSG, "no document");
	else if (!x->rc && o->is_error && !o->code[0])
		fail(x, -EBADMSG, "<Error> without <Code>");
	else if (!x->rc && !o->is_error && x->kind == URS_S3_XML_INITIATE && !o->upload_id[0])
		fail(x, -EBADMSG, "no <UploadId>");
	else if (!x->rc && !o->is_error && x->kind == URS_S3_XML_COMPLETE && !o->etag[0])
		fail(x, -EBADMSG, "no <ETag>");
	else if (!x->rc && !o->is_error && x->kind == URS_S3_XML_LIST && o->list->truncated &&
		 !o->list->next_token[0])
		fail(x, -EBADMSG, "<IsTruncated> true without <NextContinuationToken>");
	if (x->rc)
		return urs_err_set(err, x->rc, "%s", x->why);
	return 0;
}

int urs_s3_xml_parse(struct urs_s3_xml *x, enum urs_s3_xml_kind kind, const void *p, size_t n,
		     struct urs_s3_reply *out, struct urs_err *err)
{
	int r = urs_s3_xml_begin(x, kind, out);
	if (r < 0)
		return urs_err_set(err, r, "XML parser reset failed");
	urs_s3_xml_feed(x, p, n);
	return urs_s3_xml_end(x, err);
}

int urs_s3_list_page_init(struct urs_s3_list_page *pg, uint32_t cap)
{
	memset(pg, 0, sizeof(*pg));
	if (!cap || cap > 1000)
		return -EINVAL;
	pg->cap = cap;
	pg->arena_cap = (size_t) cap * (URS_S3_XML_FIELD_MAX + 1);
	pg->keys = calloc(cap, sizeof(*pg->keys));
	pg->sizes = calloc(cap, sizeof(*pg->sizes));
	pg->arena = malloc(pg->arena_cap);
	if (!pg->keys || !pg->sizes || !pg->arena) {
		urs_s3_list_page_fini(pg);
		return -ENOMEM;
	}
	return 0;
}

void urs_s3_list_page_fini(struct urs_s3_list_page *pg)
{
	free(pg->keys);
	free(pg->sizes);
	free(pg->arena);
	memset(pg, 0, sizeof(*pg));
}
