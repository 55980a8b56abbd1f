/*
 * actors/checkpointer.h — the supervisor's checkpointer actor and its state
 * file (docs/checkpoint.md, "The supervisor's state").
 *
 * At `ursa checkpoint` the CLI asks the supervisor over ctl.sock
 * ("checkpoint DIR"); the control actor hands the request to the
 * checkpointer, which gathers what the supervisor itself holds — the
 * configuration it runs with, its metric values, the netstack's neighbor
 * cache, flow summary and counters, the gofer volumes' state
 * (actors/gofer/state.c) — maps it onto the schema actors/supstate.ursc, encodes it with
 * state/ and seals it as a statefile (HMAC-SHA256 chain keyed by the host's
 * checkpoint key), and writes DIR/supervisor.img through the runtime's
 * batched io_uring writer (temporary file, then rename: a complete file or
 * none). The reply goes back when the file is in place.
 *
 * At `ursa restore` the new supervisor reads and verifies that file before
 * it creates anything (a tampered, truncated or foreign file is refused,
 * naming why), and applies it before READY: metric counters continue from
 * the saved values, the neighbor cache is refilled, the engine's counters
 * continue.
 *
 * The key: the file `ursa checkpoint` names in its request (the host's,
 * ckpt/key.h, or its --key-file), which the CLI made if it was missing; a
 * request without one (an older CLI) means the host's. A state file made under another key is
 * foreign and refused.
 */
#ifndef URSA_ACTORS_CHECKPOINTER_H
#define URSA_ACTORS_CHECKPOINTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/err.h"
#include "runtime/actor.h"
#include "ckpt/key.h"
#include "runtime/loop.h"
#include "runtime/writer.h"

#define URS_SUPSTATE_FILE    "supervisor.img"
#define URS_SUPSTATE_KIND    "ursa-supervisor-state"
#define URS_SUPSTATE_VERSION 1
#define URS_CKPT_KEY_LEN     CKPT_KEY_LEN
#define URS_SUPSTATE_MAX     (64u << 20) /* a larger file is refused unread */

struct sst_root;
struct urs_net;
struct urs_netopts;
struct urs_sc_count;

/* The checkpoint key in @file, or the host's when NULL (ckpt/key.h). */
static inline int urs_ckpt_key(const char *file, bool create, uint8_t key[URS_CKPT_KEY_LEN],
			       struct urs_err *err)
{
	return file ? ckpt_key_file(file, create, key, err) : ckpt_key(create, key, err);
}

/* Encode @st and seal it: a malloc'd statefile in *@out. */
int urs_supstate_seal(const struct sst_root *st, const uint8_t *key, size_t keylen, uint8_t **out,
		      size_t *len, struct urs_err *err);

/* A verified, decoded state file. */
struct urs_supstate {
	void *dec; /* struct urs_st_dec: owns every decoded object */
	struct sst_root *root;
};

/* Verify and decode a statefile held in memory. Nothing is applied.
 * -EBADMSG (tampered, truncated, foreign key, not a supervisor state) with
 * @err saying why. */
int urs_supstate_open(const uint8_t *buf, size_t len, const uint8_t *key, size_t keylen,
		      struct urs_supstate *out, struct urs_err *err);
/* DIR/supervisor.img: checked like the image (owned by us, writable by
 * nobody else), read, verified, decoded. -ENOENT when there is none. */
int urs_supstate_read(const char *dir, const uint8_t *key, size_t keylen, struct urs_supstate *out,
		      struct urs_err *err);
/* Metric values: call after urs_sup_metrics_init(). Counters continue. */
int urs_supstate_apply_metrics(const struct urs_supstate *s, struct urs_err *err);
/* Netstack: neighbors refilled, counters continued (no-op if @net NULL). */
int urs_supstate_apply_net(const struct urs_supstate *s, struct urs_net *net, struct urs_err *err);
void urs_supstate_free(struct urs_supstate *s);

/* ---- the actor ---- */

/* What the checkpointer reads from the supervisor, owned by it. */
struct urs_ckpt_src {
	const char *id, *bundle;
	const char *state_dir; /* ROOT/ID: its config.json, and ROOT for the key */
	const struct urs_netopts *net;
	struct urs_net *(*engine)(void *ctx); /* the netstack's engine now, or NULL */
	void *engine_ctx;
	const struct urs_loop *loop;
	/* gofer volumes (docs/gofer.md "Checkpoint and restore"): URS_GOFER_MAX
	 * slots each, NULL = none; the init's pid for their FUSE devices */
	struct urs_gofer *const *gofers;
	/* the thread they run on (actors/gofer/thread.h): read under its lock */
	struct urs_gofer_thread *const *gofer_thread;
	const char *const *gofer_dest, *const *gofer_src;
	int init_pid;
	/* its counted seccomp denials (actors/sc_count.h), NULL: the process's */
	const struct urs_sc_count *sc;
};

/* res: 0 or a negative errno; msg: why (empty on success). */
typedef void (*urs_ckpt_done_cb)(void *ctx, int res, const char *msg);

struct urs_ckpt_req {
	char dir[4096];
	char key_file[4096]; /* the key (`ursa checkpoint --key-file`), or "": the host's */
	urs_ckpt_done_cb done;
	void *ctx;
};

struct urs_checkpointer {
	struct urs_actor actor;
	const struct urs_ckpt_src *src;
	struct urs_writer w;
	struct urs_wchunk chunk;
	struct urs_ckpt_req *req; /* the one being written, or NULL */
	uint8_t *buf;
	size_t len;
	int dirfd, fd;
	char tmp[64];
	uint64_t saves;
};

void urs_checkpointer_init(struct urs_checkpointer *c, struct urs_loop *loop,
			   const struct urs_ckpt_src *src);
/* Ask for DIR/supervisor.img (@req stays valid until its done callback,
 * which runs on the loop, never from inside this call). One at a time:
 * -EBUSY while a save runs; -ENOMEM when no message can be had. */
int urs_checkpointer_save(struct urs_checkpointer *c, struct urs_ckpt_req *req);
/* true while a save is in flight (its buffers and fds are ours). */
bool urs_checkpointer_busy(const struct urs_checkpointer *c);

#endif
