/*
 * host/seccomp.h — a sandbox's seccomp filter: the OCI linux.seccomp section
 * (struct urs_seccomp from host/spec.h) turned into a libseccomp filter with
 * runc's semantics, loaded by the container init right before execve, and
 * the built-in default profile (Docker's) that `ursa do` uses when a config
 * gives none.
 *
 * Build and load are split on purpose: the filter is built (and every error
 * reported with the rule it comes from) while the init can still talk to its
 * parent; the load is the last thing before execve and does no allocation
 * that can fail for profile reasons.
 */
#ifndef URSA_HOST_SECCOMP_H
#define URSA_HOST_SECCOMP_H

#include <stdint.h>
#include <linux/capability.h>
#include <seccomp.h>

#include "runtime/err.h"
#include "host/spec.h"

/* What a build skipped, for the caller's debug log (runc logs the same at debug level). */
struct urs_seccomp_stats {
	unsigned int rules_added;     /* libseccomp rules added (one per name, per OR'ed arg) */
	unsigned int unknown_names;   /* names libseccomp cannot resolve: skipped, like runc */
	unsigned int redundant_rules; /* rules whose action is the default action: skipped */
	const char *unknown[8];	      /* the first unknown names (pointers into the profile) */
};

/*
 * Counting denied syscalls (issue #5): the filter is built with its ERRNO
 * actions turned into SCMP_ACT_NOTIFY, and the supervisor answers each
 * notification with the errno the profile gave (see host/seccomp_bpf.h for
 * the answering side). The table below says which errno: base_errno for
 * everything but the few (arch, nr) pairs listed in exc[] (e.g. clone3 →
 * ENOSYS in Docker's profile). It is built before the supervisor forks and
 * never changes, so a notification is answered without allocating.
 *
 * A rule is converted only where the answer is unambiguous from (arch, nr)
 * alone — every ERRNO rule of that syscall has the same errno, and a call
 * that falls through to an ERRNO default gets that same errno — otherwise
 * it stays ERRNO (denied exactly as before, just not counted). Syscalls the
 * container's init makes between loading the filter and handing the listener
 * to the supervisor are never converted (a notification there would wait for
 * a supervisor that is blocked waiting for the init); if one of them could
 * reach an ERRNO default through conditional rules only, counting is off for
 * that profile.
 */
struct urs_seccomp_deny_exc {
	uint32_t arch; /* AUDIT_ARCH_* (= SCMP_ARCH_*) */
	int32_t nr;    /* as seccomp_data.nr carries it */
	uint16_t err;
};

struct urs_seccomp_denials {
	uint16_t base_errno;			/* the answer for any (arch, nr) not in exc[] */
	uint16_t n_exc;				/* sorted by (arch, nr) */
	uint32_t converted;			/* syscall numbers whose denials notify */
	uint32_t native_arch;			/* AUDIT_ARCH_* of this build */
	const struct urs_seccomp_deny_exc *exc; /* the table */
};

/* Syscall numbers below this are counted one by one (the rest: "other"). */
#define URS_SECCOMP_COUNT_NR 512
/* Bundle annotation: "false" turns the counting of denials off. */
#define URS_ANN_SECCOMP_COUNT "run.ursa.seccomp-count"
/* The name of native syscall @nr into @buf ("" if unknown). Allocates inside
 * libseccomp: for scrapes, not for the notification path. */
void urs_seccomp_syscall_name(int nr, char *buf, size_t len);

/* The errno to answer for a notification of (arch, nr). No allocation. */
uint16_t urs_seccomp_denial_errno(const struct urs_seccomp_denials *d, uint32_t arch, int32_t nr);

/*
 * Knobs for urs_seccomp_build_opts(); all-zero (or a NULL pointer) is runc's
 * behaviour.
 */
