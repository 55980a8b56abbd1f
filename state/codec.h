/*
 * state/codec.h — run time of the checkpoint serializer: the encoder (output
 * buffer, pointer-identity table, one-pass graph walk, deferred references), the decoder (bounded
 * readers, stored type table and field mapping, object-ID table, arena), and
 * the schema descriptors that the generator (state/gen/ursc.py) emits for
 * every type, and the hash tables state uses (u64, fixed-size byte and
 * string keys). Generated code calls the inline helpers here; everything that
 * is not on the per-field hot path lives in state/codec.c. Wire format:
 * docs/state-format.md.
 */
#ifndef URSA_STATE_CODEC_H
#define URSA_STATE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define URS_ST_MAGIC	   "URST"
#define URS_ST_VERSION	   3
#define URS_ST_VERSION_MIN 2 /* v2: interior references are one (field, element) step */

/* An interior reference is an object + a path of (field, element) steps:
 * into a field or an array / vec element of the object, or further into an
 * embedded struct (or a vec element of struct type) at that place. */
#define URS_ST_MAX_PATH 8

/* A map field's `count` in the type table says what its keys are: 0 = u64
 * (varint), 1..URS_ST_MAP_KMAX = that many raw bytes (struct urs_bmap),
 * URS_ST_MAP_KSTR = a string (struct urs_smap). */
#define URS_ST_MAP_KMAX 1024u
#define URS_ST_MAP_KSTR UINT32_MAX

/* Field forms and base types as they appear in the stream's type table. */
enum urs_st_form {
	URS_ST_F_SCALAR = 1, /* one value of `base` */
	URS_ST_F_ARRAY = 2,  /* `count` values of `base` (u8: raw bytes) */
	URS_ST_F_VEC = 3,    /* varint n, n values of `base` */
	URS_ST_F_BYTES = 4,  /* varint n, n raw bytes */
	URS_ST_F_STRING = 5, /* varint n, n raw bytes */
	URS_ST_F_MAP = 6,    /* varint n, n × (key, value of `base`); key kind in `count` */
	URS_ST_F_CUSTOM = 7, /* varint u64 produced by the field's save function */
	URS_ST_F_MAX = 7,
};

enum urs_st_base {
	URS_ST_B_NONE = 0,
	URS_ST_B_U8 = 1,
	URS_ST_B_U16,
	URS_ST_B_U32,
	URS_ST_B_U64,
	URS_ST_B_I8,
	URS_ST_B_I16,
	URS_ST_B_I32,
	URS_ST_B_I64,
	URS_ST_B_BOOL,
	URS_ST_B_F64 = 10,
	URS_ST_B_PTR = 16,    /* sub: pointee type index; owning pointer, varint id */
	URS_ST_B_REF = 17,    /* sub: target (scalar code or 32 + type index) */
	URS_ST_B_STRUCT = 18, /* sub: embedded struct type index */
	URS_ST_B_UNION = 19,  /* sub: union type index */
};

#define URS_ST_REF_TYPE 32u /* ref target codes >= this name a struct type */

struct urs_st_enc;
struct urs_st_dec;

struct urs_st_fdesc {
	const char *name;
	uint8_t form, base;
	uint32_t count; /* ARRAY length; MAP key kind (URS_ST_MAP_*) */
	uint32_t sub;	/* type index (PTR/STRUCT/UNION) or ref target code */
};

struct urs_st_tdesc {
	const char *name;
	bool is_union; /* fields are the variants (form SCALAR, base PTR) */
	uint16_t nfields;
	const struct urs_st_fdesc *fields;
	size_t size;
	/* write the object body; registers (queues) the objects it owns */
	void (*save)(struct urs_st_enc *e, const void *obj);
	/* body decoder; stype = stored type index; fresh = destination is zeroed */
	int (*load)(struct urs_st_dec *d, void *obj, uint32_t stype, bool fresh);
	void (*after_load)(void *obj);
	/* interior pointers; `want` is the ref target code of the pointer.
	 * locate: address @a inside @obj (or inside storage of a vec it holds)
	 * → path of (field, element) pairs (room: @room pairs); returns the
	 * number of pairs or a negative errno. NULL: the type holds no target.
	 * addr: path (current field indices, @n >= 1 pairs) → address, NULL if
	 * it does not name a place of type @want. vecs: registers the storage
	 * of every vec the object holds whose elements can be targets (also in
	 * embedded structs and vec elements) with urs_st_enc_vrange(); NULL
	 * when there is none. */
	int (*locate)(const void *obj, uintptr_t a, uint32_t want, uint32_t *path, uint32_t room);
	void *(*addr)(void *obj, const uint32_t *path, uint32_t n, uint32_t want);
	void (*vecs)(const void *obj, struct urs_st_enc *e, uint32_t id, uint32_t type);
};

struct urs_st_schema {
	const char *name;
	uint32_t ntypes;
	const struct urs_st_tdesc *types;
};

/* ---------------------------------------------------------------- encoder */

/* Sink for encoder output: called with every full buffer (one write per
 * flush) and at the end. Return 0 or a negative errno. */
typedef int (*urs_st_sink)(void *ctx, const void *buf, size_t len);

struct urs_st_eobj {
	const void *p;
	uint32_t type;
	uint32_t size;
};

/* identity table slot; a slot belongs to the current save only when its
 * epoch is the encoder's (no clearing between saves) */
