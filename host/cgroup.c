/*
 * host/cgroup.c — a sandbox's cgroups on unified, hybrid and legacy hosts:
 * placement beneath the caller (see cgroup.h), mkdir -p with openat() that
 * remembers the levels it made, cpuset inheritance, limits with runc's
 * ordering and value conversions, freezer (v1 freezer.state or cgroup2
 * cgroup.freeze), pids, kill, removal, stats and the state-file string.
 *
 * Nothing here allocates on the create/enter/apply path: paths live in the
 * struct, files are small and read into stack buffers, directories are
 * reached with openat() from a cached directory fd.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <poll.h>

#include "host/cgroup.h"
#include "runtime/common.h"

#define CG_ROOT		  "/sys/fs/cgroup"
#define CG_WAIT_NS	  (2000 * 1000 * 1000LL) /* freeze/thaw */
#define CG_RMDIR_WAIT_NS  (1000 * 1000 * 1000LL) /* rmdir on EBUSY */
#define CG_POLL_NS	  (1000 * 1000)		 /* 1 ms between polls */
#define CG_CREATE_RETRIES 5

static const char *const hier_names[URS_CG_NHIER] = {
	[URS_CG_MEMORY] = "memory",   [URS_CG_PIDS] = "pids",	  [URS_CG_CPU] = "cpu",
	[URS_CG_CPUACCT] = "cpuacct", [URS_CG_CPUSET] = "cpuset", [URS_CG_FREEZER] = "freezer",
	[URS_CG_DEVICES] = "devices", [URS_CG_BLKIO] = "blkio",	  [URS_CG_V2] = "unified",
	[URS_CG_SYSTEMD] = "systemd",
};

static const char *const mode_names[] = {
	[URS_CG_LEGACY] = "legacy",
	[URS_CG_HYBRID] = "hybrid",
	[URS_CG_UNIFIED] = "unified",
};

const char *urs_cg_hier_name(enum urs_cg_hier h)
{
	return (unsigned) h < URS_CG_NHIER ? hier_names[h] : "?";
}

/* ---- small file helpers ------------------------------------------------ */

static bool fs_is(const char *path, long magic)
{
	struct statfs s;
	return statfs(path, &s) == 0 && (long) s.f_type == magic;
}

static int write_at(int dfd, const char *file, const char *val)
{
	_cleanup_close_ int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(val);
	ssize_t w = write(fd, val, n);
	if (w < 0)
		return -errno;
	return (size_t) w == n ? 0 : -EIO;
}

/* Read the whole (small) file, NUL-terminated, trailing whitespace cut. */
static int read_at(int dfd, const char *file, char *buf, size_t len)
{
	_cleanup_close_ int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	for (;;) {
		if (n + 1 >= len)
			return -EFBIG;
		ssize_t r = read(fd, buf + n, len - 1 - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		n += (size_t) r;
	}
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return (int) n;
}

/* "max" → UINT64_MAX. */
static int parse_u64(const char *s, uint64_t *v)
{
	if (!strcmp(s, "max")) {
		*v = UINT64_MAX;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || end == s || (*end && *end != '\n'))
		return -EINVAL;
	*v = x;
	return 0;
}

static int read_u64_at(int dfd, const char *file, uint64_t *v)
{
	char buf[64];
	int r = read_at(dfd, file, buf, sizeof(buf));
	if (r < 0)
		return r;
	return parse_u64(buf, v);
}

static void sleep_ns(long ns)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- mode -------------------------------------------------------------- */

static int mode_cache;

int urs_cg_mode(void)
{
	int m = __atomic_load_n(&mode_cache, __ATOMIC_RELAXED);
	if (m)
		return m;
	if (fs_is(CG_ROOT, CGROUP2_SUPER_MAGIC)) {
		m = URS_CG_UNIFIED;
	} else {
		bool v1 = false;
		char p[64];
		for (int h = 0; h < URS_CG_V2 && !v1; h++) {
			snprintf(p, sizeof(p), CG_ROOT "/%s", hier_names[h]);
			v1 = fs_is(p, CGROUP_SUPER_MAGIC);
		}
		if (!v1)
			return -ENOENT;
		m = fs_is(CG_ROOT "/unified", CGROUP2_SUPER_MAGIC) ? URS_CG_HYBRID : URS_CG_LEGACY;
	}
	__atomic_store_n(&mode_cache, m, __ATOMIC_RELAXED);
	return m;
}

/* ---- directory fds ----------------------------------------------------- */

static struct urs_cg_dir *primary(struct urs_cgroup *cg, int h)
{
	struct urs_cg_dir *d = &cg->h[h];
	return d->alias >= 0 ? &cg->h[d->alias] : d;
}

static bool has(const struct urs_cgroup *cg, int h)
{
	return cg->h[h].path[0] != '\0';
}

/* Borrowed fd of hierarchy h's directory (opened once, cached). */
static int cg_fd(struct urs_cgroup *cg, int h, struct urs_err *err)
{
	struct urs_cg_dir *d = primary(cg, h);
	if (!d->path[0])
		return urs_err_set(err, -ENOENT, "cgroup: the %s hierarchy is not in use",
				   hier_names[h]);
	if (d->fd < 0) {
		d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d->fd < 0)
			return urs_err_set(err, -errno, "cgroup: opening %s: %s", d->path,
					   strerror(errno));
	}
	return d->fd;
}

static int cg_write(struct urs_cgroup *cg, int h, const char *file, const char *val,
		    struct urs_err *err)
{
	int dfd = cg_fd(cg, h, err);
	if (dfd < 0)
		return dfd;
	int r = write_at(dfd, file, val);
	if (r < 0)
		return urs_err_set(err, r, "cgroup: writing \"%s\" to %s: %s", val, file,
				   strerror(-r));
	return 0;
}

static int cg_read(struct urs_cgroup *cg, int h, const char *file, char *buf, size_t len,
		   struct urs_err *err)
{
	int dfd = cg_fd(cg, h, err);
	if (dfd < 0)
		return dfd;
	int r = read_at(dfd, file, buf, len);
	if (r < 0)
		return urs_err_set(err, r, "cgroup: reading %s/%s: %s", primary(cg, h)->path, file,
				   strerror(-r));
	return r;
}

static int cg_write_i64(struct urs_cgroup *cg, int h, const char *file, int64_t v,
			struct urs_err *err)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return cg_write(cg, h, file, buf, err);
}

static void cg_init(struct urs_cgroup *cg, int mode)
{
	memset(cg, 0, sizeof(*cg));
	cg->mode = mode;
	for (int h = 0; h < URS_CG_NHIER; h++) {
		cg->h[h].fd = -1;
		cg->h[h].alias = -1;
	}
}

void urs_cg_close(struct urs_cgroup *cg)
{
	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (cg->h[h].fd >= 0)
			close(cg->h[h].fd);
		cg->h[h].fd = -1;
	}
}

/* ---- removal ----------------------------------------------------------- */

/* rmdir every sub-cgroup below dfd, deepest first. */
static int rm_subdirs(int dfd, int depth)
{
	if (depth > 64)
		return -ELOOP;
	int dup_fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dup_fd < 0)
		return -errno;
	DIR *dir = fdopendir(dup_fd);
	if (!dir) {
		int r = -errno;
		close(dup_fd);
		return r;
	}
	int ret = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		_cleanup_close_ int c =
			openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (c >= 0) {
			int r = rm_subdirs(c, depth + 1);
			if (r < 0 && !ret)
				ret = r;
		}
		if (unlinkat(dfd, e->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT && !ret)
			ret = -errno;
	}
	closedir(dir);
	return ret;
}

/* Remove a leaf cgroup and what the sandbox made below it, waiting a little
 * for exiting processes (EBUSY) unless @once. */
static int rm_leaf(const char *path, bool once)
{
	/* the usual case first: nothing below it, nobody inside (one syscall
	 * instead of a directory walk per hierarchy: checkpoint and delete) */
	if (rmdir(path) == 0 || errno == ENOENT)
		return 0;
	if (once)
		return -errno;
	int64_t deadline = now_ns() + CG_RMDIR_WAIT_NS;
	for (;;) {
		_cleanup_close_ int fd =
			open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return errno == ENOENT ? 0 : -errno;
		int r = rm_subdirs(fd, 0);
		if (rmdir(path) == 0 || errno == ENOENT)
			return 0;
		r = -errno;
		if ((r != -EBUSY && r != -ENOTEMPTY) || now_ns() > deadline)
			return r;
		sleep_ns(10 * CG_POLL_NS);
	}
}

/* Remove what urs_cg_create made in one hierarchy. */
static int destroy_one(struct urs_cgroup *cg, int h, bool once, struct urs_err *err)
{
	struct urs_cg_dir *d = &cg->h[h];
	if (d->fd >= 0) {
		close(d->fd);
		d->fd = -1;
	}
	if (d->alias >= 0 || !d->path[0] || !d->created)
		return 0;
	int r = rm_leaf(d->path, once);
	if (r < 0)
		return urs_err_set(err, r, "cgroup: removing %s: %s", d->path, strerror(-r));
	/* Parents we made, while they are empty (another sandbox may share them). */
	char p[URS_CG_PATH_MAX];
	memcpy(p, d->path, sizeof(p));
	for (unsigned i = 1; i < d->created; i++) {
		char *slash = strrchr(p, '/');
		if (!slash || slash == p)
			break;
		*slash = '\0';
		if (rmdir(p) < 0 && errno != ENOENT)
			break;
	}
	d->created = 0;
	return 0;
}

