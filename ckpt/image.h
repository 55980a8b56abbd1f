/*
 * ckpt/image.h — the checkpoint image: the in-memory model of a dumped
 * process tree (tasks, mappings, page runs, fds) and its on-disk form.
 *
 * An image is a directory with two files (layout in docs/checkpoint.md):
 *   core.img   header + checksummed TLV body describing every task;
 *   pages.img  one 4 KiB header page, then raw page-aligned page contents
 *              that the page runs in core.img point into.
 * The format is a small fixed-layout little-endian one (x86-64 only) rather
 * than the state/ serializer because host/ may not depend on state/; when a
 * checkpointer actor owns images it can wrap core.img's body unchanged.
 */
#ifndef URSA_CKPT_IMAGE_H
#define URSA_CKPT_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

#include "ckpt/seal.h"
#include "runtime/err.h"

#define CKPT_PAGE_SIZE	   4096u
#define CKPT_VERSION	   5u /* 5: authenticated (ckpt/seal.h) */
#define CKPT_MAX_TASKS	   256u
#define CKPT_MAX_VMAS	   65536u
#define CKPT_MAX_FDS	   65536u
#define CKPT_MAX_RUNS	   (1u << 22)
#define CKPT_MAX_XSAVE	   (64u * 1024)
#define CKPT_MAX_AUXV	   1024u /* bytes; the kernel's saved_auxv is 2*(AT_VECTOR_SIZE)*8 */
#define CKPT_MAX_GROUPS	   256u
#define CKPT_NSIG	   64u
#define CKPT_NRLIMIT	   16u
#define CKPT_MAX_USER_ADDR (1ull << 56)
#define CKPT_MAX_SECCOMP   64u	      /* stacked filters per task */
#define CKPT_MAX_BPF	   4096u      /* BPF_MAXINSNS */
#define CKPT_MAX_SIGINFO   1024u      /* pending signals per task */
#define CKPT_MAX_FDDATA	   (4u << 20) /* buffered bytes of one pipe or socket */
#define CKPT_MAX_EPOLL	   65536u     /* targets of one epoll set */
#define CKPT_MAX_SHM	   4096u      /* shared memory objects per image */
#define CKPT_MAX_THREADS   4096u      /* threads per image besides the main ones */
#define CKPT_SHM_NAME	   64u	      /* bytes of a memfd name, NUL padded */

enum ckpt_vma_kind {
	CKPT_VMA_ANON = 1, /* private anonymous (incl. [heap], [stack]) */
	CKPT_VMA_FILE = 2, /* file mapping, private or shared, by path */
	CKPT_VMA_VVAR = 3, /* [vvar]: kernel-provided, re-created, never dumped */
	CKPT_VMA_VVAR_VCLOCK = 4,
	CKPT_VMA_VDSO = 5,
	/* shared mapping of a shmem object: MAP_SHARED|MAP_ANONYMOUS, a shared
	 * mapping of /dev/zero, or of a memfd. shm: index into ckpt_image.shms,
	 * pgoff: offset in that object; its pages are saved once, with the object */
	CKPT_VMA_SHMEM = 6,
};

/* ckpt_vma_rec.flags */
#define CKPT_VMA_SHARED 0x1u
#define CKPT_VMA_HEAP	0x2u
#define CKPT_VMA_STACK	0x4u
/* mapped with MAP_NORESERVE (VM_NORESERVE: smaps' "nr"): a reservation
 * (a sanitizer's shadow, a runtime's heap) that the kernel's overcommit
 * check would refuse at its full size without it */
#define CKPT_VMA_NORESERVE 0x8u

