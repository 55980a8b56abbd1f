/*
 * host/seccomp.c — OCI linux.seccomp → libseccomp filter, and loading it.
 *
 * The translation follows runc (libcontainer/seccomp/seccomp_linux.go) so a
 * profile behaves the same under ursa:
 *  - ERRNO and TRACE without errnoRet return/carry EPERM; KILL is KILL_THREAD;
 *  - a rule whose action equals the default action is skipped (libseccomp
 *    would refuse it);
 *  - syscall names libseccomp cannot resolve are skipped (counted for the
 *    caller's debug log), since profiles list syscalls of newer kernels;
 *  - args on distinct indexes are AND'ed in one rule; if two args share an
 *    index, each arg becomes its own rule (OR);
 *  - NOTIFY is refused as the default action and for `write`;
 *  - the filter does not set no_new_privs (the init decides).
 * Unlike runc, rules are validated in full (arg index and op, errnoRet range)
 * even when their names are unknown, and errors name the rule.
 *
 * With opts->count, ERRNO actions become NOTIFY where the errno to answer
 * follows from (arch, nr) alone, and the answers go into a small table for
 * the supervisor (see struct urs_seccomp_denials in seccomp.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/seccomp.h"
#include "host/seccomp_bpf.h"
#include "runtime/common.h"

#define MAX_ARGS 6 /* a syscall has at most six arguments */

#define COUNT_NR  URS_SECCOMP_COUNT_NR /* syscall numbers considered for counting */
#define MAX_ERRNO 4095		       /* the kernel clamps SECCOMP_RET_ERRNO data to this */
#define MAX_ARCH  8		       /* architectures in one filter */

/* Per native syscall number, while deciding what to convert (count mode). */
enum {
	NI_RULES = 1,	 /* some (non-redundant) rule names it */
	NI_UNCOND = 2,	 /* some rule has no argument condition: no fall-through */
	NI_ERRNO = 4,	 /* some ERRNO rule; err holds its errno */
	NI_MIXED = 8,	 /* ERRNO rules with different errnos */
	NI_KEEP = 16,	 /* the init needs it before the listener is handed over */
	NI_CONVERT = 32, /* its ERRNO rules become NOTIFY */
	NI_ADD = 64,	 /* add an explicit ERRNO(default) rule (a NI_KEEP syscall) */
};
struct nr_info {
	uint8_t flags;
	uint16_t err;
	const char *name; /* a name that resolves to it (for other architectures) */
};

/*
 * What the container's init calls between loading a NOTIFY filter and
 * handing its listener to the supervisor with READY (host/init.c: capability
 * and identity changes, cwd, the executable's lookup, HOME from /etc/passwd,
 * close_range; then sendmsg, or send + exit on an error). A notification
 * there would wait for a supervisor that is itself waiting for READY, so
 * these stay ERRNO (denied as the profile says, not counted). Generous on
 * purpose: libc may pick any of the variants.
 */
static const char *const init_syscalls[] = {
	"sendmsg",	"sendto",    "exit",	   "exit_group", "close",     "close_range",
	"openat",	"open",	     "read",	   "pread64",	 "fstat",     "newfstatat",
	"statx",	"stat",	     "lstat",	   "access",	 "faccessat", "faccessat2",
	"lseek",	"brk",	     "mmap",	   "munmap",	 "mprotect",  "mremap",
	"setgroups",	"setresuid", "setresgid",  "setuid",	 "setgid",    "setfsuid",
	"setfsgid",	"capget",    "capset",	   "prctl",	 "chdir",     "getuid",
	"getgid",	"geteuid",   "getegid",	   "getpid",	 "gettid",    "rt_sigprocmask",
	"rt_sigaction", "write",     "fcntl",	   "futex",	 "getrandom", "umask",
	"setrlimit",	"prlimit64", "getdents64", "dup",	 "dup2",      "dup3",
};

