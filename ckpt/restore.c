/*
 * ckpt/restore.c — the restorer (see ckpt_restore.h). Each task starts
 * as a "puppet": a clone of the caller that maps a tiny blob (one page with a
 * `syscall` instruction plus a scratch area for syscall arguments) and waits.
 * The caller seizes it and injects, in order: close all fds, munmap all but
 * the blob, mmap every saved mapping (files reopened by path and checked by
 * device/inode/size), map the vdso back at its old address, write the saved
 * pages through /proc/PID/mem, PR_SET_MM_MAP, fds, cwd, umask, signals,
 * rseq, limits, credentials; then munmap the blob, set registers and FPU
 * state, and detach. Children are cloned from their parent's puppet with
 * clone3(set_tid) so the tree and pids come back as they were (once the
 * parent's memory is rebuilt, so that a child keeps what it shared with
 * it: ckpt/cowplan.h; fds follow the clones); a process's
 * other threads with clone3(CLONE_THREAD, set_tid) from its main thread;
 * shared memory objects become memfds mapped into every task that had them.
 */
#include "ckpt/restore.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/prctl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/cowplan.h"
#include "ckpt/image.h"
#include "ckpt/lazy.h"
#include "ckpt/ptrace.h"
#include "ckpt/trace.h"
#include "ckpt/workingset.h"
#include "runtime/common.h"
#include "runtime/io.h"

#ifndef ARCH_MAP_VDSO_64
#define ARCH_MAP_VDSO_64 0x2003
#endif
#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1u << 31)
#endif
#ifndef PTRACE_O_EXITKILL
#define PTRACE_O_EXITKILL (1 << 20)
#endif

#define BLOB_PAGES	      17u /* 1 code page + 16 scratch pages */
#define BLOB_LEN	      (BLOB_PAGES * CKPT_PAGE_SIZE)
#define SCRATCH		      CKPT_PAGE_SIZE /* offset of the scratch area in the blob */
#define S_STRUCT	      0u	     /* scratch offsets */
#define S_AUXV		      1024u
#define S_PATH		      2048u
#define S_STAT		      (2048u + PATH_MAX)
#define S_BPF		      16384u /* up to CKPT_MAX_BPF * 8 = 32 KiB */
#define TASK_TOP_4LEVEL	      0x7ffffffff000ull
#define ERESTARTSYS	      512
#define ERESTARTNOINTR	      513
#define ERESTARTNOHAND	      514
#define ERESTART_RESTARTBLOCK 516

struct rctx {
	/* st_dev changed since the checkpoint (gofer FUSE mounts): opts.dev_map */
	const struct ckpt_dev_map *dev_map;
	uint32_t n_dev_map;
	struct ckpt_dev_map learned[8]; /* renumbered devices (same_file) */
	uint32_t nlearned;
	struct ckpt_image img;
	struct ckpt_tracee *tr;
	int *memfd;
	uint8_t *dead;	  /* re-created zombies: nothing more to do */
	uint8_t *inherit; /* cloned from its parent's rebuilt memory (cowplan.h) */
	uint32_t nlive;
	uint64_t blob;
	pid_t puppet; /* an existing root puppet (ckpt_restore_opts.puppet), or 0 */
	int (*before_charged)(void *ctx); /* ckpt_restore_opts; NULL once called */
	void *charged_ctx;
	struct ckpt_restore_stats *st;
	struct robj *objs; /* pipe ends and sockets created so far */
	uint32_t nobjs, capobjs;
	int32_t *park_base, *park_next; /* per task: parked fds (from park_base on, how
					 * many), closed once every task has its fds */
	struct ckpt_tracee *thr;	/* threads created so far (tasks' other threads) */
	uint32_t nthr;
	struct ckpt_root_rec root_now; /* the root the tasks are restored into */
	struct ckpt_lazy *lz;	       /* a lazy restore's pager (ckpt/lazy.h), or NULL */
	struct ckpt_run *lruns;	       /* write_pages: the task's lazy runs */
	uint32_t nlruns, caplruns;
	/* a lazy restore: where task i writes now what a lazy mapping of it
	 * would defer, the pages its children share (ckpt_cow_shared) */
	struct ckpt_run *ep; /* sorted, disjoint; off unused */
	uint32_t nep;
	struct ckpt_run *cs; /* eager_shared: one child's pieces */
	uint32_t ncs, capcs;
	/* a lazy restore: per task, the pages it holds after its rebuild_mm
	 * (written, or kept shared), in address order: where its children's
	 * own pages must be written rather than deferred */
	struct ckpt_run **pres;
	uint32_t *npres, *cappres;
	uint32_t thp;  /* PR_GET_THP_DISABLE every task has from its clone: the root's */
	bool thp_off;  /* ... which was set to 1 for the restore (a lazy tree's, shared) */
	bool unshared; /* ckpt_restore_opts.unshared: no child keeps its parent's memory */
};

/* byte 0 of the image's page data (the pager's after a lazy load) */
static const uint8_t *page_data(const struct rctx *c)
{
	return c->lz ? ckpt_lazy_data(c->lz) : c->img.pages_map + CKPT_PAGE_SIZE;
}

/*
 * Is the file saved as (@dev, @ino) the one now at (@ndev, @nino)? On the
 * same device with the same inode; or on the device opts.dev_map gives for
 * @dev (a gofer volume's new FUSE connection; with any_ino, a file system
 * the restore filled itself: tmpfs contents, `ursa do`'s writable layer).
 * Else a device renumbered since the checkpoint is learned from its first
 * file with the same inode and must then hold for every other one: an
 * overlay's layers get new anonymous devices at each mount.
 */
static bool same_file(struct rctx *c, uint64_t dev, uint64_t ino, uint64_t ndev, uint64_t nino)
{
	/* first: a new device may have the old one's number */
	for (uint32_t k = 0; k < c->n_dev_map; k++)
		if (c->dev_map[k].from == dev)
			return c->dev_map[k].to == ndev && (c->dev_map[k].any_ino || ino == nino);
	if (dev == ndev)
		return ino == nino;
	for (uint32_t k = 0; k < c->nlearned; k++)
		if (c->learned[k].from == dev)
			return c->learned[k].to == ndev && ino == nino;
	if (ino != nino || c->nlearned == URS_ARRAY_SIZE(c->learned))
		return false;
	/* Several old devices may show as one new one: a file the init mapped
	 * through the host's path (the real device) and files seen through the
	 * old overlay's lower layer (its pseudo device) are both on the new
	 * overlay's lower pseudo device. Each old device still maps to one new
	 * one, and every file must keep its inode (and, mapped, its size). */
	c->learned[c->nlearned++] = (struct ckpt_dev_map){.from = dev, .to = ndev};
	return true;
}

/* ---- blob placement ------------------------------------------------------ */

static bool overlaps_image(const struct ckpt_image *img, uint64_t a, uint64_t len)
{
	for (uint32_t i = 0; i < img->ntasks; i++)
		for (uint32_t v = 0; v < img->tasks[i].nvmas; v++) {
			const struct ckpt_vma_rec *m = &img->tasks[i].vmas[v].r;
			/* keep a gap so stacks growing down never meet the blob */
			if (a < m->end + (1ull << 24) && m->start < a + len + (1ull << 24))
				return true;
		}
	return false;
}

static bool overlaps_self(pid_t pid, uint64_t a, uint64_t len)
{
	char path[64];
	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[512];
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		if (sscanf(line, "%llx-%llx", &s, &e) == 2 && a < e && s < a + len)
			return true;
	}
	return !f;
}

static int choose_blob(struct rctx *c, struct urs_err *err)
{
	for (uint64_t a = 1ull << 33; a < (1ull << 46); a += 1ull << 33)
		if (!overlaps_image(&c->img, a, BLOB_LEN) && !overlaps_self(0, a, BLOB_LEN) &&
		    (c->puppet <= 0 || !overlaps_self(c->puppet, a, BLOB_LEN))) {
			c->blob = a;
			return 0;
		}
	return urs_err_set(err, -ENOMEM, "restore: no free address for the restorer blob");
}

/* ---- puppets --------------------------------------------------------------- */

/* Runs in the clone3 child: map the blob, reset signal state, report, wait. */
static __attribute__((noreturn)) void puppet_main(uint64_t blob, int wfd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	void *p = mmap((void *) blob, BLOB_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *) blob)
		_exit(100);
	memcpy(p, "\x0f\x05\xcc", 3); /* syscall; int3 */
	if (mprotect(p, CKPT_PAGE_SIZE, PROT_READ | PROT_EXEC) < 0)
		_exit(101);
	struct sigaction sa = {.sa_handler = SIG_DFL};
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &sa, NULL);
	stack_t ss = {.ss_flags = SS_DISABLE};
	sigaltstack(&ss, NULL);
	if (write(wfd, "r", 1) != 1)
		_exit(102);
	for (;;)
		pause();
}

static int inj(struct rctx *c, uint32_t i, long nr, uint64_t a1, uint64_t a2, uint64_t a3,
	       uint64_t a4, uint64_t a5, uint64_t a6, long *ret)
{
	long r2 = 0;
	int r = ckpt_inject(&c->tr[i], nr, a1, a2, a3, a4, a5, a6, &r2);
	if (r)
		return r;
	if (ret)
		*ret = r2;
	if ((unsigned long) r2 > -4096ul)
		return (int) r2;
	return 0;
}

static int scratch_put(struct rctx *c, uint32_t i, uint32_t off, const void *p, size_t n)
{
	return ckpt_mem_write(c->memfd[i], c->blob + SCRATCH + off, p, n);
}

static uint64_t sarg(struct rctx *c, uint32_t off)
{
	return c->blob + SCRATCH + off;
}

/* the root puppet inherited an rseq registration: drop it before its memory goes */
static int drop_rseq(struct rctx *c, struct urs_err *err)
{
	struct __ptrace_rseq_configuration rc = {0};
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, c->tr[0].pid, (void *) sizeof(rc), &rc) > 0 &&
	    rc.rseq_abi_pointer) {
		int r = inj(c, 0, SYS_rseq, rc.rseq_abi_pointer, rc.rseq_abi_size,
			    1 /* UNREGISTER */, rc.signature, 0, 0, NULL);
		if (r)
			return urs_err_set(err, r, "restore: unregistering rseq: %s", strerror(-r));
	}
	return 0;
}

static int create_root(struct rctx *c, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[0];
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return urs_err_set(err, -errno, "restore: pipe: %m");
	pid_t tid = t->r.nspid;
	struct clone_args ca = {.exit_signal = SIGCHLD};
	if (t->r.nspid == 1) {
		ca.flags = CLONE_NEWPID;
	} else {
		ca.set_tid = (uint64_t) (uintptr_t) &tid;
		ca.set_tid_size = 1;
	}
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		close(pfd[0]);
		puppet_main(c->blob, pfd[1]);
	}
	int e = errno;
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return urs_err_set(err, -e, "restore: clone3 for pid %d: %s", t->r.nspid,
				   strerror(e));
	}
	char b;
	ssize_t n;
	while ((n = read(pfd[0], &b, 1)) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	if (n != 1) {
		int st = 0;
		waitpid((pid_t) pid, &st, 0);
		return urs_err_set(err, -EIO, "restore: restorer child failed to start (status %d)",
				   st);
	}
	c->nlive = 1;
	c->tr[0].pid = (pid_t) pid;
	int r = ckpt_seize(&c->tr[0], (pid_t) pid,
			   PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK | PTRACE_O_TRACECLONE |
				   PTRACE_O_SUSPEND_SECCOMP,
			   err);
	if (r) {
		kill((pid_t) pid, SIGKILL);
		waitpid((pid_t) pid, NULL, 0);
		c->nlive = 0;
		return r;
	}
	c->tr[0].syscall_ip = c->blob;
	c->tr[0].trap_after = 1; /* one stop per injection (ckpt_ptrace.h) */
	c->memfd[0] = ckpt_open_mem((pid_t) pid);
	if (c->memfd[0] < 0)
		return urs_err_set(err, c->memfd[0], "restore: opening puppet memory: %s",
				   strerror(-c->memfd[0]));
	return drop_rseq(c, err);
}

/* NSpid's last field of /proc/PID/status: the pid in its own namespace */
static pid_t ns_pid_of(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	pid_t last = -1;
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		for (char *p = strtok(line + 6, " \t\n"); p; p = strtok(NULL, " \t\n"))
			last = (pid_t) atoi(p);
	}
	return last;
}

/* ckpt_restore_opts.puppet: seize the existing process and give it the blob
 * by injected syscalls from a `syscall` instruction of its vdso. */
static int adopt_root(struct rctx *c, struct urs_err *err)
{
	pid_t pid = c->puppet;
	if (ns_pid_of(pid) != c->img.tasks[0].r.nspid)
		return urs_err_set(err, -EINVAL,
				   "restore: the restore target (pid %d) does not have pid %d in "
				   "its pid namespace",
				   pid, c->img.tasks[0].r.nspid);
	int r = ckpt_seize(&c->tr[0], pid,
			   PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK | PTRACE_O_TRACECLONE |
				   PTRACE_O_SUSPEND_SECCOMP,
			   err);
	if (r)
		return r;
	c->nlive = 1;
	c->tr[0].pid = pid;
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	uint64_t ip = 0;
	while (f && fgets(line, sizeof(line), f) && !ip) {
		unsigned long long s, e;
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &s, &e) == 2 &&
		    ckpt_find_syscall_insn(pid, s, e, &ip) < 0)
			ip = 0;
	}
	if (!ip)
		return urs_err_set(err, -ENOEXEC,
				   "restore: pid %d: no syscall instruction in its vdso", pid);
	c->tr[0].syscall_ip = ip;
	c->memfd[0] = ckpt_open_mem(pid);
	if (c->memfd[0] < 0)
		return urs_err_set(err, c->memfd[0], "restore: opening puppet memory: %s",
				   strerror(-c->memfd[0]));
	long got = 0;
	r = inj(c, 0, SYS_mmap, c->blob, BLOB_LEN, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, (uint64_t) -1, 0, &got);
	if (!r && (uint64_t) got != c->blob)
		r = -EEXIST;
	if (!r)
		r = ckpt_mem_write(c->memfd[0], c->blob, "\x0f\x05\xcc", 3);
	if (!r)
		r = inj(c, 0, SYS_mprotect, c->blob, CKPT_PAGE_SIZE, PROT_READ | PROT_EXEC, 0, 0, 0,
			NULL);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: mapping the restorer blob: %s", pid,
				   strerror(-r));
	c->tr[0].syscall_ip = c->blob;
	c->tr[0].trap_after = 1;
	return drop_rseq(c, err);
}

static int set_ids(struct rctx *c, uint32_t i, struct urs_err *err);

/* A task that was a zombie: give it its ids, then let it die the way it did,
 * so its parent finds the same pid and wait status. */
static int make_zombie(struct rctx *c, uint32_t j, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[j];
	int r = set_ids(c, j, err);
	if (r)
		return r;
	int st = t->r.exit_status;
	c->dead[j] = 1;
	if (WIFSIGNALED(st)) {
		/* queued while stopped, taken (fatally) as soon as it is let go */
		kill(c->tr[j].pid, WTERMSIG(st));
		if (ptrace(PTRACE_DETACH, c->tr[j].pid, 0, 0) < 0)
			return urs_err_set(err, -errno, "restore: pid %d: detaching the zombie: %m",
					   t->r.nspid);
		return 0;
	}
	long ret;
	r = ckpt_inject(&c->tr[j], SYS_exit_group, (uint64_t) WEXITSTATUS(st), 0, 0, 0, 0, 0, &ret);
	if (r != -ESRCH) /* the tracer's wait took the exit; the parent now sees a zombie */
		return urs_err_set(err, -EIO, "restore: pid %d: re-creating the zombie failed",
				   t->r.nspid);
	return 0;
}

/* Clone task j from its parent's puppet, with its saved pid. */
static int create_child(struct rctx *c, uint32_t j, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[j];
	uint32_t p = (uint32_t) t->r.parent;
	struct clone_args ca = {.exit_signal = SIGCHLD, .set_tid_size = 1};
	uint64_t tid = (uint64_t) t->r.nspid;
	ca.set_tid = sarg(c, S_STRUCT + 256);
	int r = scratch_put(c, p, S_STRUCT, &ca, sizeof(ca));
	if (!r)
		r = scratch_put(c, p, S_STRUCT + 256, &tid, sizeof(pid_t));
	long ret = 0;
	if (!r)
		r = inj(c, p, SYS_clone3, sarg(c, S_STRUCT), sizeof(ca), 0, 0, 0, 0, &ret);
	if (r)
		return urs_err_set(err, r, "restore: clone3 of pid %d: %s", t->r.nspid,
				   strerror(-r));
	unsigned long msg = 0;
	/* the fork event message (child's pid in our namespace) */
	char path[96], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", c->tr[p].pid, c->tr[p].pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return urs_err_set(err, -EIO, "restore: cannot find the clone of pid %d",
				   t->r.nspid);
	buf[n] = 0;
	for (char *q = buf; *q;) {
		char *end;
		unsigned long v = strtoul(q, &end, 10);
		if (end == q)
			break;
		q = end;
		bool known = false;
		for (uint32_t k = 0; k < c->nlive; k++)
			known |= (unsigned long) c->tr[k].pid == v;
		if (!known)
			msg = v;
	}
	if (!msg)
		return urs_err_set(err, -EIO, "restore: cannot find the clone of pid %d",
				   t->r.nspid);
	r = ckpt_wait_new_child(&c->tr[j], (pid_t) msg, err);
	if (r)
		return r;
	/* tasks are created parents first, not always in index order: every
	 * one below nlive that has a pid is known (kill_tree, the scan above) */
	c->nlive = c->nlive > j + 1 ? c->nlive : j + 1;
	c->tr[j].syscall_ip = c->blob;
	c->tr[j].trap_after = 1;
	c->memfd[j] = ckpt_open_mem((pid_t) msg);
	if (c->memfd[j] < 0)
		return urs_err_set(err, c->memfd[j], "restore: opening puppet memory: %s",
				   strerror(-c->memfd[j]));
	return t->r.zombie ? make_zombie(c, j, err) : 0;
}