int urs_cg_destroy(struct urs_cgroup *cg, struct urs_err *err)
{
	int ret = 0;
	for (int h = 0; h < URS_CG_NHIER; h++) {
		int r = destroy_one(cg, h, false, ret ? NULL : err);
		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

bool urs_cg_destroy_now(struct urs_cgroup *cg)
{
	bool all = true; /* each on its own: the v2 one may go before the v1 ones */
	for (int h = 0; h < URS_CG_NHIER; h++)
		all &= destroy_one(cg, h, true, NULL) == 0;
	return all;
}

/* ---- creation ---------------------------------------------------------- */

/*
 * Normalize a cgroupsPath: collapse '/', drop "." components; refuse "..",
 * ';' and newlines (';' separates the state-file string). Out: no leading or
 * trailing '/', *abs tells whether it was absolute.
 */
static int normalize(const char *in, char *out, size_t len, bool *abs)
{
	*abs = in[0] == '/';
	size_t n = 0;
	const char *p = in;
	while (*p) {
		while (*p == '/')
			p++;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t cl = (size_t) (p - s);
		if (!cl || (cl == 1 && s[0] == '.'))
			continue;
		if (cl == 2 && s[0] == '.' && s[1] == '.')
			return -EINVAL;
		if (memchr(s, ';', cl) || memchr(s, '\n', cl))
			return -EINVAL;
		if (cl > NAME_MAX)
			return -ENAMETOOLONG;
		if (n + cl + 2 > len)
			return -ENAMETOOLONG;
		if (n)
			out[n++] = '/';
		memcpy(out + n, s, cl);
		n += cl;
	}
	out[n] = '\0';
	return 0;
}

/* Find hierarchy h's line in /proc/PID/cgroup text: its id, controller list
 * and path (not NUL-terminated). */
static bool find_line(const char *buf, int h, long *hid, const char **ctrls, size_t *ctrls_len,
		      const char **path, size_t *path_len)
{
	/* named hierarchies appear as "name=X" in /proc/PID/cgroup */
	const char *name = h == URS_CG_SYSTEMD ? "name=systemd" : hier_names[h];
	size_t nl = strlen(name);
	for (const char *line = buf; *line;) {
		const char *eol = strchrnul(line, '\n');
		const char *c1 = memchr(line, ':', (size_t) (eol - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (eol - c1 - 1)) : NULL;
		if (c2) {
			const char *cs = c1 + 1;
			size_t cl = (size_t) (c2 - cs);
			bool match = false;
			if (h == URS_CG_V2) {
				match = cl == 0 && c1 - line == 1 && line[0] == '0';
			} else {
				for (const char *t = cs; t < c2;) {
					const char *te = memchr(t, ',', (size_t) (c2 - t));
					if (!te)
						te = c2;
					if ((size_t) (te - t) == nl && !memcmp(t, name, nl))
						match = true;
					t = te + 1;
				}
			}
			if (match) {
				*hid = strtol(line, NULL, 10);
				*ctrls = cs;
				*ctrls_len = cl;
				*path = c2 + 1;
				*path_len = (size_t) (eol - c2 - 1);
				return true;
			}
		}
		line = *eol ? eol + 1 : eol;
	}
	return false;
}

static int copy_if_empty(int parent, int child, const char *file, struct urs_err *err)
{
	char buf[4096];
	int r = read_at(child, file, buf, sizeof(buf));
	if (r > 0)
		return 0;
	r = read_at(parent, file, buf, sizeof(buf));
	if (r < 0)
		return urs_err_set(err, r, "cgroup: reading the parent's %s: %s", file,
				   strerror(-r));
	if (r == 0)
		return 0;
	r = write_at(child, file, buf);
	if (r < 0)
		return urs_err_set(err, r, "cgroup: writing \"%s\" to %s: %s", buf, file,
				   strerror(-r));
	return 0;
}

/* cgroup2 on a unified host: enable in dfd's subtree_control the controllers
 * a sandbox uses that dfd offers. Failures are left for apply to report. */
static void enable_controllers(int dfd)
{
	static const char *const want[] = {"cpuset", "cpu", "io", "memory", "hugetlb", "pids"};
	char avail[512], on[512];
	if (read_at(dfd, "cgroup.controllers", avail, sizeof(avail)) <= 0)
		return;
	if (read_at(dfd, "cgroup.subtree_control", on, sizeof(on)) < 0)
		return;
	for (size_t i = 0; i < URS_ARRAY_SIZE(want); i++) {
		size_t wl = strlen(want[i]);
		bool in_avail = false, in_on = false;
		for (int pass = 0; pass < 2; pass++) {
			const char *s = pass ? on : avail;
			while (*s) {
				while (*s == ' ')
					s++;
				const char *e = strchrnul(s, ' ');
				if ((size_t) (e - s) == wl && !memcmp(s, want[i], wl)) {
					if (pass)
						in_on = true;
					else
						in_avail = true;
				}
				s = e;
			}
		}
		if (in_avail && !in_on) {
			char cmd[16];
			snprintf(cmd, sizeof(cmd), "+%s", want[i]);
			(void) write_at(dfd, "cgroup.subtree_control", cmd);
		}
	}
}

/*
 * One mkdir -p pass of d->path from its mount root (the first root_len
 * bytes), counting trailing levels made in d->created. On failure d->path is
 * cut to the deepest level reached, so destroy_one() still removes what was
 * made. *retry: a parent vanished (a concurrent removal) before anything was
 * made; the caller may start over.
 */
static int walk_once(struct urs_cgroup *cg, int h, size_t root_len, const struct urs_cg_dir *prev,
		     bool *retry, struct urs_err *err)
{
	struct urs_cg_dir *d = &cg->h[h];
	bool cpuset = h == URS_CG_CPUSET;
	bool enable = h == URS_CG_V2 && cg->mode == URS_CG_UNIFIED;
	char *p = d->path;

	*retry = false;
	d->created = 0;
	char saved = p[root_len];
	p[root_len] = '\0';
	_cleanup_close_ int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = dfd < 0 ? -errno : 0;
	if (r < 0)
		return urs_err_set(err, r, "cgroup: opening %s: %s", p, strerror(-r));
	p[root_len] = saved;

	size_t pos = root_len;
	while (p[pos] == '/') {
		size_t start = pos + 1, end = start;
		while (p[end] && p[end] != '/')
			end++;
		char comp[NAME_MAX + 1];
		if (end - start > NAME_MAX) {
			p[pos] = '\0';
			return urs_err_set(err, -ENAMETOOLONG,
					   "cgroup: a component below %s is too long", p);
		}
		memcpy(comp, p + start, end - start);
		comp[end - start] = '\0';
		bool last = p[end] == '\0';
		if (enable)
			enable_controllers(dfd);

		bool made = false;
		_cleanup_close_ int fd =
			openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = fd < 0 ? -errno : 0;
		if (r == -ENOENT) {
			if (mkdirat(dfd, comp, 0755) == 0) {
				made = true;
			} else if (errno != EEXIST) {
				r = -errno;
				*retry = r == -ENOENT && !d->created;
				p[pos] = '\0';
				return urs_err_set(err, r, "cgroup: creating %s/%s: %s", p, comp,
						   strerror(-r));
			}
			fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = fd < 0 ? -errno : 0;
		}
		if (made)
			d->created++;
		else if (!r)
			d->created = 0; /* only a trailing run of new levels is ours */
		if (r < 0) {
			p[made ? end : pos] = '\0';
			return urs_err_set(err, r, "cgroup: opening %s%s%s: %s", p, made ? "" : "/",
					   made ? "" : comp, strerror(-r));
		}
		if (cpuset && (made || last)) {
			r = copy_if_empty(dfd, fd, "cpuset.cpus", err);
			if (!r)
				r = copy_if_empty(dfd, fd, "cpuset.mems", err);
			if (r < 0) {
				p[end] = '\0';
				return r;
			}
		}
		close(dfd);
		dfd = steal_fd(&fd);
		pos = end;
	}
	if (!d->created && prev) {
		/* a killed predecessor's, its tasks still exiting: ours as it was its */
		d->created = prev->created;
	} else if (!d->created) {
		/* joining an existing cgroup: only an empty one */
		char buf[32];
		r = read_at(dfd, "cgroup.procs", buf, sizeof(buf));
		if (r > 0 || r == -EFBIG)
			return urs_err_set(err, -EBUSY,
					   "cgroup: %s already exists and has processes", d->path);
	}
	d->fd = steal_fd(&dfd);
	return 0;
}

static int walk_create(struct urs_cgroup *cg, int h, size_t root_len, const struct urs_cg_dir *prev,
		       struct urs_err *err)
{
	char path[URS_CG_PATH_MAX];
	memcpy(path, cg->h[h].path, sizeof(path));
	for (int tries = 1;; tries++) {
		bool retry;
		int r = walk_once(cg, h, root_len, prev, &retry, err);
		if (!r || !retry || tries == CG_CREATE_RETRIES)
			return r;
		memcpy(cg->h[h].path, path, sizeof(path));
	}
}

static bool applies(int mode, int h)
{
	if (mode == URS_CG_UNIFIED)
		return h == URS_CG_V2;
	if (mode == URS_CG_LEGACY)
		return h != URS_CG_V2;
	return true;
}

/* Where hierarchy @h is mounted (@ctrls: its controller list from
 * /proc/PID/cgroup, for co-mounts like "cpu,cpuacct"); false if nowhere. */
static bool hier_root(int mode, int h, const char *ctrls, size_t cl, char *root, size_t len)
{
	if (h == URS_CG_V2) {
		snprintf(root, len, "%s", mode == URS_CG_UNIFIED ? CG_ROOT : CG_ROOT "/unified");
		return true;
	}
	snprintf(root, len, CG_ROOT "/%s", hier_names[h]);
	if (fs_is(root, CGROUP_SUPER_MAGIC))
		return true;
	snprintf(root, len, CG_ROOT "/%.*s", (int) cl, ctrls);
	return fs_is(root, CGROUP_SUPER_MAGIC);
}

int urs_cg_home_v1(struct urs_cgroup *home, const struct urs_cgroup *cg, struct urs_err *err)
{
	cg_init(home, cg->mode);
	char proc[8192];
	int r = read_at(AT_FDCWD, "/proc/self/cgroup", proc, sizeof(proc));
	if (r < 0)
		return urs_err_set(err, r, "cgroup: reading /proc/self/cgroup: %s", strerror(-r));
	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (h == URS_CG_V2 || !has(cg, h))
			continue;
		struct urs_cg_dir *d = &home->h[h];
		d->alias = cg->h[h].alias;
		const char *ctrls, *own;
		size_t cl, ol;
		long hid;
		char root[128];
		if (!find_line(proc, h, &hid, &ctrls, &cl, &own, &ol) ||
		    !hier_root(cg->mode, h, ctrls, cl, root, sizeof(root)))
			return urs_err_set(err, -ENOENT, "cgroup: not in a %s cgroup",
					   hier_names[h]);
		if (memmem(own, ol, "/..", 3))
			return urs_err_set(err, -EINVAL,
					   "cgroup: our %s cgroup is outside our namespace",
					   hier_names[h]);
		while (ol && own[ol - 1] == '/')
			ol--;
		int n = snprintf(d->path, sizeof(d->path), "%s%.*s", root, (int) ol, own);
		if (n < 0 || (size_t) n >= sizeof(d->path))
			return urs_err_set(err, -ENAMETOOLONG, "cgroup: %s path too long",
					   hier_names[h]);
	}
	return 0;
}

/* The sandbox's cgroup relative to its parent: @cgroups_path normalized
 * (*@abs: it was absolute), or "ursa/@id" when it is empty. */
static int rel_path(const char *cgroups_path, const char *id, char *rel, size_t len, bool *abs,
		    struct urs_err *err)
{
	int r = normalize(cgroups_path ? cgroups_path : "", rel, len, abs);
	if (r < 0)
		return urs_err_set(err, r, "cgroup: invalid cgroupsPath \"%s\"", cgroups_path);
	if (!rel[0]) {
		if (*abs)
			return urs_err_set(err, -EINVAL,
					   "cgroup: cgroupsPath \"%s\" is a hierarchy's root",
					   cgroups_path);
		if (!id || !id[0] || strchr(id, '/') || strchr(id, ';') || strchr(id, '\n') ||
		    !strcmp(id, ".") || !strcmp(id, "..") || strlen(id) > NAME_MAX)
			return urs_err_set(err, -EINVAL, "cgroup: invalid container id \"%s\"",
					   id ? id : "(null)");
		snprintf(rel, len, "ursa/%s", id);
	}
	return 0;
}

/* /proc/@caller/cgroup (ours if @caller is 0) into @proc. */
static int read_caller_cgroups(pid_t caller, char *proc, size_t len, struct urs_err *err)
{
	char pp[64];
	if (caller > 0)
		snprintf(pp, sizeof(pp), "/proc/%d/cgroup", (int) caller);
	else
		snprintf(pp, sizeof(pp), "/proc/self/cgroup");
	int r = read_at(AT_FDCWD, pp, proc, len);
	if (r < 0)
		return urs_err_set(err, r, "cgroup: reading %s: %s", pp, strerror(-r));
	return 0;
}

/* Each hierarchy's path for the sandbox: @rel beneath the caller's cgroup
 * (as @proc lists it; beneath the root if @abs), or the path of the
 * hierarchy it is co-mounted with (an alias). @root_len: each mount
 * point's length. */
static int hier_paths(struct urs_cgroup *cg, int mode, const char *proc, const char *rel, bool abs,
		      size_t root_len[URS_CG_NHIER], struct urs_err *err)
{
	long hids[URS_CG_NHIER];
	for (int h = 0; h < URS_CG_NHIER; h++) {
		hids[h] = -1;
		if (!applies(mode, h))
			continue;
		const char *ctrls, *own;
		size_t cl, ol;
		if (!find_line(proc, h, &hids[h], &ctrls, &cl, &own, &ol))
			continue; /* controller not mounted on this host */
		struct urs_cg_dir *d = &cg->h[h];
		for (int e = 0; e < h; e++) {
			if (hids[e] == hids[h] && e != URS_CG_V2 && h != URS_CG_V2 && has(cg, e)) {
				d->alias = (int8_t) e; /* co-mounted, e.g. cpu,cpuacct */
				memcpy(d->path, cg->h[e].path, sizeof(d->path));
				break;
			}
		}
		if (d->alias >= 0)
			continue;

		char root[128];
		if (!hier_root(mode, h, ctrls, cl, root, sizeof(root)))
			continue;
		/* the caller's own cgroup, without a trailing '/' */
		while (ol && own[ol - 1] == '/')
			ol--;
		if (abs) {
			ol = 0;
		} else {
			if (memmem(own, ol, "/..", 3))
				return urs_err_set(
					err, -EINVAL,
					"cgroup: the caller's %s cgroup \"%.*s\" is outside "
					"our cgroup namespace",
					hier_names[h], (int) ol, own);
			if (h == URS_CG_V2 && mode == URS_CG_UNIFIED) {
				/* runc: beneath the parent, the caller's own holds processes */
				while (ol && own[ol - 1] != '/')
					ol--;
				while (ol && own[ol - 1] == '/')
					ol--;
			}
		}
		int n = snprintf(d->path, sizeof(d->path), "%s%.*s/%s", root, (int) ol, own, rel);
		if (n < 0 || (size_t) n >= sizeof(d->path)) {
			cg_init(cg, mode);
			return urs_err_set(err, -ENAMETOOLONG, "cgroup: path for %s is too long",
					   hier_names[h]);
		}
		root_len[h] = strlen(root);
	}
	return 0;
}

/* @prev names each of @cg's directories (a predecessor's, from
 * urs_cg_to_string()): every used hierarchy at the same path */
static bool same_dirs(const struct urs_cgroup *cg, const struct urs_cgroup *prev)
{
	if (prev->mode != cg->mode)
		return false;
	for (int h = 0; h < URS_CG_NHIER; h++)
		if (has(cg, h) != has(prev, h) ||
		    (has(cg, h) && strcmp(cg->h[h].path, prev->h[h].path)))
			return false;
	return true;
}

/* A predecessor killed in a checkpoint was thawed before it was left to
 * us; a freezer still set would stop our init at its birth. */
static void thaw_adopted(struct urs_cgroup *cg)
{
	if (has(cg, URS_CG_FREEZER))
		(void) cg_write(cg, URS_CG_FREEZER, "freezer.state", "THAWED", NULL);
	if (has(cg, URS_CG_V2)) {
		int dfd = cg_fd(cg, URS_CG_V2, NULL);
		if (dfd >= 0 && faccessat(dfd, "cgroup.freeze", F_OK, 0) == 0)
			(void) write_at(dfd, "cgroup.freeze", "0");
	}
}

int urs_cg_create(struct urs_cgroup *cg, const char *cgroups_path, const char *id, pid_t caller,
		  struct urs_err *err)
{
	return urs_cg_create_over(cg, cgroups_path, id, caller, NULL, false, err);
}

/* a directory below @dfd */
static bool has_subdirs(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return true; /* (unknown: as if) */
	}
	bool any = false;
	struct dirent *e;
	while (!any && (e = readdir(d)))
		any = e->d_type == DT_DIR && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return any;
}

/* the "oom_kill N" count of @file in hierarchy @h (0 if none) */
static uint64_t oom_kills(struct urs_cgroup *cg, int h, const char *file)
{
	char buf[1024];
	int dfd = has(cg, h) ? cg_fd(cg, h, NULL) : -1;
	int r = dfd < 0 ? -ENOENT : read_at(dfd, file, buf, sizeof(buf));
	if (r < 0)
		return r == -ENOENT ? 0 : 1; /* (unreadable: as if it had) */
	const char *k = strstr(buf, "oom_kill ");
	return k ? strtoull(k + 9, NULL, 10) : 0;
}

bool urs_cg_adoptable(struct urs_cgroup *cg)
{
	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (!has(cg, h) || cg->h[h].alias >= 0)
			continue;
		int dfd = cg_fd(cg, h, NULL);
		if (dfd < 0 || has_subdirs(dfd))
			return false;
	}
	char sc[256];
	int dfd = has(cg, URS_CG_V2) ? cg_fd(cg, URS_CG_V2, NULL) : -1;
	if (dfd >= 0 && read_at(dfd, "cgroup.subtree_control", sc, sizeof(sc)) != 0)
		return false; /* (read_at trims: 0 is an empty list) */
	return !oom_kills(cg, URS_CG_V2, "memory.events") &&
	       !oom_kills(cg, URS_CG_MEMORY, "memory.oom_control");
}

