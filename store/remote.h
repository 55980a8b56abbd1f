/*
 * store/remote.h — a checkpoint image in object storage: files streamed
 * into sealed objects (store/crypt.h) under s3://BUCKET/PREFIX, committed by
 * an index written last, and read back into a directory.
 *
 * Objects: PREFIX/N.FILE, one per extent of a file (N its number, from 1),
 * and PREFIX/index (object 0): "ursa-index 2", one line per extent,
 * "N OFFSET LENGTH FILE": object N holds LENGTH bytes of FILE at OFFSET,
 * then an empty line and the bytes of the extents whose N is 0: a small
 * regular file (the image's metadata) travels inside the index, so a
 * restore reads it with the index in one request and a checkpoint's
 * commit writes one object, not one per file (urs_remote_put_file).
 * "ursa-index 1", no N of 0 and no empty line, is what an image without
 * inline files gets, and what older readers know.
 * Without the index there is no image; restore reads the index first and
 * every object it names, each authenticated chunk by chunk, so a missing,
 * truncated, swapped, altered or foreign object, or another image's index,
 * is refused before the caller uses any file.
 *
 * Streaming: an fd is read (a pipe: the dumper's pages) into a few part
 * buffers, sealed in place, and each full buffer goes up as one part of a
 * multipart upload while the next fills; with every buffer in flight the
 * reader stops reading, and the writer on the pipe waits (backpressure).
 * Memory: nbufs × (part_chunks × 1 MiB), nothing per byte. An object that
 * fits one buffer is one PutObject.
 *
 * The calls are synchronous: each runs the loop until it is done, so the
 * S3 client's transfers and the reads overlap underneath. One thread.
 */
#ifndef URSA_STORE_REMOTE_H
#define URSA_STORE_REMOTE_H

#include <stdint.h>

#include "runtime/err.h"
#include "runtime/loop.h"
#include "store/crypt.h"
#include "store/serve.h"
#include "store/s3.h"

#define URS_REMOTE_INDEX    "index"
#define URS_REMOTE_FILES    512 /* objects in one image at most */
#define URS_REMOTE_FILE_MAX 255 /* a file's relative path */

/**
 * struct urs_remote_opts - sizes; zero fields take the defaults
 * @part_chunks: sealed chunks (1 MiB of plaintext each) per part: default 8,
 *               at least 5 (S3's smallest part)
 * @nbufs: part buffers, so parts in flight + 1: default 4, at least 2
 * @single_bufs: serving (urs_remote_serve), more buffers, for single
 *               chunks only (a fault's, a read-ahead's, a working set's):
 *               no range (the eager read's either) takes them, so a
 *               fault's chunk waits for no range of the prefetch to end.
 *               One chunk is all each ever holds (one 2 MiB huge page
 *               resident, or 1 MiB of 4 KiB pages)
 * @no_inline: put every file into an object of its own, none into the
 *             index (tests: the path an image's larger files take)
 * @s3: the client's tuning, or NULL
 */
struct urs_remote_opts {
	uint32_t part_chunks, nbufs, single_bufs;
	bool no_inline;
	const struct urs_s3_opts *s3;
};

/**
 * struct urs_remote_stats - what moved
 * @objects: objects written or read
 * @plain: plaintext bytes
 * @sealed: bytes stored (headers, tags included)
 * @parts: multipart parts uploaded
 * @peak_parts: most parts (or ranged reads) in flight at once
 */
struct urs_remote_stats {
	uint32_t objects;
	uint64_t plain, sealed, parts;
	uint32_t peak_parts;
};

struct urs_remote;

/**
 * urs_remote_open() - a client for one image location
 * @loop: the calling thread's loop
 * @conf: the S3 settings
 * @bucket: the bucket
 * @prefix: the image's prefix ("" or without a trailing '/')
 * @master: the host's checkpoint key (the image key is derived from it)
 * @opts: sizes, or NULL
 * @out: the client
 * @err: what failed
 *
 * Return: 0, -ENOMEM, -EINVAL.
 */
int urs_remote_open(struct urs_loop *loop, const struct urs_s3_conf *conf, const char *bucket,
		    const char *prefix, const uint8_t master[URS_CRYPT_KEY_LEN],
		    const struct urs_remote_opts *opts, struct urs_remote **out,
		    struct urs_err *err);

/**
 * urs_remote_close() - release the client (after put_commit, put_abort or get)
 * @r: the client, or NULL
 */
void urs_remote_close(struct urs_remote *r);