struct urs_st_hslot {
	uintptr_t key; /* object address */
	uint32_t id;   /* 1-based */
	uint16_t type;
	uint16_t epoch;
};

struct urs_st_range {
	uintptr_t start;
	uint32_t id;
	uint16_t type; /* of the object (id) */
	uint16_t vec;  /* 0: the object itself; 1: storage of a vec it holds */
};

/* a non-NULL reference met while writing, resolved once every object is
 * known (the stream's reference table) */
struct urs_st_eref {
	const void *p;
	uint32_t want;
};

struct urs_st_tstat {
	uint64_t count, ns;
};

struct urs_st_enc {
	uint8_t *buf, *p, *end;
	size_t cap;
	urs_st_sink sink; /* NULL: the buffer grows and holds the whole stream */
	void *sink_ctx;
	uint64_t flushed; /* bytes handed to the sink */
	int err;
	const struct urs_st_schema *schema;
	/* identity: open addressing keyed by address, sized once per save from
	 * the count hint (the previous save's object count, or urs_st_enc_hint) */
	struct urs_st_hslot *ht;
	uint32_t ht_mask, ht_used;
	uint16_t epoch;
	uint32_t hint;
	struct urs_st_eobj *objs; /* objs[id - 1]; also the work queue */
	uint32_t nobjs, objs_cap;
	struct urs_st_eref *refs; /* deferred references, in stream order */
	uint32_t nrefs, refs_cap;
	/* interior-pointer lookup, built on first need: the objects of types
	 * that hold reference targets, sorted by address (radix sort unless
	 * already in order; the allocation holds 2 × ranges_cap entries, the
	 * second half is scratch), and a bucket index over them (bucket b =
	 * (address - rlo) >> rshift; rfirst[b] = first range in bucket >= b) */
	struct urs_st_range *ranges;
	uint32_t nranges, ranges_cap;
	uint32_t *rfirst;
	uint32_t nbuckets, rfirst_cap;
	uintptr_t rlo;
	unsigned rshift;
	bool ranges_ok;
	struct urs_st_tstat *stats; /* per type; NULL unless asked */
	const char *err_field;
};

/**
 * urs_st_enc_init() - an encoder with its output buffer
 * @e: the encoder (cleared first)
 * @bufsize: size of the output buffer (0: 1 MiB; at least 64)
 * @sink: gets every full buffer and the end of each stream; NULL: grow an
 *        in-memory buffer (urs_st_enc_data())
 * @ctx: passed to @sink
 *
 * One allocation now; the identity, object and reference tables come with
 * the first save and are kept for the next ones.
 *
 * Return: 0 or -ENOMEM.
 */
int urs_st_enc_init(struct urs_st_enc *e, size_t bufsize, urs_st_sink sink, void *ctx);

/**
 * urs_st_enc_free() - free the buffer and every table; @e is zeroed
 * @e: the encoder
 */
void urs_st_enc_free(struct urs_st_enc *e);

/**
 * urs_st_enc_stats() - per-type counts and times (ns) for the next saves
 * @e: the encoder
 * @on: true to count (from zero), false turns it off
 *
 * The counts accumulate over saves in e->stats, indexed by type, until
 * turned off. A table for 4096 types: a schema with more is then refused.
 *
 * Return: 0 or -ENOMEM.
 */
int urs_st_enc_stats(struct urs_st_enc *e, bool on);

/**
 * urs_st_enc_hint() - expected object count of the next save
 * @e: the encoder
 * @nobjs: the count
 *
 * The identity table is sized once for it (by default the previous save's
 * count is used).
 */
static inline void urs_st_enc_hint(struct urs_st_enc *e, uint32_t nobjs)
{
	e->hint = nobjs;
}

/**
 * urs_st_save() - save the graph reachable from @root as one stream
 * @e: the encoder
 * @schema: the generated schema
 * @type: @root's type index in @schema (a struct, not a union)
 * @root: the root object (ID 1)
 *
 * One pass: every object reached through owning pointers is written once,
 * in ID order; references are resolved at the end into the reference
 * table. Reuses every buffer of @e: allocates only when a table must grow.
 * With a sink the whole stream has been handed to it when this returns 0;
 * without, it is in urs_st_enc_data().
 *
 * Return: 0 or a negative errno (one met while writing names its field or
 * table in e->err_field): -EINVAL (a NULL @root, a bad @type, one address saved as two types, a
 * reference to memory outside every saved object, not at a field of the
 * pointed-to type or deeper than URS_ST_MAX_PATH), -E2BIG (more than 65535
 * types, or 4096 with statistics on), -ENOMEM, or the sink's error.
 */
int urs_st_save(struct urs_st_enc *e, const struct urs_st_schema *schema, uint32_t type,
		const void *root);

/**
 * urs_st_enc_data() - the stream of an in-memory encoder (no sink)
 * @e: the encoder, after urs_st_save()
 * @len: gets its length
 *
 * Return: its bytes, valid until the encoder writes or is freed.
 */
static inline const uint8_t *urs_st_enc_data(const struct urs_st_enc *e, size_t *len)
{
	*len = (size_t) (e->p - e->buf);
	return e->buf;
}