int urs_cg_create_over(struct urs_cgroup *cg, const char *cgroups_path, const char *id,
		       pid_t caller, struct urs_cgroup *prev, bool adopt, struct urs_err *err)
{
	int mode = urs_cg_mode();
	cg_init(cg, mode > 0 ? mode : 0);
	if (mode < 0)
		return urs_err_set(err, mode, "cgroup: no cgroup filesystem under " CG_ROOT);

	char rel[URS_CG_PATH_MAX];
	bool abs = false;
	int r = rel_path(cgroups_path, id, rel, sizeof(rel), &abs, err);
	if (r < 0)
		return r;
	char proc[8192];
	r = read_caller_cgroups(caller, proc, sizeof(proc), err);
	if (r < 0)
		return r;
	size_t root_len[URS_CG_NHIER] = {0};
	r = hier_paths(cg, mode, proc, rel, abs, root_len, err);
	if (r < 0)
		return r;
	if (prev && !same_dirs(cg, prev)) {
		cg_init(cg, mode);
		return urs_err_set(err, -EXDEV, "cgroup: not the directories of the predecessor");
	}
	if (prev && !adopt) { /* not to be joined busy: removed once its tasks are gone */
		if ((r = urs_cg_destroy(prev, err)) < 0) {
			cg_init(cg, mode);
			return r;
		}
		prev = NULL;
	}

	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (!has(cg, h) || cg->h[h].alias >= 0)
			continue;
		r = walk_create(cg, h, root_len[h], prev ? &prev->h[h] : NULL, err);
		if (r < 0) {
			(void) urs_cg_destroy(cg, NULL);
			return r;
		}
	}
	if (prev)
		thaw_adopted(cg);
	return 0;
}

