/*
 * host/caps.h — applying the five OCI capability sets to the current
 * process without libcap: bounding (PR_CAPBSET_DROP), then identity change
 * with PR_SET_KEEPCAPS, then capset(2) for effective/permitted/inheritable,
 * then ambient (PR_CAP_AMBIENT_RAISE). The last valid cap comes from
 * /proc/sys/kernel/cap_last_cap.
 */
#ifndef URSA_HOST_CAPS_H
#define URSA_HOST_CAPS_H

#include <stdint.h>
#include <sys/types.h>

#include "runtime/err.h"

struct urs_capsets {
	uint64_t bounding, effective, inheritable, permitted, ambient;
};

/* Highest capability number the kernel knows. */
int urs_cap_last(void);
/* Drop everything outside @bounding from the bounding set. */
int urs_caps_bound(uint64_t bounding, struct urs_err *err);
/* Change identity keeping capabilities, then set eff/perm/inh and ambient.
 * @c NULL: change identity only (the kernel's usual rules for the sets). */
int urs_caps_apply(const struct urs_capsets *c, uid_t uid, gid_t gid, const gid_t *groups,
		   size_t n_groups, struct urs_err *err);
/* Read the current sets (tests). */
int urs_caps_get(uint64_t *eff, uint64_t *perm, uint64_t *inh);

#endif
