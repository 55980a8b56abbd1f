/*
 * actors/sup_boot.c — the boot steps of urs_supervisor_main (actors/
 * supervisor.c), in its order: the process itself, the checks before
 * anything is made, the cgroup, the sync socket, the init cloned into its
 * namespaces, its setup (id maps, the tap, the early hooks, a seccomp
 * listener) until its READY, a restore, the control socket and READY to
 * the command, and letting go of what the caller gave us. Together
 * because they are one sequence, read in order; what a step needs of a
 * subsystem lives with that subsystem (actors/sup_int.h).
 */
#include "actors/sup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "actors/checkpointer.h"
#include "actors/metrics.h"
#include "actors/netstack.h"
#include "ckpt/lazy.h"
#include "ckpt/restore.h"
#include "ckpt/trace.h"
#include "host/cgroup.h"
#include "host/fdpass.h"
#include "host/hooks.h"
#include "host/init.h"
#include "host/oom.h"
#include "host/proc.h"
#include "host/state.h"
#include "host/teardown.h"

/* linux.resources onto the sandbox's cgroups (actors/sup_resources.c) */
#define apply_resources urs_resources_apply

/* what we forward to the init (sig_cb, actors/supervisor.c) */
static const int fwd_signals[] = {SIGHUP,  SIGINT,   SIGQUIT, SIGTERM, SIGUSR1,
				  SIGUSR2, SIGWINCH, SIGCONT, SIGALRM, SIGPWR};

/*
 * linux.seccomp.listenerPath: hand the notification fd to the agent, with
 * the container process state (runtime-spec "containerProcessState") as the
 * message, over SCM_RIGHTS.
 */
static int notify_agent(struct urs_sup_args *a, pid_t pid, int listener, struct urs_err *err)
{
	const struct urs_seccomp *sc = a->launch.spec->lnx->seccomp;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (!sc->listener_path || snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
					   sc->listener_path) >= (int) sizeof(sa.sun_path))
		return urs_err_set(err, -EINVAL, "linux.seccomp.listenerPath: missing or too long");
	char state[2048], body[4096];
	if (urs_oci_state_json(state, sizeof(state), a->id, "creating", pid, a->bundle, NULL) < 0)
		state[0] = 0;
	int n = snprintf(body, sizeof(body),
			 "{\"ociVersion\":\"1.0.2\",\"fds\":[\"seccompFd\"],\"pid\":%d,"
			 "\"metadata\":\"%s\",\"state\":%s}",
			 (int) pid, sc->listener_metadata ? sc->listener_metadata : "",
			 state[0] ? state : "{}");
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		int e = errno;
		return urs_err_set(err, -e, "linux.seccomp.listenerPath %s: connect: %s",
				   sa.sun_path, strerror(e));
	}
	int r = urs_send_fd(fd, body, (size_t) n, listener);
	if (r < 0)
		return urs_err_set(err, r,
				   "linux.seccomp.listenerPath %s: sending the listener: %s",
				   sa.sun_path, strerror(-r));
	return 0;
}

static int write_id_map(pid_t pid, const char *file, const struct urs_idmap *m, size_t n)
{
	char path[64], buf[4096];
	size_t o = 0;
	for (size_t i = 0; i < n && o < sizeof(buf); i++)
		o += (size_t) snprintf(buf + o, sizeof(buf) - o, "%u %u %u\n", m[i].container_id,
				       m[i].host_id, m[i].size);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return write(fd, buf, o) == (ssize_t) o ? 0 : -errno;
}

/* The init, born in the v2 cgroup @cgfd (>= 0: CLONE_INTO_CGROUP, which
 * needs no global migration lock; host/cgroup.c). Where the kernel refuses
 * the flag we join the v2 cgroup ourselves (the slow way) and clone
 * without it. CLONE_PARENT: the init is our caller's child, not ours (the
 * `ursa` command that forked us; once it exits, its subreaper's: the shim,
 * conmon), which reaps it and gets its status, as with runc. We watch it
 * through its pidfd (docs/sandbox.md, "Processes"). */