/* ---- entering ---------------------------------------------------------- */

/*
 * Moving a process in without the kernel's global migration lock.
 *
 * Writing a pid to cgroup.procs (or a tid to tasks) takes the global
 * cgroup_threadgroup_rwsem for writing; when nobody did recently, that
 * first waits for a full RCU grace period (rcu_sync_enter: 6-22 ms
 * measured on a 2-core VM, most of a sandbox's creation). Two ways in
 * skip it (kernel/cgroup/cgroup.c, cgroup_procs_write_start and
 * cgroup_css_set_fork):
 *   - a thread moving ITSELF: "0" written to a v1 `tasks` file migrates
 *     only the writing thread, with no threadgroup lock at all (5.19+,
 *     CGRP_ATTACH_LOCK_NONE). A single-threaded process thereby moves
 *     whole. (v2's cgroup.threads refuses a move to another domain.)
 *   - clone3(CLONE_INTO_CGROUP): the child is born in the v2 cgroup; fork
 *     takes the lock only for reading.
 * So the supervisor enters the v1 hierarchies with urs_cg_enter_self_v1()
 * and clones the init into the v2 cgroup with urs_cg_open_v2()'s fd.
 * Before (session 4) an opt-in "prewarm" thread started the grace period
 * early; it is gone: with no writer there is no grace period to hide.
 */

/* Threads of the calling process (field 20 of /proc/self/stat), or -errno. */
static int own_threads(void)
{
	char buf[1024];
	int r = read_at(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf));
	if (r < 0)
		return r;
	char *p = strrchr(buf, ')');
	for (int field = 2; p && field < 20; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return -EIO;
	long n = strtol(p + 1, NULL, 10);
	return n > 0 ? (int) n : -EIO;
}

int urs_cg_enter_self_v1(struct urs_cgroup *cg, struct urs_err *err)
{
	return urs_cg_enter_self_v1_only(cg, ~0u, err);
}

int urs_cg_enter_self_v1_only(struct urs_cgroup *cg, unsigned hiers, struct urs_err *err)
{
	int n = own_threads();
	if (n < 0)
		return urs_err_set(err, n, "cgroup: counting our threads: %s", strerror(-n));
	if (n != 1)
		return urs_err_set(err, -EBUSY,
				   "cgroup: %d threads: a self-migration would leave %d behind", n,
				   n - 1);
	return urs_cg_enter_thread_v1(cg, hiers, err);
}

int urs_cg_enter_thread_v1(struct urs_cgroup *cg, unsigned hiers, struct urs_err *err)
{
	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (h == URS_CG_V2 || !has(cg, h) || cg->h[h].alias >= 0 || !(hiers & (1u << h)))
			continue;
		int dfd = cg_fd(cg, h, err);
		if (dfd < 0)
			return dfd;
		int r = write_at(dfd, "tasks", "0");
		if (r < 0)
			return urs_err_set(err, r, "cgroup: entering %s (tasks): %s", cg->h[h].path,
					   strerror(-r));
	}
	return 0;
}

static int enter_one(struct urs_cgroup *cg, int h, const char *pid, struct urs_err *err)
{
	int dfd = cg_fd(cg, h, err);
	if (dfd < 0)
		return dfd;
	int r = write_at(dfd, "cgroup.procs", pid);
	if (r < 0)
		return urs_err_set(err, r, "cgroup: adding pid %s to %s/cgroup.procs: %s", pid,
				   cg->h[h].path, strerror(-r));
	return 0;
}