/* ---- address space --------------------------------------------------------- */

static int open_in(struct rctx *c, uint32_t i, const char *path, int flags, long *fd)
{
	size_t l = strlen(path) + 1;
	if (l > PATH_MAX)
		return -ENAMETOOLONG;
	int r = scratch_put(c, i, S_PATH, path, l);
	if (!r)
		r = inj(c, i, SYS_openat, (uint64_t) AT_FDCWD, sarg(c, S_PATH), (uint64_t) flags, 0,
			0, 0, fd);
	return r;
}

static int fstat_in(struct rctx *c, uint32_t i, long fd, struct stat *st)
{
	int r = inj(c, i, SYS_fstat, (uint64_t) fd, sarg(c, S_STAT), 0, 0, 0, 0, NULL);
	if (!r)
		r = ckpt_mem_read(c->memfd[i], sarg(c, S_STAT), st, sizeof(*st));
	return r;
}

/* the file a task maps from, open in the task while its mappings are made */
struct map_fd {
	long fd;
	const char *path;
	bool rw;
};

static int map_file_fd(struct rctx *c, uint32_t i, const struct ckpt_vma *m, struct map_fd *f,
		       struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	bool rw = (m->r.flags & CKPT_VMA_SHARED) && (m->r.prot & PROT_WRITE);
	if (f->path && !strcmp(f->path, m->path) && rw == f->rw)
		return 0;
	if (f->fd >= 0)
		inj(c, i, SYS_close, (uint64_t) f->fd, 0, 0, 0, 0, 0, NULL);
	f->fd = -1;
	int r = open_in(c, i, m->path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC, &f->fd);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: opening %s: %s", t->r.nspid, m->path,
				   strerror(-r));
	f->path = m->path;
	f->rw = rw;
	struct stat st;
	r = fstat_in(c, i, f->fd, &st);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: fstat %s: %s", t->r.nspid, m->path,
				   strerror(-r));
	if (!same_file(c, m->r.dev, m->r.ino, st.st_dev, st.st_ino) ||
	    (uint64_t) st.st_size != m->r.fsize)
		return urs_err_set(err, -ESTALE,
				   "restore: pid %d: %s changed since the checkpoint "
				   "(device/inode/size differ)",
				   t->r.nspid, m->path);
	return 0;
}

/* [@a, @b) of mapping @m, made anew in task @i */
static int map_piece(struct rctx *c, uint32_t i, const struct ckpt_vma *m, uint64_t a, uint64_t b,
		     struct map_fd *f, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	long ret;
	int r;
	if (m->r.kind == CKPT_VMA_ANON) {
		int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
		if (m->r.flags & CKPT_VMA_STACK)
			fl |= MAP_GROWSDOWN;
		if (m->r.flags & CKPT_VMA_NORESERVE)
			fl |= MAP_NORESERVE;
		r = inj(c, i, SYS_mmap, a, b - a, m->r.prot, (uint64_t) fl, (uint64_t) -1, 0, &ret);
	} else if (m->r.kind == CKPT_VMA_FILE) {
		bool shared = m->r.flags & CKPT_VMA_SHARED;
		r = map_file_fd(c, i, m, f, err);
		if (r)
			return r;
		r = inj(c, i, SYS_mmap, a, b - a, m->r.prot,
			(uint64_t) ((shared ? MAP_SHARED : MAP_PRIVATE) | MAP_FIXED),
			(uint64_t) f->fd, m->r.pgoff + (a - m->r.start), &ret);
	} else {
		return 0; /* vdso & co: map_vdso; shared memory: restore_shm */
	}
	if (!r && (uint64_t) ret != a)
		r = -EFAULT;
	if (r)
		return urs_err_set(err, r, "restore: pid %d: mapping %#" PRIx64 "-%#" PRIx64 ": %s",
				   t->r.nspid, a, b, strerror(-r));
	return 0;
}

/* task @i's mappings, but for the ranges @plan keeps of its parent's */
static int map_vmas(struct rctx *c, uint32_t i, const struct ckpt_cow_plan *plan,
		    struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	struct map_fd f = {.fd = -1};
	int r = 0;
	uint32_t k = 0; /* plan->keep is in address order, as the VMAs */
	for (uint32_t v = 0; v < t->nvmas && !r; v++) {
		const struct ckpt_vma *m = &t->vmas[v];
		uint64_t x = m->r.start;
		for (; !r && k < plan->nkeep && plan->keep[k].cv == v; k++) {
			if (x < plan->keep[k].a)
				r = map_piece(c, i, m, x, plan->keep[k].a, &f, err);
			x = plan->keep[k].b;
		}
		if (!r && x < m->r.end)
			r = map_piece(c, i, m, x, m->r.end, &f, err);
	}
	if (f.fd >= 0)
		inj(c, i, SYS_close, (uint64_t) f.fd, 0, 0, 0, 0, 0, NULL);
	return r;
}

static int map_vdso(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	uint64_t lo = UINT64_MAX, vdso = 0, vdso_end = 0;
	for (uint32_t v = 0; v < t->nvmas; v++) {
		const struct ckpt_vma_rec *m = &t->vmas[v].r;
		if (m->kind >= CKPT_VMA_VVAR && m->kind <= CKPT_VMA_VDSO && m->start < lo)
			lo = m->start;
		if (m->kind == CKPT_VMA_VDSO) {
			vdso = m->start;
			vdso_end = m->end;
		}
	}
	if (!vdso)
		return 0; /* the task had no vdso (e.g. vdso=0); nothing to map */
	long ret;
	int r = inj(c, i, SYS_arch_prctl, ARCH_MAP_VDSO_64, lo, 0, 0, 0, 0, &ret);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: mapping the vdso at %#" PRIx64 ": %s",
				   t->r.nspid, lo, strerror(-r));
	/* verify the kernel put it exactly where the task expects it */
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/maps", c->tr[i].pid);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &s, &e) == 2) {
			if (s == vdso && e == vdso_end)
				return 0;
			return urs_err_set(
				err, -EXDEV,
				"restore: pid %d: the kernel's vdso (%llx-%llx) does not "
				"match the image's (%" PRIx64 "-%" PRIx64 "): different kernel?",
				t->r.nspid, s, e, vdso, vdso_end);
		}
	}
	return urs_err_set(err, -EXDEV, "restore: pid %d: vdso missing after ARCH_MAP_VDSO_64",
			   t->r.nspid);
}

/* Lazy restore: may the pages of @m come in later, through userfaultfd?
 * Private anonymous memory only (heap and stacks included); file and
 * shared mappings take theirs now. */
static bool vma_lazy(const struct ckpt_vma *m)
{
	return m->r.kind == CKPT_VMA_ANON && !(m->r.flags & CKPT_VMA_SHARED);
}

/* the mapping of @t that holds @a, or NULL (its VMAs are sorted, disjoint) */
static const struct ckpt_vma *vma_at(const struct ckpt_task *t, uint64_t a)
{
	uint32_t lo = 0, hi = t->nvmas; /* the first that ends after a */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->vmas[mid].r.end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->nvmas && t->vmas[lo].r.start <= a ? &t->vmas[lo] : NULL;
}

/* A lazy restore: task @i holds [@a, @b) now (c->pres) */
static int note_present(struct rctx *c, uint32_t i, uint64_t a, uint64_t b)
{
	return c->lz ? ckpt_runs_add(&c->pres[i], &c->npres[i], &c->cappres[i], a, b) : 0;
}

/* [@a, @b) of @run now (eager), from the image */
static int write_piece(struct rctx *c, uint32_t i, const struct ckpt_run *run, uint64_t a,
		       uint64_t b, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	uint64_t off = run->off + (a - run->vaddr);
	int r = c->lz ? ckpt_lazy_verify(c->lz, off, b - a, err) : 0;
	if (r)
		return r;
	r = ckpt_mem_write(c->memfd[i], a, page_data(c) + off, b - a);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: writing pages at %#" PRIx64 ": %s",
				   t->r.nspid, a, strerror(-r));
	c->st->pages += (b - a) / CKPT_PAGE_SIZE;
	return note_present(c, i, a, b) ? urs_err_set(err, -ENOMEM, "restore: out of memory") : 0;
}

/* [@a, @b) of @run later: a lazy run of the task, inside one mapping (a
 * userfaultfd copy never crosses mappings) */
static int defer_piece(struct rctx *c, const struct ckpt_run *run, uint64_t a, uint64_t b)
{
	const struct ckpt_run *last = c->nlruns ? &c->lruns[c->nlruns - 1] : NULL;
	if (last && last->vaddr + last->npages * CKPT_PAGE_SIZE > a)
		return -EILSEQ; /* lazy_register finds them in address order */
	if (urs_grow((void **) &c->lruns, &c->caplruns, c->nlruns, sizeof(*c->lruns), 64))
		return -ENOMEM;
	c->lruns[c->nlruns++] =
		(struct ckpt_run){a, (b - a) / CKPT_PAGE_SIZE, run->off + (a - run->vaddr)};
	return 0;
}

struct eager_ctx {
	int (*fn)(void *, uint64_t, uint64_t);
	void *ctx;
};

static int eager_one(void *ctx, const struct ckpt_run *run, uint64_t x, uint64_t y)
{
	struct eager_ctx *e = ctx;
	return e->fn(e->ctx, run->off + (x - run->vaddr), y - x);
}

/* Each piece of @img's page data a lazy restore reads now (write_piece,
 * shm_fill; what children share unless @unshared): @fn(@ctx, offset,
 * length) until it returns nonzero */
static int for_eager(const struct ckpt_image *img, bool unshared,
		     int (*fn)(void *, uint64_t, uint64_t), void *ctx)
{
	int r = 0;
	for (uint32_t i = 0; !r && i < img->nshms; i++)
		for (uint32_t k = 0; !r && k < img->shms[i].nruns; k++)
			r = fn(ctx, img->shms[i].runs[k].off,
			       img->shms[i].runs[k].npages * CKPT_PAGE_SIZE);
	struct eager_ctx e = {fn, ctx};
	for (uint32_t j = 1; !r && !unshared && j < img->ntasks; j++) /* shared: cowplan.h */
		r = ckpt_cow_shared(img, j, eager_one, &e);
	for (uint32_t i = 0; !r && i < img->ntasks; i++) {
		const struct ckpt_task *t = &img->tasks[i];
		for (uint32_t k = 0; !r && k < t->nruns; k++) { /* a run lies in one mapping */
			const struct ckpt_run *run = &t->runs[k];
			const struct ckpt_vma *m = vma_at(t, run->vaddr);
			uint64_t a = run->vaddr, b = a + run->npages * CKPT_PAGE_SIZE;
			b = m && b > m->r.end ? m->r.end : b;
			if (m && !vma_lazy(m))
				r = fn(ctx, run->off, b - a);
		}
	}
	return r;
}

struct want_ctx {
	struct ckpt_lazy *lz;
	struct urs_err *err;
};

static int want_one(void *ctx, uint64_t off, uint64_t len)
{
	struct want_ctx *w = ctx;
	return ckpt_lazy_want(w->lz, off, len, w->err);
}

/* Lazy restore from a remote image: every chunk the restorer will read
 * now asked for at once, so that they come in together rather than one
 * round trip each */
static int want_eager(struct rctx *c, struct urs_err *err)
{
	int r = for_eager(&c->img, c->unshared, want_one, &(struct want_ctx){c->lz, err});
	return r == -ENOMEM ? urs_err_set(err, r, "lazy restore: out of memory") : r;
}

struct mark_ctx {
	uint8_t *chunks;
	uint64_t len;
};

static int mark_one(void *ctx, uint64_t off, uint64_t len)
{
	struct mark_ctx *m = ctx;
	if (!len || off >= m->len)
		return 0;
	uint64_t last = off + len - 1 < m->len ? off + len - 1 : m->len - 1;
	for (uint64_t c = off / CKPT_MAC_CHUNK; c <= last / CKPT_MAC_CHUNK; c++)
		m->chunks[c] = 2;
	return 0;
}

long ckpt_restore_first_chunks(const char *dir, int pages_fd, const struct ckpt_seal *seal,
			       uint8_t **chunks, size_t *n, struct urs_err *err)
{
	struct ckpt_image img;
	*chunks = NULL;
	*n = 0;
	int r = ckpt_image_load_ex(dir, pages_fd, seal, CKPT_LOAD_LAZY, &img, err);
	if (r)
		return r;
	uint64_t len = img.pages_len;
	size_t nc = (size_t) ckpt_seal_nchunks(len);
	uint8_t *bits = calloc(ckpt_ws_nbytes(len) + 1, 1), *p = calloc(nc + 1, 1);
	long k = 0;
	if (!bits || !p) {
		free(p);
		k = urs_err_set(err, -ENOMEM, "restore: out of memory");
		goto out;
	}
	/* (a restore with ckpt_restore_opts.unshared reads the shared pages
	 * later: fetched ahead all the same) */
	if (for_eager(&img, false, mark_one, &(struct mark_ctx){p, len})) { /* only -ENOMEM */
		free(p);
		k = urs_err_set(err, -ENOMEM, "restore: out of memory");
		goto out;
	}
	/* the working set, as the pager takes it (ckpt/lazy.c ws_setup) */
	long w = ckpt_ws_load(CKPT_WS_REC, dir, seal, img.id, len, bits, err);
	if (w == -ENOENT)
		w = ckpt_ws_load(CKPT_WS_HOT, dir, seal, img.id, len, bits, err);
	for (uint64_t b = 0; w > 0 && b * CKPT_WS_BLOCK < len; b++)
		if ((bits[b / 8] & (1u << (b % 8))) && !p[b * CKPT_WS_BLOCK / CKPT_MAC_CHUNK])
			p[b * CKPT_WS_BLOCK / CKPT_MAC_CHUNK] = 1;
	for (size_t c = 0; c < nc; c++)
		k += p[c] != 0;
	*chunks = p;
	*n = nc;
out:
	free(bits);
	ckpt_image_free(&img);
	return k;
}

struct piece_ctx {
	struct rctx *c;
	uint32_t i;
	const struct ckpt_run *run;
	struct urs_err *err;
};

/* [@a, @b) split by @set (@n intervals, sorted, disjoint): @fn(@p, x, y,
 * whether [x, y) is in it) in address order, until it returns nonzero */
static int split_by(const struct ckpt_run *set, uint32_t n, uint64_t a, uint64_t b,
		    int (*fn)(struct piece_ctx *, uint64_t, uint64_t, bool), struct piece_ctx *p)
{
	int r = 0;
	for (uint32_t k = ckpt_runs_after(set, n, a); !r && a < b;) {
		const struct ckpt_run *e = k < n ? &set[k] : NULL;
		uint64_t y, e_end = e ? e->vaddr + e->npages * CKPT_PAGE_SIZE : 0;
		bool in = e && e->vaddr <= a;
		if (in) {
			y = e_end < b ? e_end : b;
			k++;
		} else {
			y = e && e->vaddr < b ? e->vaddr : b;
		}
		r = fn(p, a, y, in);
		a = y;
	}
	return r;
}

static int write_or_defer(struct piece_ctx *p, uint64_t x, uint64_t y, bool now)
{
	if (now)
		return write_piece(p->c, p->i, p->run, x, y, p->err);
	int r = defer_piece(p->c, p->run, x, y);
	if (r == -EILSEQ)
		return urs_err_set(p->err, r,
				   "restore: pid %d: pages deferred out of order at %#" PRIx64,
				   p->c->img.tasks[p->i].r.nspid, x);
	return r ? urs_err_set(p->err, r, "restore: out of memory") : 0;
}

/* [@a, @b) of @run in a lazy mapping: later, but for what the task's
 * children share (c->ep), now */
static int lazy_piece(struct rctx *c, uint32_t i, const struct ckpt_run *run, uint64_t a,
		      uint64_t b, struct urs_err *err)
{
	struct piece_ctx p = {c, i, run, err};
	return split_by(c->ep, c->nep, a, b, write_or_defer, &p);
}

/* [@a, @end) of @run: each piece by the mapping it lies in, now or later */
static int place_range(struct rctx *c, uint32_t i, const struct ckpt_run *run, uint64_t a,
		       uint64_t end, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	if (!c->lz) /* all of it now */
		return write_piece(c, i, run, a, end, err);
	while (a < end) {
		const struct ckpt_vma *m = vma_at(t, a);
		uint64_t b = m && m->r.end < end ? m->r.end : end;
		int r = m && vma_lazy(m) ? lazy_piece(c, i, run, a, b, err)
					 : write_piece(c, i, run, a, b, err);
		if (r)
			return r;
		a = b;
	}
	return 0;
}

/* Lazy restore: a userfaultfd made by task i itself (it is its address
 * space's), taken out with pidfd_getfd and closed in the task; its lazy
 * mappings registered; handed to the pager with the task's lazy runs. */
