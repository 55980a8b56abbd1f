/*
 * shim/ttrpc.c — ttrpc frames and envelopes (shim/ttrpc.h): headers, the
 * arena requests decode into, and responses and requests encoded in place.
 *
 * The envelopes (ttrpc.Request, ttrpc.Response) wrap the call's message as
 * a bytes field. Decoding leaves that field pointing into the frame (no
 * copy, protobuf-c's bytes are copied into the arena, which is the one
 * copy); encoding writes the envelope's few tags by hand around the inner
 * message packed straight into the output, so a reply is packed once, into
 * the buffer that is sent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/endian.h"
#include "shim/proto/ttrpc.pb-c.h"
#include "shim/ttrpc.h"

#define NS_KEY "containerd-namespace-ttrpc"

int ttrpc_hdr_get(const uint8_t *b, struct ttrpc_hdr *h)
{
	h->len = urs_get_be32(b);
	h->sid = urs_get_be32(b + 4);
	h->type = b[8];
	h->flags = b[9];
	return h->len > TTRPC_MSG_MAX ? -EMSGSIZE : 0;
}

void ttrpc_hdr_put(uint8_t *b, const struct ttrpc_hdr *h)
{
	urs_put_be32(b, h->len);
	urs_put_be32(b + 4, h->sid);
	b[8] = h->type;
	b[9] = h->flags;
}

/* -- arena ------------------------------------------------------------- */

struct ttrpc_arena_blk {
	struct ttrpc_arena_blk *next;
	size_t cap, used;
	_Alignas(16) uint8_t data[];
};

#define ALIGN16(n) (((n) + 15) & ~(size_t) 15)
#define BLK_MIN	   (16u << 10)

static void *arena_alloc(void *data, size_t size)
{
	struct ttrpc_arena *a = data;
	size = ALIGN16(size ? size : 1);
	if (a->base && a->cap - a->used >= size) {
		void *p = a->base + a->used;
		a->used += size;
		return p;
	}
	struct ttrpc_arena_blk *b = a->extra;
	if (b && b->cap - b->used >= size) {
		void *p = b->data + b->used;
		b->used += size;
		return p;
	}
	size_t cap = size > BLK_MIN ? size : BLK_MIN;
	if (a->total + cap > TTRPC_ARENA_MAX)
		return NULL;
	b = malloc(sizeof(*b) + cap);
	if (!b)
		return NULL;
	b->cap = cap;
	b->used = size;
	b->next = a->extra;
	a->extra = b;
	a->total += cap;
	a->want += cap; /* the kept block grows to what this call needed */
	return b->data;
}

static void arena_free(void *data, void *p)
{
	(void) data, (void) p; /* everything goes at the reset */
}

void ttrpc_arena_init(struct ttrpc_arena *a)
{
	*a = (struct ttrpc_arena){
		.pa = {.alloc = arena_alloc, .free = arena_free, .allocator_data = a},
		.want = BLK_MIN,
	};
}

void ttrpc_arena_reset(struct ttrpc_arena *a)
{
	while (a->extra) {
		struct ttrpc_arena_blk *b = a->extra;
		a->extra = b->next;
		a->total -= b->cap;
		free(b);
	}
	a->used = 0;
	if (a->base && a->want <= a->cap)
		return;
	/* grow the kept block to the largest call seen, up to the limit */
	size_t want = ALIGN16(a->want > TTRPC_ARENA_MAX / 2 ? TTRPC_ARENA_MAX / 2 : a->want);
	uint8_t *nb = aligned_alloc(16, want);
	if (!nb)
		return; /* keep the old block; extras cover the rest */
	free(a->base);
	a->total = a->total - a->cap + want;
	a->base = nb;
	a->cap = want;
	a->want = want;
}

void ttrpc_arena_fini(struct ttrpc_arena *a)
{
	ttrpc_arena_reset(a);
	free(a->base);
	ttrpc_arena_init(a);
}

Ttrpc__Request *ttrpc_request_decode(const uint8_t *p, size_t n, struct ttrpc_arena *a)
{
	if (!a->base)
		ttrpc_arena_reset(a);
	return ttrpc__request__unpack(&a->pa, n, p);
}

