/*
 * cmd/pause.c — `ursa pause ID`: freeze every process of the container
 * (cgroup freezer), waiting until the kernel says frozen.
 */
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/cgroup.h"

int urs_freeze_cmd(const char *cmd, int argc, char **argv, bool frozen);

int urs_freeze_cmd(const char *cmd, int argc, char **argv, bool frozen)
{
	struct urs_err err = {{0}};
	struct urs_state st;
	int rc = urs_cmd_open(cmd, "ID", argc, argv, NULL, &st, NULL);
	if (rc >= 0)
		return rc;
	rc = 1;
	enum urs_status s = urs_container_status(&st);
	struct urs_cgroup cg;
	if (frozen && s != URS_ST_RUNNING && s != URS_ST_CREATED)
		urs_error("container not running");
	else if (!frozen && s != URS_ST_PAUSED)
		urs_error("container not paused");
	else if (urs_cmd_cgroup(cmd, &st, &cg) < 0)
		;
	else {
		if (urs_cg_freeze(&cg, frozen, &err) < 0)
			urs_error("%s", err.msg);
		else
			rc = 0;
		urs_cg_close(&cg);
	}
	urs_state_clear(&st);
	return rc;
}

int cmd_pause(int argc, char **argv)
{
	return urs_freeze_cmd("pause", argc, argv, true);
}