/* ["a", "b", ...] into buf, cut with "..." if it does not fit. */
static const char *names_str(char *buf, size_t len, const struct urs_scmp_rule *r)
{
	size_t off = 1;

	buf[0] = '[';
	for (size_t i = 0; i < r->n_names && r->names && r->names[i]; i++) {
		/* keep room for ", ...]" and the NUL */
		int n = snprintf(buf + off, len - off, "%s\"%s\"", i ? ", " : "", r->names[i]);
		if (n < 0 || (size_t) n + 7 > len - off) {
			snprintf(buf + off, len - off, "%s...", i ? ", " : "");
			off = strlen(buf);
			break;
		}
		off += (size_t) n;
	}
	snprintf(buf + off, len - off, "]");
	return buf;
}

/* "seccomp: syscalls[i] (names: [...]): <fmt>" into err; returns rc. */
__attribute__((format(printf, 5, 6))) static int
rule_err(struct urs_err *err, int rc, size_t i, const struct urs_scmp_rule *r, const char *fmt, ...)
{
	char names[160], what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return urs_err_set(err, rc, "seccomp: syscalls[%zu] (names: %s): %s", i,
			   names_str(names, sizeof(names), r), what);
}

/* The libseccomp action for (a, errno_ret); 0 with *out set, or -EINVAL. */
static int to_action(enum urs_scmp_action a, bool has_ret, uint32_t ret, uint32_t *out)
{
	switch (a) {
	case URS_SCMP_ACT_KILL:
	case URS_SCMP_ACT_KILL_THREAD:
		*out = SCMP_ACT_KILL_THREAD;
		return 0;
	case URS_SCMP_ACT_KILL_PROCESS:
		*out = SCMP_ACT_KILL_PROCESS;
		return 0;
	case URS_SCMP_ACT_TRAP:
		*out = SCMP_ACT_TRAP;
		return 0;
	case URS_SCMP_ACT_ERRNO:
		*out = SCMP_ACT_ERRNO(has_ret ? ret : EPERM);
		return 0;
	case URS_SCMP_ACT_TRACE:
		*out = SCMP_ACT_TRACE(has_ret ? ret : EPERM);
		return 0;
	case URS_SCMP_ACT_ALLOW:
		*out = SCMP_ACT_ALLOW;
		return 0;
	case URS_SCMP_ACT_LOG:
		*out = SCMP_ACT_LOG;
		return 0;
	case URS_SCMP_ACT_NOTIFY:
		*out = SCMP_ACT_NOTIFY;
		return 0;
	}
	return -EINVAL;
}

static const char *action_name(enum urs_scmp_action a)
{
	const char *n = urs_scmp_action_name(a); /* the parser's table */
	return n ? n : "?";
}

static int to_op(enum urs_scmp_op op, enum scmp_compare *out)
{
	static const enum scmp_compare map[] = {
		[URS_SCMP_CMP_NE] = SCMP_CMP_NE,
		[URS_SCMP_CMP_LT] = SCMP_CMP_LT,
		[URS_SCMP_CMP_LE] = SCMP_CMP_LE,
		[URS_SCMP_CMP_EQ] = SCMP_CMP_EQ,
		[URS_SCMP_CMP_GE] = SCMP_CMP_GE,
		[URS_SCMP_CMP_GT] = SCMP_CMP_GT,
		[URS_SCMP_CMP_MASKED_EQ] = SCMP_CMP_MASKED_EQ,
	};
	if ((unsigned int) op >= URS_ARRAY_SIZE(map))
		return -EINVAL;
	*out = map[op];
	return 0;
}

