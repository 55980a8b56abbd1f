/*
 * ckpt/lazy.h — lazy restore: a restored task's private anonymous memory is
 * left empty and registered with userfaultfd, and a pager thread fills it
 * from the image: the pages a task faults on first (a block around each
 * fault), the rest in address order in the background, until every page of
 * the image is in and the userfaultfds are closed (docs/checkpoint.md
 * "Lazy restore"). Each 1 MiB chunk of page data is authenticated
 * (ckpt/seal.h) the first time it is used, never copied unchecked.
 *
 * The pager follows the address spaces it serves: fork (the child gets a
 * userfaultfd of its own and the parent's pages still to come), mremap (the
 * pages to come move), munmap and MADV_DONTNEED (the pages to come there are
 * dropped: they must read as zeros, never as the image's). The thread has
 * its own fd table (unshare(CLONE_FILES)): the userfaultfds are in no other
 * table, so a caller that closes every fd it does not know keeps paging.
 */
#ifndef URSA_CKPT_LAZY_H
#define URSA_CKPT_LAZY_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/userfaultfd.h>
#include <sys/types.h>

#include "ckpt/image.h"
#include "ckpt/seal.h"
#include "runtime/err.h"

struct ckpt_lazy;

struct ckpt_lazy_stats {
	uint64_t faults;	 /* missing-page faults served */
	uint64_t fault_pages;	 /* pages of the image copied for them */
	uint64_t zero_pages;	 /* faults on pages the image does not hold */
	uint64_t prefetch_pages; /* pages copied in address order */
	uint64_t spaces;	 /* address spaces served (forks included) */
	uint64_t chunks;	 /* chunks authenticated */
	uint64_t dropped;	 /* chunks of a remote image's memfd freed once no
				  * page still to come was in them */
	uint64_t ws_blocks;	 /* blocks in the recorded working set it found */
	uint64_t hot_blocks;	 /* or else, blocks in the image's hot set */
	uint64_t ws_pages;	 /* pages of either brought in before the tasks ran */
	uint64_t rec_blocks;	 /* blocks in the working set it recorded */
	int rec;		 /* that record: 1 stored, 2 handed to ursa-store,
				  * 0 not (yet), or -errno */
	double ms;		 /* from the pager's start until all was in */
	bool done;		 /* every page is in, every userfaultfd closed */
	bool failed;		 /* it stopped on an error (why: ckpt_lazy_why) */
};

/* Called from the pager's thread when paging fails (a chunk that does not
 * authenticate, a userfaultfd error): the tasks it knows are SIGKILLed
 * already; the caller ends what else belongs to them (the sandbox). */
typedef void (*ckpt_lazy_fail_fn)(void *ctx, const char *why);

/**
 * ckpt_lazy_new() - take @img's page data and start a pager thread on it
 * @out: the pager
 * @img: a loaded image (ckpt_image_load with CKPT_LOAD_LAZY); its page
 *       mapping and chunk MACs move to the pager (cleared in @img)
 * @dir: its directory, or NULL: the recorded working set is read from it
 *       (ckpt/workingset.h) and its pages brought in by ckpt_lazy_add
 *       before the tasks run; without one, the faults of the first
 *       CKPT_WS_WINDOW_MS after ckpt_lazy_seal (with @hold: those until
 *       ckpt_lazy_go) are recorded, into @dir or, with @src, through
 *       ursa-store beside the remote image; with @src, the image's hot
 *       set (if any) is brought in before the tasks run instead, and the
 *       record starts from it
 * @seal: the key its chunks are authenticated with (copied)
 * @hold: serve faults only (and a fault's read-ahead), no prefetch, until
 *        ckpt_lazy_go()
 * @src: -1, or a stream socket to ursa-store serving the page data
 *       (store/remote.h urs_remote_serve), its first message taken
 *       (ckpt_lazy_pages_fd): pages.img is zero past its header page and
 *       each chunk is asked for before its first use; duplicated (the
 *       caller keeps @src)
 * @pages_fd: with @src, the memfd @img's page data is mapped from, or -1:
 *            duplicated; a chunk no page still to come needs any more is
 *            punched out of it once ckpt_lazy_seal has been called (the
 *            restorer is done reading), so that the copy of the page data
 *            does not outlive its use (ckpt_lazy_stats dropped)
 * @fail: called once from the pager's thread if paging fails (may be NULL)
 * @ctx: for @fail
 * @err: what failed
 *
 * Return: 0, or a negative errno (nothing taken from @img).
 */
int ckpt_lazy_new(struct ckpt_lazy **out, struct ckpt_image *img, const char *dir,
		  const struct ckpt_seal *seal, bool hold, int src, int pages_fd,
		  ckpt_lazy_fail_fn fail, void *ctx, struct urs_err *err);

/**
 * ckpt_lazy_pages_fd() - the pages.img ursa-store fills, from its socket
 * @src: the stream socket to ursa-store (as for ckpt_lazy_new), whose
 *       first message it is (store/serve.h URS_REMOTE_SERVE_PAGES)
 * @fd: gets the fd (close-on-exec; the caller closes it), or -1
 * @err: what is wrong: ursa-store gone, another message, no fd, or an fd
 *       that is not a memfd sealed at its size
 *
 * Read before the image is loaded (ckpt_image_load_ex's @pages_fd): the
 * page data lives in that memfd, never in a file of the image directory.
 *
 * Return: 0, or a negative errno.
 */
