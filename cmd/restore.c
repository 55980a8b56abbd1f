/*
 * cmd/restore.c — `ursa restore --image-path DIR [--bundle B] [--detach]
 * [--pid-file F] [--console-socket S] [--no-pivot] [-no-subreaper] ID`
 * (runc-compatible): the flags, the image fetched first when it is in
 * object storage (cmd/remote.h), the sandbox made from it
 * (actors/sandbox_restore.h: any failure leaves nothing), its poststart
 * hooks, and, without --detach, waited for as `run` waits.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "actors/sandbox_restore.h"
#include "ckpt/key.h"
#include "ckpt/remote_ref.h"
#include "ckpt/restore.h"
#include "ckpt/run.h"
#include "ckpt/trace.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/remote.h"

int urs_wait_forwarding(pid_t sup, pid_t init);

/* --lazy-pages from the bundle's CKPT_ANN_LAZY ("true"/"false"; the flag
 * makes it lazy whatever the annotation says, and a value that is neither
 * is refused either way), read before the image is fetched, which it
 * decides. The bundle is the one containerd and podman pass: --bundle's,
 * or the current directory's config.json. A restore that takes its bundle
 * from the image instead (an `ursa do` image's layer, or the recorded one
 * when there is no config.json here) has only the flag. A config.json
 * that does not load is left to the bundle's load proper (actors/bundle.h),
 * which says why if it is the one used. */
static int lazy_from_bundle(struct urs_create_args *c, struct urs_err *err)
{
	char cfg[PATH_MAX];
	if ((c->bundle && !*c->bundle) ||
	    snprintf(cfg, sizeof(cfg), "%s/config.json", c->bundle ? c->bundle : ".") >=
		    (int) sizeof(cfg))
		return 0;
	_cleanup_spec_ struct urs_spec *spec = NULL;
	struct urs_err ignored = {{0}};
	if (urs_spec_load(cfg, &spec, &ignored) < 0)
		return 0;
	bool lazy = false;
	int r = urs_spec_ann_bool(spec, CKPT_ANN_LAZY, &lazy, err);
	c->lazy_pages |= lazy;
	return r;
}

/* the sandbox restored (actors/sandbox_restore.h), waited for unless
 * --detach; *rc: the exit status */
static int restore_run(struct urs_create_args *c, const char *image, const char *stage,
		       const char *work, int *rc, struct urs_err *err)
{
	struct urs_state st;
	pid_t sup;
	int r = urs_sandbox_restore(c, stage ? stage : image, &sup, &st, err);
	if (r < 0)
		return r;
	ckpt_trace("cli: sandbox created");
	if (stage) /* restored: the copy fetched from object storage goes */
		urs_remote_rm_stage(stage);
	ckpt_worklog(work, "restore.log", "restored %s from %s: init pid %d", c->id, image,
		     (int) st.pid);
	urs_sandbox_hooks(G.root, &st, c->spec, URS_HOOK_POSTSTART, "running", urs_warn);
	*rc = 0;
	if (!c->detach) {
		struct urs_err derr = {{0}};
		*rc = urs_wait_forwarding(sup, st.pid);
		if (urs_container_delete(c->id, true, &derr) < 0)
			urs_error("%s", derr.msg);
	}
	urs_state_clear(&st);
	return 0;
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
	char stage[PATH_MAX] = "", loc[CKPT_REF_LOC_MAX], prof[CKPT_REF_PROF_MAX];
	struct urs_err err = {{0}};
	int rc = 1, r = 0;
	/* a directory holding a reference to an image parked in object
	 * storage (ckpt/remote_ref.h): restored from there */
	if (!urs_is_remote(image)) {
		if ((r = ckpt_ref_read(image, loc, prof, &err)) == 0) {
			image = loc;
			profile = profile ? profile : *prof ? prof : NULL;
		} else if (r != -ENOENT) {
			urs_error("restore: %s", err.msg);
			return 1;
		}
		r = 0;
	}
	c->lazy_src = -1;
	c->lazy_remote = urs_is_remote(image) && c->lazy_pages;
	if (urs_is_remote(image))
		r = urs_remote_fetch(image, G.root, profile, stage, sizeof(stage),
				     c->lazy_remote ? &c->lazy_src : NULL, &err);
	if (r == 0)
		r = restore_run(c, image, *stage ? stage : NULL, work, &rc, &err);
	if (c->lazy_src >= 0) /* the supervisor's pager has its own (or none: it failed) */
		close(c->lazy_src);
	if (r < 0) {
		urs_error("%s", err.msg);
		ckpt_worklog(work, "restore.log", "error: %s", err.msg);
	}
	char *slash = strrchr(stage, '/'); /* STAGE/image: its parent too */
	if (slash) {
		*slash = 0;
		urs_remote_rm_stage(stage);
	}
	return rc;
}