struct urs_seccomp_opts {
	struct urs_seccomp_stats *stats; /* filled if non-NULL */
	/*
	 * Non-NULL: count denials. On success *count receives a malloc'd table
	 * (free() it) when ERRNO actions were turned into NOTIFY, or NULL when
	 * the filter is built as without this knob: the profile has NOTIFY rules
	 * of its own (listenerPath: the listener belongs to the agent), no ERRNO
	 * action, or an init syscall that cannot be kept out of the notifier.
	 * *why (if non-NULL) then says which, for the debug log.
	 */
	struct urs_seccomp_denials **count;
	const char **why;
};

/*
 * Translate profile into a new filter in *out (release it with
 * seccomp_release() or _cleanup_seccomp_). The filter does not set
 * no_new_privs itself (the init does, or holds CAP_SYS_ADMIN), reports raw
 * kernel errnos, and uses libseccomp's binary tree for long rule sets.
 * Returns 0, -EINVAL for a profile that cannot be expressed (err names the
 * rule, e.g. `seccomp: syscalls[3] (names: ["mount"]): invalid argument
 * index 7`), -EOPNOTSUPP for what this libseccomp/kernel cannot do, -ENOMEM.
 */
int urs_seccomp_build(const struct urs_seccomp *profile, scmp_filter_ctx *out, struct urs_err *err);
int urs_seccomp_build_opts(const struct urs_seccomp *profile, const struct urs_seccomp_opts *opts,
			   scmp_filter_ctx *out, struct urs_err *err);

/*
 * Load ctx into the calling thread (all threads with SECCOMP_FILTER_FLAG_TSYNC).
 * Call it last before execve, after prctl(PR_SET_NO_NEW_PRIVS) or while
 * holding CAP_SYS_ADMIN. If listener_fd is non-NULL it receives the
 * SCMP_ACT_NOTIFY listener (the caller owns it and sends it to the agent at
 * linux.seccomp.listenerPath) or -1 if the filter has no NOTIFY rule.
 * 0 or a negative errno from the kernel.
 */
int urs_seccomp_load(scmp_filter_ctx ctx, int *listener_fd);
/* The same for struct urs_launch's load_seccomp hook (no NOTIFY listener): message in err. */
int urs_seccomp_load_hook(void *ctx, struct urs_err *err);
/* The same for NOTIFY profiles: *listener receives the notification fd. */
int urs_seccomp_load_notify_hook(void *ctx, int *listener, struct urs_err *err);

static inline void urs_seccomp_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}
#define _cleanup_seccomp_ __attribute__((cleanup(urs_seccomp_releasep)))

/* ---- the default profile (host/seccomp_default.c) ---- */

#define URS_CAP(c) (UINT64_C(1) << (c))
/* Docker's default capability set, for which the default profile is tuned. */
#define URS_SECCOMP_DOCKER_CAPS                                                                \
	(URS_CAP(CAP_CHOWN) | URS_CAP(CAP_DAC_OVERRIDE) | URS_CAP(CAP_FOWNER) |                \
	 URS_CAP(CAP_FSETID) | URS_CAP(CAP_KILL) | URS_CAP(CAP_SETGID) | URS_CAP(CAP_SETUID) | \
	 URS_CAP(CAP_SETPCAP) | URS_CAP(CAP_NET_BIND_SERVICE) | URS_CAP(CAP_NET_RAW) |         \
	 URS_CAP(CAP_SYS_CHROOT) | URS_CAP(CAP_MKNOD) | URS_CAP(CAP_AUDIT_WRITE) |             \
	 URS_CAP(CAP_SETFCAP))

/*
 * Docker's default seccomp profile (moby profiles/seccomp/default.json) for
 * this host's architecture and a sandbox holding caps (bit n = capability n,
 * as in struct urs_caps; pass its bounding set): deny by default with EPERM,
 * allow ~350 syscalls, allow the capability-gated ones only with their
 * capability, clone without namespace flags and clone3 → ENOSYS unless
 * CAP_SYS_ADMIN. One allocation: free() it. 0 or -ENOMEM.
 */
int urs_seccomp_default_profile(uint64_t caps, struct urs_seccomp **out);
/* urs_seccomp_default_profile() + urs_seccomp_build(). */
int urs_seccomp_build_default(uint64_t caps, scmp_filter_ctx *out, struct urs_err *err);

#endif
