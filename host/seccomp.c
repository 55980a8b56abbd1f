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
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "host/seccomp.h"
#include "runtime/common.h"

#define MAX_ARGS 6 /* a syscall has at most six arguments */

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

static int add_rule(scmp_filter_ctx ctx, const struct urs_scmp_rule *r, size_t i, uint32_t act,
		    struct urs_seccomp_stats *st, struct urs_err *err)
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
		/* runc: two conditions on one index cannot be AND'ed by
		 * libseccomp, so each condition becomes its own rule (OR). */
		for (size_t c = 0; c < (split ? n_cmp : 1); c++) {
			unsigned int n = split ? 1 : (unsigned int) n_cmp;
			rc = seccomp_rule_add_array(ctx, act, nr, n, n ? &cmp[c] : NULL);
			if (rc < 0)
				return rule_err(err, rc == -ENOMEM ? -ENOMEM : -EINVAL, i, r,
						"adding %s for \"%s\": %s", action_name(r->action),
						name, strerror(-rc));
			st->rules_added++;
		}
	}
	return 0;
}

int urs_seccomp_build_opts(const struct urs_seccomp *p, const struct urs_seccomp_opts *opts,
			   scmp_filter_ctx *out, struct urs_err *err)
{
	struct urs_seccomp_stats dummy, *st = opts && opts->stats ? opts->stats : &dummy;
	_cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
	size_t n_names = 0;
	uint32_t def;
	int rc;

	*out = NULL;
	memset(st, 0, sizeof(*st));
	if (to_action(p->default_action, p->has_default_errno_ret, p->default_errno_ret, &def) < 0)
		return urs_err_set(err, -EINVAL, "seccomp: invalid default action %d",
				   (int) p->default_action);
	if (p->default_action == URS_SCMP_ACT_NOTIFY)
		return urs_err_set(err, -EINVAL,
				   "seccomp: SCMP_ACT_NOTIFY cannot be used as default action");
	if (p->has_default_errno_ret && p->default_errno_ret > 0xffff)
		return urs_err_set(err, -EINVAL,
				   "seccomp: defaultErrnoRet %u out of range (0..65535)",
				   p->default_errno_ret);
	for (size_t i = 0; i < p->n_syscalls; i++) {
		rc = check_rule(&p->syscalls[i], i, err);
		if (rc < 0)
			return rc;
		n_names += p->syscalls[i].n_names;
		if (p->syscalls[i].action == URS_SCMP_ACT_NOTIFY && seccomp_api_get() < 6)
			return urs_err_set(err, -EOPNOTSUPP,
					   "seccomp: SCMP_ACT_NOTIFY needs libseccomp API level 6 "
					   "(got %u; libseccomp >= 2.5 and Linux >= 5.7)",
					   seccomp_api_get());
	}

	ctx = seccomp_init(def);
	if (!ctx)
		return urs_err_set(err, -ENOMEM, "seccomp: seccomp_init failed");
	/* real kernel errnos instead of libseccomp's -ECANCELED */
	seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
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

	for (size_t i = 0; i < p->n_syscalls; i++) {
		const struct urs_scmp_rule *r = &p->syscalls[i];
		uint32_t act = 0;
		to_action(r->action, r->has_errno_ret, r->errno_ret, &act);
		if (act == def) {
			st->redundant_rules++;
			continue;
		}
		rc = add_rule(ctx, r, i, act, st, err);
		if (rc < 0)
			return rc;
	}

	*out = steal_ptr(&ctx);
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
