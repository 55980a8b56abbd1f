/*
 * cmd/kill.c — `ursa kill [--all] ID [SIGNAL]`: signal the init (through a
 * pidfd checked against its start time), or with --all every process in the
 * container's cgroup except its supervisor (host/kill.h). Works in created,
 * running and paused.
 */
#include <signal.h>
#include <unistd.h>
#include <stdlib.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/kill.h"
#include "runtime/common.h"

int cmd_kill(int argc, char **argv)
{
	bool all = false;
	const struct urs_opt opts[] = {
		{"all", 'a', URS_OPT_FLAG, &all, "signal every process of the container"},
		{NULL, 0, 0, NULL, NULL},
	};
	struct urs_err err = {{0}};
	struct urs_state st;
	int next;
	int rc = urs_cmd_open("kill", "[--all] ID [SIGNAL]", argc, argv, opts, &st, &next);
	if (rc >= 0)
		return rc;
	rc = 1;
	int sig = SIGTERM;
	if (next < argc && (sig = urs_signal_parse(argv[next])) < 0) {
		urs_error("kill: unknown signal \"%s\"", argv[next]);
		goto out;
	}
	if (urs_state_kill(&st, sig, all, &err) < 0)
		urs_error("%s", err.msg);
	else
		rc = 0;
out:
	urs_state_clear(&st);
	return rc;
}
