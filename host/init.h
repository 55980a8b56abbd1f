/*
 * host/init.h — the container's first process, from clone to execve.
 *
 * The supervisor clones this process into the new namespaces; it then
 * builds the container from inside (mounts, pivot_root, hostname, sysctl,
 * rlimits, identity, capabilities, seccomp), reports READY over its sync
 * socket and blocks until START (sent at once for run and do). Every
 * failure is reported back as an ERROR message with the field it concerns,
 * so `ursa create` can print it and clean up.
 *
 * With the annotation URS_ANN_INIT = "minimal" (set by `ursa do`, opt-in
 * for bundles) the init does not become the process: it forks it and stays
 * pid 1, a minimal init as `docker run --init` has, that forwards signals,
 * reaps, and exits with the process's code or 128 + N when it died of
 * signal N (a command that is pid 1 ignores signals it has no handler for).
 *
 * Sync protocol (SOCK_SEQPACKET, one struct per message):
 *   supervisor -> init: GO (id maps written, prestart/createRuntime hooks
 *                       done; carries the state JSON), START
 *   init -> supervisor: READY, ERROR {code, msg}
 */
#ifndef URSA_HOST_INIT_H
#define URSA_HOST_INIT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/err.h"
#include "host/spec.h"

#define URS_ANN_INIT "run.ursa.init"

enum urs_sync_type {
	URS_SYNC_GO = 1,
	URS_SYNC_READY,
	URS_SYNC_START,
	URS_SYNC_ERROR,
};

struct urs_sync_msg {
	uint32_t type;
	int32_t code;
	char msg[4096]; /* ERROR: the message; GO: the OCI state JSON for hooks */
};

int urs_sync_send(int fd, uint32_t type, int32_t code, const char *msg);
/* 0 on a message, -EPIPE when the peer is gone. */
int urs_sync_recv(int fd, struct urs_sync_msg *m);
/* The same with one fd attached (SCM_RIGHTS); *passed is -1 if none came. */
int urs_sync_send_fd(int fd, uint32_t type, int passed);
int urs_sync_recv_fd(int fd, struct urs_sync_msg *m, int *passed);

struct urs_launch {
	const struct urs_spec *spec;
	char rootfs[PATH_MAX];
	const char *overlay_scratch; /* `ursa do`: root = overlay of the host's / */
	bool overlay_prepared;	     /* ... on a tmpfs the caller made (urs_rootfs_host_overlay) */
	bool no_pivot;
	bool no_new_keyring;
	int console_fd;	  /* connected console socket, or -1 */
	int preserve_fds; /* fds 3 .. 3+n-1 are passed on */
	int sync_fd;	  /* our end of the socket pair */
	void *seccomp;	  /* a built filter, loaded with load_seccomp() right before exec */
	int (*load_seccomp)(void *filter, struct urs_err *err);
	/* the filter has SCMP_ACT_NOTIFY rules: it is a libseccomp filter,
	 * loaded before READY, and its listener fd travels with READY */
	bool seccomp_notify;
	int (*load_seccomp_notify)(void *filter, int *listener, struct urs_err *err);
	uint32_t new_ns; /* 1 << enum urs_ns_type for namespaces created by clone */
	bool wait_go;	 /* a user namespace or hooks: wait for GO before setup */
	/* The init is the `ursa` command's child (the supervisor clones it with
	 * CLONE_PARENT). It dies with that command during setup (parent-death
	 * signal); with @leash for its whole life (`ursa do`: nothing else
	 * could find or stop it), else it lets go right before READY, so that
	 * it outlives `ursa create`. */
	bool leash;
	const char *cgroup; /* the sandbox's cgroups (urs_cg_to_string) or NULL */
	/* `ursa restore` (ckpt/restore.h): build the root and the console,
	 * then, instead of the process's identity, seccomp and exec, reset the
	 * signal handlers, report READY and block: the supervisor turns this
	 * process into the checkpointed one (ckpt_restore_opts.puppet) */
	bool restore;
	/* "ursa-gofer" volumes (docs/gofer.md), in the spec's order: the
	 * supervisor's /dev/fuse fd for each (mounted at the destination, then
	 * closed) and its O_PATH fd of the host directory (closed at once: the
	 * init inherits both across clone, the workload gets neither) */
	int gofer_fuse[URS_GOFER_MAX];
	int gofer_dir[URS_GOFER_MAX];
	int n_gofer;
};

/* Run in the cloned child; returns only on failure (after reporting it). */
int urs_init_run(const struct urs_launch *L);

#endif