int urs_cg_enter(struct urs_cgroup *cg, pid_t pid, struct urs_err *err)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%d", (int) pid);
	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (!has(cg, h) || cg->h[h].alias >= 0)
			continue;
		int r = enter_one(cg, h, buf, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int urs_cg_enter_only(struct urs_cgroup *cg, pid_t pid, unsigned hiers, struct urs_err *err)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%d", (int) pid);
	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (!has(cg, h) || cg->h[h].alias >= 0 || !(hiers & (1u << h)))
			continue;
		int r = enter_one(cg, h, buf, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int urs_cg_enter_v2(struct urs_cgroup *cg, pid_t pid, struct urs_err *err)
{
	if (!has(cg, URS_CG_V2))
		return 0;
	char buf[24];
	snprintf(buf, sizeof(buf), "%d", (int) pid);
	return enter_one(cg, URS_CG_V2, buf, err);
}

int urs_cg_open_v2(struct urs_cgroup *cg, struct urs_err *err)
{
	if (!has(cg, URS_CG_V2))
		return urs_err_set(err, -ENOENT, "cgroup: no cgroup2 hierarchy on this host");
	int fd = open(cg->h[URS_CG_V2].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return urs_err_set(err, -errno, "cgroup: opening %s: %s", cg->h[URS_CG_V2].path,
				   strerror(errno));
	return fd;
}

bool urs_cg_v2_has(struct urs_cgroup *cg, pid_t pid)
{
	/* its "0::PATH" line (not the cgroup's cgroup.procs: O(1) in the
	 * number of processes there) */
	char p[64], buf[8192], root[128];
	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int) pid);
	const char *ctrls, *own;
	size_t cl, ol;
	long hid;
	if (!has(cg, URS_CG_V2) || read_at(AT_FDCWD, p, buf, sizeof(buf)) < 0 ||
	    !find_line(buf, URS_CG_V2, &hid, &ctrls, &cl, &own, &ol) ||
	    !hier_root(cg->mode, URS_CG_V2, ctrls, cl, root, sizeof(root)))
		return false;
	size_t rl = strlen(root);
	const char *mine = cg->h[URS_CG_V2].path;
	return !strncmp(mine, root, rl) && strlen(mine + rl) == ol && !memcmp(mine + rl, own, ol);
}

/* ---- limits ------------------------------------------------------------ */

uint64_t urs_cg_shares_to_weight(uint64_t shares)
{
	if (shares == 0)
		return 0;
	if (shares < 2)
		shares = 2;
	if (shares > 262144)
		shares = 262144;
	return 1 + ((shares - 2) * 9999) / 262142;
}

static int need(struct urs_cgroup *cg, int h, const char *what, struct urs_err *err)
{
	if (has(cg, h))
		return 0;
	return urs_err_set(err, -EOPNOTSUPP,
			   "cgroup: %s limits set but the %s controller is not mounted", what,
			   hier_names[h]);
}

static int memory_v1(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	int64_t lim = r->mem_limit, swap = r->mem_swap;
	if (!lim && !swap && !r->mem_reservation && r->mem_swappiness < 0 && !r->disable_oom_killer)
		return 0;
	int ret = need(cg, URS_CG_MEMORY, "memory", err);
	if (ret < 0)
		return ret;
	if (lim == -1 && swap == 0)
		swap = -1; /* unlimited memory means unlimited memory+swap */
	if (lim > 0 && swap > 0 && swap < lim)
		return urs_err_set(err, -EINVAL,
				   "cgroup: memory+swap limit %" PRId64
				   " is below the memory limit %" PRId64,
				   swap, lim);
	int dfd = cg_fd(cg, URS_CG_MEMORY, err);
	if (dfd < 0)
		return dfd;
	if (swap && faccessat(dfd, "memory.memsw.limit_in_bytes", F_OK, 0) < 0)
		swap = 0; /* no swap accounting in this kernel: nothing to limit */

	/* runc's order: raise memsw before the limit when growing past it */
	bool swap_first = false;
	if (lim && swap) {
		uint64_t cur;
		int rr = read_u64_at(dfd, "memory.limit_in_bytes", &cur);
		if (rr < 0)
			return urs_err_set(err, rr, "cgroup: reading memory.limit_in_bytes: %s",
					   strerror(-rr));
		swap_first = swap == -1 || cur < (uint64_t) swap;
	}
	if (swap_first &&
	    (ret = cg_write_i64(cg, URS_CG_MEMORY, "memory.memsw.limit_in_bytes", swap, err)) < 0)
		return ret;
	if (lim && (ret = cg_write_i64(cg, URS_CG_MEMORY, "memory.limit_in_bytes", lim, err)) < 0)
		return ret;
	if (!swap_first && swap &&
	    (ret = cg_write_i64(cg, URS_CG_MEMORY, "memory.memsw.limit_in_bytes", swap, err)) < 0)
		return ret;
	if (r->mem_reservation &&
	    (ret = cg_write_i64(cg, URS_CG_MEMORY, "memory.soft_limit_in_bytes", r->mem_reservation,
				err)) < 0)
		return ret;
	if (r->mem_swappiness >= 0) {
		if (r->mem_swappiness > 100)
			return urs_err_set(err, -EINVAL,
					   "cgroup: memory swappiness %" PRId64 " is outside 0-100",
					   r->mem_swappiness);
		if ((ret = cg_write_i64(cg, URS_CG_MEMORY, "memory.swappiness", r->mem_swappiness,
					err)) < 0)
			return ret;
	}
	if (r->disable_oom_killer &&
	    (ret = cg_write(cg, URS_CG_MEMORY, "memory.oom_control", "1", err)) < 0)
		return ret;
	return 0;
}

static int cpu_v1(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	if (!r->cpu_shares && !r->cpu_quota && !r->cpu_period)
		return 0;
	int ret = need(cg, URS_CG_CPU, "cpu", err);
	if (ret < 0)
		return ret;
	if (r->cpu_shares) {
		char v[24];
		snprintf(v, sizeof(v), "%" PRIu64, r->cpu_shares);
		if ((ret = cg_write(cg, URS_CG_CPU, "cpu.shares", v, err)) < 0)
			return ret;
	}
	/* period first; if the kernel refuses it against the old quota (EINVAL)
	 * and a quota comes too, retry it after the quota (runc). */
	bool period_later = false;
	char pv[24];
	snprintf(pv, sizeof(pv), "%" PRIu64, r->cpu_period);
	if (r->cpu_period) {
		ret = cg_write(cg, URS_CG_CPU, "cpu.cfs_period_us", pv, err);
		if (ret == -EINVAL && r->cpu_quota)
			period_later = true;
		else if (ret < 0)
			return ret;
	}
	if (r->cpu_quota) {
		if ((ret = cg_write_i64(cg, URS_CG_CPU, "cpu.cfs_quota_us", r->cpu_quota, err)) < 0)
			return ret;
		if (period_later &&
		    (ret = cg_write(cg, URS_CG_CPU, "cpu.cfs_period_us", pv, err)) < 0)
			return ret;
	}
	return 0;
}

static int devices_v1(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	if (!r->n_devices)
		return 0;
	int ret = need(cg, URS_CG_DEVICES, "devices", err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < r->n_devices; i++) {
		const struct urs_cg_device *dv = &r->devices[i];
		if (dv->type != 'a' && dv->type != 'b' && dv->type != 'c')
			return urs_err_set(err, -EINVAL,
					   "cgroup: device rule %zu: invalid type '%c'", i,
					   dv->type);
		const char *acc = dv->access[0] ? dv->access : "rwm";
		if (strspn(acc, "rwm") != strlen(acc) || strlen(acc) > 3)
			return urs_err_set(err, -EINVAL,
					   "cgroup: device rule %zu: invalid access \"%s\"", i,
					   acc);
		char maj[24] = "*", min[24] = "*", rule[80];
		if (dv->major >= 0)
			snprintf(maj, sizeof(maj), "%" PRId64, dv->major);
		if (dv->minor >= 0)
			snprintf(min, sizeof(min), "%" PRId64, dv->minor);
		snprintf(rule, sizeof(rule), "%c %s:%s %s", dv->type, maj, min, acc);
		ret = cg_write(cg, URS_CG_DEVICES, dv->allow ? "devices.allow" : "devices.deny",
			       rule, err);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * Write @val to the first of @files that exists in hierarchy @h; what the
 * host lacks (the controller, every file) is refused naming @field, the
 * linux.resources member, never skipped.
 */
static int write_field(struct urs_cgroup *cg, int h, const char *const *files, size_t n,
		       const char *val, const char *field, struct urs_err *err)
{
	if (!has(cg, h))
		return urs_err_set(err, -EOPNOTSUPP,
				   "%s: not supported on this host (no %s cgroup controller)",
				   field, hier_names[h]);
	int dfd = cg_fd(cg, h, err);
	if (dfd < 0)
		return dfd;
	for (size_t i = 0; i < n; i++) {
		if (faccessat(dfd, files[i], F_OK, 0) < 0)
			continue;
		int r = write_at(dfd, files[i], val);
		if (r < 0)
			return urs_err_set(err, r, "%s: writing \"%s\" to %s: %s", field, val,
					   files[i], strerror(-r));
		return 0;
	}
	return urs_err_set(err, -EOPNOTSUPP,
			   "%s: not supported on this host (the %s cgroup has no %s%s)", field,
			   hier_names[h], files[0], n > 1 ? " nor its alternatives" : "");
}

static int write_field_u64(struct urs_cgroup *cg, int h, const char *file, uint64_t v,
			   const char *field, struct urs_err *err)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRIu64, v);
	return write_field(cg, h, &file, 1, b, field, err);
}

static const char *const thr_json[URS_CG_THR__N] = {
	"throttleReadBpsDevice", "throttleWriteBpsDevice", "throttleReadIOPSDevice",
	"throttleWriteIOPSDevice"};

/* "MAJ:MIN VALUE" lines, one write each (the kernel takes one at a time) */
static int blkio_devs_v1(struct urs_cgroup *cg, const char *const *files, size_t nf,
			 const struct urs_cg_blkio_dev *d, size_t n, const char *json,
			 struct urs_err *err)
{
	for (size_t i = 0; i < n; i++) {
		char v[80], field[96];
		snprintf(v, sizeof(v), "%" PRId64 ":%" PRId64 " %" PRIu64, d[i].major, d[i].minor,
			 d[i].value);
		snprintf(field, sizeof(field), "linux.resources.blockIO.%s[%zu]", json, i);
		int r = write_field(cg, URS_CG_BLKIO, files, nf, v, field, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* runc's order and files: blkio.weight, else BFQ's blkio.bfq.weight */
static int blkio_v1(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	static const char *const wf[] = {"blkio.weight", "blkio.bfq.weight"};
	static const char *const wdf[] = {"blkio.weight_device", "blkio.bfq.weight_device"};
	static const char *const lwf[] = {"blkio.leaf_weight"};
	static const char *const lwdf[] = {"blkio.leaf_weight_device"};
	static const char *const tf[URS_CG_THR__N][1] = {{"blkio.throttle.read_bps_device"},
							 {"blkio.throttle.write_bps_device"},
							 {"blkio.throttle.read_iops_device"},
							 {"blkio.throttle.write_iops_device"}};
	char b[24];
	int ret;
	if (r->blkio_weight) {
		snprintf(b, sizeof(b), "%u", r->blkio_weight);
		if ((ret = write_field(cg, URS_CG_BLKIO, wf, 2, b, "linux.resources.blockIO.weight",
				       err)) < 0)
			return ret;
	}
	if (r->blkio_leaf_weight) {
		snprintf(b, sizeof(b), "%u", r->blkio_leaf_weight);
		if ((ret = write_field(cg, URS_CG_BLKIO, lwf, 1, b,
				       "linux.resources.blockIO.leafWeight", err)) < 0)
			return ret;
	}
	if ((ret = blkio_devs_v1(cg, wdf, 2, r->blkio_weight_dev, r->n_blkio_weight_dev,
				 "weightDevice", err)) < 0 ||
	    (ret = blkio_devs_v1(cg, lwdf, 1, r->blkio_leaf_weight_dev, r->n_blkio_leaf_weight_dev,
				 "weightDevice", err)) < 0)
		return ret;
	for (int t = 0; t < URS_CG_THR__N; t++)
		if ((ret = blkio_devs_v1(cg, tf[t], 1, r->blkio_throttle[t], r->n_blkio_throttle[t],
					 thr_json[t], err)) < 0)
			return ret;
	return 0;
}

/* What no hierarchy of ursa's can take, on any host */
static int refuse_unsupported(const struct urs_cg_resources *r, bool v2, struct urs_err *err)
{
	if (r->n_hugepages && !v2)
		return urs_err_set(err, -EOPNOTSUPP,
				   "linux.resources.hugepageLimits: not supported on this host "
				   "(ursa uses no v1 hugetlb cgroup hierarchy)");
	if (r->has_net_classid)
		return urs_err_set(err, -EOPNOTSUPP,
				   "linux.resources.network.classID: not supported on this host "
				   "(%s)",
				   v2 ? "cgroup2 has no net_cls"
				      : "ursa uses no net_cls hierarchy");
	if (r->n_net_prio)
		return urs_err_set(err, -EOPNOTSUPP,
				   "linux.resources.network.priorities: not supported on this host "
				   "(%s)",
				   v2 ? "cgroup2 has no net_prio"
				      : "ursa uses no net_prio hierarchy");
	if (r->rdma)
		return urs_err_set(
			err, -EOPNOTSUPP,
			"linux.resources.rdma: not supported (ursa uses no rdma cgroup)");
	if (!v2)
		return 0;
	const char *f = r->mem_kernel > 0   ? "memory.kernel"
			: r->mem_kernel_tcp ? "memory.kernelTCP"
			: r->cpu_rt_runtime || r->cpu_rt_period
				? "cpu.realtimeRuntime/realtimePeriod"
			: r->blkio_leaf_weight || r->n_blkio_leaf_weight_dev ? "blockIO.leafWeight"
									     : NULL;
	if (f)
		return urs_err_set(err, -EOPNOTSUPP,
				   "linux.resources.%s: not supported on cgroup2 (no such limit)",
				   f);
	return 0;
}

/* memory.kernel: Linux 6.1+ takes memory.kmem.limit_in_bytes and ignores it
 * (runc 1.1 ignores the field): written, read back, refused if not kept */
static int kmem_v1(struct urs_cgroup *cg, int64_t lim, struct urs_err *err)
{
	const char *f = "memory.kmem.limit_in_bytes", *field = "linux.resources.memory.kernel";
	int ret = write_field_u64(cg, URS_CG_MEMORY, f, (uint64_t) lim, field, err);
	if (ret < 0)
		return ret;
	uint64_t now = 0;
	int dfd = cg_fd(cg, URS_CG_MEMORY, err);
	if (dfd < 0)
		return dfd;
	if ((ret = read_u64_at(dfd, f, &now)) < 0)
		return urs_err_set(err, ret, "%s: reading %s: %s", field, f, strerror(-ret));
	if (now != ((uint64_t) lim & ~(uint64_t) 4095))
		return urs_err_set(err, -EOPNOTSUPP,
				   "%s: not supported on this host (the kernel ignores %s)", field,
				   f);
	return 0;
}

/* kernel, kernelTCP, cpu burst/idle/realtime (v1) */
static int extras_v1(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	int ret;
	char b[24];
	if (r->mem_kernel > 0 && (ret = kmem_v1(cg, r->mem_kernel, err)) < 0)
		return ret;
	if (r->mem_kernel_tcp) {
		snprintf(b, sizeof(b), "%" PRId64, r->mem_kernel_tcp);
		const char *f = "memory.kmem.tcp.limit_in_bytes";
		if ((ret = write_field(cg, URS_CG_MEMORY, &f, 1, b,
				       "linux.resources.memory.kernelTCP", err)) < 0)
			return ret;
	}
	/* runc: the period before the runtime */
	if (r->cpu_rt_period &&
	    (ret = write_field_u64(cg, URS_CG_CPU, "cpu.rt_period_us", r->cpu_rt_period,
				   "linux.resources.cpu.realtimePeriod", err)) < 0)
		return ret;
	if (r->cpu_rt_runtime) {
		snprintf(b, sizeof(b), "%" PRId64, r->cpu_rt_runtime);
		const char *f = "cpu.rt_runtime_us";
		if ((ret = write_field(cg, URS_CG_CPU, &f, 1, b,
				       "linux.resources.cpu.realtimeRuntime", err)) < 0)
			return ret;
	}
	if (r->has_cpu_burst &&
	    (ret = write_field_u64(cg, URS_CG_CPU, "cpu.cfs_burst_us", r->cpu_burst,
				   "linux.resources.cpu.burst", err)) < 0)
		return ret;
	if (r->has_cpu_idle) {
		snprintf(b, sizeof(b), "%" PRId64, r->cpu_idle);
		const char *f = "cpu.idle";
		if ((ret = write_field(cg, URS_CG_CPU, &f, 1, b, "linux.resources.cpu.idle", err)) <
		    0)
			return ret;
	}
	return blkio_v1(cg, r, err);
}

static int apply_v1(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	int ret;
	if (r->n_unified)
		return urs_err_set(
			err, -EINVAL,
			"cgroup: unified resources need a cgroup2-only host (this one is %s)",
			mode_names[cg->mode]);
	if ((r->cpus || r->mems) && (ret = need(cg, URS_CG_CPUSET, "cpuset", err)) < 0)
		return ret;
	if (r->cpus && (ret = cg_write(cg, URS_CG_CPUSET, "cpuset.cpus", r->cpus, err)) < 0)
		return ret;
	if (r->mems && (ret = cg_write(cg, URS_CG_CPUSET, "cpuset.mems", r->mems, err)) < 0)
		return ret;
	if ((ret = memory_v1(cg, r, err)) < 0)
		return ret;
	if ((ret = cpu_v1(cg, r, err)) < 0)
		return ret;
	if ((ret = extras_v1(cg, r, err)) < 0)
		return ret;
	if (r->pids_limit) {
		if ((ret = need(cg, URS_CG_PIDS, "pids", err)) < 0)
			return ret;
		if (r->pids_limit > 0)
			ret = cg_write_i64(cg, URS_CG_PIDS, "pids.max", r->pids_limit, err);
		else
			ret = cg_write(cg, URS_CG_PIDS, "pids.max", "max", err);
		if (ret < 0)
			return ret;
	}
	return devices_v1(cg, r, err);
}

/* io.* of cgroup2, as runc's fs2: io.bfq.weight when BFQ is there (the
 * value as is), else io.weight (runc's 10..1000 -> 1..10000); io.max. */
static int blkio_v2(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	const int h = URS_CG_V2;
	int dfd = cg_fd(cg, h, err), ret;
	if (dfd < 0)
		return dfd;
	bool bfq = faccessat(dfd, "io.bfq.weight", F_OK, 0) == 0;
	const char *wf = bfq ? "io.bfq.weight" : "io.weight";
	char v[96], field[96];
	if (r->blkio_weight) {
		uint64_t w =
			bfq ? r->blkio_weight : 1 + ((uint64_t) r->blkio_weight - 10) * 9999 / 990;
		if ((ret = write_field_u64(cg, h, wf, w, "linux.resources.blockIO.weight", err)) <
		    0)
			return ret;
	}
	for (size_t i = 0; i < r->n_blkio_weight_dev; i++) {
		const struct urs_cg_blkio_dev *d = &r->blkio_weight_dev[i];
		uint64_t w = bfq ? d->value : 1 + (d->value - 10) * 9999 / 990;
		snprintf(v, sizeof(v), "%" PRId64 ":%" PRId64 " %" PRIu64, d->major, d->minor, w);
		snprintf(field, sizeof(field), "linux.resources.blockIO.weightDevice[%zu]", i);
		if ((ret = write_field(cg, h, &wf, 1, v, field, err)) < 0)
			return ret;
	}
	static const char *const key[URS_CG_THR__N] = {"rbps", "wbps", "riops", "wiops"};
	const char *mf = "io.max";
	for (int t = 0; t < URS_CG_THR__N; t++) {
		for (size_t i = 0; i < r->n_blkio_throttle[t]; i++) {
			const struct urs_cg_blkio_dev *d = &r->blkio_throttle[t][i];
			char rate[24] = "max";
			if (d->value)
				snprintf(rate, sizeof(rate), "%" PRIu64, d->value);
			snprintf(v, sizeof(v), "%" PRId64 ":%" PRId64 " %s=%s", d->major, d->minor,
				 key[t], rate);
			snprintf(field, sizeof(field), "linux.resources.blockIO.%s[%zu]",
				 thr_json[t], i);
			if ((ret = write_field(cg, h, &mf, 1, v, field, err)) < 0)
				return ret;
		}
	}
	return 0;
}

/* cpu burst/idle, hugetlb, io (v2) */
static int extras_v2(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	const int h = URS_CG_V2;
	int ret;
	char file[64], field[64];
	if (r->has_cpu_burst && (ret = write_field_u64(cg, h, "cpu.max.burst", r->cpu_burst,
						       "linux.resources.cpu.burst", err)) < 0)
		return ret;
	if (r->has_cpu_idle && (ret = write_field_u64(cg, h, "cpu.idle", (uint64_t) r->cpu_idle,
						      "linux.resources.cpu.idle", err)) < 0)
		return ret;
	for (size_t i = 0; i < r->n_hugepages; i++) {
		const char *ps = r->hugepages[i].page_size;
		snprintf(field, sizeof(field), "linux.resources.hugepageLimits[%zu]", i);
		if (!ps || !ps[0] || strspn(ps, "0123456789KMGTPBkmgtpb") != strlen(ps) ||
		    strlen(ps) > 16)
			return urs_err_set(err, -EINVAL, "%s.pageSize: invalid \"%s\"", field,
					   ps ? ps : "");
		snprintf(file, sizeof(file), "hugetlb.%s.max", ps);
		if ((ret = write_field_u64(cg, h, file, r->hugepages[i].limit, field, err)) < 0)
			return ret;
	}
	return blkio_v2(cg, r, err);
}

/* v2 number: 0 → not set (""), negative → "max". */
static const char *v2num(int64_t v, char *buf, size_t len)
{
	if (v == 0)
		return NULL;
	if (v < 0)
		return "max";
	snprintf(buf, len, "%" PRId64, v);
	return buf;
}

static int apply_v2(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	const int h = URS_CG_V2;
	char b[48];
	const char *v;
	int ret;
	if (r->cpus && (ret = cg_write(cg, h, "cpuset.cpus", r->cpus, err)) < 0)
		return ret;
	if (r->mems && (ret = cg_write(cg, h, "cpuset.mems", r->mems, err)) < 0)
		return ret;

	/* memory.swap.max is swap alone: runc's ConvertMemorySwapToCgroupV2Value */
	int64_t lim = r->mem_limit, swap = r->mem_swap, sw;
	if (lim == -1 && swap == 0) {
		sw = -1;
	} else if (swap == -1 || swap == 0) {
		sw = swap;
	} else if (lim == 0 || lim == -1) {
		return urs_err_set(err, -EINVAL, "cgroup: a swap limit needs a memory limit");
	} else if (lim < 0 || swap < lim) {
		return urs_err_set(err, -EINVAL,
				   "cgroup: memory+swap limit %" PRId64
				   " is below the memory limit %" PRId64,
				   swap, lim);
	} else {
		sw = swap - lim;
	}
	v = v2num(sw, b, sizeof(b));
	if (!v && sw == 0 && swap > 0)
		v = "0"; /* memory == memory+swap: no swap */
	if (v) {
		ret = cg_write(cg, h, "memory.swap.max", v, err);
		if (ret == -ENOENT && (!strcmp(v, "max") || !strcmp(v, "0")))
			ret = 0; /* no swap accounting: nothing to turn off */
		if (ret < 0)
			return ret;
	}
	if ((v = v2num(lim, b, sizeof(b))) && (ret = cg_write(cg, h, "memory.max", v, err)) < 0)
		return ret;
	if ((v = v2num(r->mem_reservation, b, sizeof(b))) &&
	    (ret = cg_write(cg, h, "memory.low", v, err)) < 0)
		return ret;
	/* swappiness and disableOOMKiller have no cgroup2 file: ignored, like runc */

	if (r->cpu_shares) {
		snprintf(b, sizeof(b), "%" PRIu64, urs_cg_shares_to_weight(r->cpu_shares));
		if ((ret = cg_write(cg, h, "cpu.weight", b, err)) < 0)
			return ret;
	}
	if (r->cpu_quota || r->cpu_period) {
		int n = r->cpu_quota > 0 ? snprintf(b, sizeof(b), "%" PRId64, r->cpu_quota)
					 : snprintf(b, sizeof(b), "max");
		if (r->cpu_period)
			snprintf(b + n, sizeof(b) - (size_t) n, " %" PRIu64, r->cpu_period);
		if ((ret = cg_write(cg, h, "cpu.max", b, err)) < 0)
			return ret;
	}
	if ((v = v2num(r->pids_limit, b, sizeof(b))) &&
	    (ret = cg_write(cg, h, "pids.max", v, err)) < 0)
		return ret;
	if ((ret = extras_v2(cg, r, err)) < 0)
		return ret;
	/* devices: cgroup2 needs an eBPF program (BPF_CGROUP_DEVICE); not done here */
	for (size_t i = 0; i < r->n_unified; i++) {
		const char *k = r->unified[i].key;
		if (!k || !k[0] || strchr(k, '/') || !strcmp(k, ".") || !strcmp(k, ".."))
			return urs_err_set(err, -EINVAL, "cgroup: invalid unified key \"%s\"",
					   k ? k : "(null)");
		if ((ret = cg_write(cg, h, k, r->unified[i].value ? r->unified[i].value : "",
				    err)) < 0)
			return ret;
	}
	return 0;
}

int urs_cg_apply(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err)
{
	int ret = refuse_unsupported(r, cg->mode == URS_CG_UNIFIED, err);
	if (ret < 0)
		return ret;
	if (cg->mode == URS_CG_UNIFIED)
		return apply_v2(cg, r, err);
	return apply_v1(cg, r, err);
}

/* ---- freezer ----------------------------------------------------------- */

static int freezer_hier(const struct urs_cgroup *cg)
{
	if (has(cg, URS_CG_FREEZER))
		return URS_CG_FREEZER;
	if (has(cg, URS_CG_V2))
		return URS_CG_V2;
	return -EOPNOTSUPP;
}

/* 1 frozen, 0 not, negative errno. */
static int frozen_now(struct urs_cgroup *cg, int h, char *state, size_t len, struct urs_err *err)
{
	if (h == URS_CG_FREEZER) {
		int r = cg_read(cg, h, "freezer.state", state, len, err);
		if (r < 0)
			return r;
		return !strcmp(state, "FROZEN");
	}
	char buf[256];
	int r = cg_read(cg, h, "cgroup.events", buf, sizeof(buf), err);
	if (r < 0)
		return r;
	const char *f = strstr(buf, "frozen ");
	int v = f && f[7] == '1';
	snprintf(state, len, "frozen %d", v);
	return v;
}

/* ---- the cgroup v2 freezer, by directory (the checkpoint's) ------------------ */

int urs_cg2_freeze_write(const char *dir, bool frozen, struct urs_err *err)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/cgroup.freeze", dir) >= (int) sizeof(path))
		return urs_err_set(err, -ENAMETOOLONG, "cgroup: path too long: %s", dir);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, frozen ? "1" : "0", 1) != 1)
		return urs_err_set(err, -errno, "cgroup: writing %s: %m", path);
	return 0;
}

int urs_cg2_wait_frozen(const char *dir, struct urs_err *err)
{
	char path[PATH_MAX], buf[256];
	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return urs_err_set(err, -errno, "cgroup: opening %s: %m", path);
	/* cgroup.events notifies with POLLPRI, but the kernel sends at most one
	 * notification per file every 10 ms (CGROUP_FILE_NOTIFY_MIN_INTV) and
	 * delays the rest: a refreeze soon after the freeze and the thaw would
	 * wait those 10 ms. So the wait is also bounded by a short timeout
	 * that grows (50 us doubling to 1 ms), for 10 s in all. */
	int64_t deadline = now_ns() + 10 * 1000000000ll;
	long wait_ns = 50000;
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)
			return urs_err_set(err, -errno, "cgroup: reading %s: %m", path);
		buf[n] = 0;
		if (strstr(buf, "frozen 1"))
			return 0;
		if (now_ns() > deadline)
			break;
		struct pollfd pfd = {.fd = fd, .events = POLLPRI};
		struct timespec to = {0, wait_ns};
		ppoll(&pfd, 1, &to, NULL);
		wait_ns = wait_ns < 500000 ? wait_ns * 2 : 1000000;
	}
	return urs_err_set(err, -ETIMEDOUT, "cgroup: %s did not freeze within 10 s", dir);
}