static pid_t clone_init(struct urs_sup_args *a, uint64_t flags, int *pidfd, int cgfd, int sup_end,
			struct urs_cgroup *cg, bool *into, struct urs_err *err)
{
	*into = cgfd >= 0;
	struct clone_args ca = {
		.flags = flags | CLONE_PIDFD | CLONE_PARENT | (cgfd >= 0 ? CLONE_INTO_CGROUP : 0),
		.pidfd = (uint64_t) (uintptr_t) pidfd,
		.exit_signal = 0, /* CLONE_PARENT: our own exit signal (SIGCHLD) */
		.cgroup = cgfd >= 0 ? (uint64_t) cgfd : 0,
	};
	pid_t pid = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && cgfd >= 0 && (errno == EINVAL || errno == E2BIG || errno == EOPNOTSUPP)) {
		int r = urs_cg_enter_v2(cg, getpid(), err);
		if (r < 0)
			return r;
		ca.flags &= ~(uint64_t) CLONE_INTO_CGROUP;
		ca.cgroup = 0;
		*into = false;
		pid = (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
	}
	if (pid == 0) {
		/* our ends of the sync and report sockets are ours alone: the
		 * init outlives us (it is not our child), and holding them it
		 * would never see us gone, nor let the command see it */
		close(sup_end);
		if (a->report_fd >= 0)
			close(a->report_fd);
		/* -EPIPE: the workload never ran (we went, or gave up, before
		 * START): the status a created container deleted has (SIGKILL,
		 * 137), never 0, which would say it ran and succeeded */
		int r = urs_init_run(&a->launch);
		_exit(r == -EPIPE ? 128 + SIGKILL : 127);
	}
	return pid < 0 ? urs_err_set(err, -errno, "clone3: %s", strerror(errno)) : pid;
}

/* ---- the boot sequence: urs_supervisor_main and its steps -------------------
 * Each step reports its own failure to the `ursa` command and returns
 * nonzero: fail_msg before the init exists, fail_kill after (the init is
 * killed; the caller reaps it). */

struct urs_cgroup sup_cg, sup_home; /* the sandbox's; the caller's own (v1) */
char sup_cgstr[URS_CG_STRING_MAX];
char sup_msg[600];

static int fail_msg(struct sup *s, int r)
{
	sup_report(s->a, r, 0, sup_cgstr, sup_msg);
	return 1;
}

static int fail_kill(struct sup *s, int r)
{
	if (s->tapfd >= 0)
		close(s->tapfd);
	if (s->a->net)
		urs_netfwd_close(s->a->net);
	sup_kill_init(s);
	sup_report(s->a, r, s->init_pid, sup_cgstr, sup_msg); /* the caller reaps it */
	return 1;
}

/* the process itself: fd table, session, name, death signal, dumpability */
int sup_boot_self(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	s->sync_fd = s->ctl_fd = s->sig_fd = s->pidfd = s->tapfd = -1;
	ckpt_trace("sup: start");
	if (!a->no_prewarm)
		sup_prewarm_fd_table();
	setsid();
	prctl(PR_SET_NAME, "ursa-sup", 0, 0, 0);
	if (!a->state_dir) {
		/* `ursa do`: no record, nothing else can find or stop this sandbox,
		 * so it ends with the command that made it (the init dies with us) */
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getppid() != a->parent)
			return 128 + SIGKILL;
	}
	/* A container sharing our pid namespace must not reach our binary
	 * through /proc/PID/exe, nor ptrace us: stay non-dumpable. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (a->state_dir) /* a fault leaves a word for `ursa state` and the log */
		urs_sup_crash_arm(a->state_dir, a->id, a->log, a->log_json);
	return 0;
}

