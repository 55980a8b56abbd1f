/*
 * host/caps.c — see caps.h.
 */
#include "host/caps.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int urs_cap_last(void)
{
	static int last = -1;
	if (last >= 0)
		return last;
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int v = CAP_LAST_CAP;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = CAP_LAST_CAP;
		fclose(f);
	}
	last = v;
	return v;
}

int urs_caps_bound(uint64_t bounding, struct urs_err *err)
{
	int last = urs_cap_last();
	for (int c = 0; c <= last && c < 64; c++) {
		if (bounding & (1ull << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return urs_err_set(err, -errno,
					   "capabilities: dropping %d from the bounding set: %m",
					   c);
	}
	return 0;
}

static int capset_sets(uint64_t eff, uint64_t perm, uint64_t inh)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2] = {
		{(uint32_t) eff, (uint32_t) perm, (uint32_t) inh},
		{(uint32_t) (eff >> 32), (uint32_t) (perm >> 32), (uint32_t) (inh >> 32)},
	};
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int urs_caps_get(uint64_t *eff, uint64_t *perm, uint64_t *inh)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	*eff = d[0].effective | ((uint64_t) d[1].effective << 32);
	*perm = d[0].permitted | ((uint64_t) d[1].permitted << 32);
	*inh = d[0].inheritable | ((uint64_t) d[1].inheritable << 32);
	return 0;
}

int urs_caps_apply(const struct urs_capsets *c, uid_t uid, gid_t gid, const gid_t *groups,
		   size_t n_groups, struct urs_err *err)
{
	uint64_t mask = urs_cap_last() >= 63 ? ~0ull : ((1ull << (urs_cap_last() + 1)) - 1);
	if (c && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return urs_err_set(err, -errno, "capabilities: PR_SET_KEEPCAPS: %m");
	if (setgroups(n_groups, groups) < 0 && !(errno == EPERM && n_groups == 0))
		return urs_err_set(err, -errno, "process.user.additionalGids: setgroups: %m");
	if (setresgid(gid, gid, gid) < 0)
		return urs_err_set(err, -errno, "process.user.gid: setresgid(%u): %m", gid);
	if (setresuid(uid, uid, uid) < 0)
		return urs_err_set(err, -errno, "process.user.uid: setresuid(%u): %m", uid);
	if (!c)
		return 0; /* identity only: the sets stay what they are */
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		return urs_err_set(err, -errno, "capabilities: PR_SET_KEEPCAPS: %m");
	int r = capset_sets(c->effective & mask, c->permitted & mask, c->inheritable & mask);
	if (r < 0)
		return urs_err_set(err, r,
				   "capabilities: capset(effective=%#llx permitted=%#llx): %s",
				   (unsigned long long) c->effective,
				   (unsigned long long) c->permitted, strerror(-r));
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	/* Like runc: an ambient cap that is not also inheritable cannot be raised
	 * (runc's own default spec asks for exactly that); skip it, do not fail. */
	for (int i = 0; i <= urs_cap_last() && i < 64; i++)
		if ((c->ambient & (1ull << i)) && (c->inheritable & (1ull << i)))
			prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, i, 0, 0);
	return 0;
}