/**
 * urs_st_enc_grow() - make room for @need bytes
 * @e: the encoder
 * @need: bytes wanted at e->p
 *
 * Flushes the buffer to the sink, or grows it (doubling) when there is no
 * sink or the room is still short. The slow path of urs_st_need() and
 * URS_ST_NEED: e->p and e->end may move.
 *
 * Return: true if there is room; false with the error stuck in e->err
 * (the sink's, or -ENOMEM), or when e->err was already set.
 */
bool urs_st_enc_grow(struct urs_st_enc *e, size_t need);

/**
 * urs_st_put_raw() - write @n bytes at @src
 * @e: the encoder
 * @src: the bytes
 * @n: their count
 *
 * With a sink, a run that does not fit in the room left and is half the
 * buffer or more is handed to it directly (after flushing what is
 * buffered), not copied. Errors stick in e->err.
 */
void urs_st_put_raw(struct urs_st_enc *e, const void *src, size_t n);

/**
 * urs_st_enc_new() - register a new object (slow path of urs_st_enc_idl())
 * @e: the encoder
 * @p: the object's address
 * @type: its type index
 * @slot: the identity slot its probe ended on (empty)
 *
 * The next ID, appended to the work queue. Grows the identity table (over
 * 3/4 full: the slot is found again) or the object table (doubling).
 *
 * Return: the ID, or 0 with -ENOMEM stuck in e->err.
 */
uint32_t urs_st_enc_new(struct urs_st_enc *e, const void *p, uint32_t type, uint32_t slot);

/**
 * urs_st_enc_type_err() - fail the save: one address met as two types
 * @e: the encoder; -EINVAL sticks in e->err
 */
void urs_st_enc_type_err(struct urs_st_enc *e);

/**
 * urs_st_enc_ref_grow() - double the deferred-reference table
 * @e: the encoder
 *
 * Return: true, or false with -ENOMEM stuck in e->err.
 */
bool urs_st_enc_ref_grow(struct urs_st_enc *e);

/**
 * urs_st_enc_fail() - record the save's first error
 * @e: the encoder; a later error does not replace the first
 * @err: a negative errno
 * @field: what failed (a field name or "(table)"), a static string kept in
 *         e->err_field
 */
void urs_st_enc_fail(struct urs_st_enc *e, int err, const char *field);

/**
 * urs_st_enc_vrange() - note vec storage that references may point into
 * @e: the encoder
 * @p: the storage
 * @size: its bytes ([p, p + size); 0: nothing noted)
 * @id: the ID of the object holding the vec
 * @type: that object's type index
 *
 * Called from a type's vecs() while the range table is built. Errors
 * (-ENOMEM) stick in e->err.
 */
void urs_st_enc_vrange(struct urs_st_enc *e, const void *p, size_t size, uint32_t id,
		       uint32_t type);

/**
 * urs_st_need() - room for @n bytes at e->p
 * @e: the encoder
 * @n: bytes wanted (reservations include URS_ST_SLACK)
 *
 * Return: true if there is room (made by urs_st_enc_grow() if needed),
 * false after an error.
 */
static inline bool urs_st_need(struct urs_st_enc *e, size_t n)
{
	if (__builtin_expect((size_t) (e->end - e->p) >= n, 1))
		return true;
	return urs_st_enc_grow(e, n);
}

/*
 * Generated save functions keep the output cursor in locals (p, end) and
 * reserve room once per run of fixed-size fields (URS_ST_NEED); anything
 * that may flush or grow the buffer syncs them first. Every reservation
 * includes URS_ST_SLACK spare bytes: a varint is written with one 2-byte
 * store whatever its length.
 */
#define URS_ST_SLACK 8
#define URS_ST_NEED(n)                                                        \
	do {                                                                  \
		if (__builtin_expect((size_t) (end - p) < (size_t) (n), 0)) { \
			e->p = p;                                             \
			if (!urs_st_enc_grow(e, (size_t) (n)))                \
				return;                                       \
			p = e->p;                                             \
			end = e->end;                                         \
		}                                                             \
	} while (0)

/**
 * urs_st_uv() - write @v as a varint (LEB128)
 * @p: where; the caller guarantees 10 bytes of room (2 beyond the varint
 *     for the short form)
 * @v: the value
 *
 * Values below 2^14 (lengths, small integers, most IDs) without a loop or
 * a data-dependent branch (one 2-byte store, on little-endian hosts).
 *
 * Return: the byte after the varint.
 */
static inline uint8_t *urs_st_uv(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (__builtin_expect(v < (1u << 14), 1)) {
		uint16_t big = v > 127;
		uint16_t w = (uint16_t) ((v & 0x7f) | (uint16_t) (big << 7) | ((v >> 7) << 8));
		memcpy(p, &w, 2);
		return p + 1 + big;
	}
#endif
	while (v >= 0x80) {
		*p++ = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t) v;
	return p;
}

/**
 * urs_st_uv_u32x8() - eight u32 as eight varints
 * @p: where (at most 40 bytes; writes up to 16 bytes past the last varint
 *     on the short path: the room for 40 + URS_ST_SLACK covers it)
 * @v: the eight values
 *
 * With SSSE3, eight values below 2^14 take a few vector instructions and
 * one shuffle; otherwise, or for larger values, the scalar loop.
 *
 * Return: the byte after the last varint.
 */
uint8_t *urs_st_uv_u32x8(uint8_t *p, const uint32_t *v);

