/*
 * shim/rootfs.c — mount containerd's rootfs mounts (shim/rootfs.h). An
 * option that is a mount flag (ro, nosuid, bind, rbind...) becomes the
 * flag; the others are the filesystem's data, comma-joined (overlay's
 * lowerdir, upperdir, workdir). Data past a page is refused with the
 * reason: the kernel would cut it. A bind takes its ro/nosuid/nodev/noexec
 * only from a second, remounting call (the kernel ignores them on the
 * bind itself: a read-only view would be writable), and propagation
 * options (private, rslave...) are calls of their own, as containerd's
 * mount.All makes them.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "shim/rootfs.h"

static const struct {
	const char *name;
	unsigned long set, clear;
} flags[] = {
	{"ro", MS_RDONLY, 0},	     {"rw", 0, MS_RDONLY},
	{"nosuid", MS_NOSUID, 0},    {"suid", 0, MS_NOSUID},
	{"nodev", MS_NODEV, 0},	     {"dev", 0, MS_NODEV},
	{"noexec", MS_NOEXEC, 0},    {"exec", 0, MS_NOEXEC},
	{"bind", MS_BIND, 0},	     {"rbind", MS_BIND | MS_REC, 0},
	{"noatime", MS_NOATIME, 0},  {"relatime", MS_RELATIME, 0},
	{"sync", MS_SYNCHRONOUS, 0}, {"async", 0, MS_SYNCHRONOUS},
	{"remount", MS_REMOUNT, 0},  {"defaults", 0, 0},
};

static const struct {
	const char *name;
	unsigned long flag;
} propagation[] = {
	{"private", MS_PRIVATE},       {"rprivate", MS_PRIVATE | MS_REC},
	{"slave", MS_SLAVE},	       {"rslave", MS_SLAVE | MS_REC},
	{"shared", MS_SHARED},	       {"rshared", MS_SHARED | MS_REC},
	{"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))
/* what a bind mount takes only from a remount */
#define BIND_REMOUNT (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_RELATIME)

static int opts_parse(Containerd__Task__V2__Mount *m, unsigned long *fl, unsigned long *prop,
		      char *data, size_t len)
{
	size_t used = 0;
	*fl = *prop = 0;
	data[0] = 0;
	for (size_t i = 0; i < m->n_options; i++) {
		const char *o = m->options[i];
		size_t k = 0, q = 0;
		while (k < N(flags) && strcmp(flags[k].name, o))
			k++;
		while (q < N(propagation) && strcmp(propagation[q].name, o))
			q++;
		if (k < N(flags)) {
			*fl = (*fl | flags[k].set) & ~flags[k].clear;
			continue;
		}
		if (q < N(propagation)) {
			*prop = propagation[q].flag;
			continue;
		}
		int w = snprintf(data + used, len - used, "%s%s", used ? "," : "", o);
		if (w < 0 || (size_t) w >= len - used)
			return -E2BIG;
		used += (size_t) w;
	}
	return 0;
}

int shim_rootfs_mount(const char *bundle, Containerd__Task__V2__Mount *const *m, size_t n,
		      char *msg, size_t len)
{
	char target[PATH_MAX], data[4096];
	if (snprintf(target, sizeof(target), "%s/rootfs", bundle) >= (int) sizeof(target)) {
		snprintf(msg, len, "rootfs: bundle path too long");
		return -ENAMETOOLONG;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned long fl, prop;
		if (opts_parse(m[i], &fl, &prop, data, sizeof(data)) < 0) {
			snprintf(msg, len, "rootfs mount %zu (%s): options longer than a page", i,
				 m[i]->type);
			shim_rootfs_umount(bundle);
			return -E2BIG;
		}
		const char *step = "mount";
		int r = mount(m[i]->source, target, m[i]->type, fl, data[0] ? data : NULL);
		if (r == 0 && (fl & MS_BIND) && (fl & BIND_REMOUNT)) {
			step = "remount (bind flags)";
			r = mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | (fl & BIND_REMOUNT),
				  NULL);
		}
		if (r == 0 && prop) {
			step = "propagation";
			r = mount(NULL, target, NULL, prop, NULL);
		}
		if (r < 0) {
			int e = errno;
			snprintf(msg, len, "rootfs mount %zu: %s %s on %s (%s): %s", i, step,
				 m[i]->source, target, m[i]->type, strerror(e));
			shim_rootfs_umount(bundle);
			return -e;
		}
	}
	return 0;
}

int shim_rootfs_umount(const char *bundle)
{
	char target[PATH_MAX];
	if (snprintf(target, sizeof(target), "%s/rootfs", bundle) >= (int) sizeof(target))
		return -ENAMETOOLONG;
	while (umount2(target, MNT_DETACH) == 0)
		;			     /* every mount stacked there */
	return errno == EINVAL ? 0 : -errno; /* EINVAL: no mount left */
}
