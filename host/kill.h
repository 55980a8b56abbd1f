/*
 * host/kill.h — signalling a container from its record (host/state.h), as
 * `ursa kill` does and the shim's Kill does in-process: the init through a
 * pidfd checked against its start time (a reused pid is someone else), or
 * every process of its cgroup but its supervisor.
 */
#ifndef URSA_HOST_KILL_H
#define URSA_HOST_KILL_H

#include <stdbool.h>

#include "host/state.h"
#include "runtime/err.h"

/**
 * urs_state_kill() - signal the container @st records
 * @st: its record (urs_state_read())
 * @sig: the signal
 * @all: every process in its cgroup but its live supervisor, instead of
 *       the init alone
 * @err: why not ("container not running")
 *
 * A paused container is thawed for SIGKILL, as runc does: a frozen task
 * dies only once thawed (other signals wait for its resume).
 *
 * Return: 0, -ESRCH when it is not running (stopped, or its init gone), or
 * another negative errno.
 */
int urs_state_kill(const struct urs_state *st, int sig, bool all, struct urs_err *err);

#endif
