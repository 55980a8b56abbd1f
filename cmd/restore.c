/*
 * cmd/restore.c — `ursa restore --image-path DIR [--bundle B] [--detach]
 * [--pid-file F] [--console-socket S] [--no-pivot] [-no-subreaper] ID`
 * (runc-compatible): a new sandbox is made the usual way from the bundle
 * (cgroup, namespaces, mounts, root, console), but its init, instead of
 * exec'ing the process, stops once the root is built and the supervisor
 * turns it into the checkpointed process tree (ckpt_restore_ex with the init
 * as the puppet, actors/supervisor.c). So the restored sandbox is an
 * ordinary one: its init is the pid-file process (our child, as runc's
 * is), and state, kill, delete work on it. The image is untrusted: its credentials, no_new_privs
 * and seccomp filter are checked against config.json first, and any failure
 * leaves nothing (no record, no cgroup, no process).
 * Without --bundle: the current directory if it has a config.json, else the
 * bundle recorded in the image (DIR/container/state.json).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/key.h"
#include "ckpt/container.h"
#include "ckpt/restore.h"
#include "ckpt/trace.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/remote.h"
#include "host/cgroup.h"

#define CAP_SETGID_BIT	     (1ull << 6)
#define CAP_SETUID_BIT	     (1ull << 7)
#define CAP_SYS_RESOURCE_BIT (1ull << 24)

void urs_ckpt_worklog(const char *work, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int urs_wait_forwarding(pid_t sup, pid_t init);

/* The policy the image must satisfy, from the bundle's config.json. */
static int make_policy(const struct urs_create_args *c, struct ckpt_policy *p, struct urs_err *err)
{
	const struct urs_process *pr = c->spec->process;
	if (urs_spec_has_ns(c->spec, URS_NS_USER))
		return urs_err_set(
			err, -ENOTSUP,
			"restore: sandboxes with a user namespace are not supported yet");
	if (c->filter)
		return urs_err_set(err, -ENOTSUP,
				   "restore: a seccomp profile with SCMP_ACT_NOTIFY is not "
				   "supported (its listener cannot be checkpointed)");
	*p = (struct ckpt_policy){
		.cap_bnd = pr->caps.present ? pr->caps.bounding : 0,
		.need_nnp = pr->no_new_privileges,
		.uid = pr->user.uid,
		.gid = pr->user.gid,
		.bpf = (const uint64_t *) (const void *) c->bpf.prog.filter,
		.bpf_len = c->bpf.prog.len,
	};
	/* hard limits: what the init would get (ours, inherited), or the
	 * configured ones; a process can only lower them without
	 * CAP_SYS_RESOURCE, which the bounding set then has to allow */
	for (int k = 0; k < 16; k++) {
		struct rlimit rl;
		p->rlim_max[k] = getrlimit(k, &rl) == 0 ? rl.rlim_max : 0;
		for (size_t j = 0; j < pr->n_rlimits; j++)
			if (pr->rlimits[j].resource == k)
				p->rlim_max[k] = pr->rlimits[j].hard;
		if (p->cap_bnd & CAP_SYS_RESOURCE_BIT)
			p->rlim_max[k] = RLIM_INFINITY;
	}
	p->n_rlim = 16;
	/* a process that cannot change its ids keeps the configured ones */
	p->pin_uid = !(p->cap_bnd & CAP_SETUID_BIT);
	p->pin_gid = !(p->cap_bnd & CAP_SETGID_BIT);
	return 0;
}

/* the runc/CRIU options ursa cannot honour */
static bool refused(bool lazy, const char *lsm, const char *lsm_mount, const char *cgmode)
{
	if (lazy || lsm || lsm_mount) {
		urs_error("restore: --%s is not supported", lazy  ? "lazy-pages"
							    : lsm ? "lsm-profile"
								  : "lsm-mount-context");
		return true;
	}
	if (cgmode && strcmp(cgmode, "soft") && strcmp(cgmode, "full") &&
	    strcmp(cgmode, "strict") && strcmp(cgmode, "ignore")) {
		urs_error("restore: --manage-cgroups-mode %s: unknown mode", cgmode);
		return true;
	}
	return false;
}

