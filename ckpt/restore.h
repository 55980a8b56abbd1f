/*
 * ckpt/restore.h — restore a checkpoint image (ckpt/image.h) as a
 * new process tree. The image is loaded and fully validated first (nothing is
 * created if it is corrupted, truncated, foreign, or names files that changed);
 * then the root is cloned as a "puppet" (in a new pid namespace when its pid
 * was 1, else with the same pid through clone3 set_tid), children are cloned
 * from their parent's puppet with their pids, and each puppet's address
 * space, fds and kernel state are rebuilt by ptrace-injected syscalls before
 * its saved registers and FPU state are set and it is let go.
 * The restore sequence is documented in docs/checkpoint.md.
 */
#ifndef URSA_CKPT_RESTORE_H
#define URSA_CKPT_RESTORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ckpt/seal.h"
#include "runtime/err.h"

/* The bundle annotation that is `ursa restore --lazy-pages` for clients
 * that pass no flag of ours ("true"/"false"; docs/checkpoint.md) */
#define CKPT_ANN_LAZY "run.ursa.restore.lazy-pages"

struct ckpt_restore_stats {
	uint32_t ntasks;
	uint64_t pages;	 /* written */
	uint64_t shared; /* left shared with a forked parent (ckpt/cowplan.h) */
	double load_ms;	 /* read + verify the image */
	double ms;	 /* total, load included, until every task runs */
};

struct ckpt_image;

/* What a restored sandbox may be: the image is checked against the
 * configuration before anything is created (its credentials and filters);
 * authentic (ckpt/seal.h) means made on a host with the key, not harmless. */
struct ckpt_policy {
	uint64_t cap_bnd;      /* every capability set of every task within this */
	bool need_nnp;	       /* every task must have no_new_privs */
	bool pin_uid, pin_gid; /* every uid (gid) must be uid (gid) */
	uint32_t uid, gid;
	const uint64_t *bpf; /* every task's oldest seccomp filter must be this */
	uint32_t bpf_len;    /* instructions; 0: no filter required */
	/* hard limits no task may exceed (the restorer sets them from outside,
	 * with its own privilege); index = RLIMIT_*; 0 entries: no check */
	uint64_t rlim_max[16];
	uint32_t n_rlim;
};

struct urs_spec;

/**
 * ckpt_policy_from_spec() - the policy of the sandbox config.json describes
 * @spec: the bundle's config
 * @notify: its seccomp profile has SCMP_ACT_NOTIFY (refused: its listener
 *          cannot be checkpointed)
 * @bpf: the compiled seccomp filter every task's oldest must be, or NULL
 * @bpf_len: its instructions (0: none)
 * @p: filled
 * @err: why it cannot be restored into (a user namespace, a notify profile)
 *
 * Return: 0, or -ENOTSUP with @err set.
 */
int ckpt_policy_from_spec(const struct urs_spec *spec, bool notify, const void *bpf,
			  uint32_t bpf_len, struct ckpt_policy *p, struct urs_err *err);

/**
 * ckpt_image_check_policy() - may this image become the configured sandbox?
 * @img: a loaded image
 * @p: the policy
 * @err: names the task and what exceeds the policy
 *
 * Checks every live task's capability sets, no_new_privs, uids and gids,
 * hard resource limits, oldest seccomp filter, and sockets bound below
 * port 1024 (they need CAP_NET_BIND_SERVICE in the bounding set).
 *
 * Return: 0, or -EPERM with the task and what exceeds the policy.
 */
int ckpt_image_check_policy(const struct ckpt_image *img, const struct ckpt_policy *p,
			    struct urs_err *err);

struct ckpt_dev_map {
	uint64_t from, to;
	bool any_ino; /* the restore re-created its files (new inode numbers) */
};

