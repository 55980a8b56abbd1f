/*
 * ckpt/wptrack.h — which pages of a running process were written since a
 * moment, for a checkpoint that copies memory while the sandbox runs
 * (ckpt/precopy.h). A userfaultfd in asynchronous write-protect mode
 * (UFFD_FEATURE_WP_ASYNC, Linux 6.7): the kernel resolves each write fault
 * itself — the writer never waits, kernel-mode writes (read(2) into a
 * buffer) included — and clears the page's write-protect bit, which
 * PAGEMAP_SCAN reports as PAGE_IS_WRITTEN (host/pagemap.h, URS_PM_WRITTEN).
 *
 * A userfaultfd serves the memory of the process that made it, so the
 * process makes it: one thread is seized (seccomp suspended for it),
 * userfaultfd(UFFD_USER_MODE_ONLY) is injected (what an unprivileged
 * process may make: vm.unprivileged_userfaultfd=0), the dumper takes a
 * copy with pidfd_getfd and the process's own is closed again, and the
 * thread goes on — a few hundred microseconds of one thread, the others
 * never stop. The dumper then registers the process's private anonymous
 * mappings and write-protects them through its copy. Mappings made later,
 * file and shared mappings are not tracked: their pages read as written.
 * Closing the dumper's copy unregisters everything (also when the dumper
 * dies): the process never keeps anything of it.
 */
#ifndef URSA_CKPT_WPTRACK_H
#define URSA_CKPT_WPTRACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/err.h"

struct ckpt_wp_range {
	uint64_t start, end;
};

/**
 * struct ckpt_wptrack - one process's write tracking
 * @pid: the process
 * @uffd: the dumper's copy of its userfaultfd, -1 when not armed
 * @ranges: the mappings registered and write-protected
 * @nranges: how many
 */
struct ckpt_wptrack {
	pid_t pid;
	int uffd;
	struct ckpt_wp_range *ranges;
	uint32_t nranges;
};

/**
 * ckpt_wptrack_supported() - can this kernel track writes this way?
 *
 * Probed once in the calling process (a userfaultfd with WP_ASYNC and
 * PAGEMAP_SCAN).
 *
 * Return: true if it can.
 */
bool ckpt_wptrack_supported(void);

/**
 * ckpt_wptrack_arm() - start tracking the writes of a running process
 * @w: filled (ckpt_wptrack_disarm releases it, armed or not)
 * @pid: the process (its thread group leader)
 * @err: why it could not
 *
 * Return: 0 with @w->uffd >= 0 and the protected ranges listed, or a
 * negative errno (nothing of it left in the process).
 */
int ckpt_wptrack_arm(struct ckpt_wptrack *w, pid_t pid, struct urs_err *err);

/**
 * ckpt_wptrack_disarm() - stop tracking: unregister and close
 * @w: the tracking (armed or not)
 */
void ckpt_wptrack_disarm(struct ckpt_wptrack *w);

#endif