static int lazy_register(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	long tfd;
	int r = inj(c, i, SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK, 0, 0, 0, 0, 0, &tfd);
	if (r)
		return urs_err_set(err, r, "lazy restore: pid %d: userfaultfd: %s", t->r.nspid,
				   strerror(-r));
	_cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, c->tr[i].pid, 0);
	int uffd = pidfd < 0 ? -1 : (int) syscall(SYS_pidfd_getfd, pidfd, (int) tfd, 0);
	r = uffd < 0 ? -errno : 0;
	inj(c, i, SYS_close, (uint64_t) tfd, 0, 0, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(err, r, "lazy restore: pid %d: taking its userfaultfd: %s",
				   t->r.nspid, strerror(-r));
	struct uffdio_api api = {.api = UFFD_API, .features = CKPT_LAZY_FEATURES};
	if (ioctl(uffd, UFFDIO_API, &api) < 0) {
		r = -errno;
		close(uffd);
		return urs_err_set(err, r, "lazy restore: userfaultfd features %#llx: %s",
				   (unsigned long long) CKPT_LAZY_FEATURES, strerror(-r));
	}
	for (uint32_t v = 0; v < t->nvmas; v++) {
		const struct ckpt_vma *m = &t->vmas[v];
		/* c->lruns are in address order, none across mappings */
		uint32_t k = ckpt_runs_after(c->lruns, c->nlruns, m->r.start);
		bool used = k < c->nlruns && c->lruns[k].vaddr < m->r.end;
		struct uffdio_register reg = {.range = {m->r.start, m->r.end - m->r.start},
					      .mode = UFFDIO_REGISTER_MODE_MISSING};
		if (used && ioctl(uffd, UFFDIO_REGISTER, &reg) < 0) {
			r = -errno;
			close(uffd);
			return urs_err_set(err, r,
					   "lazy restore: pid %d: registering %#" PRIx64
					   "-%#" PRIx64 ": %s",
					   t->r.nspid, m->r.start, m->r.end, strerror(-r));
		}
	}
	return ckpt_lazy_add(c->lz, uffd, c->tr[i].pid, c->lruns, c->nlruns, err);
}

static int write_or_place(struct piece_ctx *p, uint64_t x, uint64_t y, bool now)
{
	return now ? write_piece(p->c, p->i, p->run, x, y, p->err)
		   : place_range(p->c, p->i, p->run, x, y, p->err);
}

/* a piece of a child's run in a kept range: left shared; written over
 * the parent's page now where the parent holds it (a deferred page must be
 * missing when it comes; in an eager restore everywhere); or placed as any
 * task's page */
static int piece_one(void *ctx, uint64_t x, uint64_t y, enum ckpt_cow_piece what)
{
	struct piece_ctx *p = ctx;
	struct rctx *c = p->c;
	uint32_t par = (uint32_t) c->img.tasks[p->i].r.parent;
	if (what == CKPT_COW_OWN)
		return place_range(c, p->i, p->run, x, y, p->err);
	if (what == CKPT_COW_OVER && !c->lz)
		return write_piece(c, p->i, p->run, x, y, p->err);
	if (what == CKPT_COW_OVER)
		return split_by(c->pres[par], c->npres[par], x, y, write_or_place, p);
	c->st->shared += (y - x) / CKPT_PAGE_SIZE;
	return note_present(c, p->i, x, y) ? urs_err_set(p->err, -ENOMEM, "restore: out of memory")
					   : 0;
}

/* the pages of @run in a child that keeps ranges of its parent's memory
 * (@plan, from *@k on): in a kept range only those the parent's do not
 * already hold */
static int write_run_kept(struct rctx *c, uint32_t i, const struct ckpt_run *run,
			  const struct ckpt_cow_plan *plan, uint32_t *k, struct urs_err *err)
{
	const struct ckpt_task *p = &c->img.tasks[c->img.tasks[i].r.parent];
	uint64_t x = run->vaddr, end = run->vaddr + run->npages * CKPT_PAGE_SIZE;
	struct piece_ctx pc = {c, i, run, err};
	int r = 0;
	while (*k < plan->nkeep && plan->keep[*k].b <= x)
		(*k)++;
	for (uint32_t q = *k; !r && x < end && q < plan->nkeep && plan->keep[q].a < end; q++) {
		uint64_t a = plan->keep[q].a > x ? plan->keep[q].a : x;
		uint64_t b = plan->keep[q].b < end ? plan->keep[q].b : end;
		if (x < a)
			r = place_range(c, i, run, x, a, err);
		if (!r)
			r = ckpt_cow_pieces(p, run, a, b, piece_one, &pc);
		x = b;
	}
	return r || x >= end ? r : place_range(c, i, run, x, end, err);
}

static int write_pages(struct rctx *c, uint32_t i, const struct ckpt_cow_plan *plan,
		       struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	c->nlruns = 0;
	uint32_t kk = 0;
	for (uint32_t k = 0; k < t->nruns; k++) {
		const struct ckpt_run *run = &t->runs[k];
		int r = plan->nkeep ? write_run_kept(c, i, run, plan, &kk, err)
				    : place_range(c, i, run, run->vaddr,
						  run->vaddr + run->npages * CKPT_PAGE_SIZE, err);
		if (r)
			return r;
	}
	return 0;
}

static int drop_one(void *ctx, uint64_t x, uint64_t y)
{
	struct piece_ctx *p = ctx;
	int r = inj(p->c, p->i, SYS_madvise, x, y - x, MADV_DONTNEED, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(p->err, r,
				   "restore: pid %d: dropping inherited pages %#" PRIx64
				   "-%#" PRIx64 ": %s",
				   p->c->img.tasks[p->i].r.nspid, x, y, strerror(-r));
	return 0;
}

/* in the ranges a child keeps, the parent's pages it did not have: zero
 * again (anonymous) or the file's */
static int drop_pages(struct rctx *c, uint32_t i, const struct ckpt_cow_plan *plan,
		      struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	struct piece_ctx pc = {c, i, NULL, err};
	int r = 0;
	for (uint32_t k = 0; !r && k < plan->nkeep; k++)
		r = ckpt_cow_drops(&c->img.tasks[t->r.parent], t, plan->keep[k].a, plan->keep[k].b,
				   drop_one, &pc);
	return r;
}

static int set_mm(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	long exe = -1;
	int r;
	if (t->exe) {
		r = open_in(c, i, t->exe, O_RDONLY | O_CLOEXEC, &exe);
		if (r)
			exe = -1; /* /proc/PID/exe stays unset; not fatal */
	}
	struct prctl_mm_map mm = {
		.start_code = t->r.mm.start_code,
		.end_code = t->r.mm.end_code,
		.start_data = t->r.mm.start_data,
		.end_data = t->r.mm.end_data,
		.start_brk = t->r.mm.start_brk,
		.brk = t->r.mm.brk,
		.start_stack = t->r.mm.start_stack,
		.arg_start = t->r.mm.arg_start,
		.arg_end = t->r.mm.arg_end,
		.env_start = t->r.mm.env_start,
		.env_end = t->r.mm.env_end,
		.auxv = t->auxv_len ? (__u64 *) (uintptr_t) sarg(c, S_AUXV) : NULL,
		.auxv_size = t->auxv_len,
		.exe_fd = (__u32) exe,
	};
	if (t->auxv_len > S_PATH - S_AUXV)
		return urs_err_set(err, -E2BIG, "restore: pid %d: auxv too large", t->r.nspid);
	r = scratch_put(c, i, S_STRUCT, &mm, sizeof(mm));
	if (!r && t->auxv_len)
		r = scratch_put(c, i, S_AUXV, t->auxv, t->auxv_len);
	if (!r)
		r = inj(c, i, SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, sarg(c, S_STRUCT), sizeof(mm), 0,
			0, NULL);
	if (exe >= 0)
		inj(c, i, SYS_close, (uint64_t) exe, 0, 0, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: PR_SET_MM_MAP: %s", t->r.nspid,
				   strerror(-r));
	return 0;
}

/* ---- fds ------------------------------------------------------------------- */

#define OPEN_MASK                                                                      \
	(O_ACCMODE | O_APPEND | O_NONBLOCK | O_DSYNC | O_SYNC | O_DIRECT | O_NOATIME | \
	 O_LARGEFILE | O_PATH | O_DIRECTORY | O_NOFOLLOW)
#define SETFL_MASK (O_APPEND | O_NONBLOCK | O_NOATIME | O_DIRECT)
#define DATA_CHUNK (32u * 1024) /* bytes written per injected write, at S_BPF */

/* Where an end of a pipe or a unix socket lives once created: (task, fd),
 * the fd being a parked one (above every fd of that task) until all tasks
 * have their fds; then the parked fds are closed. */
enum { OBJ_PIPE_RD = 1, OBJ_PIPE_WR, OBJ_UNIX };
struct robj {
	uint64_t ino;
	uint32_t kind, task;
	int32_t fd;
};

static const struct robj *robj_find(const struct rctx *c, uint32_t kind, uint64_t ino)
{
	for (uint32_t k = 0; k < c->nobjs; k++)
		if (c->objs[k].kind == kind && c->objs[k].ino == ino)
			return &c->objs[k];
	return NULL;
}

static int robj_add(struct rctx *c, uint32_t kind, uint64_t ino, uint32_t task, int32_t fd)
{
	if (urs_grow((void **) &c->objs, &c->capobjs, c->nobjs, sizeof(*c->objs), 16))
		return -ENOMEM;
	c->objs[c->nobjs++] = (struct robj){ino, kind, task, fd};
	return 0;
}

/* The record (any task) of type with inode ino that carries data. */
static const struct ckpt_fd *find_data(const struct rctx *c, uint32_t type, uint64_t ino)
{
	for (uint32_t i = 0; i < c->img.ntasks; i++)
		for (uint32_t k = 0; k < c->img.tasks[i].nfds; k++) {
			const struct ckpt_fd *f = &c->img.tasks[i].fds[k];
			if (f->r.dup_of == -1 && !f->r.xtask && f->r.type == type &&
			    f->r.ino == ino && f->data && f->r.data_len)
				return f;
		}
	return NULL;
}

/* Move the new fd nfd of task i to f's number with f's close-on-exec. */
static int place(struct rctx *c, uint32_t i, long nfd, const struct ckpt_fd *f)
{
	int cloexec = f->r.cloexec ? O_CLOEXEC : 0;
	if (nfd == f->r.fd)
		return inj(c, i, SYS_fcntl, (uint64_t) nfd, F_SETFD, cloexec ? FD_CLOEXEC : 0, 0, 0,
			   0, NULL);
	int r = inj(c, i, SYS_dup3, (uint64_t) nfd, (uint64_t) f->r.fd, (uint64_t) cloexec, 0, 0, 0,
		    NULL);
	inj(c, i, SYS_close, (uint64_t) nfd, 0, 0, 0, 0, 0, NULL);
	return r;
}

/* Move nfd above every fd task i will have (F_DUPFD picks the lowest free
 * number from there, so it never lands on another new or parked fd). */
static int park(struct rctx *c, uint32_t i, long nfd, int32_t *slot)
{
	long got = -1;
	int r = inj(c, i, SYS_fcntl, (uint64_t) nfd, F_DUPFD_CLOEXEC, (uint64_t) c->park_base[i], 0,
		    0, 0, &got);
	inj(c, i, SYS_close, (uint64_t) nfd, 0, 0, 0, 0, 0, NULL);
	if (!r) {
		*slot = (int32_t) got;
		c->park_next[i]++;
	}
	return r;
}

/* A new fd in task i for the file at fd sfd of task s: a dup in the same
 * task, else pidfd_getfd(pidfd_open(s)) injected in task i. */
static int fetch(struct rctx *c, uint32_t i, uint32_t s, int32_t sfd, long *nfd)
{
	if (s == i)
		return inj(c, i, SYS_fcntl, (uint64_t) sfd, F_DUPFD_CLOEXEC, 0, 0, 0, 0, nfd);
	long pidfd;
	int r = inj(c, i, SYS_pidfd_open, (uint64_t) c->img.tasks[s].r.nspid, 0, 0, 0, 0, 0,
		    &pidfd);
	if (r)
		return r;
	r = inj(c, i, SYS_pidfd_getfd, (uint64_t) pidfd, (uint64_t) sfd, 0, 0, 0, 0, nfd);
	inj(c, i, SYS_close, (uint64_t) pidfd, 0, 0, 0, 0, 0, NULL);
	return r;
}

/* Write bytes into fd of task i (a pipe's write end, a socket) from scratch. */
static int write_data(struct rctx *c, uint32_t i, long fd, const uint8_t *p, uint32_t n, bool sock)
{
	while (n) {
		uint32_t k = n < DATA_CHUNK ? n : DATA_CHUNK;
		long w;
		int r = scratch_put(c, i, S_BPF, p, k);
		if (!r)
			r = sock ? inj(c, i, SYS_sendto, (uint64_t) fd, sarg(c, S_BPF), k,
				       MSG_DONTWAIT | MSG_NOSIGNAL, 0, 0, &w)
				 : inj(c, i, SYS_write, (uint64_t) fd, sarg(c, S_BPF), k, 0, 0, 0,
				       &w);
		if (r)
			return r;
		if (w <= 0)
			return -EIO;
		p += w;
		n -= (uint32_t) w;
	}
	return 0;
}

static int set_pipe_size(struct rctx *c, uint32_t i, long fd, uint32_t cap, uint32_t need)
{
	if (!cap || cap == 65536)
		return 0;
	int r = inj(c, i, SYS_fcntl, (uint64_t) fd, F_SETPIPE_SZ, cap, 0, 0, 0, NULL);
	return r && need > 65536 ? r : 0; /* the default holds the data: not fatal */
}

/* A pipe end: the first record of the pipe creates it (pipe2), fills it and
 * parks both ends; every other one takes its end from where it is parked. */
static int open_pipe(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd)
{
	uint32_t end = (f->r.oflags & O_ACCMODE) == O_WRONLY ? OBJ_PIPE_WR : OBJ_PIPE_RD;
	const struct robj *o = robj_find(c, end, f->r.ino);
	if (!o) {
		int32_t fds[2];
		int r = inj(c, i, SYS_pipe2, sarg(c, S_STRUCT), O_CLOEXEC | O_NONBLOCK, 0, 0, 0, 0,
			    NULL);
		if (!r)
			r = ckpt_mem_read(c->memfd[i], sarg(c, S_STRUCT), fds, sizeof(fds));
		const struct ckpt_fd *d = find_data(c, CKPT_FD_PIPE, f->r.ino);
		if (!r)
			r = set_pipe_size(c, i, fds[0], f->r.sub, d ? d->r.data_len : 0);
		if (!r && d)
			r = write_data(c, i, fds[1], d->data, d->r.data_len, false);
		int32_t prd, pwr;
		if (!r)
			r = park(c, i, fds[0], &prd);
		if (!r)
			r = park(c, i, fds[1], &pwr);
		if (!r)
			r = robj_add(c, OBJ_PIPE_RD, f->r.ino, i, prd);
		if (!r)
			r = robj_add(c, OBJ_PIPE_WR, f->r.ino, i, pwr);
		if (r)
			return r;
		o = robj_find(c, end, f->r.ino);
	}
	return fetch(c, i, o->task, o->fd, nfd);
}

/* Queue rec's saved bytes on the socket at the other end of fd: a stream's
 * bytes, or each message ({u32 length, bytes}) as one send. */
static int send_queue(struct rctx *c, uint32_t i, long fd, const struct ckpt_fd *rec)
{
	if (rec->r.sub == SOCK_STREAM)
		return write_data(c, i, fd, rec->data, rec->r.data_len, true);
	for (uint32_t off = 0; off < rec->r.data_len;) {
		uint32_t ml;
		memcpy(&ml, rec->data + off, 4);
		off += 4;
		if (ml > DATA_CHUNK)
			return -EMSGSIZE;
		long w = 0;
		int r = scratch_put(c, i, S_BPF, rec->data + off, ml);
		if (!r)
			r = inj(c, i, SYS_sendto, (uint64_t) fd, sarg(c, S_BPF), ml,
				MSG_DONTWAIT | MSG_NOSIGNAL, 0, 0, &w);
		if (!r && w != (long) ml)
			r = -EIO;
		if (r)
			return r;
		off += ml;
	}
	return 0;
}

/* A socketpair end: created with its peer by the first record of either;
 * the bytes queued on each end are sent from the other. */
static int open_unix(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd)
{
	const struct robj *o = robj_find(c, OBJ_UNIX, f->r.ino);
	if (!o) {
		int32_t sv[2];
		int r = inj(c, i, SYS_socketpair, AF_UNIX, f->r.sub | SOCK_CLOEXEC, 0,
			    sarg(c, S_STRUCT), 0, 0, NULL);
		if (!r)
			r = ckpt_mem_read(c->memfd[i], sarg(c, S_STRUCT), sv, sizeof(sv));
		if (!r && f->data)
			r = send_queue(c, i, sv[1], f);
		const struct ckpt_fd *pd = f->r.peer ? find_data(c, CKPT_FD_UNIX, f->r.peer) : NULL;
		if (!r && pd)
			r = send_queue(c, i, sv[0], pd);
		int32_t p0, p1;
		if (!r)
			r = park(c, i, sv[0], &p0);
		if (!r)
			r = robj_add(c, OBJ_UNIX, f->r.ino, i, p0);
		if (!r && f->r.peer) {
			r = park(c, i, sv[1], &p1);
			if (!r)
				r = robj_add(c, OBJ_UNIX, f->r.peer, i, p1);
		} else if (!r) {
			inj(c, i, SYS_close, (uint64_t) sv[1], 0, 0, 0, 0, 0,
			    NULL); /* peer closed */
		}
		if (r)
			return r;
		o = robj_find(c, OBJ_UNIX, f->r.ino);
	}
	return fetch(c, i, o->task, o->fd, nfd);
}

/* Bind unix socket @fd of task i to the name in @l (at S_STRUCT + 64 in the
 * scratch area, where it stays for sendto). A socket file the checkpointed
 * one left at the path is removed first (only a socket: anything else there
 * makes the bind fail). */
static int bind_unix_name(struct rctx *c, uint32_t i, long fd, const struct ckpt_unix_listen *l,
			  socklen_t *len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, l->name, l->name_len);
	socklen_t sl = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + l->name_len);
	*len = sl;
	int r = scratch_put(c, i, S_STRUCT + 64, &sa, sizeof(sa));
	if (r)
		return r;
	r = inj(c, i, SYS_bind, (uint64_t) fd, sarg(c, S_STRUCT + 64), sl, 0, 0, 0, NULL);
	if (r == -EADDRINUSE && l->name[0] == '/') {
		/* sun_path is NUL-terminated in the scratch copy (sa is zeroed
		 * past the name, which is shorter than sun_path or ends in NUL) */
		struct stat st;
		uint64_t path = sarg(c, S_STRUCT + 64) + offsetof(struct sockaddr_un, sun_path);
		int e = inj(c, i, SYS_newfstatat, (uint64_t) AT_FDCWD, path, sarg(c, S_STAT),
			    AT_SYMLINK_NOFOLLOW, 0, 0, NULL);
		if (!e)
			e = ckpt_mem_read(c->memfd[i], sarg(c, S_STAT), &st, sizeof(st));
		if (!e && S_ISSOCK(st.st_mode) &&
		    !inj(c, i, SYS_unlinkat, (uint64_t) AT_FDCWD, path, 0, 0, 0, 0, NULL))
			r = inj(c, i, SYS_bind, (uint64_t) fd, sarg(c, S_STRUCT + 64), sl, 0, 0, 0,
				NULL);
	}
	return r;
}

