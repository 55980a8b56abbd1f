/*
 * ckpt/dump.h — checkpoint (dump) of a process tree (multi-threaded
 * processes included) into an image directory (ckpt/image.h). The
 * caller is expected to have frozen the tasks (cgroup freezer) or stopped
 * them; the dumper seizes each task and each of its threads with ptrace,
 * reads its state from /proc and ptrace (injecting a few query syscalls),
 * writes pages.img and core.img, and detaches, leaving every
 * task exactly as it was (still frozen/stopped if it was). Pipes, FIFOs,
 * eventfds, epoll sets, unix socketpairs and TCP sockets are saved with
 * their buffered data, read without consuming it (docs/checkpoint.md, "File
 * descriptors"); shared memory objects once for the tree. On any refusal
 * (a thread with its own credentials or filters, io_uring, UDP socket,
 * deleted file, ...) nothing is left in the directory and the message names
 * the pid and the resource. Pipes, sockets, ttys and files outside the
 * task's root on fds 0-2 whose other end is not in the tree are recorded as
 * external stdio (CKPT_FD_EXT), which the restore replaces with its own;
 * so is a higher fd that is the file the tree was given as one of them
 * (opts->stdio_*), with which one in `sub`.
 */
#ifndef URSA_CKPT_DUMP_H
#define URSA_CKPT_DUMP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/err.h"

struct ckpt_precopy; /* ckpt/precopy.h */

struct ckpt_dump_stats {
	uint32_t ntasks;
	/* pages saved, each process's: their data written in the freeze,
	 * copied before it, or another process's copy of the same frame
	 * (ckpt/framemap.h) */
	uint64_t pages;
	uint64_t zero_pages; /* present but all-zero anonymous pages skipped */
	/* page data in pages.img, in pages (pre-copies written again later
	 * included): below pages where processes share frames */
	uint64_t data_pages;
	uint64_t image_bytes;
	double ms; /* the whole dump (pre-copy, seize .. detach) */
	/* opts->precopy: pages copied before the freeze (stored, or recorded
	 * against another process's copy of their frame), of those the ones
	 * the freeze found unwritten and took as they were, and the copy's
	 * time; frozen_at: urs_now_ms() once the tree was stopped (the pause
	 * runs from there to the caller's thaw) */
	uint64_t precopy_pages, precopy_reused;
	uint32_t precopy_rounds;
	uint32_t hot_blocks; /* blocks in the hot set written (ckpt/workingset.h) */
	double precopy_ms, frozen_at;
	double thawed_at; /* ckpt_container_ckpt.thaw_early: when it was thawed */
};

struct ckpt_dump_opts {
	/* The tasks' cgroup v2 directory when the caller froze them with it
	 * (cgroup.freeze): frozen tasks only enter a ptrace stop once thawed, so
	 * the dumper thaws it for the moment it takes them to trap (they trap
	 * before running any user code) and freezes it again before detaching.
	 * Every process in the cgroup must be in the tree. NULL when the tasks
	 * are stopped or running (the dumper stops them itself meanwhile). */
	const char *freezer;
	/* A process that may sit in that cgroup without being part of the tree
	 * (the sandbox's supervisor), or 0. It is frozen with the rest. */
	pid_t outside;
	/* A seccomp filter with user-notification actions cannot be made again
	 * at restore (its listener lives outside the task). If this returns a
	 * filter that acts the same without them (its length > 0, *out set;
	 * ursa's counting filter and the profile's plain one), that one is
	 * saved instead; otherwise the dump is refused. NULL: refused. */
	int (*seccomp_replace)(void *ctx, const uint64_t *insns, uint32_t len,
			       const uint64_t **out);
	void *seccomp_ctx;
	/* What the tree was given as fd 0-2 (device and inode each; 0, 0:
	 * unknown), or NULL: a higher fd that is one of them where fd 0-2
	 * would be external stdio (a shell's copy of its stdout, saved while
	 * fd 1 is redirected) is saved as that stdio (CKPT_FD_EXT, sub). */
	const uint64_t *stdio_dev, *stdio_ino;
	/* The host's checkpoint key (ckpt/key.h), which authenticates the
	 * image (ckpt/seal.h). Required: without it the dump is refused. */
	const uint8_t *key;
	/* pages_stream: the page data goes to pages_fd (a pipe, written in
	 * order: an image in object storage, store/remote.h) and pages.img
	 * gets only its header page (ckpt_pages_open_stream) */
	bool pages_stream;
	int pages_fd;
	/* Copy the tree's memory while it runs, before stopping it
	 * (ckpt/precopy.h): the freeze copies only the pages written
	 * meanwhile. Where the kernel cannot track writes (no
	 * UFFD_FEATURE_WP_ASYNC) or the cgroup is frozen already, ignored. */
	bool precopy;
	/* With precopy and pages_stream: once the pre-copy rounds are done,
	 * the page data is padded to a whole MiB and, the pipe drained,
	 * pages_cut(cut_ctx, bytes so far) makes it an object of its own,
	 * completed while the tree runs (ckpt_run_store.cut); more rounds
	 * then take what was written meanwhile, and the freeze adds only its
	 * own pages to the stream. NULL: no cut. */
	int (*pages_cut)(void *ctx, uint64_t len, struct urs_err *err);
	void *cut_ctx;
	/* Where the pre-copy's write tracking is left armed, for the caller
	 * to end (ckpt_dump_tracking_end) once the tree runs again or is
	 * killed: unregistering walks the tree's memory (~10 ms per 256 MiB),
	 * which need not happen with it frozen. NULL: ended before ckpt_dump
	 * returns. When given, *tracking is set (NULL without a pre-copy). */
	struct ckpt_precopy **tracking;
};

/**
 * ckpt_dump_tracking_end() - end the write tracking ckpt_dump left armed
 * @pc: *ckpt_dump_opts.tracking, or NULL
 *
 * Unregisters and closes the tracking userfaultfds (the tasks may run or
 * be dead by then) and frees @pc.
 */
void ckpt_dump_tracking_end(struct ckpt_precopy *pc);

/**
 * ckpt_dump() - dump the process tree rooted at @pid into @dir
 * @pid: the root, a pid in the caller's pid namespace
 * @dir: the image directory (which must exist): pages.img and core.img
 * @opts: freezer, outside process, seccomp replacement and key (required:
 *        without opts->key the dump is refused)
 * @stats: filled with the dump's measurements (may be NULL)
 * @err: what was refused or failed, naming the pid and the resource
 *
 * Blocks for as long as the dump takes (ptrace stops, /proc reads, page
 * copies). Every task and thread is seized, read, and detached again,
 * left as it was (with a freezer: frozen again before the detach).
 *
 * Return: 0, or a negative errno with nothing left in @dir: -ENOKEY without
 * a key, -ENOTSUP for something the image cannot hold (a thread with its
 * own credentials, io_uring, a deleted file...), -ENOMEM, or the failing
 * call's.
 */
int ckpt_dump(pid_t pid, const char *dir, const struct ckpt_dump_opts *opts,
	      struct ckpt_dump_stats *stats, struct urs_err *err);

#endif
