/*
 * host/spec.c — config.json (OCI runtime-spec 1.0–1.2) → struct urs_spec.
 *
 * jansson parses the text; we then walk the tree once, checking types and
 * ranges and copying everything into an arena owned by the spec, while
 * keeping the JSON path of the current field ("linux.namespaces[2].type") so
 * every error can name it. Unknown fields are ignored (the spec allows
 * extensions); a known field with the wrong type is an error. JSON null is
 * treated like an absent field, as Go's encoding/json (runc) does.
 *
 * jansson refuses integers above INT64_MAX, but the spec has uint64 fields
 * (rlimits with RLIM_INFINITY, seccomp argument values). When jansson reports
 * a numeric overflow we rewrite such literals into marked strings and parse
 * again; the typed getters below understand the mark.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <jansson.h>

#include "host/spec.h"
#include "runtime/common.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* ---- arena: every string and array of one spec ---- */

struct chunk {
	struct chunk *next;
	size_t used, cap;
	_Alignas(max_align_t) unsigned char data[];
};

struct arena {
	struct chunk *head;
	size_t next_size;
};

static void *arena_alloc(struct arena *a, size_t size)
{
	if (size > SIZE_MAX / 4)
		return NULL;
	size = (size + 15) & ~(size_t) 15;
	struct chunk *ch = a->head;
	if (!ch || ch->cap - ch->used < size) {
		size_t cap = a->next_size > size ? a->next_size : size;
		ch = calloc(1, sizeof(*ch) + cap);
		if (!ch)
			return NULL;
		ch->cap = cap;
		ch->next = a->head;
		a->head = ch;
		if (a->next_size < (1u << 20))
			a->next_size *= 2;
	}
	void *p = ch->data + ch->used;
	ch->used += size;
	return p;
}

static void *arena_array(struct arena *a, size_t n, size_t elem)
{
	if (elem && n > SIZE_MAX / 4 / elem)
		return NULL;
	return arena_alloc(a, n * elem > 0 ? n * elem : 1);
}

static void arena_free(struct arena *a)
{
	if (!a)
		return;
	struct chunk *ch = a->head;
	while (ch) {
		struct chunk *next = ch->next;
		free(ch);
		ch = next;
	}
	free(a);
}

/* ---- parse context: arena, error sink, current JSON path ---- */

struct pctx {
	struct arena *a;
	struct urs_err *err;
	const char *file;
	size_t plen;
	char path[256];
};

__attribute__((format(printf, 2, 3))) static int fail(struct pctx *c, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->plen)
		return urs_err_set(c->err, -EINVAL, "%s: %s: %s", c->file, c->path, msg);
	return urs_err_set(c->err, -EINVAL, "%s: %s", c->file, msg);
}

static int nomem(struct pctx *c)
{
	return urs_err_set(c->err, -ENOMEM, "%s: out of memory", c->file);
}

