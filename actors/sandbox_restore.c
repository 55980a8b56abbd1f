/*
 * actors/sandbox_restore.c — a sandbox made from a checkpoint image
 * (actors/sandbox_restore.h): its init, instead of exec'ing the process,
 * stops once the root is built and the supervisor turns it into the
 * checkpointed process tree (ckpt_restore_ex with the init as the puppet,
 * actors/sup_boot.c). So the restored sandbox is an ordinary one: its init
 * is the pid-file process, and state, kill, delete work on it. The image is
 * untrusted: its credentials, no_new_privs and seccomp filter are checked
 * against config.json first.
 */
#include "actors/sandbox_restore.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "ckpt/container.h"
#include "ckpt/restore.h"
#include "ckpt/trace.h"
#include "host/seccomp.h"

/* the sandbox's options: the bundle's, with the image's tree as its
 * init's, checked against the policy config.json gives */
static int restore_opts(struct urs_create_args *c, const char *dir, const char *layer,
			struct urs_sandbox_opts *o, struct ckpt_policy *pol, struct urs_err *err)
{
	/* counted seccomp denials need a notify listener, which an image cannot
	 * carry: the image holds the plain filter (cmd/ckpt_seccomp.c), compile
	 * that */
	c->plain_seccomp = true;
	int r = urs_bundle_prepare(c, o, err);
	if (r == 0)
		r = ckpt_policy_from_spec(c->spec, c->filter != NULL, c->bpf.prog.filter,
					  c->bpf.prog.len, pol, err);
	if (r < 0)
		return r;
	if (*layer) {
		o->overlay_scratch = layer;
		o->overlay_prepared = true;
		/* `ursa do` loads Docker's default filter (not in its config) */
		pol->bpf = (const uint64_t *) (const void *) urs_default_bpf;
		pol->bpf_len = urs_default_bpf_len;
	}
	if (c->spec->process && c->spec->process->terminal && !c->console_socket)
		return urs_err_set(err, -EINVAL,
				   "restore: process.terminal needs --console-socket (the pty "
				   "replaces the checkpointed stdio)");
	o->autostart = true; /* restored processes run at once */
	o->seccomp = NULL;   /* the image brings its filters (checked by the policy) */
	o->seccomp_notify = false;
	o->seccomp_count = NULL;
	o->restore_dir = dir;
	o->restore_policy = pol;
	o->restore_lazy = c->lazy_pages;
	o->restore_remote = c->lazy_pages && c->lazy_remote;
	o->restore_unshared = c->lazy_pages && c->lazy_unshared;
	o->restore_src = c->lazy_src;
	return 0;
}

int urs_sandbox_restore(struct urs_create_args *c, const char *image, pid_t *sup,
			struct urs_state *st, struct urs_err *err)
{
	struct ckpt_container_image img;
	int r = ckpt_container_image_open(image, c->root, c->id, !c->bundle, &img, err);
	if (r < 0)
		return r;
	if (*img.layer)
		c->bundle = img.layer;
	if (!c->bundle && access("config.json", F_OK) < 0 && img.have_rec)
		c->bundle = img.rec.bundle;
	struct urs_sandbox_opts o;
	struct ckpt_policy pol;
	if ((r = restore_opts(c, img.dir, img.layer, &o, &pol, err)) == 0) {
		ckpt_trace("cli: bundle prepared");
		r = urs_sandbox_create(&o, sup, st, err);
	}
	c->bundle = c->bundle_abs; /* not img's, which goes now */
	ckpt_container_image_close(&img, r < 0);
	return r;
}