/* Fixed part of one mapping (wire == memory layout). */
struct ckpt_vma_rec {
	uint64_t start, end; /* page aligned, [start, end) */
	uint64_t pgoff;	     /* file offset in bytes (FILE) */
	uint64_t dev, ino;   /* FILE: verified on restore */
	uint64_t fsize;	     /* FILE: size at dump, verified on restore */
	uint32_t prot;	     /* PROT_READ|PROT_WRITE|PROT_EXEC */
	uint32_t flags;	     /* CKPT_VMA_* */
	uint32_t kind;	     /* enum ckpt_vma_kind */
	uint32_t shm;	     /* SHMEM: the object (index into ckpt_image.shms); else 0 */
};

struct ckpt_vma {
	struct ckpt_vma_rec r;
	char *path; /* FILE only */
};

/* A run of consecutive dumped pages: npages pages at vaddr, stored at byte
 * offset off of the page data (after pages.img's header page). */
struct ckpt_run {
	uint64_t vaddr, npages, off;
};

enum ckpt_fd_type {
	CKPT_FD_REG = 1, /* regular file */
	CKPT_FD_DIR = 2, /* directory */
	CKPT_FD_CHR = 3, /* character device (e.g. /dev/null) */
	/* stdio that the restore replaces with its own: a pipe, socket, tty
	 * or a file outside the task's root at checkpoint time. No path; on
	 * fd 0-2 (sub 0) the restorer's (the puppet's) fd of that number is
	 * kept; a higher fd is a copy of the stdio the tree was given as fd
	 * sub (0-2), and gets a copy of the puppet's fd sub. */
	CKPT_FD_EXT = 4,
	/* One end of an anonymous pipe (ino: the pipe's inode, its identity in
	 * the tree; oflags O_RDONLY or O_WRONLY; sub: capacity in bytes). data:
	 * the bytes buffered in it, on the first record of the pipe only. */
	CKPT_FD_PIPE = 5,
	CKPT_FD_FIFO = 6,	 /* a named pipe, by path; sub and data as for PIPE */
	CKPT_FD_EVENTFD = 7,	 /* pos: the counter; sub: EFD_SEMAPHORE */
	CKPT_FD_EPOLL = 8,	 /* data: struct ckpt_epoll_tgt[] */
	CKPT_FD_UNIX = 9,	 /* socketpair end: ino, peer (0: peer closed); sub: SOCK_*;
				  * data: bytes queued for reading on it (stream only) */
	CKPT_FD_TCP_LISTEN = 10, /* data: struct ckpt_inet_listen */
	/* an established (or closing) TCP connection: re-created as an
	 * unconnected TCP socket of the same family (sub) — see
	 * docs/checkpoint.md, "The network" */
	CKPT_FD_TCP_CLOSED = 11,
	/* an fd of a memfd (sub: the object, index into ckpt_image.shms; pos
	 * and oflags as for a file): the memfd re-created for its mappings */
	CKPT_FD_SHM = 12,
	/* a UDP socket: data struct ckpt_inet_udp; datagrams queued at the
	 * checkpoint are dropped (UDP may lose them anyway) */
	CKPT_FD_UDP = 13,
	CKPT_FD_SIGNALFD = 14, /* pos: the signal mask */
	/* data: struct ckpt_timerfd (the remaining time, not the deadline: a
	 * restored timer fires that long after the restore) */
	CKPT_FD_TIMERFD = 15,
	/* a unix socket listening on a name: data struct ckpt_unix_listen;
	 * connections not yet accepted at the checkpoint are not kept */
	CKPT_FD_UNIX_LISTEN = 16,
	/* a unix datagram socket bound to a name, not connected (a syslog
	 * socket): data struct ckpt_unix_listen (backlog 0) + the datagrams
	 * queued on it ({u32 length, bytes}...); their senders are not kept */
	CKPT_FD_UNIX_BOUND = 17,
};
#define CKPT_FD_TYPE_MAX CKPT_FD_UNIX_BOUND

/* Wire == memory layout; followed by path_len bytes of path, then data_len
 * bytes of type-specific data. */