__attribute__((format(printf, 2, 3))) static size_t push(struct pctx *c, const char *fmt, ...)
{
	size_t old = c->plen, room = sizeof(c->path) - old;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(c->path + old, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	c->plen += (size_t) n < room ? (size_t) n : room - 1;
	return old;
}

static size_t push_key(struct pctx *c, const char *key)
{
	return c->plen ? push(c, ".%s", key) : push(c, "%s", key);
}

static size_t push_idx(struct pctx *c, size_t i)
{
	return push(c, "[%zu]", i);
}

static void pop(struct pctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

static char *dup_str(struct pctx *c, const char *s, size_t len)
{
	char *p = arena_alloc(c->a, len + 1);
	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

/* ---- typed access to JSON values ---- */

/* Integer literals above INT64_MAX are rewritten to strings with this prefix. */
#define BIGINT_MARK	"\x01u64:"
#define BIGINT_MARK_LEN 5

static bool is_bigint(const json_t *v)
{
	if (!json_is_string(v))
		return false;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (n < BIGINT_MARK_LEN + 19 || n > BIGINT_MARK_LEN + 20 ||
	    memcmp(s, BIGINT_MARK, BIGINT_MARK_LEN))
		return false;
	return strspn(s + BIGINT_MARK_LEN, "0123456789") == n - BIGINT_MARK_LEN;
}

static const char *tname(const json_t *v)
{
	if (is_bigint(v))
		return "integer";
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "integer";
	case JSON_REAL:
		return "number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

/* A member, with JSON null treated as absent. */
static json_t *get(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_null(v) ? NULL : v;
}

static int missing(struct pctx *c, const char *key, const char *why)
{
	size_t s = push_key(c, key);
	int r = fail(c, "missing (%s)", why);
	pop(c, s);
	return r;
}

static int v_str(struct pctx *c, json_t *v, char **out)
{
	if (!json_is_string(v) || is_bigint(v))
		return fail(c, "expected a string, got %s", tname(v));
	*out = dup_str(c, json_string_value(v), json_string_length(v));
	return *out ? 0 : nomem(c);
}

static int v_bool(struct pctx *c, json_t *v, bool *out)
{
	if (!json_is_boolean(v))
		return fail(c, "expected a boolean, got %s", tname(v));
	*out = json_is_true(v);
	return 0;
}

static int v_u64(struct pctx *c, json_t *v, uint64_t max, uint64_t *out)
{
	uint64_t x;
	if (is_bigint(v)) {
		x = strtoull(json_string_value(v) + BIGINT_MARK_LEN, NULL, 10);
	} else if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0)
			return fail(c, "expected a non-negative integer, got %" JSON_INTEGER_FORMAT,
				    i);
		x = (uint64_t) i;
	} else {
		return fail(c, "expected an integer, got %s", tname(v));
	}
	if (x > max)
		return fail(c, "%" PRIu64 " is out of range (max %" PRIu64 ")", x, max);
	*out = x;
	return 0;
}

static int v_i64(struct pctx *c, json_t *v, int64_t min, int64_t max, int64_t *out)
{
	if (is_bigint(v))
		return fail(c, "%s is out of range (max %" PRId64 ")",
			    json_string_value(v) + BIGINT_MARK_LEN, max);
	if (!json_is_integer(v))
		return fail(c, "expected an integer, got %s", tname(v));
	json_int_t i = json_integer_value(v);
	if (i < min || i > max)
		return fail(c,
			    "%" JSON_INTEGER_FORMAT " is out of range (%" PRId64 "..%" PRId64 ")",
			    i, min, max);
	*out = i;
	return 0;
}

/* A NULL-terminated string array. */
static int v_strv(struct pctx *c, json_t *v, char ***out, size_t *n)
{
	if (!json_is_array(v))
		return fail(c, "expected an array of strings, got %s", tname(v));
	size_t cnt = json_array_size(v);
	char **arr = arena_array(c->a, cnt + 1, sizeof(*arr));
	if (!arr)
		return nomem(c);
	for (size_t i = 0; i < cnt; i++) {
		size_t s = push_idx(c, i);
		int r = v_str(c, json_array_get(v, i), &arr[i]);
		if (r)
			return r;
		pop(c, s);
	}
	arr[cnt] = NULL;
	*out = arr;
	*n = cnt;
	return 0;
}

/* A JSON object of string values (annotations, sysctl, unified). */
static int v_kv(struct pctx *c, json_t *v, struct urs_kv **out, size_t *n)
{
	if (!json_is_object(v))
		return fail(c, "expected an object of strings, got %s", tname(v));
	struct urs_kv *kv = arena_array(c->a, json_object_size(v), sizeof(*kv));
	if (!kv)
		return nomem(c);
	size_t i = 0;
	const char *key;
	json_t *val;
	json_object_foreach(v, key, val)
	{
		size_t s = push(c, "[\"%s\"]", key);
		int r = v_str(c, val, &kv[i].value);
		if (r)
			return r;
		pop(c, s);
		kv[i].key = dup_str(c, key, strlen(key));
		if (!kv[i].key)
			return nomem(c);
		i++;
	}
	*out = kv;
	*n = i;
	return 0;
}

/*
 * Field getters: look `key` up in `o`; absent (or null) is fine when `req` is
 * NULL, otherwise "missing (<req>)". They leave *out untouched when absent.
 */
static int f_str(struct pctx *c, json_t *o, const char *key, const char *req, char **out)
{
	json_t *v = get(o, key);
	if (!v)
		return req ? missing(c, key, req) : 0;
	size_t s = push_key(c, key);
	int r = v_str(c, v, out);
	if (!r)
		pop(c, s);
	return r;
}

static int f_bool(struct pctx *c, json_t *o, const char *key, const char *req, bool *out)
{
	json_t *v = get(o, key);
	if (!v)
		return req ? missing(c, key, req) : 0;
	size_t s = push_key(c, key);
	int r = v_bool(c, v, out);
	if (!r)
		pop(c, s);
	return r;
}

static int f_u64(struct pctx *c, json_t *o, const char *key, const char *req, uint64_t max,
		 uint64_t *out, bool *has)
{
	json_t *v = get(o, key);
	if (!v)
		return req ? missing(c, key, req) : 0;
	size_t s = push_key(c, key);
	int r = v_u64(c, v, max, out);
	if (r)
		return r;
	pop(c, s);
	if (has)
		*has = true;
	return 0;
}

static int f_u32(struct pctx *c, json_t *o, const char *key, const char *req, uint32_t *out,
		 bool *has)
{
	uint64_t x = *out;
	int r = f_u64(c, o, key, req, UINT32_MAX, &x, has);
	*out = (uint32_t) x;
	return r;
}

static int f_i64(struct pctx *c, json_t *o, const char *key, const char *req, int64_t min,
		 int64_t max, int64_t *out, bool *has)
{
	json_t *v = get(o, key);
	if (!v)
		return req ? missing(c, key, req) : 0;
	size_t s = push_key(c, key);
	int r = v_i64(c, v, min, max, out);
	if (r)
		return r;
	pop(c, s);
	if (has)
		*has = true;
	return 0;
}

static int f_strv(struct pctx *c, json_t *o, const char *key, const char *req, char ***out,
		  size_t *n)
{
	json_t *v = get(o, key);
	if (!v)
		return req ? missing(c, key, req) : 0;
	size_t s = push_key(c, key);
	int r = v_strv(c, v, out, n);
	if (!r)
		pop(c, s);
	return r;
}

static int f_kv(struct pctx *c, json_t *o, const char *key, struct urs_kv **out, size_t *n)
{
	json_t *v = get(o, key);
	if (!v)
		return 0;
	size_t s = push_key(c, key);
	int r = v_kv(c, v, out, n);
	if (!r)
		pop(c, s);
	return r;
}

typedef int (*obj_fn)(struct pctx *c, json_t *o, void *dst);

/* Descend into object member `key` with fn (no-op when absent and optional). */
static int f_obj(struct pctx *c, json_t *o, const char *key, const char *req, obj_fn fn, void *dst)
{
	json_t *v = get(o, key);
	if (!v)
		return req ? missing(c, key, req) : 0;
	size_t s = push_key(c, key);
	if (!json_is_object(v))
		return fail(c, "expected an object, got %s", tname(v));
	int r = fn(c, v, dst);
	if (!r)
		pop(c, s);
	return r;
}

/* An array of objects: allocate n elements of elem_size and run fn on each. */
static int f_objv(struct pctx *c, json_t *o, const char *key, size_t elem_size, obj_fn fn,
		  void **out, size_t *n)
{
	json_t *v = get(o, key);
	if (!v)
		return 0;
	size_t s = push_key(c, key);
	if (!json_is_array(v))
		return fail(c, "expected an array, got %s", tname(v));
	size_t cnt = json_array_size(v);
	unsigned char *arr = arena_array(c->a, cnt, elem_size);
	if (!arr)
		return nomem(c);
	for (size_t i = 0; i < cnt; i++) {
		size_t s2 = push_idx(c, i);
		json_t *e = json_array_get(v, i);
		if (!json_is_object(e))
			return fail(c, "expected an object, got %s", tname(e));
		int r = fn(c, e, arr + i * elem_size);
		if (r)
			return r;
		pop(c, s2);
	}
	pop(c, s);
	*out = arr;
	*n = cnt;
	return 0;
}

/* Accept an optional member of a given JSON type without keeping it. */
static int f_accept(struct pctx *c, json_t *o, const char *key, json_type type)
{
	json_t *v = get(o, key);
	if (!v || json_typeof(v) == type)
		return 0;
	size_t s = push_key(c, key);
	int r = fail(c, "expected %s, got %s", type == JSON_OBJECT ? "an object" : "an array",
		     tname(v));
	pop(c, s);
	return r;
}

#define TRY(expr)                  \
	do {                       \
		int r_ = (expr);   \
		if (r_)            \
			return r_; \
	} while (0)

/* ---- name tables ---- */

static const char *const cap_names[] = {
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_DAC_READ_SEARCH",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_SETGID",
	"CAP_SETUID",
	"CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST",
	"CAP_NET_ADMIN",
	"CAP_NET_RAW",
	"CAP_IPC_LOCK",
	"CAP_IPC_OWNER",
	"CAP_SYS_MODULE",
	"CAP_SYS_RAWIO",
	"CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE",
	"CAP_SYS_PACCT",
	"CAP_SYS_ADMIN",
	"CAP_SYS_BOOT",
	"CAP_SYS_NICE",
	"CAP_SYS_RESOURCE",
	"CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG",
	"CAP_MKNOD",
	"CAP_LEASE",
	"CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL",
	"CAP_SETFCAP",
	"CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN",
	"CAP_SYSLOG",
	"CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",
	"CAP_AUDIT_READ",
	"CAP_PERFMON",
	"CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

const char *urs_cap_name(unsigned int cap)
{
	return cap < URS_ARRAY_SIZE(cap_names) ? cap_names[cap] : NULL;
}

int urs_cap_from_name(const char *name)
{
	for (size_t i = 0; i < URS_ARRAY_SIZE(cap_names); i++)
		if (!strcmp(cap_names[i], name))
			return (int) i;
	return -1;
}

static const char *const ns_names[URS_NS__COUNT] = {
	[URS_NS_PID] = "pid",	    [URS_NS_NETWORK] = "network", [URS_NS_MOUNT] = "mount",
	[URS_NS_IPC] = "ipc",	    [URS_NS_UTS] = "uts",	  [URS_NS_USER] = "user",
	[URS_NS_CGROUP] = "cgroup", [URS_NS_TIME] = "time",
};

const char *urs_ns_name(enum urs_ns_type t)
{
	return (unsigned) t < URS_NS__COUNT ? ns_names[t] : NULL;
}

int urs_ns_clone_flag(enum urs_ns_type t)
{
	static const int flags[URS_NS__COUNT] = {
		[URS_NS_PID] = CLONE_NEWPID,	   [URS_NS_NETWORK] = CLONE_NEWNET,
		[URS_NS_MOUNT] = CLONE_NEWNS,	   [URS_NS_IPC] = CLONE_NEWIPC,
		[URS_NS_UTS] = CLONE_NEWUTS,	   [URS_NS_USER] = CLONE_NEWUSER,
		[URS_NS_CGROUP] = CLONE_NEWCGROUP, [URS_NS_TIME] = CLONE_NEWTIME,
	};
	return (unsigned) t < URS_NS__COUNT ? flags[t] : 0;
}

static const char *const hook_names[URS_HOOK__COUNT] = {
	[URS_HOOK_PRESTART] = "prestart",
	[URS_HOOK_CREATE_RUNTIME] = "createRuntime",
	[URS_HOOK_CREATE_CONTAINER] = "createContainer",
	[URS_HOOK_START_CONTAINER] = "startContainer",
	[URS_HOOK_POSTSTART] = "poststart",
	[URS_HOOK_POSTSTOP] = "poststop",
};

const char *urs_hook_name(enum urs_hook_kind k)
{
	return (unsigned) k < URS_HOOK__COUNT ? hook_names[k] : NULL;
}

static const char *const scmp_actions[] = {
	[URS_SCMP_ACT_KILL] = "SCMP_ACT_KILL",
	[URS_SCMP_ACT_KILL_PROCESS] = "SCMP_ACT_KILL_PROCESS",
	[URS_SCMP_ACT_KILL_THREAD] = "SCMP_ACT_KILL_THREAD",
	[URS_SCMP_ACT_TRAP] = "SCMP_ACT_TRAP",
	[URS_SCMP_ACT_ERRNO] = "SCMP_ACT_ERRNO",
	[URS_SCMP_ACT_TRACE] = "SCMP_ACT_TRACE",
	[URS_SCMP_ACT_ALLOW] = "SCMP_ACT_ALLOW",
	[URS_SCMP_ACT_LOG] = "SCMP_ACT_LOG",
	[URS_SCMP_ACT_NOTIFY] = "SCMP_ACT_NOTIFY",
};

const char *urs_scmp_action_name(enum urs_scmp_action a)
{
	return (unsigned) a < URS_ARRAY_SIZE(scmp_actions) ? scmp_actions[a] : NULL;
}

static const char *const scmp_ops[] = {
	[URS_SCMP_CMP_NE] = "SCMP_CMP_NE",
	[URS_SCMP_CMP_LT] = "SCMP_CMP_LT",
	[URS_SCMP_CMP_LE] = "SCMP_CMP_LE",
	[URS_SCMP_CMP_EQ] = "SCMP_CMP_EQ",
	[URS_SCMP_CMP_GE] = "SCMP_CMP_GE",
	[URS_SCMP_CMP_GT] = "SCMP_CMP_GT",
	[URS_SCMP_CMP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
};

const char *urs_scmp_op_name(enum urs_scmp_op op)
{
	return (unsigned) op < URS_ARRAY_SIZE(scmp_ops) ? scmp_ops[op] : NULL;
}

static const char *const scmp_arches[] = {
	"SCMP_ARCH_X86",     "SCMP_ARCH_X86_64",   "SCMP_ARCH_X32",	    "SCMP_ARCH_ARM",
	"SCMP_ARCH_AARCH64", "SCMP_ARCH_MIPS",	   "SCMP_ARCH_MIPS64",	    "SCMP_ARCH_MIPS64N32",
	"SCMP_ARCH_MIPSEL",  "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
	"SCMP_ARCH_PPC64",   "SCMP_ARCH_PPC64LE",  "SCMP_ARCH_S390",	    "SCMP_ARCH_S390X",
	"SCMP_ARCH_PARISC",  "SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64",	    "SCMP_ARCH_LOONGARCH64",
	"SCMP_ARCH_M68K",    "SCMP_ARCH_SH",	   "SCMP_ARCH_SHEB",
};

static const char *const scmp_flags[] = {
	"SECCOMP_FILTER_FLAG_TSYNC",
	"SECCOMP_FILTER_FLAG_LOG",
	"SECCOMP_FILTER_FLAG_SPEC_ALLOW",
	"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
};

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
	{"RLIMIT_CPU", RLIMIT_CPU},	      {"RLIMIT_FSIZE", RLIMIT_FSIZE},
	{"RLIMIT_DATA", RLIMIT_DATA},	      {"RLIMIT_STACK", RLIMIT_STACK},
	{"RLIMIT_CORE", RLIMIT_CORE},	      {"RLIMIT_RSS", RLIMIT_RSS},
	{"RLIMIT_NPROC", RLIMIT_NPROC},	      {"RLIMIT_NOFILE", RLIMIT_NOFILE},
	{"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},   {"RLIMIT_AS", RLIMIT_AS},
	{"RLIMIT_LOCKS", RLIMIT_LOCKS},	      {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
	{"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},
	{"RLIMIT_RTPRIO", RLIMIT_RTPRIO},     {"RLIMIT_RTTIME", RLIMIT_RTTIME},
};

static const struct {
	const char *name;
	unsigned long flags;
} propagations[] = {
	{"private", MS_PRIVATE},       {"rprivate", MS_PRIVATE | MS_REC},
	{"shared", MS_SHARED},	       {"rshared", MS_SHARED | MS_REC},
	{"slave", MS_SLAVE},	       {"rslave", MS_SLAVE | MS_REC},
	{"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
};

static int lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], s))
			return (int) i;
	return -1;
}

/* "a, b, c" for error messages. */
static void join_names(char *buf, size_t size, const char *const *names, size_t n)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && off < size; i++) {
		int k = snprintf(buf + off, size - off, "%s%s", i ? ", " : "", names[i]);
		if (k < 0)
			break;
		off += (size_t) k;
	}
}

/* A string member that must be one of names[]; *idx gets its index. */
static int f_enum(struct pctx *c, json_t *o, const char *key, const char *req, const char *what,
		  const char *const *names, size_t n, int *idx)
{
	char *s = NULL;
	TRY(f_str(c, o, key, req, &s));
	if (!s)
		return 0;
	int i = lookup(names, n, s);
	if (i < 0) {
		char list[256];
		join_names(list, sizeof(list), names, n);
		size_t sv = push_key(c, key);
		int r = fail(c, "unknown %s \"%s\" (expected one of: %s)", what, s, list);
		pop(c, sv);
		return r;
	}
	*idx = i;
	return 0;
}

/* ---- mounts ---- */

enum mopt_kind { M_SET, M_CLR, M_PROP, M_RSET, M_RCLR, M_RATIME, M_NONE };

static const struct {
	const char *name;
	enum mopt_kind kind;
	unsigned long v;
} mount_opts[] = {
	{"defaults", M_NONE, 0},
	{"bind", M_SET, MS_BIND},
	{"rbind", M_SET, MS_BIND | MS_REC},
	{"ro", M_SET, MS_RDONLY},
	{"rw", M_CLR, MS_RDONLY},
	{"nosuid", M_SET, MS_NOSUID},
	{"suid", M_CLR, MS_NOSUID},
	{"nodev", M_SET, MS_NODEV},
	{"dev", M_CLR, MS_NODEV},
	{"noexec", M_SET, MS_NOEXEC},
	{"exec", M_CLR, MS_NOEXEC},
	{"sync", M_SET, MS_SYNCHRONOUS},
	{"async", M_CLR, MS_SYNCHRONOUS},
	{"dirsync", M_SET, MS_DIRSYNC},
	{"remount", M_SET, MS_REMOUNT},
	{"mand", M_SET, MS_MANDLOCK},
	{"nomand", M_CLR, MS_MANDLOCK},
	{"atime", M_CLR, MS_NOATIME},
	{"noatime", M_SET, MS_NOATIME},
	{"diratime", M_CLR, MS_NODIRATIME},
	{"nodiratime", M_SET, MS_NODIRATIME},
	{"relatime", M_SET, MS_RELATIME},
	{"norelatime", M_CLR, MS_RELATIME},
	{"strictatime", M_SET, MS_STRICTATIME},
	{"nostrictatime", M_CLR, MS_STRICTATIME},
	{"lazytime", M_SET, MS_LAZYTIME},
	{"nolazytime", M_CLR, MS_LAZYTIME},
	{"iversion", M_SET, MS_I_VERSION},
	{"noiversion", M_CLR, MS_I_VERSION},
	{"silent", M_SET, MS_SILENT},
	{"loud", M_CLR, MS_SILENT},
	{"nosymfollow", M_SET, MS_NOSYMFOLLOW},
	{"symfollow", M_CLR, MS_NOSYMFOLLOW},
	{"private", M_PROP, MS_PRIVATE},
	{"rprivate", M_PROP, MS_PRIVATE | MS_REC},
	{"shared", M_PROP, MS_SHARED},
	{"rshared", M_PROP, MS_SHARED | MS_REC},
	{"slave", M_PROP, MS_SLAVE},
	{"rslave", M_PROP, MS_SLAVE | MS_REC},
	{"unbindable", M_PROP, MS_UNBINDABLE},
	{"runbindable", M_PROP, MS_UNBINDABLE | MS_REC},
	{"rro", M_RSET, MOUNT_ATTR_RDONLY},
	{"rrw", M_RCLR, MOUNT_ATTR_RDONLY},
	{"rnosuid", M_RSET, MOUNT_ATTR_NOSUID},
	{"rsuid", M_RCLR, MOUNT_ATTR_NOSUID},
	{"rnodev", M_RSET, MOUNT_ATTR_NODEV},
	{"rdev", M_RCLR, MOUNT_ATTR_NODEV},
	{"rnoexec", M_RSET, MOUNT_ATTR_NOEXEC},
	{"rexec", M_RCLR, MOUNT_ATTR_NOEXEC},
	{"rnodiratime", M_RSET, MOUNT_ATTR_NODIRATIME},
	{"rdiratime", M_RCLR, MOUNT_ATTR_NODIRATIME},
	{"rnosymfollow", M_RSET, MOUNT_ATTR_NOSYMFOLLOW},
	{"rsymfollow", M_RCLR, MOUNT_ATTR_NOSYMFOLLOW},
	{"rrelatime", M_RATIME, MOUNT_ATTR_RELATIME},
	{"rnoatime", M_RATIME, MOUNT_ATTR_NOATIME},
	{"rstrictatime", M_RATIME, MOUNT_ATTR_STRICTATIME},
	{"ratime", M_RCLR, MOUNT_ATTR_NOATIME},
	{"rnostrictatime", M_RCLR, MOUNT_ATTR_STRICTATIME},
};

/* "N[KMGT]" (binary multiples), > 0: a gofer quota. */
static int parse_quota(const char *v, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v || *v == '-')
		return -EINVAL;
	unsigned shift = 0;
	if (*end) {
		const char *u = strchr("KMGT", *end);
		if (!u || end[1])
			return -EINVAL;
		shift = 10 * (unsigned) (u - "KMGT" + 1);
	}
	if (!n || n > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t) n << shift;
	return 0;
}

