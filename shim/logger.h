/*
 * shim/logger.h — containerd's logging binaries: a task whose stdout is
 * `binary:///PATH?KEY=VALUE&...` (ctr run --log-uri, a CRI runtime's
 * logger) has its output read by that program, as containerd's runc shim
 * does it: the program runs with the process's stdout pipe on fd 3, its
 * stderr pipe on fd 4 and a ready pipe on fd 5, CONTAINER_ID and
 * CONTAINER_NAMESPACE as its whole environment (CONTAINER_ID is the exec's
 * id for an exec'd process, as containerd's) and "KEY VALUE" per query
 * pair as its arguments (a bare key: KEY ""; a repeated key: its first
 * value), no signal blocked or ignored; the process starts once the
 * program closes fd 5 (or writes to it). It ends by itself at end of input
 * (the process and its children gone); a process deleted before that gets
 * SIGTERM (never escalated to SIGKILL, unlike containerd's 12 s).
 */
#ifndef URSA_SHIM_LOGGER_H
#define URSA_SHIM_LOGGER_H

#include <stdbool.h>
#include <sys/types.h>

#include "runtime/err.h"

/* how long a logging binary may take to say it is ready (the default) */
#define SHIM_LOGGER_READY_MS 10000

struct urs_loop;

/**
 * shim_logger_is() - does @uri name a logging binary?
 * @uri: a stdio URI, or NULL
 *
 * Return: true for binary://.
 */
static inline bool shim_logger_is(const char *uri)
{
	return uri && !__builtin_strncmp(uri, "binary://", 9);
}

/**
 * shim_logger_spawn() - start the logging binary @uri names
 * @uri: binary:///PATH[?KEY=VALUE&...] (percent-encoded)
 * @id: the container's id, or the exec's (CONTAINER_ID)
 * @ns: containerd's namespace (CONTAINER_NAMESPACE)
 * @out: the process's stdout (a pipe's write end)
 * @err: its stderr
 * @ready: its ready pipe's read end: readable or hung up once the program
 *         is ready (shim_logger_await())
 * @pid: the program's pid (a child: reap it)
 * @error: why it could not be started
 *
 * Return: 0, or a negative errno with nothing left (no fd, no child).
 */
int shim_logger_spawn(const char *uri, const char *id, const char *ns, int *out, int *err,
		      int *ready, pid_t *pid, struct urs_err *error);

/* the wait's end: @err 0 (ready), -ETIMEDOUT or the poll's error, @msg why */
typedef void (*shim_logger_done)(void *arg, int err, const char *msg);

/**
 * shim_logger_await() - wait on @loop for a logging binary to be ready
 * @loop: the shim's loop, on its thread
 * @fd: the ready pipe from shim_logger_spawn(); taken (closed at the end)
 * @uri: the binary's URI: its path names it in the message (not its query)
 * @ms: the deadline
 * @done: called once, from the loop (never inside this call), with 0 or
 *        why not; killing the program is the caller's
 * @arg: its argument
 *
 * Nothing blocks: a poll of @fd and a timer.
 *
 * Return: 0, or -ENOMEM (@fd closed, @done not called).
 */
int shim_logger_await(struct urs_loop *loop, int fd, const char *uri, unsigned ms,
		      shim_logger_done done, void *arg);

#endif
