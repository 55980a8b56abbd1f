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

/**
 * urs_fstree_pack() - write the tree beneath @dirfd to @fd
 * @dirfd: the top directory
 * @fd: the stream, written from its current position (buffered writes)
 * @skip: top-level names to leave out (NULL-terminated, may be NULL)
 * @st: filled with what was written (may be NULL)
 * @err: names the file that failed
 *
 * Mount points below @dirfd (of any type) are left out: what is mounted
 * belongs to its own file system, and the mount points are the
 * configuration's to make. Entries are stat'ed without asking another file
 * system (AT_STATX_DONT_SYNC): a FUSE server may be frozen with the
 * sandbox. Blocks on the file system for the whole tree.
 *
 * Return: 0 or a negative errno with @err naming the file: -ENOTDIR if
 * @dirfd is not a directory, -ESTALE for a file that changed while it was
 * read, -ENOMEM, or the failing call's.
 */
int urs_fstree_pack(int dirfd, int fd, const char *const *skip, struct urs_fstree_stats *st,
		    struct urs_err *err);

/**
 * urs_fstree_unpack() - re-create a stream written by urs_fstree_pack()
 * @fd: the stream, read from its current position; must be seekable (it
 *      is read twice)
 * @dirfd: the directory to fill, which should be empty
 * @st: filled with what was read (may be NULL)
 * @err: what is wrong with the stream, or the file that failed
 *
 * The whole stream is checked (format, CRC32C) before anything is
 * created; on a later failure what was created stays (the caller removes
 * the directory). Every name is created relative to a directory made here
 * (O_EXCL, O_NOFOLLOW): nothing lands outside @dirfd.
 *
 * Return: 0 or a negative errno with @err: -EINVAL (not a tree image, a bad
 * record), -EBADMSG (checksum mismatch, trailing data), -ENOMEM, or the
 * failing call's.
 */
int urs_fstree_unpack(int fd, int dirfd, struct urs_fstree_stats *st, struct urs_err *err);

/**
 * urs_fstree_check() - only the check of urs_fstree_unpack() (creates nothing)
 * @fd: the stream, from its current position; seekable
 * @st: filled with what was read (may be NULL)
 * @err: what is wrong with the stream
 *
 * Return: as urs_fstree_unpack().
 */
int urs_fstree_check(int fd, struct urs_fstree_stats *st, struct urs_err *err);

#endif