/* Fold m->options into flags/propagation/attrs; the rest becomes m->data. */
static int parse_mount_options(struct pctx *c, struct urs_mount *m)
{
	size_t data_len = 0;
	for (size_t i = 0; i < m->n_options; i++)
		data_len += strlen(m->options[i]) + 1;
	char *data = arena_alloc(c->a, data_len + 1);
	if (!data)
		return nomem(c);
	size_t off = 0;
	for (size_t i = 0; i < m->n_options; i++) {
		const char *o = m->options[i];
		size_t j;
		if (!strcmp(o, "tmpcopyup")) { /* crun's tmpfs copy-up: noted, not done */
			m->tmpcopyup = true;
			continue;
		}
		if (!strcmp(o, "ursa-gofer")) { /* mediated volume (docs/gofer.md) */
			m->gofer = true;
			continue;
		}
		if (!strncmp(o, "ursa-gofer-quota=", 17) || !strncmp(o, "ursa-gofer-inodes=", 18)) {
			bool bytes = o[11] == 'q';
			if (parse_quota(strchr(o, '=') + 1,
					bytes ? &m->gofer_quota_bytes : &m->gofer_quota_inodes) < 0)
				return fail(c, "mount option %s: expected a positive number%s", o,
					    bytes ? " (with K, M, G or T)" : "");
			continue;
		}
		for (j = 0; j < URS_ARRAY_SIZE(mount_opts); j++)
			if (!strcmp(mount_opts[j].name, o))
				break;
		if (j == URS_ARRAY_SIZE(mount_opts)) {
			if (!*o)
				continue;
			size_t l = strlen(o);
			if (off)
				data[off++] = ',';
			memcpy(data + off, o, l);
			off += l;
			continue;
		}
		unsigned long v = mount_opts[j].v;
		switch (mount_opts[j].kind) {
		case M_SET:
			m->flags |= v;
			m->clear_flags &= ~v;
			break;
		case M_CLR:
			m->clear_flags |= v;
			m->flags &= ~v;
			break;
		case M_PROP:
			m->propagation = v;
			break;
		case M_RSET:
			m->rec_attr_set |= v;
			m->rec_attr_clr &= ~v;
			break;
		case M_RCLR:
			m->rec_attr_clr |= v;
			m->rec_attr_set &= ~v;
			break;
		case M_RATIME:
			m->rec_attr_clr |= MOUNT_ATTR__ATIME;
			m->rec_attr_set = (m->rec_attr_set & ~(uint64_t) MOUNT_ATTR__ATIME) | v;
			break;
		case M_NONE:
			break;
		}
	}
	data[off] = '\0';
	m->data = off ? data : NULL;
	return 0;
}

