/*
 * cmd/kill.c — `ursa kill [--all] ID [SIGNAL]`: signal the init (through a
 * pidfd checked against its start time), or with --all every process in the
 * container's cgroup except its supervisor. Works in created and running.
 */
#include <signal.h>
#include <unistd.h>
#include <stdlib.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/cgroup.h"
#include "host/proc.h"
#include "runtime/common.h"

int cmd_kill(int argc, char **argv)
{
	bool all = false;
	const struct urs_opt opts[] = {
		{"all", 'a', URS_OPT_FLAG, &all, "signal every process of the container"},
		{NULL, 0, 0, NULL, NULL},
	};
	int i = urs_parse("kill", "[--all] ID [SIGNAL]", argc, argv, opts);
	if (i < 0)
		return i == -2 ? 0 : 1;
	const char *id = urs_require_id("kill", argc, argv, i);
	if (!id)
		return 1;
	int sig = SIGTERM;
	if (i + 1 < argc && (sig = urs_signal_parse(argv[i + 1])) < 0) {
		urs_error("kill: unknown signal \"%s\"", argv[i + 1]);
		return 1;
	}
	struct urs_err err = {{0}};
	struct urs_state st;
	if (urs_state_read(G.root, id, &st, &err) < 0) {
		urs_error("%s", err.msg);
		return 1;
	}
	int rc = 1;
	if (urs_container_status(&st) == URS_ST_STOPPED) {
		urs_error("container not running");
		goto out;
	}
	if (all && st.cgroup) {
		struct urs_cgroup cg;
		pid_t *pids = NULL;
		size_t n = 0;
		if (urs_cg_from_string(&cg, st.cgroup, &err) < 0 ||
		    urs_cg_pids(&cg, &pids, &n, &err) < 0) {
			urs_error("%s", err.msg);
			goto out;
		}
		for (size_t k = 0; k < n; k++)
			if (pids[k] != st.sup_pid)
				kill(pids[k], sig);
		free(pids);
		urs_cg_close(&cg);
		rc = 0;
		goto out;
	}
	int pfd = urs_pidfd_open_checked(st.pid, st.pid_start);
	if (pfd < 0 || urs_pidfd_signal(pfd, sig) < 0)
		urs_error("container not running");
	else
		rc = 0;
	if (pfd >= 0)
		close(pfd);
out:
	urs_state_clear(&st);
	return rc;
}
