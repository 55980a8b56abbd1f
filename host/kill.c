/*
 * host/kill.c — signalling a container from its record (host/kill.h).
 */
#include "host/kill.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "host/cgroup.h"
#include "host/proc.h"

int urs_state_kill(const struct urs_state *st, int sig, bool all, struct urs_err *err)
{
	enum urs_status status = urs_container_status(st);
	if (status == URS_ST_STOPPED)
		return urs_err_set(err, -ESRCH, "container not running");
	struct urs_cgroup cg;
	bool have_cg = st->cgroup && urs_cg_from_string(&cg, st->cgroup, NULL) == 0;
	int r = 0;
	if (all && have_cg) {
		pid_t *pids = NULL;
		size_t n = 0;
		if ((r = urs_cg_pids(&cg, &pids, &n, err)) == 0) {
			/* everything but the supervisor, which is in there too
			 * (while it lives: a pid it left may be a container's
			 * process now) */
			pid_t sup = urs_state_sup_live(st), self = getpid();
			for (size_t k = 0; k < n; k++)
				if (pids[k] != sup && pids[k] != self)
					kill(pids[k], sig);
			free(pids);
		}
	} else {
		int pfd = urs_pidfd_open_checked(st->pid, st->pid_start);
		if (pfd < 0 || urs_pidfd_signal(pfd, sig) < 0)
			r = urs_err_set(err, -ESRCH, "container not running");
		if (pfd >= 0)
			close(pfd);
	}
	/* v1 freezer: a frozen task dies only once thawed */
	if (r == 0 && have_cg && status == URS_ST_PAUSED && sig == SIGKILL)
		urs_cg_freeze(&cg, false, NULL);
	if (have_cg)
		urs_cg_close(&cg);
	return r;
}