/* what must hold before anything is created */
int sup_boot_checks(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	int r;
	/* ursa restore: the image's supervisor state is verified before anything
	 * is created (a tampered, truncated or foreign file: refused) */
	if (a->restore_dir && (r = sup_supstate_load(s, &err)) < 0) {
		sup_report(a, r, 0, NULL, err.msg);
		return 1;
	}
	/* gofer volumes: the same host directories as at the checkpoint */
	if (a->restore_dir && (r = sup_gofer_saved_check(s, &err)) < 0) {
		sup_report(a, r, 0, NULL, err.msg);
		return 1;
	}
	/* gofer volumes: /dev/fuse is opened before we enter the sandbox's
	 * device cgroup (which denies it); mounted by the init (docs/gofer.md) */
	if ((r = sup_gofer_open(a, &err)) < 0) {
		sup_report(a, r, 0, NULL, err.msg);
		return 1;
	}
	return 0;
}

/* Whether a new sandbox may join a killed predecessor's cgroups @prev
 * while its tasks are still exiting: not with a pids limit (they count in
 * pids.current until gone), nor a memory or swap limit (what they still
 * hold counts against it, and their exit yields the CPU to ours: their
 * memory might not be freed faster than ours fills), nor where the
 * directories hold more than the tasks (urs_cg_adoptable). */
static bool may_adopt(const struct urs_resources *res, struct urs_cgroup *prev)
{
	if (res->pids.has_limit || res->memory.has_swap ||
	    (res->memory.has_limit && res->memory.limit >= 0))
		return false;
	return urs_cg_adoptable(prev);
}

/* an adopted predecessor's record, held until the sandbox runs (then
 * sup_adopt_done drops it; if we die first its reaper takes it from us) */
static int adopt_fd = -1;

void sup_adopt_done(const struct urs_sup_args *a)
{
	char root[PATH_MAX];
	if (adopt_fd >= 0 && sup_state_root(a, root, sizeof(root)) == 0)
		urs_teardown_drop(root, a->id, URS_TEARDOWN_ADOPT, adopt_fd);
	else if (adopt_fd >= 0)
		close(adopt_fd);
	adopt_fd = -1;
}

/*
 * The sandbox's cgroups into sup_cg. A sandbox of our ID that a checkpoint
 * killed a moment ago may still be exiting in them (freeing 1 GiB takes
 * ~65 ms here, host/teardown.h): we take them over rather than wait, if
 * may_adopt() says we may, else remove them ourselves once its tasks are
 * gone; other directories than ours are left to its reaper.
 */
static int cgroup_make(struct urs_sup_args *a, const struct urs_resources *res, struct urs_err *err)
{
	char prevstr[URS_CG_STRING_MAX], adopt_root[PATH_MAX];
	if (sup_state_root(a, adopt_root, sizeof(adopt_root)) < 0)
		return urs_cg_create(&sup_cg, a->cgroup_path, a->id, 0, err);
	int fd = urs_teardown_take(adopt_root, a->id, URS_TEARDOWN_ADOPT, prevstr, sizeof(prevstr),
				   5000);
	if (fd == -ENOENT)
		return urs_cg_create(&sup_cg, a->cgroup_path, a->id, 0, err);
	if (fd < 0)
		return urs_err_set(err, fd,
				   "cgroup: the cgroups of %s, killed by a checkpoint, are still "
				   "being removed: %s",
				   a->id, strerror(-fd));
	struct urs_cgroup prev;
	if (urs_cg_from_string(&prev, prevstr, NULL) < 0) { /* (not ours to act on) */
		urs_teardown_drop(adopt_root, a->id, URS_TEARDOWN_ADOPT, fd);
		return urs_cg_create(&sup_cg, a->cgroup_path, a->id, 0, err);
	}
	bool adopt = may_adopt(res, &prev);
	int r = urs_cg_create_over(&sup_cg, a->cgroup_path, a->id, 0, &prev, adopt, err);
	urs_cg_close(&prev);
	if (r == -EXDEV) { /* other directories: its reaper's */
		urs_teardown_give_back(adopt_root, a->id, URS_TEARDOWN_ADOPT, fd);
		return urs_cg_create(&sup_cg, a->cgroup_path, a->id, 0, err);
	}
	if (r < 0) {
		urs_teardown_give_back(adopt_root, a->id, URS_TEARDOWN_ADOPT, fd);
		return urs_err_wrap(err, r, "the cgroups of %s killed by a checkpoint", a->id);
	}
	if (adopt)
		adopt_fd = fd;
	else
		urs_teardown_drop(adopt_root, a->id, URS_TEARDOWN_ADOPT, fd);
	return 0;
}

