/*
 * host/state.h — a container's record under --root: ROOT/ID/state.json.
 *
 * Written atomically (temp file + rename in the same directory), so a reader
 * sees the old or the new record, never half of one. Processes are stored
 * as pid + start time (see proc.h) so a recycled pid is never mistaken for
 * the container. The directory also holds the supervisor's control socket.
 */
#ifndef URSA_HOST_STATE_H
#define URSA_HOST_STATE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/err.h"

#define URS_ID_MAX 256

struct urs_state {
	char id[URS_ID_MAX];
	char bundle[PATH_MAX];
	char rootfs[PATH_MAX];
	char created[48]; /* RFC 3339 with nanoseconds, UTC */
	uid_t owner;
	pid_t pid; /* the container's init, host pid */
	uint64_t pid_start;
	pid_t sup_pid; /* the supervisor */
	uint64_t sup_start;
	bool started;
	int exit_status;   /* wait status once known, else -1 */
	char *cgroup;	   /* urs_cg serialization, malloc'd or NULL */
	char *annotations; /* JSON object text, malloc'd or NULL */
	char *config;	   /* spec path the container was made from (for hooks), or NULL */
	int hooks;	   /* bit per enum urs_hook_kind the spec has; -1 unknown (an older record):
			    * lets delete and start skip loading the spec when it has none */
	bool host_mnt;	   /* no mount namespace of its own: its mounts are the host's, under
			    * rootfs, and delete detaches them */
	/* what the sandbox was given as fd 0-2 (device, inode; 0, 0: unknown),
	 * as its init had them before it ran (the supervisor's READY): a
	 * checkpoint tells a copy of them on a higher fd (a shell's saved
	 * stdout) from a file of the workload's own */
	uint64_t stdio_dev[3], stdio_ino[3];
};

enum urs_status { URS_ST_CREATING, URS_ST_CREATED, URS_ST_RUNNING, URS_ST_PAUSED, URS_ST_STOPPED };

const char *urs_status_name(enum urs_status s);

/**
 * urs_container_status() - the live status of a recorded container
 * @st: its record
 *
 * Creating (no init yet), stopped (its init is gone), paused (its cgroup
 * frozen), else running or created (started or not).
 *
 * Return: the status.
 */
enum urs_status urs_container_status(const struct urs_state *st);

/* Check an id: [A-Za-z0-9][A-Za-z0-9_.+-]{0,255}, like runc. */
int urs_id_valid(const char *id, struct urs_err *err);

/* Create ROOT (0711) if missing and ROOT/ID (0700) which must not exist. */
int urs_state_dir_create(const char *root, const char *id, struct urs_err *err);
int urs_state_write(const char *root, const struct urs_state *st, struct urs_err *err);
/* -ENOENT (message says "container ID does not exist") if there is none. */
int urs_state_read(const char *root, const char *id, struct urs_state *st, struct urs_err *err);
void urs_state_clear(struct urs_state *st);
/**
 * urs_state_sup_live() - the record's supervisor, if it is still that process
 * @st: the record
 *
 * A supervisor that handed its sandbox over (actors/hosted.h), or died, left
 * its pid free for reuse: a container's process may hold it now, and must
 * not be taken for the supervisor (kill --all, ps, dumps).
 *
 * Return: its pid while it is alive with its start time, else 0.
 */
pid_t urs_state_sup_live(const struct urs_state *st);
/* Keep a copy of the bundle's config.json in ROOT/ID (hooks and exec use it
 * later, even if the bundle is gone). */
int urs_state_save_config(const char *root, const char *id, const char *config_path);

/* Remove ROOT/ID and everything in it. */
int urs_state_remove(const char *root, const char *id);
/* Path of a file in ROOT/ID. */
int urs_state_path(char *buf, size_t len, const char *root, const char *id, const char *name);

/* The OCI state JSON (hooks' stdin, `ursa state`): ociVersion, id, status,
 * pid, bundle, annotations (a JSON object text or NULL). Length or -ENOSPC. */
int urs_oci_state_json(char *buf, size_t len, const char *id, const char *status, pid_t pid,
		       const char *bundle, const char *annotations);
/* JSON object text of key/value pairs (malloc'd), "{}" for none. */
char *urs_json_object_kv(const char *const *keys, const char *const *values, size_t n);

/* Current time as RFC 3339 with nanoseconds. */
void urs_rfc3339_now(char *buf, size_t len);

#endif
