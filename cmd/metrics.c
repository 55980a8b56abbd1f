/*
 * cmd/metrics.c — `ursa metrics ID`: the sandbox's metrics in Prometheus
 * text format, as its supervisor exposes them (names ursa_*, label
 * sandbox="ID", HELP and TYPE lines).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/supervisor.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"

int cmd_metrics(int argc, char **argv)
{
	struct urs_state st;
	int rc = urs_cmd_open("metrics", "ID", argc, argv, NULL, &st, NULL);
	if (rc >= 0)
		return rc;
	rc = 1;
	if (urs_container_status(&st) == URS_ST_STOPPED) {
		urs_error("container not running");
		goto out;
	}
	char dir[PATH_MAX];
	urs_state_path(dir, sizeof(dir), G.root, st.id, NULL);
	char *buf = NULL; /* as large as the supervisor's reply */
	int r = urs_ctl_call_alloc(dir, "metrics", &buf);
	if (r < 0) {
		urs_error("metrics %s: cannot reach its supervisor: %s", st.id, strerror(-r));
	} else if (!strncmp(buf, "error:", 6)) {
		urs_error("metrics %s: %s", st.id, buf);
	} else {
		fputs(buf, stdout);
		rc = 0;
	}
	free(buf);
out:
	urs_state_clear(&st);
	return rc;
}