/* cgroup first: the init is cloned inside it; *cgv2 gets the v2 cgroup's
 * directory (for CLONE_INTO_CGROUP) or -1 */
int sup_boot_cgroup(struct sup *s, int *cgv2)
{
	struct urs_sup_args *a = s->a;
	const struct urs_spec *spec = a->launch.spec;
	struct urs_err err = {{0}};
	static const struct urs_resources none;
	const struct urs_resources *res =
		spec->lnx && spec->lnx->has_resources ? &spec->lnx->resources : &none;
	ckpt_trace("sup: cgroup create");
	int r = cgroup_make(a, res, &err);
	ckpt_trace("sup: cgroup created");
	if (r < 0) {
		sup_report(a, r, 0, NULL, err.msg);
		return 1;
	}
	/* From here on every report carries the cgroup: the parent removes
	 * it once we are gone (we sit inside it, so we cannot), or, if the
	 * parent is gone, we do (remove_made, actors/sup_report.c) */
	urs_cg_to_string(&sup_cg, sup_cgstr, sizeof(sup_cgstr));
	sup_made_cg = &sup_cg;
	sup_progress_cgroup(a, sup_cgstr);
	static const struct urs_linux nolnx;
	/* v1: we move ourselves in ("0" to tasks: no global lock); v2: the
	 * init is cloned into it (host/cgroup.c, "without the kernel's
	 * global migration lock"). Not single-threaded: the old way. */
	/* where we come from: we go back there once the init is gone */
	if (urs_cg_home_v1(&sup_home, &sup_cg, NULL) < 0)
		sup_home.mode = 0;
	sup_made_home = &sup_home;
	r = urs_cg_enter_self_v1(&sup_cg, &err);
	if (r == -EBUSY)
		r = urs_cg_enter(&sup_cg, getpid(), &err);
	else if (r == 0 && (*cgv2 = urs_cg_open_v2(&sup_cg, &err)) < 0) {
		r = *cgv2 == -ENOENT ? 0 : *cgv2; /* legacy host: no v2 */
		*cgv2 = -1;
	}
	/* pids.max once we left (sup_pids_leave): it counts the container alone */
	struct urs_resources now = *res;
	now.pids.has_limit = now.pids.has_limit && sup_cg.mode == URS_CG_UNIFIED;
	if (r < 0 ||
	    (ckpt_trace("sup: cgroup entered"),
	     r = apply_resources(&sup_cg, &now, spec->lnx ? spec->lnx : &nolnx, &err)) < 0) {
		sup_report(a, r, 0, sup_cgstr, err.msg);
		return 1;
	}
	ckpt_trace("sup: resources applied");
	return 0;
}

/* the sync socket: our end in s->sync_fd, the init's (above stdio and the
 * preserved fds) in a->launch.sync_fd */
int sup_boot_sync(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		int r = -errno;
		snprintf(sup_msg, sizeof(sup_msg), "supervisor setup: %s", strerror(-r));
		return fail_msg(s, r);
	}
	int keep = 3 + (a->launch.preserve_fds > 0 ? a->launch.preserve_fds : 0);
	if (sv[1] < keep) {
		int hi = fcntl(sv[1], F_DUPFD_CLOEXEC, keep);
		close(sv[1]);
		sv[1] = hi;
	}
	s->sync_fd = sv[0];
	a->launch.sync_fd = sv[1];
	return 0;
}