static int parse_idmap(struct pctx *c, json_t *o, void *dst)
{
	struct urs_idmap *m = dst;
	TRY(f_u32(c, o, "containerID", "required", &m->container_id, NULL));
	TRY(f_u32(c, o, "hostID", "required", &m->host_id, NULL));
	TRY(f_u32(c, o, "size", "required", &m->size, NULL));
	if ((uint64_t) m->container_id + m->size > (uint64_t) UINT32_MAX + 1 ||
	    (uint64_t) m->host_id + m->size > (uint64_t) UINT32_MAX + 1)
		return fail(c, "range overflows 32-bit ids");
	return 0;
}

static int parse_mount(struct pctx *c, json_t *o, void *dst)
{
	struct urs_mount *m = dst;
	TRY(f_str(c, o, "destination", "required", &m->destination));
	if (m->destination[0] != '/') { /* runc 1.1 warns and takes it from / */
		push_key(c, "destination");
		return fail(c, "\"%s\" is not an absolute path", m->destination);
	}
	TRY(f_str(c, o, "type", NULL, &m->type));
	TRY(f_str(c, o, "source", NULL, &m->source));
	TRY(f_strv(c, o, "options", NULL, &m->options, &m->n_options));
	TRY(f_objv(c, o, "uidMappings", sizeof(struct urs_idmap), parse_idmap,
		   (void **) &m->uid_mappings, &m->n_uid_mappings));
	TRY(f_objv(c, o, "gidMappings", sizeof(struct urs_idmap), parse_idmap,
		   (void **) &m->gid_mappings, &m->n_gid_mappings));
	if (!m->options) {
		m->options = arena_array(c->a, 1, sizeof(char *));
		if (!m->options)
			return nomem(c);
	}
	size_t s = push_key(c, "options");
	TRY(parse_mount_options(c, m));
	if (m->gofer && !((m->flags & MS_BIND) || (m->type && !strcmp(m->type, "bind"))))
		return fail(c, "\"ursa-gofer\" is only valid on a bind mount");
	if (m->gofer && !m->source)
		return fail(c, "\"ursa-gofer\" needs a source directory");
	if (!m->gofer && (m->gofer_quota_bytes || m->gofer_quota_inodes))
		return fail(c,
			    "\"ursa-gofer-quota\" and \"ursa-gofer-inodes\" need \"ursa-gofer\"");
	pop(c, s);
	return 0;
}

/* ---- mediated volumes (docs/gofer.md) ---- */

/* @path ("/"-rooted; relative ones are taken from "/") without ".", ".."
 * and repeated slashes, into @out; false if it does not fit. */
static bool path_norm(const char *path, char *out, size_t len)
{
	size_t o = 0;
	out[0] = '\0';
	while (*path) {
		while (*path == '/')
			path++;
		size_t n = strcspn(path, "/");
		if (!n)
			break;
		if (n == 2 && !strncmp(path, "..", 2)) {
			while (o > 0 && out[--o] != '/')
				;
			out[o] = '\0';
		} else if (!(n == 1 && path[0] == '.')) {
			if (o + n + 2 > len)
				return false;
			out[o++] = '/';
			memcpy(out + o, path, n);
			o += n;
			out[o] = '\0';
		}
		path += n;
	}
	return true;
}

/* Is @path (lexically, after path_norm) @dir itself or beneath it? A path
 * too long to tell counts as beneath (refused rather than risked). */
static bool path_under(const char *path, const char *dir)
{
	char p[PATH_MAX], d[PATH_MAX];
	if (!path_norm(path, p, sizeof(p)) || !path_norm(dir, d, sizeof(d)))
		return true;
	size_t n = strlen(d);
	return !strncmp(p, d, n) && (p[n] == '/' || !p[n]);
}

/*
 * The init mounts a gofer volume before READY, but its server only answers
 * once the supervisor's loop runs (after READY): anything the init would
 * touch beneath the volume before that (another mount, a masked path, the
 * process's cwd, args[0] or the PATH it is looked up in) would wait
 * forever. Refuse those (lexically: symlinks in the rootfs are not seen).
 */
static int check_gofer(struct pctx *c, const struct urs_spec *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_mounts; i++) {
		const struct urs_mount *g = &s->mounts[i];
		if (!g->gofer)
			continue;
		char key[48];
		snprintf(key, sizeof(key), "mounts[%zu]", i);
		if (++n > URS_GOFER_MAX) {
			push_key(c, key);
			return fail(c, "at most %d \"ursa-gofer\" volumes", URS_GOFER_MAX);
		}
		if (s->lnx && (s->lnx->ns_mask & (1u << URS_NS_USER))) {
			/* fuse refuses a /dev/fuse fd opened in another user
			 * namespace than the mount's (EINVAL): the supervisor's is
			 * the host's. Needs the init to open it and pass it back. */
			push_key(c, key);
			return fail(c, "\"ursa-gofer\" volumes in a user namespace are not "
				       "supported yet");
		}
		if (path_under("/", g->destination) || path_under("/dev", g->destination) ||
		    path_under("/proc", g->destination)) {
			push_key(c, key);
			return fail(c, "\"ursa-gofer\" volume on %s: not allowed there",
				    g->destination);
		}
		for (size_t j = 0; j < s->n_mounts; j++) {
			if (j != i && path_under(s->mounts[j].destination, g->destination)) {
				snprintf(key, sizeof(key), "mounts[%zu]", j);
				push_key(c, key);
				return fail(c,
					    "%s is beneath the \"ursa-gofer\" volume on %s "
					    "(not supported)",
					    s->mounts[j].destination, g->destination);
			}
		}
		const struct urs_linux *l = s->lnx;
		for (size_t j = 0; l && j < l->n_masked_paths + l->n_readonly_paths; j++) {
			const char *p = j < l->n_masked_paths
						? l->masked_paths[j]
						: l->readonly_paths[j - l->n_masked_paths];
			if (path_under(p, g->destination)) {
				push_key(c, "linux");
				return fail(c,
					    "masked/read-only path %s is beneath the "
					    "\"ursa-gofer\" volume on %s (not supported)",
					    p, g->destination);
			}
		}
		const struct urs_process *p = s->process;
		if (p && p->cwd && path_under(p->cwd, g->destination)) {
			push_key(c, "process");
			return fail(c,
				    "cwd %s is inside the \"ursa-gofer\" volume on %s (not "
				    "supported: start elsewhere and cd)",
				    p->cwd, g->destination);
		}
		char exe[PATH_MAX];
		const char *a0 = p && p->args ? p->args[0] : NULL;
		if (a0 && a0[0] != '/' && strchr(a0, '/') && p->cwd) /* relative to cwd */
			snprintf(exe, sizeof(exe), "%s/%s", p->cwd, a0);
		else
			snprintf(exe, sizeof(exe), "%s", a0 ? a0 : "");
		if (a0 && strchr(a0, '/') && path_under(exe, g->destination)) {
			push_key(c, "process");
			return fail(c,
				    "args[0] %s is inside the \"ursa-gofer\" volume on %s (not "
				    "supported: run it through a shell)",
				    p->args[0], g->destination);
		}
		/* args[0] without a slash is looked up in PATH before READY */
		for (size_t j = 0; a0 && !strchr(a0, '/') && p->env && p->env[j]; j++) {
			if (strncmp(p->env[j], "PATH=", 5))
				continue;
			for (const char *e = p->env[j] + 5; *e;) {
				size_t len = strcspn(e, ":");
				char dir[PATH_MAX];
				snprintf(dir, sizeof(dir), "%.*s", (int) len, e);
				if (dir[0] == '/' && path_under(dir, g->destination)) {
					push_key(c, "process");
					return fail(c,
						    "PATH entry %s is inside the \"ursa-gofer\" "
						    "volume on %s (not supported: args[0] is "
						    "looked up before the volume is served)",
						    dir, g->destination);
				}
				e += len + (e[len] == ':');
			}
		}
	}
	return 0;
}

/*
 * Without a mount namespace of its own the container shares the host's:
 * what would change mounts the host sees is refused (runc: "unable to
 * restrict sys entries without a private MNT namespace").
 */
static int check_no_mount_ns(struct pctx *c, const struct urs_spec *s)
{
	const struct urs_linux *l = s->lnx;
	if (l && (l->ns_mask & (1u << URS_NS_MOUNT)))
		return 0;
	const char *key = l && l->n_masked_paths       ? "linux.maskedPaths"
			  : l && l->n_readonly_paths   ? "linux.readonlyPaths"
			  : l && l->rootfs_propagation ? "linux.rootfsPropagation"
						       : NULL;
	for (size_t i = 0; !key && i < s->n_mounts; i++)
		if (s->mounts[i].gofer)
			key = "mounts";
	if (!key)
		return 0;
	push_key(c, key);
	return fail(c, "needs a mount namespace of its own (linux.namespaces has no \"mount\")");
}

/* ---- process ---- */

static int parse_console(struct pctx *c, json_t *o, void *dst)
{
	struct urs_process *p = dst;
	TRY(f_u32(c, o, "height", "required", &p->console_height, NULL));
	TRY(f_u32(c, o, "width", "required", &p->console_width, NULL));
	p->has_console_size = true;
	return 0;
}