int urs_cg2_freeze(const char *dir, bool frozen, struct urs_err *err)
{
	int r = urs_cg2_freeze_write(dir, frozen, err);
	if (!r && frozen)
		r = urs_cg2_wait_frozen(dir, err);
	return r;
}

bool urs_cg2_frozen_already(const char *dir)
{
	char path[PATH_MAX], buf[256];
	snprintf(path, sizeof(path), "%s/cgroup.freeze", dir);
	_cleanup_close_ int f = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '0')
		return true;
	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	_cleanup_close_ int e = open(path, O_RDONLY | O_CLOEXEC);
	n = e < 0 ? -1 : read(e, buf, sizeof(buf) - 1);
	if (n <= 0)
		return true;
	buf[n] = 0;
	return strstr(buf, "frozen 1") != NULL;
}

int urs_cg_freeze(struct urs_cgroup *cg, bool frozen, struct urs_err *err)
{
	int h = freezer_hier(cg);
	if (h < 0)
		return urs_err_set(err, h, "cgroup: no freezer (neither v1 freezer nor cgroup2)");
	if (h == URS_CG_V2) {
		int r = urs_cg2_freeze(cg->h[h].path, frozen, err);
		if (r < 0 && frozen) /* not left half frozen */
			urs_cg2_freeze_write(cg->h[h].path, false, NULL);
		return r;
	}
	const char *file = h == URS_CG_FREEZER ? "freezer.state" : "cgroup.freeze";
	const char *val =
		h == URS_CG_FREEZER ? (frozen ? "FROZEN" : "THAWED") : (frozen ? "1" : "0");
	int r = cg_write(cg, h, file, val, err);
	if (r < 0)
		return r;
	char state[64] = "";
	int64_t deadline = now_ns() + CG_WAIT_NS;
	for (unsigned i = 1;; i++) {
		r = frozen_now(cg, h, state, sizeof(state), err);
		if (r < 0)
			return r;
		if (r == frozen)
			return 0;
		if (now_ns() > deadline)
			break;
		sleep_ns(CG_POLL_NS);
		if (frozen && i % 100 == 0)
			(void) write_at(cg_fd(cg, h, NULL), file, val); /* nudge a stuck FREEZING */
	}
	if (frozen)
		(void) cg_write(cg, h, file, h == URS_CG_FREEZER ? "THAWED" : "0", NULL);
	return urs_err_set(err, -ETIMEDOUT, "cgroup: %s/%s did not reach %s within 2 s (%s)",
			   cg->h[h].path, file, val, state);
}