int ckpt_lazy_pages_fd(int src, int *fd, struct urs_err *err);

/**
 * ckpt_lazy_verify() - authenticate the chunks of page data a range touches
 * @lz: the pager
 * @off: byte offset in the page data
 * @len: bytes
 * @err: names the chunk that does not authenticate
 *
 * For the restorer's own (eager) reads of page data; chunks already
 * checked are not checked again. Safe beside the pager's thread.
 *
 * Return: 0, or -EBADMSG.
 */
int ckpt_lazy_verify(struct ckpt_lazy *lz, uint64_t off, uint64_t len, struct urs_err *err);

/**
 * ckpt_lazy_want() - ask ahead for the page data a range touches
 * @lz: the pager
 * @off: byte offset in the page data
 * @len: bytes
 * @err: what failed (ursa-store gone)
 *
 * For a remote image: each chunk not yet asked for is asked for alone (as
 * a fault's chunk: ahead of the prefetch's ranges, several in flight) and
 * not waited for, so that the restorer's eager reads (ckpt_lazy_verify)
 * wait once for all of them, not once per chunk. A chunk in a working-set
 * range already is asked for alone too (a range's GET ends later). At most
 * 256 chunks in all
 * (the rest are asked for when they are read); a local image: nothing.
 *
 * Return: 0, or a negative errno.
 */
int ckpt_lazy_want(struct ckpt_lazy *lz, uint64_t off, uint64_t len, struct urs_err *err);

/**
 * ckpt_lazy_data() - the page data (after ckpt_lazy_verify of the range)
 * @lz: the pager
 *
 * Return: byte 0 of the page data.
 */
const uint8_t *ckpt_lazy_data(const struct ckpt_lazy *lz);

/**
 * ckpt_lazy_done_fd() - an eventfd that becomes readable when paging ends
 * @lz: the pager
 *
 * Readable once every page is in, or paging failed (ckpt_lazy_stats tells
 * which): for a caller's event loop. Owned by @lz (closed by
 * ckpt_lazy_free), and the only fd of the caller's table @lz keeps after
 * ckpt_lazy_seal() without a hold.
 *
 * Return: the fd.
 */
int ckpt_lazy_done_fd(const struct ckpt_lazy *lz);

/**
 * ckpt_lazy_add() - hand a registered userfaultfd and its pages to the pager
 * @lz: the pager
 * @uffd: a userfaultfd of @pid's address space, UFFDIO_API done with
 *        CKPT_LAZY_FEATURES, its lazy ranges registered (missing mode);
 *        always consumed (closed here)
 * @pid: the task (killed if paging fails)
 * @runs: the pages to bring in, sorted by address, each inside one
 *        registered range (copied)
 * @nruns: their number
 * @err: what failed
 *
 * The task must not run yet: the pages of the recorded working set are
 * copied in here, their chunks waited for.
 *
 * Return: 0, or a negative errno.
 */
int ckpt_lazy_add(struct ckpt_lazy *lz, int uffd, pid_t pid, const struct ckpt_run *runs,
		  uint32_t nruns, struct urs_err *err);

/* The userfaultfd features the pager needs (ckpt_lazy_add). */
#define CKPT_LAZY_FEATURES                                                                \
	(UFFD_FEATURE_EVENT_FORK | UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE | \
	 UFFD_FEATURE_EVENT_UNMAP)

/**
 * ckpt_lazy_seal() - no more address spaces will be added
 * @lz: the pager
 *
 * Once every one added is complete, the pager's thread ends. Without a
 * hold, the caller's end of the pager's socket is closed here: @lz holds
 * no fd of the caller's any more. With one, it stays open for
 * ckpt_lazy_go(); closing it (a process closing the fds it does not
 * know) seals as well, and releases the hold.
 */
void ckpt_lazy_seal(struct ckpt_lazy *lz);

/**
 * ckpt_lazy_go() - start the prefetch of a pager made with @hold
 * @lz: the pager
 *
 * Until then only the pages faulted on come in (the tests use it to
 * look at a restore half-way).
 */
void ckpt_lazy_go(struct ckpt_lazy *lz);

/**
 * ckpt_lazy_stats() - how far paging is
 * @lz: the pager
 * @st: filled
 */
void ckpt_lazy_stats(const struct ckpt_lazy *lz, struct ckpt_lazy_stats *st);

/**
 * ckpt_lazy_why() - why paging failed
 * @lz: the pager
 *
 * Return: the reason, "" while it has not failed.
 */
const char *ckpt_lazy_why(const struct ckpt_lazy *lz);

/**
 * ckpt_lazy_wait() - wait until paging is complete or has failed
 * @lz: the pager
 *
 * Seals @lz first, and releases a hold.
 *
 * Return: 0 when complete, -EIO when it failed.
 */
int ckpt_lazy_wait(struct ckpt_lazy *lz);

/**
 * ckpt_lazy_free() - stop the pager and release it
 * @lz: the pager, or NULL
 *
 * A pager still at work kills the tasks it serves first (their pages
 * would otherwise read as zeros once its userfaultfds close).
 */
void ckpt_lazy_free(struct ckpt_lazy *lz);

#endif
