/*
 * shim/console.h — a task's terminal: the console socket `ursa create
 * --console-socket` (or `exec --tty`) sends the pty master over, and the
 * copy between containerd's stdio FIFOs and that master on the loop (stdin
 * FIFO -> master, master -> stdout FIFO), as runc's shim copies it. When
 * the terminal's output ends (no holder of the slave end left) the stdout
 * FIFO is closed and the input copy stops; the record stays the owner's
 * until shim_console_close(), which frees it once no op is in flight.
 */
#ifndef URSA_SHIM_CONSOLE_H
#define URSA_SHIM_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/loop.h"

struct shim_console;

/**
 * shim_console_listen() - a socket for the runtime to send the pty master to
 * @dir: a directory only the shim writes (the path is DIR/console-N.sock)
 * @path: the socket's path (for --console-socket)
 * @len: its size
 *
 * Return: the listening socket (non-blocking), or a negative errno.
 */
int shim_console_listen(const char *dir, char *path, size_t len);

/**
 * shim_console_take() - the pty master the runtime sent (it has exited)
 * @lfd: from shim_console_listen() (closed here, its path unlinked)
 * @path: its path
 *
 * Return: the master fd, or a negative errno (-EAGAIN: nothing was sent).
 */
int shim_console_take(int lfd, const char *path);

/**
 * shim_console_start() - copy between @in, @master and @out on @loop
 * @loop: the loop
 * @master: the pty master (owned from here)
 * @in: containerd's stdin FIFO, or -1 (owned from here)
 * @out: containerd's stdout FIFO (owned from here)
 *
 * Return: the console, or NULL (every fd closed).
 */
struct shim_console *shim_console_start(struct urs_loop *loop, int master, int in, int out);

/**
 * shim_console_resize() - set the terminal's size
 * @c: the console
 * @cols: columns
 * @rows: rows
 *
 * Return: 0 or a negative errno.
 */
int shim_console_resize(struct shim_console *c, uint32_t cols, uint32_t rows);

/**
 * shim_console_close_stdin() - stop copying input (CloseIO)
 * @c: the console
 */
void shim_console_close_stdin(struct shim_console *c);

/**
 * shim_console_close() - stop both copies; the record goes when they have
 * @c: the console (not to be used after this)
 */
void shim_console_close(struct shim_console *c);

#endif
