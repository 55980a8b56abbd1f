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
	enum urs_status status = urs_container_status(&st);
	if (status == URS_ST_STOPPED) {
		urs_error("container not running");
		goto out;
	}
	struct urs_cgroup cg;
	bool have_cg = st.cgroup && urs_cg_from_string(&cg, st.cgroup, NULL) == 0;
	if (all && have_cg) {
		pid_t *pids = NULL;
		size_t n = 0;
		if (urs_cg_pids(&cg, &pids, &n, &err) < 0) {
			urs_error("%s", err.msg);
			urs_cg_close(&cg);
			goto out;
		}
		/* everything but the supervisor, which is in there too (while
		 * it lives: a pid it left may be a container's process now) */
		pid_t sup = urs_state_sup_live(&st);
		for (size_t k = 0; k < n; k++)
			if (pids[k] != sup)
				kill(pids[k], sig);
		free(pids);
		rc = 0;
	} else {
		int pfd = urs_pidfd_open_checked(st.pid, st.pid_start);
		if (pfd < 0 || urs_pidfd_signal(pfd, sig) < 0)
			urs_error("container not running");
		else
			rc = 0;
		if (pfd >= 0)
			close(pfd);
	}
	/* v1 freezer: a frozen task dies only once thawed. Like runc, thaw for
	 * SIGKILL so the kill takes effect (other signals wait for resume). */
	if (rc == 0 && have_cg && status == URS_ST_PAUSED && sig == SIGKILL)
		urs_cg_freeze(&cg, false, NULL);
	if (have_cg)
		urs_cg_close(&cg);
out:
	urs_state_clear(&st);
	return rc;
}