/* the namespaces to make (clone flags) and the pid namespace to join (an
 * fd in *join_pid_ns, entered already) */
static int boot_namespaces(struct sup *s, uint64_t *flags, int *join_pid_ns)
{
	struct urs_sup_args *a = s->a;
	const struct urs_spec *spec = a->launch.spec;
	a->launch.new_ns = 0;
	for (size_t i = 0; spec->lnx && i < spec->lnx->n_namespaces; i++) {
		const struct urs_namespace *ns = &spec->lnx->namespaces[i];
		if (!ns->path) {
			*flags |= (uint64_t) urs_ns_clone_flag(ns->type);
			a->launch.new_ns |= 1u << ns->type;
		} else if (ns->type == URS_NS_PID) {
			*join_pid_ns = open(ns->path, O_RDONLY | O_CLOEXEC);
			if (*join_pid_ns < 0 || setns(*join_pid_ns, CLONE_NEWPID) < 0) {
				int r = -errno;
				snprintf(sup_msg, sizeof(sup_msg),
					 "linux.namespaces: joining pid namespace %s: %s", ns->path,
					 strerror(-r));
				return fail_msg(s, r);
			}
		}
	}
	bool early_hooks =
		spec->hooks[URS_HOOK_PRESTART].n || spec->hooks[URS_HOOK_CREATE_RUNTIME].n;
	a->launch.wait_go = (a->launch.new_ns & (1u << URS_NS_USER)) || early_hooks ||
			    spec->hooks[URS_HOOK_CREATE_CONTAINER].n ||
			    spec->hooks[URS_HOOK_START_CONTAINER].n;
	a->launch.leash = !a->state_dir; /* `ursa do`: dies with its command */
	return 0;
}

/* the init: cloned into the namespaces and the v2 cgroup; then our OOM
 * score, the v2 join to come, the pids cgroup left */
int sup_boot_init(struct sup *s, int cgv2)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	uint64_t flags = 0;
	int join_pid_ns = -1;
	int r = boot_namespaces(s, &flags, &join_pid_ns);
	if (r) {
		if (join_pid_ns >= 0)
			close(join_pid_ns);
		return r;
	}
	bool into_v2;
	s->init_pid = clone_init(a, flags, &s->pidfd, cgv2, s->sync_fd, &sup_cg, &into_v2, &err);
	ckpt_trace("sup: init cloned");
	/* the container keeps the caller's OOM score (and gives it to what a
	 * restore clones from it); we are the last task of the cgroup to go */
	struct urs_err oerr;
	r = s->init_pid > 0 ? urs_oom_protect_self(URS_OOM_SUPERVISOR_ADJ, &oerr) : 0;
	if (r < 0 && r != -EACCES) /* EACCES: no CAP_SYS_RESOURCE here (docs/sandbox.md) */
		fprintf(stderr, "ursa: warning: supervisor: %s\n", oerr.msg);
	sup_join_v2_setup(&sup_cg, into_v2);
	if (r == -EACCES && !a->no_cgroup)
		sup_oom_fallback(&sup_cg, &sup_home);
	close(a->launch.sync_fd);
	if (join_pid_ns >= 0)
		close(join_pid_ns); /* our own children after this are none */
	if (s->init_pid < 0) {
		snprintf(sup_msg, sizeof(sup_msg),
			 "cloning the container's init (namespaces %#llx): %s",
			 (unsigned long long) flags, err.msg);
		return fail_msg(s, s->init_pid);
	}
	if (!a->no_cgroup && (r = sup_pids_leave(&sup_cg, &sup_home, a->launch.spec, &err)) < 0) {
		snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
		return fail_kill(s, r);
	}
	return 0;
}

/* the init's READY (the root built, the process about to exec), and the
 * seccomp listener it may send first */
