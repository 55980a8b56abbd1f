/*
 * ckpt/container.c — a whole container into an image and back (the library
 * API of ckpt/container.h): the dump with the files that go with it, the
 * image loaded back and sealed before anything is killed; on the way back,
 * every check made before anything is created.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/container.h"
#include "ckpt/image.h"
#include "ckpt/key.h"
#include "ckpt/layer.h"
#include "ckpt/manifest.h"
#include "ckpt/seal.h"
#include "ckpt/tmpfs.h"
#include "ckpt/trace.h"
#include "host/cgroup.h"
#include "runtime/common.h"
#include "runtime/io.h"

/* DIR/container/{state.json,config.json}: the record under the fixed id */
static int save_record(const struct ckpt_container_ckpt *o, struct urs_err *err)
{
	struct urs_state copy = *o->record;
	snprintf(copy.id, sizeof(copy.id), "%s", CKPT_REC_ID);
	urs_state_remove(o->dir, CKPT_REC_ID); /* an older image's */
	int r = urs_state_dir_create(o->dir, CKPT_REC_ID, err);
	if (r < 0)
		return r;
	if ((r = urs_state_write(o->dir, &copy, err)) < 0)
		return r;
	char cfg[4096];
	urs_state_path(cfg, sizeof(cfg), o->state_root, o->record->id, "config.json");
	if ((r = urs_state_save_config(o->dir, CKPT_REC_ID, cfg)) < 0)
		return urs_err_set(err, r, "checkpoint: copying %s: %s", cfg, strerror(-r));
	return 0;
}