/* A unix socket listening on a name: socket, bind, listen. */
static int open_unix_listen(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd)
{
	struct ckpt_unix_listen l;
	memcpy(&l, f->data, sizeof(l));
	int r = inj(c, i, SYS_socket, AF_UNIX, l.type | SOCK_CLOEXEC, 0, 0, 0, 0, nfd);
	socklen_t sl;
	if (!r)
		r = bind_unix_name(c, i, *nfd, &l, &sl);
	if (!r)
		r = inj(c, i, SYS_listen, (uint64_t) *nfd, l.backlog ? l.backlog : 128, 0, 0, 0, 0,
			NULL);
	return r;
}

/* A unix datagram socket bound to a name: socket, bind, and its queued
 * datagrams sent to it again, by name, from a socket of the task's own that
 * is closed afterwards (the original senders are not kept). */
static int open_unix_bound(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd)
{
	struct ckpt_unix_listen l;
	memcpy(&l, f->data, sizeof(l));
	int r = inj(c, i, SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, 0, 0, 0, nfd);
	socklen_t sl;
	if (!r)
		r = bind_unix_name(c, i, *nfd, &l, &sl);
	const uint8_t *m = f->data + sizeof(l);
	uint32_t left = f->r.data_len - (uint32_t) sizeof(l);
	if (r || !left)
		return r;
	long tmp = -1;
	r = inj(c, i, SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, 0, 0, 0, &tmp);
	while (!r && left) {
		uint32_t ml;
		memcpy(&ml, m, 4);
		long w = 0;
		r = scratch_put(c, i, S_BPF, m + 4, ml);
		if (!r)
			r = inj(c, i, SYS_sendto, (uint64_t) tmp, sarg(c, S_BPF), ml,
				MSG_DONTWAIT | MSG_NOSIGNAL, sarg(c, S_STRUCT + 64), sl, &w);
		if (!r && w != (long) ml)
			r = -EIO;
		m += 4 + ml;
		left -= 4 + ml;
	}
	if (tmp >= 0)
		inj(c, i, SYS_close, (uint64_t) tmp, 0, 0, 0, 0, 0, NULL);
	return r;
}

static int open_fifo(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd)
{
	/* a reader and writer of our own, so neither open blocks */
	long anchor;
	int r = open_in(c, i, f->path, O_RDWR | O_NONBLOCK | O_CLOEXEC, &anchor);
	if (r)
		return r;
	r = open_in(c, i, f->path, (int) (f->r.oflags & O_ACCMODE) | O_NONBLOCK | O_CLOEXEC, nfd);
	struct stat st;
	if (!r)
		r = fstat_in(c, i, anchor, &st);
	if (!r && (st.st_ino != f->r.ino || st.st_dev != f->r.dev || !S_ISFIFO(st.st_mode)))
		r = -ESTALE;
	if (!r && f->data)
		r = set_pipe_size(c, i, anchor, f->r.sub, f->r.data_len);
	if (!r && f->data)
		r = write_data(c, i, anchor, f->data, f->r.data_len, false);
	inj(c, i, SYS_close, (uint64_t) anchor, 0, 0, 0, 0, 0, NULL);
	return r;
}

/* Set the int options @opts[k] whose @v[k] is non-zero on socket @fd of
 * task i (IPPROTO_IPV6 ones only on an AF_INET6 socket). */
static int set_sock_opts(struct rctx *c, uint32_t i, long fd, const int opts[4][2],
			 const uint32_t v[4], bool v6)
{
	int r = 0;
	for (int k = 0; k < 4 && !r; k++) {
		if (!v[k] || (opts[k][0] == IPPROTO_IPV6 && !v6))
			continue;
		int one = 1;
		r = scratch_put(c, i, S_STRUCT, &one, sizeof(one));
		if (!r)
			r = inj(c, i, SYS_setsockopt, (uint64_t) fd, (uint64_t) opts[k][0],
				(uint64_t) opts[k][1], sarg(c, S_STRUCT), sizeof(one), 0, NULL);
	}
	return r;
}

/* bind (@connect: connect) socket @fd of task i to @addr/@port, the
 * sockaddr put in the scratch area at S_STRUCT + 64. */
static int sock_addr_call(struct rctx *c, uint32_t i, long fd, uint16_t family,
			  const uint8_t addr[16], uint16_t port, bool connect)
{
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} sa = {0};
	socklen_t sl;
	if (family == AF_INET) {
		sa.v4.sin_family = AF_INET;
		sa.v4.sin_port = htons(port);
		memcpy(&sa.v4.sin_addr, addr, 4);
		sl = sizeof(sa.v4);
	} else {
		sa.v6.sin6_family = AF_INET6;
		sa.v6.sin6_port = htons(port);
		memcpy(&sa.v6.sin6_addr, addr, 16);
		sl = sizeof(sa.v6);
	}
	int r = scratch_put(c, i, S_STRUCT + 64, &sa, sl);
	if (!r)
		r = inj(c, i, connect ? SYS_connect : SYS_bind, (uint64_t) fd,
			sarg(c, S_STRUCT + 64), sl, 0, 0, 0, NULL);
	return r;
}

static int open_listen(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd)
{
	struct ckpt_inet_listen l;
	memcpy(&l, f->data, sizeof(l));
	int r = inj(c, i, SYS_socket, l.family, SOCK_STREAM | SOCK_CLOEXEC, 0, 0, 0, 0, nfd);
	if (r)
		return r;
	static const int opts[4][2] = {{SOL_SOCKET, SO_REUSEADDR},
				       {SOL_SOCKET, SO_REUSEPORT},
				       {IPPROTO_IPV6, IPV6_V6ONLY},
				       {IPPROTO_TCP, TCP_NODELAY}};
	const uint32_t v[4] = {l.reuseaddr, l.reuseport, l.v6only, l.nodelay};
	r = set_sock_opts(c, i, *nfd, opts, v, l.family == AF_INET6);
	if (!r)
		r = sock_addr_call(c, i, *nfd, l.family, l.addr, l.port, false);
	if (!r)
		r = inj(c, i, SYS_listen, (uint64_t) *nfd, l.backlog ? l.backlog : 128, 0, 0, 0, 0,
			NULL);
	return r;
}

/* A UDP socket: options, bound where it was (if it was), connected to its
 * peer (if it was). What was queued on it at the checkpoint is not there. */
static int open_udp(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd)
{
	struct ckpt_inet_udp u;
	memcpy(&u, f->data, sizeof(u));
	int r = inj(c, i, SYS_socket, u.family, SOCK_DGRAM | SOCK_CLOEXEC, 0, 0, 0, 0, nfd);
	if (r)
		return r;
	static const int opts[4][2] = {{SOL_SOCKET, SO_REUSEADDR},
				       {SOL_SOCKET, SO_REUSEPORT},
				       {IPPROTO_IPV6, IPV6_V6ONLY},
				       {SOL_SOCKET, SO_BROADCAST}};
	const uint32_t v[4] = {u.reuseaddr, u.reuseport, u.v6only, u.broadcast};
	static const uint8_t any[16];
	r = set_sock_opts(c, i, *nfd, opts, v, u.family == AF_INET6);
	if (!r && (u.port || memcmp(u.addr, any, 16)))
		r = sock_addr_call(c, i, *nfd, u.family, u.addr, u.port, false);
	if (!r && u.rport)
		r = sock_addr_call(c, i, *nfd, u.family, u.raddr, u.rport, true);
	return r;
}

#ifndef TFD_IOC_SET_TICKS /* <linux/timerfd.h>, not in glibc's <sys/timerfd.h> */
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

/* A timerfd: created on its clock, armed with the time that was left and
 * its period (relative: the time between dump and restore does not count),
 * its unread expirations put back (TFD_IOC_SET_TICKS). */
static int open_timerfd(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd)
{
	struct ckpt_timerfd tf;
	memcpy(&tf, f->data, sizeof(tf));
	int r = inj(c, i, SYS_timerfd_create, tf.clockid, O_CLOEXEC | (f->r.oflags & O_NONBLOCK), 0,
		    0, 0, 0, nfd);
	if (r)
		return r;
	if (tf.value_sec || tf.value_nsec) {
		struct itimerspec its = {
			.it_interval = {.tv_sec = tf.interval_sec, .tv_nsec = tf.interval_nsec},
			.it_value = {.tv_sec = tf.value_sec, .tv_nsec = tf.value_nsec}};
		r = scratch_put(c, i, S_STRUCT, &its, sizeof(its));
		if (!r)
			r = inj(c, i, SYS_timerfd_settime, (uint64_t) *nfd, 0, sarg(c, S_STRUCT), 0,
				0, 0, NULL);
	}
	if (!r && tf.ticks) {
		r = scratch_put(c, i, S_STRUCT, &tf.ticks, sizeof(tf.ticks));
		if (!r)
			r = inj(c, i, SYS_ioctl, (uint64_t) *nfd, TFD_IOC_SET_TICKS,
				sarg(c, S_STRUCT), 0, 0, 0, NULL);
	}
	return r;
}

/* After every fd of task i is in place: the epoll sets' registrations. */
static int restore_epoll(struct rctx *c, uint32_t i, const struct ckpt_fd *f, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	for (uint32_t k = 0; k < f->r.data_len / sizeof(struct ckpt_epoll_tgt); k++) {
		struct ckpt_epoll_tgt tg;
		memcpy(&tg, f->data + k * sizeof(tg), sizeof(tg));
		struct epoll_event ev = {.events = tg.events, .data.u64 = tg.data};
		int r = scratch_put(c, i, S_STRUCT, &ev, sizeof(ev));
		if (!r)
			r = inj(c, i, SYS_epoll_ctl, (uint64_t) f->r.fd, EPOLL_CTL_ADD,
				(uint64_t) tg.tfd, sarg(c, S_STRUCT), 0, 0, NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: epoll fd %d: adding fd %d: %s",
					   t->r.nspid, f->r.fd, tg.tfd, strerror(-r));
	}
	return 0;
}

static const char *fd_kind(uint32_t type)
{
	static const char *const n[] = {"?",
					"file",
					"directory",
					"device",
					"stdio",
					"pipe",
					"FIFO",
					"eventfd",
					"epoll set",
					"unix socket",
					"listening TCP socket",
					"TCP socket",
					"memfd",
					"UDP socket",
					"signalfd",
					"timerfd",
					"listening unix socket",
					"bound unix datagram socket"};
	return type < URS_ARRAY_SIZE(n) ? n[type] : "?";
}

static int open_shm_fd(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd);

/*
 * Open @path in task i as the task itself would: the puppet takes the
 * task's groups, fs uid/gid and effective capabilities for the openat2 (no
 * symlink, no /proc magic link on the way), then gets its own back. Used
 * where the file is chosen by its path rather than by its identity, so
 * that the restore never hands the task a file it could not open itself.
 */
