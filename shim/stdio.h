/*
 * shim/stdio.h — a task's stdio as containerd names it: FIFO paths (a bare
 * path or fifo://PATH, ctr's and CRI's), file://PATH, or empty (/dev/null).
 * The opened fds become the process's own stdio: no copy through the shim.
 * Because the process reads its stdin FIFO directly, the shim keeps a
 * writer open on it until CloseIO, so the process sees end-of-file when
 * the client says it is done, not when the client's end closes first (as
 * runc's shim does with its copy).
 */
#ifndef URSA_SHIM_STDIO_H
#define URSA_SHIM_STDIO_H

#include <stddef.h>

#include "runtime/err.h"

struct shim_stdio {
	int fd[3];	/* the process's stdin, stdout, stderr */
	int stdin_keep; /* the shim's writer on the stdin FIFO, or -1 */
};

/**
 * shim_stdio_open() - open what a process's stdio names
 * @io: filled in (every fd -1 on failure)
 * @in: stdin's path or URI ("" for none)
 * @out: stdout's
 * @err: stderr's (not opened with @terminal: the terminal carries both)
 * @terminal: the process has a terminal (stdout stands for the console)
 * @error: on failure, what could not be opened and why
 *
 * Return: 0 or a negative errno.
 */
int shim_stdio_open(struct shim_stdio *io, const char *in, const char *out, const char *err,
		    int terminal, struct urs_err *error);

/**
 * shim_stdio_close() - close the process's ends (after they were handed on)
 * @io: the stdio (the kept stdin writer stays open)
 */
void shim_stdio_close(struct shim_stdio *io);

/**
 * shim_stdio_close_stdin() - close the kept stdin writer (CloseIO)
 * @io: the stdio
 */
void shim_stdio_close_stdin(struct shim_stdio *io);

#endif