/* -- encoding ---------------------------------------------------------- */

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *varint_put(uint8_t *b, uint64_t v)
{
	while (v >= 0x80) {
		*b++ = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	*b++ = (uint8_t) v;
	return b;
}

/* a length-delimited field: tag, length, then the caller writes the bytes */
static size_t field_len(size_t n)
{
	return 1 + varint_len(n) + n;
}

static uint8_t *field_put(uint8_t *b, unsigned num, size_t n)
{
	*b++ = (uint8_t) (num << 3 | 2);
	return varint_put(b, n);
}

static uint8_t *str_put(uint8_t *b, unsigned num, const char *s, size_t n)
{
	b = field_put(b, num, n);
	memcpy(b, s, n);
	return b + n;
}

static void status_init(Ttrpc__Status *st, int code, const char *msg)
{
	ttrpc__status__init(st);
	st->code = code;
	st->message = (char *) (msg ? msg : "");
}

static size_t response_payload(const ProtobufCMessage *reply, int code, const char *msg,
			       size_t *inner)
{
	if (code != TTRPC_OK) {
		Ttrpc__Status st;
		status_init(&st, code, msg);
		*inner = ttrpc__status__get_packed_size(&st);
		return field_len(*inner);
	}
	*inner = reply ? protobuf_c_message_get_packed_size(reply) : 0;
	return *inner ? field_len(*inner) : 0;
}

size_t ttrpc_response_size(const ProtobufCMessage *reply, int code, const char *msg)
{
	size_t inner;
	return TTRPC_HDR_LEN + response_payload(reply, code, msg, &inner);
}

long ttrpc_response_put(uint8_t *b, uint32_t sid, const ProtobufCMessage *reply, int code,
			const char *msg)
{
	size_t inner, len = response_payload(reply, code, msg, &inner);
	if (len > TTRPC_MSG_MAX)
		return -EMSGSIZE;
	ttrpc_hdr_put(
		b, &(struct ttrpc_hdr){.len = (uint32_t) len, .sid = sid, .type = TTRPC_RESPONSE});
	uint8_t *p = b + TTRPC_HDR_LEN;
	if (code != TTRPC_OK) {
		Ttrpc__Status st;
		status_init(&st, code, msg);
		p = field_put(p, 1, inner);
		p += ttrpc__status__pack(&st, p);
	} else if (inner) {
		p = field_put(p, 2, inner);
		p += protobuf_c_message_pack(reply, p);
	}
	return (long) (p - b);
}

static size_t request_payload(const char *service, const char *method, size_t inner, const char *ns)
{
	size_t n = field_len(strlen(service)) + field_len(strlen(method)) + field_len(inner);
	if (ns)
		n += field_len(field_len(strlen(NS_KEY)) + field_len(strlen(ns)));
	return n;
}

size_t ttrpc_request_size(const char *service, const char *method, const ProtobufCMessage *msg,
			  const char *ns)
{
	return TTRPC_HDR_LEN +
	       request_payload(service, method, protobuf_c_message_get_packed_size(msg), ns);
}

long ttrpc_request_put(uint8_t *b, uint32_t sid, const char *service, const char *method,
		       const ProtobufCMessage *msg, const char *ns)
{
	size_t inner = protobuf_c_message_get_packed_size(msg);
	size_t len = request_payload(service, method, inner, ns);
	if (len > TTRPC_MSG_MAX)
		return -EMSGSIZE;
	ttrpc_hdr_put(
		b, &(struct ttrpc_hdr){.len = (uint32_t) len, .sid = sid, .type = TTRPC_REQUEST});
	uint8_t *p = b + TTRPC_HDR_LEN;
	p = str_put(p, 1, service, strlen(service));
	p = str_put(p, 2, method, strlen(method));
	p = field_put(p, 3, inner);
	p += protobuf_c_message_pack(msg, p);
	if (ns) {
		p = field_put(p, 5, field_len(strlen(NS_KEY)) + field_len(strlen(ns)));
		p = str_put(p, 1, NS_KEY, strlen(NS_KEY));
		p = str_put(p, 2, ns, strlen(ns));
	}
	return (long) (p - b);
}