static int parse_user(struct pctx *c, json_t *o, void *dst)
{
	struct urs_user *u = dst;
	TRY(f_u32(c, o, "uid", "required", &u->uid, NULL));
	TRY(f_u32(c, o, "gid", "required", &u->gid, NULL));
	TRY(f_u32(c, o, "umask", NULL, &u->umask, &u->has_umask));
	if (u->has_umask && u->umask > 0777) {
		push_key(c, "umask");
		return fail(c, "%#o is not a valid umask (max 0777)", u->umask);
	}
	json_t *v = get(o, "additionalGids");
	if (v) {
		size_t s = push_key(c, "additionalGids");
		if (!json_is_array(v))
			return fail(c, "expected an array of integers, got %s", tname(v));
		size_t n = json_array_size(v);
		u->additional_gids = arena_array(c->a, n, sizeof(uint32_t));
		if (!u->additional_gids)
			return nomem(c);
		for (size_t i = 0; i < n; i++) {
			uint64_t x;
			size_t s2 = push_idx(c, i);
			TRY(v_u64(c, json_array_get(v, i), UINT32_MAX, &x));
			pop(c, s2);
			u->additional_gids[i] = (uint32_t) x;
		}
		u->n_additional_gids = n;
		pop(c, s);
	}
	return 0;
}

static int parse_caps(struct pctx *c, json_t *o, void *dst)
{
	struct urs_caps *caps = dst;
	static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted",
					   "ambient"};
	uint64_t *masks[] = {&caps->bounding, &caps->effective, &caps->inheritable,
			     &caps->permitted, &caps->ambient};
	caps->present = true;
	for (size_t k = 0; k < URS_ARRAY_SIZE(sets); k++) {
		char **names = NULL;
		size_t n = 0;
		TRY(f_strv(c, o, sets[k], NULL, &names, &n));
		for (size_t i = 0; i < n; i++) {
			int cap = urs_cap_from_name(names[i]);
			if (cap < 0) {
				push_key(c, sets[k]);
				push_idx(c, i);
				return fail(c, "unknown capability \"%s\"", names[i]);
			}
			*masks[k] |= UINT64_C(1) << cap;
		}
	}
	return 0;
}

static int parse_rlimit(struct pctx *c, json_t *o, void *dst)
{
	struct urs_rlimit *rl = dst;
	char *type = NULL;
	TRY(f_str(c, o, "type", "required", &type));
	size_t i;
	for (i = 0; i < URS_ARRAY_SIZE(rlimit_names); i++)
		if (!strcmp(rlimit_names[i].name, type))
			break;
	if (i == URS_ARRAY_SIZE(rlimit_names)) {
		push_key(c, "type");
		return fail(c,
			    "unknown rlimit type \"%s\" (expected RLIMIT_CPU, RLIMIT_NOFILE, ...)",
			    type);
	}
	rl->resource = rlimit_names[i].resource;
	TRY(f_u64(c, o, "hard", "required", UINT64_MAX, &rl->hard, NULL));
	TRY(f_u64(c, o, "soft", "required", UINT64_MAX, &rl->soft, NULL));
	if (rl->soft > rl->hard)
		return fail(c, "soft limit %" PRIu64 " exceeds hard limit %" PRIu64, rl->soft,
			    rl->hard);
	return 0;
}

static const char *rlimit_name(int resource)
{
	for (size_t i = 0; i < URS_ARRAY_SIZE(rlimit_names); i++)
		if (rlimit_names[i].resource == resource)
			return rlimit_names[i].name;
	return "?";
}

static int parse_process(struct pctx *c, json_t *o, void *dst)
{
	struct urs_process *p = dst;
	const char *req = "required when process is present";
	TRY(f_bool(c, o, "terminal", NULL, &p->terminal));
	TRY(f_obj(c, o, "consoleSize", NULL, parse_console, p));
	TRY(f_obj(c, o, "user", NULL, parse_user, &p->user));
	TRY(f_strv(c, o, "args", req, &p->args, &p->n_args));
	if (!p->n_args) {
		push_key(c, "args");
		return fail(c, "must not be empty");
	}
	TRY(f_strv(c, o, "env", NULL, &p->env, &p->n_env));
	if (!p->env) {
		p->env = arena_array(c->a, 1, sizeof(char *));
		if (!p->env)
			return nomem(c);
	}
	TRY(f_str(c, o, "cwd", req, &p->cwd));
	if (p->cwd[0] != '/') {
		push_key(c, "cwd");
		return fail(c, "must be an absolute path, got \"%s\"", p->cwd);
	}
	TRY(f_obj(c, o, "capabilities", NULL, parse_caps, &p->caps));
	TRY(f_objv(c, o, "rlimits", sizeof(struct urs_rlimit), parse_rlimit, (void **) &p->rlimits,
		   &p->n_rlimits));
	for (size_t i = 0; i < p->n_rlimits; i++)
		for (size_t j = 0; j < i; j++)
			if (p->rlimits[i].resource == p->rlimits[j].resource) {
				push_key(c, "rlimits");
				push_idx(c, i);
				return fail(c, "duplicate rlimit type \"%s\" (also at [%zu])",
					    rlimit_name(p->rlimits[i].resource), j);
			}
	TRY(f_bool(c, o, "noNewPrivileges", NULL, &p->no_new_privileges));
	int64_t adj = 0;
	TRY(f_i64(c, o, "oomScoreAdj", NULL, -1000, 1000, &adj, &p->has_oom_score_adj));
	p->oom_score_adj = (int32_t) adj;
	TRY(f_str(c, o, "apparmorProfile", NULL, &p->apparmor_profile));
	TRY(f_str(c, o, "selinuxLabel", NULL, &p->selinux_label));
	return 0;
}

/* ---- hooks ---- */

static int parse_hook(struct pctx *c, json_t *o, void *dst)
{
	struct urs_hook *h = dst;
	TRY(f_str(c, o, "path", "required", &h->path));
	if (h->path[0] != '/') {
		push_key(c, "path");
		return fail(c, "must be an absolute path, got \"%s\"", h->path);
	}
	TRY(f_strv(c, o, "args", NULL, &h->args, &h->n_args));
	TRY(f_strv(c, o, "env", NULL, &h->env, &h->n_env));
	int64_t t = 0;
	TRY(f_i64(c, o, "timeout", NULL, INT64_MIN, INT64_MAX, &t, &h->has_timeout));
	if (h->has_timeout && (t <= 0 || t > UINT32_MAX)) {
		push_key(c, "timeout");
		return fail(c, "must be a positive number of seconds, got %" PRId64, t);
	}
	h->timeout = (uint32_t) t;
	return 0;
}

static int parse_hooks(struct pctx *c, json_t *o, void *dst)
{
	struct urs_hook_list *hooks = dst;
	for (int k = 0; k < URS_HOOK__COUNT; k++)
		TRY(f_objv(c, o, hook_names[k], sizeof(struct urs_hook), parse_hook,
			   (void **) &hooks[k].v, &hooks[k].n));
	return 0;
}

/* ---- linux ---- */

static int parse_namespace(struct pctx *c, json_t *o, void *dst)
{
	struct urs_namespace *ns = dst;
	int t = 0;
	TRY(f_enum(c, o, "type", "required", "namespace type", ns_names, URS_NS__COUNT, &t));
	ns->type = (enum urs_ns_type) t;
	TRY(f_str(c, o, "path", NULL, &ns->path));
	if (ns->path && ns->path[0] != '/') {
		push_key(c, "path");
		return fail(c, "must be an absolute path, got \"%s\"", ns->path);
	}
	return 0;
}

static int parse_device(struct pctx *c, json_t *o, void *dst)
{
	struct urs_device *d = dst;
	char *type = NULL;
	TRY(f_str(c, o, "type", "required", &type));
	if (strlen(type) != 1 || !strchr("cbup", type[0])) {
		push_key(c, "type");
		return fail(c, "unknown device type \"%s\" (expected one of: c, b, u, p)", type);
	}
	d->type = type[0];
	TRY(f_str(c, o, "path", "required", &d->path));
	if (d->path[0] != '/') {
		push_key(c, "path");
		return fail(c, "must be an absolute path, got \"%s\"", d->path);
	}
	const char *req = d->type == 'p' ? NULL : "required for char and block devices";
	d->major = d->minor = -1;
	TRY(f_i64(c, o, "major", req, 0, INT64_MAX, &d->major, NULL));
	TRY(f_i64(c, o, "minor", req, 0, INT64_MAX, &d->minor, NULL));
	TRY(f_u32(c, o, "fileMode", NULL, &d->file_mode, &d->has_file_mode));
	TRY(f_u32(c, o, "uid", NULL, &d->uid, &d->has_uid));
	TRY(f_u32(c, o, "gid", NULL, &d->gid, &d->has_gid));
	return 0;
}

static int parse_dev_rule(struct pctx *c, json_t *o, void *dst)
{
	struct urs_dev_rule *d = dst;
	TRY(f_bool(c, o, "allow", "required", &d->allow));
	char *type = NULL;
	TRY(f_str(c, o, "type", NULL, &type));
	d->type = 'a';
	if (type) {
		if (strlen(type) != 1 || !strchr("acb", type[0])) {
			push_key(c, "type");
			return fail(c, "unknown device type \"%s\" (expected one of: a, c, b)",
				    type);
		}
		d->type = type[0];
	}
	d->major = d->minor = -1;
	TRY(f_i64(c, o, "major", NULL, -1, INT64_MAX, &d->major, NULL));
	TRY(f_i64(c, o, "minor", NULL, -1, INT64_MAX, &d->minor, NULL));
	char *access = NULL;
	TRY(f_str(c, o, "access", NULL, &access));
	strcpy(d->access, "rwm");
	if (access) {
		size_t n = strlen(access);
		bool ok = n <= 3;
		for (size_t i = 0; ok && i < n; i++)
			ok = strchr("rwm", access[i]) && !memchr(access, access[i], i);
		if (!ok) {
			push_key(c, "access");
			return fail(c, "invalid access \"%s\" (expected a combination of r, w, m)",
				    access);
		}
		memcpy(d->access, access, n + 1);
	}
	return 0;
}

