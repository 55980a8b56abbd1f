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
	int i = urs_parse(cmd, "ID", argc, argv, NULL);
	if (i < 0)
		return i == -2 ? 0 : 1;
	const char *id = urs_require_id(cmd, argc, argv, i);
	if (!id)
		return 1;
	struct urs_err err = {{0}};
	struct urs_state st;
	if (urs_state_read(G.root, id, &st, &err) < 0) {
		urs_error("%s", err.msg);
		return 1;
	}
	int rc = 1;
	enum urs_status s = urs_container_status(&st);
	struct urs_cgroup cg;
	if (frozen && s != URS_ST_RUNNING && s != URS_ST_CREATED)
		urs_error("container not running");
	else if (!frozen && s != URS_ST_PAUSED)
		urs_error("container not paused");
	else if (!st.cgroup || urs_cg_from_string(&cg, st.cgroup, &err) < 0)
		urs_error("%s: %s", cmd, st.cgroup ? err.msg : "container has no cgroup");
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
