/*
 * shim/ttrpc.h — containerd's ttrpc protocol, the framing and the envelope:
 * what the shim reads from containerd and writes back, without I/O (the
 * server on the loop is shim/ttrpc_server.c).
 *
 * A frame is a 10-byte header — payload length (big-endian u32, at most
 * 4 MiB), stream id (u32), type (1 request, 2 response, 3 data), flags —
 * then the payload. A request's payload is a ttrpc.Request (service,
 * method, the call's own message as bytes); a response's is a
 * ttrpc.Response (a google.rpc.Status when the call failed, else the
 * reply's bytes). Decoding allocates from an arena the caller resets after
 * each call, so a call costs no malloc once the arena has grown to the
 * calls it serves.
 */
#ifndef URSA_SHIM_TTRPC_H
#define URSA_SHIM_TTRPC_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/proto/ttrpc.pb-c.h"

#define TTRPC_HDR_LEN 10
#define TTRPC_MSG_MAX (4u << 20) /* the largest payload ttrpc accepts */

enum ttrpc_type {
	TTRPC_REQUEST = 1,
	TTRPC_RESPONSE = 2,
	TTRPC_DATA = 3,
};

/* gRPC status codes a shim answers with (containerd's errdefs maps them) */
enum ttrpc_code {
	TTRPC_OK = 0,
	TTRPC_CANCELLED = 1,
	TTRPC_UNKNOWN = 2,
	TTRPC_INVALID_ARGUMENT = 3,
	TTRPC_NOT_FOUND = 5,
	TTRPC_ALREADY_EXISTS = 6,
	TTRPC_FAILED_PRECONDITION = 9,
	TTRPC_RESOURCE_EXHAUSTED = 8,
	TTRPC_UNIMPLEMENTED = 12,
	TTRPC_INTERNAL = 13,
	TTRPC_UNAVAILABLE = 14,
};

struct ttrpc_hdr {
	uint32_t len; /* payload bytes after the header */
	uint32_t sid; /* stream id: odd from a client */
	uint8_t type; /* enum ttrpc_type */
	uint8_t flags;
};

/**
 * ttrpc_hdr_get() - read a frame header
 * @b: TTRPC_HDR_LEN bytes
 * @h: the header read
 *
 * Return: 0, or -EMSGSIZE when the payload length exceeds TTRPC_MSG_MAX
 * (the header is still filled in: the caller knows what to skip).
 */
int ttrpc_hdr_get(const uint8_t *b, struct ttrpc_hdr *h);

/**
 * ttrpc_hdr_put() - write a frame header
 * @b: TTRPC_HDR_LEN bytes
 * @h: the header
 */
void ttrpc_hdr_put(uint8_t *b, const struct ttrpc_hdr *h);

/*
 * A bump allocator for decoded messages. The first block is kept across
 * resets and grows to the largest call seen; blocks added when it is full
 * are freed at the reset. At most TTRPC_ARENA_MAX bytes in all: a message
 * that would need more fails to decode.
 */
#define TTRPC_ARENA_MAX (64u << 20)

struct ttrpc_arena_blk;

struct ttrpc_arena {
	ProtobufCAllocator pa; /* hand &arena->pa to protobuf-c */
	uint8_t *base;	       /* the kept block */
	size_t cap, used;
	size_t total;		       /* bytes held, extra blocks included */
	size_t want;		       /* what the kept block grows to at the reset */
	struct ttrpc_arena_blk *extra; /* blocks added since the reset */
};

/**
 * ttrpc_arena_init() - an empty arena (nothing allocated until used)
 * @a: the arena
 */
void ttrpc_arena_init(struct ttrpc_arena *a);

/**
 * ttrpc_arena_reset() - forget every allocation; keep (or grow) the first block
 * @a: the arena
 */
void ttrpc_arena_reset(struct ttrpc_arena *a);

/**
 * ttrpc_arena_fini() - free the arena's memory
 * @a: the arena
 */
void ttrpc_arena_fini(struct ttrpc_arena *a);

/**
 * ttrpc_request_decode() - decode a request frame's payload
 * @p: the payload
 * @n: its length
 * @a: the arena the request is decoded into
 *
 * Return: the request (service, method, payload, metadata), or NULL when
 * the bytes are not a ttrpc.Request or the arena is exhausted.
 */
Ttrpc__Request *ttrpc_request_decode(const uint8_t *p, size_t n, struct ttrpc_arena *a);

/**
 * ttrpc_response_size() - the bytes a response frame takes
 * @reply: the reply message (when @code is TTRPC_OK), or NULL for an empty reply
 * @code: TTRPC_OK or the failure's status code
 * @msg: the failure's message (ignored when @code is TTRPC_OK)
 *
 * Return: header + payload bytes.
 */
size_t ttrpc_response_size(const ProtobufCMessage *reply, int code, const char *msg);

/**
 * ttrpc_response_put() - encode a response frame
 * @b: at least ttrpc_response_size() bytes
 * @sid: the request's stream id
 * @reply: as for ttrpc_response_size()
 * @code: as for ttrpc_response_size()
 * @msg: as for ttrpc_response_size()
 *
 * Return: the bytes written (ttrpc_response_size()), or -EMSGSIZE when the
 * payload would exceed TTRPC_MSG_MAX.
 */
long ttrpc_response_put(uint8_t *b, uint32_t sid, const ProtobufCMessage *reply, int code,
			const char *msg);

/**
 * ttrpc_request_size() - the bytes a request frame takes
 * @service: the service's full name
 * @method: the method's name
 * @msg: the call's message
 * @ns: the containerd namespace to carry in the metadata, or NULL
 *
 * Return: header + payload bytes.
 */
size_t ttrpc_request_size(const char *service, const char *method, const ProtobufCMessage *msg,
			  const char *ns);

/**
 * ttrpc_request_put() - encode a request frame (the shim is a client of
 * containerd's events service)
 * @b: at least ttrpc_request_size() bytes
 * @sid: the stream id (odd)
 * @service: as for ttrpc_request_size()
 * @method: as for ttrpc_request_size()
 * @msg: as for ttrpc_request_size()
 * @ns: as for ttrpc_request_size()
 *
 * Return: the bytes written, or -EMSGSIZE.
 */
long ttrpc_request_put(uint8_t *b, uint32_t sid, const char *service, const char *method,
		       const ProtobufCMessage *msg, const char *ns);

#endif