struct ckpt_fd_rec {
	int32_t fd;
	int32_t dup_of;	  /* -1, or an earlier fd sharing the same open file description */
	uint32_t type;	  /* enum ckpt_fd_type */
	uint32_t oflags;  /* O_* status and access flags from fdinfo */
	uint32_t cloexec; /* FD_CLOEXEC */
	/* 0, or 1 + index of an earlier task whose fd xfd is the same open
	 * file description (inherited across fork): fetched from it at restore */
	uint32_t xtask;
	uint64_t pos;
	uint64_t dev, ino, rdev;
	int32_t xfd;
	uint32_t sub;  /* type-specific, see enum ckpt_fd_type */
	uint64_t peer; /* UNIX: the peer socket's inode */
	uint32_t path_len, data_len;
};

/* One registration of an epoll set: target fd (in the same task), events
 * (including EPOLLET/ONESHOT/...), user data. */
struct ckpt_epoll_tgt {
	int32_t tfd;
	uint32_t events;
	uint64_t data;
};

/* A listening TCP socket: re-created by socket + bind + listen. */
struct ckpt_inet_listen {
	uint16_t family; /* AF_INET, AF_INET6 */
	uint16_t port;	 /* host order */
	uint32_t backlog;
	uint8_t addr[16]; /* network order; IPv4 in the first 4 bytes */
	uint32_t reuseaddr, reuseport, v6only, nodelay;
};

/* A UDP socket: re-created by socket + options + bind (+ connect). */
struct ckpt_inet_udp {
	uint16_t family;	     /* AF_INET, AF_INET6 */
	uint16_t port, rport;	     /* local, remote (0: not connected); host order */
	uint16_t pad;		     /* 0 */
	uint8_t addr[16], raddr[16]; /* network order; IPv4 in the first 4 bytes */
	uint32_t reuseaddr, reuseport, v6only, broadcast;
};

/* A listening unix socket: re-created by socket + bind(name) + listen. */
struct ckpt_unix_listen {
	uint32_t type;	   /* SOCK_STREAM, SOCK_SEQPACKET */
	uint32_t backlog;  /* listen() backlog */
	uint32_t name_len; /* bytes of name: an absolute path, or abstract (leading NUL) */
	uint32_t pad;	   /* 0 */
	char name[108];
};

/* A timerfd: its clock, the time to its next expiry and its period, and
 * the expirations not yet read. */
struct ckpt_timerfd {
	uint32_t clockid, settime_flags;
	uint64_t ticks;
	int64_t value_sec, value_nsec, interval_sec, interval_nsec;
};

struct ckpt_fd {
	struct ckpt_fd_rec r;
	char *path;
	uint8_t *data;
};

struct ckpt_sigact {
	uint64_t handler, flags, restorer, mask;
};

/* Fixed part of one task. Pids are as seen inside the task's pid namespace. */
struct ckpt_task_rec {
	int32_t nspid, parent; /* parent: index of the parent task, -1 for the root */
	int32_t nspgid, nssid; /* 0 when outside the task's pid namespace */
	int32_t host_pid;      /* informational: pid at dump time, in the dumper's ns */
	uint32_t umask, personality, no_new_privs;
	struct user_regs_struct regs;
	uint64_t sigmask;
	struct ckpt_sigact sigact[CKPT_NSIG]; /* index = signo - 1 */
	struct {
		uint64_t cur, max;
	} rlim[CKPT_NRLIMIT];
	struct {
		uint64_t start_code, end_code, start_data, end_data, start_brk, brk, start_stack,
			arg_start, arg_end, env_start, env_end;
	} mm;
	uint32_t uid[4], gid[4]; /* real, effective, saved, fs */
	uint32_t ngroups;
	/* PR_GET_THP_DISABLE: 0, 1 (no huge pages), or 1 | PR_THP_DISABLE_EXCEPT_ADVISED
	 * (only where madvised); padding before, so 0 in older images */
	uint32_t thp_disable;
	uint32_t groups[CKPT_MAX_GROUPS];
	uint64_t cap_inh, cap_prm, cap_eff, cap_bnd, cap_amb;
	uint64_t rseq_ptr;
	uint32_t rseq_len, rseq_sig;
	uint64_t altstack_sp, altstack_size;
	uint32_t altstack_flags, pad2;
	char comm[16];	     /* task name (PR_SET_NAME), NUL terminated */
	int32_t zombie;	     /* exited, not yet reaped by its parent: only ids are saved */
	int32_t exit_status; /* zombie: wait status (waitpid format) */
	/* ITIMER_REAL, _VIRTUAL, _PROF: {interval sec, usec, value sec, usec} */
	int64_t itimer[3][4];
	uint64_t robust_head, robust_len; /* set_robust_list(2) registration (0: none) */
	uint64_t clear_child_tid;	  /* set_tid_address(2) (PR_GET_TID_ADDRESS; 0: none) */
};