static int parse_hugepage(struct pctx *c, json_t *o, void *dst)
{
	struct urs_hugepage_limit *h = dst;
	TRY(f_str(c, o, "pageSize", "required", &h->page_size));
	TRY(f_u64(c, o, "limit", "required", UINT64_MAX, &h->limit, NULL));
	return 0;
}

static int parse_memory(struct pctx *c, json_t *o, void *dst)
{
	struct urs_resources *r = dst;
	TRY(f_i64(c, o, "limit", NULL, INT64_MIN, INT64_MAX, &r->memory.limit,
		  &r->memory.has_limit));
	TRY(f_i64(c, o, "reservation", NULL, INT64_MIN, INT64_MAX, &r->memory.reservation,
		  &r->memory.has_reservation));
	TRY(f_i64(c, o, "swap", NULL, INT64_MIN, INT64_MAX, &r->memory.swap, &r->memory.has_swap));
	TRY(f_i64(c, o, "kernel", NULL, INT64_MIN, INT64_MAX, &r->memory.kernel,
		  &r->memory.has_kernel));
	TRY(f_i64(c, o, "kernelTCP", NULL, INT64_MIN, INT64_MAX, &r->memory.kernel_tcp,
		  &r->memory.has_kernel_tcp));
	TRY(f_u64(c, o, "swappiness", NULL, 100, &r->memory.swappiness, &r->memory.has_swappiness));
	TRY(f_bool(c, o, "disableOOMKiller", NULL, &r->memory.disable_oom_killer));
	bool ignored;
	TRY(f_bool(c, o, "useHierarchy", NULL, &ignored));
	TRY(f_bool(c, o, "checkBeforeUpdate", NULL, &ignored));
	return 0;
}

static int parse_cpu(struct pctx *c, json_t *o, void *dst)
{
	struct urs_resources *r = dst;
	TRY(f_u64(c, o, "shares", NULL, UINT64_MAX, &r->cpu.shares, &r->cpu.has_shares));
	TRY(f_i64(c, o, "quota", NULL, INT64_MIN, INT64_MAX, &r->cpu.quota, &r->cpu.has_quota));
	TRY(f_u64(c, o, "burst", NULL, UINT64_MAX, &r->cpu.burst, &r->cpu.has_burst));
	TRY(f_u64(c, o, "period", NULL, UINT64_MAX, &r->cpu.period, &r->cpu.has_period));
	TRY(f_i64(c, o, "realtimeRuntime", NULL, INT64_MIN, INT64_MAX, &r->cpu.rt_runtime,
		  &r->cpu.has_rt_runtime));
	TRY(f_u64(c, o, "realtimePeriod", NULL, UINT64_MAX, &r->cpu.rt_period,
		  &r->cpu.has_rt_period));
	TRY(f_str(c, o, "cpus", NULL, &r->cpu.cpus));
	TRY(f_str(c, o, "mems", NULL, &r->cpu.mems));
	TRY(f_i64(c, o, "idle", NULL, INT64_MIN, INT64_MAX, &r->cpu.idle, &r->cpu.has_idle));
	return 0;
}

static int parse_pids(struct pctx *c, json_t *o, void *dst)
{
	struct urs_resources *r = dst;
	return f_i64(c, o, "limit", "required", INT64_MIN, INT64_MAX, &r->pids.limit,
		     &r->pids.has_limit);
}

static const char *const throttle_names[URS_THROTTLE__COUNT] = {
	[URS_THROTTLE_READ_BPS] = "throttleReadBpsDevice",
	[URS_THROTTLE_WRITE_BPS] = "throttleWriteBpsDevice",
	[URS_THROTTLE_READ_IOPS] = "throttleReadIOPSDevice",
	[URS_THROTTLE_WRITE_IOPS] = "throttleWriteIOPSDevice",
};

const char *urs_blkio_throttle_name(enum urs_blkio_throttle t)
{
	return (unsigned) t < URS_THROTTLE__COUNT ? throttle_names[t] : NULL;
}

static int parse_blkio_major_minor(struct pctx *c, json_t *o, struct urs_blkio_device *d)
{
	TRY(f_i64(c, o, "major", "required", 0, INT64_MAX, &d->major, NULL));
	return f_i64(c, o, "minor", "required", 0, INT64_MAX, &d->minor, NULL);
}

static int parse_weight_device(struct pctx *c, json_t *o, void *dst)
{
	struct urs_blkio_device *d = dst;
	uint64_t w = 0, lw = 0;
	TRY(parse_blkio_major_minor(c, o, d));
	TRY(f_u64(c, o, "weight", NULL, UINT16_MAX, &w, &d->has_weight));
	TRY(f_u64(c, o, "leafWeight", NULL, UINT16_MAX, &lw, &d->has_leaf_weight));
	d->weight = (uint16_t) w;
	d->leaf_weight = (uint16_t) lw;
	return 0;
}

static int parse_throttle_device(struct pctx *c, json_t *o, void *dst)
{
	struct urs_blkio_device *d = dst;
	TRY(parse_blkio_major_minor(c, o, d));
	return f_u64(c, o, "rate", "required", UINT64_MAX, &d->rate, NULL);
}

static int parse_blkio(struct pctx *c, json_t *o, void *dst)
{
	struct urs_resources *r = dst;
	uint64_t w = 0, lw = 0;
	TRY(f_u64(c, o, "weight", NULL, UINT16_MAX, &w, &r->block_io.has_weight));
	TRY(f_u64(c, o, "leafWeight", NULL, UINT16_MAX, &lw, &r->block_io.has_leaf_weight));
	r->block_io.weight = (uint16_t) w;
	r->block_io.leaf_weight = (uint16_t) lw;
	TRY(f_objv(c, o, "weightDevice", sizeof(struct urs_blkio_device), parse_weight_device,
		   (void **) &r->block_io.weight_devices, &r->block_io.n_weight_devices));
	for (int t = 0; t < URS_THROTTLE__COUNT; t++)
		TRY(f_objv(c, o, throttle_names[t], sizeof(struct urs_blkio_device),
			   parse_throttle_device, (void **) &r->block_io.throttle[t],
			   &r->block_io.n_throttle[t]));
	return 0;
}

static int parse_net_prio(struct pctx *c, json_t *o, void *dst)
{
	struct urs_net_prio *p = dst;
	TRY(f_str(c, o, "name", "required", &p->name));
	return f_u32(c, o, "priority", "required", &p->priority, NULL);
}

static int parse_network(struct pctx *c, json_t *o, void *dst)
{
	struct urs_resources *r = dst;
	TRY(f_u32(c, o, "classID", NULL, &r->network.class_id, &r->network.has_class_id));
	return f_objv(c, o, "priorities", sizeof(struct urs_net_prio), parse_net_prio,
		      (void **) &r->network.priorities, &r->network.n_priorities);
}

static int parse_resources(struct pctx *c, json_t *o, void *dst)
{
	struct urs_linux *l = dst;
	struct urs_resources *r = &l->resources;
	l->has_resources = true;
	TRY(f_obj(c, o, "memory", NULL, parse_memory, r));
	TRY(f_obj(c, o, "cpu", NULL, parse_cpu, r));
	TRY(f_obj(c, o, "pids", NULL, parse_pids, r));
	TRY(f_objv(c, o, "devices", sizeof(struct urs_dev_rule), parse_dev_rule,
		   (void **) &r->devices, &r->n_devices));
	TRY(f_obj(c, o, "blockIO", NULL, parse_blkio, r));
	TRY(f_objv(c, o, "hugepageLimits", sizeof(struct urs_hugepage_limit), parse_hugepage,
		   (void **) &r->hugepage_limits, &r->n_hugepage_limits));
	TRY(f_obj(c, o, "network", NULL, parse_network, r));
	TRY(f_accept(c, o, "rdma", JSON_OBJECT));
	r->has_rdma = json_object_size(get(o, "rdma")) > 0;
	TRY(f_kv(c, o, "unified", &r->unified, &r->n_unified));
	return 0;
}

static int parse_scmp_arg(struct pctx *c, json_t *o, void *dst)
{
	struct urs_scmp_arg *a = dst;
	uint64_t idx = 0;
	TRY(f_u64(c, o, "index", "required", 5, &idx, NULL));
	a->index = (uint32_t) idx;
	TRY(f_u64(c, o, "value", "required", UINT64_MAX, &a->value, NULL));
	TRY(f_u64(c, o, "valueTwo", NULL, UINT64_MAX, &a->value_two, NULL));
	int op = 0;
	TRY(f_enum(c, o, "op", "required", "seccomp operator", scmp_ops, URS_ARRAY_SIZE(scmp_ops),
		   &op));
	a->op = (enum urs_scmp_op) op;
	return 0;
}