static int open_as_task(struct rctx *c, uint32_t i, const char *path, int flags, long *fd)
{
	const struct ckpt_task_rec *t = &c->img.tasks[i].r;
	struct open_how how = {.flags = (uint64_t) flags,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct own[2], as[2];
	long ngroups = 0, ofsuid = -1, ofsgid = -1;
	size_t l = strlen(path) + 1;
	if (l > PATH_MAX || t->ngroups > CKPT_MAX_GROUPS)
		return -ENAMETOOLONG;
	/* the puppet's own: groups, capabilities (fs ids come back from setfs*) */
	int r = scratch_put(c, i, S_PATH, path, l);
	if (!r)
		r = scratch_put(c, i, S_STRUCT, &how, sizeof(how));
	if (!r)
		r = scratch_put(c, i, S_STRUCT + 64, &h, sizeof(h));
	if (!r)
		r = inj(c, i, SYS_getgroups, CKPT_MAX_GROUPS, sarg(c, S_BPF + 1024), 0, 0, 0, 0,
			&ngroups);
	if (!r)
		r = inj(c, i, SYS_capget, sarg(c, S_STRUCT + 64), sarg(c, S_STRUCT + 128), 0, 0, 0,
			0, NULL);
	if (!r)
		r = ckpt_mem_read(c->memfd[i], sarg(c, S_STRUCT + 128), own, sizeof(own));
	if (r)
		return r;
	/* become the task for the open (groups only when they differ: a user
	 * namespace may deny setgroups) */
	uint32_t og[CKPT_MAX_GROUPS];
	bool set_groups = (uint64_t) ngroups != t->ngroups;
	if (!set_groups && ngroups > 0) {
		r = ckpt_mem_read(c->memfd[i], sarg(c, S_BPF + 1024), og,
				  (size_t) ngroups * sizeof(uint32_t));
		set_groups = r || memcmp(og, t->groups, (size_t) ngroups * sizeof(uint32_t));
	}
	if (!r && set_groups)
		r = scratch_put(c, i, S_BPF, t->groups, t->ngroups * sizeof(uint32_t));
	if (!r && set_groups)
		r = inj(c, i, SYS_setgroups, t->ngroups, sarg(c, S_BPF), 0, 0, 0, 0, NULL);
	if (!r)
		r = inj(c, i, SYS_setfsgid, t->gid[3], 0, 0, 0, 0, 0, &ofsgid);
	if (!r)
		r = inj(c, i, SYS_setfsuid, t->uid[3], 0, 0, 0, 0, 0, &ofsuid);
	/* setfs*() never fail: they return the old id. Read them back (-1
	 * changes nothing): an open as fsuid 0 would not be the task's. */
	long now_uid = -1, now_gid = -1;
	if (!r)
		r = inj(c, i, SYS_setfsuid, (uint64_t) -1, 0, 0, 0, 0, 0, &now_uid);
	if (!r)
		r = inj(c, i, SYS_setfsgid, (uint64_t) -1, 0, 0, 0, 0, 0, &now_gid);
	if (!r && ((uint32_t) now_uid != t->uid[3] || (uint32_t) now_gid != t->gid[3]))
		r = -EPERM;
	for (int k = 0; k < 2; k++)
		as[k] = (struct __user_cap_data_struct){(uint32_t) (t->cap_eff >> (32 * k)) &
								own[k].permitted,
							own[k].permitted, own[k].inheritable};
	if (!r)
		r = scratch_put(c, i, S_STRUCT + 192, as, sizeof(as));
	if (!r)
		r = inj(c, i, SYS_capset, sarg(c, S_STRUCT + 64), sarg(c, S_STRUCT + 192), 0, 0, 0,
			0, NULL);
	int o = r ? r
		  : inj(c, i, SYS_openat2, (uint64_t) AT_FDCWD, sarg(c, S_PATH), sarg(c, S_STRUCT),
			sizeof(how), 0, 0, fd);
	/* and back: capabilities first (setfsuid needs CAP_SETUID) */
	int b = scratch_put(c, i, S_STRUCT + 192, own, sizeof(own));
	if (!b)
		b = inj(c, i, SYS_capset, sarg(c, S_STRUCT + 64), sarg(c, S_STRUCT + 192), 0, 0, 0,
			0, NULL);
	if (!b && ofsuid >= 0)
		b = inj(c, i, SYS_setfsuid, (uint64_t) ofsuid, 0, 0, 0, 0, 0, NULL);
	if (!b && ofsgid >= 0)
		b = inj(c, i, SYS_setfsgid, (uint64_t) ofsgid, 0, 0, 0, 0, 0, NULL);
	if (!b && set_groups)
		b = inj(c, i, SYS_setgroups, (uint64_t) ngroups, sarg(c, S_BPF + 1024), 0, 0, 0, 0,
			NULL);
	/* the fsuid going back to 0 raises the fs capabilities in the effective
	 * set by itself: ours exactly, once more */
	if (!b)
		b = inj(c, i, SYS_capset, sarg(c, S_STRUCT + 64), sarg(c, S_STRUCT + 192), 0, 0, 0,
			0, NULL);
	if (b && !o && *fd >= 0) /* the puppet kept the task's identity: do not go on */
		inj(c, i, SYS_close, (uint64_t) *fd, 0, 0, 0, 0, 0, NULL);
	return b ? b : o;
}

/*
 * fd @f of task i is not the file that was open at checkpoint time. On the
 * root it was checkpointed in, that is an error. Restored onto another root
 * (a new container's rootfs: `podman container restore --import` unpacks
 * the writable layer anew, so every file of it is a new inode), a regular
 * file is reopened by its path, as the task itself (open_as_task), and
 * taken if it is still a regular file reaching the saved position, as CRIU
 * does. The decision comes from the authenticated image (the task's
 * recorded root) and the restore's own view of the root. 1: replaced.
 */
static int reopen_by_path(struct rctx *c, uint32_t i, const struct ckpt_fd *f, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	if (f->r.type != CKPT_FD_REG || !f->path || !t->has_root ||
	    ckpt_root_same(&t->root, &c->root_now))
		return 0;
	long fd = -1;
	struct stat st;
	const char *what = "not the file that was open at checkpoint time, and reopening it "
			   "by path as the task failed";
	int r = open_as_task(c, i, f->path, (int) (f->r.oflags & OPEN_MASK) | O_CLOEXEC, &fd);
	if (!r)
		r = fstat_in(c, i, fd, &st);
	if (!r && (!S_ISREG(st.st_mode) || (uint64_t) st.st_size < f->r.pos)) {
		what = "not the file that was open at checkpoint time, and the file now at "
		       "that path is not a regular file reaching the saved position";
		r = -ESTALE;
	}
	if (!r)
		r = place(c, i, fd, f); /* its flags came with the open */
	else if (fd >= 0)
		inj(c, i, SYS_close, (uint64_t) fd, 0, 0, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(err, r,
				   "restore: pid %d: fd %d: %s is %s (saved position %llu): %s",
				   c->img.tasks[i].r.nspid, f->r.fd, f->path, what,
				   (unsigned long long) f->r.pos, strerror(-r));
	return 1;
}

/* A new fd in task i for @f (not a duplicate, not external stdio);
 * *setfl: its status flags are still to be set (F_SETFL). */
static int open_one(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *fd, bool *setfl)
{
	*setfl = true;
	if (f->r.xtask) {
		*setfl = false;
		return fetch(c, i, f->r.xtask - 1, f->r.xfd, fd);
	}
	int r;
	switch (f->r.type) {
	case CKPT_FD_PIPE:
		return open_pipe(c, i, f, fd);
	case CKPT_FD_FIFO:
		return open_fifo(c, i, f, fd);
	case CKPT_FD_UNIX:
		return open_unix(c, i, f, fd);
	case CKPT_FD_EVENTFD:
		*setfl = false;
		return inj(c, i, SYS_eventfd2, 0,
			   O_CLOEXEC | (f->r.sub ? 1u /* EFD_SEMAPHORE */ : 0) |
				   (f->r.oflags & O_NONBLOCK),
			   0, 0, 0, 0, fd);
	case CKPT_FD_EPOLL:
		*setfl = false;
		return inj(c, i, SYS_epoll_create1, O_CLOEXEC, 0, 0, 0, 0, 0, fd);
	case CKPT_FD_TCP_LISTEN:
		return open_listen(c, i, f, fd);
	case CKPT_FD_UDP:
		return open_udp(c, i, f, fd);
	case CKPT_FD_SIGNALFD:
		*setfl = false;
		r = scratch_put(c, i, S_STRUCT, &f->r.pos, sizeof(f->r.pos));
		return r ? r
			 : inj(c, i, SYS_signalfd4, (uint64_t) -1, sarg(c, S_STRUCT), 8,
			       O_CLOEXEC | (f->r.oflags & O_NONBLOCK), 0, 0, fd);
	case CKPT_FD_TIMERFD:
		*setfl = false;
		return open_timerfd(c, i, f, fd);
	case CKPT_FD_UNIX_LISTEN:
		return open_unix_listen(c, i, f, fd);
	case CKPT_FD_UNIX_BOUND:
		return open_unix_bound(c, i, f, fd);
	case CKPT_FD_TCP_CLOSED:
		return inj(c, i, SYS_socket, f->r.sub, SOCK_STREAM | SOCK_CLOEXEC, 0, 0, 0, 0, fd);
	case CKPT_FD_SHM:
		return open_shm_fd(c, i, f, fd);
	default:
		*setfl = false;
		return open_in(c, i, f->path, (int) (f->r.oflags & OPEN_MASK) | O_CLOEXEC, fd);
	}
}

/* @f's new fd moved into place, its flags; an eventfd's counter */
static int place_one(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long fd, bool setfl)
{
	int r = place(c, i, fd, f);
	if (!r && setfl)
		r = inj(c, i, SYS_fcntl, (uint64_t) f->r.fd, F_SETFL, f->r.oflags & SETFL_MASK, 0,
			0, 0, NULL);
	if (!r && f->r.type == CKPT_FD_EVENTFD && f->r.pos && !f->r.xtask) {
		/* eventfd2 takes an unsigned int: the counter is added by a write */
		uint64_t v = f->r.pos;
		r = scratch_put(c, i, S_STRUCT, &v, sizeof(v));
		long w = 0;
		if (!r)
			r = inj(c, i, SYS_write, (uint64_t) f->r.fd, sarg(c, S_STRUCT), 8, 0, 0, 0,
				&w);
		if (!r && w != 8)
			r = -EIO;
	}
	return r;
}

/* A file, directory or device: the one open at checkpoint time (or, on a
 * new root, the file at its path: reopen_by_path), at its position. */
static int check_file(struct rctx *c, uint32_t i, const struct ckpt_fd *f, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	struct stat st;
	int r = fstat_in(c, i, f->r.fd, &st);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: fstat fd %d: %s", t->r.nspid, f->r.fd,
				   strerror(-r));
	bool same = f->r.type == CKPT_FD_CHR
			    ? st.st_rdev == f->r.rdev
			    : same_file(c, f->r.dev, f->r.ino, st.st_dev, st.st_ino);
	if (!same && (r = reopen_by_path(c, i, f, err)) < 0)
		return r;
	if (!same && !r)
		return urs_err_set(err, -ESTALE,
				   "restore: pid %d: fd %d: %s is not the file that was open at "
				   "checkpoint time",
				   t->r.nspid, f->r.fd, f->path);
	if (f->r.type == CKPT_FD_REG && f->r.pos) {
		long pos;
		r = inj(c, i, SYS_lseek, (uint64_t) f->r.fd, f->r.pos, SEEK_SET, 0, 0, 0, &pos);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: fd %d: lseek: %s", t->r.nspid,
					   f->r.fd, strerror(-r));
	}
	return 0;
}

/* fd @f of task i: a duplicate, external stdio, or a new fd put in place */
static int restore_fd(struct rctx *c, uint32_t i, const struct ckpt_fd *f, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	int cloexec = f->r.cloexec ? O_CLOEXEC : 0;
	int r;
	if (f->r.dup_of != -1) {
		r = inj(c, i, SYS_dup3, (uint64_t) f->r.dup_of, (uint64_t) f->r.fd,
			(uint64_t) cloexec, 0, 0, 0, NULL);
		return r ? urs_err_set(err, r, "restore: pid %d: dup fd %d: %s", t->r.nspid,
				       f->r.fd, strerror(-r))
			 : 0;
	}
	if (f->r.type == CKPT_FD_EXT) {
		/* the restorer's own stdio of that number (inherited by the puppet) */
		r = inj(c, i, SYS_fcntl, (uint64_t) f->r.fd, F_SETFD, cloexec ? FD_CLOEXEC : 0, 0,
			0, 0, NULL);
		return r ? urs_err_set(err, r,
				       "restore: pid %d: fd %d was stdio replaced at restore, but "
				       "the restore has no fd %d: %s",
				       t->r.nspid, f->r.fd, f->r.fd, strerror(-r))
			 : 0;
	}
	long fd = -1;
	bool setfl;
	if ((r = open_one(c, i, f, &fd, &setfl))) {
		if (fd >= 0)
			inj(c, i, SYS_close, (uint64_t) fd, 0, 0, 0, 0, 0, NULL);
		return urs_err_set(err, r, "restore: pid %d: fd %d (%s%s%s): %s", t->r.nspid,
				   f->r.fd, fd_kind(f->r.type), f->path ? " " : "",
				   f->path ? f->path : "", strerror(-r));
	}
	if ((r = place_one(c, i, f, fd, setfl)))
		return urs_err_set(err, r, "restore: pid %d: fd %d (%s): %s", t->r.nspid, f->r.fd,
				   fd_kind(f->r.type), strerror(-r));
	if (f->r.xtask ||
	    (f->r.type != CKPT_FD_REG && f->r.type != CKPT_FD_DIR && f->r.type != CKPT_FD_CHR))
		return 0;
	return check_file(c, i, f, err);
}

static int restore_fds(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	int32_t maxfd = 2;
	for (uint32_t k = 0; k < t->nfds; k++)
		if (t->fds[k].r.fd > maxfd)
			maxfd = t->fds[k].r.fd;
	c->park_base[i] = maxfd + 1;
	c->park_next[i] = 0;
	for (uint32_t k = 0; k < t->nfds; k++) {
		int r = restore_fd(c, i, &t->fds[k], err);
		if (r)
			return r;
	}
	for (uint32_t k = 0; k < t->nfds; k++) {
		const struct ckpt_fd *f = &t->fds[k];
		if (f->r.type == CKPT_FD_EPOLL && f->r.dup_of == -1 && !f->r.xtask) {
			int r = restore_epoll(c, i, f, err);
			if (r)
				return r;
		}
	}
	return 0;
}

/* ---- shared memory ------------------------------------------------------------
 * Each saved shmem object (shared anonymous memory, /dev/zero, a memfd)
 * becomes one memfd: created in the first task that maps it (memfd_create +
 * ftruncate injected), filled from here through /proc/PID/fd/N (pwrite of the
 * saved runs), sealed as it was, and parked in that task. Every task that
 * mapped it maps it MAP_SHARED | MAP_FIXED at the saved address, protection
 * and offset, taking the fd from the parked place (pidfd_getfd), so writes
 * of one are seen by the others and by children forked later. Runs after the
 * task's fds (parking needs them); the parked fd goes with the others. */

#define OBJ_SHM 100 /* struct robj kind; ino = the object's index */
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 2u
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#endif
/* added once every mapping exists: F_SEAL_FUTURE_WRITE allows the writable
 * mappings made before it (as at the dump), F_SEAL_SEAL must come last; the
 * others before any mapping (F_SEAL_WRITE refuses writable ones) */
#define SEALS_LATE (0x0001u /* F_SEAL_SEAL */ | 0x0010u /* F_SEAL_FUTURE_WRITE */)

/* Fill the new memfd fd of task i with the object's saved pages and seals;
 * @why (may be NULL) names a chunk of a lazy restore that does not
 * authenticate. */
static int shm_fill(struct rctx *c, uint32_t i, long fd, const struct ckpt_shm *o,
		    struct urs_err *why)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%ld", c->tr[i].pid, fd);
	_cleanup_close_ int hfd = open(path, O_RDWR | O_CLOEXEC);
	if (hfd < 0)
		return -errno;
	for (uint32_t k = 0; k < o->nruns; k++) {
		const struct ckpt_run *run = &o->runs[k];
		const uint8_t *p = page_data(c) + run->off;
		uint64_t n = run->npages * CKPT_PAGE_SIZE, at = run->vaddr;
		int v = c->lz ? ckpt_lazy_verify(c->lz, run->off, n, why) : 0;
		if (v)
			return v;
		if (at + n > o->r.size) /* the last page of an object of odd size */
			n = o->r.size - at;
		if ((v = urs_pwrite_all(hfd, p, n, at)))
			return v;
		c->st->pages += run->npages;
	}
	if ((o->r.seals & ~SEALS_LATE) &&
	    fcntl(hfd, F_ADD_SEALS, (int) (o->r.seals & ~SEALS_LATE)) < 0)
		return -errno;
	return 0;
}

/* Does a task after i map object id, or open it (an fd of its own)? */
static bool shm_used_later(const struct rctx *c, uint32_t i, uint32_t id)
{
	for (uint32_t j = i + 1; j < c->img.ntasks; j++) {
		const struct ckpt_task *t = &c->img.tasks[j];
		for (uint32_t v = 0; v < t->nvmas; v++)
			if (t->vmas[v].r.kind == CKPT_VMA_SHMEM && t->vmas[v].r.shm == id)
				return true;
		for (uint32_t k = 0; k < t->nfds; k++)
			if (t->fds[k].r.type == CKPT_FD_SHM && t->fds[k].r.dup_of == -1 &&
			    !t->fds[k].r.xtask && t->fds[k].r.sub == id)
				return true;
	}
	return false;
}

/* The late seals of object id, through its parked fd. */
static int shm_seal_late(struct rctx *c, uint32_t id)
{
	uint32_t seals = c->img.shms[id].r.seals & SEALS_LATE;
	const struct robj *o = robj_find(c, OBJ_SHM, id);
	if (!seals || !o)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", c->tr[o->task].pid, o->fd);
	_cleanup_close_ int hfd = open(path, O_RDWR | O_CLOEXEC);
	if (hfd < 0 || fcntl(hfd, F_ADD_SEALS, (int) seals) < 0)
		return -errno;
	return 0;
}

/* Create object id in task i and park it there (@why: as shm_fill). */
static int shm_create(struct rctx *c, uint32_t i, uint32_t id, struct urs_err *why)
{
	const struct ckpt_shm *o = &c->img.shms[id];
	char name[CKPT_SHM_NAME];
	snprintf(name, sizeof(name), "%s",
		 (o->r.flags & CKPT_SHM_MEMFD) ? o->r.name : "shared-anon");
	long fd = -1;
	int r = scratch_put(c, i, S_PATH, name, strlen(name) + 1);
	if (!r)
		r = inj(c, i, SYS_memfd_create, sarg(c, S_PATH), MFD_CLOEXEC | MFD_ALLOW_SEALING, 0,
			0, 0, 0, &fd);
	if (r)
		return r;
	r = inj(c, i, SYS_ftruncate, (uint64_t) fd, o->r.size, 0, 0, 0, 0, NULL);
	if (!r && c->before_charged) { /* our pwrites are charged to us */
		r = c->before_charged(c->charged_ctx);
		c->before_charged = NULL;
	}
	if (!r)
		r = shm_fill(c, i, fd, o, why);
	if (r) {
		inj(c, i, SYS_close, (uint64_t) fd, 0, 0, 0, 0, 0, NULL);
		return r;
	}
	int32_t slot;
	r = park(c, i, fd, &slot); /* closes fd */
	return r ? r : robj_add(c, OBJ_SHM, id, i, slot);
}

/* An fd of a memfd: an open file description of its own — the object
 * reopened through /proc/self/fd in the task with the saved access mode, or,
 * without a /proc there, the parked fd's — at the saved position. */
static int open_shm_fd(struct rctx *c, uint32_t i, const struct ckpt_fd *f, long *nfd)
{
	const struct robj *o = robj_find(c, OBJ_SHM, f->r.sub);
	int r = 0;
	if (!o) {
		r = shm_create(c, i, f->r.sub, NULL);
		if (r)
			return r;
		o = robj_find(c, OBJ_SHM, f->r.sub);
	}
	long got = -1, re = -1;
	r = fetch(c, i, o->task, o->fd, &got);
	if (r)
		return r;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%ld", got);
	if (!open_in(c, i, path, (int) (f->r.oflags & O_ACCMODE) | O_CLOEXEC, &re)) {
		inj(c, i, SYS_close, (uint64_t) got, 0, 0, 0, 0, 0, NULL);
		got = re;
	}
	long pos = 0;
	if (f->r.pos)
		r = inj(c, i, SYS_lseek, (uint64_t) got, f->r.pos, SEEK_SET, 0, 0, 0, &pos);
	if (r) {
		inj(c, i, SYS_close, (uint64_t) got, 0, 0, 0, 0, 0, NULL);
		return r;
	}
	*nfd = got;
	return 0;
}