/**
 * urs_st_zz() - zigzag-encode a signed value
 * @v: the value
 *
 * Return: @v mapped so that small magnitudes make small varints (0, -1, 1,
 * -2... become 0, 1, 2, 3...).
 */
static inline uint64_t urs_st_zz(int64_t v)
{
	return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

/**
 * urs_st_unzz() - undo urs_st_zz()
 * @v: a zigzag-encoded value
 *
 * Return: the signed value.
 */
static inline int64_t urs_st_unzz(uint64_t v)
{
	return (int64_t) (v >> 1) ^ -(int64_t) (v & 1);
}

/**
 * urs_st_f64bits() - the bits of a double (-0.0 is not all zero)
 * @v: the value
 *
 * Return: its IEEE 754 representation.
 */
static inline uint64_t urs_st_f64bits(double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	return u;
}

/**
 * urs_st_f64() - write a double as its 8 bytes in host order
 * @p: where (room reserved by the caller)
 * @v: the value
 *
 * Return: the byte after it.
 */
static inline uint8_t *urs_st_f64(uint8_t *p, double v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

/**
 * urs_st_put_uv() - write a varint at e->p
 * @e: the encoder, with room reserved (urs_st_need: 10 + URS_ST_SLACK)
 * @v: the value
 */
static inline void urs_st_put_uv(struct urs_st_enc *e, uint64_t v)
{
	e->p = urs_st_uv(e->p, v);
}

/**
 * urs_st_addr_hash() - an address's hash in the identity table
 * @a: the address
 *
 * Return: the high 32 bits of a Fibonacci hash (mask it to the table).
 */
static inline uint32_t urs_st_addr_hash(uintptr_t a)
{
	return (uint32_t) (((uint64_t) a * 0x9e3779b97f4a7c15ull) >> 32);
}

/* The identity table as a save function keeps it in locals (output stores
 * may alias anything, so fields of *e would be reloaded after each). */
struct urs_st_idt {
	struct urs_st_hslot *ht;
	uint32_t mask;
	uint16_t epoch;
};

/**
 * urs_st_idt_of() - the identity table's fields as a save function keeps them
 * @e: the encoder
 *
 * Return: a copy, to refresh whenever the table may have grown.
 */
static inline struct urs_st_idt urs_st_idt_of(const struct urs_st_enc *e)
{
	return (struct urs_st_idt){e->ht, e->ht_mask, e->epoch};
}

/**
 * urs_st_enc_idl() - ID of the object at @p
 * @e: the encoder
 * @t: the caller's copy of the identity table (urs_st_idt_of)
 * @p: the object, or NULL
 * @type: its type index
 *
 * Found in the identity table, or registered now (the next ID, queued to be
 * written after the ones already queued; @t is refreshed, registering may
 * grow the table). NULL is in the table too (slot of key 0, ID 0), so
 * callers do not branch on it. An address already registered as another
 * type fails the save (-EINVAL). Does not touch the output buffer.
 *
 * Return: the ID (0 for NULL, or after a failure to register).
 */
static inline uint32_t urs_st_enc_idl(struct urs_st_enc *e, struct urs_st_idt *t, const void *p,
				      uint32_t type)
{
	uintptr_t key = (uintptr_t) p;
	uint32_t i = urs_st_addr_hash(key) & t->mask;
	for (;;) {
		const struct urs_st_hslot *s = &t->ht[i];
		if (s->epoch != t->epoch) {
			/* new: registered inline unless a table must grow */
			uint32_t n = e->nobjs;
			if (__builtin_expect(n < e->objs_cap &&
						     (uint64_t) (e->ht_used + 1) * 4 <=
							     (uint64_t) (t->mask + 1) * 3,
					     1)) {
				e->objs[n] = (struct urs_st_eobj){
					p, type, (uint32_t) e->schema->types[type].size};
				t->ht[i] = (struct urs_st_hslot){key, n + 1, (uint16_t) type,
								 t->epoch};
				e->ht_used++;
				e->nobjs = n + 1;
				return n + 1;
			}
			uint32_t id = urs_st_enc_new(e, p, type, i);
			*t = urs_st_idt_of(e);
			return id;
		}
		if (s->key == key) {
			/* same address, other type: an error (not for NULL) */
			uint32_t bad = (s->type ^ type) & -(uint32_t) (key != 0);
			if (__builtin_expect(bad != 0, 0))
				urs_st_enc_type_err(e);
			return s->id;
		}
		i = (i + 1) & t->mask;
	}
}

/**
 * urs_st_enc_id() - urs_st_enc_idl() without a cached table
 * @e: the encoder
 * @p: the object, or NULL
 * @type: its type index
 *
 * Return: the ID (0 for NULL, or after a failure to register).
 */
static inline uint32_t urs_st_enc_id(struct urs_st_enc *e, const void *p, uint32_t type)
{
	struct urs_st_idt t = urs_st_idt_of(e);
	return urs_st_enc_idl(e, &t, p, type);
}

/**
 * urs_st_enc_pf() - prefetch the identity slot an owning pointer will probe
 * @e: the encoder
 * @p: the pointer's value
 */
static inline void urs_st_enc_pf(const struct urs_st_enc *e, const void *p)
{
	__builtin_prefetch(&e->ht[urs_st_addr_hash((uintptr_t) p) & e->ht_mask]);
}

/**
 * urs_st_enc_ref() - note a reference, resolved at the end (urs_st_save)
 * @e: the encoder
 * @p: the target (NULL or not; only non-NULL ones are kept)
 * @want: the reference's target code (scalar code, or URS_ST_REF_TYPE +
 *        type index)
 *
 * No branch on NULL. The caller writes the marker in the object body; the
 * table doubles when full (-ENOMEM sticks in e->err).
 */
static inline void urs_st_enc_ref(struct urs_st_enc *e, const void *p, uint32_t want)
{
	if (__builtin_expect(e->nrefs == e->refs_cap, 0) && !urs_st_enc_ref_grow(e))
		return;
	e->refs[e->nrefs] = (struct urs_st_eref){p, want};
	e->nrefs += p != NULL;
}

/**
 * urs_st_put_ptr() - write a whole-object pointer: varint ID, 0 = NULL
 * @e: the encoder, with room reserved for the varint
 * @p: the object, registered now if new
 * @type: its type index
 */
static inline void urs_st_put_ptr(struct urs_st_enc *e, const void *p, uint32_t type)
{
	urs_st_put_uv(e, urs_st_enc_id(e, p, type));
}

/**
 * urs_st_put_bytes() - write a varint length and @n raw bytes
 * @e: the encoder, with room reserved for the varint
 * @p: the bytes
 * @n: their count
 */
static inline void urs_st_put_bytes(struct urs_st_enc *e, const void *p, size_t n)
{
	urs_st_put_uv(e, n);
	if (n)
		urs_st_put_raw(e, p, n);
}

/**
 * urs_st_allzero() - all-zero test for presence bits
 * @p: the bytes
 * @n: their count
 *
 * Word-wise, no early exit (the sizes are compile-time constants, so this
 * unrolls into a few loads and ORs).
 *
 * Return: true if every byte is zero.
 */
static inline bool urs_st_allzero(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t acc = 0;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, b + i, 8);
		acc |= w;
	}
	for (; i < n; i++)
		acc |= b[i];
	return acc == 0;
}