/* "SCMP_ARCH_X86_64" → SCMP_ARCH_X86_64's token via libseccomp's "x86_64"; 0 if unknown. */
static uint32_t resolve_arch(const char *name)
{
	static const char prefix[] = "SCMP_ARCH_";
	char low[32];
	size_t n;

	if (strncmp(name, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	name += sizeof(prefix) - 1;
	n = strlen(name);
	if (n == 0 || n >= sizeof(low))
		return 0;
	for (size_t i = 0; i <= n; i++)
		low[i] = (char) (name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
	return seccomp_arch_resolve_name(low);
}

static int set_flag(scmp_filter_ctx ctx, const char *flag, struct urs_err *err)
{
	static const struct {
		const char *name;
		enum scmp_filter_attr attr;
	} flags[] = {
		{"SECCOMP_FILTER_FLAG_TSYNC", SCMP_FLTATR_CTL_TSYNC},
		{"SECCOMP_FILTER_FLAG_LOG", SCMP_FLTATR_CTL_LOG},
		{"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SCMP_FLTATR_CTL_SSB},
#if SCMP_VER_MAJOR > 2 || (SCMP_VER_MAJOR == 2 && SCMP_VER_MINOR >= 6)
		{"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", SCMP_FLTATR_CTL_WAITKILL},
#endif
	};
	int rc;

	for (size_t i = 0; i < URS_ARRAY_SIZE(flags); i++) {
		if (strcmp(flag, flags[i].name) != 0)
			continue;
		rc = seccomp_attr_set(ctx, flags[i].attr, 1);
		if (rc < 0)
			return urs_err_set(err, rc, "seccomp: flag %s: %s", flag, strerror(-rc));
		return 0;
	}
	if (strcmp(flag, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") == 0)
		return urs_err_set(err, -EOPNOTSUPP,
				   "seccomp: flag %s needs libseccomp >= 2.6 (built with %d.%d.%d)",
				   flag, SCMP_VER_MAJOR, SCMP_VER_MINOR, SCMP_VER_MICRO);
	return urs_err_set(err, -EINVAL, "seccomp: unknown flag \"%s\"", flag);
}

/* Checks that do not need the filter: action, errnoRet, args, NOTIFY on write. */
static int check_rule(const struct urs_scmp_rule *r, size_t i, struct urs_err *err)
{
	uint32_t act;

	if (r->n_names == 0 || !r->names)
		return rule_err(err, -EINVAL, i, r, "no syscall names");
	for (size_t k = 0; k < r->n_names; k++) {
		if (!r->names[k] || !r->names[k][0])
			return rule_err(err, -EINVAL, i, r, "empty syscall name");
		if (r->action == URS_SCMP_ACT_NOTIFY && strcmp(r->names[k], "write") == 0)
			return rule_err(err, -EINVAL, i, r,
					"SCMP_ACT_NOTIFY cannot be used for the write syscall");
	}
	if (to_action(r->action, false, 0, &act) < 0)
		return rule_err(err, -EINVAL, i, r, "invalid action %d", (int) r->action);
	if (r->has_errno_ret && r->errno_ret > 0xffff)
		return rule_err(err, -EINVAL, i, r, "errnoRet %u out of range (0..65535)",
				r->errno_ret);
	for (size_t k = 0; k < r->n_args; k++) {
		const struct urs_scmp_arg *a = &r->args[k];
		enum scmp_compare op;
		if (a->index >= MAX_ARGS)
			return rule_err(err, -EINVAL, i, r, "invalid argument index %u", a->index);
		if (to_op(a->op, &op) < 0)
			return rule_err(err, -EINVAL, i, r, "args[%zu]: invalid operator %d", k,
					(int) a->op);
	}
	return 0;
}

static bool is_errno_action(uint32_t act)
{
	return (act & ~0xffffU) == SCMP_ACT_ERRNO(0);
}

static uint32_t seccomp_attr_default(scmp_filter_ctx ctx)
{
	uint32_t v = 0;
	seccomp_attr_get(ctx, SCMP_FLTATR_ACT_DEFAULT, &v);
	return v;
}

static int add_rule(scmp_filter_ctx ctx, const struct urs_scmp_rule *r, size_t i, uint32_t act,
		    const struct nr_info *info, struct urs_seccomp_stats *st, struct urs_err *err)
{
	struct scmp_arg_cmp cmp[MAX_ARGS * 4];
	unsigned int per_index[MAX_ARGS] = {0};
	bool split = false;
	size_t n_cmp = r->n_args;
	int rc;

	if (n_cmp > URS_ARRAY_SIZE(cmp))
		return rule_err(err, -EINVAL, i, r, "too many args (%zu)", n_cmp);
	for (size_t k = 0; k < n_cmp; k++) {
		const struct urs_scmp_arg *a = &r->args[k];
		enum scmp_compare op = SCMP_CMP_EQ;
		to_op(a->op, &op); /* checked by check_rule() */
		/* MASKED_EQ: datum_a is the mask (value), datum_b the datum (valueTwo) */
		cmp[k] = (struct scmp_arg_cmp){
			.arg = a->index, .op = op, .datum_a = a->value, .datum_b = a->value_two};
		if (++per_index[a->index] > 1)
			split = true;
	}

	for (size_t k = 0; k < r->n_names; k++) {
		const char *name = r->names[k];
		int nr = seccomp_syscall_resolve_name(name);
		if (nr == __NR_SCMP_ERROR) {
			if (st->unknown_names < URS_ARRAY_SIZE(st->unknown))
				st->unknown[st->unknown_names] = name;
			st->unknown_names++;
			continue;
		}
		uint32_t a = act;
		if (info && is_errno_action(act) && nr >= 0 && nr < COUNT_NR &&
		    (info[nr].flags & NI_CONVERT))
			a = SCMP_ACT_NOTIFY;
		if (a != act && a == seccomp_attr_default(ctx)) {
			st->redundant_rules++; /* the converted default answers it */
			continue;
		}
		/* runc: two conditions on one index cannot be AND'ed by
		 * libseccomp, so each condition becomes its own rule (OR). */
		for (size_t c = 0; c < (split ? n_cmp : 1); c++) {
			unsigned int n = split ? 1 : (unsigned int) n_cmp;
			rc = seccomp_rule_add_array(ctx, a, nr, n, n ? &cmp[c] : NULL);
			if (rc < 0)
				return rule_err(err, rc == -ENOMEM ? -ENOMEM : -EINVAL, i, r,
						"adding %s for \"%s\": %s", action_name(r->action),
						name, strerror(-rc));
			st->rules_added++;
		}
	}
	return 0;
}

static uint16_t clamp_errno(uint32_t e)
{
	return (uint16_t) (e > MAX_ERRNO ? MAX_ERRNO : e);
}

/*
 * Count mode: decide, per native syscall number, whether its ERRNO rules
 * become NOTIFY (NI_CONVERT) and which init syscalls need an explicit
 * ERRNO rule (NI_ADD). 0 with *converted set, or 1 (counting off, *why).
 */
static int plan_count(const struct urs_seccomp *p, uint32_t def, bool def_errno, uint16_t base,
		      struct nr_info *info, uint32_t *converted, const char **why)
{
	for (size_t i = 0; i < p->n_syscalls; i++) {
		const struct urs_scmp_rule *r = &p->syscalls[i];
		uint32_t act = 0;
		to_action(r->action, r->has_errno_ret, r->errno_ret, &act);
		if (act == def)
			continue; /* skipped by the build: falls through to the default */
		for (size_t k = 0; k < r->n_names; k++) {
			int nr = seccomp_syscall_resolve_name(r->names[k]);
			if (nr < 0 || nr >= COUNT_NR)
				continue; /* unknown or not native: stays as it is */
			struct nr_info *ni = &info[nr];
			ni->flags |= NI_RULES;
			if (!ni->name)
				ni->name = r->names[k];
			if (r->n_args == 0)
				ni->flags |= NI_UNCOND;
			if (r->action != URS_SCMP_ACT_ERRNO)
				continue;
			uint16_t e = clamp_errno(r->has_errno_ret ? r->errno_ret : EPERM);
			if (!(ni->flags & NI_ERRNO)) {
				ni->flags |= NI_ERRNO;
				ni->err = e;
			} else if (ni->err != e) {
				ni->flags |= NI_MIXED;
			}
		}
	}
	for (size_t i = 0; i < URS_ARRAY_SIZE(init_syscalls); i++) {
		int nr = seccomp_syscall_resolve_name(init_syscalls[i]);
		if (nr < 0 || nr >= COUNT_NR)
			continue;
		struct nr_info *ni = &info[nr];
		ni->flags |= NI_KEEP;
		if (!def_errno || (ni->flags & NI_UNCOND))
			continue; /* never reaches the (converted) default */
		if (ni->flags & NI_RULES) {
			*why = "an init syscall has only conditional rules under an ERRNO default";
			return 1;
		}
		ni->flags |= NI_ADD;
	}
	*converted = 0;
	for (int nr = 0; nr < COUNT_NR; nr++) {
		struct nr_info *ni = &info[nr];
		bool falls = def_errno && !(ni->flags & NI_UNCOND);
		if ((ni->flags & (NI_ERRNO | NI_MIXED | NI_KEEP)) != NI_ERRNO)
			continue;
		if (falls && ni->err != base)
			continue; /* two possible answers for one (arch, nr) */
		ni->flags |= NI_CONVERT;
		(*converted)++;
	}
	if (!*converted && !def_errno) {
		*why = "no ERRNO action to count";
		return 1;
	}
	return 0;
}

static int exc_cmp(const void *a, const void *b)
{
	const struct urs_seccomp_deny_exc *x = a, *y = b;
	if (x->arch != y->arch)
		return x->arch < y->arch ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

/* The answer table: base_errno plus (arch, nr) exceptions. */
static int make_table(const struct urs_seccomp *p, const struct nr_info *info, uint16_t base,
		      uint32_t converted, struct urs_seccomp_denials **out)
{
	uint32_t arches[MAX_ARCH];
	size_t na = 0, n = 0;

	arches[na++] = seccomp_arch_native();
	for (size_t i = 0; i < p->n_architectures && na < MAX_ARCH; i++) {
		uint32_t a = resolve_arch(p->architectures[i]);
		bool dup = !a;
		for (size_t k = 0; k < na && !dup; k++)
			dup = arches[k] == a;
		if (!dup)
			arches[na++] = a;
	}
	for (int pass = 0; pass < 2; pass++) {
		struct urs_seccomp_deny_exc *exc = pass ? (void *) (*out + 1) : NULL;
		n = 0;
		for (int nr = 0; nr < COUNT_NR; nr++) {
			const struct nr_info *ni = &info[nr];
			if (!(ni->flags & NI_CONVERT) || ni->err == base)
				continue;
			for (size_t k = 0; k < na; k++) {
				int anr = seccomp_syscall_resolve_name_arch(arches[k], ni->name);
				if (anr < 0)
					continue;
				/* x32 calls arrive as AUDIT_ARCH_X86_64 with the x32 bit
				 * in nr (libseccomp's X32 token is not what the kernel
				 * puts in seccomp_data.arch) */
				uint32_t arch =
					arches[k] == SCMP_ARCH_X32 ? SCMP_ARCH_X86_64 : arches[k];
				if (exc)
					exc[n] = (struct urs_seccomp_deny_exc){arch, anr, ni->err};
				n++;
			}
		}
		if (pass)
			break;
		if (n > 0xffff)
			return -E2BIG;
		*out = calloc(1, sizeof(**out) + n * sizeof(struct urs_seccomp_deny_exc));
		if (!*out)
			return -ENOMEM;
	}
	struct urs_seccomp_deny_exc *exc = (void *) (*out + 1);
	qsort(exc, n, sizeof(*exc), exc_cmp);
	**out = (struct urs_seccomp_denials){.base_errno = base,
					     .n_exc = (uint16_t) n,
					     .converted = converted,
					     .native_arch = seccomp_arch_native(),
					     .exc = exc};
	return 0;
}

void urs_seccomp_syscall_name(int nr, char *buf, size_t len)
{
	char *n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	snprintf(buf, len, "%s", n ? n : "");
	free(n);
}

uint16_t urs_seccomp_denial_errno(const struct urs_seccomp_denials *d, uint32_t arch, int32_t nr)
{
	size_t lo = 0, hi = d->n_exc;
	const struct urs_seccomp_deny_exc key = {arch, nr, 0};
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = exc_cmp(&key, &d->exc[mid]);
		if (c == 0)
			return d->exc[mid].err;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return d->base_errno;
}

/* the profile checked before anything is built: its default action
 * (*@def) and its rules; *@n_names counts the rules' syscall names */
static int check_profile(const struct urs_seccomp *p, uint32_t *def, size_t *n_names,
			 struct urs_err *err)
{
	if (to_action(p->default_action, p->has_default_errno_ret, p->default_errno_ret, def) < 0)
		return urs_err_set(err, -EINVAL, "seccomp: invalid default action %d",
				   (int) p->default_action);
	if (p->default_action == URS_SCMP_ACT_NOTIFY)
		return urs_err_set(err, -EINVAL,
				   "seccomp: SCMP_ACT_NOTIFY cannot be used as default action");
	if (p->has_default_errno_ret && p->default_errno_ret > 0xffff)
		return urs_err_set(err, -EINVAL,
				   "seccomp: defaultErrnoRet %u out of range (0..65535)",
				   p->default_errno_ret);
	*n_names = 0;
	for (size_t i = 0; i < p->n_syscalls; i++) {
		int rc = check_rule(&p->syscalls[i], i, err);
		if (rc < 0)
			return rc;
		*n_names += p->syscalls[i].n_names;
		if (p->syscalls[i].action == URS_SCMP_ACT_NOTIFY && seccomp_api_get() < 6)
			return urs_err_set(err, -EOPNOTSUPP,
					   "seccomp: SCMP_ACT_NOTIFY needs libseccomp API level 6 "
					   "(got %u; libseccomp >= 2.5 and Linux >= 5.7)",
					   seccomp_api_get());
	}
	return 0;
}

/* Counting denials (opts->count): the plan (*@info) and the denial table
 * (*@table) when the profile allows it, the default then going to the
 * notifier (*@def_filter); else *@why says why not. */
static int plan_counting(const struct urs_seccomp *p, uint32_t def, uint32_t *def_filter,
			 struct nr_info **info, struct urs_seccomp_denials **table,
			 const char **why, struct urs_err *err)
{
	bool def_errno = p->default_action == URS_SCMP_ACT_ERRNO;
	uint16_t base =
		clamp_errno(def_errno && p->has_default_errno_ret ? p->default_errno_ret : EPERM);
	uint32_t converted = 0;
	if (urs_seccomp_uses_notify(p)) {
		*why = "the profile has SCMP_ACT_NOTIFY rules (its listener goes to the agent)";
		return 0;
	}
	if (seccomp_api_get() < 6) {
		*why = "SCMP_ACT_NOTIFY needs libseccomp API level 6";
		return 0;
	}
	*info = calloc(COUNT_NR, sizeof(**info));
	if (!*info)
		return urs_err_set(err, -ENOMEM, "seccomp: out of memory");
	if (plan_count(p, def, def_errno, base, *info, &converted, why) != 0) {
		free(*info);
		*info = NULL;
		return 0;
	}
	int rc = make_table(p, *info, base, converted, table);
	if (rc < 0)
		return urs_err_set(err, rc, "seccomp: denial table: %s", strerror(-rc));
	if (def_errno)
		*def_filter = SCMP_ACT_NOTIFY;
	return 0;
}

/* the filter's attributes, architectures and flags */
static int setup_ctx(scmp_filter_ctx ctx, const struct urs_seccomp *p, size_t n_names,
		     struct urs_err *err)
{
	/* real kernel errnos instead of libseccomp's -ECANCELED */
	seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (rc < 0)
		return urs_err_set(err, rc, "seccomp: clearing the no_new_privs attribute: %s",
				   strerror(-rc));
	for (size_t i = 0; i < p->n_architectures; i++) {
		const char *name = p->architectures[i];
		uint32_t arch = resolve_arch(name);
		if (!arch)
			return urs_err_set(
				err, -EINVAL,
				"seccomp: architectures[%zu]: unknown architecture \"%s\" "
				"(libseccomp %d.%d.%d)",
				i, name, SCMP_VER_MAJOR, SCMP_VER_MINOR, SCMP_VER_MICRO);
		rc = seccomp_arch_add(ctx, arch);
		if (rc < 0 && rc != -EEXIST)
			return urs_err_set(err, rc, "seccomp: architectures[%zu]: adding %s: %s", i,
					   name, strerror(-rc));
	}
	for (size_t i = 0; i < p->n_flags; i++) {
		rc = set_flag(ctx, p->flags[i], err);
		if (rc < 0)
			return rc;
	}
	/* runc: the binary tree only for long rule sets (libseccomp <= 2.5.4
	 * misbehaves with it and no rules); failure is not fatal. */
	if (n_names > 32)
		seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	return 0;
}

/* the rules (those equal to the default are redundant, counted), and with a
 * denial table the init's syscalls that would reach the converted default
 * kept ERRNO */
static int add_rules(scmp_filter_ctx ctx, const struct urs_seccomp *p, uint32_t def,
		     const struct nr_info *info, bool counting, struct urs_seccomp_stats *st,
		     struct urs_err *err)
{
	for (size_t i = 0; i < p->n_syscalls; i++) {
		const struct urs_scmp_rule *r = &p->syscalls[i];
		uint32_t act = 0;
		to_action(r->action, r->has_errno_ret, r->errno_ret, &act);
		if (act == def) {
			st->redundant_rules++;
			continue;
		}
		int rc = add_rule(ctx, r, i, act, counting ? info : NULL, st, err);
		if (rc < 0)
			return rc;
	}
	for (int nr = 0; counting && nr < COUNT_NR; nr++) {
		if (!(info[nr].flags & NI_ADD))
			continue;
		int rc = seccomp_rule_add(ctx, def, nr, 0);
		if (rc < 0)
			return urs_err_set(err, rc,
					   "seccomp: keeping syscall %d out of the notifier: %s",
					   nr, strerror(-rc));
	}
	return 0;
}

int urs_seccomp_build_opts(const struct urs_seccomp *p, const struct urs_seccomp_opts *opts,
			   scmp_filter_ctx *out, struct urs_err *err)
{
	struct urs_seccomp_stats dummy, *st = opts && opts->stats ? opts->stats : &dummy;
	_cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
	_cleanup_free_ struct nr_info *info = NULL;
	_cleanup_free_ struct urs_seccomp_denials *table = NULL;
	const char *why_dummy, **why = opts && opts->why ? opts->why : &why_dummy;
	size_t n_names = 0;
	uint32_t def = 0;

	*out = NULL;
	*why = NULL;
	if (opts && opts->count)
		*opts->count = NULL;
	memset(st, 0, sizeof(*st));
	int rc = check_profile(p, &def, &n_names, err);
	if (rc < 0)
		return rc;
	uint32_t def_filter = def; /* the default action in the filter */
	if (opts && opts->count &&
	    (rc = plan_counting(p, def, &def_filter, &info, &table, why, err)) < 0)
		return rc;
	ctx = seccomp_init(def_filter);
	if (!ctx)
		return urs_err_set(err, -ENOMEM, "seccomp: seccomp_init failed");
	if ((rc = setup_ctx(ctx, p, n_names, err)) < 0 ||
	    (rc = add_rules(ctx, p, def, info, table != NULL, st, err)) < 0)
		return rc;
	*out = steal_ptr(&ctx);
	if (table)
		*opts->count = steal_ptr(&table);
	return 0;
}

int urs_seccomp_build(const struct urs_seccomp *profile, scmp_filter_ctx *out, struct urs_err *err)
{
	return urs_seccomp_build_opts(profile, NULL, out, err);
}

int urs_seccomp_load(scmp_filter_ctx ctx, int *listener_fd)
{
	int rc;

	if (listener_fd)
		*listener_fd = -1;
	rc = seccomp_load(ctx);
	if (rc < 0)
		return rc;
	if (listener_fd) {
		int fd = seccomp_notify_fd(ctx);
		*listener_fd = fd >= 0 ? fd : -1;
	}
	return 0;
}

int urs_seccomp_load_hook(void *ctx, struct urs_err *err)
{
	int rc = urs_seccomp_load(ctx, NULL);

	if (rc < 0)
		return urs_err_set(err, rc, "seccomp: loading the filter: %s", strerror(-rc));
	return 0;
}

int urs_seccomp_load_notify_hook(void *ctx, int *listener, struct urs_err *err)
{
	int rc = urs_seccomp_load(ctx, listener);

	if (rc < 0)
		return urs_err_set(err, rc, "seccomp: loading the filter: %s", strerror(-rc));
	return 0;
}
