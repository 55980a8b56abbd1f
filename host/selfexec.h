/*
 * host/selfexec.h — running ursa from a sealed memfd copy of itself.
 *
 * Every ursa process that enters a container's namespaces is non-dumpable,
 * which keeps /proc/PID/exe of ours out of the container's reach — unless
 * the container holds CAP_SYS_PTRACE in our user namespace. For those
 * configurations ursa re-executes itself from a sealed memfd first (what runc
 * does for every start), so /proc/PID/exe can only ever name an anonymous,
 * write-sealed copy, never the binary on the host. Costs ~1 ms, paid only
 * when needed.
 */
#ifndef URSA_HOST_SELFEXEC_H
#define URSA_HOST_SELFEXEC_H

#include <stdbool.h>
#include <stdint.h>

/* Does a container with these bounding capabilities and this user-namespace
 * setting need ursa to run from a sealed copy? */
bool urs_needs_sealed_self(uint64_t bounding, bool userns);
/* Already running from a sealed copy? */
bool urs_running_sealed(void);
/* Re-exec from a sealed memfd copy with the same arguments and environment.
 * Returns only on failure (negative errno). */
int urs_reexec_sealed(char **argv);

#endif