/* One classic-BPF seccomp filter (struct sock_filter is 8 bytes). */
struct ckpt_seccomp {
	uint32_t flags; /* SECCOMP_FILTER_FLAG_LOG */
	uint32_t len;	/* instructions */
	uint64_t *insns;
};

/* One pending signal, as PTRACE_PEEKSIGINFO returns it (siginfo_t). */
struct ckpt_siginfo {
	uint32_t shared; /* 1: process-wide queue, 0: the thread's own */
	uint32_t pad;
	uint8_t info[128];
};

/* One thread of a multi-threaded process other than its main thread (wire:
 * this, then xsave_len bytes of NT_X86_XSTATE, then nsigs struct
 * ckpt_siginfo of its own queue). Everything else (memory, fds, signal
 * handlers, credentials, seccomp filters, limits) it shares with the main
 * thread, whose ckpt_task_rec has it. */
struct ckpt_thread_rec {
	int32_t tid; /* in the task's pid namespace */
	uint32_t xsave_len, nsigs;
	uint32_t altstack_flags;
	struct user_regs_struct regs; /* fs_base included */
	uint64_t sigmask;
	uint64_t rseq_ptr;
	uint32_t rseq_len, rseq_sig;
	uint64_t robust_head, robust_len;
	uint64_t altstack_sp, altstack_size;
	uint64_t clear_child_tid;
	char comm[16];
};

struct ckpt_thread {
	struct ckpt_thread_rec r;
	uint8_t *xsave;
	struct ckpt_siginfo *sigs; /* all of its own queue (shared == 0) */
};

struct ckpt_task {
	struct ckpt_task_rec r;
	struct ckpt_thread *threads; /* the other threads, in /proc/PID/task order */
	uint32_t nthreads;
	struct ckpt_siginfo *sigs; /* queue order */
	uint32_t nsigs;
	struct ckpt_seccomp *seccomp; /* oldest first, the order to install them in */
	uint32_t nseccomp;
	uint8_t *xsave;
	uint32_t xsave_len;
	uint8_t *auxv;
	uint32_t auxv_len;
	char *cwd, *exe;
	/* the task's root directory at checkpoint time (statx of
	 * /proc/PID/root; has_root 0 in images made before it was recorded):
	 * a restore onto another root (a new container's rootfs) may reopen
	 * files by path. Device and inode numbers are reused (an overlay's
	 * anonymous device, a deleted directory's inode), so its birth time
	 * too (0 where the file system has none) */
	struct ckpt_root_rec {
		uint64_t dev, ino;
		int64_t btime_sec;
		uint32_t btime_nsec, pad;
	} root;
	uint32_t has_root;
	struct ckpt_vma *vmas;
	uint32_t nvmas;
	struct ckpt_run *runs;
	uint32_t nruns;
	struct ckpt_fd *fds;
	uint32_t nfds;
};

/* ckpt_shm_rec.flags */
#define CKPT_SHM_MEMFD 0x1u /* a memfd (name kept); else anonymous shared memory */

/* One shmem object mapped shared by one or more tasks (wire == memory
 * layout); followed on the wire by nruns struct ckpt_run whose vaddr is the
 * byte offset in the object. Restored as one memfd mapped into every task. */
