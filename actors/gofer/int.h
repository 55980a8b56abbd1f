/*
 * actors/gofer/int.h — what gofer.c (connection, buffers, dispatch),
 * gofer/inode.c (inode table) and gofer/ops.c (operation handlers) share.
 * Not for use outside actors/gofer*.c.
 */
#ifndef URSA_ACTORS_GOFER_INT_H
#define URSA_ACTORS_GOFER_INT_H

#include <linux/fuse.h>
#include <sys/ioctl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "actors/gofer/gofer.h"
#include "actors/gofer/uring.h"
#include "runtime/loop.h"
#include "runtime/timer.h"

/* Newer than Debian 12's <linux/fuse.h> (7.38): FUSE passthrough (7.40). */
#define URS_FUSE_PASSTHROUGH_FLAG2 (1u << 5) /* FUSE_PASSTHROUGH = 1ULL << 37 */
#define URS_FOPEN_PASSTHROUGH	   (1u << 7)
struct urs_fuse_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define URS_FUSE_DEV_IOC_BACKING_OPEN  _IOW(229, 1, struct urs_fuse_backing_map)
#define URS_FUSE_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)
#define URS_FUSE_COMPAT_SETXATTR_IN    8 /* without FUSE_SETXATTR_EXT */

#define GOFER_NOREPLY 1 /* handler result: no reply is due (FORGET) */

/*
 * An inode is identified by its file handle (name_to_handle_at at lookup),
 * not by a held fd: the O_PATH fd the handlers use is reopened on demand
 * with open_by_handle_at(mount fd of its st_dev) and kept in a small
 * bounded cache (a clock over GOFER_FDCACHE slots), so the supervisor's fd
 * table does not grow with the inodes the kernel holds. Objects whose file
 * system has no handles keep their fd ("pinned", capped: -ENFILE past it).
 * Handles up to GOFER_HANDLE_INLINE bytes live in the entry; longer ones
 * (rare: <= MAX_HANDLE_SZ) in one extra allocation.
 */
#define GOFER_HANDLE_INLINE 24
#define GOFER_MAX_MOUNTS    8	/* host file systems (st_dev) with a mount fd */
#define GOFER_FDCACHE	    64	/* default fd cache size (urs_gofer_opts.fd_cache) */
#define GOFER_MAX_PINNED    64	/* default cap of pinned fds (no handle support) */
#define GOFER_MAX_OPEN	    128 /* default cap of open files and directories */

struct ginode {
	struct ginode *next_id, *next_key; /* hash chains: by nodeid, by (dev, ino) */
	uint64_t nodeid;		   /* never reused during the connection */
	uint64_t nlookup;		   /* kernel references; freed at 0 (root: never) */
	dev_t dev;
	ino_t ino;
	/* O_PATH | O_NOFOLLOW, beneath the volume root, or -1: cached (cslot >=
	 * 0), pinned (no handle: hlen == 0), or the root's. Handlers get it with
	 * gofer_inode_fd(), never from here. */
	int fd;
	uint32_t type;	    /* S_IFMT bits */
	int32_t backing_id; /* passthrough backing registered on the connection, 0 = none */
	uint32_t backing_refs;
	uint32_t opens;
	int32_t htype;	 /* file handle type */
	int16_t cslot;	 /* fd cache slot, -1 = not cached */
	uint8_t hlen;	 /* handle bytes; 0 = none (fd pinned) */
	uint8_t mnt : 7; /* index into gofer_itable.mnt_fd */
	/* out of the (dev, ino) chain: the host gave its inode number to another
	 * object (gofer_inode_ref); the kernel may still use its nodeid */
	uint8_t stale : 1;
	union {
		unsigned char in[GOFER_HANDLE_INLINE];
		unsigned char *ext; /* hlen > GOFER_HANDLE_INLINE */
	} h;
};

struct gofer_cslot {
	struct ginode *i;
	bool ref; /* used since the hand last passed */
};

/* Entries are allocated one by one and found through two chained hash
 * tables, so memory follows the number of live entries; the tables shrink
 * again when it falls (gofer_itable_compact). */
