/*
 * actors/sup_cgself.c — where the supervisor itself sits in the cgroups,
 * as opposed to the limits the sandbox gets (actors/sup_resources.c): out
 * of the v1 pids cgroup so that pids.max counts the container alone; into
 * the sandbox's v2 cgroup once the sandbox runs, or at once before a
 * restore's charged writes; back to the caller's memory cgroup where we
 * cannot lower our OOM score. Each move is timed around the kernel's
 * global migration lock; why, with each function.
 */
#include "actors/sup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/cgroup.h"

/*
 * Unified hosts keep the controllers (memory, pids...) in the v2 hierarchy,
 * so there the supervisor joins the sandbox's v2 cgroup too and is charged
 * with it, as before. But a cgroup.procs write takes the kernel's global
 * migration lock (an RCU grace period when idle; host/cgroup.c) that no
 * `ursa run` or restore should wait for: we join on a thread, once the
 * sandbox runs (until then our boot memory is charged where the caller's
 * is), retrying a few times. Except before a restore writes data the
 * kernel charges to the writer (tmpfs contents, shared memory): then we
 * join first, synchronously (sup_join_v2_now), or the workload's memory would
 * be charged outside its cgroup on every restore. Hybrid and legacy hosts
 * have the controllers in v1, entered at start; there we stay out of the
 * v2 cgroup, so that checkpoint's freezer stops the workload only.
 */
struct sup_join_v2 sup_j2;

static int join_v2_write(void)
{
	char pid[24];
	snprintf(pid, sizeof(pid), "%d", (int) getpid());
	int fd = open(sup_j2.procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write(fd, pid, strlen(pid)) < 0 ? -errno : 0;
	close(fd);
	if (r == 0)
		sup_j2.joined = true;
	return r;
}

/* ckpt_restore_opts.before_charged, and before tmpfs contents */
int sup_join_v2_now(void *ctx)
{
	(void) ctx;
	/* later_off (unified, no CAP_SYS_RESOURCE): we stay out for good, so
	 * the restore's writes are charged to the caller, not the tenant (the
	 * price of not being the tenant's OOM victim; docs/sandbox.md) */
	return !sup_j2.needed || sup_j2.joined || sup_j2.later_off ? 0 : join_v2_write();
}

static void *join_v2_thread(void *arg)
{
	(void) arg;
	for (int i = 0; i < 5 && join_v2_write() < 0; i++)
		usleep(20000 << i); /* 20 ms .. 320 ms */
	return NULL;
}

void sup_join_v2_setup(const struct urs_cgroup *cg, bool init_placed)
{
	/* URSA_CG_JOIN_V2=1: as if unified (tests of this path on hybrid hosts) */
	const char *force = getenv("URSA_CG_JOIN_V2");
	sup_j2.needed = init_placed &&
			(cg->mode == URS_CG_UNIFIED || (force && !strcmp(force, "1"))) &&
			cg->h[URS_CG_V2].path[0];
	if (sup_j2.needed)
		snprintf(sup_j2.procs, sizeof(sup_j2.procs), "%s/cgroup.procs",
			 cg->h[URS_CG_V2].path);
}

/* Without CAP_SYS_RESOURCE we cannot lower our OOM score, and in the
 * sandbox's memory cgroup a tenant could make us its OOM killer's victim:
 * once the sandbox runs (a restore's writes charged to it first) we go
 * back to the caller's memory cgroup (v1; on unified hosts we do not join
 * the v2 cgroup once running). */
void sup_oom_fallback(struct urs_cgroup *cg, struct urs_cgroup *home)
{
	if (cg->mode == URS_CG_UNIFIED)
		sup_j2.later_off = true;
	else if (home->mode && home->h[URS_CG_MEMORY].path[0] && cg->h[URS_CG_MEMORY].path[0] &&
		 cg->h[URS_CG_MEMORY].alias < 0)
		sup_j2.mem_home = home;
}

/* back to the caller's memory cgroup (sup_oom_fallback): the main thread's
 * self-migration, without the kernel's global migration lock (a
 * cgroup.procs write would hold every fork and exit on the host for an
 * RCU grace period: +8 ms on a restore); the main thread owns the address
 * space, which is what v1 charges and the OOM killer looks at */
void sup_memory_leave(void)
{
	struct urs_err err = {{0}};
	int r = getpid() == (pid_t) syscall(SYS_gettid)
			? urs_cg_enter_thread_v1(sup_j2.mem_home, 1u << URS_CG_MEMORY, &err)
			: urs_cg_enter_only(sup_j2.mem_home, getpid(), 1u << URS_CG_MEMORY, &err);
	if (r < 0)
		fprintf(stderr,
			"ursa: warning: supervisor: leaving the sandbox's memory cgroup: %s\n",
			err.msg);
	sup_j2.mem_home = NULL;
}

/* The join's thread opens and closes a file: started only once boot has
 * closed the fds it does not keep (sup_close_all_but) and the loop has its
 * ring. Started earlier, its open file could be closed under it by
 * sup_close_all_but, the ring made with the same number, and the thread's
 * close() then closed the ring: the supervisor's next turn failed with
 * EBADF and it wound down with its sandbox (seen: 1 checkpoint in 15
 * right after `run -d` under URSA_CG_JOIN_V2=1). */
void sup_join_v2_start(void)
{
	if (!sup_j2.needed || sup_j2.joined || sup_j2.later_off)
		return;
	pthread_attr_t at;
	pthread_t th;
	if (pthread_attr_init(&at))
		return;
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 64 << 10);
	int e = pthread_create(&th, &at, join_v2_thread, NULL);
	if (e) /* we stay where we are, charged to the caller: say so */
		fprintf(stderr, "ursa: warning: supervisor: joining %s: a thread: %s\n",
			sup_j2.procs, strerror(e));
	pthread_attr_destroy(&at);
}

/* The supervisor is none of the container's tasks (runc's count, which
 * podman's --pids-limit and stats assume): on hosts with a v1 pids cgroup
 * it leaves that one for its caller's once the init is born there (a
 * self-migration: no global lock), and only then is the limit written, so
 * that pids.max 1 holds the init alone. Its memory stays charged to the
 * sandbox (docs/sandbox.md). Unified hosts: the limit was written with the
 * rest, and the supervisor joins the sandbox's v2 cgroup later. */
int sup_pids_leave(struct urs_cgroup *cg, struct urs_cgroup *home, const struct urs_spec *spec,
		   struct urs_err *err)
{
	if (cg->mode == URS_CG_UNIFIED || !cg->h[URS_CG_PIDS].path[0])
		return 0;
	if (home->mode && home->h[URS_CG_PIDS].path[0] && cg->h[URS_CG_PIDS].alias < 0) {
		int r = urs_cg_enter_self_v1_only(home, 1u << URS_CG_PIDS, err);
		if (r < 0 && r != -EBUSY) /* several threads: we entered the old way */
			return r;
	}
	const struct urs_resources *res =
		spec->lnx && spec->lnx->has_resources ? &spec->lnx->resources : NULL;
	if (!res || !res->pids.has_limit)
		return 0;
	struct urs_cg_resources r = URS_CG_RESOURCES_INIT;
	r.pids_limit = res->pids.limit ? res->pids.limit : -1;
	return urs_cg_apply(cg, &r, err);
}
