/*
 * cmd/checkpoint.c — `ursa checkpoint --image-path DIR [--leave-running]
 * [--work-path DIR] ID` (runc-compatible): the flags, then
 * ckpt_run_checkpoint() (ckpt/run.h) with the supervisor's part
 * (actors/ckpt_sup.c) and, for s3://, ursa-store's (cmd/remote.c). Driven
 * from the CLI, synchronously: the supervisor sits in the same cgroup and
 * is frozen with the tree for the few milliseconds it takes. A refusal (an
 * unsupported resource, named with its pid) leaves the sandbox running as
 * before and no image. docs/checkpoint.md has the details.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/ckpt_sup.h"
#include "ckpt/key.h"
#include "ckpt/run.h"
#include "ckpt/trace.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/remote.h"

/* the key, --key-file or the host's (ckpt_key_path), made absolute (the
 * supervisor seals its state with it) and handed to ursa-store as restore
 * hands its own ($URSA_CKPT_KEY) */
static int key_file_arg(const char *arg, char *out, size_t len)
{
	char host[PATH_MAX], cwd[PATH_MAX];
	if (!arg && ckpt_key_path(host, sizeof(host)) == 0)
		arg = host;
	int n = !arg			   ? -1
		: arg[0] == '/'		   ? snprintf(out, len, "%s", arg)
		: getcwd(cwd, sizeof(cwd)) ? snprintf(out, len, "%s/%s", cwd, arg)
					   : -1;
	if (n < 0 || (size_t) n >= len || strpbrk(out, "\t\n")) {
		urs_error("checkpoint: key file %s: not a usable path", arg ? arg : "(too long)");
		return -1;
	}
	if (setenv("URSA_CKPT_KEY", out, 1) < 0) {
		urs_error("checkpoint: --key-file: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int remove_killed(const struct urs_state *st, struct urs_err *err)
{
	return urs_container_remove_killed(st, err);
}

static int checkpoint_run(struct ckpt_run_opts *o, const char *profile)
{
	struct urs_ckpt_sup sup = {.work = o->work, .ctlfd = -1};
	struct urs_remote_ckpt remote = {
		.url = o->image, .root = G.root, .profile = profile, .key_file = o->key_file};
	o->root = G.root;
	o->sup = &urs_ckpt_sup_ops;
	o->sup_ctx = &sup;
	if (urs_is_remote(o->image))
		o->store = &urs_remote_ckpt_ops, o->store_ctx = &remote;
	o->remove = remove_killed;
	o->seccomp_replace = urs_ckpt_seccomp_replace;
	struct urs_err err = {{0}};
	if (ckpt_run_checkpoint(o, &err) < 0) {
		urs_error("%s", err.msg);
		return 1;
	}
	return 0;
}

int cmd_checkpoint(int argc, char **argv)
{
	const char *image = NULL, *work = NULL, *profile = NULL, *cgmode = NULL, *key_file = NULL;
	bool leave = false, precopy = false;
	const struct urs_opt opts[] = {
		{"image-path", 0, URS_OPT_STR, &image,
		 "directory for the image (created), or s3://BUCKET/PREFIX"},
		{"key-file", 0, URS_OPT_STR, &key_file,
		 "the key that seals the image (default " CKPT_KEY_PATH ", made at first use)"},
		{"s3-profile", 0, URS_OPT_STR, &profile,
		 "profile of /etc/ursa/s3.conf for s3:// (default: $AWS_PROFILE, default)"},
		{"work-path", 0, URS_OPT_STR, &work, "directory for dump.log"},
		{"leave-running", 0, URS_OPT_FLAG, &leave,
		 "keep the container running afterwards (its memory is copied while it runs)"},
		{"pre-copy", 0, URS_OPT_FLAG, &precopy,
		 "copy memory while it runs before the freeze and kill too (migration)"},
		{"tcp-established", 0, URS_OPT_ACCEPT, NULL, "(accepted: TCP is closed)"},
		{"ext-unix-sk", 0, URS_OPT_ACCEPT, NULL, "(accepted; refused at dump)"},
		{"shell-job", 0, URS_OPT_ACCEPT, NULL, "(accepted: a tty on stdio is external)"},
		{"file-locks", 0, URS_OPT_ACCEPT, NULL,
		 "(accepted: locks are not saved, a process holding one is refused)"},
		{"manage-cgroups-mode", 0, URS_OPT_STR, &cgmode,
		 "(accepted: restore re-creates the cgroup)"},
		{"empty-ns", 0, URS_OPT_ACCEPT_ARG, NULL, "(accepted: only pid state is saved)"},
		{"lazy-pages", 0, URS_OPT_REFUSE, NULL, "refused"},
		{"pre-dump", 0, URS_OPT_REFUSE, NULL, "refused"},
		{"parent-path", 0, URS_OPT_REFUSE_ARG, NULL, "refused"},
		{"page-server", 0, URS_OPT_REFUSE_ARG, NULL, "refused"},
		{"status-fd", 0, URS_OPT_REFUSE_ARG, NULL, "refused"},
		{"auto-dedup", 0, URS_OPT_ACCEPT, NULL, "(accepted)"},
		{"external", 0, URS_OPT_REFUSE_ARG, NULL, "refused: namespaces are not saved"},
		{NULL, 0, 0, NULL, NULL},
	};
	struct urs_state st;
	int rc = urs_cmd_open("checkpoint", "--image-path DIR [options] ID", argc, argv, opts, &st,
			      NULL);
	if (rc >= 0)
		return rc;
	ckpt_trace("cli: checkpoint opened");
	char key[PATH_MAX];
	struct ckpt_run_opts o = {.st = &st,
				  .image = image,
				  .work = work,
				  .key_file = key,
				  .leave = leave,
				  .precopy = precopy};
	rc = !urs_opt_one_of("checkpoint", "manage-cgroups-mode", cgmode, urs_cgroups_modes) ||
			     key_file_arg(key_file, key, sizeof(key)) < 0
		     ? 1
		     : checkpoint_run(&o, profile);
	urs_state_clear(&st);
	ckpt_trace("cli: checkpoint done");
	return rc;
}