/* ---------------------------------------------------------------- decoder */

struct urs_st_limits {
	uint32_t max_objects; /* default 1 << 26 */
	uint32_t max_count;   /* vec / map / bytes / string length, default 1 << 30 */
	uint32_t max_types;   /* default 4096 */
	uint32_t max_depth;   /* embedded-struct nesting when skipping, default 64 */
	size_t max_arena;     /* bytes of decoded memory, default 4 GiB */
};

struct urs_st_arena {
	struct urs_st_ablk *blk; /* newest block first */
	uint8_t *p, *end;
	size_t total;
	uint32_t nblocks;
};

/* One stored (in-stream) type and how it maps onto the current schema. */
struct urs_st_stype {
	const uint8_t *name;
	uint32_t name_len;
	bool is_union;
	bool identical; /* same fields, same order, same types as current */
	uint16_t nfields;
	int32_t cur; /* current type index or -1 */
	struct urs_st_sfield *fields;
	uint64_t cur_mask; /* current fields that some stored field maps to */
};

struct urs_st_sfield {
	const uint8_t *name;
	uint32_t name_len;
	uint8_t form, base;
	uint32_t count, sub;
	int32_t cur; /* current field index or -1 (skipped) */
};

struct urs_st_dent {
	void *p;
	int32_t type; /* current type index; -1 = not yet referenced */
	bool done;
};

/* an interior reference through a vec of an object not decoded yet: the vec
 * storage does not exist yet, so the slot is filled after the last object */
struct urs_st_fixup {
	void *slot;
	uint32_t id, type, want, n;
	uint32_t path[2 * URS_ST_MAX_PATH];
};

struct urs_st_dec {
	const uint8_t *p, *end, *base;
	/* the stream's reference table (after the objects): read in step with
	 * the references met in object bodies */
	const uint8_t *rp, *rend;
	uint32_t nrefs, refs_used;
	uint32_t version; /* of the stream being decoded */
	struct urs_st_fixup *fix;
	uint32_t nfix, fix_cap;
	int err;
	const char *why; /* low-level cause, a static string */
	char msg[320];	 /* full error: where and why */
	const struct urs_st_schema *schema;
	struct urs_st_limits lim;
	struct urs_st_arena arena;
	struct urs_st_stype *st;
	uint32_t nst;
	int32_t *cur2st; /* current type index → stored type index or -1 */
	struct urs_st_dent *ids;
	uint32_t nids;
	uint32_t obj; /* object being decoded (for messages) */
	uint32_t depth;
	bool borrow; /* bytes fields may point into the input */
	struct urs_st_tstat *stats;
};

/**
 * urs_st_dec_init() - a decoder; allocates nothing
 * @d: the decoder (cleared first)
 * @lim: bounds on what a stream may make it do, or NULL; zero fields take
 *       the defaults (see struct urs_st_limits)
 */
void urs_st_dec_init(struct urs_st_dec *d, const struct urs_st_limits *lim);

/**
 * urs_st_dec_free() - free the arena: every object of every load with @d
 * @d: the decoder; its object table and statistics go too, its limits stay
 *     (it may load again)
 */
void urs_st_dec_free(struct urs_st_dec *d);

/**
 * urs_st_dec_stats() - per-type counts and times (ns) for the next loads
 * @d: the decoder
 * @on: true to count (from zero), false turns it off
 *
 * As urs_st_enc_stats(): d->stats, indexed by current type, 4096 types.
 *
 * Return: 0 or -ENOMEM.
 */