/* the image checked, the sandbox made from the bundle with the image's
 * tree as its init's (actors/sandbox.c), waited for unless --detach */
static int restore_run(struct urs_create_args *c, const char *image, const char *work,
		       const char *stage)
{
	/* checked (owner, MACs, manifest) before anything is made; an `ursa do`
	 * sandbox's layer unpacked as the bundle when none is given */
	struct urs_err err = {{0}};
	struct ckpt_container_image img;
	if (ckpt_container_image_open(stage ? stage : image, G.root, c->id, !c->bundle, &img,
				      &err) < 0) {
		urs_error("%s", err.msg);
		urs_ckpt_worklog(work, "restore.log", "error: %s", err.msg);
		return 1;
	}
	const char *dir = img.dir, *layer = img.layer;
	if (*layer)
		c->bundle = layer;
	if (!c->bundle && access("config.json", F_OK) < 0 && img.have_rec)
		c->bundle = img.rec.bundle;
	/* counted seccomp denials need a notify listener, which an image cannot
	 * carry: the image holds the plain filter (cmd/ckpt_seccomp.c), compile
	 * that */
	c->plain_seccomp = true;
	struct urs_sandbox_opts o;
	struct ckpt_policy pol;
	struct urs_state st;
	pid_t sup;
	int rc = 1;
	int r = urs_bundle_prepare(c, &o, &err);
	if (r == 0)
		r = make_policy(c, &pol, &err);
	if (r == 0 && *layer) {
		o.overlay_scratch = layer;
		o.overlay_prepared = true;
		/* `ursa do` loads Docker's default filter (not in its config) */
		pol.bpf = (const uint64_t *) (const void *) urs_default_bpf;
		pol.bpf_len = urs_default_bpf_len;
	}
	if (r == 0 && c->spec->process && c->spec->process->terminal && !c->console_socket)
		r = urs_err_set(&err, -EINVAL,
				"restore: process.terminal needs --console-socket (the pty "
				"replaces the checkpointed stdio)");
	if (r < 0) {
		urs_error("%s", err.msg);
		urs_ckpt_worklog(work, "restore.log", "error: %s", err.msg);
		goto out;
	}
	o.autostart = true; /* restored processes run at once */
	o.seccomp = NULL;   /* the image brings its filters (checked by the policy) */
	o.seccomp_notify = false;
	o.seccomp_count = NULL;
	o.restore_dir = dir;
	o.restore_policy = &pol;
	ckpt_trace("cli: bundle prepared");
	if ((r = urs_sandbox_create(&o, &sup, &st, &err)) < 0) {
		urs_error("%s", err.msg);
		urs_ckpt_worklog(work, "restore.log", "error: %s", err.msg);
		goto out;
	}
	ckpt_trace("cli: sandbox created");
	if (stage) /* restored: the copy fetched from object storage goes */
		urs_remote_rm_stage(stage);
	urs_ckpt_worklog(work, "restore.log", "restored %s from %s: init pid %d", c->id, dir,
			 (int) st.pid);
	urs_sandbox_hooks(G.root, &st, c->spec, URS_HOOK_POSTSTART, "running", urs_warn);
	rc = 0;
	if (!c->detach) {
		rc = urs_wait_forwarding(sup, st.pid);
		if (urs_container_delete(c->id, true, &err) < 0)
			urs_error("%s", err.msg);
	}
	urs_state_clear(&st);
out:
	ckpt_container_image_close(&img, rc != 0);
	return rc;
}

/* a local image, or one fetched from object storage into a stage
 * directory first (every object authenticated), removed afterwards */
static int restore_from(struct urs_create_args *c, const char *image, const char *work,
			const char *profile)
{
	if (!image) {
		urs_error("restore: --image-path is required");
		return 1;
	}
	if (!urs_is_remote(image))
		return restore_run(c, image, work, NULL);
	char stage[PATH_MAX];
	struct urs_err err = {{0}};
	if (urs_remote_fetch(image, G.root, profile, stage, sizeof(stage), &err) < 0) {
		urs_error("%s", err.msg);
		urs_ckpt_worklog(work, "restore.log", "error: %s", err.msg);
		return 1;
	}
	int rc = restore_run(c, image, work, stage);
	char *slash = strrchr(stage, '/'); /* STAGE/image: its parent too */
	if (slash)
		*slash = 0;
	urs_remote_rm_stage(stage);
	return rc;
}

