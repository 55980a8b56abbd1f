/*
 * cmd/ps.c — `ursa ps [--format table|json] ID`: the container's processes
 * (host pids, from its cgroup, without the supervisor).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/cgroup.h"

int cmd_ps(int argc, char **argv)
{
	const char *format = "table";
	const struct urs_opt opts[] = {
		{"format", 'f', URS_OPT_STR, &format, "table or json"},
		{NULL, 0, 0, NULL, NULL},
	};
	struct urs_err err = {{0}};
	struct urs_state st;
	int rc = urs_cmd_open("ps", "[--format table|json] ID", argc, argv, opts, &st, NULL);
	if (rc >= 0)
		return rc;
	struct urs_cgroup cg;
	pid_t *pids = NULL;
	size_t n = 0;
	if (urs_cmd_cgroup("ps", &st, &cg) < 0) {
		urs_state_clear(&st);
		return 1;
	}
	if (urs_cg_pids(&cg, &pids, &n, &err) < 0) {
		urs_error("ps: %s", err.msg);
		urs_cg_close(&cg);
		urs_state_clear(&st);
		return 1;
	}
	pid_t sup = urs_state_sup_live(&st); /* left out while it lives */
	bool json = !strcmp(format, "json");
	if (json)
		printf("[");
	else
		printf("%-8s %s\n", "PID", "CMD");
	bool first = true;
	for (size_t k = 0; k < n; k++) {
		if (pids[k] == sup)
			continue;
		if (json) {
			printf("%s%d", first ? "" : ",", (int) pids[k]);
		} else {
			char path[64], cmd[256] = "";
			snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pids[k]);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			ssize_t m = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : 0;
			if (fd >= 0)
				close(fd);
			for (ssize_t j = 0; j < m - 1; j++)
				if (!cmd[j])
					cmd[j] = ' ';
			cmd[m > 0 ? m : 0] = 0;
			printf("%-8d %s\n", (int) pids[k], cmd);
		}
		first = false;
	}
	if (json)
		printf("]\n");
	free(pids);
	urs_cg_close(&cg);
	urs_state_clear(&st);
	return 0;
}
