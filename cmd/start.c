/*
 * cmd/start.c — `ursa start ID`: release a created container's init.
 * Returns once the workload's program is exec'd (or the init ended, or 2 s
 * of startContainer hooks passed: actors/sup_control.c), then runs the
 * poststart hooks.
 */
#include "cmd/cli.h"
#include "cmd/cmd.h"

int cmd_start(int argc, char **argv)
{
	struct urs_err err = {{0}};
	struct urs_state st;
	int rc = urs_cmd_open("start", "ID", argc, argv, NULL, &st, NULL);
	if (rc >= 0)
		return rc;
	rc = 1;
	switch (urs_container_status(&st)) {
	case URS_ST_CREATED:
		if (urs_sandbox_start(G.root, &st, &err) < 0) {
			urs_error("%s", err.msg);
		} else {
			rc = 0;
			urs_sandbox_hooks(G.root, &st, NULL, URS_HOOK_POSTSTART, "running",
					  urs_warn);
		}
		break;
	case URS_ST_STOPPED:
		urs_error("cannot start a container that has stopped");
		break;
	default:
		urs_error("cannot start an already running container");
		break;
	}
	urs_state_clear(&st);
	return rc;
}