static int boot_wait_ready(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_sync_msg m;
	int listener = -1;
	int r = urs_sync_recv_fd(s->sync_fd, &m, &listener);
	if (listener >= 0 && a->seccomp_count) {
		/* counted seccomp denials: the listener is ours, answered on the
		 * loop (actors/metrics.c); there is no agent */
		urs_sup_seccomp_take(listener, a->seccomp_count);
		listener = -1;
	}
	if (listener >= 0) {
		struct urs_err err = {{0}};
		r = notify_agent(a, s->init_pid, listener, &err);
		close(listener);
		if (r < 0) {
			snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
			return fail_kill(s, r);
		}
	}
	if (r < 0 || m.type != URS_SYNC_READY) {
		snprintf(sup_msg, sizeof(sup_msg), "%s",
			 r < 0 ? "the container's init died during setup" : m.msg);
		if (r >= 0)
			r = m.code ? m.code : -EINVAL;
		return fail_kill(s, r);
	}
	return 0;
}

/* before the init builds the root: id maps, the tap, prestart and
 * createRuntime hooks; then its READY (and a seccomp listener) */
int sup_boot_setup(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	const struct urs_spec *spec = a->launch.spec;
	struct urs_err err = {{0}};
	int r;
	if (a->launch.new_ns & (1u << URS_NS_USER)) {
		const struct urs_linux *l = spec->lnx;
		if ((r = write_id_map(s->init_pid, "uid_map", l->uid_mappings, l->n_uid_mappings)) <
			    0 ||
		    (r = write_id_map(s->init_pid, "gid_map", l->gid_mappings, l->n_gid_mappings)) <
			    0) {
			snprintf(sup_msg, sizeof(sup_msg),
				 "linux.uidMappings/gidMappings: writing the maps: %s",
				 strerror(-r));
			return fail_kill(s, r);
		}
	}
	/* networking: the tap inside the new net namespace, the forwards bound,
	 * before anything in the sandbox runs */
	if (URSA_HAVE_NETSTACK && a->net && a->net->mode == URS_NET_SANDBOX &&
	    (a->launch.new_ns & (1u << URS_NS_NETWORK))) {
		if ((r = urs_netstack_prepare(a->net, s->init_pid, &s->netcfg, &s->tapfd, &err)) <
		    0) {
			snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
			return fail_kill(s, r);
		}
	}
	if (a->launch.wait_go) {
		static char json[4096];
		/* "created", as crun and the runtime-tools suite (hooks_stdin) have
		 * it (runc 1.1 says "creating") */
		if (urs_oci_state_json(json, sizeof(json), a->id, "created", s->init_pid, a->bundle,
				       a->annotations) < 0)
			urs_oci_state_json(json, sizeof(json), a->id, "created", s->init_pid,
					   a->bundle, NULL);
		/* prestart (deprecated) and createRuntime: runtime namespace, after
		 * the namespaces exist, before the init builds the root */
		if ((r = urs_hooks_run(spec, URS_HOOK_PRESTART, json, &err)) < 0 ||
		    (r = urs_hooks_run(spec, URS_HOOK_CREATE_RUNTIME, json, &err)) < 0) {
			snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
			return fail_kill(s, r);
		}
		urs_sync_send(s->sync_fd, URS_SYNC_GO, 0, json);
	}
	/* then its stdio (a pty too), before it runs or is restored into */
	if ((r = boot_wait_ready(s)) == 0)
		sup_report_stdio(s);
	return r;
}

/* ursa restore (docs/checkpoint.md): the init is the restore target; with
 * gofer volumes later, once they serve (late_restore, actors/sup_restore.c) */