static int restore_shm(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	long fd = -1; /* a fetched fd of object cur (not the parked one) */
	uint32_t cur = UINT32_MAX;
	int r = 0;
	for (uint32_t v = 0; v < t->nvmas && !r; v++) {
		const struct ckpt_vma_rec *m = &t->vmas[v].r;
		if (m->kind != CKPT_VMA_SHMEM)
			continue;
		const struct robj *o = robj_find(c, OBJ_SHM, m->shm);
		if (!o) {
			struct urs_err why = {{0}};
			r = shm_create(c, i, m->shm, &why);
			if (r)
				return urs_err_set(err, r,
						   "restore: pid %d: creating shared memory object "
						   "%u: %s",
						   t->r.nspid, m->shm,
						   why.msg[0] ? why.msg : strerror(-r));
			o = robj_find(c, OBJ_SHM, m->shm);
		}
		long mfd = o->fd;
		if (o->task != i && cur != m->shm) {
			if (fd >= 0)
				inj(c, i, SYS_close, (uint64_t) fd, 0, 0, 0, 0, 0, NULL);
			fd = -1;
			cur = UINT32_MAX;
			r = fetch(c, i, o->task, o->fd, &fd);
			if (r)
				break;
			cur = m->shm;
		}
		if (o->task != i)
			mfd = fd;
		long ret = 0;
		r = inj(c, i, SYS_mmap, m->start, m->end - m->start, m->prot,
			(uint64_t) (MAP_SHARED | MAP_FIXED), (uint64_t) mfd, m->pgoff, &ret);
		if (!r && (uint64_t) ret != m->start)
			r = -EFAULT;
	}
	if (fd >= 0)
		inj(c, i, SYS_close, (uint64_t) fd, 0, 0, 0, 0, 0, NULL);
	/* objects this task is the last to map or open: every mapping exists now */
	uint8_t done[CKPT_MAX_SHM / 8] = {0};
	for (uint32_t v = 0; v < t->nvmas + t->nfds && !r; v++) {
		const struct ckpt_fd *f = v >= t->nvmas ? &t->fds[v - t->nvmas] : NULL;
		uint32_t id = f ? f->r.sub : t->vmas[v].r.shm;
		if (f ? f->r.type != CKPT_FD_SHM || f->r.dup_of != -1 || f->r.xtask
		      : t->vmas[v].r.kind != CKPT_VMA_SHMEM)
			continue;
		if (done[id / 8] & (1u << (id % 8)))
			continue;
		done[id / 8] |= (uint8_t) (1u << (id % 8));
		if (!shm_used_later(c, i, id))
			r = shm_seal_late(c, id);
	}
	if (r)
		return urs_err_set(err, r, "restore: pid %d: mapping shared memory: %s", t->r.nspid,
				   strerror(-r));
	return 0;
}

/* ---- the rest of the kernel state -------------------------------------------- */

/* The task's working directory, umask, name and personality. */
static int restore_cwd_name(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	int r = scratch_put(c, i, S_PATH, t->cwd, strlen(t->cwd) + 1);
	if (!r)
		r = inj(c, i, SYS_chdir, sarg(c, S_PATH), 0, 0, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: chdir %s: %s", t->r.nspid, t->cwd,
				   strerror(-r));
	inj(c, i, SYS_umask, t->r.umask & 0777, 0, 0, 0, 0, 0, NULL);
	char comm[16];
	memcpy(comm, t->r.comm, sizeof(comm));
	comm[15] = 0;
	r = scratch_put(c, i, S_STRUCT, comm, sizeof(comm));
	if (!r)
		r = inj(c, i, SYS_prctl, PR_SET_NAME, sarg(c, S_STRUCT), 0, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: task name: %s", t->r.nspid,
				   strerror(-r));
	r = inj(c, i, SYS_personality, t->r.personality, 0, 0, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: personality: %s", t->r.nspid,
				   strerror(-r));
	return 0;
}

/* The task's signal handlers and alternate signal stack. */
static int restore_sigactions(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	int r;
	for (unsigned s = 1; s <= CKPT_NSIG; s++) {
		const struct ckpt_sigact *sa = &t->r.sigact[s - 1];
		if (!sa->handler || s == SIGKILL || s == SIGSTOP)
			continue;
		r = scratch_put(c, i, S_STRUCT, sa, sizeof(*sa));
		if (!r)
			r = inj(c, i, SYS_rt_sigaction, s, sarg(c, S_STRUCT), 0, 8, 0, 0, NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: sigaction %u: %s", t->r.nspid,
					   s, strerror(-r));
	}
	if (!(t->r.altstack_flags & SS_DISABLE) && t->r.altstack_size) {
		stack_t ss = {.ss_sp = (void *) (uintptr_t) t->r.altstack_sp,
			      .ss_size = t->r.altstack_size,
			      .ss_flags = (int) (t->r.altstack_flags & SS_AUTODISARM)};
		r = scratch_put(c, i, S_STRUCT, &ss, sizeof(ss));
		if (!r)
			r = inj(c, i, SYS_sigaltstack, sarg(c, S_STRUCT), 0, 0, 0, 0, 0, NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: sigaltstack: %s", t->r.nspid,
					   strerror(-r));
	}
	return 0;
}

/* What the kernel holds a user address of for the task: its rseq area,
 * robust futex list and clear_child_tid. */
static int restore_user_ptrs(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	int r;
	if (t->r.rseq_ptr) {
		r = inj(c, i, SYS_rseq, t->r.rseq_ptr, t->r.rseq_len, 0, t->r.rseq_sig, 0, 0, NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: rseq: %s", t->r.nspid,
					   strerror(-r));
	}
	if (t->r.robust_head) {
		r = inj(c, i, SYS_set_robust_list, t->r.robust_head, t->r.robust_len, 0, 0, 0, 0,
			NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: robust list: %s", t->r.nspid,
					   strerror(-r));
	}
	/* a puppet cloned here has none; an adopted init may have one */
	if (t->r.clear_child_tid || (i == 0 && c->puppet > 0)) {
		r = inj(c, i, SYS_set_tid_address, t->r.clear_child_tid, 0, 0, 0, 0, 0, NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: set_tid_address: %s",
					   t->r.nspid, strerror(-r));
	}
	return 0;
}

/* The task's interval timers (ITIMER_REAL, _VIRTUAL, _PROF). */
static int restore_itimers(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	for (unsigned which = 0; which < 3; which++) {
		int64_t it[4];
		memcpy(it, t->r.itimer[which], sizeof(it));
		if (!it[0] && !it[1] && !it[2] && !it[3])
			continue; /* disarmed */
		if (!it[2] && !it[3]) {
			/* periodic timer that fired with its signal still pending: the
			 * kernel re-arms it when the signal is taken; arm it for one
			 * interval (the signal itself is re-queued below) */
			it[2] = it[0];
			it[3] = it[1];
		}
		int r = scratch_put(c, i, S_STRUCT, it, sizeof(it));
		if (!r)
			r = inj(c, i, SYS_setitimer, which, sarg(c, S_STRUCT), 0, 0, 0, 0, NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: setitimer %u: %s", t->r.nspid,
					   which, strerror(-r));
	}
	return 0;
}

/* The rest of the task's kernel state, then its resource limits and prctl flags. */
static int restore_misc(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	pid_t pid = c->tr[i].pid;
	int r = restore_cwd_name(c, i, err);
	if (!r)
		r = restore_sigactions(c, i, err);
	if (!r)
		r = restore_user_ptrs(c, i, err);
	if (!r)
		r = restore_itimers(c, i, err);
	if (r)
		return r;
	for (unsigned k = 0; k < CKPT_NRLIMIT; k++) {
		struct rlimit rl = {t->r.rlim[k].cur, t->r.rlim[k].max};
		if (prlimit(pid, (__rlimit_resource_t) k, &rl, NULL) < 0)
			return urs_err_set(err, -errno, "restore: pid %d: rlimit %u: %m",
					   t->r.nspid, k);
	}
	/* the puppet's parent-death signal is ours, not the task's */
	if (!(i == 0 && c->puppet > 0)) /* an adopted init keeps its supervisor's leash */
		inj(c, i, SYS_prctl, PR_SET_PDEATHSIG, 0, 0, 0, 0, 0, NULL);
	if (t->r.no_new_privs) {
		r = inj(c, i, SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0, NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: no_new_privs: %s", t->r.nspid,
					   strerror(-r));
	}
	return 0;
}

/* Install the task's seccomp filters, oldest first. The puppet was seized
 * with PTRACE_O_SUSPEND_SECCOMP, so they take effect only once it is let go. */
static int restore_seccomp(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	for (uint32_t k = 0; k < t->nseccomp; k++) {
		const struct ckpt_seccomp *sc = &t->seccomp[k];
		struct {
			uint16_t len;
			uint16_t pad[3];
			uint64_t filter;
		} prog = {.len = (uint16_t) sc->len, .filter = sarg(c, S_BPF)};
		int r = scratch_put(c, i, S_BPF, sc->insns, (size_t) sc->len * 8);
		if (!r)
			r = scratch_put(c, i, S_STRUCT, &prog, sizeof(prog));
		if (!r)
			r = inj(c, i, SYS_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, sc->flags,
				sarg(c, S_STRUCT), 0, 0, 0, NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: seccomp filter %u: %s",
					   t->r.nspid, k, strerror(-r));
	}
	return 0;
}

/* Our own credentials: every puppet starts with them, so only what differs
 * in the image needs injected syscalls. */
struct own_creds {
	uint32_t uid[4], gid[4];
	uint32_t ngroups;
	uint32_t groups[CKPT_MAX_GROUPS];
	uint64_t eff, prm, inh, bnd, amb;
	bool ok;
};

static void read_own_creds(struct own_creds *o)
{
	memset(o, 0, sizeof(*o));
	uid_t u[3];
	gid_t g[3];
	gid_t groups[CKPT_MAX_GROUPS];
	if (getresuid(&u[0], &u[1], &u[2]) < 0 || getresgid(&g[0], &g[1], &g[2]) < 0)
		return;
	int n = getgroups(CKPT_MAX_GROUPS, groups);
	if (n < 0)
		return;
	for (int k = 0; k < 3; k++) {
		o->uid[k] = u[k];
		o->gid[k] = g[k];
	}
	o->uid[3] = (uint32_t) setfsuid((uid_t) -1);
	o->gid[3] = (uint32_t) setfsgid((gid_t) -1);
	o->ngroups = (uint32_t) n;
	for (int k = 0; k < n; k++)
		o->groups[k] = groups[k];
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return;
	o->eff = d[0].effective | (uint64_t) d[1].effective << 32;
	o->prm = d[0].permitted | (uint64_t) d[1].permitted << 32;
	o->inh = d[0].inheritable | (uint64_t) d[1].inheritable << 32;
	for (unsigned cap = 0; cap < 64; cap++) {
		int b = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (b < 0)
			break;
		if (b)
			o->bnd |= 1ull << cap;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1)
			o->amb |= 1ull << cap;
	}
	o->ok = true;
}

/* The bounding set of @pid (CapBnd in /proc/PID/status), or -errno. */
static int task_capbnd(pid_t pid, uint64_t *bnd)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	char *p = strstr(buf, "\nCapBnd:\t");
	if (!p)
		return -EIO;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p + 9, &end, 16);
	if (errno || end == p + 9)
		return -EIO;
	*bnd = v;
	return 0;
}

static int restore_creds(struct rctx *c, uint32_t i, const struct own_creds *o, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	const char *what = "bounding set";
	int r = 0;
	uint64_t drop = o->ok ? o->bnd & ~t->r.cap_bnd : ~t->r.cap_bnd;
	for (unsigned cap = 0; cap < 64 && !r; cap++)
		if (drop & (1ull << cap)) {
			r = inj(c, i, SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0, 0, NULL);
			if (r == -EINVAL) /* beyond CAP_LAST_CAP */
				r = 0;
		}
	bool same_groups = o->ok && o->ngroups == t->r.ngroups &&
			   !memcmp(o->groups, t->r.groups, t->r.ngroups * sizeof(uint32_t));
	if (!r && !same_groups) {
		what = "groups";
		r = scratch_put(c, i, S_STRUCT, t->r.groups, t->r.ngroups * sizeof(uint32_t));
		if (!r)
			r = inj(c, i, SYS_setgroups, t->r.ngroups, sarg(c, S_STRUCT), 0, 0, 0, 0,
				NULL);
	}
	if (!r && !(o->ok && !memcmp(o->gid, t->r.gid, sizeof(o->gid)))) {
		what = "gids";
		r = inj(c, i, SYS_setresgid, t->r.gid[0], t->r.gid[1], t->r.gid[2], 0, 0, 0, NULL);
		if (!r)
			inj(c, i, SYS_setfsgid, t->r.gid[3], 0, 0, 0, 0, 0, NULL);
	}
	bool uids_change = !(o->ok && !memcmp(o->uid, t->r.uid, sizeof(o->uid)));
	if (!r && uids_change) {
		what = "uids";
		r = inj(c, i, SYS_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0, 0, NULL);
		if (!r)
			r = inj(c, i, SYS_setresuid, t->r.uid[0], t->r.uid[1], t->r.uid[2], 0, 0, 0,
				NULL);
		if (!r)
			inj(c, i, SYS_setfsuid, t->r.uid[3], 0, 0, 0, 0, 0, NULL);
		if (!r)
			r = inj(c, i, SYS_prctl, PR_SET_KEEPCAPS, 0, 0, 0, 0, 0, NULL);
	}
	bool caps_change = uids_change || !o->ok || o->eff != t->r.cap_eff ||
			   o->prm != t->r.cap_prm || o->inh != t->r.cap_inh;
	if (!r && caps_change) {
		what = "capabilities";
		struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct d[2] = {
			{(uint32_t) t->r.cap_eff, (uint32_t) t->r.cap_prm, (uint32_t) t->r.cap_inh},
			{(uint32_t) (t->r.cap_eff >> 32), (uint32_t) (t->r.cap_prm >> 32),
			 (uint32_t) (t->r.cap_inh >> 32)},
		};
		r = scratch_put(c, i, S_STRUCT, &h, sizeof(h));
		if (!r)
			r = scratch_put(c, i, S_STRUCT + 64, d, sizeof(d));
		if (!r)
			r = inj(c, i, SYS_capset, sarg(c, S_STRUCT), sarg(c, S_STRUCT + 64), 0, 0,
				0, 0, NULL);
	}
	uint64_t raise = t->r.cap_amb & ~(o->ok && !caps_change ? o->amb : 0);
	for (unsigned cap = 0; cap < 64 && !r; cap++)
		if (raise & (1ull << cap)) {
			what = "ambient capabilities";
			r = inj(c, i, SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0, 0,
				NULL);
		}
	if (r)
		return urs_err_set(err, r, "restore: pid %d: restoring %s: %s", t->r.nspid, what,
				   strerror(-r));
	return 0;
}

static int set_ids(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	int r = 0;
	long sid = 0;
	if (t->r.nssid == t->r.nspid && i == 0 && c->puppet > 0 &&
	    !inj(c, i, SYS_getsid, 0, 0, 0, 0, 0, 0, &sid) && sid == t->r.nspid)
		r = 0; /* an adopted init is a session leader already */
	else if (t->r.nssid == t->r.nspid)
		r = inj(c, i, SYS_setsid, 0, 0, 0, 0, 0, 0, NULL);
	else if (t->r.nspgid == t->r.nspid)
		r = inj(c, i, SYS_setpgid, 0, 0, 0, 0, 0, 0, NULL);
	else if (t->r.nspgid > 0 && i > 0)
		r = inj(c, i, SYS_setpgid, 0, (uint64_t) t->r.nspgid, 0, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: session/process group: %s", t->r.nspid,
				   strerror(-r));
	return 0;
}

/* Queue the saved pending signals, with every signal blocked so none is
 * delivered before the task runs with its own mask. SIGKILL and SIGSTOP
 * cannot be blocked and are not re-queued. */
static int queue_signals(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	if (!t->nsigs)
		return 0;
	uint64_t all = ~0ull;
	if (ptrace(PTRACE_SETSIGMASK, c->tr[i].pid, (void *) 8, &all) < 0)
		return urs_err_set(err, -errno, "restore: pid %d: blocking signals: %m",
				   t->r.nspid);
	for (uint32_t k = 0; k < t->nsigs; k++) {
		const struct ckpt_siginfo *s = &t->sigs[k];
		int32_t signo;
		memcpy(&signo, s->info, sizeof(signo));
		if (signo == SIGKILL || signo == SIGSTOP)
			continue;
		int r = scratch_put(c, i, S_BPF, s->info, sizeof(s->info));
		if (!r && s->shared)
			r = inj(c, i, SYS_rt_sigqueueinfo, (uint64_t) t->r.nspid, (uint64_t) signo,
				sarg(c, S_BPF), 0, 0, 0, NULL);
		else if (!r)
			r = inj(c, i, SYS_rt_tgsigqueueinfo, (uint64_t) t->r.nspid,
				(uint64_t) t->r.nspid, (uint64_t) signo, sarg(c, S_BPF), 0, 0,
				NULL);
		if (r)
			return urs_err_set(err, r, "restore: pid %d: queueing signal %d: %s",
					   t->r.nspid, signo, strerror(-r));
	}
	return 0;
}

/* The saved registers as they must be set (a task's in finish_task, a
 * thread's): a syscall interrupted by the checkpoint is restarted, or fails
 * with EINTR when its restart block (kernel memory) could not be saved. */
static struct user_regs_struct restart_regs(struct user_regs_struct regs)
{
	if ((int64_t) regs.orig_rax >= 0) {
		switch ((long) (int) regs.rax) {
		case -ERESTARTSYS:
		case -ERESTARTNOINTR:
		case -ERESTARTNOHAND:
			regs.rax = regs.orig_rax;
			regs.rip -= 2;
			break;
		case -ERESTART_RESTARTBLOCK:
			regs.rax = (uint64_t) -EINTR;
			break;
		}
	}
	regs.orig_rax = (uint64_t) -1;
	return regs;
}