struct ckpt_shm_rec {
	uint32_t id;	   /* == its index in ckpt_image.shms */
	uint32_t flags;	   /* CKPT_SHM_* */
	uint64_t size;	   /* bytes (ftruncate); pages and mappings lie within it, rounded up */
	uint64_t dev, ino; /* informational: identity at dump time */
	uint32_t seals;	   /* F_GET_SEALS at dump time (0: none / unknown) */
	uint32_t pad;
	char name[CKPT_SHM_NAME]; /* memfd name, NUL terminated (MEMFD only) */
};

struct ckpt_shm {
	struct ckpt_shm_rec r;
	struct ckpt_run *runs; /* sorted, in the object, inside r.size */
	uint32_t nruns;
};

/**
 * ckpt_shm_span() - the object's size rounded up to whole pages
 * @o: the shared memory object
 *
 * Return: what mappings and runs may cover, in bytes.
 */
static inline uint64_t ckpt_shm_span(const struct ckpt_shm *o)
{
	return (o->r.size + CKPT_PAGE_SIZE - 1) & ~(uint64_t) (CKPT_PAGE_SIZE - 1);
}

struct ckpt_image {
	uint8_t id[16];
	struct ckpt_shm *shms; /* shared memory objects, before the tasks on the wire */
	uint32_t nshms;
	struct ckpt_task *tasks;
	uint32_t ntasks;
	uint64_t pages_len; /* bytes of page data in pages.img after the header page */
	uint32_t pages_crc;
	/* restore side: pages.img mapped read-only (page data starts at pages + 4096) */
	const uint8_t *pages_map;
	size_t pages_map_len;
	/* the page-chunk MACs (ckpt/seal.h): from the pages writer when dumping,
	 * from core.img when loading; not part of the encoded body */
	uint8_t (*page_macs)[CKPT_MAC_LEN];
	uint32_t npage_macs;
};

/**
 * ckpt_crc32c() - CRC32C (Castagnoli), incremental
 * @crc: the CRC so far: crc = ckpt_crc32c(crc, p, n), start at 0
 * @p: the bytes
 * @n: their count
 *
 * With the SSE4.2 instruction when the CPU has it, else a table.
 *
 * Return: the CRC including @p.
 */
uint32_t ckpt_crc32c(uint32_t crc, const void *p, size_t n);

/**
 * ckpt_root_id() - the identity of a root directory (device, inode, birth time)
 * @dirfd: a directory fd, or AT_FDCWD
 * @path: relative to @dirfd, or "" for @dirfd itself
 * @out: filled
 *
 * Return: 0 or a negative errno.
 */
int ckpt_root_id(int dirfd, const char *path, struct ckpt_root_rec *out);

/**
 * ckpt_root_same() - are @a and @b the same directory?
 * @a: one identity (ckpt_root_id)
 * @b: the other
 *
 * Device, inode and birth time must all match: not one whose numbers were
 * reused.
 *
 * Return: true if they are the same directory.
 */
bool ckpt_root_same(const struct ckpt_root_rec *a, const struct ckpt_root_rec *b);

/**
 * ckpt_image_free() - free everything an image owns (not the struct itself)
 * @img: the image (zeroed afterwards; a zeroed image is fine); a mapped
 *       pages.img is unmapped
 */
void ckpt_image_free(struct ckpt_image *img);

/**
 * ckpt_image_encode() - serialize the core (header + body)
 * @img: the image
 * @out: gets a malloc'd buffer (the caller frees it)
 * @len: gets its length
 * @err: what failed
 *
 * The header carries CRC32Cs of itself and the body; no MAC
 * (ckpt_image_write_core adds them).
 *
 * Return: 0, or -ENOMEM or -E2BIG (a record too large) with @err.
 */
int ckpt_image_encode(const struct ckpt_image *img, uint8_t **out, size_t *len,
		      struct urs_err *err);

