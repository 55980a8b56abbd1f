/*
 * cmd/remote.h — `--image-path s3://BUCKET/PREFIX` for checkpoint and
 * restore: the CLI's side of ursa-store (cmd/store_main.c). A checkpoint
 * dumps into a stage directory under the state root that gets only the
 * image's small files; the page data goes through a pipe to ursa-store,
 * which seals and uploads it as it comes. A restore has ursa-store fetch
 * the image into a stage directory and restores from that. Settings: the
 * AWS variables or /etc/ursa/s3.conf (docs/storage.md); the profile by
 * --s3-profile, or the environment's AWS_PROFILE.
 */
#ifndef URSA_CMD_REMOTE_H
#define URSA_CMD_REMOTE_H

#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

#include "ckpt/run.h"
#include "runtime/err.h"

struct urs_remote_job {
	pid_t pid;	      /* ursa-store */
	int pages_fd;	      /* the pipe's write end: the dumper's page data */
	int ctl_fd, reply_fd; /* its stdin, its stdout */
	char stage[PATH_MAX]; /* the stage directory (the dumper's image dir) */
};

/* is @path an object storage location? */
static inline bool urs_is_remote(const char *path)
{
	return path && !strncmp(path, "s3://", 5);
}

/**
 * urs_remote_put_start() - a stage directory and ursa-store ready for the
 *                          page data
 * @url: s3://BUCKET/PREFIX
 * @root: the state root (stage directory, key)
 * @profile: the settings' profile, or NULL
 * @key_file: the key that seals it, or NULL (the host's: ckpt_key_path())
 * @j: filled
 * @err: what failed
 *
 * Return: 0 or a negative errno (nothing left then).
 */
int urs_remote_put_start(const char *url, const char *root, const char *profile,
			 const char *key_file, struct urs_remote_job *j, struct urs_err *err);

/**
 * urs_remote_put_commit() - the dump is sealed: the rest of the image up,
 *                           the index last
 * @j: the job (pages_fd still open: closed here)
 * @err: what failed
 *
 * Return: 0 once the image exists in the store, or a negative errno (then
 * nothing of it is left there).
 */
int urs_remote_put_commit(struct urs_remote_job *j, struct urs_err *err);

/**
 * urs_remote_put_cut() - make the page data streamed since the last cut an
 *                        object of its own, completed (ursa-store's "cut N")
 * @j: the job
 * @len: the bytes written to its page pipe so far, all read by it (the
 *       pipe drained), a whole number of MiB
 * @err: ursa-store's error
 *
 * Return: 0 once the object is complete, or a negative errno.
 */
int urs_remote_put_cut(struct urs_remote_job *j, uint64_t len, struct urs_err *err);

/**
 * urs_remote_put_why() - why the page data's pipe broke: ursa-store's own
 *                        error (a refused upload, bad credentials)
 * @j: the job (pages_fd closed here)
 * @err: ursa-store's message
 *
 * Call it only once the pipe broke (EPIPE): ursa-store has stopped reading,
 * so its reply comes at once.
 *
 * Return: a negative errno with @err set, or 0 if ursa-store says it is fine.
 */
int urs_remote_put_why(struct urs_remote_job *j, struct urs_err *err);

/**
 * urs_remote_job_end() - ursa-store waited for (told to remove what it
 *                        wrote unless it committed), the stage removed
 * @j: the job
 */
void urs_remote_job_end(struct urs_remote_job *j);

/**
 * urs_remote_fetch() - the image from object storage into a stage directory
 * @url: s3://BUCKET/PREFIX
 * @root: the state root
 * @profile: the settings' profile, or NULL
 * @stage: filled with the directory (remove with urs_remote_rm_stage)
 * @len: its size
 * @serve: NULL: everything fetched, ursa-store gone; else the page data is
 *         left out (pages.img sparse past its header page) and *@serve gets
 *         a stream socket to an ursa-store that fetches it chunk by chunk
 *         (store/remote.h urs_remote_serve) for a lazy restore's pager
 *         (ckpt/lazy.h); it runs detached until that socket closes
 * @err: what failed (ursa-store's message)
 *
 * Return: 0 or a negative errno (no stage, no ursa-store left then).
 */
int urs_remote_fetch(const char *url, const char *root, const char *profile, char *stage,
		     size_t len, int *serve, struct urs_err *err);

/**
 * urs_remote_rm_stage() - remove a stage directory and what it holds
 * @stage: the directory ("" : nothing)
 */
void urs_remote_rm_stage(const char *stage);

/* A checkpoint's image going to object storage: ckpt_run_opts.store. */
struct urs_remote_ckpt {
	const char *url, *root, *profile, *key_file; /* as for urs_remote_put_start */
	struct urs_remote_job job;
};
extern const struct ckpt_run_store urs_remote_ckpt_ops;

#endif
