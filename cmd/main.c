/*
 * cmd/main.c — `ursa`: global flags and dispatch to one command per file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"

#ifndef URSA_VERSION
#define URSA_VERSION "0.1.0"
#endif

static const struct urs_cmd cmds[] = {
	{"create", cmd_create, "create a container from a bundle (its init waits for start)"},
	{"start", cmd_start, "start a created container"},
	{"run", cmd_run, "create and start a container, wait for it, delete it"},
	{"state", cmd_state, "print a container's OCI state"},
	{"kill", cmd_kill, "signal a container's init (or --all its processes)"},
	{"delete", cmd_delete, "delete a container"},
	{"list", cmd_list, "list containers"},
	{"ps", cmd_ps, "list a container's processes"},
	{"pause", cmd_pause, "freeze a container"},
	{"resume", cmd_resume, "thaw a paused container"},
	{"spec", cmd_spec, "write a default config.json"},
	{"features", cmd_features, "print what ursa supports (JSON)"},
	{"exec", cmd_exec, "run another process in a running container"},
	{"update", cmd_update, "change a container's resource limits"},
	{"metrics", cmd_metrics, "print a sandbox's metrics (Prometheus text)"},
	{"metric-server", cmd_metric_server, "serve GET /metrics for every sandbox (HTTP)"},
	{"checkpoint", cmd_checkpoint, "save a running container to an image directory"},
	{"restore", cmd_restore, "create a container from a checkpoint image"},
	{"do", cmd_do, "run a command in a sandbox on the host's root"},
	{"demo", cmd_demo, "run the actor runtime on this machine and report what it did"},
};

/* runc's --rootless: true, false or auto (default; strconv.ParseBool's
 * spellings, "auto" in any case). ursa needs no rootless cgroup manager, so
 * the value is only checked. 1/0/-1 (auto), -EINVAL if it is none of them. */
static int parse_rootless(const char *v)
{
	static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
	static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
	if (!*v || !strcasecmp(v, "auto"))
		return -1;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(v, yes[i]))
			return 1;
		if (!strcmp(v, no[i]))
			return 0;
	}
	return -EINVAL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ursa [--root DIR] [--log FILE] [--log-format text|json] [--debug] "
		   "[--rootless true|false|auto] COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
}

int main(int argc, char **argv)
{
	const char *log_format = "text", *rootless = "auto";
	bool version = false, help = false;
	G.argv = argv;
	const struct urs_opt global[] = {
		{"root", 0, URS_OPT_STR, &G.root, "state directory (default /run/ursa)"},
		{"log", 0, URS_OPT_STR, &G.log, "also log errors to this file"},
		{"log-format", 0, URS_OPT_STR, &log_format, "text or json"},
		{"debug", 0, URS_OPT_FLAG, &G.debug, "debug output"},
		{"systemd-cgroup", 0, URS_OPT_FLAG, &G.systemd_cgroup,
		 "accepted; cgroupfs is used"},
		{"profile", 0, URS_OPT_FLAG, &G.profile, "per-actor profiling"},
		{"version", 'v', URS_OPT_FLAG, &version, "print the version"},
		{"rootless", 0, URS_OPT_STR, &rootless,
		 "true, false or auto (accepted for runc compatibility)"},
		{NULL, 0, 0, NULL, NULL},
	};
	/* global options come before the command */
	int i = 1;
	while (i < argc && argv[i][0] == '-') {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help = true;
			i++;
			continue;
		}
		char *sub[3] = {"ursa", argv[i], i + 1 < argc ? argv[i + 1] : NULL};
		int n = urs_parse("ursa", "[global options] COMMAND", sub[2] ? 3 : 2, sub, global);
		if (n < 0)
			return n == -2 ? 0 : 2;
		if (n == 1) /* a lone "--" */
			break;
		i += n - 1;
	}
	if (strcmp(log_format, "text") && strcmp(log_format, "json")) {
		urs_error("--log-format %s: expected text or json", log_format);
		return 2;
	}
	G.log_json = !strcmp(log_format, "json");
	if (parse_rootless(rootless) == -EINVAL) {
		urs_error("--rootless %s: expected true, false or auto", rootless);
		return 2;
	}
	if (version) {
		printf("ursa version %s\nspec: 1.0.2\n", URSA_VERSION);
		return 0;
	}
	if (help || i >= argc) {
		usage(help ? stdout : stderr);
		return help ? 0 : 2;
	}
	if (!strcmp(argv[i], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++)
		if (!strcmp(argv[i], cmds[k].name))
			return cmds[k].fn(argc - i, argv + i);
	urs_error("unknown command \"%s\" (see ursa --help)", argv[i]);
	return 2;
}