int urs_st_dec_stats(struct urs_st_dec *d, bool on);

/**
 * urs_st_load() - decode one stream
 * @d: the decoder
 * @schema: the current schema (the stream's may be older or newer: fields
 *          and types are matched by name, see docs/state-format.md)
 * @type: the root's type index in @schema
 * @buf: the stream, untrusted: every count, index and length is checked
 * @len: its length
 * @dst: an initialized destination for the root (see the zero-value rule
 *       in docs/state-format.md), or NULL
 * @out: with @dst NULL, gets the root (object 1), allocated from the arena
 *
 * Every other object lives in @d's arena until urs_st_dec_free() or the
 * next load (the arena is reset per load). Objects of types the schema no
 * longer has are skipped; after-load hooks run last, children first.
 * Bytes fields point into @buf when d->borrow is set.
 *
 * Return: 0, or a negative errno with d->msg saying where: -EINVAL (bad
 * @type, neither @dst nor @out), -EBADMSG (malformed or truncated), -E2BIG
 * (a limit exceeded), -ENOMEM.
 */
int urs_st_load(struct urs_st_dec *d, const struct urs_st_schema *schema, uint32_t type,
		const void *buf, size_t len, void *dst, void **out);

/**
 * urs_st_alloc() - zeroed memory from the decoder's arena
 * @d: the decoder
 * @n: bytes (rounded up to 8)
 *
 * From the current block, else a spare one or a new one of 1 MiB (or @n);
 * freed only with the arena.
 *
 * Return: the memory, or NULL with d->err set: -E2BIG past
 * limits.max_arena, -ENOMEM.
 */
void *urs_st_alloc(struct urs_st_dec *d, size_t n);

/**
 * urs_st_get_uv_slow() - read a varint of more than one byte
 * @d: the decoder
 *
 * Return: the value, or 0 after failing the load (truncated, longer than
 * 10 bytes, or over 64 bits).
 */
uint64_t urs_st_get_uv_slow(struct urs_st_dec *d);

/**
 * urs_st_get_ptr() - read a whole-object pointer (varint ID)
 * @d: the decoder
 * @type: the pointee's current type index
 *
 * The object is allocated (zeroed) at its first mention and decoded when
 * its turn comes.
 *
 * Return: the object, or NULL for ID 0 or after failing the load (ID out of
 * range, the object already met as another type).
 */
void *urs_st_get_ptr(struct urs_st_dec *d, uint32_t type);

/**
 * urs_st_get_ref() - read a reference into *@slot
 * @d: the decoder
 * @want: the field's target code (scalar code, or URS_ST_REF_TYPE + type)
 * @slot: the field being decoded
 *
 * The next entry of the stream's reference table, mapped onto the current
 * schema's fields. May fill the slot later (see struct urs_st_fixup): the
 * return value is stored first.
 *
 * Return: the target; NULL for a NULL reference, one filled in later, or
 * after failing the load.
 */
void *urs_st_get_ref(struct urs_st_dec *d, uint32_t want, void *slot);

/**
 * urs_st_skip() - skip a stored field the current schema does not have
 * @d: the decoder
 * @stype: the stored type index
 * @sfield: the stored field index
 *
 * References in it are consumed from the reference table, not resolved;
 * embedded structs nest at most limits.max_depth deep.
 *
 * Return: 0 or d->err.
 */
int urs_st_skip(struct urs_st_dec *d, uint32_t stype, uint32_t sfield);

/**
 * urs_st_get_count() - read an element count (vec, map, bytes, string)
 * @d: the decoder
 * @min_elem: the fewest input bytes one element takes
 *
 * Return: the count, or 0 after failing the load: -E2BIG over
 * limits.max_count, -EBADMSG when the rest of the input cannot hold it.
 */
uint32_t urs_st_get_count(struct urs_st_dec *d, size_t min_elem);

/**
 * urs_st_get_raw() - take @n bytes of input
 * @d: the decoder
 * @n: the count
 *
 * Return: the bytes, in the input; NULL after failing the load (truncated).
 */
const uint8_t *urs_st_get_raw(struct urs_st_dec *d, size_t n);

/**
 * urs_st_field_err() - name the field a load failed in
 * @d: the decoder (d->err set to -EBADMSG if it was not set)
 * @type: the current type index of the object
 * @field: the field's name
 *
 * Fills d->msg once: "object N (type T) field F: why".
 *
 * Return: d->err.
 */
int urs_st_field_err(struct urs_st_dec *d, uint32_t type, const char *field);

/**
 * urs_st_dec_fail() - fail the load: the stream is malformed
 * @d: the decoder; the first error stays (-EBADMSG)
 * @why: the low-level cause, a static string kept in d->why
 *
 * Stops every reader: later reads see an empty input.
 */
void urs_st_dec_fail(struct urs_st_dec *d, const char *why);

/**
 * urs_st_load_union() - read a union: variant tag and object
 * @d: the decoder
 * @stype: the union's stored type index
 * @tag: gets the current variant number (1-based; 0: none)
 * @ptr: gets the variant's object (NULL: none)
 *
 * A variant the current schema dropped reads as none.
 *
 * Return: 0 or d->err.
 */
int urs_st_load_union(struct urs_st_dec *d, uint32_t stype, uint32_t *tag, void **ptr);