static int parse_scmp_rule(struct pctx *c, json_t *o, void *dst)
{
	struct urs_scmp_rule *r = dst;
	TRY(f_strv(c, o, "names", "required", &r->names, &r->n_names));
	if (!r->n_names) {
		push_key(c, "names");
		return fail(c, "must not be empty");
	}
	int act = 0;
	TRY(f_enum(c, o, "action", "required", "seccomp action", scmp_actions,
		   URS_ARRAY_SIZE(scmp_actions), &act));
	r->action = (enum urs_scmp_action) act;
	TRY(f_u32(c, o, "errnoRet", NULL, &r->errno_ret, &r->has_errno_ret));
	TRY(f_objv(c, o, "args", sizeof(struct urs_scmp_arg), parse_scmp_arg, (void **) &r->args,
		   &r->n_args));
	return 0;
}

static int check_strv(struct pctx *c, const char *key, char **v, size_t n, const char *what,
		      const char *const *names, size_t n_names)
{
	for (size_t i = 0; i < n; i++) {
		if (lookup(names, n_names, v[i]) >= 0)
			continue;
		char list[512];
		join_names(list, sizeof(list), names, n_names);
		push_key(c, key);
		push_idx(c, i);
		return fail(c, "unknown %s \"%s\" (expected one of: %s)", what, v[i], list);
	}
	return 0;
}

static int parse_seccomp(struct pctx *c, json_t *o, void *dst)
{
	struct urs_seccomp *s = dst;
	int act = 0;
	TRY(f_enum(c, o, "defaultAction", "required", "seccomp action", scmp_actions,
		   URS_ARRAY_SIZE(scmp_actions), &act));
	s->default_action = (enum urs_scmp_action) act;
	TRY(f_u32(c, o, "defaultErrnoRet", NULL, &s->default_errno_ret, &s->has_default_errno_ret));
	TRY(f_strv(c, o, "architectures", NULL, &s->architectures, &s->n_architectures));
	TRY(check_strv(c, "architectures", s->architectures, s->n_architectures, "architecture",
		       scmp_arches, URS_ARRAY_SIZE(scmp_arches)));
	TRY(f_strv(c, o, "flags", NULL, &s->flags, &s->n_flags));
	TRY(check_strv(c, "flags", s->flags, s->n_flags, "seccomp flag", scmp_flags,
		       URS_ARRAY_SIZE(scmp_flags)));
	TRY(f_str(c, o, "listenerPath", NULL, &s->listener_path));
	TRY(f_str(c, o, "listenerMetadata", NULL, &s->listener_metadata));
	TRY(f_objv(c, o, "syscalls", sizeof(struct urs_scmp_rule), parse_scmp_rule,
		   (void **) &s->syscalls, &s->n_syscalls));
	bool notify = s->default_action == URS_SCMP_ACT_NOTIFY;
	for (size_t i = 0; i < s->n_syscalls; i++)
		notify |= s->syscalls[i].action == URS_SCMP_ACT_NOTIFY;
	if (notify && !s->listener_path)
		return missing(c, "listenerPath", "required when SCMP_ACT_NOTIFY is used");
	return 0;
}

/* Every path of a string array (linux.maskedPaths, ...) is absolute. */
static int check_abs(struct pctx *c, const char *key, char **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i][0] == '/')
			continue;
		push_key(c, key);
		push_idx(c, i);
		return fail(c, "\"%s\" is not an absolute path", v[i]);
	}
	return 0;
}

static int parse_personality(struct pctx *c, json_t *o, void *dst)
{
	struct urs_linux *l = dst;
	static const char *const domains[] = {"LINUX", "LINUX32"};
	int i = 0;
	TRY(f_enum(c, o, "domain", NULL, "personality domain", domains, URS_ARRAY_SIZE(domains),
		   &i));
	if (get(o, "domain"))
		l->personality_domain = (char *) domains[i];
	return f_accept(c, o, "flags", JSON_ARRAY);
}

static int parse_linux(struct pctx *c, json_t *o, void *dst)
{
	struct urs_linux *l = dst;
	TRY(f_objv(c, o, "namespaces", sizeof(struct urs_namespace), parse_namespace,
		   (void **) &l->namespaces, &l->n_namespaces));
	for (size_t i = 0; i < l->n_namespaces; i++) {
		uint32_t bit = 1u << l->namespaces[i].type;
		if (l->ns_mask & bit) {
			size_t j = 0;
			while (l->namespaces[j].type != l->namespaces[i].type)
				j++;
			push_key(c, "namespaces");
			push_idx(c, i);
			push_key(c, "type");
			return fail(c, "duplicate namespace type \"%s\" (already at [%zu])",
				    ns_names[l->namespaces[i].type], j);
		}
		l->ns_mask |= bit;
	}
	TRY(f_objv(c, o, "uidMappings", sizeof(struct urs_idmap), parse_idmap,
		   (void **) &l->uid_mappings, &l->n_uid_mappings));
	TRY(f_objv(c, o, "gidMappings", sizeof(struct urs_idmap), parse_idmap,
		   (void **) &l->gid_mappings, &l->n_gid_mappings));
	if ((l->n_uid_mappings || l->n_gid_mappings) && !(l->ns_mask & (1u << URS_NS_USER))) {
		push_key(c, l->n_uid_mappings ? "uidMappings" : "gidMappings");
		return fail(c, "set, but linux.namespaces has no user namespace");
	}
	for (size_t i = 0; i < l->n_namespaces; i++) {
		if (l->namespaces[i].type != URS_NS_USER || l->namespaces[i].path)
			continue;
		if (!l->n_uid_mappings || !l->n_gid_mappings) /* runc refuses it too */
			return missing(c, l->n_uid_mappings ? "gidMappings" : "uidMappings",
				       "required with a new user namespace");
	}
	TRY(f_objv(c, o, "devices", sizeof(struct urs_device), parse_device, (void **) &l->devices,
		   &l->n_devices));
	TRY(f_str(c, o, "cgroupsPath", NULL, &l->cgroups_path));
	TRY(f_obj(c, o, "resources", NULL, parse_resources, l));
	TRY(f_kv(c, o, "sysctl", &l->sysctl, &l->n_sysctl));
	if (get(o, "seccomp")) {
		l->seccomp = arena_alloc(c->a, sizeof(*l->seccomp));
		if (!l->seccomp)
			return nomem(c);
		TRY(f_obj(c, o, "seccomp", NULL, parse_seccomp, l->seccomp));
	}
	static const char *const prop_names[] = {"private",    "rprivate",   "shared",
						 "rshared",    "slave",	     "rslave",
						 "unbindable", "runbindable"};
	int prop = -1;
	TRY(f_enum(c, o, "rootfsPropagation", NULL, "propagation", prop_names,
		   URS_ARRAY_SIZE(prop_names), &prop));
	if (prop >= 0)
		l->rootfs_propagation = propagations[prop].flags;
	TRY(f_strv(c, o, "maskedPaths", NULL, &l->masked_paths, &l->n_masked_paths));
	TRY(check_abs(c, "maskedPaths", l->masked_paths, l->n_masked_paths));
	TRY(f_strv(c, o, "readonlyPaths", NULL, &l->readonly_paths, &l->n_readonly_paths));
	TRY(check_abs(c, "readonlyPaths", l->readonly_paths, l->n_readonly_paths));
	TRY(f_str(c, o, "mountLabel", NULL, &l->mount_label));
	TRY(f_accept(c, o, "intelRdt", JSON_OBJECT));
	l->has_intel_rdt = json_object_size(get(o, "intelRdt")) > 0;
	TRY(f_obj(c, o, "personality", NULL, parse_personality, l));
	return 0;
}

/* ---- top level ---- */

static int parse_root_fs(struct pctx *c, json_t *o, void *dst)
{
	struct urs_spec *s = dst;
	TRY(f_str(c, o, "path", "required", &s->root.path));
	if (!s->root.path[0]) {
		push_key(c, "path");
		return fail(c, "must not be empty");
	}
	return f_bool(c, o, "readonly", NULL, &s->root.readonly);
}

static int parse_top(struct pctx *c, json_t *o, struct urs_spec *s)
{
	TRY(f_str(c, o, "ociVersion", "required", &s->oci_version));
	if (strncmp(s->oci_version, "1.", 2)) {
		push_key(c, "ociVersion");
		return fail(c, "unsupported version \"%s\" (expected 1.x)", s->oci_version);
	}
	TRY(f_obj(c, o, "root", "required on Linux", parse_root_fs, s));
	TRY(f_objv(c, o, "mounts", sizeof(struct urs_mount), parse_mount, (void **) &s->mounts,
		   &s->n_mounts));
	if (get(o, "process")) {
		s->process = arena_alloc(c->a, sizeof(*s->process));
		if (!s->process)
			return nomem(c);
		TRY(f_obj(c, o, "process", NULL, parse_process, s->process));
	}
	TRY(f_str(c, o, "hostname", NULL, &s->hostname));
	TRY(f_str(c, o, "domainname", NULL, &s->domainname));
	TRY(f_obj(c, o, "hooks", NULL, parse_hooks, s->hooks));
	TRY(f_kv(c, o, "annotations", &s->annotations, &s->n_annotations));
	if (get(o, "linux")) {
		s->lnx = arena_alloc(c->a, sizeof(*s->lnx));
		if (!s->lnx)
			return nomem(c);
		TRY(f_obj(c, o, "linux", NULL, parse_linux, s->lnx));
		bool uts = s->lnx->ns_mask & (1u << URS_NS_UTS);
		if (!uts && s->hostname && s->hostname[0]) {
			push_key(c, "hostname");
			return fail(c, "set, but linux.namespaces has no uts namespace");
		}
		if (!uts && s->domainname && s->domainname[0]) {
			push_key(c, "domainname");
			return fail(c, "set, but linux.namespaces has no uts namespace");
		}
	}
	TRY(check_gofer(c, s));
	TRY(check_no_mount_ns(c, s));
	return 0;
}

