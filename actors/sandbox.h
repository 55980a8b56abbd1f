/*
 * actors/sandbox.h — making a sandbox: fork the supervisor, wait for its
 * READY/ERROR report, record the container, and undo everything on failure
 * (state directory, cgroups via the supervisor, processes). Shared by
 * create, run and do.
 */
#ifndef URSA_ACTORS_SANDBOX_H
#define URSA_ACTORS_SANDBOX_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/err.h"
#include "host/spec.h"
#include "host/state.h"

struct urs_netopts;
struct ckpt_policy;

struct urs_sandbox_opts {
	const char *root; /* --root; NULL: no record (ursa do) */
	const char *id;
	const char *bundle; /* absolute */
	const struct urs_spec *spec;
	const char *rootfs; /* absolute; ignored with overlay_scratch */
	const char *overlay_scratch;
	bool overlay_prepared; /* a tmpfs with upper/ work/ root/ is mounted there (ursa do --id) */
	const char *console_socket;
	bool use_console_fd; /* console_fd: an already connected console socket (run's relay) */
	int console_fd;
	const char *pid_file;
	bool no_pivot, no_new_keyring, autostart, no_prewarm, no_cgroup;
	int preserve_fds;
	void *seccomp; /* built filter for the init, or NULL */
	int (*load_seccomp)(void *filter, struct urs_err *err);
	bool seccomp_notify; /* a NOTIFY profile: libseccomp filter, listener to the agent */
	int (*load_seccomp_notify)(void *filter, int *listener, struct urs_err *err);
	struct urs_netopts *net; /* NULL: the spec's namespaces alone decide (lo only) */
	/* counted seccomp denials: the filter's listener stays with the supervisor,
	 * which answers from this table (host/seccomp.h); NULL: off */
	const struct urs_seccomp_denials *seccomp_count;
	bool profile; /* ursa --profile: ursa_profile_* metrics */
	/* `ursa restore`: the checkpoint image to turn the init into, and what
	 * the image may ask for (actors/supervisor.h); NULL: a normal launch */
	const char *restore_dir;
	const struct ckpt_policy *restore_policy;
	bool restore_lazy;     /* memory lazily, through userfaultfd (ckpt/lazy.h) */
	bool restore_remote;   /* ... its page data from restore_src (ckpt_restore_opts.lazy_src) */
	bool restore_unshared; /* ... a copy of shared memory each (ckpt_restore_opts.unshared) */
	int restore_src;
	const char *log; /* ursa --log: the supervisor tells a crash there too */
	bool log_json;
	const char *host_socket; /* hand the sandbox over there (actors/hosted.h), or NULL */
};

/*
 * Fork the supervisor and wait until the init is READY (or running, with
 * autostart). On success the record is written (unless root is NULL) and
 * *sup is the supervisor's pid (our child); the init, st->pid, is our
 * child too (the supervisor clones it with CLONE_PARENT), to be reaped by
 * us or, once we exit, by our subreaper. On failure nothing is left.
 */
int urs_sandbox_create(const struct urs_sandbox_opts *o, pid_t *sup, struct urs_state *st,
		       struct urs_err *err);

/* Release a created container (ROOT/ID/ctl.sock "start"), mark it started. */
int urs_sandbox_start(const char *root, struct urs_state *st, struct urs_err *err);

/* Run poststart/poststop hooks of a recorded container (spec from ROOT/ID
 * if @spec is NULL); each failure goes to @warn. */
void urs_sandbox_hooks(const char *root, const struct urs_state *st, const struct urs_spec *spec,
		       enum urs_hook_kind kind, const char *status, void (*warn)(const char *msg));

/* Remove a sandbox's cgroups given their serialization (no-op for NULL/""). */
void urs_sandbox_cgroup_remove(const char *cgroup);

/* Write @pid to @path atomically. */
int urs_write_pid_file(const char *path, pid_t pid, struct urs_err *err);

#endif
