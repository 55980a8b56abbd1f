/*
 * host/proc.h — facts about host processes from /proc, and pid-reuse-safe
 * handles on them.
 *
 * A pid alone is not an identity: it is reused. ursa stores a process's pid
 * together with its start time (field 22 of /proc/PID/stat, in clock ticks
 * since boot) and only signals a process whose start time still matches,
 * through a pidfd opened after the check (so the check and the signal are
 * about the same process).
 */
#ifndef URSA_HOST_PROC_H
#define URSA_HOST_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Start time of @pid in clock ticks since boot; -ESRCH if gone. */
int urs_proc_start_time(pid_t pid, uint64_t *ticks);

/**
 * urs_proc_stdio_ids() - what fds 0-2 of @pid are: device and inode each
 * @pid: the process, or 0 for the caller
 * @dev: gets the devices
 * @ino: gets the inodes (0 with its device: closed, or not to be looked at)
 *
 * Through /proc/PID/fd/N, which needs ptrace read access to @pid.
 */
void urs_proc_stdio_ids(pid_t pid, uint64_t dev[3], uint64_t ino[3]);

/**
 * urs_proc_ppid() - the parent of a process
 * @pid: the process
 *
 * Return: its parent's pid, or a negative errno (-ESRCH: gone).
 */
pid_t urs_proc_ppid(pid_t pid);
/**
 * urs_pidfd_pid() - the process a pidfd refers to
 * @pidfd: the pidfd (of this process's fd table)
 *
 * Return: its pid (in our pid namespace), -ESRCH once it was reaped, or
 * another negative errno (-EINVAL: not a pidfd).
 */
pid_t urs_pidfd_pid(int pidfd);
/* State letter (R, S, D, Z, T, t, X, ...) of @pid or -ESRCH. */
int urs_proc_state(pid_t pid);
/* A pidfd for @pid if it still started at @ticks; -ESRCH otherwise. */
int urs_pidfd_open_checked(pid_t pid, uint64_t ticks);
/* Is @pid alive (not a zombie) and still the process that started at @ticks? */
bool urs_proc_alive(pid_t pid, uint64_t ticks);
/* Signal through a pidfd. */
int urs_pidfd_signal(int pidfd, int sig);

/**
 * urs_proc_renice() - every thread of @pid to nice value @nice
 * @pid: the process
 * @nice: -20 .. 19
 *
 * For a process being torn down: what is left of its exit (freeing its
 * memory, ~65 ms a GiB here) then yields most of a shared CPU to what
 * runs at nice 0 — yet still progresses under load, which SCHED_IDLE
 * would not (two busy loops at nice 0 starve it for seconds).
 *
 * Return: 0, or a negative errno (the threads listed so far are set).
 */
int urs_proc_renice(pid_t pid, int nice);

/**
 * urs_pidfd_exit_status() - how a process that need not be our child ended
 * @pidfd: a pidfd of it, opened while it lived
 * @pid: its pid (for /proc while it is an unreaped zombie)
 * @status: set to its wait status (as waitpid() reports it)
 *
 * After the reaper (its parent, or a subreaper) waited for it, the kernel's
 * record on the pidfd (PIDFD_INFO_EXIT, Linux >= 6.15); before that, the
 * zombie's exit code from /proc/@pid/stat.
 *
 * Return: 0; -EAGAIN while it runs; -ECHILD if neither can be read (reaped
 * on a kernel without the record).
 */
int urs_pidfd_exit_status(int pidfd, pid_t pid, int *status);

/* Raw syscalls glibc 2.36 may lack wrappers for. */
int urs_pidfd_open(pid_t pid, unsigned flags);

#endif