int urs_cg_is_frozen(struct urs_cgroup *cg, struct urs_err *err)
{
	int h = freezer_hier(cg);
	if (h < 0)
		return urs_err_set(err, h, "cgroup: no freezer (neither v1 freezer nor cgroup2)");
	char state[64];
	return frozen_now(cg, h, state, sizeof(state), err);
}

/* ---- pids and kill ----------------------------------------------------- */

struct pidvec {
	pid_t *v;
	size_t n, cap;
};

static int pidvec_push(struct pidvec *pv, pid_t p)
{
	if (urs_grow_sz((void **) &pv->v, &pv->cap, pv->n, sizeof(*pv->v), 16))
		return -ENOMEM;
	pv->v[pv->n++] = p;
	return 0;
}

static int collect(int dfd, struct pidvec *pv, int depth)
{
	if (depth > 64)
		return -ELOOP;
	int fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	_cleanup_fclose_ FILE *f = fdopen(fd, "r");
	if (!f) {
		int r = -errno;
		close(fd);
		return r;
	}
	int p, r;
	while (fscanf(f, "%d", &p) == 1)
		if ((r = pidvec_push(pv, p)) < 0)
			return r;
	if (ferror(f))
		return -EIO;

	int dup_fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dup_fd < 0)
		return -errno;
	DIR *dir = fdopendir(dup_fd);
	if (!dir) {
		r = -errno;
		close(dup_fd);
		return r;
	}
	int ret = 0;
	struct dirent *e;
	while (!ret && (e = readdir(dir))) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		_cleanup_close_ int c =
			openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (c < 0)
			continue; /* removed meanwhile */
		r = collect(c, pv, depth + 1);
		if (r < 0 && r != -ENOENT)
			ret = r;
	}
	closedir(dir);
	return ret;
}

