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
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "actors/ckpt_sup.h"
#include "ckpt/key.h"
#include "ckpt/remote_ref.h"
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

/* The container's run.ursa.checkpoint.location (and run.ursa.s3-profile):
 * then a local --image-path DIR gets a reference (ckpt/remote_ref.h) and the
 * image goes to LOCATION/ID-RANDOM. 0 without it (or without a path, or for
 * an s3:// one, which says where itself); 1 with @url and @prof ("" for
 * none) set; -1 on an error, said. */
static int parked_at(const struct urs_state *st, const char *image, char url[CKPT_REF_LOC_MAX],
		     char prof[CKPT_REF_PROF_MAX])
{
	if (!st->annotations || !image || urs_is_remote(image))
		return 0;
	json_t *a = json_loads(st->annotations, 0, NULL);
	const char *loc = json_string_value(json_object_get(a, CKPT_ANN_LOCATION));
	const char *pr = json_string_value(json_object_get(a, CKPT_ANN_PROFILE));
	uint64_t rnd = 0;
	int r = loc ? -1 : 0;
	if (loc &&
	    (!urs_is_remote(loc) || !loc[5] || loc[5] == '/' ||
	     snprintf(url, CKPT_REF_LOC_MAX, "%s%s%s-%016" PRIx64, loc,
		      loc[strlen(loc) - 1] == '/' ? "" : "/", st->id, rnd) >= CKPT_REF_LOC_MAX))
		urs_error("checkpoint: annotation %s=%.200s: not an s3://BUCKET[/PREFIX] "
			  "location (or too long)",
			  CKPT_ANN_LOCATION, loc);
	else if (loc && snprintf(prof, CKPT_REF_PROF_MAX, "%s", pr ? pr : "") >= CKPT_REF_PROF_MAX)
		urs_error("checkpoint: annotation %s: too long", CKPT_ANN_PROFILE);
	else if (loc && getrandom(&rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
		urs_error("checkpoint: a name for the image: getrandom: %s", strerror(errno));
	else if (loc) /* the random part, in the place the zeros held */
		r = snprintf(url + strlen(url) - 16, 17, "%016" PRIx64, rnd) == 16;
	json_decref(a);
	return r;
}

/* checkpoint_run(), to where the container's annotations park it if they
 * do: the reference written first (so an image never exists unnamed),
 * made DIR's once the image is in, removed if it is not (DIR's earlier
 * reference stays) */
static int checkpoint_to(struct ckpt_run_opts *o, const char *profile)
{
	char url[CKPT_REF_LOC_MAX], prof[CKPT_REF_PROF_MAX];
	int p = parked_at(o->st, o->image, url, prof);
	if (p < 0)
		return 1;
	if (p == 0) { /* a local image: DIR's reference, if any, set aside meanwhile */
		bool local = o->image && !urs_is_remote(o->image);
		int aside = local ? ckpt_ref_aside(o->image) : 0;
		if (aside < 0) {
			urs_error("checkpoint: %s/" CKPT_REF_FILE ": %s", o->image,
				  strerror(-aside));
			return 1;
		}
		int rc = checkpoint_run(o, profile);
		int e = aside > 0 ? ckpt_ref_aside_end(o->image, rc == 0) : 0;
		if (e < 0 && rc == 0) /* the image is in all the same */
			urs_error("checkpoint: %s/" CKPT_REF_OLD
				  ", the reference the image replaces, "
				  "not removed: %s",
				  o->image, strerror(-e));
		else if (e < 0)
			urs_error("checkpoint: %s/" CKPT_REF_OLD " not put back as " CKPT_REF_FILE
				  ": %s (a restore from the directory will not follow it)",
				  o->image, strerror(-e));
		return rc;
	}
	const char *use = profile ? profile : *prof ? prof : NULL, *dir = o->image;
	struct urs_err err = {{0}};
	if (ckpt_ref_write(dir, url, use, &err) < 0) {
		urs_error("checkpoint: %s", err.msg);
		return 1;
	}
	o->image = url;
	int rc = checkpoint_run(o, use);
	if (rc)
		ckpt_ref_drop(dir);
	else if (ckpt_ref_commit(dir, &err) < 0) {
		urs_error("checkpoint: the image is at %s (named by %s/" CKPT_REF_NEW "), but %s",
			  url, dir, err.msg);
		rc = 1;
	}
	return rc;
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
		     : checkpoint_to(&o, profile);
	urs_state_clear(&st);
	ckpt_trace("cli: checkpoint done");
	return rc;
}