/**
 * ckpt_image_decode() - parse and validate a core buffer
 * @buf: the encoded core (header + body), untrusted
 * @len: its length
 * @img: filled; must be zeroed
 * @err: what is wrong
 *
 * Every length, count, address and index is checked; on failure img is
 * freed and the message says what is wrong. Checks the CRCs, not the MAC:
 * authentication is ckpt_image_check_core()'s and ckpt_image_load()'s.
 *
 * Return: 0; -EINVAL (not an ursa core, a bad record); -EBADMSG (checksum
 * or length mismatch: corrupted); -EPROTONOSUPPORT (another version or
 * architecture); -ENOMEM.
 */
int ckpt_image_decode(const uint8_t *buf, size_t len, struct ckpt_image *img, struct urs_err *err);

struct ckpt_framemap; /* ckpt/framemap.c */

/* Pages file: writer state used by the dumper. */
struct ckpt_pages_writer {
	int fd;
	uint64_t off; /* bytes of page data written so far */
	uint32_t crc;
	void *sink;		      /* the batched io_uring writer (ckpt/pagesink.c) */
	struct ckpt_pagemacs macs;    /* the chunk MACs, as the data goes by */
	struct ckpt_framemap *frames; /* pages stored once per frame (ckpt/framemap.h) */
};
/**
 * ckpt_pages_open() - start pages.img in @dirfd for image @id
 * @w: the writer (cleared first)
 * @dirfd: the image directory; a stale core.img there is removed first
 * @seal: the key its chunks are MAC'd under (must outlive @w's use)
 * @id: the image id
 * @err: what failed
 *
 * See ckpt_pagesink_open(). Call ckpt_pages_abort() after a failure too.
 *
 * Return: 0 or a negative errno with @err.
 */
int ckpt_pages_open(struct ckpt_pages_writer *w, int dirfd, const struct ckpt_seal *seal,
		    const uint8_t id[16], struct urs_err *err);

/**
 * ckpt_pages_open_stream() - ckpt_pages_open(), the page data going to a stream
 * @w: the writer (cleared first)
 * @dirfd: the image directory: its pages.img gets only the header page
 * @stream_fd: a pipe or socket the page data is written to, in order
 *             (store/remote.h uploads it); -1: into pages.img
 * @seal: the key its chunks are MAC'd under (must outlive @w's use)
 * @id: the image id
 * @err: what failed
 *
 * Whoever reads the stream puts it back at offset CKPT_PAGE_SIZE of
 * pages.img. Call ckpt_pages_abort() after a failure too.
 *
 * Return: 0 or a negative errno with @err.
 */
int ckpt_pages_open_stream(struct ckpt_pages_writer *w, int dirfd, int stream_fd,
			   const struct ckpt_seal *seal, const uint8_t id[16], struct urs_err *err);

/**
 * ckpt_pages_append() - append @n bytes of page data
 * @w: the writer
 * @p: the bytes (copied before this returns)
 * @n: their count, a multiple of the page size
 * @off: gets their offset in the page data
 * @err: what failed
 *
 * Feeds the chunk MACs and the CRC as the data goes by; may wait for a
 * write in flight.
 *
 * Return: 0, -ENOMEM (the MAC array), or the write's negative errno.
 */
int ckpt_pages_append(struct ckpt_pages_writer *w, const void *p, size_t n, uint64_t *off,
		      struct urs_err *err);

/**
 * ckpt_pages_finish() - flush, write the header page with the image id, close
 * @w: the writer; w->macs then holds every chunk MAC (for core.img)
 * @id: the image id
 * @err: what failed
 *
 * Return: 0; -ENOMEM (the MAC array: nothing written yet); or the write's
 * negative errno (the sink freed and the fd closed all the same). pages.img
 * stays on failure, for ckpt_pages_abort() to remove.
 */
int ckpt_pages_finish(struct ckpt_pages_writer *w, const uint8_t id[16], struct urs_err *err);

