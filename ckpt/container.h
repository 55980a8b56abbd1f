/*
 * ckpt/container.h — checkpoint and restore of a whole container, the
 * library API the CLI (cmd/checkpoint.c, cmd/restore.c) calls and the
 * containerd shim will: everything between "the container is found and
 * locked" and "the sandbox is created from the image", with the parts
 * that belong to the layers above (the supervisor's own state, creating
 * the sandbox) left to the caller through the options.
 *
 * An image is a directory (docs/checkpoint.md, "Image layout"): core.img
 * and pages.img (the process tree, ckpt/dump.h), the container's record and
 * config.json (DIR/container/), the supervisor's state (supervisor.img), an
 * `ursa do` sandbox's writable layer (layer.img, ckpt/layer.h), tmpfs
 * contents (ckpt/tmpfs.h), and manifest.img, written last (ckpt/manifest.h).
 */
#ifndef URSA_CKPT_CONTAINER_H
#define URSA_CKPT_CONTAINER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ckpt/dump.h"
#include "runtime/err.h"
#include "host/state.h"

/* the image's copy of the container's record and config.json: DIR/container/ */
#define CKPT_REC_ID "container"

struct ckpt_container_ckpt {
	const char *dir;		/* the image directory: exists, absolute */
	const char *state_root;		/* ROOT, where the container's record lives */
	const struct urs_state *record; /* the container's record (its init: record->pid) */
	const char *freezer;		/* its cgroup v2 directory, or NULL (ptrace stops it) */
	const uint8_t *key;		/* the host's checkpoint key (ckpt/key.h) */
	/* ckpt_dump_opts.seccomp_replace / seccomp_ctx */
	int (*seccomp_replace)(void *ctx, const uint64_t *insns, uint32_t len,
			       const uint64_t **out);
	void *seccomp_ctx;
	/* The supervisor's own state (DIR/supervisor.img), written by the
	 * supervisor while the tree is dumped: waited for after the dump and
	 * before the image is sealed. NULL: the caller has waited already (a
	 * supervisor inside the freezer's cgroup must write before the freeze). */
	int (*sup_wait)(void *ctx, struct urs_err *err);
	void *sup_ctx;
	/* the page data to a pipe instead of DIR/pages.img (ckpt_dump_opts):
	 * an image streamed to object storage; the caller closes the pipe */
	bool pages_stream;
	int pages_fd;
	/* copy memory before the freeze (ckpt_dump_opts.precopy), and cut
	 * the streamed page data after it (ckpt_dump_opts.pages_cut) */
	bool precopy;
	int (*pages_cut)(void *ctx, uint64_t len, struct urs_err *err);
	void *cut_ctx;
	/* thaw the freezer's cgroup as soon as the image holds all it needs
	 * (the tree dumped, its files saved), before the record is saved and
	 * the image synced and sealed: --leave-running. stats->thawed_at says
	 * when. */
	bool thaw_early;
	/* a paused container: its freezer's cgroup stays frozen whatever
	 * happens (thaw_early ignored, a failure leaves it frozen too); the
	 * caller keeps it paused */
	bool paused;
	/* ckpt_dump_opts.tracking: the pre-copy's write tracking, left for
	 * the caller to end once the sandbox runs or is killed (or NULL) */
	struct ckpt_precopy **tracking;
};

/**
 * ckpt_container_checkpoint() - dump a running container into an image
 * @o: what to dump and where
 * @stats: the dump's measurements
 * @err: what failed, naming the pid or the file
 *
 * Dumps the init's process tree (the freezer's cgroup frozen, or the tasks
 * stopped with ptrace), then, still frozen, the writable layer of a
 * registered `ursa do` sandbox and the tmpfs contents; waits for the
 * supervisor's state, saves the record, loads the image back as a restore
 * would, and seals it with its manifest. The tasks stay frozen when this
 * returns 0 (the caller thaws them, --leave-running, or kills them). On an
 * error no image is left (no manifest, no core.img) and the cgroup is
 * thawed: the container runs on as before.
 *
 * Return: 0 or a negative errno.
 */
int ckpt_container_checkpoint(const struct ckpt_container_ckpt *o, struct ckpt_dump_stats *stats,
			      struct urs_err *err);

/* An image checked and ready to restore from (ckpt_container_image_open). */
struct ckpt_container_image {
	char dir[PATH_MAX];    /* the image directory, resolved */
	struct urs_state rec;  /* the container's record at checkpoint time */
	bool have_rec;	       /* rec is set (an image of `ursa checkpoint`) */
	char layer[PATH_MAX];  /* an `ursa do` sandbox's layer, unpacked: the bundle */
	const char *root, *id; /* (for the layer's removal) */
};

/**
 * ckpt_container_image_open() - check an image and prepare what the
 *                               sandbox is made from
 * @path: the image directory as given
 * @root: the state root (its key authenticates the image)
 * @id: the container's id
 * @want_layer: unpack the image's writable layer (if it has one) as the
 *              bundle: an `ursa do` sandbox restored without --bundle
 * @img: filled (release with ckpt_container_image_close)
 * @err: what is wrong, naming the file
 *
 * Refuses, before anything is made: a directory or core/pages file others
 * could write, a core that fails authentication, an image whose manifest is
 * missing or does not match its files.
 *
 * Return: 0 or a negative errno (nothing to release then).
 */
int ckpt_container_image_open(const char *path, const char *root, const char *id, bool want_layer,
			      struct ckpt_container_image *img, struct urs_err *err);

/**
 * ckpt_container_image_close() - release what image_open made
 * @img: an opened image
 * @failed: the restore failed: the unpacked layer is removed too
 */
void ckpt_container_image_close(struct ckpt_container_image *img, bool failed);

#endif