static int finish_task(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	struct ckpt_tracee *tr = &c->tr[i];
	/* two stops per injection from here: a re-queued SIGTRAP must not meet
	 * the blob's, and the last injection unmaps the int3 (rebuild_rest) */
	tr->trap_after = 0;
	int r = queue_signals(c, i, err);
	if (r)
		return r;
	/* an adopted init was kept non-dumpable until now (nothing in the
	 * sandbox may reach it); what it has become was dumpable, as a normal
	 * exec'd process (after the credentials: changing them resets this) */
	if (c->puppet > 0 && (r = inj(c, i, SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0, 0, NULL)))
		return urs_err_set(err, r, "restore: pid %d: PR_SET_DUMPABLE: %s", t->r.nspid,
				   strerror(-r));
	r = inj(c, i, SYS_munmap, c->blob, BLOB_LEN, 0, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: unmapping the blob: %s", t->r.nspid,
				   strerror(-r));
	struct user_regs_struct regs = restart_regs(t->r.regs);
	tr->base = regs;
	r = ckpt_set_regs(tr->pid, &regs);
	if (!r)
		r = ckpt_set_xsave(tr->pid, t->xsave, t->xsave_len);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: setting registers/FPU state: %s",
				   t->r.nspid, strerror(-r));
	if (ptrace(PTRACE_SETSIGMASK, tr->pid, (void *) 8, &t->r.sigmask) < 0)
		return urs_err_set(err, -errno, "restore: pid %d: signal mask: %m", t->r.nspid);
	return 0;
}

/* ---- threads ------------------------------------------------------------------
 * The other threads of a multi-threaded task are cloned from its main thread
 * once that has its memory, fds and kernel state but still the restorer's
 * credentials (clone3 with set_tid needs them): clone3(CLONE_VM | CLONE_FS |
 * CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, set_tid = its
 * tid) injected into the main thread; the new thread is auto-attached. Each
 * then gets what is its own — name, alternate stack, rseq, robust list,
 * clear_child_tid, the seccomp filters and credentials (per thread in the
 * kernel), its pending signals, registers, FPU state and blocked mask — and
 * stays stopped until every task is detached. */

/* Clone thread th of task i; *tr gets the attached new thread. */
static int clone_thread(struct rctx *c, uint32_t i, const struct ckpt_thread *th,
			struct ckpt_tracee *tr, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	struct clone_args ca = {
		.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
			 CLONE_SYSVSEM,
		.set_tid = sarg(c, S_STRUCT + 256),
		.set_tid_size = 1,
	};
	pid_t tid = th->r.tid;
	int r = scratch_put(c, i, S_STRUCT, &ca, sizeof(ca));
	if (!r)
		r = scratch_put(c, i, S_STRUCT + 256, &tid, sizeof(tid));
	long ret = 0;
	if (!r)
		r = inj(c, i, SYS_clone3, sarg(c, S_STRUCT), sizeof(ca), 0, 0, 0, 0, &ret);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: clone3 of thread %d: %s", t->r.nspid,
				   th->r.tid, strerror(-r));
	/* the new thread in our pid namespace: the entry of /proc/PID/task that
	 * is neither the main thread nor one made before */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", c->tr[i].pid);
	DIR *d = opendir(path);
	pid_t found = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) && !found) {
		pid_t v = (pid_t) atoi(e->d_name);
		bool known = v <= 0 || v == c->tr[i].pid;
		for (uint32_t k = 0; k < c->nthr && !known; k++)
			known = c->thr[k].pid == v;
		if (!known)
			found = v;
	}
	if (d)
		closedir(d);
	if (!found)
		return urs_err_set(err, -EIO, "restore: pid %d: cannot find thread %d", t->r.nspid,
				   th->r.tid);
	r = ckpt_wait_new_child(tr, found, err);
	tr->syscall_ip = c->blob;
	return r;
}

/* Give thread th (attached as tr) its own state, then its registers. */
static int setup_thread(struct rctx *c, uint32_t i, const struct ckpt_thread *th,
			struct ckpt_tracee *tr, const struct own_creds *o, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	uint64_t all = ~0ull;
	if (ptrace(PTRACE_SETSIGMASK, tr->pid, (void *) 8, &all) < 0)
		return urs_err_set(err, -errno, "restore: thread %d: blocking signals: %m",
				   th->r.tid);
	/* inject through the thread: every helper below works on c->tr[i] */
	struct ckpt_tracee main_tr = c->tr[i];
	c->tr[i] = *tr;
	char comm[16];
	memcpy(comm, th->r.comm, sizeof(comm));
	comm[15] = 0;
	const char *what = "name";
	int r = scratch_put(c, i, S_STRUCT, comm, sizeof(comm));
	if (!r)
		r = inj(c, i, SYS_prctl, PR_SET_NAME, sarg(c, S_STRUCT), 0, 0, 0, 0, NULL);
	if (!r && !(th->r.altstack_flags & SS_DISABLE) && th->r.altstack_size) {
		what = "sigaltstack";
		stack_t ss = {.ss_sp = (void *) (uintptr_t) th->r.altstack_sp,
			      .ss_size = th->r.altstack_size,
			      .ss_flags = (int) (th->r.altstack_flags & SS_AUTODISARM)};
		r = scratch_put(c, i, S_STRUCT, &ss, sizeof(ss));
		if (!r)
			r = inj(c, i, SYS_sigaltstack, sarg(c, S_STRUCT), 0, 0, 0, 0, 0, NULL);
	}
	if (!r && th->r.rseq_ptr) {
		what = "rseq";
		r = inj(c, i, SYS_rseq, th->r.rseq_ptr, th->r.rseq_len, 0, th->r.rseq_sig, 0, 0,
			NULL);
	}
	if (!r && th->r.robust_head) {
		what = "robust list";
		r = inj(c, i, SYS_set_robust_list, th->r.robust_head, th->r.robust_len, 0, 0, 0, 0,
			NULL);
	}
	if (!r && th->r.clear_child_tid) {
		what = "set_tid_address";
		r = inj(c, i, SYS_set_tid_address, th->r.clear_child_tid, 0, 0, 0, 0, 0, NULL);
	}
	for (uint32_t k = 0; k < th->r.nsigs && !r; k++) {
		const struct ckpt_siginfo *sg = &th->sigs[k];
		int32_t signo;
		memcpy(&signo, sg->info, sizeof(signo));
		if (signo == SIGKILL || signo == SIGSTOP)
			continue;
		what = "pending signal";
		r = scratch_put(c, i, S_BPF, sg->info, sizeof(sg->info));
		if (!r)
			r = inj(c, i, SYS_rt_tgsigqueueinfo, (uint64_t) t->r.nspid,
				(uint64_t) th->r.tid, (uint64_t) signo, sarg(c, S_BPF), 0, 0, NULL);
	}
	if (r)
		r = urs_err_set(err, r, "restore: pid %d: thread %d: %s: %s", t->r.nspid, th->r.tid,
				what, strerror(-r));
	/* per thread in the kernel: filters, then credentials */
	if (!r)
		r = restore_seccomp(c, i, err);
	if (!r)
		r = restore_creds(c, i, o, err);
	*tr = c->tr[i];
	c->tr[i] = main_tr;
	if (r)
		return r;
	tr->base = restart_regs(th->r.regs);
	r = ckpt_set_regs(tr->pid, &tr->base);
	if (!r)
		r = ckpt_set_xsave(tr->pid, th->xsave, th->r.xsave_len);
	if (!r && ptrace(PTRACE_SETSIGMASK, tr->pid, (void *) 8, &th->r.sigmask) < 0)
		r = -errno;
	if (r)
		return urs_err_set(err, r, "restore: pid %d: thread %d: registers: %s", t->r.nspid,
				   th->r.tid, strerror(-r));
	return 0;
}

static int restore_threads(struct rctx *c, uint32_t i, const struct own_creds *o,
			   struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	if (!t->nthreads)
		return 0;
	if (!c->thr) {
		uint32_t total = 0;
		for (uint32_t j = 0; j < c->img.ntasks; j++)
			total += c->img.tasks[j].nthreads;
		if (!(c->thr = calloc(total, sizeof(*c->thr))))
			return urs_err_set(err, -ENOMEM, "restore: out of memory");
	}
	for (uint32_t k = 0; k < t->nthreads; k++) {
		struct ckpt_tracee *tr = &c->thr[c->nthr];
		int r = clone_thread(c, i, &t->threads[k], tr, err);
		if (tr->pid > 0)
			c->nthr++; /* attached: detached or reaped at the end */
		if (!r)
			r = setup_thread(c, i, &t->threads[k], tr, o, err);
		if (r)
			return r;
	}
	return 0;
}

/* Detach (ok) or reap (after a failure: their process was killed) every
 * thread created. */
static int release_threads(struct rctx *c, bool ok, struct urs_err *err)
{
	int r = 0;
	for (uint32_t k = 0; k < c->nthr; k++) {
		if (!ok)
			waitpid(c->thr[k].pid, NULL, __WALL);
		else if (ptrace(PTRACE_DETACH, c->thr[k].pid, 0, 0) < 0 && !r)
			r = urs_err_set(err, -errno, "restore: detaching thread %d: %m",
					c->thr[k].pid);
	}
	return r;
}

/* munmap [@a, @b) of task @i, but for the restorer's blob */
static int unmap_but_blob(struct rctx *c, uint32_t i, uint64_t a, uint64_t b)
{
	uint64_t ba = c->blob, bb = c->blob + BLOB_LEN;
	int r = 0;
	if (a < b && a < ba)
		r = inj(c, i, SYS_munmap, a, (b < ba ? b : ba) - a, 0, 0, 0, 0, NULL);
	if (!r && a < b && b > bb) {
		uint64_t x = a > bb ? a : bb;
		r = inj(c, i, SYS_munmap, x, b - x, 0, 0, 0, 0, NULL);
	}
	return r;
}

/* Everything of task @i's address space goes but the blob and what @plan
 * keeps (a child's inherited ranges): the puppet's own mappings, or what
 * the child inherited and does not keep (up to the highest mapping of the
 * image, which may lie above 47 bits: an ancestor's). */
static int clear_space(struct rctx *c, uint32_t i, const struct ckpt_cow_plan *plan,
		       struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	uint64_t top = TASK_TOP_4LEVEL, x = 0;
	for (uint32_t k = 0; i > 0 && k < c->img.ntasks; k++) {
		const struct ckpt_task *a = &c->img.tasks[k];
		if (a->nvmas && a->vmas[a->nvmas - 1].r.end > top)
			top = a->vmas[a->nvmas - 1].r.end;
	}
	int r = 0;
	for (uint32_t k = 0; !r && k < plan->nkeep; k++) {
		r = unmap_but_blob(c, i, x, plan->keep[k].a);
		x = plan->keep[k].b;
	}
	if (!r)
		r = unmap_but_blob(c, i, x, top);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: clearing the address space: %s",
				   t->r.nspid, strerror(-r));
	return 0;
}

/* a shared piece [@x, @y) of a child, merged into the last of c->cs when
 * they touch (a child's come in address order) */
static int add_cs(void *ctx, const struct ckpt_run *run, uint64_t x, uint64_t y)
{
	struct rctx *c = ctx;
	(void) run;
	return ckpt_runs_add(&c->cs, &c->ncs, &c->capcs, x, y);
}

/* c->ep := c->ep ∪ c->cs, both sorted and disjoint: the result too */
static int union_cs(struct rctx *c)
{
	struct ckpt_run *u = malloc(((size_t) c->nep + c->ncs + 1) * sizeof(*u));
	if (!u)
		return -ENOMEM;
	uint32_t n = 0, a = 0, b = 0;
	while (a < c->nep || b < c->ncs) {
		const struct ckpt_run *e =
			b >= c->ncs || (a < c->nep && c->ep[a].vaddr <= c->cs[b].vaddr)
				? &c->ep[a++]
				: &c->cs[b++];
		uint64_t end = e->vaddr + e->npages * CKPT_PAGE_SIZE;
		struct ckpt_run *last = n ? &u[n - 1] : NULL;
		uint64_t last_end = last ? last->vaddr + last->npages * CKPT_PAGE_SIZE : 0;
		if (last && e->vaddr <= last_end) {
			if (end > last_end)
				last->npages = (end - last->vaddr) / CKPT_PAGE_SIZE;
		} else {
			u[n++] = *e;
		}
	}
	free(c->ep);
	c->ep = u;
	c->nep = n;
	return 0;
}

/* A lazy restore: c->ep gets what task @i's children share with it, each
 * child's pieces merged into the others' (at most about as many as @i's
 * runs, whatever the number of children) */
static int eager_shared(struct rctx *c, uint32_t i, struct urs_err *err)
{
	c->nep = 0;
	int r = 0;
	for (uint32_t j = i + 1; !r && j < c->img.ntasks; j++) {
		if (c->img.tasks[j].r.parent != (int32_t) i)
			continue;
		c->ncs = 0;
		r = ckpt_cow_shared(&c->img, j, add_cs, c);
		if (!r && c->ncs)
			r = union_cs(c);
	}
	return r ? urs_err_set(err, r, "restore: out of memory") : 0;
}

/* Task @i's memory: its mappings and pages. A child comes here cloned from
 * its parent's restored memory, and keeps what it shared with it
 * (cowplan.h); in a lazy restore what its own children share with it is
 * written now, the rest of its lazy mappings deferred. */
static int rebuild_mm(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	struct ckpt_cow_plan plan = {0};
	int r = c->inherit[i] ? ckpt_cow_plan(&c->img.tasks[t->r.parent], t, &plan) : 0;
	if (r)
		return urs_err_set(err, r, "restore: out of memory");
	if (c->lz && !c->unshared && (r = eager_shared(c, i, err))) {
		ckpt_cow_plan_free(&plan);
		return r;
	}
	r = clear_space(c, i, &plan, err);
	if (!r)
		r = map_vmas(c, i, &plan, err);
	if (!r && !plan.vdso)
		r = map_vdso(c, i, err);
	if (!r)
		r = drop_pages(c, i, &plan, err);
	if (!r)
		r = write_pages(c, i, &plan, err);
	ckpt_cow_plan_free(&plan);
	return r;
}

/* Task @i's fds and shared memory, after its children are cloned: they
 * need the puppet's stdio, and map their own shared memory. */
static int rebuild_fds(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	/* fds 0-2 stay for external stdio (CKPT_FD_EXT), and are copied to
	 * the higher fds that were copies of them; the others go */
	int r = inj(c, i, SYS_close_range, 3, ~0u, 0, 0, 0, 0, NULL);
	for (uint32_t f = 0; f < t->nfds && !r; f++) {
		const struct ckpt_fd_rec *e = &t->fds[f].r;
		if (e->fd <= 2 || e->dup_of != -1 || e->type != CKPT_FD_EXT)
			continue;
		r = inj(c, i, SYS_dup3, e->sub, (uint64_t) e->fd, 0, 0, 0, 0, NULL);
		if (r)
			return urs_err_set(
				err, r,
				"restore: pid %d: fd %d was a copy of stdio %u, replaced "
				"at restore, but the restore has no fd %u: %s",
				t->r.nspid, e->fd, e->sub, e->sub, strerror(-r));
	}
	for (int k = 0; k < 3 && !r; k++) {
		bool keep = false;
		for (uint32_t f = 0; f < t->nfds; f++)
			keep |= t->fds[f].r.fd == k && t->fds[f].r.dup_of == -1 &&
				t->fds[f].r.type == CKPT_FD_EXT;
		if (!keep)
			inj(c, i, SYS_close, (uint64_t) k, 0, 0, 0, 0, 0, NULL);
	}
	if (r)
		return urs_err_set(err, r, "restore: pid %d: close_range: %s", t->r.nspid,
				   strerror(-r));
	r = set_mm(c, i, err);
	if (!r)
		r = restore_fds(c, i, err);
	if (!r)
		r = restore_shm(c, i, err);
	return r;
}

/* Once every task has its fds (a later task may have taken a pipe end or a
 * socket parked in this one): drop the parked fds, then the rest. */
static int rebuild_rest(struct rctx *c, uint32_t i, const struct own_creds *o, struct urs_err *err)
{
	const struct ckpt_task *t = &c->img.tasks[i];
	int r = 0;
	/* one stop per injection (the blob's int3) only while that cannot
	 * change what is restored: the int3 raises a forced SIGTRAP, which
	 * resets a blocked or ignored SIGTRAP's handler (shared by the task's
	 * threads) to the default and unblocks it in the current mask (set at
	 * the end anyway). Handlers are restored from here on, so a task with a
	 * SIGTRAP handler of its own goes back to two stops (the syscall's
	 * entry and exit); finish_task does so before re-queueing signals. */
	if (t->r.sigact[SIGTRAP - 1].handler != (uint64_t) (uintptr_t) SIG_DFL)
		c->tr[i].trap_after = 0;
	if (c->park_next[i]) /* anything parked */
		r = inj(c, i, SYS_close_range, (uint64_t) c->park_base[i], ~0u, 0, 0, 0, 0, NULL);
	if (r)
		return urs_err_set(err, r, "restore: pid %d: closing parked fds: %s", t->r.nspid,
				   strerror(-r));
	/* its own transparent huge page setting (it has the root's from
	 * its clone); bit 0 on or off, the rest its flags (EXCEPT_ADVISED) */
	if (t->r.thp_disable != c->thp &&
	    (r = inj(c, i, SYS_prctl, PR_SET_THP_DISABLE, t->r.thp_disable & 1,
		     t->r.thp_disable & ~1u, 0, 0, 0, NULL)))
		return urs_err_set(err, r, "restore: pid %d: PR_SET_THP_DISABLE %u: %s", t->r.nspid,
				   t->r.thp_disable, strerror(-r));
	r = restore_misc(c, i, err);
	if (!r)
		r = restore_threads(c, i, o, err);
	if (!r)
		r = restore_seccomp(c, i, err);
	if (!r)
		r = restore_creds(c, i, o, err);
	if (!r)
		r = finish_task(c, i, err);
	return r;
}