int sup_boot_restore(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	static struct ckpt_dev_map map[SUP_DEV_MAP];
	uint32_t nmap = 0;
	struct ckpt_restore_opts ro = {.policy = a->restore_policy,
				       .puppet = s->init_pid,
				       .dev_map = map,
				       .before_charged = sup_join_v2_now};
	sup_lazy_opts(s, &ro);
	pid_t restored;
	ckpt_trace("sup: init ready, restoring");
	int r = sup_restore_files(s, map, &nmap, &err);
	if (r < 0) {
		snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
		return fail_kill(s, r);
	}
	ro.n_dev_map = nmap;
	uint8_t key[URS_CKPT_KEY_LEN];
	ro.key = key;
	if ((r = urs_ckpt_key(NULL, false, key, &err)) < 0 ||
	    (r = ckpt_restore_ex(a->restore_dir, &ro, &restored, NULL, &err)) < 0) {
		explicit_bzero(key, sizeof(key));
		snprintf(sup_msg, sizeof(sup_msg), "%s", err.msg);
		return fail_kill(s, r);
	}
	explicit_bzero(key, sizeof(key));
	ckpt_trace("sup: restored");
	return 0;
}

/* the control socket, READY to the command, the start of run/do */
int sup_boot_ready(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	int r;
	if (a->state_dir && (s->ctl_fd = sup_ctl_listen(a->state_dir)) < 0) {
		r = s->ctl_fd;
		snprintf(sup_msg, sizeof(sup_msg), "control socket in %s: %s", a->state_dir,
			 strerror(-r));
		return fail_kill(s, r);
	}
	if (!s->late && sup_ready_recorded(s, sup_cgstr) < 0) {
		sup_abandon(s);
		return 1;
	}
	if (a->start_now && !s->late) {
		/* run/do: no separate start, but not before the parent has written
		 * the record (a workload that is quick to act would otherwise be
		 * unknown to `ursa kill` for a moment) */
		if (!a->restore_dir) { /* a restored init runs already */
			urs_sync_send(s->sync_fd, URS_SYNC_START, 0, NULL);
			s->started = true; /* its exec is watched once the loop runs */
		} else {
			close(s->sync_fd);
			s->sync_fd = -1;
			s->started = s->execd = true;
		}
	}
	return 0;
}

/* Let go of everything the caller gave us (stdio, preserved fds, a console
 * socket, whatever else it had open): the init has its own copies, and a
 * caller reading our pipes to EOF must not wait on us. Then our signals. */
void sup_boot_let_go(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	urs_cg_close(&sup_cg);	 /* cached cgroup directory fds: not needed any more */
	urs_cg_close(&sup_home); /* (reopened when we go back: sup_close_all_but below) */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && null >= 0; fd++)
		dup2(null, fd);
	if (null > 2)
		close(null);
	int keepfds[3 + 1 + 1 + URS_NET_MAX_FWD + 2 * URS_GOFER_MAX + 3] = {s->sync_fd, s->pidfd,
									    s->ctl_fd, s->tapfd};
	size_t nkeep = 4;
	if (s->late) /* READY is reported after the restore */
		keepfds[nkeep++] = a->report_fd;
	for (int i = 0; i < a->launch.n_gofer; i++) { /* gofer volumes */
		keepfds[nkeep++] = a->launch.gofer_fuse[i];
		keepfds[nkeep++] = a->launch.gofer_dir[i];
	}
	for (unsigned i = 0; a->net && i < a->net->n_fwd; i++)
		keepfds[nkeep++] = a->net->fwd[i].fd;
	keepfds[nkeep++] = urs_sup_seccomp_fd(); /* counted seccomp denials, or -1 */
	if (s->lazy)				 /* a lazy restore's pager: its end of paging */
		keepfds[nkeep++] = ckpt_lazy_done_fd(s->lazy);
	if (s->late && a->restore_remote) /* ... yet to come, with its ursa-store */
		keepfds[nkeep++] = a->restore_src;
	sup_close_all_but(keepfds, nkeep);

	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < URS_ARRAY_SIZE(fwd_signals); i++)
		sigaddset(&set, fwd_signals[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	s->sig_fd = signalfd(-1, &set, SFD_CLOEXEC);
	/* A peer's reset must cost a connection, never the supervisor: splice(2)
	 * into a socket (the forward relay) cannot pass MSG_NOSIGNAL. The init
	 * was cloned above with the default; later children (hooks) reset it. */
	signal(SIGPIPE, SIG_IGN);
}
