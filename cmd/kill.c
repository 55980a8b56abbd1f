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
	if (urs_container_status(&st) == URS_ST_STOPPED) {
		urs_error("container not running");
		goto out;
	}
	if (all && st.cgroup) {
		struct urs_cgroup cg;
		pid_t *pids = NULL;
		size_t n = 0;
		if (urs_cmd_cgroup("kill", &st, &cg) < 0)
			goto out;
		if (urs_cg_pids(&cg, &pids, &n, &err) < 0) {
			urs_error("%s", err.msg);
			urs_cg_close(&cg);
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
