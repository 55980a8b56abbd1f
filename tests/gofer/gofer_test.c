/*
 * tests/gofer/gofer_test.c — the gofer test harness. As root, in a private
 * mount namespace on a private tmpfs, it mounts:
 *   oracle     a plain bind mount of a temp dir
 *   gofer-pt   a gofer volume (FUSE passthrough when the kernel allows it)
 *   gofer-io   a gofer volume with passthrough off and READDIR only: every
 *              byte crosses the gofer
 *   ro-*       a read-only bind mount and a read-only gofer volume (its FUSE
 *              mount itself writable, so the gofer's own EROFS is tested)
 *   sec        a gofer volume for escape attempts
 * each gofer served by its own child process running a runtime loop. Then:
 * the conformance suite on every volume (transcripts must equal the
 * oracle's), escape attempts from a chroot into the volume (the sandbox's
 * view), read-only refusal, FORGET-bounded inode table after the kernel
 * drops its caches, passthrough really bypassing the gofer, and the idle
 * memory of a volume. Exit 77 (skip) without root or /dev/fuse.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/fuse.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "actors/gofer/gofer.h"
#include "host/fuse_mount.h"
#include "tests/gofer/tap.h"
#include "runtime/loop.h"
#include "runtime/timer.h"
#include "tests/gofer/conformance.h"
#include "tests/lib/skip.h"

int gofer_raw_tests(void); /* raw.c */

struct shared {
	struct urs_gofer_stats st;
	size_t mem;
	int started; /* 1 ok, <0 errno */
	int done;
};

struct vol {
	const char *name;
	char src[512], mnt[512];
	bool gofer, ro;
	bool drop_sysadmin; /* the server lacks CAP_SYS_ADMIN: passthrough falls back */
	struct urs_gofer_opts o;
	pid_t server;
	struct shared *sh;
};

static char base[256];