/**
 * urs_remote_stats() - the counters
 * @r: the client
 *
 * Return: valid while @r lives.
 */
const struct urs_remote_stats *urs_remote_stats(const struct urs_remote *r);

/**
 * urs_remote_put_begin() - start a new image: a fresh image id, and the
 *                          location's index deleted (the old image, if
 *                          any, is no longer one)
 * @r: the client
 * @err: what failed
 *
 * Return: 0 or a negative errno.
 */
int urs_remote_put_begin(struct urs_remote *r, struct urs_err *err);

/**
 * urs_remote_put_fd() - stream @fd to its end into the next object
 * @r: the client, after put_begin
 * @fd: what to read (a pipe or a file, from its current position)
 * @file: the file the bytes belong to (relative, no "..")
 * @off: where in @file
 * @abort_fd: -1, or an fd whose readability (data, EOF or hang-up) stops
 *            the transfer with -ECANCELED; but the line "cut N\n" on it,
 *            N the offset in @file this object reached (all of it read
 *            from @fd, a whole number of URS_CRYPT_CHUNK), ends the
 *            object there: it is completed, and the caller goes on with
 *            the next object of @file at N (a migration's pre-copied page
 *            data, committed while the sandbox runs: ckpt_dump_opts.pages_cut)
 * @err: what failed
 *
 * Return: 0 (@fd ended), 1 (cut), or a negative errno (the object is not
 * part of the image then; put_abort removes what was written).
 */
int urs_remote_put_fd(struct urs_remote *r, int fd, const char *file, uint64_t off, int abort_fd,
		      struct urs_err *err);

/**
 * urs_remote_put_file() - a regular file of the image, whole: inside the
 *                         index while the image's small files fit there
 *                         (512 KiB in all), else as urs_remote_put_fd()
 * @r: the client, after put_begin
 * @fd: the file, at its start
 * @file: its name in the image (relative, no "..")
 * @abort_fd: as urs_remote_put_fd()
 * @err: what failed
 *
 * Return: 0, or a negative errno (-EFBIG: it grew while it was read).
 */
int urs_remote_put_file(struct urs_remote *r, int fd, const char *file, int abort_fd,
			struct urs_err *err);

/**
 * urs_remote_put_commit() - write the index: the image exists from now on
 * @r: the client, every object written
 * @err: what failed
 *
 * Return: 0 or a negative errno.
 */
int urs_remote_put_commit(struct urs_remote *r, struct urs_err *err);

/**
 * urs_remote_journal() - name the file that holds the open multipart
 *                        upload while there is one
 * @r: the client
 * @path: the journal (NULL: none); written, by rename, once an upload has
 *        its id, removed once it is completed or aborted: a process killed
 *        between leaves it for urs_remote_abort_upload()
 * @head: lines the caller wants in it before the upload's ("NAME VALUE\n")
 *
 * The journal holds @head, then "bucket B", "key K" and "upload ID" lines.
 *
 * Return: 0, or -ENAMETOOLONG / -E2BIG.
 */
int urs_remote_journal(struct urs_remote *r, const char *path, const char *head);

/**
 * urs_remote_abort_upload() - abort the multipart upload @upload_id of @key
 * @r: the client (of the upload's bucket)
 * @key: the object's key
 * @upload_id: the upload
 * @err: what failed
 *
 * Return: 0 (aborted), -ENOENT (no such upload: aborted or completed
 * before), or another negative errno.
 */
int urs_remote_abort_upload(struct urs_remote *r, const char *key, const char *upload_id,
			    struct urs_err *err);

/**
 * urs_remote_put_abort() - remove every object this image wrote (and abort
 *                          an unfinished multipart upload)
 * @r: the client
 * @err: the first failure, naming the object
 *
 * Return: 0, or the first negative errno (an object may be left behind).
 */
int urs_remote_put_abort(struct urs_remote *r, struct urs_err *err);

/**
 * urs_remote_put_ws() - store a lazy restore's recorded working set beside
 *                       the image (URS_REMOTE_WS_OBJECT, store/serve.h)
 * @r: a client for the image's location
 * @p: the record (ckpt/workingset.h; opaque here)
 * @n: its length, at most URS_REMOTE_WS_MAX
 * @err: what failed
 *
 * Sealed as one chunk of an object of its own random id (its own key);
 * urs_remote_get_ex() opens it into the directory, the restore checks
 * which image it is of.
 *
 * Return: 0 or a negative errno.
 */
