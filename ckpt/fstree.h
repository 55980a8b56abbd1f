/*
 * ckpt/fstree.h — a directory tree as one stream, and back: what a
 * checkpoint keeps of the files a sandbox wrote that live nowhere else (the
 * writable layer of `ursa do`, tmpfs mounts). Owners, modes, times, xattrs,
 * hard links, symlinks, device nodes and FIFOs (overlayfs whiteouts are 0:0
 * character devices, its opaque markers xattrs) are kept; sockets are not
 * (nothing can be bound to a restored socket file). The stream is read as
 * untrusted input: every name is one path component created relative to a
 * directory the unpacker made itself, so nothing lands outside the target.
 */
#ifndef URSA_CKPT_FSTREE_H
#define URSA_CKPT_FSTREE_H

#include <stdint.h>

#include "runtime/err.h"

struct urs_fstree_stats {
	uint64_t entries;    /* records written or read (directories, files, links...) */
	uint64_t data_bytes; /* file contents */
	uint64_t skipped;    /* sockets, other mounts' contents: not in the stream */
};

/*
 * Write the tree beneath @dirfd to @fd (from its current position), except
 * the top-level names in @skip (NULL-terminated, may be NULL). Mount points
 * below @dirfd (of any type) are left out: what is mounted belongs to its
 * own file system, and the mount points are the configuration's to make.
 * Entries are stat'ed without asking another file system (AT_STATX_DONT_SYNC):
 * a FUSE server may be frozen with the sandbox. A file that changes while
 * it is read fails the pack (-ESTALE). Returns 0 or -errno with @err naming the file.
 */
int urs_fstree_pack(int dirfd, int fd, const char *const *skip, struct urs_fstree_stats *st,
		    struct urs_err *err);

/*
 * Re-create a stream written by urs_fstree_pack in the directory @dirfd,
 * which should be empty. The whole stream is checked (format, CRC32C)
 * before anything is created; on a later failure what was created stays
 * (the caller removes the directory). Returns 0 or -errno with @err.
 */
int urs_fstree_unpack(int fd, int dirfd, struct urs_fstree_stats *st, struct urs_err *err);

/* Only the check of urs_fstree_unpack (creates nothing). */
int urs_fstree_check(int fd, struct urs_fstree_stats *st, struct urs_err *err);

#endif
