/*
 * actors/gofer/gofer.h — the gofer: an actor on the supervisor's io_uring loop
 * that answers a FUSE connection for one mediated volume (a host directory
 * the sandbox sees through a FUSE mount), so the sandbox never holds a
 * host path or fd.
 *
 * Requests are read from /dev/fuse with io_uring reads into a request-buffer
 * pool that starts with ONE buffer, grows by one when a completion finds no
 * other read left in the kernel (backlog) up to a limit, and shrinks back to
 * one (memory returned) after an idle period. Replies are write(2)s to the
 * fd (a reply never blocks). Every name is resolved with openat2(
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) from the
 * O_PATH fd of its parent; inodes the kernel knows are kept as file
 * handles (freed on FORGET), their O_PATH fds reopened on demand into a
 * small bounded cache, so the fds held do not grow with them. Regular-file
 * data uses FUSE passthrough when the kernel offers it (the kernel
 * reads/writes the host file directly), else pread/pwrite in the gofer.
 * See docs/gofer.md.
 */
#ifndef URSA_ACTORS_GOFER_H
#define URSA_ACTORS_GOFER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/err.h"
#include "runtime/loop.h"

struct urs_gofer;

/*
 * Host fds shared by all the gofers of a process (the supervisor keeps its
 * fd table small): when urs_gofer_opts.budget points to one, open files and
 * pinned inodes (file systems without file handles) of every gofer using it
 * count against these caps instead of the per-volume ones. Same thread only.
 */
struct urs_gofer_budget {
	uint32_t open_files, max_open;
	uint32_t pinned, max_pinned;
};

struct urs_gofer_opts {
	bool rdonly;	     /* refuse every mutating op with EROFS */
	bool no_passthrough; /* never use FUSE passthrough */
	bool no_readdirplus; /* answer READDIR only (do not offer READDIRPLUS) */
	/* no xattrs at all (ENOSYS, which the kernel remembers): without it,
	 * every write(2) costs a GETXATTR security.capability round trip */
	bool no_xattr;
	/* READ/WRITE without passthrough with pread/pwrite in the handler
	 * instead of io_uring operations answered from their completion (the
	 * default: the loop keeps serving during slow host I/O; on cached data
	 * both measured the same) */
	bool sync_rw;
	bool weak;	     /* reads do not keep urs_loop_run() alive */
	bool trace;	     /* log each request and its result to stderr (debugging) */
	uint32_t max_write;  /* bytes per WRITE request; 0 = 128 KiB */
	uint32_t max_bufs;   /* request buffers at most; 0 = 8, at most 16 */
	uint32_t max_inodes; /* inodes the kernel may hold at once; 0 = 1 << 20 */
	/* inodes are kept as file handles; this many O_PATH fds are cached
	 * (0 = 64, at least 2); docs/gofer.md "Inodes" */
	uint32_t fd_cache;
	uint32_t max_pinned; /* fds kept for inodes without handles; 0 = 64 (ENFILE past it) */
	uint32_t max_open;   /* open files keeping an fd (not passthrough) + dirs; 0 = 128 */
	struct urs_gofer_budget *budget; /* shared caps instead of the two above, or NULL */
	bool no_handles;     /* testing: as if the host had no file handles (every inode pinned) */
	uint64_t idle_ns;    /* shrink to one buffer after this; 0 = 2 s */
	double attr_timeout; /* seconds the kernel may cache attrs/entries; default 1 */
	bool attr_timeout_set;
	/* never use FUSE over io_uring: classic /dev/fuse reads and writes only
	 * (also URSA_IOURING_DISABLE=uring_cmd) */
	bool no_uring;
	/* quotas (docs/gofer.md "Quotas"), 0 = none: bytes of regular-file
	 * data and inodes; usage is counted by walking the volume at start,
	 * beyond it growth fails with EDQUOT; a quota'd volume serves data
	 * through the gofer (no passthrough) so that it sees every write */
	uint64_t quota_bytes;
	uint64_t quota_inodes;
	/* FUSE over io_uring: called for every request with the CPU it was
	 * issued on (the kernel queues a request on its CPU's queue), e.g. to
	 * serve it next to the requester (actors/gofer/thread.c); or NULL */
	void (*req_cpu)(void *arg, unsigned cpu);
	/* ... and right before replies to them go to the kernel (or NULL) */
	void (*req_replied)(void *arg);
	void *req_cpu_arg;
};

#define URS_GOFER_LAT_FIRST_NS 1000 /* latency histogram: first bucket's bound */
#define URS_GOFER_LAT_BUCKETS  20   /* 1 us .. 524 ms, then +Inf */