int cmd_restore(int argc, char **argv)
{
	struct urs_create_args c = {0};
	urs_create_args_cli(&c);
	const char *image = NULL, *work = NULL, *cgmode = NULL, *profile = NULL, *key_file = NULL;
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
		{"host-socket", 0, URS_OPT_STR, &c.host_socket,
		 "hand the restored sandbox's supervision to the process listening here "
		 "(containerd-shim-ursa-v2)"},
		{"detach", 'd', URS_OPT_FLAG, &c.detach, "do not wait for the container"},
		{"pid-file", 0, URS_OPT_STR, &c.pid_file, "write the container init's pid here"},
		{"console-socket", 0, URS_OPT_STR, &c.console_socket,
		 "AF_UNIX socket that receives the pty master (the new stdio)"},
		{"no-pivot", 0, URS_OPT_FLAG, &c.no_pivot,
		 "MS_MOVE + chroot instead of pivot_root"},
		{"no-new-keyring", 0, URS_OPT_FLAG, &c.no_new_keyring, "keep the session keyring"},
		{"no-subreaper", 0, URS_OPT_FLAG, &c.no_subreaper, "(accepted)"},
		{"tcp-established", 0, URS_OPT_ACCEPT, NULL, "(accepted: TCP is closed)"},
		{"ext-unix-sk", 0, URS_OPT_ACCEPT, NULL, "(accepted)"},
		{"shell-job", 0, URS_OPT_ACCEPT, NULL, "(accepted: stdio is always replaced)"},
		{"file-locks", 0, URS_OPT_ACCEPT, NULL,
		 "(accepted: an image never holds a lock; checkpoint refuses a process holding "
		 "one)"},
		{"manage-cgroups-mode", 0, URS_OPT_STR, &cgmode,
		 "(accepted: the cgroup is made from config.json)"},
		{"empty-ns", 0, URS_OPT_ACCEPT_ARG, NULL, "(accepted)"},
		{"lazy-pages", 0, URS_OPT_FLAG, &c.lazy_pages,
		 "the workload runs before its memory is in: pages come through userfaultfd, "
		 "faulted ones first (docs/checkpoint.md \"Lazy restore\")"},
		{"lazy", 0, URS_OPT_FLAG, &c.lazy_pages, "the same as --lazy-pages"},
		{"lazy-unshared", 0, URS_OPT_FLAG, &c.lazy_unshared,
		 "with --lazy-pages: memory processes of the tree shared (a fork's) is paged "
		 "into each on its own, not written before the tree runs: it starts sooner and "
		 "uses a copy per process (docs/checkpoint.md)"},
		{"auto-dedup", 0, URS_OPT_ACCEPT, NULL, "(accepted)"},
		{"lsm-profile", 0, URS_OPT_REFUSE_ARG, NULL, "refused"},
		{"lsm-mount-context", 0, URS_OPT_REFUSE_ARG, NULL, "refused"},
		{NULL, 0, 0, NULL, NULL},
	};
	int i = urs_parse("restore", "--image-path DIR [options] ID", argc, argv, opts);
	if (i < 0)
		return i == -2 ? 0 : 1;
	if (!(c.id = urs_require_id("restore", argc, argv, i)))
		return 1;
	struct urs_err err = {{0}};
	if (lazy_from_bundle(&c, &err) < 0) {
		urs_error("restore: %s", err.msg);
		urs_create_args_free(&c);
		return 1;
	}
	if (c.lazy_unshared && !c.lazy_pages) {
		urs_error("restore: --lazy-unshared needs --lazy-pages (or the "
			  "annotation " CKPT_ANN_LAZY
			  "=true; an eager restore always shares what the tree shared)");
		urs_create_args_free(&c);
		return 1;
	}
	ckpt_trace("cli: restore parsed");
	/* the key for this command, its supervisor (which reads the image's
	 * supervisor.img) and ursa-store: they find it through the environment */
	if (key_file && setenv("URSA_CKPT_KEY", key_file, 1) < 0)
		return 1;
	int rc = urs_opt_one_of("restore", "manage-cgroups-mode", cgmode, urs_cgroups_modes)
			 ? restore_from(&c, image, work, profile)
			 : 1;
	urs_create_args_free(&c);
	ckpt_trace("cli: restore done");
	return rc;
}