static void unlink_in(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

/* before the image is sealed: it must load back as a restore loads it (or
 * the workload, killed next, would be lost); then the manifest commits it */
static int seal_image(const struct ckpt_container_ckpt *o, struct urs_err *err)
{
	struct urs_err e2 = {{0}};
	struct ckpt_seal seal;
	memcpy(seal.key, o->key, sizeof(seal.key));
	int r = ckpt_image_check_core(o->dir, &seal, &e2);
	if (r < 0)
		urs_err_set(err, r, "the image does not load back (%s)", e2.msg);
	ckpt_trace("ckpt: image loaded back");
	if (r == 0)
		r = ckpt_manifest_write(o->dir, &seal, err);
	explicit_bzero(&seal, sizeof(seal));
	return r;
}

/* what goes with the tree, the tasks still frozen: the writable layer of a
 * registered `ursa do` sandbox, the tmpfs contents */
static int save_files(const struct ckpt_container_ckpt *o, struct urs_err *err)
{
	const struct urs_state *st = o->record;
	int r = 0;
	if (ckpt_layer_of(o->state_root, st->id, st->bundle))
		r = o->freezer ? ckpt_layer_save(o->state_root, st->id, st->pid, o->dir, NULL, err)
			       : urs_err_set(err, -ENOTSUP,
					     "its writable layer cannot be saved consistently "
					     "without the cgroup v2 freezer (the sandbox runs on "
					     "while it is read)");
	if (r == 0 && (r = ckpt_tmpfs_save(st->pid, o->dir, o->freezer != NULL, err)) > 0)
		r = 0;
	ckpt_trace("ckpt: tmpfs contents saved");
	return r;
}

int ckpt_container_checkpoint(const struct ckpt_container_ckpt *o, struct ckpt_dump_stats *stats,
			      struct urs_err *err)
{
	/* an older image's files that this one may not write */
	static const char *const stale[] = {CKPT_MANIFEST, "layer.img", "layer.dev"};
	for (size_t k = 0; k < URS_ARRAY_SIZE(stale); k++)
		unlink_in(o->dir, stale[k]);
	struct ckpt_dump_opts dopts = {.freezer = o->freezer,
				       .outside = urs_state_sup_live(o->record),
				       .seccomp_replace = o->seccomp_replace,
				       .seccomp_ctx = o->seccomp_ctx,
				       .stdio_dev = o->record->stdio_dev,
				       .stdio_ino = o->record->stdio_ino,
				       .key = o->key,
				       .pages_stream = o->pages_stream,
				       .pages_fd = o->pages_fd,
				       .precopy = o->precopy,
				       .pages_cut = o->pages_cut,
				       .cut_ctx = o->cut_ctx,
				       .tracking = o->tracking};
	int r = ckpt_dump(o->record->pid, o->dir, &dopts, stats, err);
	ckpt_trace("ckpt: dumped");
	bool dumped = r == 0;
	if (r == 0)
		r = save_files(o, err);
	if (r == 0 && o->thaw_early && !o->paused && o->freezer &&
	    (r = urs_cg2_freeze(o->freezer, false, err)) == 0) {
		stats->thawed_at = urs_now_ms();
		ckpt_trace("ckpt: thawed");
	}
	if (o->sup_wait) {
		struct urs_err e2 = {{0}};
		int rs = o->sup_wait(o->sup_ctx, &e2);
		if (rs < 0 && r == 0) {
			r = rs;
			*err = e2;
		}
	}
	if (r == 0)
		r = save_record(o, err);
	if (r == 0)
		r = seal_image(o, err);
	if (r < 0 && dumped) {
		/* no core.img: not an image (the dumper removes its own files
		 * when it fails) */
		static const char *const files[] = {"core.img", "pages.img", "layer.img",
						    "layer.dev", CKPT_MANIFEST};
		for (size_t k = 0; k < URS_ARRAY_SIZE(files); k++)
			unlink_in(o->dir, files[k]);
		ckpt_tmpfs_forget(o->dir);
	}
	if (r < 0 && o->freezer && !o->paused)
		urs_cg2_freeze(o->freezer, false, NULL); /* a refusal leaves it as it was */
	return r;
}

/* whoever can write the image decides what the sandbox runs: only its owner may */
static int image_owned(const char *dir, struct urs_err *err)
{
	static const char *const parts[] = {"", "/core.img", "/pages.img"};
	for (size_t k = 0; k < URS_ARRAY_SIZE(parts); k++) {
		char path[PATH_MAX + 16];
		struct stat sb;
		snprintf(path, sizeof(path), "%s%s", dir, parts[k]);
		if (stat(path, &sb) < 0)
			return urs_err_set(err, -errno, "restore: %s: %m", path);
		if (sb.st_uid != geteuid() || (sb.st_mode & 022))
			return urs_err_set(err, -EPERM,
					   "restore: %s must be owned by us and writable by nobody "
					   "else (an image decides what the sandbox runs)",
					   path);
	}
	return 0;
}

/* a tampered core (registers, fds, credentials) or any other file of the
 * image is refused before anything is made; the supervisor checks the core
 * again with every page chunk when it loads the image */
static int image_authentic(const char *dir, struct urs_err *err)
{
	struct ckpt_seal seal;
	int r = ckpt_key(false, seal.key, err);
	if (r == 0)
		r = ckpt_image_check_core(dir, &seal, err);
	if (r == 0)
		r = ckpt_manifest_check(dir, &seal, err);
	explicit_bzero(&seal, sizeof(seal));
	return r < 0 ? urs_err_wrap(err, r, "restore") : 0;
}

int ckpt_container_image_open(const char *path, const char *root, const char *id, bool want_layer,
			      struct ckpt_container_image *img, struct urs_err *err)
{
	memset(img, 0, sizeof(*img));
	img->root = root;
	img->id = id;
	char core[PATH_MAX + 16];
	struct stat sb;
	if (!realpath(path, img->dir) ||
	    (snprintf(core, sizeof(core), "%s/core.img", img->dir), stat(core, &sb) < 0))
		return urs_err_set(err, -ENOENT,
				   "restore: %s is not a checkpoint image (no core.img)", path);
	int r = image_owned(img->dir, err);
	if (r == 0)
		r = image_authentic(img->dir, err);
	if (r < 0)
		return r;
	img->have_rec = urs_state_read(img->dir, CKPT_REC_ID, &img->rec, NULL) == 0;
	/* a registered `ursa do` sandbox (ckpt/layer.c): the bundle is the
	 * writable layer the image carries, unpacked on a fresh tmpfs */
	if (want_layer && ckpt_layer_in_image(img->dir) &&
	    (r = ckpt_layer_load(root, id, img->dir, img->layer, sizeof(img->layer), err)) < 0) {
		urs_state_clear(&img->rec);
		img->have_rec = false;
		return r;
	}
	return 0;
}

void ckpt_container_image_close(struct ckpt_container_image *img, bool failed)
{
	if (failed && img->layer[0])
		ckpt_layer_remove(img->root, img->id, NULL);
	img->layer[0] = 0;
	urs_state_clear(&img->rec);
	img->have_rec = false;
}