struct gofer_itable {
	struct ginode **by_id, **by_key;
	uint32_t nbuckets; /* power of two, both tables */
	uint32_t live, max;
	uint64_t next_id;
	struct ginode *root;
	/* fd cache: allocated at the first insertion; csize >= 2 */
	struct gofer_cslot *cache;
	uint32_t csize, cused, hand;
	struct ginode *protect; /* never evicted (the first of two fds in use) */
	/* one fd per host file system (O_RDONLY | O_DIRECTORY: open_by_handle_at
	 * refuses O_PATH ones), found by st_dev; [0] is the root's */
	int mnt_fd[GOFER_MAX_MOUNTS];
	dev_t mnt_dev[GOFER_MAX_MOUNTS];
	uint32_t nmnt;
	uint32_t pinned, max_pinned; /* fds held for inodes without a handle */
	uint32_t *shared_pinned;     /* a budget shared with other gofers, or NULL */
	bool no_handles;	     /* testing: as if no file system had handles */
	/* counters (metrics) */
	uint64_t reopens, evictions, stale, refused;
};

int gofer_itable_init(struct gofer_itable *t, uint32_t max);
/* Fd cache size (>= 2) and pinned cap; before the first lookup. */
void gofer_itable_limits(struct gofer_itable *t, uint32_t csize, uint32_t max_pinned);
/* Closes every entry's fd and the mount fds; @each (if set) runs first for
 * each entry. */
void gofer_itable_fini(struct gofer_itable *t, void (*each)(struct ginode *, void *), void *ctx);
/* The inode for a kernel nodeid, or NULL if unknown. */
struct ginode *gofer_inode_get(struct gofer_itable *t, uint64_t nodeid);
static inline uint64_t gofer_inode_id(const struct gofer_itable *t, const struct ginode *i)
{
	(void) t;
	return i->nodeid;
}
/*
 * An O_PATH fd of @i, valid until the next gofer_inode_fd()/ref() of
 * another inode (which may evict it): reopened from its handle when not
 * cached, and checked to be the same (st_dev, st_ino) (-ESTALE otherwise).
 */
int gofer_inode_fd(struct gofer_itable *t, struct ginode *i);
/* Both at once (RENAME, LINK): neither evicts the other. */
int gofer_inode_fd2(struct gofer_itable *t, struct ginode *a, struct ginode *b, int *fa, int *fb);
/*
 * Account one kernel reference to the object @fd with @st: an existing
 * entry gains a lookup, or a new entry is made with the object's handle
 * (or, without handle support, a pinned O_PATH fd: -ENFILE past the cap).
 * @opath: @fd is an O_PATH fd the table takes (cached, or closed, also on
 * failure); else @fd is only borrowed (an open file: CREATE).
 * Returns the entry or NULL with *err (-ENFILE over a limit, -ENOMEM).
 */
struct ginode *gofer_inode_ref(struct gofer_itable *t, int fd, bool opath, const struct stat *st,
			       int *err);
/* Drop @n kernel references; the entry is freed (fd closed) when none and
 * no open file remain. */
void gofer_inode_forget(struct gofer_itable *t, struct ginode *i, uint64_t n);
/* Set up the root entry (nodeid 1) for @fd (O_PATH directory, kept: never
 * evicted) and the mount fd of its file system; never freed by FORGET. */
int gofer_inode_root(struct gofer_itable *t, int fd);
/* Shrink the hash tables to fit the live entries (idle time). */
void gofer_itable_compact(struct gofer_itable *t);
/* Bytes held by the table. */
size_t gofer_itable_mem(const struct gofer_itable *t);
/* Fds the table holds (cached, pinned, root, mount fds). */
uint32_t gofer_itable_fds(const struct gofer_itable *t);

/* What an asynchronous host operation answers when it completes. */
enum gofer_async_kind { GOFER_ASYNC_READ = 1, GOFER_ASYNC_WRITE, GOFER_ASYNC_FSYNC };

