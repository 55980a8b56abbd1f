/*
 * actors/supervisor.h — the per-sandbox supervisor process.
 *
 * `ursa create` (and run/do) forks it; it clones the container's init into
 * new namespaces, tells its parent READY (with the init's pid) or ERROR, lets
 * go of the caller's stdio, and then runs the runtime loop until the init
 * exits: a control socket (start, later exec/checkpoint/metrics), the init's
 * pidfd, and forwarded signals are its actors. It exits with the init's exit
 * code, or 128 + signal.
 */
#ifndef URSA_ACTORS_SUPERVISOR_H
#define URSA_ACTORS_SUPERVISOR_H

#include <stdbool.h>
#include <sys/types.h>

#include "host/cgroup.h"
#include "host/init.h"

struct urs_netopts;
struct ckpt_policy;

struct urs_sup_args {
	const char *state_dir; /* ROOT/ID: control socket lives here; NULL for `ursa do` */
	struct urs_launch launch;
	int report_fd;		 /* SEQPACKET to the process that forked us */
	const char *cgroup_path; /* linux.cgroupsPath or NULL */
	const char *id;
	const char *bundle;
	const char *annotations; /* JSON object text or NULL */
	bool no_prewarm;	 /* benchmark only: skip fd-table prewarming */
	bool no_cgroup;		 /* `ursa do` without limits: the pid namespace is the leash */
	bool start_now;		 /* release the init as soon as it is READY (run, do) */
	struct urs_netopts *net; /* networking for a new net namespace, or NULL */
	pid_t parent;		 /* who forked us: `ursa do` takes the sandbox down with it */
	/* counted seccomp denials (actors/metrics.h): the listener that comes
	 * with READY is ours, answered from this table; NULL: it goes to the
	 * agent at linux.seccomp.listenerPath */
	const struct urs_seccomp_denials *seccomp_count;
	bool profile; /* ursa --profile */
	/* `ursa restore`: the init builds the root and stops, and is turned into
	 * the checkpoint image in this directory (ckpt/restore.h) before
	 * READY; NULL for a normal launch */
	const char *restore_dir;
	const struct ckpt_policy *restore_policy;
	bool restore_lazy;     /* its memory lazily: the pager runs in us (ckpt/lazy.h) */
	bool restore_remote;   /* ... its page data from restore_src (ckpt_restore_opts.lazy_src) */
	bool restore_unshared; /* ... a copy of shared memory each (ckpt_restore_opts.unshared) */
	int restore_src;
	const char *log; /* ursa --log (and --log-format json): where a crash is told */
	bool log_json;
	/* `ursa create --host-socket`: once built, the sandbox is handed over
	 * to the process listening there (actors/hosted.h); NULL: we serve it */
	const char *host_socket;
};

/* A report that only carries the cgroup, sent as soon as it is made: if
 * we die before READY or ERROR, the parent still knows what to remove. */
#define URS_SUP_CGROUP_MADE 1

/* Report from the supervisor to its parent. */
struct urs_sup_report {
	int32_t code; /* 0 = READY, URS_SUP_CGROUP_MADE: cgroup made (more follows), else -errno */
	pid_t init_pid;
	char cgroup[URS_CG_STRING_MAX]; /* serialized cgroup (for the state file) */
	char msg[1024];
	/* READY: the init's fds 0-2 before it ran or was restored into
	 * (urs_proc_stdio_ids), for the record's stdio */
	uint64_t stdio_dev[3], stdio_ino[3];
};

/* linux.resources onto a sandbox's cgroups. @created (the spec's linux
 * section) when the sandbox is new: then a full device policy is written
 * even without rules; NULL for `ursa update` (devices only if given). */
int urs_resources_apply(struct urs_cgroup *cg, const struct urs_resources *res,
			const struct urs_linux *created, struct urs_err *err);

/* Dying of a fault (SIGSEGV, SIGABRT...): one line saying so in
 * @state_dir/crash and appended to @log (actors/sup_crash.c). */
void urs_sup_crash_arm(const char *state_dir, const char *id, const char *log, bool json);

/* Runs in the forked supervisor; returns the process's exit status. */
int urs_supervisor_main(struct urs_sup_args *a);

#include "actors/control.h" /* the control protocol's client */

#endif