/**
 * urs_st_save_union() - write a union: variant tag, then the object's ID
 * @e: the encoder
 * @utype: the union's type index
 * @tag: the variant (1-based); 0 or out of range: none
 * @p: the variant's object; NULL: none
 */
void urs_st_save_union(struct urs_st_enc *e, uint32_t utype, uint32_t tag, const void *p);

/**
 * urs_st_get_uv() - read a varint
 * @d: the decoder
 *
 * One byte inline; longer ones urs_st_get_uv_slow().
 *
 * Return: the value, or 0 after failing the load.
 */
static inline uint64_t urs_st_get_uv(struct urs_st_dec *d)
{
	if (__builtin_expect(d->p < d->end && *d->p < 0x80, 1))
		return *d->p++;
	return urs_st_get_uv_slow(d);
}

/**
 * urs_st_get_f64() - read a double (8 bytes, host order)
 * @d: the decoder
 *
 * Return: the value, or 0 after failing the load (truncated).
 */
static inline double urs_st_get_f64(struct urs_st_dec *d)
{
	double v = 0;
	if (__builtin_expect(d->end - d->p >= 8, 1)) {
		memcpy(&v, d->p, 8);
		d->p += 8;
	} else {
		urs_st_dec_fail(d, "truncated f64");
	}
	return v;
}

/**
 * urs_st_get_ub() - read a bounded unsigned scalar
 * @d: the decoder
 * @max: the largest value the field's C type holds
 *
 * Return: the value, or 0 after failing the load (out of range).
 */
static inline uint64_t urs_st_get_ub(struct urs_st_dec *d, uint64_t max)
{
	uint64_t v = urs_st_get_uv(d);
	if (__builtin_expect(v > max, 0)) {
		urs_st_dec_fail(d, "value out of range for the field type");
		return 0;
	}
	return v;
}

/**
 * urs_st_get_ib() - read a bounded signed scalar (zigzag varint)
 * @d: the decoder
 * @min: the smallest value the field's C type holds
 * @max: the largest
 *
 * Return: the value, or 0 after failing the load (out of range).
 */
static inline int64_t urs_st_get_ib(struct urs_st_dec *d, int64_t min, int64_t max)
{
	int64_t v = urs_st_unzz(urs_st_get_uv(d));
	if (__builtin_expect(v < min || v > max, 0)) {
		urs_st_dec_fail(d, "value out of range for the field type");
		return 0;
	}
	return v;
}

/* ------------------------------------------------------------- hash table */

/*
 * The hash tables ursa's state uses: open addressing, linear probing,
 * power-of-two capacity, values are 64-bit (an integer or a pointer), keys
 * are a u64 (struct urs_map, `map u64 V` in a schema), a fixed number of
 * raw bytes (struct urs_bmap, `map key[N] V`: addresses, 5-tuples, packed
 * structs) or a NUL-terminated string (struct urs_smap, `map string V`).
 * They live inside the structs that hold them. put() grows with realloc;
 * tables produced by the decoder live in its arena: read them, do not put
 * into or free them.
 */
union urs_map_val {
	uint64_t u;
	void *p;
};

struct urs_map_ent {
	uint64_t key;
	union urs_map_val val;
};

struct urs_map {
	struct urs_map_ent *ents;
	uint8_t *used;
	uint32_t cap, len; /* cap: 0 or a power of two */
};

/**
 * urs_map_put() - insert or replace
 * @m: the table (zeroed to start; not one the decoder made)
 * @key: the key
 * @val: the value
 *
 * The table grows (doubling from 8) before it is half full.
 *
 * Return: 0 or -ENOMEM.
 */
int urs_map_put(struct urs_map *m, uint64_t key, uint64_t val);

/**
 * urs_map_get() - look @key up
 * @m: the table
 * @key: the key
 *
 * Return: its entry, or NULL.
 */
struct urs_map_ent *urs_map_get(const struct urs_map *m, uint64_t key);

/**
 * urs_map_free() - free the table's arrays; @m is zeroed
 * @m: a table built with urs_map_put() (never an arena table)
 */
void urs_map_free(struct urs_map *m);

/**
 * urs_map_init_arena() - decoder side: an arena table sized for @n entries
 * @d: the decoder
 * @m: the table (cleared first)
 * @n: the entries to come (kept under half full)
 *
 * Return: 0, or d->err (-E2BIG, -ENOMEM).
 */
int urs_map_init_arena(struct urs_st_dec *d, struct urs_map *m, uint32_t n);

/* fixed-size byte keys: entry i = value (8 bytes) then the key, `stride`
 * bytes apart (8 + ksize rounded up to 8) */
struct urs_bmap {
	uint8_t *ents;
	uint8_t *used;
	uint32_t cap, len;
	uint32_t ksize, stride; /* set by the first put (or the decoder) */
};

/**
 * urs_bmap_put() - insert or replace
 * @m: the table (zeroed to start; not one the decoder made)
 * @ksize: the key size, 1..URS_ST_MAP_KMAX; the first put sets the table's
 * @key: @ksize bytes, copied
 * @val: the value
 *
 * Return: 0; -EINVAL when @ksize differs from the table's key size (or is
 * out of range); -E2BIG past 2^30 slots; -ENOMEM.
 */
int urs_bmap_put(struct urs_bmap *m, uint32_t ksize, const void *key, uint64_t val);

