/*
 * host/seccomp_bpf.h — seccomp filters as compiled BPF programs.
 *
 * libseccomp turns a profile into BPF when the filter is loaded; for
 * Docker's default profile that is ~7 ms of CPU (1 249 instructions,
 * binary-tree layout), paid inside the container's init after `start`.
 * So ursa compiles before forking (`ursa create` pays it, not `start`), and
 * the default profile of `ursa do` is compiled at BUILD time by
 * host/gen_seccomp_bpf.c into urs_default_bpf[]. The init then loads the
 * program with one seccomp(2) call.
 */
#ifndef URSA_HOST_SECCOMP_BPF_H
#define URSA_HOST_SECCOMP_BPF_H

#include <linux/filter.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>

#include "runtime/err.h"

struct urs_bpf {
	struct sock_fprog prog;
	unsigned int flags; /* SECCOMP_FILTER_FLAG_* */
	void *owned;	    /* malloc'd instructions, or NULL for static ones */
};

/* Export @ctx's program (and its filter flags) into @out. */
int urs_seccomp_compile(scmp_filter_ctx ctx, struct urs_bpf *out, struct urs_err *err);
void urs_bpf_release(struct urs_bpf *b);
/* Does the profile use SCMP_ACT_NOTIFY anywhere (then libseccomp loads it)? */
struct urs_seccomp;
bool urs_seccomp_uses_notify(const struct urs_seccomp *profile);
/* struct urs_launch's load_seccomp hook: one seccomp(2) call. */
int urs_bpf_load_hook(void *bpf, struct urs_err *err);
/* The same with SECCOMP_FILTER_FLAG_NEW_LISTENER (struct urs_launch's
 * load_seccomp_notify): *listener receives the notification fd. */
int urs_bpf_load_notify_hook(void *bpf, int *listener, struct urs_err *err);

/*
 * Answering counted denials (see struct urs_seccomp_denials in seccomp.h).
 * The supervisor owns the listener; when it polls readable, one
 * urs_seccomp_notify_answer() receives one notification and answers it with
 * the profile's errno (never CONTINUE, never reading the target's memory, so
 * SECCOMP_IOCTL_NOTIF_ID_VALID is not needed). If the supervisor is gone,
 * the kernel fails every notifying syscall with ENOSYS instead (the
 * container's init dies with its parent anyway: PDEATHSIG).
 */
struct urs_seccomp_denials;
/* Check the kernel's notification sizes and ask for synchronous wake-ups
 * (Linux >= 6.6; ignored when refused). 0 or a negative errno. */
int urs_seccomp_notify_setup(int listener);
/* Receive one notification and answer it: 0 (*arch, *nr set), -ENOENT (the
 * task went away before or during the answer: *nr is set if it was
 * received), or another negative errno. Does not allocate. */
int urs_seccomp_notify_answer(int listener, const struct urs_seccomp_denials *d, uint32_t *arch,
			      int32_t *nr);

/* Generated at build time (meson: gen_seccomp_bpf): Docker's default profile
 * for Docker's default capabilities on this architecture. */
extern const struct sock_filter urs_default_bpf[];
extern const unsigned short urs_default_bpf_len;
/* The same profile with its denials counted (ERRNO turned into NOTIFY), and
 * the errno table the supervisor answers from. */
extern const struct sock_filter urs_default_count_bpf[];
extern const unsigned short urs_default_count_bpf_len;
extern const struct urs_seccomp_denials urs_default_denials;

#endif