/**
 * ckpt_pages_abort() - give up: wait for writes in flight, close and remove
 *                      pages.img, free the chunk MACs
 * @w: the writer (after ckpt_pages_open, whatever it returned)
 * @dirfd: the image directory
 */
void ckpt_pages_abort(struct ckpt_pages_writer *w, int dirfd);

/**
 * ckpt_image_write_core() - write core.img
 * @img: the image; pages_len/pages_crc must be set from the pages writer,
 *       img->page_macs must hold one MAC per chunk of pages_len
 * @dirfd: the image directory
 * @seal: the key of the core MAC
 * @err: what failed
 *
 * Temp file + rename, so a complete core.img means a complete image: the
 * encoded core, the page-chunk MACs, the core MAC under @seal. Not synced.
 *
 * Return: 0; -EINVAL (wrong number of page MACs); -ENOMEM; or the failing
 * call's negative errno.
 */
int ckpt_image_write_core(const struct ckpt_image *img, int dirfd, const struct ckpt_seal *seal,
			  struct urs_err *err);

/**
 * ckpt_image_check_core() - authenticate, decode and validate DIR/core.img
 * @dir: the image directory
 * @seal: the key
 * @err: what is wrong
 *
 * What a restore checks first, without the page data: the dumper's output
 * must load back before the checkpoint ends the sandbox, and a restore
 * refuses a tampered core before it creates anything.
 *
 * Return: 0; -EBADMSG (corrupted, truncated, or failing authentication:
 * altered or another host's key); or ckpt_image_decode()'s and the file
 * access's negative errno.
 */
int ckpt_image_check_core(const char *dir, const struct ckpt_seal *seal, struct urs_err *err);

/**
 * ckpt_image_load() - load an image directory for a restore
 * @dir: the image directory
 * @seal: the key
 * @img: filled (zeroed first; ckpt_image_free releases it)
 * @err: what is wrong, naming the file
 *
 * core.img authenticated, decoded and validated, pages.img mapped
 * read-only (populated: the whole file is read here) and checked (header,
 * id, length, checksum, every chunk's MAC). Nothing is created.
 *
 * Return: 0, or as ckpt_image_check_core() (-EBADMSG also for a pages.img
 * of another image, or altered); @img is freed on failure.
 */
int ckpt_image_load(const char *dir, const struct ckpt_seal *seal, struct ckpt_image *img,
		    struct urs_err *err);

#define CKPT_LOAD_LAZY 0x1u /* pages.img mapped, not read: its chunks are checked at use */

/**
 * ckpt_image_load_ex() - ckpt_image_load() with flags
 * @dir: the image directory
 * @pages_fd: pages.img, open (a lazy remote restore's memfd, filled by
 *            ursa-store: store/serve.h), or -1: @dir's (the caller keeps
 *            its fd either way)
 * @seal: the key
 * @flags: CKPT_LOAD_LAZY: pages.img is mapped but not read, its header,
 *         id and length checked, its chunks left to ckpt_lazy_verify()
 * @img: filled (zeroed first; ckpt_image_free releases it)
 * @err: what is wrong, naming the file
 *
 * Return: as ckpt_image_load().
 */
int ckpt_image_load_ex(const char *dir, int pages_fd, const struct ckpt_seal *seal, unsigned flags,
		       struct ckpt_image *img, struct urs_err *err);

/**
 * ckpt_page_is_zero() - does a page hold only zeros (then it is not stored)?
 * @p: CKPT_PAGE_SIZE bytes, 8-byte aligned
 *
 * Return: true if every byte is 0.
 */
static inline bool ckpt_page_is_zero(const uint8_t *p)
{
	const uint64_t *q = (const uint64_t *) p;
	for (unsigned i = 0; i < CKPT_PAGE_SIZE / 8; i += 4)
		if (q[i] | q[i + 1] | q[i + 2] | q[i + 3])
			return false;
	return true;
}

#endif