int cmd_restore(int argc, char **argv)
{
	struct urs_create_args c = {0};
	const char *image = NULL, *work = NULL, *cgmode = NULL, *lsm = NULL, *lsm_mount = NULL,
		   *profile = NULL, *key_file = NULL;
	bool tcp = false, unix_sk = false, shell = false, locks = false, lazy = false,
	     dedup = false;
	struct urs_strlist empty_ns = {0};
	const struct urs_opt opts[] = {
		{"image-path", 0, URS_OPT_STR, &image,
		 "checkpoint image directory, or s3://BUCKET/PREFIX"},
		{"key-file", 0, URS_OPT_STR, &key_file,
		 "the key the image was made with (default " CKPT_KEY_PATH "): the source "
		 "host's key, copied, restores its images here"},
		{"s3-profile", 0, URS_OPT_STR, &profile,
		 "profile of /etc/ursa/s3.conf for s3:// (default: $AWS_PROFILE, default)"},
		{"work-path", 0, URS_OPT_STR, &work, "directory for restore.log"},
		{"bundle", 'b', URS_OPT_STR, &c.bundle, "bundle directory"},
		{"detach", 'd', URS_OPT_FLAG, &c.detach, "do not wait for the container"},
		{"pid-file", 0, URS_OPT_STR, &c.pid_file, "write the container init's pid here"},
		{"console-socket", 0, URS_OPT_STR, &c.console_socket,
		 "AF_UNIX socket that receives the pty master (the new stdio)"},
		{"no-pivot", 0, URS_OPT_FLAG, &c.no_pivot,
		 "MS_MOVE + chroot instead of pivot_root"},
		{"no-new-keyring", 0, URS_OPT_FLAG, &c.no_new_keyring, "keep the session keyring"},
		{"no-subreaper", 0, URS_OPT_FLAG, &c.no_subreaper, "(accepted)"},
		{"tcp-established", 0, URS_OPT_FLAG, &tcp, "(accepted: TCP is closed)"},
		{"ext-unix-sk", 0, URS_OPT_FLAG, &unix_sk, "(accepted)"},
		{"shell-job", 0, URS_OPT_FLAG, &shell, "(accepted: stdio is always replaced)"},
		{"file-locks", 0, URS_OPT_FLAG, &locks,
		 "(accepted: an image never holds a lock; checkpoint refuses a process holding "
		 "one)"},
		{"manage-cgroups-mode", 0, URS_OPT_STR, &cgmode,
		 "(accepted: the cgroup is made from config.json)"},
		{"empty-ns", 0, URS_OPT_LIST, &empty_ns, "(accepted)"},
		{"lazy-pages", 0, URS_OPT_FLAG, &lazy, "refused"},
		{"auto-dedup", 0, URS_OPT_FLAG, &dedup, "(accepted)"},
		{"lsm-profile", 0, URS_OPT_STR, &lsm, "refused"},
		{"lsm-mount-context", 0, URS_OPT_STR, &lsm_mount, "refused"},
		{NULL, 0, 0, NULL, NULL},
	};
	int i = urs_parse("restore", "--image-path DIR [options] ID", argc, argv, opts);
	if (i < 0)
		return i == -2 ? 0 : 1;
	if (!(c.id = urs_require_id("restore", argc, argv, i)))
		return 1;
	ckpt_trace("cli: restore parsed");
	/* the key for this command, its supervisor (which reads the image's
	 * supervisor.img) and ursa-store: they find it through the environment */
	if (key_file && setenv("URSA_CKPT_KEY", key_file, 1) < 0)
		return 1;
	int rc = refused(lazy, lsm, lsm_mount, cgmode) ? 1 : restore_from(&c, image, work, profile);
	urs_create_args_free(&c);
	ckpt_trace("cli: restore done");
	return rc;
}
