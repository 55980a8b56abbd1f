/*
 * ckpt/run.h — a running or paused container's checkpoint, from its lock
 * to the last cleanup: the record locked and found running, the key, the
 * cgroup and its freezer, a paused container's pause moved to the v2
 * freezer, the image made (ckpt_container_checkpoint), committed, and the
 * container let go (--leave-running) or killed and removed. What belongs
 * to the layers above comes through callbacks: the supervisor's part (its
 * state, its guard; actors/ckpt_sup.c), an object store's (cmd/remote.c),
 * removing the container. `ursa checkpoint` (cmd/checkpoint.c) is its flag
 * parsing around ckpt_run_checkpoint().
 */
#ifndef URSA_CKPT_RUN_H
#define URSA_CKPT_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "host/state.h"
#include "runtime/err.h"

/* The sandbox's supervisor, asked over its control socket (@sdir: the
 * container's state directory). */
struct ckpt_run_sup {
	/* return once a just-started init has exec'd its process */
	void (*exec_wait)(void *ctx, const char *sdir);
	/* an fd held until the end: the supervisor thaws the v2 freezer when
	 * it closes (killed or not); or -1 */
	int (*guard)(void *ctx, const char *sdir);
	/* ask for its own state into DIR/supervisor.img, sealed with the key
	 * of @key_file; answered while the caller goes on */
	int (*ask)(void *ctx, const char *sdir, const char *dir, const char *key_file,
		   struct urs_err *err);
	/* its answer (0 at once if there is none to wait for) */
	int (*wait)(void *ctx, struct urs_err *err);
	/* no image: its answer dropped, DIR/supervisor.img removed */
	void (*forget)(void *ctx, const char *dir);
};

/* Where the image goes when it is not a local directory: an object store. */
struct ckpt_run_store {
	/* the directory the small files go to, and the pipe for the page data */
	int (*start)(void *ctx, char *dir, size_t len, int *pages_fd, struct urs_err *err);
	/* the image committed once the dump is sealed */
	int (*commit)(void *ctx, struct urs_err *err);
	/* the page data streamed so far (@len bytes) made an object of its
	 * own, completed before returning (a migration's pre-copy: the freeze
	 * then uploads only what it adds); NULL: not supported */
	int (*cut)(void *ctx, uint64_t len, struct urs_err *err);
	/* why the page data's pipe broke (the store's own error) */
	int (*why)(void *ctx, struct urs_err *err);
	/* the store let go: what it wrote removed unless committed */
	void (*end)(void *ctx);
};

struct ckpt_run_opts {
	const char *root;     /* the state root */
	struct urs_state *st; /* the container's record */
	const char *image;    /* the image's location as given (made, or the store's) */
	const char *work;     /* a directory for dump.log, or NULL */
	const char *key_file; /* the key sealing the image, absolute */
	bool leave, precopy;  /* --leave-running, --pre-copy */
	const struct ckpt_run_sup *sup;
	void *sup_ctx;
	const struct ckpt_run_store *store; /* NULL: @image is a local directory */
	void *store_ctx;
	/* the container killed by the checkpoint removed (its record, cgroup);
	 * it need not wait for its tasks' exit (cmd: urs_container_remove_killed) */
	int (*remove)(const struct urs_state *st, struct urs_err *err);
	/* ckpt_container_ckpt.seccomp_replace, called with @st */
	int (*seccomp_replace)(void *ctx, const uint64_t *insns, uint32_t len,
			       const uint64_t **out);
};

/**
 * ckpt_run_checkpoint() - checkpoint a container, from the lock to the end
 * @o: the container, the image, the callbacks
 * @err: the message for the user ("checkpoint ID: ...")
 *
 * A refusal or failure before the image is complete leaves the container
 * as it was (running, or paused) and no image. Every signal but SIGKILL is
 * blocked from the first freeze to the last cleanup.
 *
 * Return: 0, or a negative errno with @err set.
 */
int ckpt_run_checkpoint(const struct ckpt_run_opts *o, struct urs_err *err);

/**
 * ckpt_worklog() - a line in --work-path/NAME (containerd shows these logs
 *                  on failure); best effort
 * @work: the directory, or NULL (nothing written)
 * @name: dump.log, restore.log
 * @fmt: printf format of the line (its newline added)
 */
void ckpt_worklog(const char *work, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
