/*
 * host/teardown.h — the cgroups of a killed sandbox whose tasks are still
 * exiting, handed to whoever comes next.
 *
 * A task's memory is freed in its exit, before it leaves its cgroup: a
 * killed 1 GiB process keeps its cgroups busy for ~65 ms here, and a
 * cgroup v2 directory cannot be renamed out of the way (EPERM). A
 * checkpoint that kills its sandbox therefore does not wait: it removes
 * the sandbox's record and leaves ROOT/.teardown/ID (the cgroups, as
 * urs_cg_to_string() writes them). Then one of two takes it:
 *   - the reaper the checkpoint left behind, once the tasks are gone
 *     (ID@reaping while it removes the directories);
 *   - a new sandbox of the same ID (a restore, at once: ID@adopt while it
 *     makes the same directories its own, urs_cg_create_over(), until it
 *     runs), or, when it may not adopt them, removes them itself once the
 *     tasks are gone.
 * Taking is a lock on the record (fcntl's, a process's own: not inherited
 * by what it clones), then a rename: a record whose taker died (its lock
 * gone with it) is taken again by the next one; one whose taker lives is
 * waited for. A taker that cannot finish gives it back
 * (ID again). Names with '@' are never a container's ID (host/state.c
 * urs_id_valid), `ursa list` skips ROOT/.teardown as it skips every name
 * starting with '.', and the directory goes with its last record.
 */
#ifndef URSA_HOST_TEARDOWN_H
#define URSA_HOST_TEARDOWN_H

#include <stddef.h>

#include "runtime/err.h"

#define URS_TEARDOWN_DIR     ".teardown"
#define URS_TEARDOWN_REAPING "reaping"
#define URS_TEARDOWN_ADOPT   "adopt"

/**
 * urs_teardown_put() - leave ROOT/.teardown/@id for whoever comes next
 * @root: the state root (--root)
 * @id: the sandbox's ID
 * @cgroups: its cgroups (urs_cg_to_string())
 * @err: what failed, and where
 *
 * Written whole and renamed into place, so a taker never reads half of it.
 * Return: 0, or a negative errno.
 */
int urs_teardown_put(const char *root, const char *id, const char *cgroups, struct urs_err *err);

/**
 * urs_teardown_take() - take @id's record as ID@AS, waiting for a live taker
 * @root: the state root
 * @id: the sandbox's ID
 * @as: URS_TEARDOWN_REAPING or URS_TEARDOWN_ADOPT
 * @cgroups: gets the cgroups it names
 * @len: size of @cgroups
 * @ms: how long to wait while another live process holds it
 *
 * Takes ID, or a record whose taker died; waits (woken by the directory's
 * events, and every 50 ms for a taker's death) while one that lives holds
 * it. Keep the returned fd open while dealing with it: it is the lock
 * that says so; end with urs_teardown_drop() or urs_teardown_give_back().
 * Return: the lock's fd; -ENOENT when @id has no record (any more);
 * -ETIMEDOUT after @ms; another negative errno.
 */
int urs_teardown_take(const char *root, const char *id, const char *as, char *cgroups, size_t len,
		      int ms);

/**
 * urs_teardown_give_back() - undo urs_teardown_take(): ID@AS back to ID
 * @root: the state root
 * @id: the sandbox's ID
 * @as: what it was taken as
 * @fd: urs_teardown_take()'s lock, closed
 */
void urs_teardown_give_back(const char *root, const char *id, const char *as, int fd);

/**
 * urs_teardown_drop() - remove ID@AS: what it named is dealt with
 * @root: the state root
 * @id: the sandbox's ID
 * @as: what it was taken as
 * @fd: urs_teardown_take()'s lock, closed
 *
 * ROOT/.teardown goes with its last record.
 */
void urs_teardown_drop(const char *root, const char *id, const char *as, int fd);

#endif