int urs_remote_put_ws(struct urs_remote *r, const void *p, size_t n, struct urs_err *err);

/**
 * urs_remote_get() - read the image into a directory
 * @r: the client
 * @dirfd: an empty directory; its files and subdirectories are created
 *         (0600/0700)
 * @err: what failed, naming the object
 *
 * Return: 0, -ENOENT (no index: no image, or an unfinished one), -EBADMSG
 * (an object fails authentication: tampered, truncated, from another image
 * or sealed under another key), or another negative errno. After a failure
 * the directory holds partial files: the caller removes it.
 */
int urs_remote_get(struct urs_remote *r, int dirfd, struct urs_err *err);

/**
 * urs_remote_get_ex() - urs_remote_get(), one object left to be served later
 * @r: the client
 * @dirfd: an empty directory
 * @lazy: the file whose object at @lazy_off is not read now, or NULL (then
 *        as urs_remote_get); that file is made in memory, as long as the
 *        object makes it, for urs_remote_serve() to fill
 *        (urs_remote_lazy_fd)
 * @lazy_off: where that object goes in it
 * @err: what failed
 *
 * Return: as urs_remote_get(); -EBADMSG also when the image has no such
 * object.
 */
int urs_remote_get_ex(struct urs_remote *r, int dirfd, const char *lazy, uint64_t lazy_off,
		      struct urs_err *err);

/**
 * urs_remote_lazy_fd() - the file urs_remote_get_ex() left to be served
 * @r: the client, after urs_remote_get_ex() with a @lazy file
 *
 * A memfd: the file's bytes before the lazy object, the rest zero until
 * urs_remote_serve() fills it; sealed at its size (store/serve.h
 * URS_REMOTE_SERVE_PAGES). The file of that name in the directory keeps
 * those first bytes alone: the page data is never written to a file
 * system (shmem, swappable as the workload's memory is).
 *
 * Return: the fd (@r's: not to be closed), or -1 if there is none.
 */
int urs_remote_lazy_fd(const struct urs_remote *r);

/**
 * urs_remote_serve() - fill the object urs_remote_get_ex() left, on demand
 * @r: the client, after urs_remote_get_ex() with a @lazy file
 * @dirfd: the directory it filled
 * @sock: a stream socket: struct urs_remote_chunk_req in (a range of
 *        chunks), one struct urs_remote_chunk_reply out per chunk once it
 *        is in the memfd (opened and authenticated: as urs_remote_get), in
 *        any order; single-chunk requests (faults) go ahead of ranges
 * @first: chunks to fetch before any is asked for, one byte each (2: first
 *         of all, 1: then, 0: not), or NULL. They are written to the memfd
 *         but answered only once asked for (at once if by then they are
 *         in): the requester sees the protocol as without them, sooner.
 *         Once @sock reaches its end, nothing more is fetched
 * @nfirst: @first's length: the object's chunks (another is ignored)
 * @err: what failed
 *
 * The caller sends the memfd first (urs_remote_lazy_fd; store/serve.h
 * URS_REMOTE_SERVE_PAGES), before anything is asked. Up to the client's
 * buffers' ranges are in flight; requests wait in
 * order. Ends when @sock closes and nothing is in flight, or at the first
 * failure, which is replied first (to its request, or as chunk UINT32_MAX).
 *
 * Return: 0, or the failure's negative errno.
 */
int urs_remote_serve(struct urs_remote *r, int dirfd, int sock, const uint8_t *first, size_t nfirst,
		     struct urs_err *err);

/**
 * urs_remote_index_parse() - parse an index's plaintext (version 1 or 2)
 * @p: the plaintext
 * @n: its length
 * @visit: called for each entry once the whole index has parsed, with the
 *         entry's bytes (@len of them, inside @p) when it is inline (@obj
 *         0), else NULL; a negative return stops the parse
 * @arg: for @visit
 * @err: what is wrong, naming the line
 *
 * Return: the number of entries, or -EBADMSG (or @visit's error).
 */
int urs_remote_index_parse(const char *p, size_t n,
			   int (*visit)(void *arg, uint32_t obj, uint64_t off, uint64_t len,
					const char *file, const void *data),
			   void *arg, struct urs_err *err);

/**
 * urs_remote_file_ok() - is @file a path an image may name?
 * @file: a relative path
 *
 * Return: true for 1..URS_REMOTE_FILE_MAX bytes of [A-Za-z0-9._-] in
 * components separated by single '/', none of them "." or "..".
 */
bool urs_remote_file_ok(const char *file);

#endif