/**
 * urs_bmap_get() - look @key up
 * @m: the table
 * @key: the table's key size of bytes
 *
 * Return: its value slot, or NULL.
 */
union urs_map_val *urs_bmap_get(const struct urs_bmap *m, const void *key);

/**
 * urs_bmap_free() - free the table's arrays; @m is zeroed
 * @m: a table built with urs_bmap_put() (never an arena table)
 */
void urs_bmap_free(struct urs_bmap *m);

/**
 * urs_bmap_init_arena() - decoder side: an arena table sized for @n entries
 * @d: the decoder
 * @m: the table (cleared first)
 * @ksize: the key size from the stored field
 * @n: the entries to come
 *
 * Return: 0, or d->err: -EBADMSG for a key size out of range, -E2BIG or
 * -ENOMEM from the arena.
 */
int urs_bmap_init_arena(struct urs_st_dec *d, struct urs_bmap *m, uint32_t ksize, uint32_t n);

/**
 * urs_bmap_val() - the value slot of entry @i
 * @m: the table
 * @i: a slot index below m->cap (urs_map_foreach)
 *
 * Return: the slot.
 */
static inline union urs_map_val *urs_bmap_val(const struct urs_bmap *m, uint32_t i)
{
	return (union urs_map_val *) (void *) (m->ents + (size_t) i * m->stride);
}

/**
 * urs_bmap_key() - the key of entry @i
 * @m: the table
 * @i: a slot index below m->cap (urs_map_foreach)
 *
 * Return: its m->ksize bytes.
 */
static inline const uint8_t *urs_bmap_key(const struct urs_bmap *m, uint32_t i)
{
	return m->ents + (size_t) i * m->stride + 8;
}

/* string keys: put() copies the key (freed by urs_smap_free) */
struct urs_smap_ent {
	char *key;
	union urs_map_val val;
};

struct urs_smap {
	struct urs_smap_ent *ents;
	uint8_t *used;
	uint32_t cap, len;
};

/**
 * urs_smap_put() - insert or replace
 * @m: the table (zeroed to start; not one the decoder made)
 * @key: a NUL-terminated string, copied when new
 * @val: the value
 *
 * Return: 0; -EINVAL for a NULL @key; -E2BIG past 2^30 slots; -ENOMEM.
 */
int urs_smap_put(struct urs_smap *m, const char *key, uint64_t val);

/**
 * urs_smap_get() - look @key up
 * @m: the table
 * @key: the string (NULL: not found)
 *
 * Return: its entry, or NULL.
 */
struct urs_smap_ent *urs_smap_get(const struct urs_smap *m, const char *key);

/**
 * urs_smap_free() - free the keys and the table's arrays; @m is zeroed
 * @m: a table built with urs_smap_put() (never an arena table)
 */
void urs_smap_free(struct urs_smap *m);

/**
 * urs_smap_init_arena() - decoder side: an arena table sized for @n entries
 * @d: the decoder
 * @m: the table (cleared first)
 * @n: the entries to come
 *
 * Return: 0, or d->err (-E2BIG, -ENOMEM).
 */
int urs_smap_init_arena(struct urs_st_dec *d, struct urs_smap *m, uint32_t n);

/**
 * urs_smap_add_dec() - decoder: insert a key read from the stream
 * @d: the decoder
 * @m: a table from urs_smap_init_arena()
 * @key: @len bytes (no NUL inside), copied into the arena NUL-terminated
 * @len: their count
 *
 * Fails the load on a NUL in the key, a duplicate key, or more entries
 * than the table was sized for.
 *
 * Return: the new value slot, or NULL with d->err set (also NULL, d->err
 * untouched, for a NULL @key or a table never made).
 */
union urs_map_val *urs_smap_add_dec(struct urs_st_dec *d, struct urs_smap *m, const uint8_t *key,
				    uint32_t len);

/**
 * urs_bmap_add_dec() - decoder: insert a fixed-size key read from the stream
 * @d: the decoder
 * @m: a table from urs_bmap_init_arena()
 * @key: m->ksize bytes, copied into the table
 *
 * Fails the load on a duplicate key, or more entries than the table was
 * sized for.
 *
 * Return: the new value slot, or NULL with d->err set (also NULL, d->err
 * untouched, for a NULL @key or a table never made).
 */
union urs_map_val *urs_bmap_add_dec(struct urs_st_dec *d, struct urs_bmap *m, const uint8_t *key);

/**
 * urs_map_hash() - hash of a u64 key (a murmur3-style finalizer)
 * @k: the key
 *
 * Return: the hash; mask it to the table.
 */
static inline uint32_t urs_map_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (uint32_t) k;
}

/**
 * urs_map_hash_bytes() - hash of @n key bytes (fixed-size and string keys)
 * @key: the bytes
 * @n: their count
 *
 * Return: the hash; mask it to the table.
 */
static inline uint32_t urs_map_hash_bytes(const void *key, size_t n)
{
	const uint8_t *b = key;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	uint64_t t = 0;
	for (size_t k = 0; i + k < n; k++)
		t |= (uint64_t) b[i + k] << (8 * k);
	return urs_map_hash(h ^ t);
}

/* every used slot i of any of the three tables */
#define urs_map_foreach(m, i)                   \
	for (uint32_t i = 0; i < (m)->cap; i++) \
		if ((m)->used[i])

#endif