struct gslot {
	struct urs_op op; /* the read of a request, then (if any) its host operation */
	struct urs_gofer *g;
	unsigned char *buf; /* mmap'd, g->bufsz bytes, NULL until first use */
	uint32_t idx;
	bool reading;
	bool async;		    /* a host operation for this request is in flight */
	uint8_t akind;		    /* enum gofer_async_kind */
	struct fuse_in_header ahdr; /* the request it answers */
	struct gofer_uent *uent;    /* a FUSE-over-io_uring entry's slot (gofer/uring.c) */
};

#define GOFER_MAX_SLOTS 16

struct urs_gofer {
	struct urs_loop *loop;
	struct urs_gofer_opts o;
	int fuse_fd, root_fd;
	dev_t root_dev;
	struct gofer_itable it;
	struct gslot slots[GOFER_MAX_SLOTS];
	uint32_t active; /* slots in service */
	uint32_t nslots; /* o.max_bufs clamped */
	size_t bufsz;	 /* bytes per request buffer */
	struct urs_timer idle;
	uint64_t last_req_turn; /* requests seen at the last idle check */
	bool idle_shrunk, stopping, dead, shrinking;
	bool passthrough; /* negotiated; cleared if BACKING_OPEN fails */
	uint32_t minor;
	uint32_t open_files; /* open handles */
	uint32_t open_fds;   /* those holding a host fd (not passthrough) */
	uint64_t attr_sec;
	uint32_t attr_nsec;
	struct urs_gofer_stats st;
	struct gofer_uring *u;	    /* FUSE over io_uring, when negotiated (gofer/uring.c) */
	bool quota;		    /* o.quota_bytes or o.quota_inodes set (gofer/quota.c) */
	uint64_t q_bytes, q_inodes; /* usage counted against them */
};

/* One request being answered. */
struct greq {
	struct urs_gofer *g;
	const struct fuse_in_header *h;
	const unsigned char *in; /* after the header */
	uint32_t inlen;
	unsigned char *buf; /* the request buffer (reusable for the reply once @in is consumed) */
	size_t bufsz;
	int reply_err;		 /* set when writing the reply failed (-ENOENT: interrupted) */
	struct gslot *slot;	 /* the buffer's slot (NULL in unit tests) */
	struct gofer_uent *uent; /* came through io_uring: replies go to its entry */
};

#define GOFER_ASYNC 2 /* handler result: an io_uring op will reply */

/*
 * Answer this request from an io_uring operation instead of synchronously:
 * prepare the SQE returned by gofer_async_sqe() (its buffer may be r->buf:
 * the slot stays out of service until the completion), then return
 * gofer_async_submit(). NULL from gofer_async_sqe(): do it synchronously.
 */
struct io_uring_sqe *gofer_async_sqe(struct greq *r);
int gofer_async_submit(struct greq *r, enum gofer_async_kind kind);

/* Reply helpers (gofer.c): always return 0; a failed write is noted in
 * r->reply_err. */
int gofer_reply(struct greq *r, int err, const void *data, size_t len);
int gofer_reply2(struct greq *r, const void *a, size_t alen, const void *b, size_t blen);

/*
 * Quotas (gofer/quota.c). gofer_quota_init: count the volume's usage (a
 * bounded walk beneath the root: -EFBIG past GOFER_QUOTA_WALK_MAX entries
 * or GOFER_QUOTA_DEPTH levels). gofer_quota_charge: add @dbytes / @dinodes
 * (negative: release); a positive one that would pass its quota fails with
 * -EDQUOT and changes nothing. gofer_quota_gone: account an object about to
 * be unlinked or replaced (its stat): its bytes and inode are released when
 * this was its last link.
 */
#define GOFER_QUOTA_WALK_MAX (1u << 20)
#define GOFER_QUOTA_DEPTH    256
int gofer_quota_init(struct urs_gofer *g);
int gofer_quota_charge(struct urs_gofer *g, int64_t dbytes, int64_t dinodes);
void gofer_quota_gone(struct urs_gofer *g, const struct stat *st);

/* Dispatch one request (gofer/ops.c): returns 0 (replied), GOFER_NOREPLY,
 * or a negative errno to send as the error reply. */
int gofer_dispatch(struct greq *r);

#endif