/* The hierarchy that lists processes: the freezer's, so kill sees what froze. */
static int procs_hier(const struct urs_cgroup *cg)
{
	if (cg->mode == URS_CG_UNIFIED)
		return has(cg, URS_CG_V2) ? URS_CG_V2 : -ENOENT;
	int h = freezer_hier(cg);
	if (h >= 0)
		return h;
	for (h = 0; h < URS_CG_NHIER; h++)
		if (has(cg, h))
			return h;
	return -ENOENT;
}

int urs_cg_pids(struct urs_cgroup *cg, pid_t **pids, size_t *n, struct urs_err *err)
{
	*pids = NULL;
	*n = 0;
	int h = procs_hier(cg);
	if (h < 0)
		return urs_err_set(err, h, "cgroup: no hierarchy in use");
	int dfd = cg_fd(cg, h, err);
	if (dfd < 0)
		return dfd;
	struct pidvec pv = {0};
	int r = collect(dfd, &pv, 0);
	if (r < 0) {
		free(pv.v);
		return urs_err_set(err, r, "cgroup: listing the processes of %s: %s",
				   primary(cg, h)->path, strerror(-r));
	}
	*pids = pv.v;
	*n = pv.n;
	return 0;
}

int urs_cg_kill_all(struct urs_cgroup *cg, int sig, struct urs_err *err)
{
	/* 1 when paused (v1 frozen tasks only see SIGKILL once thawed) */
	int was_frozen = urs_cg_is_frozen(cg, NULL);
	if (sig == SIGKILL && has(cg, URS_CG_V2)) {
		int dfd = cg_fd(cg, URS_CG_V2, err);
		if (dfd < 0)
			return dfd;
		int r = write_at(dfd, "cgroup.kill", "1");
		if (r != -ENOENT) {
			if (r < 0)
				return urs_err_set(err, r,
						   "cgroup: writing \"1\" to cgroup.kill: %s",
						   strerror(-r));
			return was_frozen == 1 ? urs_cg_freeze(cg, false, err) : 0;
		}
		/* kernel before 5.14: freeze and signal */
	}
	/* A paused sandbox stays paused for a non-fatal signal (delivered on
	 * resume); otherwise freeze so nothing forks between listing and kill,
	 * and thaw afterwards. */
	bool thaw = false;
	if (was_frozen == 0 || (was_frozen == 1 && sig == SIGKILL))
		thaw = was_frozen == 1 || urs_cg_freeze(cg, true, NULL) == 0;
	_cleanup_free_ pid_t *pids = NULL;
	size_t n;
	int ret = urs_cg_pids(cg, &pids, &n, err);
	for (size_t i = 0; !ret && i < n; i++)
		if (kill(pids[i], sig) < 0 && errno != ESRCH)
			ret = urs_err_set(err, -errno, "cgroup: kill(%d, %d): %s", (int) pids[i],
					  sig, strerror(errno));
	if (thaw) {
		int r = urs_cg_freeze(cg, false, ret ? NULL : err);
		if (!ret)
			ret = r;
	}
	return ret;
}

/* ---- stats ------------------------------------------------------------- */

/* Missing file → 0; a cgroup directory that cannot be opened → error. */
static int stat_u64(struct urs_cgroup *cg, int h, const char *file, uint64_t *v,
		    struct urs_err *err)
{
	*v = 0;
	if (!has(cg, h))
		return 0;
	int dfd = cg_fd(cg, h, err);
	if (dfd < 0)
		return dfd;
	int r = read_u64_at(dfd, file, v);
	if (r == -ENOENT || r == -EINVAL) {
		*v = 0;
		return 0;
	}
	if (r < 0)
		return urs_err_set(err, r, "cgroup: reading %s: %s", file, strerror(-r));
	return 0;
}

int urs_cg_stats(struct urs_cgroup *cg, struct urs_cg_stats *st, struct urs_err *err)
{
	memset(st, 0, sizeof(*st));
	int r;
	if (cg->mode == URS_CG_UNIFIED) {
		const int h = URS_CG_V2;
		if ((r = stat_u64(cg, h, "memory.current", &st->mem_usage, err)) < 0 ||
		    (r = stat_u64(cg, h, "memory.peak", &st->mem_max_usage, err)) < 0 ||
		    (r = stat_u64(cg, h, "memory.max", &st->mem_limit, err)) < 0 ||
		    (r = stat_u64(cg, h, "pids.current", &st->pids_current, err)) < 0)
			return r;
	} else {
		if ((r = stat_u64(cg, URS_CG_MEMORY, "memory.usage_in_bytes", &st->mem_usage,
				  err)) < 0 ||
		    (r = stat_u64(cg, URS_CG_MEMORY, "memory.max_usage_in_bytes",
				  &st->mem_max_usage, err)) < 0 ||
		    (r = stat_u64(cg, URS_CG_MEMORY, "memory.limit_in_bytes", &st->mem_limit,
				  err)) < 0 ||
		    (r = stat_u64(cg, URS_CG_PIDS, "pids.current", &st->pids_current, err)) < 0)
			return r;
		if (has(cg, URS_CG_CPUACCT))
			return stat_u64(cg, URS_CG_CPUACCT, "cpuacct.usage", &st->cpu_usage_ns,
					err);
	}
	/* cgroup2 cpu.stat (always there, even without the cpu controller) */
	if (!has(cg, URS_CG_V2))
		return 0;
	int dfd = cg_fd(cg, URS_CG_V2, err);
	if (dfd < 0)
		return dfd;
	char buf[1024];
	r = read_at(dfd, "cpu.stat", buf, sizeof(buf));
	if (r < 0 && r != -ENOENT && r != -EFBIG)
		return urs_err_set(err, r, "cgroup: reading cpu.stat: %s", strerror(-r));
	const char *u = r >= 0 ? strstr(buf, "usage_usec ") : NULL;
	if (u)
		st->cpu_usage_ns = strtoull(u + 11, NULL, 10) * 1000;
	return 0;
}

/* ---- state-file string ------------------------------------------------- */

int urs_cg_to_string(const struct urs_cgroup *cg, char *buf, size_t len)
{
	if (cg->mode < URS_CG_LEGACY || cg->mode > URS_CG_UNIFIED)
		return -EINVAL;
	size_t n = 0;
	int w = snprintf(buf, len, "mode=%s", mode_names[cg->mode]);
	if (w < 0 || (size_t) w >= len)
		return -ENOSPC;
	n = (size_t) w;
	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (!has(cg, h))
			continue;
		w = snprintf(buf + n, len - n, ";%s=%u:%s", hier_names[h],
			     cg->h[h].alias >= 0 ? 0u : (unsigned) cg->h[h].created, cg->h[h].path);
		if (w < 0 || (size_t) w >= len - n)
			return -ENOSPC;
		n += (size_t) w;
	}
	return (int) n;
}

int urs_cg_from_string(struct urs_cgroup *cg, const char *s, struct urs_err *err)
{
	cg_init(cg, 0);
	const char *p = s;
	for (bool first = true; *p; first = false) {
		const char *end = strchrnul(p, ';');
		const char *eq = memchr(p, '=', (size_t) (end - p));
		if (!eq)
			goto bad;
		size_t kl = (size_t) (eq - p);
		const char *v = eq + 1;
		size_t vl = (size_t) (end - v);
		if (first) {
			if (kl != 4 || memcmp(p, "mode", 4))
				goto bad;
			for (int m = URS_CG_LEGACY; m <= URS_CG_UNIFIED; m++)
				if (strlen(mode_names[m]) == vl && !memcmp(v, mode_names[m], vl))
					cg->mode = m;
			if (!cg->mode)
				goto bad;
		} else {
			int h;
			for (h = 0; h < URS_CG_NHIER; h++)
				if (strlen(hier_names[h]) == kl && !memcmp(p, hier_names[h], kl))
					break;
			if (h == URS_CG_NHIER || has(cg, h))
				goto bad;
			char *colon;
			errno = 0;
			unsigned long created = strtoul(v, &colon, 10);
			if (errno || colon == v || *colon != ':' || created > UINT8_MAX)
				goto bad;
			const char *path = colon + 1;
			size_t pl = (size_t) (end - path);
			/* (under the cgroup mounts only: records name what is removed) */
			if (pl <= sizeof(CG_ROOT) || pl >= URS_CG_PATH_MAX ||
			    memcmp(path, CG_ROOT "/", sizeof(CG_ROOT)) ||
			    memmem(path, pl, "/..", 3) || memchr(path, '\n', pl))
				goto bad;
			memcpy(cg->h[h].path, path, pl);
			cg->h[h].path[pl] = '\0';
			cg->h[h].created = (uint8_t) created;
			for (int e = 0; e < h; e++) {
				if (e != URS_CG_V2 && h != URS_CG_V2 &&
				    !strcmp(cg->h[e].path, cg->h[h].path)) {
					cg->h[h].alias = (int8_t) e;
					cg->h[h].created = 0;
					break;
				}
			}
		}
		p = *end ? end + 1 : end;
	}
	if (!cg->mode)
		goto bad;
	return 0;
bad:
	cg_init(cg, 0);
	return urs_err_set(err, -EINVAL, "cgroup: malformed cgroup state \"%.200s\"", s);
}
