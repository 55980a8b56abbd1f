/*
 * cmd/cmd.h — the ursa CLI's command table. One file per command under
 * cmd/; each exports `int cmd_NAME(int argc, char **argv)` (argv[0] is the
 * command's name) returning the process exit status.
 */
#ifndef URSA_CMD_CMD_H
#define URSA_CMD_CMD_H

#include <limits.h>
#include <stdbool.h>

#include "actors/netstack.h"
#include "actors/sandbox.h"
#include "host/seccomp_bpf.h"
#include "host/spec.h"

struct urs_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* create/run share their flags and bundle loading (cmd/create.c) */
struct urs_create_args {
	const char *id, *bundle, *pid_file, *console_socket;
	bool no_pivot, no_new_keyring, detach, no_subreaper, keep;
	int preserve_fds;
	char bundle_abs[PATH_MAX], rootfs_abs[PATH_MAX];
	struct urs_spec *spec;
	struct urs_bpf bpf; /* compiled seccomp filter (bpf.prog.len == 0: none) */
	void *filter;	    /* libseccomp filter, kept only for SCMP_ACT_NOTIFY profiles */
	struct urs_seccomp_denials *denials; /* counted denials' errno table, or NULL */
	struct urs_netopts net;		     /* from the run.ursa.* annotations */
	bool plain_seccomp; /* never count denials (restore: images hold the plain filter) */
};

int urs_create_parse(const char *cmd, int argc, char **argv, struct urs_create_args *c,
		     bool with_detach);
int urs_bundle_prepare(struct urs_create_args *c, struct urs_sandbox_opts *o, struct urs_err *err);
void urs_create_args_free(struct urs_create_args *c);
int urs_seal_self_for(const struct urs_spec *spec, struct urs_err *err);

/* delete's work, shared with run (cmd/delete.c) */
int urs_container_delete(const char *id, bool force, struct urs_err *err);
/* The same for a record already read (@rec stays the caller's). */
int urs_container_remove(const struct urs_state *rec, bool force, struct urs_err *err);

/* ckpt_dump_opts.seccomp_replace for a container (@ctx: its struct
 * urs_state): its counting filter -> its profile's plain one. */
int urs_ckpt_seccomp_replace(void *ctx, const uint64_t *insns, uint32_t len, const uint64_t **out);

int cmd_demo(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_kill(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_spec(int argc, char **argv);
int cmd_features(int argc, char **argv);
int cmd_do(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_update(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_metric_server(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_restore(int argc, char **argv);

#endif
