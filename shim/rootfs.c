/*
 * shim/rootfs.c — mount containerd's rootfs mounts (shim/rootfs.h). An
 * option that is a mount flag (ro, nosuid, bind, rbind...) becomes the
 * flag; the others are the filesystem's data, comma-joined (overlay's
 * lowerdir, upperdir, workdir). Data past a page (an image of many layers)
 * is made shorter as containerd makes it: the layers' common parent
 * directory becomes the working directory of the mount call and the
 * lowerdir list is written relative to it; what is still too long is
 * refused with the reason (the kernel would cut it). A bind takes its ro/nosuid/nodev/noexec
 * only from a second, remounting call (the kernel ignores them on the
 * bind itself: a read-only view would be writable), and propagation
 * options (private, rslave...) are calls of their own, as containerd's
 * mount.All makes them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

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

/* @o with @strip (a directory, "/"-ended) taken off each entry of a
 * lowerdir list; other options as they are */
static const char *strip_lower(const char *o, const char *strip, char *buf, size_t len)
{
	if (!strip || strncmp(o, "lowerdir=", 9))
		return o;
	size_t sl = strlen(strip), used = 0;
	int w = snprintf(buf, len, "lowerdir=");
	used = (size_t) w;
	for (const char *e = o + 9; *e;) {
		const char *end = strchr(e, ':');
		size_t el = end ? (size_t) (end - e) : strlen(e);
		if (el >= sl && !strncmp(e, strip, sl))
			e += sl, el -= sl;
		w = snprintf(buf + used, len - used, "%s%.*s", used > 9 ? ":" : "", (int) el, e);
		if (w < 0 || (size_t) w >= len - used)
			return NULL;
		used += (size_t) w;
		e += el + (end ? 1 : 0);
		if (!end)
			break;
	}
	return buf;
}

/* the directory every lowerdir entry of @m is in ("/"-ended), or "" */
static void lower_parent(Containerd__Task__V2__Mount *m, char *dir, size_t len)
{
	dir[0] = 0;
	for (size_t i = 0; i < m->n_options; i++) {
		const char *o = m->options[i];
		if (strncmp(o, "lowerdir=", 9))
			continue;
		size_t pl = 0;
		for (const char *e = o + 9; *e;) { /* the common prefix of the entries */
			const char *end = strchr(e, ':');
			size_t el = end ? (size_t) (end - e) : strlen(e);
			if (e == o + 9)
				pl = el;
			size_t k = 0;
			while (k < pl && k < el && e[k] == o[9 + k])
				k++;
			pl = k;
			e += el + (end ? 1 : 0);
			if (!end)
				break;
		}
		while (pl > 0 && o[9 + pl - 1] != '/') /* back to a whole directory */
			pl--;
		if (pl > 1 && pl < len)
			snprintf(dir, len, "%.*s", (int) pl, o + 9);
	}
}

static int opts_parse(Containerd__Task__V2__Mount *m, const char *strip, unsigned long *fl,
		      unsigned long *prop, char *data, size_t len)
{
	char buf[8192];
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
		if (!(o = strip_lower(o, strip, buf, sizeof(buf))))
			return -E2BIG;
		int w = snprintf(data + used, len - used, "%s%s", used ? "," : "", o);
		if (w < 0 || (size_t) w >= len - used)
			return -E2BIG;
		used += (size_t) w;
	}
	return 0;
}

/* mount(2) made from @dir when it is set (relative lowerdirs), from here else */
static int mount_in(const char *dir, const char *src, const char *target, const char *type,
		    unsigned long fl, const char *data)
{
	if (!dir[0])
		return mount(src, target, type, fl, data);
	int here = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (here < 0 || chdir(dir) < 0) {
		int e = errno;
		if (here >= 0)
			close(here);
		errno = e;
		return -1;
	}
	int r = mount(src, target, type, fl, data);
	int e = errno;
	if (fchdir(here) < 0)
		e = r < 0 ? e : errno;
	close(here);
	errno = e;
	return r;
}

int shim_rootfs_mount(const char *bundle, Containerd__Task__V2__Mount *const *m, size_t n,
		      struct urs_err *err)
{
	char target[PATH_MAX], data[4096];
	if (snprintf(target, sizeof(target), "%s/rootfs", bundle) >= (int) sizeof(target))
		return urs_err_set(err, -ENAMETOOLONG, "rootfs: bundle path too long");
	for (size_t i = 0; i < n; i++) {
		unsigned long fl, prop;
		char parent[PATH_MAX] = "";
		int r = opts_parse(m[i], NULL, &fl, &prop, data, sizeof(data));
		if (r == -E2BIG) { /* relative to the layers' parent, as containerd does */
			lower_parent(m[i], parent, sizeof(parent));
			if (parent[0])
				r = opts_parse(m[i], parent, &fl, &prop, data, sizeof(data));
		}
		if (r < 0) {
			shim_rootfs_umount(bundle);
			return urs_err_set(err, -E2BIG,
					   "rootfs mount %zu (%s): options longer than a page", i,
					   m[i]->type);
		}
		const char *step = "mount";
		r = mount_in(parent, m[i]->source, target, m[i]->type, fl, data[0] ? data : NULL);
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
			shim_rootfs_umount(bundle);
			return urs_err_set(err, -e, "rootfs mount %zu: %s %s on %s (%s): %s", i,
					   step, m[i]->source, target, m[i]->type, strerror(e));
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
