/*
 * actors/bundle.h — a sandbox's options from an OCI bundle: config.json
 * loaded and checked, the root resolved, the seccomp profile compiled, the
 * network settings from the run.ursa.* annotations (actors/bundle.c). What
 * `ursa create`, `run` and `restore` share, and what a caller that makes
 * sandboxes in its own process (the containerd shim) needs.
 */
#ifndef URSA_ACTORS_BUNDLE_H
#define URSA_ACTORS_BUNDLE_H

#include <limits.h>
#include <stdbool.h>

#include "actors/netstack.h"
#include "actors/sandbox.h"
#include "host/seccomp_bpf.h"
#include "host/spec.h"

/* a container to be made from a bundle: the caller's settings, then what
 * urs_bundle_prepare loads (free with urs_create_args_free) */
struct urs_create_args {
	const char *id, *bundle, *pid_file, *console_socket;
	const char *host_socket; /* create --host-socket (actors/hosted.h), or NULL */
	bool no_pivot, no_new_keyring, detach, no_subreaper, keep;
	int preserve_fds;
	/* the caller's: the state root, --log/--log-format, --profile */
	const char *root, *log;
	bool log_json, profile;
	/* called once config.json is read (NULL: nothing): the CLI re-execs
	 * from a sealed copy of itself for a CAP_SYS_PTRACE container */
	int (*seal_self)(const struct urs_spec *spec, struct urs_err *err);
	char bundle_abs[PATH_MAX], rootfs_abs[PATH_MAX];
	struct urs_spec *spec;
	struct urs_bpf bpf; /* compiled seccomp filter (bpf.prog.len == 0: none) */
	void *filter;	    /* libseccomp filter, kept only for SCMP_ACT_NOTIFY profiles */
	struct urs_seccomp_denials *denials; /* counted denials' errno table, or NULL */
	const char *count_why;		     /* why denials are not counted, or NULL */
	struct urs_netopts net;		     /* from the run.ursa.* annotations */
	bool plain_seccomp; /* never count denials (restore: images hold the plain filter) */
	bool lazy_pages;    /* restore: memory through userfaultfd after it runs (ckpt/lazy.h) */
	bool lazy_remote;   /* ... its page data from ursa-store on lazy_src (cmd/remote.h) */
	bool lazy_unshared; /* ... what processes shared, a copy each (ckpt_restore_opts.unshared)
			     */
	int lazy_src;
};

/* Load @c's bundle (--bundle, or the current directory) into @o: every
 * setting checked, a refusal named in @err. 0 or a negative errno. */
int urs_bundle_prepare(struct urs_create_args *c, struct urs_sandbox_opts *o, struct urs_err *err);
/* What urs_bundle_prepare loaded, released. */
void urs_create_args_free(struct urs_create_args *c);

#endif