struct ckpt_restore_opts {
	const struct ckpt_policy *policy; /* checked right after loading, or NULL */
	/* > 0: an existing process becomes the root task instead of a new clone
	 * — the sandbox's init, a child of the caller, already inside the
	 * sandbox's namespaces, cgroup and root, and blocked in a system call.
	 * It must be single-threaded, have every signal handler at SIG_DFL and
	 * no alternate signal stack, and hold the capabilities the restore
	 * needs (CAP_SYS_RESOURCE for PR_SET_MM, CAP_SETUID/SETGID, ...).
	 * Its pid in its own pid namespace must be the image root's. Paths are
	 * then checked inside its root (never outside it), and the restored
	 * tasks are made dumpable again (it was not, as an unexec'd init). */
	pid_t puppet;
	/* Devices renumbered since the checkpoint: a file (fd or mapping)
	 * saved on dev_map[k].from is accepted on dev_map[k].to, inode (and
	 * size) still checked. The supervisor maps each gofer volume's old
	 * FUSE mount to its new one (a new connection is a new anonymous
	 * device; docs/gofer.md "Checkpoint and restore"). */
	const struct ckpt_dev_map *dev_map;
	uint32_t n_dev_map;
	/* Called once, before the restorer writes data the kernel charges to
	 * the WRITER's memory cgroup (shared memory objects, filled with
	 * pwrite from here): the caller gets into the sandbox's memory cgroup
	 * then, if it is not there already (actors/sup_cgself.c on unified
	 * hosts). Failing fails the restore. NULL: nothing to do. */
	int (*before_charged)(void *ctx);
	void *charged_ctx;
	/* The host's checkpoint key (ckpt/key.h): the image must authenticate
	 * under it (ckpt/seal.h). Required. */
	const uint8_t *key;
	/* Lazy restore (ckpt/lazy.h): private anonymous memory is filled by a
	 * pager thread after the tasks run; *lazy_out gets it on success
	 * (ckpt_lazy_free when done with it). lazy_fail(lazy_ctx, why) is
	 * called from its thread if paging fails later. */
	bool lazy;
	/* each task gets its own copy of the memory it shared with its parent
	 * at the checkpoint (a fork's), as if it had written it: a lazy restore
	 * then writes none of it before the tree runs. Else a restored tree
	 * shares it again (ckpt/cowplan.h), and a lazy restore writes the
	 * shared pages into the parents before it clones their children. */
	bool unshared;
	bool lazy_hold; /* faults only until ckpt_lazy_go (ckpt_lazy_new's hold) */
	/* the page data comes from ursa-store on lazy_src: pages.img is the
	 * memfd it sends first (ckpt_lazy_pages_fd, read by ckpt_restore_ex
	 * before the image is loaded), zero until each chunk is asked for and
	 * in (ckpt_lazy_new's src; the caller keeps its fd) */
	bool lazy_remote;
	int lazy_src;
	struct ckpt_lazy **lazy_out;
	void (*lazy_fail)(void *ctx, const char *why);
	void *lazy_ctx;
};

/**
 * ckpt_restore_ex() - restore the image in @dir as a new process tree
 * @dir: the image directory
 * @opts: policy, puppet, device map, cgroup hook and key (required:
 *        without opts->key the restore is refused)
 * @pid: gets the root task's pid in the caller's pid namespace
 * @stats: filled with the restore's measurements (may be NULL)
 * @err: what failed, naming the task and the resource
 *
 * The root task becomes a child of the caller. Namespaces other than the
 * pid namespace, the root and mounts the paths refer to, cgroups and
 * seccomp are the caller's business (the puppet inherits the caller's).
 * Either way, an image fd of type CKPT_FD_EXT (stdio that was a pipe,
 * socket, tty or a file outside the root) takes the fd of the same number
 * the root puppet has (above 2: a copy of its fd `sub`): the caller's own
 * stdio for a clone, the puppet's for an existing process. Blocks until
 * every task runs. With opts->lazy_remote, the first message on
 * opts->lazy_src (the page data's memfd: ckpt_lazy_pages_fd) is read, and
 * waited for, before anything else. On failure every task made so far is
 * killed and reaped.
 *
 * Return: 0; -ENOKEY without a key; ckpt_image_load()'s errors for an
 * image that is damaged or not authentic; -EPERM from the policy; or the
 * negative errno of the step that failed.
 */
int ckpt_restore_ex(const char *dir, const struct ckpt_restore_opts *opts, pid_t *pid,
		    struct ckpt_restore_stats *stats, struct urs_err *err);

/**
 * ckpt_restore_first_chunks() - the chunks of page data a lazy restore of
 *                                @dir asks for before its tasks run
 * @dir: the image directory (its page data need not be there yet)
 * @pages_fd: its pages.img, open, or -1: @dir's (ckpt_image_load_ex)
 * @seal: the host's checkpoint key
 * @chunks: gets a new array (free() it), one byte per chunk of the image's
 *          page data: 2 for a chunk the restorer reads itself (it waits on
 *          those), 1 for one only of the working set, else 0
 * @n: gets its length (ckpt_seal_nchunks of the page data)
 * @err: what failed
 *
 * Those are the pieces read at once (shared memory, mappings that are not
 * lazy) and the working set the pager brings in first (the recorded one,
 * else the hot set): what ckpt_restore_ex() would ask for, known before it
 * runs, so that whoever serves the page data can fetch them meanwhile.
 *
 * Return: how many chunks are set, or a negative errno (an image that
 * does not load; then @chunks is NULL).
 */
long ckpt_restore_first_chunks(const char *dir, int pages_fd, const struct ckpt_seal *seal,
			       uint8_t **chunks, size_t *n, struct urs_err *err);

#endif