/*
 * Copy the text with every integer literal above INT64_MAX (and at most
 * UINT64_MAX) turned into "\u0001u64:<digits>" so jansson accepts it.
 */
static char *rewrite_bigints(const char *s, size_t len, size_t *out_len)
{
	if (len > SIZE_MAX / 2 - 16)
		return NULL;
	char *out = malloc(len * 2 + 16);
	if (!out)
		return NULL;
	size_t o = 0, i = 0;
	while (i < len) {
		char ch = s[i];
		if (ch == '"') {
			out[o++] = s[i++];
			while (i < len && s[i] != '"') {
				if (s[i] == '\\' && i + 1 < len)
					out[o++] = s[i++];
				out[o++] = s[i++];
			}
			if (i < len)
				out[o++] = s[i++];
			continue;
		}
		if (!(ch >= '0' && ch <= '9') && ch != '-') {
			out[o++] = s[i++];
			continue;
		}
		size_t start = i;
		bool digits = true;
		while (i < len && strchr("0123456789+-.eE", s[i]) && s[i]) {
			digits &= s[i] >= '0' && s[i] <= '9';
			i++;
		}
		size_t n = i - start;
		if (digits && n >= 19 && n <= 20) {
			char buf[24];
			memcpy(buf, s + start, n);
			buf[n] = '\0';
			errno = 0;
			unsigned long long v = strtoull(buf, NULL, 10);
			if (!errno && v > (unsigned long long) INT64_MAX) {
				o += (size_t) sprintf(out + o, "\"\\u0001u64:%s\"", buf);
				continue;
			}
		}
		memcpy(out + o, s + start, n);
		o += n;
	}
	*out_len = o;
	return out;
}

static int parse_text(const char *file, const char *json, size_t len, struct urs_spec **out,
		      struct urs_err *err)
{
	*out = NULL;
	json_error_t jerr;
	json_t *root = json_loadb(json, len, 0, &jerr);
	if (!root && json_error_code(&jerr) == json_error_numeric_overflow) {
		size_t n2 = 0;
		_cleanup_free_ char *copy = rewrite_bigints(json, len, &n2);
		if (!copy)
			return urs_err_set(err, -ENOMEM, "%s: out of memory", file);
		root = json_loadb(copy, n2, 0, &jerr);
	}
	if (!root)
		return urs_err_set(err, -EINVAL, "%s: line %d column %d: invalid JSON: %s", file,
				   jerr.line, jerr.column, jerr.text);
	int r;
	if (!json_is_object(root)) {
		r = urs_err_set(err, -EINVAL, "%s: expected a JSON object at the top level, got %s",
				file, tname(root));
		json_decref(root);
		return r;
	}

	struct arena *a = calloc(1, sizeof(*a));
	if (!a) {
		json_decref(root);
		return urs_err_set(err, -ENOMEM, "%s: out of memory", file);
	}
	a->next_size = len + 4096;
	struct pctx c = {.a = a, .err = err, .file = file};
	struct urs_spec *s = arena_alloc(a, sizeof(*s));
	r = s ? parse_top(&c, root, s) : nomem(&c);
	json_decref(root);
	if (r) {
		arena_free(a);
		return r;
	}
	s->arena_ = a;
	*out = s;
	return 0;
}

int urs_spec_parse(const char *json, size_t len, struct urs_spec **out, struct urs_err *err)
{
	return parse_text("config.json", json, len, out, err);
}

/* ---- what this host can apply (LSMs) ---- */

/* AppArmor is active: its module says so (what libapparmor and runc read) */
bool urs_host_has_apparmor(void)
{
	char c = 0;
	_cleanup_close_ int fd =
		open("/sys/module/apparmor/parameters/enabled", O_RDONLY | O_CLOEXEC);
	return fd >= 0 && read(fd, &c, 1) == 1 && c == 'Y';
}

/* SELinux is active: selinuxfs is mounted (what go-selinux looks for) */
bool urs_host_has_selinux(void)
{
	struct statfs sf;
	return statfs("/sys/fs/selinux", &sf) == 0 && (uint32_t) sf.f_type == 0xf97cff8cu;
}

int urs_lsm_set_exec(const struct urs_process *p, struct urs_err *err)
{
	const char *aa = p->apparmor_profile, *se = p->selinux_label;
	char buf[4096];
	if (aa && aa[0]) { /* the profile for the next execve, as runc's changeOnExec */
		int n = snprintf(buf, sizeof(buf), "exec %s", aa);
		_cleanup_close_ int fd =
			open("/proc/thread-self/attr/apparmor/exec", O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			fd = open("/proc/thread-self/attr/exec", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, buf, (size_t) n) != n)
			return urs_err_set(err, -errno, "process.apparmorProfile \"%s\": %m", aa);
	}
	if (se && se[0]) {
		_cleanup_close_ int fd = open("/proc/thread-self/attr/exec", O_WRONLY | O_CLOEXEC);
		size_t n = strlen(se);
		if (fd < 0 || write(fd, se, n) != (ssize_t) n)
			return urs_err_set(err, -errno, "process.selinuxLabel \"%s\": %m", se);
	}
	return 0;
}

int urs_spec_check_host(const struct urs_spec *s, struct urs_err *err)
{
	const struct urs_process *p = s->process;
	const char *aa = p ? p->apparmor_profile : NULL, *se = p ? p->selinux_label : NULL;
	const char *ml = s->lnx ? s->lnx->mount_label : NULL;
	if (aa && aa[0] && !urs_host_has_apparmor())
		return urs_err_set(err, -EOPNOTSUPP,
				   "config.json: process.apparmorProfile: \"%s\" requested, but "
				   "AppArmor is not enabled on this host",
				   aa);
	if (se && se[0] && !urs_host_has_selinux())
		return urs_err_set(err, -EOPNOTSUPP,
				   "config.json: process.selinuxLabel: \"%s\" requested, but "
				   "SELinux is not enabled on this host",
				   se);
	if (ml && ml[0] && !urs_host_has_selinux())
		return urs_err_set(
			err, -EOPNOTSUPP,
			"config.json: linux.mountLabel: \"%s\" requested, but SELinux is "
			"not enabled on this host",
			ml);
	/* the exec labels are set by urs_lsm_set_exec(), which the init does not
	 * call yet: refused rather than dropped where the LSM is there */
	if ((aa && aa[0]) || (se && se[0]))
		return urs_err_set(err, -EOPNOTSUPP,
				   "config.json: process.%s: not applied by ursa yet",
				   aa && aa[0] ? "apparmorProfile" : "selinuxLabel");
	return 0;
}

int urs_spec_load(const char *path, struct urs_spec **out, struct urs_err *err)
{
	*out = NULL;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return urs_err_set(err, -e, "%s: cannot open: %s", path, strerror(e));
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		return urs_err_set(err, -e, "%s: cannot stat: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode))
		return urs_err_set(err, -EINVAL, "%s: not a regular file", path);
	if (st.st_size > 64 << 20)
		return urs_err_set(err, -EFBIG, "%s: too large (%lld bytes, max 64 MiB)", path,
				   (long long) st.st_size);
	size_t cap = (size_t) st.st_size + 1, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return urs_err_set(err, -ENOMEM, "%s: out of memory", path);
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			return urs_err_set(err, -e, "%s: read: %s", path, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t) n;
		if (len == cap) /* file grew under us: stop at the 64 MiB limit */
			return urs_err_set(err, -EFBIG, "%s: changed while being read", path);
	}
	int r = parse_text(base, buf, len, out, err);
	if (r == 0 && (r = urs_spec_check_host(*out, err)) < 0) {
		urs_spec_free(*out);
		*out = NULL;
	}
	return r;
}

void urs_spec_free(struct urs_spec *spec)
{
	if (spec)
		arena_free(spec->arena_);
}

bool urs_spec_has_ns(const struct urs_spec *spec, enum urs_ns_type t)
{
	return spec->lnx && (unsigned) t < URS_NS__COUNT && (spec->lnx->ns_mask & (1u << t));
}

const struct urs_namespace *urs_spec_ns(const struct urs_spec *spec, enum urs_ns_type t)
{
	if (!spec->lnx)
		return NULL;
	for (size_t i = 0; i < spec->lnx->n_namespaces; i++)
		if (spec->lnx->namespaces[i].type == t)
			return &spec->lnx->namespaces[i];
	return NULL;
}

int urs_spec_ann_bool(const struct urs_spec *spec, const char *key, bool *out, struct urs_err *err)
{
	for (size_t i = 0; i < spec->n_annotations; i++) {
		const struct urs_kv *kv = &spec->annotations[i];
		if (strcmp(kv->key, key))
			continue;
		if (!strcmp(kv->value, "true") || !strcmp(kv->value, "1"))
			*out = true;
		else if (!strcmp(kv->value, "false") || !strcmp(kv->value, "0"))
			*out = false;
		else
			return urs_err_set(err, -EINVAL,
					   "config.json: annotations[\"%s\"]: \"%s\" is not true "
					   "or false",
					   kv->key, kv->value);
	}
	return 0;
}
