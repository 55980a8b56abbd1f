/*
 * actors/sup_report.c — what the `ursa` command that forked the supervisor
 * is told (struct urs_sup_report, actors/supervisor.h): the cgroup as soon
 * as it is made, then READY or an error, and after READY its word that the
 * sandbox's record is written. When that command died before it could
 * write the record, nobody knows of the sandbox: what was made is removed
 * here. Both ends of that one exchange live in this file.
 */
#include "actors/sup_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host/cgroup.h"
#include "host/proc.h"
#include "host/state.h"

static void remove_made(struct urs_sup_args *a);

/* URS_SUP_CGROUP_MADE: the parent learns the cgroup before anything can
 * kill us (ignored by a parent that has gone: then remove_made does it) */
void sup_progress_cgroup(struct urs_sup_args *a, const char *cg)
{
	static struct urs_sup_report r;
	r.code = URS_SUP_CGROUP_MADE;
	snprintf(r.cgroup, sizeof(r.cgroup), "%s", cg);
	if (a->report_fd >= 0)
		send(a->report_fd, &r, sizeof(r), MSG_NOSIGNAL);
}

void sup_report_stdio(struct sup *s)
{
	urs_proc_stdio_ids(s->init_pid, s->stdio_dev, s->stdio_ino);
}

static void report_send(struct urs_sup_args *a, const struct urs_sup_report *r)
{
	if (a->report_fd < 0)
		return;
	ssize_t n = send(a->report_fd, r, sizeof(*r), MSG_NOSIGNAL);
	if (r->code == 0)
		return; /* kept: the parent says when its record is written */
	if (n < 0)	/* a failure, and nobody to clean up after it */
		remove_made(a);
	close(a->report_fd);
	a->report_fd = -1;
}

static void report_fill(struct urs_sup_report *r, int code, pid_t pid, const char *cg,
			const char *msg)
{
	*r = (struct urs_sup_report){.code = code, .init_pid = pid};
	if (cg)
		snprintf(r->cgroup, sizeof(r->cgroup), "%s", cg);
	if (msg)
		snprintf(r->msg, sizeof(r->msg), "%s", msg);
}

__attribute__((noinline)) void sup_report(struct urs_sup_args *a, int code, pid_t pid,
					  const char *cg, const char *msg)
{
	struct urs_sup_report r;
	report_fill(&r, code, pid, cg, msg);
	report_send(a, &r);
}

/* READY to the `ursa` command, then its word that the record (and the pid
 * file) is written: 0, or -EPIPE if it died before saying so. */
int sup_ready_recorded(struct sup *s, const char *cgstr)
{
	struct urs_sup_args *a = s->a;
	struct urs_sup_report r;
	report_fill(&r, 0, s->init_pid, cgstr, NULL);
	memcpy(r.stdio_dev, s->stdio_dev, sizeof(r.stdio_dev));
	memcpy(r.stdio_ino, s->stdio_ino, sizeof(r.stdio_ino));
	report_send(a, &r);
	if (sup_j2.mem_home)
		sup_memory_leave();
	char ack;
	ssize_t n;
	do
		n = recv(a->report_fd, &ack, 1, 0);
	while (n < 0 && errno == EINTR);
	close(a->report_fd);
	a->report_fd = -1;
	if (n == 1)
		sup_adopt_done(a);
	return n == 1 ? 0 : -EPIPE;
}

/* The sandbox's cgroups once made, and the caller's own (v1), for
 * remove_made(). */
struct urs_cgroup *sup_made_cg, *sup_made_home;

/* The `ursa` command died while it made this sandbox (killed, say): nobody
 * has a record of it or could find it, or will remove what it made: the
 * cgroups (we leave them first: no lock, as we came) and ROOT/ID. */
static void remove_made(struct urs_sup_args *a)
{
	fprintf(stderr, "ursa: %s: the command creating it is gone: removed\n",
		a->id ? a->id : "sandbox");
	if (sup_made_cg) {
		if (sup_made_home && sup_made_home->mode &&
		    urs_cg_enter_self_v1(sup_made_home, NULL) == -EBUSY)
			urs_cg_enter(sup_made_home, getpid(),
				     NULL); /* threads of ours: the slow way */
		urs_cg_destroy(sup_made_cg, NULL);
	}
	char root[PATH_MAX];
	if (sup_state_root(a, root, sizeof(root)) == 0)
		urs_state_remove(root, a->id);
}

int sup_state_root(const struct urs_sup_args *a, char *root, size_t len)
{
	const char *slash = a->state_dir ? strrchr(a->state_dir, '/') : NULL;
	if (!slash || slash == a->state_dir || !a->id || strcmp(slash + 1, a->id) ||
	    (size_t) (slash - a->state_dir) >= len)
		return -EINVAL;
	snprintf(root, len, "%.*s", (int) (slash - a->state_dir), a->state_dir);
	return 0;
}

/* READY was not taken: the init goes too. */
void sup_abandon(struct sup *s)
{
	sup_kill_init(s);
	remove_made(s->a);
}