struct urs_gofer_stats {
	uint64_t requests, errors, replies_failed;
	uint64_t by_op[64]; /* FUSE opcodes < 64 */
	uint64_t grows, shrinks;
	uint64_t drained; /* requests read directly after a reply (no io_uring read) */
	/* bytes the gofer itself read/wrote for READ/WRITE (not passthrough) */
	uint64_t bytes_read, bytes_written;
	/* handler time per request (to its reply, or to the submission of its
	 * io_uring host operation): bucket i counts <= 1 us << i, the last +Inf */
	uint64_t lat_hist[URS_GOFER_LAT_BUCKETS + 1];
	uint64_t lat_count, lat_sum_ns;
	uint64_t quota_bytes_used, quota_inodes_used; /* with a quota */
	uint32_t bufs_active, bufs_max;
	uint32_t inodes;     /* live inode table entries (root included) */
	uint32_t open_files; /* open handles */
	/* fds and file handles (docs/gofer.md "Inodes") */
	uint32_t fds;		/* host fds the inode table holds now */
	uint64_t fd_reopens;	/* open_by_handle_at after an eviction */
	uint64_t fd_evictions;	/* cached fds closed to make room */
	uint64_t stale;		/* reopens refused (object gone or not the same) */
	uint64_t enfile_pinned; /* lookups refused: pinned fds at their cap */
	uint64_t open_refused;	/* opens refused: open files at their cap */
	bool passthrough;	/* negotiated and working */
	bool initialized;
	uint32_t proto_minor; /* kernel's FUSE minor version */
	/* FUSE over io_uring (docs/gofer.md): requests arrive through it */
	bool uring;
	uint32_t uring_queues, uring_entries; /* queues (= possible CPUs), entries registered */
	uint64_t uring_requests;	      /* requests that came through io_uring */
	uint64_t uring_grows;		      /* entries added under load */
};

/*
 * Serve the FUSE connection @fuse_fd (already mounted, O_NONBLOCK) for the
 * host directory @root_fd (any fd of a directory; the gofer keeps its own
 * O_PATH copy). Takes ownership of @fuse_fd. Must run on @loop's thread.
 */
int urs_gofer_start(struct urs_loop *loop, int fuse_fd, int root_fd,
		    const struct urs_gofer_opts *opts, struct urs_gofer **out);

/* True once the connection is gone (unmounted or aborted) and no op is left. */
bool urs_gofer_done(const struct urs_gofer *g);

/* Abort: stop reading, cancel in-flight reads; free with urs_gofer_free once done. */
void urs_gofer_stop(struct urs_gofer *g);

/* Free everything (requires urs_gofer_done()). Closes the fuse fd. */
void urs_gofer_free(struct urs_gofer *g);

void urs_gofer_get_stats(const struct urs_gofer *g, struct urs_gofer_stats *st);

/*
 * Per-volume metrics (actors/gofer/metrics.c): ursa_gofer_* series labelled
 * volume="DEST" for each of @n gofers (@g[i] may be NULL: zeros), the label
 * values (@volumes, which must stay valid for the process's life) fixed on
 * the first call, which registers them; later calls only copy the gofers'
 * plain counters into them. Appends the exposition to @buf with
 * @const_labels on every sample: length, or -ENOSPC / -ENOMEM.
 */
int urs_gofer_metrics_render(struct urs_gofer *const *g, const char *const *volumes, uint32_t n,
			     const char *const_labels, char *buf, size_t len);

/* Bytes of heap and touched buffer memory the gofer holds right now (approx). */
size_t urs_gofer_mem(const struct urs_gofer *g);

/*
 * Checkpoint/restore of a volume (actors/gofer/state.c, docs/gofer.md
 * "Checkpoint and restore"): what DIR/supervisor.img keeps of it. The
 * kernel's nodeids and file handles are not carried over (the connection
 * dies with the sandbox); files are re-opened by path through the new
 * mount, and st_ino inside is the host's, hence stable.
 */
struct urs_gofer_inode_rec {
	uint64_t nodeid, dev, ino; /* FUSE nodeid; host st_dev, st_ino */
	uint32_t type, opens;	   /* S_IFMT bits; open handles */
};

struct urs_gofer_state {
	uint64_t root_dev, root_ino; /* the volume root on the host */
	bool rdonly, passthrough;
	uint64_t quota_bytes, quota_inodes; /* limits, 0 = none */
	uint64_t used_bytes, used_inodes;   /* usage counted against them */
	uint32_t open_files;
	uint32_t ninodes;
	struct urs_gofer_inode_rec *inodes; /* live table entries, malloc'd */
};

struct sst_volume;

/* The state of @g now (on its loop's thread). Free with urs_gofer_state_free. */
int urs_gofer_state_export(const struct urs_gofer *g, struct urs_gofer_state *out);
void urs_gofer_state_free(struct urs_gofer_state *s);
/* Is @dir_fd the volume root the state was saved for? 0, or -ESTALE. */
int urs_gofer_state_check_root(const struct urs_gofer_state *s, int dir_fd);
/* After urs_gofer_start of the restored volume: checks root and mode
 * (-ESTALE / -EINVAL with @err); quota accounting continues from the
 * host's usage counted at start, a difference from the saved usage is put
 * in @err as a notice (returns 0; @err's message is "" without one). */
int urs_gofer_state_import(struct urs_gofer *g, const struct urs_gofer_state *s,
			   struct urs_err *err);
/* To and from the schema (actors/supstate.ursc struct volume): the
 * vec of inodes is calloc'd (the caller frees v->inodes / s->inodes). */
int urs_gofer_state_to_sst(const struct urs_gofer_state *s, struct sst_volume *v);
int urs_gofer_state_from_sst(const struct sst_volume *v, struct urs_gofer_state *s);
/* st_dev of the gofer's FUSE mount on @dest in @pid's mount namespace, from
 * /proc/PID/mountinfo (no request reaches the gofer), or 0 if none. */
uint64_t urs_gofer_mount_dev(pid_t pid, const char *dest);

#endif
