/*
 * cmd/cmd.h — the ursa CLI's command table. One file per command under
 * cmd/; each exports `int cmd_NAME(int argc, char **argv)` (argv[0] is the
 * command's name) returning the process exit status.
 */
#ifndef URSA_CMD_CMD_H
#define URSA_CMD_CMD_H

#include <limits.h>
#include <stdbool.h>

#include "actors/bundle.h"
#include "actors/netstack.h"
#include "actors/sandbox.h"
#include "host/seccomp_bpf.h"
#include "host/spec.h"

struct urs_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

int urs_create_parse(const char *cmd, int argc, char **argv, struct urs_create_args *c,
		     bool with_detach);
/* the CLI's globals and re-exec in @c (urs_create_parse does it) */
void urs_create_args_cli(struct urs_create_args *c);
int urs_seal_self_for(const struct urs_spec *spec, struct urs_err *err);

/* delete's work, shared with run (cmd/delete.c) */
int urs_container_delete(const char *id, bool force, struct urs_err *err);
/* The same for a record already read (@rec stays the caller's). */
int urs_container_remove(const struct urs_state *rec, bool force, struct urs_err *err);
/* A container a checkpoint has just killed: removed without waiting for
 * its tasks' exit; its cgroups go once they have (host/teardown.h). */
int urs_container_remove_killed(const struct urs_state *rec, struct urs_err *err);

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