static void die(const char *what)
{
	fprintf(stderr, "gofer_test: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void mkdirs(const char *p)
{
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		die(p);
}

/* ---- the gofer server (one child process per volume) ---- */

struct server {
	struct urs_gofer *g;
	struct shared *sh;
	struct urs_timer tick;
};

static void tick_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct server *s = container_of(t, struct server, tick);
	if (res < 0)
		return;
	urs_gofer_get_stats(s->g, &s->sh->st);
	s->sh->mem = urs_gofer_mem(s->g);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (urs_gofer_done(s->g)) {
		urs_timer_cancel(loop, t);
		urs_loop_stop(loop);
	}
}

static void serve(int fuse_fd, const struct vol *v)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (v->drop_sysadmin) {
		struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct d[2];
		if (syscall(SYS_capget, &h, d) < 0)
			_exit(3);
		d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
		if (syscall(SYS_capset, &h, d) < 0)
			_exit(3);
	}
	struct urs_loop loop;
	int r = urs_loop_init(&loop, NULL);
	if (r < 0) {
		v->sh->started = r;
		_exit(1);
	}
	int rfd = open(v->src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct server s = {.sh = v->sh};
	r = rfd < 0 ? -errno : urs_gofer_start(&loop, fuse_fd, rfd, &v->o, &s.g);
	if (rfd >= 0)
		close(rfd);
	if (r < 0) {
		v->sh->started = r;
		_exit(1);
	}
	v->sh->started = 1;
	urs_timer_start(&loop, &s.tick, 20000000ull, 20000000ull, tick_cb);
	urs_loop_run(&loop);
	urs_gofer_get_stats(s.g, &s.sh->st);
	v->sh->done = 1;
	urs_gofer_free(s.g);
	urs_loop_fini(&loop);
	_exit(0);
}

static void vol_up(struct vol *v)
{
	if (!v->src[0])
		snprintf(v->src, sizeof(v->src), "%s/src-%s", base, v->name);
	snprintf(v->mnt, sizeof(v->mnt), "%s/mnt-%s", base, v->name);
	mkdirs(v->src);
	mkdirs(v->mnt);
	v->sh = mmap(NULL, sizeof(*v->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	if (v->sh == MAP_FAILED)
		die("mmap");
	if (!v->gofer) {
		if (mount(v->src, v->mnt, NULL, MS_BIND, NULL) < 0)
			die("bind mount");
		if (v->ro && mount(NULL, v->mnt, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
			die("ro remount");
		return;
	}
	struct urs_fuse_mount_opts mo = {.max_read = v->o.max_write, .rdonly = v->ro};
	int fd = urs_fuse_mount(v->mnt, &mo);
	if (fd < 0) {
		errno = -fd;
		die("urs_fuse_mount");
	}
	v->o.trace = getenv("GOFER_TRACE") && !strcmp(getenv("GOFER_TRACE"), v->name);
	v->server = fork();
	if (v->server < 0)
		die("fork");
	if (v->server == 0)
		serve(fd, v);
	close(fd);
	/* the first access waits for INIT; the server answers it */
	struct stat st;
	if (stat(v->mnt, &st) < 0)
		die("stat of the new mount");
	if (v->sh->started != 1) {
		fprintf(stderr, "gofer server %s did not start: %d\n", v->name, v->sh->started);
		exit(1);
	}
}

static void vol_down(struct vol *v)
{
	if (umount2(v->mnt, MNT_DETACH) < 0)
		fprintf(stderr, "umount %s: %s\n", v->mnt, strerror(errno));
	if (!v->gofer)
		return;
	for (int k = 0; k < 1000; k++) {
		int ws;
		pid_t p = waitpid(v->server, &ws, WNOHANG);
		if (p == v->server) {
			if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
				fprintf(stderr, "FAIL gofer server %s exited with %d\n", v->name,
					ws);
				tap_failures++;
			}
			return;
		}
		usleep(10000);
	}
	fprintf(stderr, "FAIL gofer server %s did not exit after unmount\n", v->name);
	tap_failures++;
	kill(v->server, SIGKILL);
	waitpid(v->server, NULL, 0);
}

/* ---- running transcript tests ---- */

static char *run_on(const struct vol *v, const char *name, test_fn fn, int *hard)
{
	struct tctx c = {.root = v->mnt, .name = name};
	char d[1024];
	snprintf(d, sizeof(d), "%s/%s", v->mnt, name);
	if (mkdir(d, 0755) < 0)
		tlog(&c, "mkdir test dir: %s\n", strerrorname_np(errno));
	fn(&c);
	*hard += c.failed;
	if (!c.log)
		tlog(&c, "(empty)\n");
	return c.log;
}

static void first_diff(const char *a, const char *b)
{
	int line = 1;
	while (*a && *b) {
		const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
		size_t la = ea ? (size_t) (ea - a) : strlen(a),
		       lb = eb ? (size_t) (eb - b) : strlen(b);
		if (la != lb || memcmp(a, b, la)) {
			fprintf(stderr, "    line %d\n    oracle: %.*s\n    gofer:  %.*s\n", line,
				(int) la, a, (int) lb, b);
			return;
		}
		a += la + (ea ? 1 : 0);
		b += lb + (eb ? 1 : 0);
		line++;
	}
	fprintf(stderr, "    transcript lengths differ at line %d: oracle '%.60s' gofer '%.60s'\n",
		line, a, b);
}

static void compare(const char *name, test_fn fn, const struct vol *oracle, struct vol **gofers,
		    int ng)
{
	int hard = 0;
	char *o = run_on(oracle, name, fn, &hard);
	for (int k = 0; k < ng; k++) {
		char *g = run_on(gofers[k], name, fn, &hard);
		bool same = !strcmp(o, g);
		char what[256];
		snprintf(what, sizeof(what), "%s on %s matches the oracle (%zu transcript bytes)",
			 name, gofers[k]->name, strlen(o));
		tap_report(same && !hard, "%s", what);
		if (!same)
			first_diff(o, g);
		if (getenv("GOFER_TEST_VERBOSE"))
			fprintf(stderr, "---- %s oracle ----\n%s---- %s %s ----\n%s", name, o, name,
				gofers[k]->name, g);
		free(g);
	}
	free(o);
}

/* ---- read-only volumes ---- */

static void t_readonly(struct tctx *c)
{
	char buf[32] = {0};
	int fd = (int) CKOK(c, open(P(c, "f"), O_RDONLY));
	CK(c, read(fd, buf, sizeof(buf) - 1));
	tlog(c, "read '%s'\n", buf);
	CK(c, close(fd));
	CK(c, readlink(P(c, "l"), buf, sizeof(buf)));
	CKOPEN(c, open(P(c, "f"), O_WRONLY));
	CKOPEN(c, open(P(c, "f"), O_RDWR));
	CKOPEN(c, open(P(c, "f"), O_RDONLY | O_TRUNC));
	CKOPEN(c, open(P(c, "new"), O_CREAT | O_WRONLY, 0644));
	CK(c, mkdir(P(c, "nd"), 0755));
	CK(c, rmdir(P(c, "d")));
	CK(c, unlink(P(c, "f")));
	CK(c, rename(P(c, "f"), P(c, "g")));
	CK(c, link(P(c, "f"), P(c, "g")));
	CK(c, symlink("f", P(c, "s")));
	CK(c, mkfifo(P(c, "p"), 0644));
	CK(c, chmod(P(c, "f"), 0600));
	CK(c, chown(P(c, "f"), 1, 1));
	CK(c, truncate(P(c, "f"), 0));
	CK(c, utimensat(AT_FDCWD, P(c, "f"), NULL, 0));
	CK(c, setxattr(P(c, "f"), "user.x", "1", 1, 0));
	CK(c, removexattr(P(c, "f"), "user.y"));
	struct stat st;
	CK(c, stat(P(c, "f"), &st));
	tlog(c, "mode %o size %lld\n", st.st_mode, (long long) st.st_size);
	/* every refused mutation must be EROFS */
	for (const char *s = c->log; s && *s;) {
		const char *e = strchr(s, '\n');
		size_t l = e ? (size_t) (e - s) : strlen(s);
		bool failed = memmem(s, l, " = -1 ", 6) || memmem(s, l, " fails ", 7);
		if (failed && !memmem(s, l, "EROFS", 5) && !memmem(s, l, "test dir", 8)) {
			fprintf(stderr, "    not EROFS: %.*s\n", (int) l, s);
			c->failed++;
		}
		s = e ? e + 1 : NULL;
	}
}

/* ---- escape attempts ---- */

static bool contains_outside(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	char buf[256] = {0};
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 && strstr(buf, "OUTSIDE");
}

/* Run @fn in a child chrooted into @root (the sandbox's view of the volume);
 * returns its exit status (0 = no escape). */
static int in_chroot(const char *root, int (*fn)(void *), void *arg)
{
	pid_t p = fork();
	if (p == 0) {
		if (chroot(root) < 0 || chdir("/") < 0)
			_exit(200);
		_exit(fn(arg));
	}
	int ws = 0;
	waitpid(p, &ws, 0);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 201;
}

static const char *escape_paths[] = {
	"/abs",
	"/rel",
	"/deep",
	"/hostrel/secret",
	"/hostabs/secret",
	"/../outside/secret",
	"/d/../../outside/secret",
	"/d/../../../../../../../outside/secret",
	NULL, /* base path */
	NULL,
};

static int chroot_escapes(void *arg)
{
	(void) arg;
	int bad = 0;
	char withbase[600];
	snprintf(withbase, sizeof(withbase), "/..%s/outside/secret", base);
	escape_paths[8] = withbase;
	for (int k = 0; escape_paths[k]; k++) {
		if (contains_outside(escape_paths[k])) {
			fprintf(stderr, "ESCAPE read %s\n", escape_paths[k]);
			bad++;
		}
	}
	/* writes through planted links */
	int fd = open("/hostrel/created-from-sandbox", O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	fd = open("/rel", O_WRONLY | O_TRUNC);
	if (fd >= 0)
		close(fd);
	if (mkdir("/hostabs/dir-from-sandbox", 0755) == 0)
		bad++;
	/* the inside file is reachable, the path really is served */
	int inside = 0;
	fd = open("/d/secret", O_RDONLY);
	if (fd >= 0) {
		char b[16] = {0};
		inside = read(fd, b, sizeof(b) - 1) > 0 && !strncmp(b, "INSIDE", 6);
		close(fd);
	}
	return bad + (inside ? 0 : 100);
}

struct race_arg {
	const char *a, *b; /* renamed into each other (host paths or mount paths) */
	int iters;
};

static int race_reader(void *arg)
{
	(void) arg;
	int outside = 0, inside = 0;
	for (int k = 0; k < 20000; k++) {
		const char *p = (k & 1) ? "/d2/secret" : "/d3/secret";
		int fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		char b[32] = {0};
		if (read(fd, b, sizeof(b) - 1) > 0) {
			if (strstr(b, "OUTSIDE"))
				outside++;
			else if (strstr(b, "INSIDE"))
				inside++;
		}
		close(fd);
		fd = open((k & 1) ? "/d2/new" : "/d3/new", O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
	}
	fprintf(stderr, "    race: %d inside reads, %d outside reads\n", inside, outside);
	return outside ? 1 : 0;
}

static void security_tests(struct vol *sec, struct vol *oracle)
{
	char p[1024], q[1024], outside[600];
	snprintf(outside, sizeof(outside), "%s/outside", base);
	/* through the mount: links out, absolute and relative */
	snprintf(p, sizeof(p), "%s/abs", sec->mnt);
	snprintf(q, sizeof(q), "%s/secret", outside);
	bool ok = symlink(q, p) == 0;
	snprintf(p, sizeof(p), "%s/rel", sec->mnt);
	ok &= symlink("../outside/secret", p) == 0;
	snprintf(p, sizeof(p), "%s/deep", sec->mnt);
	ok &= symlink("../../../../../../../../../outside/secret", p) == 0;
	snprintf(p, sizeof(p), "%s/d", sec->mnt);
	ok &= mkdir(p, 0755) == 0;
	snprintf(p, sizeof(p), "%s/d/secret", sec->mnt);
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	ok &= fd >= 0 && write(fd, "INSIDE", 6) == 6;
	if (fd >= 0)
		close(fd);
	/* planted on the host side of the volume */
	snprintf(p, sizeof(p), "%s/hostrel", sec->src);
	ok &= symlink("../outside", p) == 0;
	snprintf(p, sizeof(p), "%s/hostabs", sec->src);
	ok &= symlink(outside, p) == 0;
	tap_report(ok, "escape setup: symlinks out of the volume created");

	int r = in_chroot(sec->mnt, chroot_escapes, NULL);
	tap_report(r == 0,
		   "escape: absolute/relative symlinks and .. chains stay inside the volume");
	snprintf(p, sizeof(p), "%s/created-from-sandbox", outside);
	snprintf(q, sizeof(q), "%s/dir-from-sandbox", outside);
	tap_report(access(p, F_OK) < 0 && access(q, F_OK) < 0,
		   "escape: nothing created outside through planted links");
	snprintf(p, sizeof(p), "%s/secret", outside);
	tap_report(contains_outside(p), "escape: the outside file is intact");

	/* the gofer returns symlinks as symlinks */
	char buf[256] = {0};
	snprintf(p, sizeof(p), "%s/hostrel", sec->mnt);
	struct stat st;
	tap_report(lstat(p, &st) == 0 && S_ISLNK(st.st_mode) && readlink(p, buf, sizeof(buf)) > 0 &&
			   !strcmp(buf, "../outside"),
		   "symlinks are served as symlinks (lstat S_IFLNK, readlink verbatim)");

	/* rename races: a directory swapped with a symlink out, on the host
	 * side (stronger than the sandbox can do) and through the mount */
	snprintf(p, sizeof(p), "%s/d2", sec->src);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/d2/secret", sec->src);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0) {
		ok = write(fd, "INSIDE", 6) == 6;
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/s2", sec->src);
	ok &= symlink("../outside", p) == 0;
	snprintf(p, sizeof(p), "%s/d3", sec->mnt);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/d3/secret", sec->mnt);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0) {
		ok &= write(fd, "INSIDE", 6) == 6;
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/s3", sec->mnt);
	ok &= symlink("../outside", p) == 0;
	pid_t swappers[2];
	for (int k = 0; k < 2; k++) {
		swappers[k] = fork();
		if (swappers[k] == 0) {
			char a[1024], b[1024];
			const char *dir = k == 0 ? sec->src : sec->mnt;
			snprintf(a, sizeof(a), "%s/%s", dir, k == 0 ? "d2" : "d3");
			snprintf(b, sizeof(b), "%s/%s", dir, k == 0 ? "s2" : "s3");
			for (;;)
				syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
		}
	}
	r = in_chroot(sec->mnt, race_reader, NULL);
	for (int k = 0; k < 2; k++) {
		kill(swappers[k], SIGKILL);
		waitpid(swappers[k], NULL, 0);
	}
	tap_report(ok && r == 0, "escape: rename race (dir <-> symlink out) never reaches outside");
	snprintf(p, sizeof(p), "%s/new", outside);
	tap_report(access(p, F_OK) < 0, "escape: rename race created nothing outside");

	/* hard links to outside files */
	snprintf(p, sizeof(p), "%s/secret", outside);
	snprintf(q, sizeof(q), "%s/hl", sec->mnt);
	errno = 0;
	int lr = link(p, q);
	tap_report(lr < 0 && errno == EXDEV, "hard link to an outside file: EXDEV");
	tap_report(stat(p, &st) == 0 && st.st_nlink == 1, "outside file still has one link");

	/* device nodes and whiteouts */
	snprintf(p, sizeof(p), "%s/null", sec->mnt);
	errno = 0;
	int m1 = mknod(p, S_IFCHR | 0666, makedev(1, 3));
	int e1 = errno;
	snprintf(p, sizeof(p), "%s/blk", sec->mnt);
	errno = 0;
	int m2 = mknod(p, S_IFBLK | 0666, makedev(7, 0));
	int e2 = errno;
	tap_report(m1 < 0 && e1 == EPERM && m2 < 0 && e2 == EPERM, "mknod of devices: EPERM");
	snprintf(p, sizeof(p), "%s/wsrc", sec->mnt);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	snprintf(q, sizeof(q), "%s/wh", sec->mnt);
	errno = 0;
	int wr = (int) syscall(SYS_renameat2, AT_FDCWD, p, AT_FDCWD, q, RENAME_WHITEOUT);
	int we = errno;
	tap_report(fd >= 0 && wr < 0 && (we == EPERM || we == EINVAL) && access(p, F_OK) == 0,
		   "rename with RENAME_WHITEOUT refused (%s), source kept", strerrorname_np(we));
	snprintf(p, sizeof(p), "%s/null", sec->src);
	tap_report(access(p, F_OK) < 0, "no device node on the host");

	/* setuid/setgid */
	snprintf(p, sizeof(p), "%s/suid", sec->mnt);
	fd = open(p, O_CREAT | O_WRONLY, 06755);
	if (fd >= 0)
		close(fd);
	snprintf(q, sizeof(q), "%s/suid", sec->src);
	tap_report(stat(q, &st) == 0 && !(st.st_mode & (S_ISUID | S_ISGID)),
		   "create with setuid/setgid: bits stripped on the host");
	int cr = chmod(p, 06755);
	tap_report(cr == 0 && stat(q, &st) == 0 && !(st.st_mode & (S_ISUID | S_ISGID)) &&
			   (st.st_mode & 0777) == 0755,
		   "chmod setuid/setgid: bits stripped, the rest kept");
	snprintf(p, sizeof(p), "%s/sfifo", sec->mnt);
	mknod(p, S_IFIFO | 04644, 0);
	snprintf(q, sizeof(q), "%s/sfifo", sec->src);
	tap_report(stat(q, &st) == 0 && !(st.st_mode & S_ISUID), "mknod setuid: stripped");
	struct statvfs sv;
	tap_report(statvfs(sec->mnt, &sv) == 0 && (sv.f_flag & ST_NOSUID) && (sv.f_flag & ST_NODEV),
		   "the volume is mounted nosuid,nodev");

	/* xattrs: user.* only */
	snprintf(p, sizeof(p), "%s/d/secret", sec->mnt);
	snprintf(q, sizeof(q), "%s/d/secret", sec->src);
	errno = 0;
	int x1 = setxattr(p, "trusted.evil", "1", 1, 0);
	int ex1 = errno;
	errno = 0;
	/* a valid vfs_cap_data (revision 2, effective, CAP_SYS_ADMIN permitted) */
	uint32_t cap[5] = {0x02000001u, 1u << 21, 0, 0, 0};
	int x2 = setxattr(p, "security.capability", cap, sizeof(cap), 0);
	int ex2 = errno;
	tap_report(x1 < 0 && ex1 == EOPNOTSUPP && x2 < 0 && ex2 == EOPNOTSUPP,
		   "setxattr outside user.* (trusted.*, security.capability): EOPNOTSUPP (%s, %s)",
		   strerrorname_np(ex1), strerrorname_np(ex2));
	int hx = setxattr(q, "trusted.hidden", "h", 1, 0);
	char lb[512];
	ssize_t ln = listxattr(p, lb, sizeof(lb));
	bool leak = false;
	for (ssize_t o = 0; o < ln; o += (ssize_t) strlen(lb + o) + 1)
		leak |= strncmp(lb + o, "user.", 5) != 0;
	errno = 0;
	ssize_t gx = getxattr(p, "trusted.hidden", lb, sizeof(lb));
	tap_report(hx == 0 && ln >= 0 && !leak && gx < 0 && errno == ENODATA,
		   "host trusted.* xattrs are invisible (list and get)");

	(void) oracle;
}

/* ---- FORGET, passthrough, memory ---- */

static int count_fds(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/fd", (int) pid);
	DIR *d = opendir(p);
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static void wait_stats(struct vol *v, uint64_t min_requests)
{
	for (int k = 0; k < 200; k++) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (v->sh->st.requests >= min_requests)
			return;
		usleep(10000);
	}
}

/* ---- quotas (docs/gofer.md "Quotas") ---- */

#define Q_BYTES	 (1u << 20)
#define Q_INODES 16u
#define Q_PRE	 (256u << 10) /* bytes already in the volume when it is served */

/* Bytes of regular files and entries beneath @dir on the host. */
static void host_usage(const char *dir, uint64_t *bytes, uint64_t *entries)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "find '%s' -mindepth 1 -printf '%%s %%y\\n'", dir);
	FILE *f = popen(cmd, "r");
	*bytes = *entries = 0;
	unsigned long long sz;
	char t;
	while (f && fscanf(f, "%llu %c", &sz, &t) == 2) {
		(*entries)++;
		if (t == 'f')
			*bytes += sz;
	}
	if (f)
		pclose(f);
}

static void quota_tests(struct vol *q)
{
	char p[1024];
	struct statvfs sv;
	int ok = statvfs(q->mnt, &sv);
	uint64_t total = (uint64_t) sv.f_blocks * sv.f_frsize,
		 avail = (uint64_t) sv.f_bavail * sv.f_frsize;
	tap_report(ok == 0 && total <= Q_BYTES && total + sv.f_frsize > Q_BYTES &&
			   avail <= Q_BYTES - Q_PRE && avail + sv.f_frsize > Q_BYTES - Q_PRE &&
			   sv.f_files == Q_INODES && sv.f_ffree == Q_INODES - 2,
		   "quota: statfs shows the quota (%llu of %u bytes free, %llu of %llu inodes)",
		   (unsigned long long) avail, Q_BYTES, (unsigned long long) sv.f_ffree,
		   (unsigned long long) sv.f_files);

	/* bytes: write 64 KiB at a time until it fails */
	static char chunk[64 << 10];
	memset(chunk, 'q', sizeof(chunk));
	snprintf(p, sizeof(p), "%s/big", q->mnt);
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	uint64_t wrote = 0;
	int werr = 0;
	for (int k = 0; fd >= 0 && k < 64; k++) {
		ssize_t w = write(fd, chunk, sizeof(chunk));
		if (w < 0) {
			werr = errno;
			break;
		}
		wrote += (uint64_t) w;
	}
	uint64_t hb, he;
	host_usage(q->src, &hb, &he);
	tap_report(werr == EDQUOT && wrote <= Q_BYTES - Q_PRE && hb <= Q_BYTES,
		   "quota: a write beyond the quota fails with EDQUOT (%s after %llu bytes); "
		   "%llu bytes on the host",
		   strerrorname_np(werr), (unsigned long long) wrote, (unsigned long long) hb);
	errno = 0;
	int tr = fd >= 0 ? ftruncate(fd, 4 << 20) : -1;
	int terr = errno;
	errno = 0;
	int fa = fd >= 0 ? fallocate(fd, 0, 0, 4 << 20) : -1;
	int ferr = errno;
	struct stat st;
	snprintf(p, sizeof(p), "%s/big", q->src);
	tap_report(
		tr < 0 && terr == EDQUOT && fa < 0 && ferr == EDQUOT && stat(p, &st) == 0 &&
			(uint64_t) st.st_size == wrote,
		"quota: growing truncate (%s) and fallocate (%s) fail, the host file is unchanged",
		strerrorname_np(terr), strerrorname_np(ferr));
	if (fd >= 0)
		close(fd);

	/* freed space comes back: O_TRUNC, then unlink */
	snprintf(p, sizeof(p), "%s/big", q->mnt);
	fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t w1 = fd >= 0 ? write(fd, chunk, sizeof(chunk)) : -1;
	if (fd >= 0)
		close(fd);
	int ul = unlink(p);
	snprintf(p, sizeof(p), "%s/after", q->mnt);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	uint64_t again = 0;
	for (int k = 0; fd >= 0 && k < 10; k++) {
		ssize_t w = write(fd, chunk, sizeof(chunk));
		if (w <= 0)
			break;
		again += (uint64_t) w;
	}
	if (fd >= 0)
		close(fd);
	tap_report(w1 == (ssize_t) sizeof(chunk) && ul == 0 && again == 10 * sizeof(chunk),
		   "quota: space freed by O_TRUNC and unlink can be used again (%llu bytes)",
		   (unsigned long long) again);

	/* inodes: pre (2) + after (1) used; create until it fails */
	int made = 0, cerr = 0;
	for (int k = 0; k < 40; k++) {
		snprintf(p, sizeof(p), "%s/n%02d", q->mnt, k);
		int f = open(p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (f < 0) {
			cerr = errno;
			break;
		}
		close(f);
		made++;
	}
	snprintf(p, sizeof(p), "%s/dir-over", q->mnt);
	errno = 0;
	int md = mkdir(p, 0755);
	int merr = errno;
	host_usage(q->src, &hb, &he);
	tap_report(cerr == EDQUOT && made == (int) Q_INODES - 3 && md < 0 && merr == EDQUOT &&
			   he == Q_INODES,
		   "quota: creates beyond %u inodes fail with EDQUOT (%d made, then %s; mkdir %s); "
		   "%llu entries on the host",
		   Q_INODES, made, strerrorname_np(cerr), strerrorname_np(merr),
		   (unsigned long long) he);
	snprintf(p, sizeof(p), "%s/n00", q->mnt);
	int u2 = unlink(p);
	snprintf(p, sizeof(p), "%s/dir-ok", q->mnt);
	tap_report(u2 == 0 && mkdir(p, 0755) == 0, "quota: an unlinked inode can be used again");
	tap_report(!q->sh->st.passthrough, "quota: a byte quota serves data through the gofer");
}

static void drop_caches(void)
{
	sync();
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "2", 1) != 1)
			fprintf(stderr, "drop_caches: %s\n", strerror(errno));
		close(fd);
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		return urs_skip("needs root");
	if (access("/dev/fuse", R_OK | W_OK) < 0)
		return urs_skip_or_fail("no /dev/fuse");
	tap_failures += gofer_raw_tests();
	struct rlimit rl = {65536, 65536};
	setrlimit(RLIMIT_NOFILE, &rl);
	if (unshare(CLONE_NEWNS) < 0)
		die("unshare");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		die("make / private");
	snprintf(base, sizeof(base), "/tmp/ursa-gofer-test-XXXXXX");
	if (!mkdtemp(base))
		die("mkdtemp");
	if (mount("tmpfs", base, "tmpfs", 0, "size=2g,mode=0755") < 0)
		die("tmpfs");
	char outside[600];
	snprintf(outside, sizeof(outside), "%s/outside", base);
	mkdirs(outside);
	char p[1024];
	snprintf(p, sizeof(p), "%s/secret", outside);
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "OUTSIDE-SECRET", 14) != 14)
		die("outside secret");
	close(fd);

	struct vol oracle = {.name = "oracle"};
	struct vol pt = {.name = "gofer-pt", .gofer = true, .o = {.idle_ns = 200000000ull}};
	struct vol io = {
		.name = "gofer-io",
		.gofer = true,
		.o = {.no_passthrough = true, .no_readdirplus = true, .idle_ns = 200000000ull}};
	struct vol roo = {.name = "ro-oracle", .ro = true};
	/* the production shape: MS_RDONLY and a read-only gofer */
	struct vol rog = {.name = "ro-gofer",
			  .gofer = true,
			  .ro = true,
			  .o = {.rdonly = true, .no_readdirplus = true}};
	/* the VFS lets writes through: the gofer's own EROFS answers */
	struct vol rogw = {.name = "ro-gofer-vfs-rw", .gofer = true, .o = {.rdonly = true}};
	struct vol sec = {.name = "sec", .gofer = true};
	struct vol nx = {.name = "gofer-noxattr", .gofer = true, .o = {.no_xattr = true}};
	/* also the synchronous pread/pwrite path */
	struct vol nocap = {.name = "gofer-nocap",
			    .gofer = true,
			    .drop_sysadmin = true,
			    .o = {.sync_rw = true}};
	/* inodes as file handles with a cache of 2 fds: nearly every request
	 * reopens its inode (open_by_handle_at) after an eviction */
	struct vol tiny = {.name = "gofer-tinycache", .gofer = true, .o = {.fd_cache = 2}};
	/* as on a host file system without handles: every inode's fd pinned */
	struct vol noh = {.name = "gofer-nohandles",
			  .gofer = true,
			  .o = {.no_handles = true, .max_pinned = 1u << 20}};
	vol_up(&oracle);
	vol_up(&pt);
	vol_up(&io);
	vol_up(&tiny);
	vol_up(&noh);
	/* read-only volumes share one source with content */
	snprintf(roo.src, sizeof(roo.src), "%s/src-ro", base);
	mkdirs(roo.src);
	snprintf(p, sizeof(p), "%s/src-ro/ro", base);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/src-ro/ro/f", base);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "ro-data", 7) != 7)
		die("ro file");
	close(fd);
	snprintf(p, sizeof(p), "%s/src-ro/ro/d", base);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/src-ro/ro/l", base);
	if (symlink("f", p) < 0)
		die("ro symlink");
	snprintf(rog.src, sizeof(rog.src), "%s", roo.src);
	snprintf(rogw.src, sizeof(rogw.src), "%s", roo.src);
	vol_up(&roo);
	vol_up(&rog);
	vol_up(&rogw);
	vol_up(&sec);
	vol_up(&nx);
	vol_up(&nocap);

	struct vol *gofers[] = {&pt, &io, &nocap, &tiny, &noh};
	for (const struct ctest *t = ctests; t->name; t++)
		compare(t->name, t->fn, &oracle, gofers, 5);
	wait_stats(&tiny, 1);
	wait_stats(&noh, 1);
	/* counters are published every 20 ms: wait for the reopens to show */
	for (int k = 0; k < 500 && tiny.sh->st.fd_reopens < 20; k++) {
		usleep(10000);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	printf("# %s: %llu reopens from handles, %llu evictions, %u fds held; %s: %u fds\n",
	       tiny.name, (unsigned long long) tiny.sh->st.fd_reopens,
	       (unsigned long long) tiny.sh->st.fd_evictions, tiny.sh->st.fds, noh.name,
	       noh.sh->st.fds);
	tap_report(tiny.sh->st.fd_reopens >= 20 && tiny.sh->st.fds <= 2 + 2,
		   "a cache of 2 fds: the suite ran on inodes reopened from their handles");
	tap_report(noh.sh->st.fd_reopens == 0, "without handles nothing is reopened");

	/* after eviction (a cache of 2, 20 other lookups since): RENAME across
	 * directories, LINK and UNLINK on inodes reopened from their handles */
	{
		char pa[1100], pb[1100];
		snprintf(pa, sizeof(pa), "%s/ev1", tiny.mnt);
		mkdirs(pa);
		snprintf(pa, sizeof(pa), "%s/ev2", tiny.mnt);
		mkdirs(pa);
		snprintf(pa, sizeof(pa), "%s/ev1/f", tiny.mnt);
		int wfd = open(pa, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		bool wrote = wfd >= 0 && write(wfd, "data", 4) == 4;
		if (wfd >= 0)
			close(wfd);
		for (int k = 0; k < 20; k++) {
			snprintf(pb, sizeof(pb), "%s/ev1/x%d", tiny.mnt, k);
			int xfd = open(pb, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (xfd >= 0)
				close(xfd);
		}
		wait_stats(&tiny, 1);
		uint64_t r0 = tiny.sh->st.fd_reopens;
		snprintf(pb, sizeof(pb), "%s/ev2/g", tiny.mnt);
		int rn = rename(pa, pb);
		char pc[1100];
		snprintf(pc, sizeof(pc), "%s/ev1/h", tiny.mnt);
		int ln = link(pb, pc);
		int ul = unlink(pb);
		struct stat hs;
		int sr = stat(pc, &hs);
		char hp[1100], buf[8] = {0};
		snprintf(hp, sizeof(hp), "%s/ev1/h", tiny.src);
		int hfd = open(hp, O_RDONLY | O_CLOEXEC);
		ssize_t got = hfd >= 0 ? read(hfd, buf, sizeof(buf) - 1) : -1;
		if (hfd >= 0)
			close(hfd);
		snprintf(hp, sizeof(hp), "%s/ev2/g", tiny.src);
		bool g_gone = access(hp, F_OK) < 0;
		snprintf(hp, sizeof(hp), "%s/ev1/f", tiny.src);
		bool f_gone = access(hp, F_OK) < 0;
		wait_stats(&tiny, 1);
		usleep(50000);
		uint64_t r1 = tiny.sh->st.fd_reopens;
		tap_report(wrote && rn == 0 && ln == 0 && ul == 0 && sr == 0 && hs.st_nlink == 1 &&
				   got == 4 && !memcmp(buf, "data", 4) && g_gone && f_gone &&
				   r1 > r0,
			   "after eviction: rename, link, unlink right on the host (%llu reopens)",
			   (unsigned long long) (r1 - r0));
	}

	/* read-only volumes: the same source through all three */
	{
		struct vol *rg[] = {&rog, &rogw};
		compare("ro", t_readonly, &roo, rg, 2);
	}

	security_tests(&sec, &oracle);

	{
		struct vol q = {.name = "quota",
				.gofer = true,
				.o = {.quota_bytes = Q_BYTES, .quota_inodes = Q_INODES}};
		/* already there when served: one 256 KiB file in a directory */
		snprintf(q.src, sizeof(q.src), "%s/src-quota", base);
		mkdirs(q.src);
		snprintf(p, sizeof(p), "%s/pre", q.src);
		mkdirs(p);
		snprintf(p, sizeof(p), "%s/pre/f", q.src);
		fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || ftruncate(fd, Q_PRE) < 0)
			die("quota: pre-existing file");
		close(fd);
		vol_up(&q);
		quota_tests(&q);
		vol_down(&q);
	}

	/* open files hold a host fd each: past max_open, ENFILE; a close
	 * (RELEASE, asynchronous) makes room again */
	{
		struct vol lim = {.name = "openlimit",
				  .gofer = true,
				  .o = {.max_open = 8, .no_passthrough = true}};
		vol_up(&lim);
		int fds[9], opened = 0, again = -1, e9 = 0;
		char f[1024];
		for (int k = 0; k < 9; k++) {
			snprintf(f, sizeof(f), "%s/o%d", lim.mnt, k);
			errno = 0;
			fds[k] = open(f, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
			opened += fds[k] >= 0;
			e9 = errno;
		}
		if (fds[0] >= 0)
			close(fds[0]);
		for (int k = 0; k < 200 && again < 0; k++) { /* the RELEASE is async */
			again = open(f, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
			if (again < 0)
				usleep(10000);
		}
		/* the server publishes its counters every 20 ms: wait for the
		 * refusal to show (a snapshot from before it read 0 under ASan) */
		for (int k = 0; k < 500; k++) {
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (lim.sh->st.open_refused >= 1)
				break;
			usleep(10000);
		}
		tap_report(opened == 8 && fds[8] < 0 && e9 == ENFILE && again >= 0 &&
				   lim.sh->st.open_refused >= 1,
			   "max_open 8: 8 opens, the 9th %s, after a close it opens (%llu refused)",
			   strerrorname_np(e9), (unsigned long long) lim.sh->st.open_refused);
		for (int k = 1; k < 9; k++)
			if (fds[k] >= 0)
				close(fds[k]);
		if (again >= 0)
			close(again);
		vol_down(&lim);
	}
	/* passthrough opens keep no host fd (the kernel holds the backing
	 * file): 40 open files on a volume with max_open 8, and the server's
	 * fd table does not grow with them */
	{
		struct vol lim = {.name = "openlimit-pt", .gofer = true, .o = {.max_open = 8}};
		vol_up(&lim);
		char f[1024];
		snprintf(f, sizeof(f), "%s/warm", lim.mnt);
		int w = open(f, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
		if (w >= 0)
			close(w);
		wait_stats(&lim, 1);
		int before = count_fds(lim.server);
		int fds[40], opened = 0;
		for (int k = 0; k < 40; k++) {
			snprintf(f, sizeof(f), "%s/p%d", lim.mnt, k);
			fds[k] = open(f, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
			opened += fds[k] >= 0 && write(fds[k], "pt", 2) == 2;
		}
		int during = count_fds(lim.server);
		for (int k = 0; k < 40; k++)
			if (fds[k] >= 0)
				close(fds[k]);
		wait_stats(&lim, 1);
		tap_report(!lim.sh->st.passthrough || (opened == 40 && during - before <= 8 &&
						       lim.sh->st.open_refused == 0),
			   "passthrough: 40 open files past max_open 8, server fds %d -> %d",
			   before, during);
		vol_down(&lim);
	}

	/* passthrough: no READ/WRITE ever reached the gofer */
	wait_stats(&pt, 1);
	usleep(100000);
	printf("# passthrough on %s: %s\n", pt.name, pt.sh->st.passthrough ? "yes" : "no");
	if (pt.sh->st.passthrough) {
		tap_report(pt.sh->st.by_op[FUSE_READ] == 0 && pt.sh->st.by_op[FUSE_WRITE] == 0,
			   "passthrough: file data never crossed the gofer");
	} else {
		printf("# passthrough unavailable: data went through the gofer\n");
	}
	tap_report(io.sh->st.by_op[FUSE_READ] > 0 && io.sh->st.by_op[FUSE_WRITE] > 0 &&
			   io.sh->st.by_op[FUSE_READDIR] > 0 &&
			   io.sh->st.by_op[FUSE_READDIRPLUS] == 0,
		   "gofer-io served READ, WRITE and READDIR itself");
	tap_report(pt.sh->st.by_op[FUSE_READDIRPLUS] > 0, "gofer-pt served READDIRPLUS");
	tap_report(!nocap.sh->st.passthrough && nocap.sh->st.by_op[FUSE_READ] > 0 &&
			   nocap.sh->st.by_op[FUSE_WRITE] > 0,
		   "without CAP_SYS_ADMIN the backing ioctl fails and data goes through the gofer");

	/* no_xattr: ENOSYS once, then the kernel stops asking, also for the
	 * security.capability check before each write */
	{
		char f[1024];
		snprintf(f, sizeof(f), "%s/nx-file", nx.mnt);
		int wfd = open(f, O_CREAT | O_RDWR, 0644);
		int wrote = 0;
		for (int k = 0; wfd >= 0 && k < 100; k++)
			wrote += pwrite(wfd, "x", 1, k) == 1;
		if (wfd >= 0)
			close(wfd);
		errno = 0;
		int sx = setxattr(f, "user.a", "1", 1, 0);
		int ex = errno;
		wait_stats(&nx, 1);
		usleep(100000);
		uint64_t gx = nx.sh->st.by_op[FUSE_GETXATTR];
		tap_report(wrote == 100 && gx <= 1 && sx < 0 && ex == EOPNOTSUPP,
			   "no_xattr: 100 writes cost %llu GETXATTR, setxattr %s",
			   (unsigned long long) gx, strerrorname_np(ex));
		printf("# gofer-pt (xattrs on) answered %llu GETXATTR during the suite\n",
		       (unsigned long long) pt.sh->st.by_op[FUSE_GETXATTR]);
	}

	/* HANDLE_KILLPRIV_V2: writes no longer cost a GETXATTR each, and an
	 * unprivileged write or truncate still clears a host file's setuid and
	 * setgid bits (the gofer does it, as the VFS would), through
	 * passthrough and through the gofer */
	{
		struct vol *kv[] = {&pt, &io};
		for (int k = 0; k < 2; k++) {
			char f[1024], h[1024];
			snprintf(f, sizeof(f), "%s/kp-many", kv[k]->mnt);
			wait_stats(kv[k], 1);
			uint64_t gx0 = kv[k]->sh->st.by_op[FUSE_GETXATTR];
			int wfd = open(f, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
			int wrote = 0;
			for (int n = 0; wfd >= 0 && n < 100; n++)
				wrote += pwrite(wfd, "x", 1, n) == 1;
			if (wfd >= 0)
				close(wfd);
			usleep(100000);
			uint64_t gx = kv[k]->sh->st.by_op[FUSE_GETXATTR] - gx0;
			tap_report(wrote == 100 && gx <= 2, "%s: 100 writes cost %llu GETXATTR",
				   kv[k]->name, (unsigned long long) gx);
			const char *names[] = {"kp-write", "kp-trunc", "kp-otrunc"};
			for (int t = 0; t < 3; t++) {
				snprintf(h, sizeof(h), "%s/%s", kv[k]->src, names[t]);
				snprintf(f, sizeof(f), "%s/%s", kv[k]->mnt, names[t]);
				int hfd = open(h, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
				if (hfd < 0 || write(hfd, "abc", 3) != 3 || fchmod(hfd, 06777) < 0)
					die("setuid host file");
				close(hfd);
				pid_t c = fork();
				if (c == 0) {
					if (setresgid(1000, 1000, 1000) < 0 ||
					    setresuid(1000, 1000, 1000) < 0)
						_exit(3);
					int cfd = open(f, O_WRONLY | O_CLOEXEC |
								  (t == 2 ? O_TRUNC : 0));
					if (cfd < 0)
						_exit(4);
					if (t == 0 && pwrite(cfd, "Z", 1, 0) != 1)
						_exit(5);
					if (t == 1 && ftruncate(cfd, 1) < 0)
						_exit(6);
					close(cfd);
					_exit(0);
				}
				int ws = 0;
				waitpid(c, &ws, 0);
				struct stat hs;
				int sr = stat(h, &hs);
				tap_report(
					WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && sr == 0 &&
						!(hs.st_mode & (S_ISUID | S_ISGID)),
					"%s: an unprivileged %s clears setuid/setgid on the host "
					"(status %d, mode %o)",
					kv[k]->name,
					t == 0	 ? "write"
					: t == 1 ? "truncate"
						 : "open O_TRUNC",
					ws, (unsigned) hs.st_mode & 07777);
			}
		}
	}

	/* FORGET bounds the inode table: after the kernel drops its caches
	 * the table is back to (nearly) the root alone */
	uint32_t before = pt.sh->st.inodes;
	drop_caches();
	uint32_t after = before;
	for (int k = 0; k < 500 && (after = pt.sh->st.inodes) >= 64; k++) /* <= 5 s */
		usleep(10000);
	printf("# gofer-pt inode table: %u before drop_caches, %u after\n", before, after);
	tap_report(after < 64,
		   "FORGET frees inode entries (table bounded by what the kernel holds)");

	/* idle: shrunk back to one buffer, memory returned (idle_ns is 200 ms:
	 * two quiet periods; up to 10 s on a loaded machine) */
	for (int k = 0; k < 1000; k++) {
		usleep(10000);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (k >= 70 && pt.sh->st.bufs_active == 1 && io.sh->st.bufs_active == 1 &&
		    pt.sh->mem <= 64 * 1024 && io.sh->mem <= 64 * 1024)
			break;
	}
	printf("# gofer-pt: %llu requests, buffers grew %llu times (max active seen now %u of %u), "
	       "shrinks %llu, idle memory %zu bytes\n",
	       (unsigned long long) pt.sh->st.requests, (unsigned long long) pt.sh->st.grows,
	       pt.sh->st.bufs_active, pt.sh->st.bufs_max, (unsigned long long) pt.sh->st.shrinks,
	       pt.sh->mem);
	printf("# gofer-io: %llu requests, grows %llu, shrinks %llu, idle memory %zu bytes\n",
	       (unsigned long long) io.sh->st.requests, (unsigned long long) io.sh->st.grows,
	       (unsigned long long) io.sh->st.shrinks, io.sh->mem);
	tap_report(pt.sh->st.bufs_active == 1 && io.sh->st.bufs_active == 1,
		   "idle volumes are back to one request buffer");
	tap_report(pt.sh->mem <= 64 * 1024 && io.sh->mem <= 64 * 1024,
		   "idle gofer memory <= 64 KiB per volume (table + touched buffer pages)");

	vol_down(&noh);
	vol_down(&tiny);
	vol_down(&nocap);
	vol_down(&nx);
	vol_down(&sec);
	vol_down(&rogw);
	vol_down(&rog);
	vol_down(&roo);
	vol_down(&io);
	vol_down(&pt);
	vol_down(&oracle);
	tap_report(true, "servers exited after unmount");
	umount2(base, MNT_DETACH);
	rmdir(base);
	return tap_done();
}
