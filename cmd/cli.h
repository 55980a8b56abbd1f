/*
 * cmd/cli.h — what every ursa command shares: global flags, option parsing
 * (runc-compatible: --flag V, --flag=V, single-dash long flags such as
 * -no-subreaper), error logging (stderr, and the --log file in text or
 * runc's JSON format, which containerd's shim reads), and loading a
 * container's record with its live status.
 */
#ifndef URSA_CMD_CLI_H
#define URSA_CMD_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "host/state.h"

struct urs_global {
	const char *root;
	const char *log;
	bool log_json;
	bool debug;
	bool systemd_cgroup;
	bool profile;
	char **argv; /* main's, for re-executing from a sealed copy */
};

extern struct urs_global G;

/* FLAG bool, STR const char *, INT int, LIST struct urs_strlist; runc's
 * options ursa takes but has nothing to do for (out NULL): ACCEPT (a
 * flag), ACCEPT_ARG (with a value); the ones it cannot honour, refused
 * when given (out NULL): REFUSE, REFUSE_ARG. */
enum urs_opt_kind {
	URS_OPT_FLAG,
	URS_OPT_STR,
	URS_OPT_INT,
	URS_OPT_LIST,
	URS_OPT_ACCEPT,
	URS_OPT_ACCEPT_ARG,
	URS_OPT_REFUSE,
	URS_OPT_REFUSE_ARG,
};

struct urs_opt {
	const char *name; /* long name without dashes */
	char short_name;  /* 0 if none */
	enum urs_opt_kind kind;
	void *out; /* bool*, const char**, int*, or struct urs_strlist* */
	const char *help;
};

struct urs_strlist {
	const char *v[64];
	int n;
};

/*
 * Parse the options of command @cmd from argv[1]; like runc, options end at
 * the first non-option argument or "--". Returns the index of the first
 * argument not consumed, -1 after printing an error, -2 after printing help.
 */
int urs_parse(const char *cmd, const char *usage, int argc, char **argv,
	      const struct urs_opt *opts);

/* Is @val, the value of option --@opt, one of @choices (NULL-terminated)?
 * If not, false after printing an error naming them. NULL is. */
bool urs_opt_one_of(const char *cmd, const char *opt, const char *val, const char *const *choices);
/* runc's --manage-cgroups-mode values (checkpoint, restore) */
extern const char *const urs_cgroups_modes[];

__attribute__((format(printf, 1, 2))) void urs_error(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void urs_debug(const char *fmt, ...);
/* A warning line (stderr and --log), e.g. a failed poststart hook. */
void urs_warn(const char *msg);

/* Live status of a recorded container. */
enum urs_status urs_container_status(const struct urs_state *st);
/* Did the container's supervisor die before its init was done with (no
 * ROOT/ID/exit)? Then true, and @buf says how: its crash note
 * (actors/sup_crash.c) or, without one, that it was killed. */
bool urs_sup_gone(const struct urs_state *st, char *buf, size_t len);
/* Did ursa kill the container's processes itself (ROOT/ID/killed: a lazy
 * restore whose pages could not come in, actors/sup_restore.c)? Then true,
 * and @buf says why. */
bool urs_sandbox_killed(const struct urs_state *st, char *buf, size_t len);

/* Signal name or number ("KILL", "SIGKILL", "9") -> number, or -1. */
int urs_signal_parse(const char *s);

/*
 * What most commands start with: parse options, take the id, read its
 * record. Returns -1 when the command should go on (@st filled, *next is the
 * index after the id), else the exit status to return (0 after --help).
 */
int urs_cmd_open(const char *cmd, const char *usage, int argc, char **argv,
		 const struct urs_opt *opts, struct urs_state *st, int *next);

struct urs_cgroup;
/* The container's cgroups from its record; prints "CMD: ..." on failure. */
int urs_cmd_cgroup(const char *cmd, const struct urs_state *st, struct urs_cgroup *cg);

/* The id argument: exactly one positional, valid. NULL after printing an error. */
const char *urs_require_id(const char *cmd, int argc, char **argv, int i);

#endif
