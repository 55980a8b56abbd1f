/*
 * shim/reaper.h — the shim's children and their exits. The shim is a child
 * subreaper: a container's init and its exec'd processes (made by `ursa`
 * commands that exit) become its children, as do the `ursa` commands it
 * runs. SIGCHLD arrives through a signalfd read on the loop; every child
 * that exited is reaped with waitpid() and handed to the watch on its pid.
 * An exit that comes before its pid is watched (an init that dies before
 * `ursa create` has returned its pid) is kept and given to the watch when
 * it is made, if it came after the caller asked for the process (pids are
 * reused: a kept exit of an older process with the same pid is not it).
 */
#ifndef URSA_SHIM_REAPER_H
#define URSA_SHIM_REAPER_H

#include <signal.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/loop.h"

/* @status: as waitpid() gives it; @at: when it was reaped (CLOCK_REALTIME) */
typedef void (*shim_exit_cb)(void *arg, pid_t pid, int status, const struct timespec *at);

struct shim_watch {
	pid_t pid;
	shim_exit_cb cb;
	void *arg;
};

#define SHIM_UNCLAIMED 64

struct shim_exit {
	uint64_t seq; /* the reaper's count of exits when this one came */
	pid_t pid;
	int status;
	struct timespec at;
};

struct shim_reaper {
	struct urs_loop *loop;
	int fd; /* the signalfd */
	struct urs_op op;
	struct signalfd_siginfo si;
	struct shim_watch *w;
	uint32_t n, cap;
	struct shim_exit unclaimed[SHIM_UNCLAIMED]; /* a ring, oldest overwritten */
	uint64_t seq;				    /* exits reaped so far */
};

/**
 * shim_reaper_init() - become a child subreaper and watch SIGCHLD on @loop
 * @r: the reaper
 * @loop: the loop
 *
 * Blocks SIGCHLD in the calling thread (children made after this inherit
 * the mask: restore it before their exec). Return: 0 or a negative errno.
 */
int shim_reaper_init(struct shim_reaper *r, struct urs_loop *loop);

/**
 * shim_reaper_watch() - call @cb when @pid exits
 * @r: the reaper
 * @pid: a child (or a future one, by subreaping)
 * @since: shim_reaper_seq() from before the process was asked for: a kept
 *	exit older than that is another process's
 * @cb: called once, from the loop
 * @arg: passed to @cb
 * @status: set when the child already exited (then @cb is not called)
 * @at: set with @status
 *
 * Return: 0 (watching), 1 (it had already exited: *@status, *@at), or -ENOMEM.
 */
int shim_reaper_watch(struct shim_reaper *r, pid_t pid, uint64_t since, shim_exit_cb cb, void *arg,
		      int *status, struct timespec *at);

/**
 * shim_reaper_seq() - the count of exits reaped so far (see shim_reaper_watch())
 * @r: the reaper
 *
 * Return: the count.
 */
static inline uint64_t shim_reaper_seq(const struct shim_reaper *r)
{
	return r->seq;
}

/**
 * shim_reaper_unwatch() - forget the watch on @pid (its exit is kept as unclaimed)
 * @r: the reaper
 * @pid: the pid
 */
void shim_reaper_unwatch(struct shim_reaper *r, pid_t pid);

/**
 * shim_reaper_fini() - stop watching (the signalfd closed; SIGCHLD stays blocked)
 * @r: the reaper
 */
void shim_reaper_fini(struct shim_reaper *r);

/**
 * shim_wait_code() - a wait status as the exit status containerd reports
 * @status: as waitpid() gives it
 *
 * Return: the exit code, or 128 + the signal that ended the process.
 */
static inline uint32_t shim_wait_code(int status)
{
	return WIFSIGNALED(status) ? 128u + (uint32_t) WTERMSIG(status)
				   : (uint32_t) WEXITSTATUS(status);
}

#endif