/* Files the image maps must still be the same files: check before creating anything. */
/* stat path as the restored task will see it: in the caller's root, or with
 * a puppet, inside the puppet's root (openat2 RESOLVE_IN_ROOT: symlinks and
 * ".." never leave it) */
static int stat_at(int rootfd, const char *path, struct stat *st)
{
	if (rootfd < 0)
		return stat(path, st) < 0 ? -errno : 0;
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
	_cleanup_close_ int fd = (int) syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	return fstat(fd, st) < 0 ? -errno : 0;
}

static int precheck(struct rctx *c, const struct ckpt_image *img, pid_t puppet, struct urs_err *err)
{
	_cleanup_close_ int rootfd = -1;
	if (puppet > 0) {
		char root[64];
		snprintf(root, sizeof(root), "/proc/%d/root", puppet);
		rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0)
			return urs_err_set(err, -errno, "restore: %s: %m", root);
	}
	int rr = rootfd >= 0 ? ckpt_root_id(rootfd, "", &c->root_now)
			     : ckpt_root_id(AT_FDCWD, "/", &c->root_now);
	if (rr < 0)
		return urs_err_set(err, rr, "restore: the root directory: %s", strerror(-rr));
	for (uint32_t i = 0; i < img->ntasks; i++) {
		const struct ckpt_task *t = &img->tasks[i];
		for (uint32_t v = 0; v < t->nvmas; v++) {
			const struct ckpt_vma *m = &t->vmas[v];
			if (m->r.kind != CKPT_VMA_FILE)
				continue;
			struct stat st;
			int e = stat_at(rootfd, m->path, &st);
			if (e)
				return urs_err_set(err, e, "restore: pid %d: %s: %s", t->r.nspid,
						   m->path, strerror(-e));
			if (!same_file(c, m->r.dev, m->r.ino, st.st_dev, st.st_ino) ||
			    (uint64_t) st.st_size != m->r.fsize)
				return urs_err_set(err, -ESTALE,
						   "restore: pid %d: %s changed since the "
						   "checkpoint (device %#llx inode %llu size %llu, "
						   "now %#llx %llu %llu)",
						   t->r.nspid, m->path,
						   (unsigned long long) m->r.dev,
						   (unsigned long long) m->r.ino,
						   (unsigned long long) m->r.fsize,
						   (unsigned long long) st.st_dev,
						   (unsigned long long) st.st_ino,
						   (unsigned long long) st.st_size);
		}
		for (uint32_t k = 0; k < t->nfds; k++) {
			const struct ckpt_fd *f = &t->fds[k];
			struct stat st;
			if (f->r.dup_of != -1 || f->r.type == CKPT_FD_EXT || !f->path)
				continue;
			int e = stat_at(rootfd, f->path, &st);
			if (e)
				return urs_err_set(err, e, "restore: pid %d: fd %d: %s: %s",
						   t->r.nspid, f->r.fd, f->path, strerror(-e));
		}
	}
	return 0;
}

int ckpt_image_check_policy(const struct ckpt_image *img, const struct ckpt_policy *p,
			    struct urs_err *err)
{
	for (uint32_t i = 0; i < img->ntasks; i++) {
		const struct ckpt_task *t = &img->tasks[i];
		const struct ckpt_task_rec *r = &t->r;
		if (r->zombie)
			continue;
		uint64_t caps = r->cap_inh | r->cap_prm | r->cap_eff | r->cap_bnd | r->cap_amb;
		if (caps & ~p->cap_bnd)
			return urs_err_set(err, -EPERM,
					   "restore: pid %d: capabilities %#" PRIx64
					   " beyond the configuration's bounding set %#" PRIx64,
					   r->nspid, caps & ~p->cap_bnd, p->cap_bnd);
		if (p->need_nnp && !r->no_new_privs)
			return urs_err_set(
				err, -EPERM,
				"restore: pid %d: no_new_privs is off, the configuration "
				"requires it",
				r->nspid);
		for (int k = 0; k < 4; k++) {
			if (p->pin_uid && r->uid[k] != p->uid)
				return urs_err_set(err, -EPERM,
						   "restore: pid %d: uid %u, the configuration "
						   "allows only %u",
						   r->nspid, r->uid[k], p->uid);
			if (p->pin_gid && r->gid[k] != p->gid)
				return urs_err_set(err, -EPERM,
						   "restore: pid %d: gid %u, the configuration "
						   "allows only %u",
						   r->nspid, r->gid[k], p->gid);
		}
		for (uint32_t k = 0; k < p->n_rlim && k < CKPT_NRLIMIT; k++)
			if (r->rlim[k].max > p->rlim_max[k] || r->rlim[k].cur > r->rlim[k].max)
				return urs_err_set(
					err, -EPERM,
					"restore: pid %d: resource limit %u (hard %" PRIu64
					") above what the configuration gives (%" PRIu64 ")",
					r->nspid, k, r->rlim[k].max, p->rlim_max[k]);
		/* the restorer binds sockets with its own privilege: a port
		 * below 1024 needs CAP_NET_BIND_SERVICE in the configuration */
		for (uint32_t k = 0; k < t->nfds; k++) {
			const struct ckpt_fd *f = &t->fds[k];
			struct ckpt_inet_listen l;
			struct ckpt_inet_udp u;
			uint16_t port = 0;
			if (f->r.dup_of != -1 || f->r.xtask || !f->data)
				continue;
			if (f->r.type == CKPT_FD_TCP_LISTEN && f->r.data_len == sizeof(l)) {
				memcpy(&l, f->data, sizeof(l));
				port = l.port;
			} else if (f->r.type == CKPT_FD_UDP && f->r.data_len == sizeof(u)) {
				memcpy(&u, f->data, sizeof(u));
				port = u.port;
			}
			if (port && port < 1024 && !(p->cap_bnd & (1ull << 10)))
				return urs_err_set(err, -EPERM,
						   "restore: pid %d: fd %d is bound to port %u, "
						   "which needs CAP_NET_BIND_SERVICE (not in the "
						   "configuration's bounding set)",
						   r->nspid, f->r.fd, port);
		}
		if (p->bpf_len &&
		    (!t->nseccomp || t->seccomp[0].len != p->bpf_len ||
		     memcmp(t->seccomp[0].insns, p->bpf, p->bpf_len * sizeof(uint64_t))))
			return urs_err_set(err, -EPERM,
					   "restore: pid %d: its seccomp filter is not the "
					   "configuration's",
					   r->nspid);
	}
	return 0;
}

/* The per-task tables of @c, for c->img's tasks. */
static int rctx_alloc(struct rctx *c, struct urs_err *err)
{
	c->tr = calloc(c->img.ntasks, sizeof(*c->tr));
	c->memfd = malloc(c->img.ntasks * sizeof(int));
	c->dead = calloc(c->img.ntasks, 1);
	c->inherit = calloc(c->img.ntasks, 1);
	c->pres = calloc(c->img.ntasks, sizeof(*c->pres));
	c->npres = calloc(c->img.ntasks, sizeof(*c->npres));
	c->cappres = calloc(c->img.ntasks, sizeof(*c->cappres));
	c->park_base = calloc(c->img.ntasks, sizeof(int32_t));
	c->park_next = calloc(c->img.ntasks, sizeof(int32_t));
	for (uint32_t i = 0; c->memfd && i < c->img.ntasks; i++)
		c->memfd[i] = -1; /* before any failure: rctx_free closes them */
	if (!c->tr || !c->memfd || !c->dead || !c->inherit || !c->pres || !c->npres ||
	    !c->cappres || !c->park_base || !c->park_next)
		return urs_err_set(err, -ENOMEM, "restore: out of memory");
	return 0;
}

/* Does task @j, a child of @i, share memory with it (ckpt/cowplan.h)? */
static bool shares(struct rctx *c, uint32_t i, uint32_t j, int *r, struct urs_err *err)
{
	struct ckpt_cow_plan plan;
	if (c->unshared || c->dead[i] || c->img.tasks[j].r.zombie)
		return false;
	*r = ckpt_cow_plan(&c->img.tasks[i], &c->img.tasks[j], &plan);
	if (*r)
		*r = urs_err_set(err, *r, "restore: out of memory");
	bool yes = !*r && plan.shared;
	ckpt_cow_plan_free(&plan);
	return yes;
}

/* Task @i's children, in order: those before the first that shares memory
 * with it are cloned from its puppet before its memory is rebuilt (a
 * zombie, a child that exec'd: a fork of the whole memory would only be
 * torn down again); then its memory; then the others, from it. The order
 * of the clones is the tree's (/proc/PID/task/TID/children). */
static int rebuild_with_children(struct rctx *c, uint32_t i, struct urs_err *err)
{
	const struct ckpt_image *img = &c->img;
	bool late = false;
	int r = 0;
	for (uint32_t j = i + 1; !r && !late && j < img->ntasks; j++)
		if (img->tasks[j].r.parent == (int32_t) i && !(late = shares(c, i, j, &r, err)) &&
		    !r)
			r = create_child(c, j, err);
	if (r)
		return r;
	if (!c->dead[i])
		r = rebuild_mm(c, i, err);
	for (uint32_t j = i + 1; !r && j < img->ntasks; j++)
		if (img->tasks[j].r.parent == (int32_t) i && !c->tr[j].pid) {
			c->inherit[j] = 1;
			r = create_child(c, j, err);
		}
	/* once its children are cloned: what comes in later comes into its
	 * address space alone */
	if (!r && !c->dead[i] && c->nlruns)
		r = lazy_register(c, i, err);
	return r;
}

/* Create the tree (its root, then every task's children) and rebuild each
 * live task: its memory and fds, then the rest of its state. */
static int rebuild_tree(struct rctx *c, struct urs_err *err)
{
	int r = c->puppet > 0 ? adopt_root(c, err) : create_root(c, err);
	ckpt_trace("restore: root ready");
	/* A lazy restore writes pages into mappings it defers the rest of:
	 * no huge page there, whose zero-filled rest would be "in" when the
	 * deferred pages come (UFFDIO_COPY: EEXIST). Inherited by every clone;
	 * each task's own setting back in rebuild_rest. Only a tree that may
	 * share writes there: one process defers all of them. */
	long thp = 0;
	c->thp_off = c->lz && !c->unshared && c->img.ntasks > 1;
	if (!r && (r = inj(c, 0, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0, 0, &thp)))
		r = urs_err_set(err, r, "restore: PR_GET_THP_DISABLE: %s", strerror(-r));
	if (!r && c->thp_off && thp != 1 &&
	    (r = inj(c, 0, SYS_prctl, PR_SET_THP_DISABLE, 1, 0, 0, 0, 0, NULL)))
		r = urs_err_set(err, r, "lazy restore: PR_SET_THP_DISABLE: %s", strerror(-r));
	c->thp = c->thp_off ? 1 : (uint32_t) thp;
	/* tasks are in breadth-first order: a parent always precedes its children */
	for (uint32_t i = 0; !r && i < c->img.ntasks; i++) {
		if (!c->dead[i])
			r = set_ids(c, i, err);
		if (!r)
			r = rebuild_with_children(c, i, err);
	}
	ckpt_trace("restore: tasks created, memory rebuilt");
	struct own_creds own;
	read_own_creds(&own);
	/* every task descends from the puppet and has its bounding set, which
	 * the init already cut to the configuration's (host/init.c): only the
	 * difference to the image's is dropped by injection */
	if (c->puppet > 0 && own.ok && task_capbnd(c->puppet, &own.bnd) < 0)
		read_own_creds(&own);
	for (uint32_t i = 0; !r && i < c->img.ntasks; i++)
		if (!c->dead[i])
			r = rebuild_fds(c, i, err);
	ckpt_trace("restore: fds rebuilt");
	for (uint32_t i = 0; !r && i < c->img.ntasks; i++)
		if (!c->dead[i])
			r = rebuild_rest(c, i, &own, err);
	ckpt_trace("restore: tasks rebuilt");
	return r;
}

/* Let the rebuilt tree go: its threads released, every live task detached;
 * *@pid is its root. */
static int let_go(struct rctx *c, pid_t *pid, struct urs_err *err)
{
	int r = release_threads(c, true, err);
	for (uint32_t i = c->img.ntasks; i-- > 0;)
		if (!c->dead[i] && ptrace(PTRACE_DETACH, c->tr[i].pid, 0, 0) < 0 && !r)
			r = urs_err_set(err, -errno, "restore: detaching pid %d: %m",
					c->img.tasks[i].r.nspid);
	if (!r)
		*pid = c->tr[0].pid;
	return r;
}

/* A failed restore: kill the tasks created so far and reap them. */
static void kill_tree(struct rctx *c)
{
	/* the whole tree dies with its root (pid namespace init) or by EXITKILL */
	for (uint32_t i = c->nlive; i-- > 0;)
		if (c->tr[i].pid > 0) /* never kill(0): tasks not created yet have pid 0 */
			kill(c->tr[i].pid, SIGKILL);
	release_threads(c, false, NULL); /* their leaders wait for them */
	/* reap the traced ones first: a pid namespace's init is not
	 * released while tasks of its namespace wait to be reaped, and
	 * traced zombies wait for their tracer — us */
	for (uint32_t i = c->nlive; i-- > 1;)
		if (c->tr[i].pid > 0) /* not ours (any more): ECHILD at once */
			waitpid(c->tr[i].pid, NULL, __WALL);
	if (c->tr[0].pid > 0)
		waitpid(c->tr[0].pid, NULL, __WALL);
}

/* What rctx_alloc and the restore allocated (not the image). */
static void rctx_free(struct rctx *c)
{
	for (uint32_t i = 0; c->memfd && i < c->img.ntasks; i++)
		if (c->memfd[i] >= 0)
			close(c->memfd[i]);
	free(c->memfd);
	free(c->dead);
	free(c->inherit);
	for (uint32_t i = 0; c->pres && i < c->img.ntasks; i++)
		free(c->pres[i]);
	free(c->pres);
	free(c->npres);
	free(c->cappres);
	free(c->park_base);
	free(c->park_next);
	free(c->objs);
	free(c->thr);
	free(c->tr);
	free(c->lruns);
	free(c->ep);
	free(c->cs);
}

int ckpt_restore_ex(const char *dir, const struct ckpt_restore_opts *opts, pid_t *pid,
		    struct ckpt_restore_stats *stats, struct urs_err *err)
{
	struct ckpt_restore_stats dummy;
	if (!stats)
		stats = &dummy;
	memset(stats, 0, sizeof(*stats));
	double t0 = urs_now_ms();
	struct rctx c = {.st = stats,
			 .puppet = opts ? opts->puppet : 0,
			 .dev_map = opts ? opts->dev_map : NULL,
			 .n_dev_map = opts ? opts->n_dev_map : 0,
			 .before_charged = opts ? opts->before_charged : NULL,
			 .charged_ctx = opts ? opts->charged_ctx : NULL};
	if (!opts || !opts->key)
		return urs_err_set(err, -ENOKEY, "restore: no key to authenticate the image with");
	struct ckpt_seal seal;
	memcpy(seal.key, opts->key, sizeof(seal.key));
	bool lazy = opts->lazy && opts->lazy_out;
	/* a remote image's page data: in ursa-store's memfd, said first */
	_cleanup_close_ int pfd = -1;
	int r = lazy && opts->lazy_remote ? ckpt_lazy_pages_fd(opts->lazy_src, &pfd, err) : 0;
	if (!r)
		r = ckpt_image_load_ex(dir, pfd, &seal, lazy ? CKPT_LOAD_LAZY : 0, &c.img, err);
	if (!r && lazy &&
	    (r = ckpt_lazy_new(&c.lz, &c.img, dir, &seal, opts->lazy_hold,
			       opts->lazy_remote ? opts->lazy_src : -1, pfd, opts->lazy_fail,
			       opts->lazy_ctx, err)))
		ckpt_image_free(&c.img);
	explicit_bzero(&seal, sizeof(seal));
	if (r)
		return r;
	ckpt_trace("restore: image loaded");
	stats->load_ms = urs_now_ms() - t0;
	stats->ntasks = c.img.ntasks;
	if (opts && opts->policy && (r = ckpt_image_check_policy(&c.img, opts->policy, err)))
		goto out_img;
	r = precheck(&c, &c.img, c.puppet, err);
	if (!r)
		r = choose_blob(&c, err);
	c.unshared = opts->unshared;
	if (!r && c.lz && opts->lazy_remote) /* (an image refused above asks for nothing
					      * more: ursa-store stops at its socket's
					      * end, what it fetched unasked too) */
		r = want_eager(&c, err);
	if (r)
		goto out_img;
	r = rctx_alloc(&c, err);
	if (!r) {
		ckpt_trace("restore: prechecked");
		r = rebuild_tree(&c, err);
		if (!r)
			r = let_go(&c, pid, err);
	}
	if (r && c.nlive)
		kill_tree(&c);
	if (!r && c.lz) { /* the pager goes on, the caller's now */
		ckpt_lazy_seal(c.lz);
		*opts->lazy_out = c.lz;
		c.lz = NULL;
	}
	rctx_free(&c);
out_img:
	ckpt_lazy_free(c.lz); /* a failed restore's: its tasks are gone (or never were) */
	ckpt_image_free(&c.img);
	stats->ms = urs_now_ms() - t0;
	return r;
}
