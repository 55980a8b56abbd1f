/*
 * host/teardown.h — the cgroups of a killed sandbox whose tasks are still
 * exiting, handed to whoever comes next.
 *
 * A task's memory is freed in its exit, before it leaves its cgroup: a
 * killed 1 GiB process keeps its cgroups busy for ~65 ms here, and a
 * cgroup v2 directory cannot be renamed out of the way (EPERM). A
 * checkpoint that kills its sandbox therefore does not wait: it removes
 * the sandbox's record and leaves ROOT/.teardown/ID (the cgroups, as
 * urs_cg_to_string() writes them). Then exactly one of two takes it,
 * by renaming it (atomic):
 *   - the reaper the checkpoint left behind, once the tasks are gone:
 *     ID@reaping while it removes the directories, then nothing;
 *   - a new sandbox of the same ID (a restore, at once): ID@adopt while
 *     it makes the same directories its own (urs_cg_create_over()),
 *     tasks still exiting in them included.
 * A sandbox that may not adopt them waits until neither ID nor
 * ID@reaping is there (urs_teardown_wait()). Names with '@' are never a
 * container's ID (host/state.c urs_id_valid), and `ursa list` skips
 * ROOT/.teardown as it skips every name starting with '.'.
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
 * urs_teardown_take() - take ROOT/.teardown/@id, renaming it to ID@AS
 * @root: the state root
 * @id: the sandbox's ID
 * @as: URS_TEARDOWN_REAPING or URS_TEARDOWN_ADOPT
 * @cgroups: gets the cgroups it names
 * @len: size of @cgroups
 *
 * Return: 0 when this caller took it; -ENOENT when there is none (or
 * another took it first); another negative errno if it could not be read
 * (it is then put back).
 */
int urs_teardown_take(const char *root, const char *id, const char *as, char *cgroups, size_t len);

/**
 * urs_teardown_give_back() - undo urs_teardown_take(): ID@AS back to ID
 * @root: the state root
 * @id: the sandbox's ID
 * @as: what it was taken as
 */
void urs_teardown_give_back(const char *root, const char *id, const char *as);

/**
 * urs_teardown_drop() - remove ID@AS: what it named is dealt with
 * @root: the state root
 * @id: the sandbox's ID
 * @as: what it was taken as
 *
 * ROOT/.teardown goes with its last record.
 */
void urs_teardown_drop(const char *root, const char *id, const char *as);

/**
 * urs_teardown_wait() - wait until nobody removes cgroups for @id
 * @root: the state root
 * @id: the sandbox's ID
 * @ms: the longest wait
 * @what: a name of its own to wait for too (e.g. URS_TEARDOWN_ADOPT), or NULL
 *
 * Woken by the directory's own events (inotify), not by polling.
 * Return: 0 once neither ROOT/.teardown/ID nor ID@reaping (nor ID@WHAT)
 * exists, -ETIMEDOUT after @ms, or another negative errno.
 */
int urs_teardown_wait(const char *root, const char *id, int ms, const char *what);

#endif
