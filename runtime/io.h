/*
 * runtime/io.h — the small blocking helpers every layer needs and each
 * once wrote for itself: whole writes (short writes and EINTR handled),
 * files replaced all or nothing (a temporary renamed over them) and a
 * monotonic clock in milliseconds. Not for the loop's hot paths, which
 * go through io_uring.
 */
#ifndef URSA_RUNTIME_IO_H
#define URSA_RUNTIME_IO_H

#include <stddef.h>
#include <stdint.h>

/**
 * urs_write_all() - write all of @p to @fd
 * @fd: a blocking fd
 * @p: the bytes
 * @n: their count
 *
 * Return: 0, or a negative errno (-EIO when the fd takes nothing).
 */
int urs_write_all(int fd, const void *p, size_t n);

/**
 * urs_pwrite_all() - write all of @p to @fd at @off
 * @fd: a blocking, seekable fd
 * @p: the bytes
 * @n: their count
 * @off: the file offset of the first byte
 *
 * Return: 0, or a negative errno (-EIO when the fd takes nothing).
 */
int urs_pwrite_all(int fd, const void *p, size_t n, uint64_t off);

/**
 * urs_pread_all() - read exactly @n bytes of @fd at @off
 * @fd: a blocking, seekable fd
 * @p: where they go
 * @n: their count
 * @off: the file offset of the first byte
 *
 * Return: 0, or a negative errno (-EIO when the file ends first).
 */
int urs_pread_all(int fd, void *p, size_t n, uint64_t off);

/**
 * urs_read_line() - one line of @fd, read a byte at a time (nothing past it
 *                   is taken: the rest stays for the next reader)
 * @fd: a blocking fd (a pipe between processes)
 * @buf: the line, without its newline, NUL-terminated
 * @len: @buf's size (a longer line is cut there)
 *
 * Return: its length; what came before EOF or an error, if one ended it.
 */
size_t urs_read_line(int fd, char *buf, size_t len);

/**
 * urs_read_small() - a small file's text (/proc entries, records)
 * @path: the file
 * @buf: its first @len - 1 bytes, NUL-terminated
 * @len: @buf's size
 *
 * One read(2): enough for what /proc gives in one piece and for files of a
 * few bytes; a longer file is cut.
 *
 * Return: the length read, or a negative errno (-ENODATA: empty).
 */
ssize_t urs_read_small(const char *path, char *buf, size_t len);

/**
 * urs_write_file_atomic() - make @path hold @p, all or nothing
 * @path: the file
 * @tmp: a name beside it, written first and renamed over @path
 * @p: the bytes
 * @n: their count
 * @mode: the file's mode, whatever the umask
 *
 * A reader sees the old file or the whole new one, never part of it; on
 * failure @tmp is gone and @path as it was. @tmp is made anew (whatever was
 * there, a symlink included, is removed first, never followed); one writer
 * per @tmp at a time.
 *
 * Return: 0, or a negative errno (ENOSPC says so).
 */
int urs_write_file_atomic(const char *path, const char *tmp, const void *p, size_t n,
			  unsigned mode);

/**
 * urs_now_ms() - CLOCK_MONOTONIC in milliseconds (for durations in logs and
 *                statistics, never for deciding what is correct)
 *
 * Return: milliseconds, with the fraction, since an unspecified start.
 */
double urs_now_ms(void);

#endif
