/*
 * ckpt/dump.c — the dumper (see ckpt_dump.h): seize the tree, read each
 * task's registers, FPU state, signal state, credentials, limits, mappings,
 * dirty pages and fds, and write the image. Page selection uses
 * /proc/PID/pagemap: pages never touched are skipped, clean file pages are
 * left to the file, all-zero anonymous pages are skipped too. Pipes, FIFOs,
 * eventfds, epoll sets, unix socketpairs and TCP sockets are read from
 * fdinfo, sock_diag (ckpt/sockdiag.c) and injected peeks, never
 * consuming what is queued in them. Shared memory objects are saved once
 * for the tree; the other threads of a process each get a thread record.
 */
#include "ckpt/dump.h"
#include "ckpt/framemap.h"
#include "ckpt/maps.h"
#include "ckpt/pagesink.h"
#include "ckpt/precopy.h"
#include "ckpt/workingset.h"
#include "host/cgroup.h"
#include "ckpt/trace.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <linux/kcmp.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/image.h"
#include "ckpt/ptrace.h"
#include "ckpt/sockdiag.h"
#include "host/pagemap.h"
#include "runtime/common.h"
#include "runtime/io.h"

#define PM_PRESENT (1ull << 63)
#define CHUNK	   256 /* pages read from /proc/PID/mem at once */
#ifndef PR_GET_TID_ADDRESS
#define PR_GET_TID_ADDRESS 40
#endif
#ifndef F_GET_SEALS
#define F_GET_SEALS 1034
#endif

struct dumpctx {
	struct ckpt_image img;
	struct ckpt_tracee *tr; /* one per task, same index as img.tasks */
	uint32_t nseized;
	struct ckpt_pages_writer pw;
	int dirfd;
	struct ckpt_dump_stats *st;
	uint8_t *chunk;
	uint64_t frames[CHUNK];		   /* dump_span: the chunk's frames (urs_pagemap_frames) */
	uint64_t sigcgt[CKPT_MAX_TASKS];   /* caught or ignored signals, from status */
	uint8_t trapped[CKPT_MAX_TASKS];   /* in a ptrace stop: can be detached */
	const char *freezer;		   /* cgroup v2 directory, or NULL */
	pid_t outside;			   /* may be in the cgroup, not dumped */
	const struct ckpt_dump_opts *opts; /* seccomp_replace, or NULL */
	struct tree_obj *objs;		   /* pipes and sockets the tree holds */
	uint32_t nobjs, capobjs;
	struct ckpt_sockdiag diag; /* sockets of the tree's network namespace */
	bool diag_loaded;
	struct dthread *thr[CKPT_MAX_TASKS]; /* each task's other threads */
	uint32_t nthr[CKPT_MAX_TASKS];
	uint32_t nthr_all;	 /* all tasks' (an image holds CKPT_MAX_THREADS) */
	int rootfd;		 /* /proc/PID/root of root_pid (in_task_root), or -1 */
	struct ckpt_precopy pre; /* memory copied before the freeze (opts->precopy) */
	struct {		 /* each pre-copied process's mappings, read then */
		pid_t pid;
		struct ckpt_maps m;
	} * early;
	uint32_t nearly;
	bool pages_open; /* the page writer is open (before the freeze, to pre-copy) */
	pid_t root_pid;
	struct { /* in_task_root's last answer (fd 0-2 ask twice) */
		pid_t pid;
		dev_t dev;
		ino_t ino;
		bool in;
		char path[PATH_MAX];
	} root_memo;
};

/* A thread of a task other than its main one, seized like it. */
struct dthread {
	struct ckpt_tracee tr;
	uint8_t trapped;
};

/* Read a small file whole. @once: a /proc file the kernel makes in one
 * piece (single_open: status, stat, fdinfo, limits, comm, personality;
 * auxv): a read that does not fill the buffer got all of it, no second
 * read to see the end. */
static int read_file(const char *path, char *buf, size_t cap, bool once)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	for (;;) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 || got + (size_t) n >= cap - 1 || once) {
			got += (size_t) (n > 0 ? n : 0);
			break;
		}
		got += (size_t) n;
	}
	buf[got] = 0;
	return (int) got;
}

static int read_small(const char *path, char *buf, size_t cap)
{
	return read_file(path, buf, cap, false);
}

static int read_proc1(const char *path, char *buf, size_t cap)
{
	return read_file(path, buf, cap, true);
}

/* Value of "Key:\t..." in a /proc status buffer, or NULL. */
static const char *status_field(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ':')
			return p + kl + 1;
	return NULL;
}

/* Last number on the status line (NSpid etc. list outermost first). */
static long status_last_num(const char *buf, const char *key)
{
	const char *v = status_field(buf, key);
	if (!v)
		return -1;
	long last = -1;
	while (*v && *v != '\n') {
		char *end;
		long n = strtol(v, &end, 10);
		if (end == v) {
			v++;
			continue;
		}
		last = n;
		v = end;
	}
	return last;
}

static int dump_status(struct ckpt_task *t, pid_t pid, bool zombie, uint64_t *sigcgt,
		       struct urs_err *err)
{
	char path[64], buf[8192];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	int r = read_proc1(path, buf, sizeof(buf));
	if (r < 0)
		return urs_err_set(err, r, "pid %d: reading status: %s", pid, strerror(-r));
	long threads = status_last_num(buf, "Threads");
	const char *state = status_field(buf, "State");
	if (threads > 1 && state && strpbrk(state, "ZX"))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: multi-threaded process (%ld threads) whose main thread "
				   "has exited cannot be checkpointed",
				   pid, threads);
	(void) zombie;
	t->r.nspid = (int32_t) status_last_num(buf, "NSpid");
	t->r.nspgid = (int32_t) status_last_num(buf, "NSpgid");
	t->r.nssid = (int32_t) status_last_num(buf, "NSsid");
	t->r.no_new_privs = (uint32_t) status_last_num(buf, "NoNewPrivs");
	const char *um = status_field(buf, "Umask");
	t->r.umask = um ? (uint32_t) strtoul(um, NULL, 8) : 022;
	const char *u = status_field(buf, "Uid"), *g = status_field(buf, "Gid");
	if (!u || !g ||
	    sscanf(u, "%u %u %u %u", &t->r.uid[0], &t->r.uid[1], &t->r.uid[2], &t->r.uid[3]) != 4 ||
	    sscanf(g, "%u %u %u %u", &t->r.gid[0], &t->r.gid[1], &t->r.gid[2], &t->r.gid[3]) != 4)
		return urs_err_set(err, -EINVAL, "pid %d: cannot parse credentials", pid);
	const char *gr = status_field(buf, "Groups");
	while (gr && *gr && *gr != '\n') {
		char *end;
		unsigned long v = strtoul(gr, &end, 10);
		if (end == gr) {
			gr++;
			continue;
		}
		if (t->r.ngroups == CKPT_MAX_GROUPS)
			return urs_err_set(err, -ENOTSUP, "pid %d: too many supplementary groups",
					   pid);
		t->r.groups[t->r.ngroups++] = (uint32_t) v;
		gr = end;
	}
	struct {
		const char *k;
		uint64_t *v;
	} hex[] = {{"CapInh", &t->r.cap_inh}, {"CapPrm", &t->r.cap_prm}, {"CapEff", &t->r.cap_eff},
		   {"CapBnd", &t->r.cap_bnd}, {"CapAmb", &t->r.cap_amb}, {"SigCgt", sigcgt}};
	for (size_t i = 0; i < URS_ARRAY_SIZE(hex); i++) {
		const char *v = status_field(buf, hex[i].k);
		*hex[i].v = v ? strtoull(v, NULL, 16) : 0;
	}
	const char *ign = status_field(buf, "SigIgn");
	uint64_t sigign = ign ? strtoull(ign, NULL, 16) : 0;
	for (unsigned i = 0; i < CKPT_NSIG; i++)
		if (sigign & (1ull << i))
			t->r.sigact[i].handler = (uint64_t) (uintptr_t) SIG_IGN;
	*sigcgt |= sigign; /* query flags of ignored ones too */
	return 0;
}

static int dump_stat_mm(struct ckpt_task *t, pid_t pid, struct urs_err *err)
{
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int r = read_proc1(path, buf, sizeof(buf));
	if (r < 0)
		return urs_err_set(err, r, "pid %d: reading stat: %s", pid, strerror(-r));
	char *p = strrchr(buf, ')');
	if (!p)
		return urs_err_set(err, -EINVAL, "pid %d: cannot parse stat", pid);
	p += 2;
	uint64_t f[64] = {0};
	int n = 0; /* f[n] is field n + 3 */
	while (*p && n < 64) {
		char *end;
		f[n] = strtoull(p, &end, 10);
		if (end == p) { /* the state letter */
			end = p + 1;
		}
		n++;
		p = end;
		while (*p == ' ')
			p++;
	}
	if (n < 49)
		return urs_err_set(err, -EINVAL, "pid %d: short stat line", pid);
	t->r.mm.start_code = f[26 - 3];
	t->r.mm.end_code = f[27 - 3];
	t->r.mm.start_stack = f[28 - 3];
	t->r.mm.start_data = f[45 - 3];
	t->r.mm.end_data = f[46 - 3];
	t->r.mm.start_brk = f[47 - 3];
	t->r.mm.arg_start = f[48 - 3];
	t->r.mm.arg_end = f[49 - 3];
	t->r.mm.env_start = f[50 - 3];
	t->r.mm.env_end = f[51 - 3];
	return 0;
}

static char *read_link(pid_t pid, const char *what)
{
	char path[96], buf[PATH_MAX];
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return strdup(buf);
}

static bool deleted(const char *s)
{
	size_t l = strlen(s);
	return l > 10 && !strcmp(s + l - 10, " (deleted)");
}

/* An io_uring ring (fd link or mapping name), not a file that has io_uring
 * in its name. */
static bool is_io_uring(const char *name)
{
	return (!strncmp(name, "anon_inode:", 11) && strstr(name, "io_uring")) ||
	       !strcmp(name, "[io_uring]");
}

/* Tids of pid's threads other than pid itself (/proc/PID/task). */
static int list_threads(pid_t pid, pid_t *out, uint32_t max, uint32_t *n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *e;
	int r = 0;
	*n = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		pid_t tid = (pid_t) atoi(e->d_name);
		if (tid == pid)
			continue;
		if (*n == max) {
			r = -ENOTSUP;
			break;
		}
		out[(*n)++] = tid;
	}
	closedir(d);
	return r;
}

/* ---- mappings ---------------------------------------------------------- */

static int add_vma(struct ckpt_task *t, const struct ckpt_vma *v)
{
	struct ckpt_vma *nv = realloc(t->vmas, (t->nvmas + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	t->vmas = nv;
	t->vmas[t->nvmas++] = *v;
	return 0;
}

/* A shared mapping of a shmem object, by its /proc/PID/maps name: shared
 * anonymous memory and shared mappings of /dev/zero show as "/dev/zero
 * (deleted)", memfds as "/memfd:NAME (deleted)". */
static bool shm_mapping(const char *name, bool *memfd)
{
	*memfd = !strncmp(name, "/memfd:", 7) && deleted(name);
	return *memfd || !strcmp(name, "/dev/zero (deleted)") || !strncmp(name, "[anon_shmem:", 12);
}

static int shm_object(struct dumpctx *c, pid_t pid, const char *file, const char *name, bool memfd,
		      uint32_t *id, struct urs_err *err);

/* one mapping line, parsed */
struct map_line {
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	char perms[8];
	const char *name;
};

/* the file mapped last: consecutive mappings of one file (text, data, ...)
 * stat it once */
struct map_file_cache {
	unsigned long long ino;
	unsigned maj, min;
	struct stat st;
};

/* a shared mapping of a shmem object (memfd, /dev/shm, SysV): its object */
static int vma_shmem(struct dumpctx *c, pid_t pid, const struct map_line *m, bool memfd,
		     struct ckpt_vma *v, struct urs_err *err)
{
	v->r.kind = CKPT_VMA_SHMEM;
	v->r.flags = CKPT_VMA_SHARED;
	v->r.pgoff = m->off;
	v->r.dev = makedev(m->maj, m->min);
	v->r.ino = m->ino;
	char mf[96];
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", pid, m->start, m->end);
	int r = shm_object(c, pid, mf, m->name, memfd, &v->r.shm, err);
	if (r)
		return r;
	uint64_t osz = ckpt_shm_span(&c->img.shms[v->r.shm]);
	if (m->off > osz || m->end - m->start > osz - m->off)
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: shared mapping %llx-%llx reaches past the end of its "
				   "memory object",
				   pid, m->start, m->end);
	return 0;
}

/* a mapping of a regular file, by path */
static int vma_file(pid_t pid, const struct map_line *m, struct map_file_cache *fc,
		    struct ckpt_vma *v, struct urs_err *err)
{
	char mf[96];
	struct stat st;
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", pid, m->start, m->end);
	if (m->ino && m->ino == fc->ino && m->maj == fc->maj && m->min == fc->min)
		st = fc->st;
	else if (stat(mf, &st) < 0)
		return urs_err_set(err, -errno, "pid %d: mapping of %s: %m", pid, m->name);
	*fc = (struct map_file_cache){m->ino, m->maj, m->min, st};
	if (!S_ISREG(st.st_mode))
		return urs_err_set(err, -ENOTSUP, "pid %d: mapping of non-regular file %s", pid,
				   m->name);
	v->r.kind = CKPT_VMA_FILE;
	v->r.flags = m->perms[3] == 's' ? CKPT_VMA_SHARED : 0;
	v->r.pgoff = m->off;
	v->r.dev = st.st_dev;
	v->r.ino = st.st_ino;
	v->r.fsize = (uint64_t) st.st_size;
	return (v->path = strdup(m->name)) ? 0 : -ENOMEM;
}

/* what a mapping is: 1 to skip it, 0 with @v filled, or a refusal */
static int vma_classify(struct dumpctx *c, pid_t pid, const struct map_line *m,
			struct map_file_cache *fc, struct ckpt_vma *v, struct urs_err *err)
{
	const char *name = m->name;
	bool shared = m->perms[3] == 's', memfd;
	v->r.start = m->start;
	v->r.end = m->end;
	v->r.prot = (m->perms[0] == 'r' ? PROT_READ : 0) | (m->perms[1] == 'w' ? PROT_WRITE : 0) |
		    (m->perms[2] == 'x' ? PROT_EXEC : 0);
	if (!strcmp(name, "[vsyscall]"))
		return 1; /* fixed kernel page, not a VMA */
	if (!strcmp(name, "[vvar]") || !strcmp(name, "[vvar_vclock]") || !strcmp(name, "[vdso]")) {
		v->r.kind = !strcmp(name, "[vdso]")   ? CKPT_VMA_VDSO
			    : !strcmp(name, "[vvar]") ? CKPT_VMA_VVAR
						      : CKPT_VMA_VVAR_VCLOCK;
		return 0;
	}
	if (!strcmp(name, "[heap]") || !strcmp(name, "[stack]") || (!*name && m->ino == 0)) {
		if (shared)
			return urs_err_set(err, -ENOTSUP,
					   "pid %d: shared anonymous mapping %llx-%llx is not "
					   "supported yet",
					   pid, m->start, m->end);
		v->r.kind = CKPT_VMA_ANON;
		v->r.flags = !strcmp(name, "[heap]")	? CKPT_VMA_HEAP
			     : !strcmp(name, "[stack]") ? CKPT_VMA_STACK
							: 0;
		return 0;
	}
	if (is_io_uring(name))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: io_uring instance (mapping %llx-%llx) cannot be "
				   "checkpointed",
				   pid, m->start, m->end);
	if (shared && shm_mapping(name, &memfd))
		return vma_shmem(c, pid, m, memfd, v, err);
	if (name[0] != '/' || deleted(name) || !strncmp(name, "/SYSV", 5) ||
	    !strncmp(name, "/dev/", 5) || !strncmp(name, "/memfd:", 7))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: mapping %llx-%llx of '%s' is not supported yet", pid,
				   m->start, m->end, name);
	return vma_file(pid, m, fc, v, err);
}

/* the maps read before the freeze for @pid (precopy), or NULL */
static const struct ckpt_maps *maps_before(const struct dumpctx *c, pid_t pid)
{
	for (uint32_t i = 0; i < c->nearly; i++)
		if (c->early[i].pid == pid)
			return &c->early[i].m;
	return NULL;
}

/* one mapping line (maps' format, @fl its CKPT_VMF_* flags) into @t */
static int dump_map(struct dumpctx *c, struct ckpt_task *t, pid_t pid, char *line, uint8_t fl,
		    struct map_file_cache *fc, struct urs_err *err)
{
	struct map_line m;
	int pos = 0;
	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &m.start, &m.end, m.perms, &m.off,
		   &m.maj, &m.min, &m.ino, &pos) < 7)
		return urs_err_set(err, -EINVAL, "pid %d: cannot parse maps line", pid);
	m.name = line + pos;
	/* registered with a userfaultfd in missing mode: its absent pages are
	 * someone's to supply (a lazy restore still at work, or the program's
	 * own pager), not zeros, so it cannot be saved */
	if (fl & CKPT_VMF_UFFD_MISSING)
		return urs_err_set(err, -EBUSY,
				   "pid %d: its memory at %#llx-%#llx is supplied by a userfaultfd "
				   "(a lazy restore still bringing it in, or the program's own): "
				   "absent pages there are not zeros, so it cannot be saved; "
				   "checkpoint once the restore has completed",
				   pid, m.start, m.end);
	struct ckpt_vma v = {0};
	int r = vma_classify(c, pid, &m, fc, &v, err);
	if (r > 0)
		return 0;
	if (fl & CKPT_VMF_NORESERVE)
		v.r.flags |= CKPT_VMA_NORESERVE;
	if (r == 0)
		r = add_vma(t, &v);
	if (r)
		free(v.path);
	return r;
}

static int dump_maps(struct dumpctx *c, struct ckpt_task *t, pid_t pid, struct urs_err *err)
{
	struct ckpt_maps mm;
	int r = ckpt_maps_read(pid, maps_before(c, pid), &mm, err);
	struct map_file_cache fc = {0};
	char *line = mm.text;
	for (uint32_t i = 0; r == 0 && i < mm.n; i++) {
		char *nl = strchr(line, '\n'); /* (every line ends in one) */
		*nl = 0;
		r = dump_map(c, t, pid, line, mm.flags[i], &fc, err);
		line = nl + 1;
	}
	ckpt_maps_free(&mm);
	return r;
}

/* ---- pages -------------------------------------------------------------- */

/* Append a page at @vaddr stored at @off to @runs (@n of them): the last
 * run grows if both are contiguous and it starts at or above @floor, so
 * runs never cross a mapping. */
static int runs_add(struct ckpt_run **runs, uint32_t *n, uint64_t floor, uint64_t vaddr,
		    uint64_t off)
{
	if (*n) {
		struct ckpt_run *last = &(*runs)[*n - 1];
		if (last->vaddr >= floor && last->vaddr + last->npages * CKPT_PAGE_SIZE == vaddr &&
		    last->off + last->npages * CKPT_PAGE_SIZE == off) {
			last->npages++;
			return 0;
		}
	}
	if (!(*n & (*n - 1)) || !*n) {
		size_t cap = *n ? (size_t) *n * 2 : 16;
		struct ckpt_run *nr = realloc(*runs, cap * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		*runs = nr;
	}
	(*runs)[(*n)++] = (struct ckpt_run){vaddr, 1, off};
	return 0;
}

/* -E2BIG past what an image may hold per task (CKPT_MAX_RUNS: a restore
 * would refuse it), with @err said */
static int add_run(struct ckpt_task *t, uint64_t vma_start, uint64_t vaddr, uint64_t off,
		   struct urs_err *err)
{
	uint32_t n = t->nruns;
	int r = runs_add(&t->runs, &t->nruns, vma_start, vaddr, off);
	if (r == 0 && t->nruns > CKPT_MAX_RUNS) {
		t->nruns = n;
		r = urs_err_set(err, -E2BIG,
				"pid %d: its memory is in more than %u runs of pages (an image "
				"holds at most that many per task)",
				t->r.host_pid, CKPT_MAX_RUNS);
	}
	return r;
}

/* Dump `n` pages starting at addr (all selected by pagemap). In a tree of
 * several processes a page others may map too (a fork's, unwritten since)
 * is stored once per frame (ckpt/framemap.h); @pm: the task's pagemap, for
 * those frames. */
static int dump_span(struct dumpctx *c, struct ckpt_task *t, int memfd, int pm, uint64_t vma_start,
		     uint64_t addr, uint64_t n, bool anon, struct urs_err *err)
{
	bool frames = pm >= 0 && c->nseized > 1;
	while (n) {
		uint64_t k = n < CHUNK ? n : CHUNK;
		int r = ckpt_mem_read(memfd, addr, c->chunk, k * CKPT_PAGE_SIZE);
		if (r)
			return urs_err_set(err, r, "pid %d: reading memory at %#" PRIx64 ": %s",
					   t->r.host_pid, addr, strerror(-r));
		if (frames && (r = urs_pagemap_frames(pm, addr, k, c->frames)))
			return urs_err_set(err, r, "pid %d: reading pagemap at %#" PRIx64 ": %s",
					   t->r.host_pid, addr, strerror(-r));
		for (uint64_t i = 0; i < k; i++) {
			const uint8_t *pg = c->chunk + i * CKPT_PAGE_SIZE;
			if (anon && ckpt_page_is_zero(pg)) {
				c->st->zero_pages++;
				continue;
			}
			uint64_t off;
			bool stored; /* (counted once for all: data_pages) */
			r = ckpt_pages_append_frame(&c->pw, pg, frames ? c->frames[i] : 0, &off,
						    &stored, err);
			if (r)
				return r;
			r = add_run(t, vma_start, addr + i * CKPT_PAGE_SIZE, off, err);
			if (r)
				return r;
			c->st->pages++;
		}
		addr += k * CKPT_PAGE_SIZE;
		n -= k;
	}
	return 0;
}

struct pages_walk {
	struct dumpctx *c;
	struct ckpt_task *t;
	int memfd, pm;
	const struct ckpt_vma_rec *m;
	const struct ckpt_precopy_proc *pre; /* the process's pre-copy, or NULL */
	uint32_t cursor;		     /* in pre->pages: pages come in address order */
	struct urs_err *err;
	bool failed; /* dump_span failed (err says why), not the walk */
};

/* A run of pages not written since the pre-copy began: each page whose
 * copy is of the same frame is taken from the pre-copy, the rest read now. */
static int reuse_span(struct pages_walk *w, const struct urs_pm_run *run, bool anon)
{
	uint64_t own[2048];
	for (uint64_t a = run->start; a < run->end;) {
		uint64_t k = (run->end - a) / CKPT_PAGE_SIZE;
		k = k > 2048 ? 2048 : k;
		/* the frames: the walk's (urs_pagemap_walk_pfns), or read now */
		const uint64_t *pfn = run->pfn ? run->pfn + (a - run->start) / CKPT_PAGE_SIZE : own;
		int r = run->pfn ? 0 : urs_pagemap_pfns(w->pm, a, k, own);
		if (r)
			return urs_err_set(w->err, r, "pid %d: reading pagemap: %s",
					   w->t->r.host_pid, strerror(-r));
		for (uint64_t i = 0; i < k; i++, a += CKPT_PAGE_SIZE) {
			const struct ckpt_precopy_page *pg =
				ckpt_precopy_page_from(w->pre, a, &w->cursor);
			if (!pg || !pfn[i] || pg->pfn != pfn[i]) {
				if ((r = dump_span(w->c, w->t, w->memfd, w->pm, w->m->start, a, 1,
						   anon, w->err)))
					return r;
				continue;
			}
			w->c->st->precopy_reused++;
			if (pg->off == CKPT_PRECOPY_ZERO && anon) {
				w->c->st->zero_pages++;
				continue;
			}
			if (pg->off == CKPT_PRECOPY_ZERO) { /* a zero copy over a file page */
				if ((r = dump_span(w->c, w->t, w->memfd, w->pm, w->m->start, a, 1,
						   anon, w->err)))
					return r;
				continue;
			}
			if ((r = add_run(w->t, w->m->start, a, pg->off, w->err)))
				return r;
			w->c->st->pages++;
		}
	}
	return 0;
}

/* Did the pre-copy take at least an eighth of [@start, @end)'s pages? Then
 * reading an entry per page costs at most 8 per page to reuse. */
static bool dense(const struct ckpt_precopy_proc *pre, uint64_t start, uint64_t end)
{
	uint32_t a = 0, b;
	ckpt_precopy_page_from(pre, start, &a);
	b = a;
	ckpt_precopy_page_from(pre, end, &b);
	return (uint64_t) (b - a) * 8 * CKPT_PAGE_SIZE >= end - start;
}

/* A run of touched pages of the VMA: anonymous memory, and in a private file
 * mapping the pages copied on write (not the file's own pages). */
static int dump_run(void *arg, const struct urs_pm_run *run)
{
	struct pages_walk *w = arg;
	bool anon = w->m->kind == CKPT_VMA_ANON;
	bool want = (run->flags & URS_PM_SWAPPED) ||
		    ((run->flags & URS_PM_PRESENT) && (anon || !(run->flags & URS_PM_FILE)));
	if (!want)
		return 0;
	int r = w->pre && (run->flags & URS_PM_PRESENT) && !(run->flags & URS_PM_WRITTEN)
			? reuse_span(w, run, anon)
			: dump_span(w->c, w->t, w->memfd, w->pm, w->m->start, run->start,
				    (run->end - run->start) / CKPT_PAGE_SIZE, anon, w->err);
	w->failed = r != 0;
	return r;
}

static int dump_pages(struct dumpctx *c, struct ckpt_task *t, pid_t pid, int memfd,
		      struct urs_err *err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	_cleanup_close_ int pm = open(path, O_RDONLY | O_CLOEXEC);
	if (pm < 0)
		return urs_err_set(err, -errno, "pid %d: opening pagemap: %m", pid);
	struct pages_walk w = {c, t,   memfd, pm, NULL, ckpt_precopy_proc(&c->pre, pid),
			       0, err, false};
	for (uint32_t v = 0; v < t->nvmas; v++) {
		const struct ckpt_vma_rec *m = &t->vmas[v].r;
		if (m->kind != CKPT_VMA_ANON &&
		    !(m->kind == CKPT_VMA_FILE && !(m->flags & CKPT_VMA_SHARED)))
			continue;
		w.m = m;
		/* pre-copied: runs and frames in one pass (the freeze's largest
		 * cost is these page-table walks) — but one entry per page, holes
		 * included: a huge reservation (a sanitizer's shadow, a JVM's
		 * heap) is walked by PAGEMAP_SCAN, which skips them */
		int r = w.pre && dense(w.pre, m->start, m->end)
				? urs_pagemap_walk_pfns(pm, m->start, m->end, dump_run, &w)
				: urs_pagemap_walk(pm, m->start, m->end, dump_run, &w);
		if (r && !w.failed)
			return urs_err_set(
				err, r, "pid %d: reading pagemap of %#" PRIx64 "-%#" PRIx64 ": %s",
				pid, m->start, m->end, strerror(-r));
		if (r)
			return r;
	}
	return 0;
}

/* ---- shared memory ---------------------------------------------------------
 * Each shmem object mapped shared in the tree (MAP_SHARED|MAP_ANONYMOUS,
 * /dev/zero, a memfd) is saved once, keyed by its device and inode: size,
 * seals and contents, read through /proc/PID/map_files (a file of the same
 * inode): SEEK_DATA/SEEK_HOLE skip what was never touched, all-zero pages are
 * skipped too. Every mapping of it refers to it by index and offset. */

static int add_shm_run(struct ckpt_shm *o, uint64_t objoff, uint64_t off)
{
	return runs_add(&o->runs, &o->nruns, 0, objoff, off);
}

/* Save pages [from, to) of the object (fd) that hold something. */
static int shm_span(struct dumpctx *c, struct ckpt_shm *o, int fd, uint64_t from, uint64_t to,
		    struct urs_err *err)
{
	while (from < to) {
		uint64_t k = (to - from) / CKPT_PAGE_SIZE;
		if (k > CHUNK)
			k = CHUNK;
		memset(c->chunk, 0, k * CKPT_PAGE_SIZE);
		size_t got = 0;
		while (got < k * CKPT_PAGE_SIZE) { /* short at the end of a file */
			ssize_t n = pread(fd, c->chunk + got, k * CKPT_PAGE_SIZE - got,
					  (off_t) (from + got));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return urs_err_set(err, -errno,
						   "reading shared memory object %u: %m", o->r.id);
			if (n == 0)
				break;
			got += (size_t) n;
		}
		for (uint64_t i = 0; i < k; i++) {
			const uint8_t *pg = c->chunk + i * CKPT_PAGE_SIZE;
			if (ckpt_page_is_zero(pg)) {
				c->st->zero_pages++;
				continue;
			}
			uint64_t off;
			int r = ckpt_pages_append(&c->pw, pg, CKPT_PAGE_SIZE, &off, err);
			if (!r)
				r = add_shm_run(o, from + i * CKPT_PAGE_SIZE, off);
			if (r)
				return r;
			c->st->pages++;
		}
		from += k * CKPT_PAGE_SIZE;
	}
	return 0;
}

/* The object behind file (/proc/PID/map_files/RANGE of a mapping, or
 * /proc/PID/fd/N of a memfd fd): found by device and inode, or added and
 * its contents saved. */
static int shm_object(struct dumpctx *c, pid_t pid, const char *file, const char *name, bool memfd,
		      uint32_t *id, struct urs_err *err)
{
	_cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return urs_err_set(err, -errno, "pid %d: shared memory %s (%s): %m", pid, file,
				   name);
	for (uint32_t k = 0; k < c->img.nshms; k++)
		if (c->img.shms[k].r.dev == st.st_dev && c->img.shms[k].r.ino == st.st_ino) {
			*id = k;
			return 0;
		}
	/* the image keeps the exact size (ftruncate at restore); pages are
	 * saved up to the end of the last partial page */
	uint64_t size =
		((uint64_t) st.st_size + CKPT_PAGE_SIZE - 1) & ~(uint64_t) (CKPT_PAGE_SIZE - 1);
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || size > CKPT_MAX_USER_ADDR)
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: shared memory %s ('%s'): unexpected object (size %lld)",
				   pid, file, name, (long long) st.st_size);
	if (c->img.nshms == CKPT_MAX_SHM)
		return urs_err_set(err, -ENOTSUP, "more than %u shared memory objects",
				   CKPT_MAX_SHM);
	struct ckpt_shm *n = realloc(c->img.shms, (c->img.nshms + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->img.shms = n;
	struct ckpt_shm *o = &c->img.shms[c->img.nshms];
	memset(o, 0, sizeof(*o));
	o->r.id = c->img.nshms++;
	o->r.size = (uint64_t) st.st_size;
	o->r.dev = st.st_dev;
	o->r.ino = st.st_ino;
	int seals = fcntl(fd, F_GET_SEALS);
	o->r.seals = seals > 0 ? (uint32_t) seals : 0;
	if (memfd) {
		o->r.flags = CKPT_SHM_MEMFD;
		size_t nl = strlen(name) - 7 - 10; /* "/memfd:" NAME " (deleted)" */
		if (nl >= sizeof(o->r.name))
			nl = sizeof(o->r.name) - 1;
		memcpy(o->r.name, name + 7, nl);
	}
	*id = o->r.id;
	for (uint64_t pos = 0; pos < size;) {
		off_t d = lseek(fd, (off_t) pos, SEEK_DATA);
		if (d < 0 && errno == ENXIO)
			break;
		if (d < 0)
			return urs_err_set(err, -errno, "pid %d: shared memory %s: SEEK_DATA: %m",
					   pid, name);
		off_t h = lseek(fd, d, SEEK_HOLE);
		uint64_t from = (uint64_t) d & ~(uint64_t) (CKPT_PAGE_SIZE - 1);
		uint64_t to = h < 0 ? size
				    : (((uint64_t) h + CKPT_PAGE_SIZE - 1) &
				       ~(uint64_t) (CKPT_PAGE_SIZE - 1));
		if (to > size)
			to = size;
		if (to <= from)
			break;
		int r = shm_span(c, o, fd, from, to, err);
		if (r)
			return r;
		pos = to;
	}
	return 0;
}

/* ---- tree-wide fd facts ----------------------------------------------------
 * Before any task is dumped, every fd of the tree that is a pipe or a socket
 * is listed (inode, and for pipes which ends the tree holds): a pipe or a
 * socketpair on stdio whose other end is in the tree is the workload's own
 * (`a | b` in a shell) and is saved; otherwise it is external stdio. */

struct tree_obj {
	uint64_t ino;
	uint8_t sock, rd, wr, data_done;
};

static struct tree_obj *tree_find(struct dumpctx *c, uint64_t ino, bool sock)
{
	for (uint32_t k = 0; k < c->nobjs; k++)
		if (c->objs[k].ino == ino && c->objs[k].sock == sock)
			return &c->objs[k];
	return NULL;
}

static int tree_add(struct dumpctx *c, uint64_t ino, bool sock, uint32_t acc)
{
	struct tree_obj *o = tree_find(c, ino, sock);
	if (!o) {
		if (urs_grow((void **) &c->objs, &c->capobjs, c->nobjs, sizeof(*c->objs), 16))
			return -ENOMEM;
		o = &c->objs[c->nobjs++];
		memset(o, 0, sizeof(*o));
		o->ino = ino;
		o->sock = sock;
	}
	o->rd |= acc != O_WRONLY;
	o->wr |= acc != O_RDONLY;
	return 0;
}

static int scan_tree_fds(struct dumpctx *c, pid_t pid)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *de;
	int r = 0;
	while (!r && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char what[64], link[64];
		snprintf(what, sizeof(what), "/proc/%d/fd/%s", pid, de->d_name);
		ssize_t n = readlink(what, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		unsigned long long ino;
		if (sscanf(link, "socket:[%llu]", &ino) == 1) {
			r = tree_add(c, ino, true, O_RDWR);
		} else if (sscanf(link, "pipe:[%llu]", &ino) == 1) {
			char info[512];
			snprintf(what, sizeof(what), "/proc/%d/fdinfo/%s", pid, de->d_name);
			if (read_proc1(what, info, sizeof(info)) < 0)
				continue;
			const char *fl = status_field(info, "flags");
			uint32_t flags = fl ? (uint32_t) strtoul(fl, NULL, 8) : 0;
			r = tree_add(c, ino, false, flags & O_ACCMODE);
		}
	}
	closedir(d);
	return r;
}

/* Socket facts of pid's network namespace, read once per namespace. */
static int sockdiag_for(struct dumpctx *c, pid_t pid, const struct ckpt_sockdiag **out,
			struct urs_err *err)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	if (stat(path, &st) < 0)
		return urs_err_set(err, -errno, "pid %d: %s: %m", pid, path);
	if (!c->diag_loaded || c->diag.netns != st.st_ino) {
		ckpt_sockdiag_free(&c->diag);
		c->diag_loaded = false;
		int r = ckpt_sockdiag_load(pid, &c->diag, err);
		if (r)
			return r;
		c->diag_loaded = true;
	}
	*out = &c->diag;
	return 0;
}

/* ---- fds ---------------------------------------------------------------- */

static const char *const ok_chr[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
				     "/dev/urandom"};

/* Is path, resolved inside pid's root (never outside it), the file st? The
 * links in /proc/PID/fd are in the dumper's view: a file of the host (the
 * shim's log, a redirected stdout) shows as a host path that the task's root
 * does not have, or has as another file. */
/* An O_PATH fd of @path resolved inside @pid's root (its root dir fd kept
 * in @c for the next call on the same task), or -1. */
static int open_in_task_root(struct dumpctx *c, pid_t pid, const char *path)
{
	if (c->rootfd < 0 || c->root_pid != pid) {
		if (c->rootfd >= 0)
			close(c->rootfd);
		char root[64];
		snprintf(root, sizeof(root), "/proc/%d/root", pid);
		c->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		c->root_pid = pid;
		if (c->rootfd < 0)
			return -1;
	}
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	return (int) syscall(SYS_openat2, c->rootfd, path, &how, sizeof(how));
}

static bool in_task_root(struct dumpctx *c, pid_t pid, const char *path, const struct stat *st)
{
	if (c->root_memo.pid == pid && c->root_memo.dev == st->st_dev &&
	    c->root_memo.ino == st->st_ino && !strcmp(c->root_memo.path, path))
		return c->root_memo.in;
	_cleanup_close_ int fd = open_in_task_root(c, pid, path);
	struct stat s2;
	bool in = fd >= 0 && fstat(fd, &s2) == 0 && s2.st_dev == st->st_dev &&
		  s2.st_ino == st->st_ino;
	if (strlen(path) < sizeof(c->root_memo.path)) {
		c->root_memo.pid = pid;
		c->root_memo.dev = st->st_dev;
		c->root_memo.ino = st->st_ino;
		c->root_memo.in = in;
		strcpy(c->root_memo.path, path);
	}
	return in;
}

/* A character device of the null/zero/random kind is the device, not its
 * node: @path (the host's /dev/null, say, which a shell saved to fd 10
 * while redirecting stdout) is as good as the node of the same name and
 * the same device number in the task's root, which the restore opens. */
static bool chr_in_task_root(struct dumpctx *c, pid_t pid, const char *path, const struct stat *st)
{
	bool known = false;
	for (size_t k = 0; k < URS_ARRAY_SIZE(ok_chr); k++)
		known |= !strcmp(path, ok_chr[k]);
	if (!S_ISCHR(st->st_mode) || !known)
		return false;
	_cleanup_close_ int fd = open_in_task_root(c, pid, path);
	struct stat s2;
	return fd >= 0 && fstat(fd, &s2) == 0 && S_ISCHR(s2.st_mode) && s2.st_rdev == st->st_rdev;
}

/* Was socket @fd of @pid made in @pid's own network namespace (not the
 * dumper's)? Its namespace by SIOCGSKNS on a copy (pidfd_getfd). A socket
 * of a kind the socket diagnostics do not list (raw, netlink, packet) on
 * fd 0-2 is then the workload's, not stdio handed in from outside. With the
 * host's namespace there is no telling: false. */
static bool sock_in_task_netns(pid_t pid, int fd)
{
	char path[64];
	struct stat tns, self, sns;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	if (stat(path, &tns) < 0 || stat("/proc/self/ns/net", &self) < 0 ||
	    tns.st_ino == self.st_ino)
		return false;
	_cleanup_close_ int pfd = (int) syscall(SYS_pidfd_open, pid, 0);
	_cleanup_close_ int sfd = pfd < 0 ? -1 : (int) syscall(SYS_pidfd_getfd, pfd, fd, 0);
	_cleanup_close_ int nfd = sfd < 0 ? -1 : ioctl(sfd, SIOCGSKNS);
	return nfd >= 0 && fstat(nfd, &sns) == 0 && sns.st_ino == tns.st_ino;
}

/* stdio the restore replaces (CKPT_FD_EXT): a pipe, socket or tty on fd 0-2,
 * or a file outside the task's root (the shim's log, a redirected stdout) —
 * unless it is a pipe both of whose ends, or a unix socket whose peer, the
 * tree holds, or a socket bound to a name or listening (the workload's own) */
static bool external_kind(struct dumpctx *c, pid_t pid, int fd, const char *link,
			  const struct stat *st)
{
	if (S_ISFIFO(st->st_mode) && !strncmp(link, "pipe:", 5)) {
		const struct tree_obj *o = tree_find(c, st->st_ino, false);
		return !o || !o->rd || !o->wr;
	}
	if (S_ISSOCK(st->st_mode)) {
		const struct ckpt_sockdiag *d = NULL;
		struct urs_err e2;
		if (sockdiag_for(c, pid, &d, &e2))
			return true;
		const struct ckpt_sk_info *si = ckpt_sockdiag_find(d, st->st_ino);
		if (!si)
			return !sock_in_task_netns(pid, fd);
		/* a socket bound to a name or listening is never stdio handed in
		 * from outside: the workload made it (and gets it refused or saved) */
		if (si->family == AF_UNIX)
			return !si->named && (!si->peer || !tree_find(c, si->peer, true));
		return si->type != SOCK_DGRAM && si->state != 10 /* TCP_LISTEN */;
	}
	if (S_ISFIFO(st->st_mode))
		return true;
	if (S_ISCHR(st->st_mode) &&
	    (major(st->st_rdev) == 136 || major(st->st_rdev) == 5 || major(st->st_rdev) == 4))
		return true; /* pty slave, /dev/tty + ptmx, vt/ttyS */
	return link[0] == '/' && !deleted(link) && !in_task_root(c, pid, link, st);
}

static bool external_stdio(struct dumpctx *c, pid_t pid, int fd, const char *link,
			   const struct stat *st)
{
	return fd <= 2 && external_kind(c, pid, fd, link, st);
}

/* Was the tree given @st as stdio fd @k (opts->stdio_*)? */
static bool given_as(const struct dumpctx *c, int k, const struct stat *st)
{
	const struct ckpt_dump_opts *o = c->opts;
	return o && o->stdio_dev && o->stdio_ino && o->stdio_ino[k] &&
	       o->stdio_ino[k] == (uint64_t) st->st_ino && o->stdio_dev[k] == (uint64_t) st->st_dev;
}

/* Does task @t's fd @k (dumped already) hold another file than @st, or
 * none: the stdio it was given moved away from there? */
static bool displaced(const struct ckpt_task *t, int k, const struct stat *st)
{
	const struct ckpt_fd_rec *r = NULL;
	for (uint32_t g = 0; g < t->nfds && !r; g++)
		if (t->fds[g].r.fd == k)
			r = &t->fds[g].r;
	for (uint32_t g = 0; r && r->dup_of != -1 && g < t->nfds; g++)
		if (t->fds[g].r.fd == r->dup_of)
			r = &t->fds[g].r;
	return !r || r->ino != (uint64_t) st->st_ino || r->dev != (uint64_t) st->st_dev;
}

/* Which stdio fd @fd (> 2) of task @t is a copy of: the file the tree was
 * given as fd 0, 1 or 2, of a kind external stdio is. A shell redirecting
 * a builtin's output holds its saved stdout there. Where the tree was given
 * one file twice (`>log 2>&1`, a terminal), the one whose fd now holds
 * something else (the redirected one) is taken; else an fd open for
 * writing is stdout before stderr, one for reading stdin. -1: none. */
static int stdio_copy(struct dumpctx *c, const struct ckpt_task *t, pid_t pid, int fd,
		      uint32_t flags, const char *link, const struct stat *st)
{
	static const int wr[3] = {1, 2, 0}, rd[3] = {0, 1, 2};
	const int *order = (flags & O_ACCMODE) == O_RDONLY ? rd : wr;
	int first = -1, moved = -1, nmoved = 0;
	for (int i = 0; i < 3; i++) {
		int k = order[i];
		if (!given_as(c, k, st))
			continue;
		if (first < 0)
			first = k;
		if (displaced(t, k, st) && nmoved++ == 0)
			moved = k;
	}
	if (first < 0 || !external_kind(c, pid, fd, link, st))
		return -1;
	return nmoved == 1 ? moved : first;
}

/* The bytes buffered in the pipe (or FIFO) open as pid's fd, read without
 * consuming them: the dumper opens the same pipe through /proc/PID/fd/N and
 * tee(2)s its contents into a pipe of its own, which it then reads. */
static int pipe_peek(pid_t pid, int fd, uint32_t *cap, uint8_t **data, uint32_t *len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	_cleanup_close_ int pf = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (pf < 0)
		return -errno;
	int sz = fcntl(pf, F_GETPIPE_SZ);
	int n = 0;
	if (sz < 0 || ioctl(pf, FIONREAD, &n) < 0)
		return -errno;
	*cap = (uint32_t) sz;
	*len = 0;
	if (!data || n <= 0)
		return 0;
	*data = NULL;
	if ((uint32_t) n > CKPT_MAX_FDDATA)
		return -E2BIG;
	int tp[2];
	if (pipe2(tp, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	_cleanup_close_ int tr = tp[0], tw = tp[1];
	if (fcntl(tw, F_SETPIPE_SZ, sz) < 0)
		return -errno;
	ssize_t got = tee(pf, tw, (size_t) n, SPLICE_F_NONBLOCK);
	if (got != n)
		return got < 0 ? -errno : -EIO;
	_cleanup_free_ uint8_t *buf = malloc((size_t) n);
	if (!buf)
		return -ENOMEM;
	for (ssize_t off = 0; off < n;) {
		ssize_t k = read(tr, buf + off, (size_t) (n - off));
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		off += k;
	}
	*data = steal_ptr(&buf);
	*len = (uint32_t) n;
	return 0;
}

/* An fd that is the same open file description as a non-dup fd of an
 * earlier task (inherited across fork): found with kcmp. */
static bool shared_with_earlier(struct dumpctx *c, uint32_t idx, pid_t pid, int fd,
				const struct stat *st, struct ckpt_fd *f)
{
	for (uint32_t j = 0; j < idx; j++) {
		const struct ckpt_task *tj = &c->img.tasks[j];
		if (tj->r.zombie)
			continue;
		for (uint32_t g = 0; g < tj->nfds; g++) {
			const struct ckpt_fd *o = &tj->fds[g];
			if (o->r.dup_of != -1 || o->r.xtask || o->r.type == CKPT_FD_EXT ||
			    o->r.ino != st->st_ino || o->r.dev != st->st_dev)
				continue;
			if (syscall(SYS_kcmp, c->tr[j].pid, pid, KCMP_FILE, o->r.fd, fd) == 0) {
				f->r.xtask = j + 1;
				f->r.xfd = o->r.fd;
				f->r.type = o->r.type;
				return true;
			}
		}
	}
	return false;
}

static int dump_epoll(pid_t pid, int fd, const char *info, struct ckpt_fd *f, struct urs_err *err)
{
	uint32_t n = 0;
	for (const char *p = strstr(info, "tfd:"); p; p = strstr(p + 4, "tfd:"))
		n++;
	if (n > CKPT_MAX_EPOLL)
		return urs_err_set(err, -ENOTSUP, "pid %d: fd %d: epoll set too large", pid, fd);
	struct ckpt_epoll_tgt *tg = calloc(n ? n : 1, sizeof(*tg));
	if (!tg)
		return -ENOMEM;
	uint32_t k = 0;
	for (const char *p = strstr(info, "tfd:"); p && k < n; p = strstr(p + 4, "tfd:")) {
		int tfd;
		unsigned events;
		unsigned long long data;
		if (sscanf(p, "tfd: %d events: %x data: %llx", &tfd, &events, &data) != 3) {
			free(tg);
			return urs_err_set(err, -EINVAL, "pid %d: fd %d: cannot parse epoll fdinfo",
					   pid, fd);
		}
		struct {
			uint32_t efd, tfd, toff;
		} slot = {(uint32_t) fd, (uint32_t) tfd, 0};
		if (syscall(SYS_kcmp, pid, pid, KCMP_EPOLL_TFD, tfd, &slot) != 0) {
			free(tg);
			return urs_err_set(err, -ENOTSUP,
					   "pid %d: fd %d: epoll set watches a file that is no "
					   "longer open as fd %d",
					   pid, fd, tfd);
		}
		tg[k++] = (struct ckpt_epoll_tgt){tfd, events, data};
	}
	f->r.type = CKPT_FD_EPOLL;
	f->data = (uint8_t *) tg;
	f->r.data_len = k * (uint32_t) sizeof(*tg);
	return 0;
}

/* A timerfd from its fdinfo: clockid, ticks, settime flags, it_value (the
 * time left; (0, 0) while an expiry of a periodic timer is unread: it is
 * re-armed one period ahead), it_interval. */
static int dump_timerfd(pid_t pid, int fd, const char *info, struct ckpt_fd *f, struct urs_err *err)
{
	const char *ck = status_field(info, "clockid"), *ti = status_field(info, "ticks"),
		   *fl = status_field(info, "settime flags"), *va = status_field(info, "it_value"),
		   *in = status_field(info, "it_interval");
	struct ckpt_timerfd tf = {0};
	long long vs, vn, is, in_;
	if (!ck || !ti || !fl || !va || !in || sscanf(va, " (%lld, %lld)", &vs, &vn) != 2 ||
	    sscanf(in, " (%lld, %lld)", &is, &in_) != 2)
		return urs_err_set(err, -EINVAL, "pid %d: fd %d: cannot parse timerfd fdinfo", pid,
				   fd);
	tf.clockid = (uint32_t) strtoul(ck, NULL, 10);
	tf.ticks = strtoull(ti, NULL, 10);
	tf.settime_flags = (uint32_t) strtoul(fl, NULL, 8);
	tf.value_sec = vs;
	tf.value_nsec = vn;
	tf.interval_sec = is;
	tf.interval_nsec = in_;
	if (!vs && !vn && (is || in_)) { /* expired, unread: the next one a period on */
		tf.value_sec = is;
		tf.value_nsec = in_;
	}
	struct ckpt_timerfd *d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	*d = tf;
	f->r.type = CKPT_FD_TIMERFD;
	f->data = (uint8_t *) d;
	f->r.data_len = sizeof(*d);
	f->r.pos = 0;
	return 0;
}

/* a unix socket's name (listening, or a datagram socket bound) as the fd's
 * data */
static int unix_named(struct ckpt_fd *f, const struct ckpt_sk_info *si, uint32_t type,
		      uint32_t backlog)
{
	struct ckpt_unix_listen *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->type = type;
	l->backlog = backlog;
	l->name_len = si->named;
	memcpy(l->name, si->name, sizeof(l->name));
	f->data = (uint8_t *) l;
	f->r.data_len = sizeof(*l);
	return 0;
}

/* a unix socket: listening on a path, bound for datagrams (syslog), or a
 * connected end whose peer is in the tree (an accepted connection carries
 * its listener's name: it comes back as a socketpair) */
static int dump_unix(struct dumpctx *c, const struct ckpt_sockdiag *d,
		     const struct ckpt_sk_info *si, pid_t pid, int fd, struct ckpt_fd *f,
		     struct urs_err *err)
{
	bool abs_or_abstract = !si->name[0] || si->name[0] == '/';
	if (si->state == 10) {
		if (!si->named || !abs_or_abstract)
			return urs_err_set(
				err, -ENOTSUP,
				"pid %d: fd %d: a unix socket listening %s cannot be checkpointed",
				pid, fd, si->named ? "on a relative path" : "without a name");
		if (si->type != SOCK_STREAM && si->type != SOCK_SEQPACKET)
			return urs_err_set(err, -ENOTSUP, "pid %d: fd %d: unix socket type %u", pid,
					   fd, si->type);
		f->r.type = CKPT_FD_UNIX_LISTEN;
		return unix_named(f, si, si->type, si->backlog);
	}
	if (si->named && !si->peer && si->type == SOCK_DGRAM && abs_or_abstract) {
		/* others send to it by name: its queue is peeked by
		 * dump_sock_injected */
		f->r.type = CKPT_FD_UNIX_BOUND;
		f->r.sub = SOCK_DGRAM;
		return unix_named(f, si, SOCK_DGRAM, 0);
	}
	const struct ckpt_sk_info *pi = si->peer ? ckpt_sockdiag_find(d, si->peer) : NULL;
	if (pi && pi->named && !pi->peer && pi->type == SOCK_DGRAM)
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d: a unix datagram socket connected to a bound one "
				   "(a client of a syslog-like socket) cannot be checkpointed yet",
				   pid, fd);
	if (si->named && !si->peer)
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d: a unix %s socket bound to %s and not connected "
				   "cannot be checkpointed yet",
				   pid, fd, si->type == SOCK_DGRAM ? "datagram" : "stream",
				   abs_or_abstract ? "a name" : "a relative path");
	if (si->peer && !tree_find(c, si->peer, true))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d: unix socket connected to a socket outside the "
				   "sandbox's process tree",
				   pid, fd);
	if (si->type != SOCK_STREAM && si->type != SOCK_DGRAM && si->type != SOCK_SEQPACKET)
		return urs_err_set(err, -ENOTSUP, "pid %d: fd %d: unix socket type %u", pid, fd,
				   si->type);
	f->r.type = CKPT_FD_UNIX;
	f->r.sub = si->type;
	f->r.peer = si->peer;
	if (si->rqlen > CKPT_MAX_FDDATA)
		return urs_err_set(err, -E2BIG, "pid %d: fd %d: %u bytes queued", pid, fd,
				   si->rqlen);
	/* read by dump_injected (MSG_PEEK); for datagrams rqlen is only the
	 * first message's size, so they are always peeked */
	f->r.data_len = si->rqlen;
	return 0;
}

/* a UDP socket, a listening TCP one (their options: dump_injected), or a
 * TCP connection, which restore closes */
static int dump_inet(const struct ckpt_sk_info *si, struct ckpt_fd *f)
{
	if (si->type == SOCK_DGRAM) {
		struct ckpt_inet_udp *u = calloc(1, sizeof(*u));
		if (!u)
			return -ENOMEM;
		u->family = (uint16_t) si->family;
		u->port = si->port;
		u->rport = si->rport;
		memcpy(u->addr, si->addr, 16);
		memcpy(u->raddr, si->raddr, 16);
		f->r.type = CKPT_FD_UDP;
		f->data = (uint8_t *) u;
		f->r.data_len = sizeof(*u);
		return 0;
	}
	if (si->state == 10) {
		struct ckpt_inet_listen *l = calloc(1, sizeof(*l));
		if (!l)
			return -ENOMEM;
		l->family = (uint16_t) si->family;
		l->port = si->port;
		l->backlog = si->backlog;
		memcpy(l->addr, si->addr, 16);
		f->r.type = CKPT_FD_TCP_LISTEN;
		f->data = (uint8_t *) l;
		f->r.data_len = sizeof(*l);
		return 0;
	}
	f->r.type = CKPT_FD_TCP_CLOSED;
	f->r.sub = si->family;
	return 0;
}

static int dump_socket(struct dumpctx *c, pid_t pid, int fd, const struct stat *st,
		       struct ckpt_fd *f, struct urs_err *err)
{
	const struct ckpt_sockdiag *d = NULL;
	int r = sockdiag_for(c, pid, &d, err);
	if (r)
		return r;
	const struct ckpt_sk_info *si = ckpt_sockdiag_find(d, st->st_ino);
	if (!si)
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d: socket:[%llu] is not a unix, TCP or UDP "
				   "socket, which cannot be checkpointed yet",
				   pid, fd, (unsigned long long) st->st_ino);
	return si->family == AF_UNIX ? dump_unix(c, d, si, pid, fd, f, err) : dump_inet(si, f);
}

/* The fd numbers of @pid, ascending (as restore and the image validation
 * expect); returns their count or -errno. */
static int list_fds(pid_t pid, int *nums, unsigned max, struct urs_err *err)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	DIR *d = opendir(path);
	if (!d)
		return urs_err_set(err, -errno, "pid %d: listing fds: %m", pid);
	unsigned n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == max) {
			closedir(d);
			return urs_err_set(err, -ENOTSUP, "pid %d: more than %u open fds", pid,
					   max);
		}
		nums[n++] = atoi(de->d_name);
	}
	closedir(d);
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && nums[j - 1] > nums[j]; j--) {
			int x = nums[j];
			nums[j] = nums[j - 1];
			nums[j - 1] = x;
		}
	return (int) n;
}

/* A pipe or a FIFO (reachable from the task's root): its capacity and,
 * once per object, its buffered bytes. */
static int dump_pipe(struct dumpctx *c, pid_t pid, int fd, char **link, const struct stat *st,
		     uint32_t flags, struct ckpt_fd *f, struct urs_err *err)
{
	bool is_pipe = !strncmp(*link, "pipe:", 5);
	if (is_pipe && (flags & O_ACCMODE) == O_RDWR)
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d: a pipe opened read-write (through /proc) cannot "
				   "be checkpointed yet",
				   pid, fd);
	if (!is_pipe && !in_task_root(c, pid, *link, st))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d (%s) is not reachable from the process's root "
				   "directory",
				   pid, fd, *link);
	f->r.type = is_pipe ? CKPT_FD_PIPE : CKPT_FD_FIFO;
	f->r.pos = 0;
	if (!is_pipe && tree_add(c, st->st_ino, false, O_RDWR))
		return -ENOMEM;
	struct tree_obj *o = tree_find(c, st->st_ino, false);
	uint32_t cap = 0, len = 0;
	uint8_t *data = NULL;
	int r = pipe_peek(pid, fd, &cap, o && !o->data_done ? &data : NULL, &len);
	if (r)
		return urs_err_set(err, r, "pid %d: fd %d (%s): reading its buffered data: %s", pid,
				   fd, *link, strerror(-r));
	if (o)
		o->data_done = 1;
	f->r.sub = cap;
	f->data = data;
	f->r.data_len = data ? len : 0;
	if (!is_pipe)
		f->path = steal_ptr(link);
	return 0;
}

/* eventfd, signalfd, timerfd, epoll: 1 if @link is one of them (dumped), 0
 * if not, or -errno */
static int dump_anon(pid_t pid, int fd, const char *link, const char *info, struct ckpt_fd *f,
		     struct urs_err *err)
{
	if (!strcmp(link, "anon_inode:[eventfd]")) {
		const char *cnt = status_field(info, "eventfd-count");
		const char *sem = status_field(info, "eventfd-semaphore");
		if (!cnt)
			return urs_err_set(err, -EINVAL, "pid %d: fd %d: no eventfd-count", pid,
					   fd);
		f->r.type = CKPT_FD_EVENTFD;
		f->r.pos = strtoull(cnt, NULL, 16);
		f->r.sub = sem ? (uint32_t) strtoul(sem, NULL, 10) : 0;
		return 1;
	}
	if (!strcmp(link, "anon_inode:[signalfd]")) {
		const char *m = status_field(info, "sigmask");
		if (!m)
			return urs_err_set(err, -EINVAL, "pid %d: fd %d: no sigmask", pid, fd);
		f->r.type = CKPT_FD_SIGNALFD;
		f->r.pos = strtoull(m, NULL, 16);
		return 1;
	}
	int r = 0;
	if (!strcmp(link, "anon_inode:[timerfd]"))
		r = dump_timerfd(pid, fd, info, f, err);
	else if (!strcmp(link, "anon_inode:[eventpoll]"))
		r = dump_epoll(pid, fd, info, f, err); /* (no position) */
	else
		return 0;
	return r ? r : 1;
}

/* A file by its path: a regular file, a directory, or one of the devices
 * every sandbox has (ok_chr), reachable from the task's root. */
static int dump_path(struct dumpctx *c, pid_t pid, int fd, char **link, const struct stat *st,
		     struct ckpt_fd *f, struct urs_err *err)
{
	const char *l = *link;
	if (l[0] == '/' && deleted(l) && (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d: %.*s was unlinked while open (a deleted file "
				   "cannot be checkpointed)",
				   pid, fd, (int) strlen(l) - 10, l);
	if (l[0] != '/' || deleted(l))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d (%s) is not supported yet (only regular files, "
				   "directories, /dev/null-like devices, pipes, FIFOs, eventfd, "
				   "epoll, signalfd, timerfd, unix socketpairs, TCP and UDP "
				   "sockets)",
				   pid, fd, l);
	if (!in_task_root(c, pid, l, st) && !chr_in_task_root(c, pid, l, st))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d (%s) is not reachable from the process's root "
				   "directory",
				   pid, fd, l);
	if (S_ISREG(st->st_mode)) {
		f->r.type = CKPT_FD_REG;
	} else if (S_ISDIR(st->st_mode)) {
		f->r.type = CKPT_FD_DIR;
	} else if (S_ISCHR(st->st_mode)) {
		bool ok = false;
		for (size_t k = 0; k < URS_ARRAY_SIZE(ok_chr); k++)
			ok |= !strcmp(l, ok_chr[k]);
		if (!ok)
			return urs_err_set(err, -ENOTSUP,
					   "pid %d: fd %d: device %s is not supported yet", pid, fd,
					   l);
		f->r.type = CKPT_FD_CHR;
	} else {
		return urs_err_set(err, -ENOTSUP, "pid %d: fd %d (%s) is not supported yet", pid,
				   fd, l);
	}
	f->path = steal_ptr(link);
	return 0;
}

/* What fd @fd of task @idx is, into @f (zeroed); @info: a 64 KiB buffer. */
static int dump_fd(struct dumpctx *c, uint32_t idx, int fd, char *info, struct ckpt_fd *f,
		   struct urs_err *err)
{
	struct ckpt_task *t = &c->img.tasks[idx];
	pid_t pid = c->tr[idx].pid;
	char path[96], what[32];
	f->r.fd = fd;
	f->r.dup_of = -1;
	snprintf(what, sizeof(what), "fd/%d", fd);
	_cleanup_free_ char *link = read_link(pid, what);
	if (!link)
		return urs_err_set(err, -errno, "pid %d: fd %d: readlink: %m", pid, fd);
	if (is_io_uring(link))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d is an io_uring instance, which cannot be "
				   "checkpointed",
				   pid, fd);
	bool of_ext = false; /* a duplicate of external stdio */
	for (unsigned g = 0; g < t->nfds && f->r.dup_of == -1; g++)
		if (t->fds[g].r.dup_of == -1 &&
		    syscall(SYS_kcmp, pid, pid, KCMP_FILE, t->fds[g].r.fd, fd) == 0) {
			f->r.dup_of = t->fds[g].r.fd;
			of_ext = t->fds[g].r.type == CKPT_FD_EXT;
		}
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	int r = read_proc1(path, info, 65536);
	if (r < 0)
		return urs_err_set(err, r, "pid %d: fd %d: fdinfo: %s", pid, fd, strerror(-r));
	if (r >= 65535) /* an epoll set this large would be cut short */
		return urs_err_set(err, -ENOTSUP, "pid %d: fd %d: fdinfo larger than 64 KiB", pid,
				   fd);
	/* the locks this process holds on the file (fs/proc/fd.c): not saved,
	 * and a restore without them would let another writer in (CRIU
	 * refuses too unless --file-locks, which saves them) */
	if (!strncmp(info, "lock:", 5) || strstr(info, "\nlock:"))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: fd %d (%s) holds a file lock, and file locks are not "
				   "checkpointed",
				   pid, fd, link);
	const char *fl = status_field(info, "flags");
	uint32_t flags = fl ? (uint32_t) strtoul(fl, NULL, 8) : 0;
	f->r.cloexec = !!(flags & O_CLOEXEC);
	/* an fd sharing external stdio's open file: the stdio it was given as
	 * decides what the restore gives it (below), not which earlier fd
	 * shares it now (`>log 2>&1`, with bash's saved stdout while fd 1 is
	 * redirected, is stdout, not stderr) */
	int dup = f->r.dup_of;
	if (dup != -1 && !of_ext)
		return 0;
	f->r.dup_of = -1;
	f->r.oflags = flags & ~(uint32_t) O_CLOEXEC;
	const char *ps = status_field(info, "pos");
	f->r.pos = ps ? strtoull(ps, NULL, 10) : 0;
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	if (stat(path, &st) < 0)
		return urs_err_set(err, -errno, "pid %d: fd %d (%s): %m", pid, fd, link);
	f->r.dev = st.st_dev;
	f->r.ino = st.st_ino;
	f->r.rdev = st.st_rdev;
	/* on fd 0-2, a duplicate of external stdio is stdio of its own when
	 * the tree was given it so (`>log 2>&1`: fd 2 is then stderr, not a
	 * copy of stdout); one the workload made (`exec 2>&1`) stays a copy */
	int k;
	if (fd > 2)
		k = stdio_copy(c, t, pid, fd, flags, link, &st);
	else if ((dup == -1 || given_as(c, fd, &st)) && external_stdio(c, pid, fd, link, &st))
		k = 0;
	else
		k = -1;
	if (k >= 0) {
		f->r.type = CKPT_FD_EXT;
		f->r.sub = (uint32_t) k; /* (fd 0-2: 0, the fd itself) */
		f->r.pos = 0;
		return 0;
	}
	if (dup != -1) { /* not known as a copy of stdio: a duplicate as before */
		f->r = (struct ckpt_fd_rec){.fd = fd, .dup_of = dup, .cloexec = f->r.cloexec};
		return 0;
	}
	if (shared_with_earlier(c, idx, pid, fd, &st, f))
		return 0;
	bool memfd;
	if (S_ISREG(st.st_mode) && shm_mapping(link, &memfd) && memfd) {
		/* a memfd: the object its mappings use too (path: /proc/PID/fd/N) */
		f->r.type = CKPT_FD_SHM;
		return shm_object(c, pid, path, link, true, &f->r.sub, err);
	}
	if (!strncmp(link, "pipe:", 5) ||
	    (S_ISFIFO(st.st_mode) && link[0] == '/' && !deleted(link)))
		return dump_pipe(c, pid, fd, &link, &st, flags, f, err);
	if ((r = dump_anon(pid, fd, link, info, f, err)) != 0) {
		if (r > 0 && !strcmp(link, "anon_inode:[eventpoll]"))
			f->r.pos = 0;
		return r < 0 ? r : 0;
	}
	if (S_ISSOCK(st.st_mode)) {
		f->r.pos = 0;
		return dump_socket(c, pid, fd, &st, f, err);
	}
	return dump_path(c, pid, fd, &link, &st, f, err);
}

static int dump_fds(struct dumpctx *c, uint32_t idx, struct urs_err *err)
{
	struct ckpt_task *t = &c->img.tasks[idx];
	int nums[4096];
	int n = list_fds(c->tr[idx].pid, nums, URS_ARRAY_SIZE(nums), err);
	if (n < 0)
		return n;
	t->fds = calloc(n ? (size_t) n : 1, sizeof(*t->fds));
	if (!t->fds)
		return -ENOMEM;
	_cleanup_free_ char *info = malloc(65536);
	if (!info)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct ckpt_fd *f = &t->fds[t->nfds];
		memset(f, 0, sizeof(*f));
		int r = dump_fd(c, idx, nums[i], info, f, err);
		if (r)
			return r;
		t->nfds++;
	}
	return 0;
}

/* ---- injected queries ---------------------------------------------------- */

static bool sys_failed(long r)
{
	return (unsigned long) r > -4096ul;
}

#define PEEK_SCRATCH (256u * 1024) /* scratch for peeking queues: 4 KiB + one read */
#define MAX_MSGS     65536u

static int sockopt_int(struct ckpt_tracee *tr, int memfd, uint64_t scratch, int fd, int opt,
		       bool set, int32_t *v)
{
	int32_t buf[2] = {*v, 4}; /* value, optlen */
	long ret = 0;
	int r = ckpt_mem_write(memfd, scratch, buf, sizeof(buf));
	if (!r)
		r = ckpt_inject(tr, set ? SYS_setsockopt : SYS_getsockopt, (uint64_t) fd,
				SOL_SOCKET, (uint64_t) opt, scratch, set ? 4 : scratch + 4, 0,
				&ret);
	if (!r && sys_failed(ret))
		r = (int) ret;
	if (!r && !set)
		r = ckpt_mem_read(memfd, scratch, v, sizeof(*v));
	return r;
}

/* Every byte queued on the unix socket f, nothing consumed: with SO_PEEK_OFF
 * set, successive MSG_PEEK reads walk the queue (a stream read stops where
 * the writer changes, a datagram read returns one message); the socket's own
 * peek offset is put back. Stream: the bytes; datagram and seqpacket: each
 * message as {u32 length, bytes}. */
static int peek_unix(struct ckpt_fd *f, struct ckpt_tracee *tr, int memfd, uint64_t scratch,
		     struct urs_err *err)
{
	pid_t pid = tr->pid;
	bool stream = f->r.sub == SOCK_STREAM;
	uint32_t want = f->r.data_len; /* stream: the whole queue */
	uint64_t buf = scratch + 4096, cap = PEEK_SCRATCH - 4096;
	f->r.data_len = 0;
	int32_t old = -1, zero = 0;
	int r = sockopt_int(tr, memfd, scratch, f->r.fd, SO_PEEK_OFF, false, &old);
	if (!r)
		r = sockopt_int(tr, memfd, scratch, f->r.fd, SO_PEEK_OFF, true, &zero);
	if (r)
		return urs_err_set(err, r, "pid %d: fd %d: SO_PEEK_OFF: %s", pid, f->r.fd,
				   strerror(-r));
	uint8_t *data = NULL;
	uint32_t len = 0, nmsg = 0;
	for (;;) {
		if (stream && len == want)
			break;
		long n = 0;
		r = ckpt_inject(tr, SYS_recvfrom, (uint64_t) f->r.fd, buf, cap,
				MSG_PEEK | MSG_DONTWAIT | (stream ? 0 : MSG_TRUNC), 0, 0, &n);
		if (!r && n == -EAGAIN)
			break;
		if (!r && sys_failed(n))
			r = (int) n;
		if (r)
			break;
		if (stream && n == 0)
			break; /* shut down: nothing more */
		if ((uint64_t) n > (stream ? cap : 32768) || ++nmsg > MAX_MSGS ||
		    len + (uint64_t) n + 4 > CKPT_MAX_FDDATA) {
			r = -E2BIG;
			break;
		}
		uint8_t *nd = realloc(data, len + (size_t) n + 4);
		if (!nd) {
			r = -ENOMEM;
			break;
		}
		data = nd;
		if (!stream) {
			uint32_t ml = (uint32_t) n;
			memcpy(data + len, &ml, 4);
			len += 4;
		}
		r = ckpt_mem_read(memfd, buf, data + len, (size_t) n);
		if (r)
			break;
		len += (uint32_t) n;
	}
	int r2 = sockopt_int(tr, memfd, scratch, f->r.fd, SO_PEEK_OFF, true, &old);
	if (!r && stream && len != want)
		r = -EIO;
	if (!r)
		r = r2;
	if (r) {
		free(data);
		return urs_err_set(
			err, r == -E2BIG ? -ENOTSUP : r,
			"pid %d: fd %d: reading the unix socket's queue: %s", pid, f->r.fd,
			r == -E2BIG ? "a message or the queue is too large" : strerror(-r));
	}
	f->data = data;
	f->r.data_len = data ? len : 0;
	return 0;
}

/* Four int socket options of @fd into @dst (getsockopt in the task); an
 * option level IPPROTO_IPV6 is skipped (left 0) unless @v6. */
static int sock_opts(struct ckpt_tracee *tr, int memfd, uint64_t scratch, int fd,
		     const int opts[4][2], uint32_t *dst[4], bool v6)
{
	int r = 0;
	for (int o = 0; o < 4 && !r; o++) {
		if (opts[o][0] == IPPROTO_IPV6 && !v6)
			continue;
		long ret = 0;
		uint32_t v[2] = {0, 4}; /* value, optlen */
		r = ckpt_mem_write(memfd, scratch, v, sizeof(v));
		if (!r)
			r = ckpt_inject(tr, SYS_getsockopt, (uint64_t) fd, (uint64_t) opts[o][0],
					(uint64_t) opts[o][1], scratch, scratch + 4, 0, &ret);
		if (!r && sys_failed(ret))
			r = (int) ret;
		if (!r)
			r = ckpt_mem_read(memfd, scratch, v, sizeof(v));
		if (!r)
			*dst[o] = v[0];
	}
	return r;
}

/* Socket state only the task's own syscalls can read: the bytes queued on a
 * unix socket (peek_unix) and the options of a listening TCP socket or a
 * UDP socket (getsockopt). Errors are reported with the fd (err set). */
static int dump_sock_injected(struct ckpt_task *t, struct ckpt_tracee *tr, int memfd,
			      uint64_t scratch, struct urs_err *err)
{
	static const int tcp[4][2] = {{SOL_SOCKET, SO_REUSEADDR},
				      {SOL_SOCKET, SO_REUSEPORT},
				      {IPPROTO_IPV6, IPV6_V6ONLY},
				      {IPPROTO_TCP, TCP_NODELAY}};
	static const int udp[4][2] = {{SOL_SOCKET, SO_REUSEADDR},
				      {SOL_SOCKET, SO_REUSEPORT},
				      {IPPROTO_IPV6, IPV6_V6ONLY},
				      {SOL_SOCKET, SO_BROADCAST}};
	for (uint32_t k = 0; k < t->nfds; k++) {
		struct ckpt_fd *f = &t->fds[k];
		int r = 0;
		if (f->r.dup_of != -1 || f->r.xtask)
			continue;
		if (f->r.type == CKPT_FD_UNIX && (f->r.data_len || f->r.sub != SOCK_STREAM)) {
			r = peek_unix(f, tr, memfd, scratch, err);
			if (r)
				return r;
			continue;
		}
		if (f->r.type == CKPT_FD_UNIX_BOUND) { /* the name, then its datagrams */
			uint8_t *hdr = f->data;
			f->data = NULL;
			f->r.data_len = 0;
			r = peek_unix(f, tr, memfd, scratch, err);
			uint8_t *all =
				r ? NULL : malloc(sizeof(struct ckpt_unix_listen) + f->r.data_len);
			if (!r && !all)
				r = -ENOMEM;
			if (all) {
				memcpy(all, hdr, sizeof(struct ckpt_unix_listen));
				if (f->r.data_len)
					memcpy(all + sizeof(struct ckpt_unix_listen), f->data,
					       f->r.data_len);
				f->r.data_len += (uint32_t) sizeof(struct ckpt_unix_listen);
			}
			free(hdr);
			free(f->data);
			f->data = all;
			if (r)
				return r;
			continue;
		}
		if (f->r.type == CKPT_FD_TCP_LISTEN) {
			struct ckpt_inet_listen *l = (struct ckpt_inet_listen *) f->data;
			uint32_t *dst[4] = {&l->reuseaddr, &l->reuseport, &l->v6only, &l->nodelay};
			r = sock_opts(tr, memfd, scratch, f->r.fd, tcp, dst, l->family == AF_INET6);
		} else if (f->r.type == CKPT_FD_UDP) {
			struct ckpt_inet_udp *u = (struct ckpt_inet_udp *) f->data;
			uint32_t *dst[4] = {&u->reuseaddr, &u->reuseport, &u->v6only,
					    &u->broadcast};
			r = sock_opts(tr, memfd, scratch, f->r.fd, udp, dst, u->family == AF_INET6);
		}
		if (r)
			return urs_err_set(err, r, "pid %d: fd %d: getsockopt: %s", tr->pid,
					   f->r.fd, strerror(-r));
	}
	return 0;
}

/* Scratch memory in the task for the injected queries' answers. Small
 * queries use a window of the task's own stack below its stack pointer and
 * the 128-byte red zone (free by the ABI: a signal frame would go there),
 * when that is a private anonymous writable mapping whose pages are present,
 * so nothing is faulted in or grown; its bytes are saved and written back
 * afterwards. Else (or for the large buffer of unix socket peeks) a mapping
 * of its own: an injected mmap and munmap, two injections more. */
#define STACK_SCRATCH 128 /* a siginfo; the largest answer is 32 bytes */

struct scratch {
	uint64_t addr, len;
	bool on_stack;
	uint8_t saved[STACK_SCRATCH];
	uint64_t map_addr, map_len; /* the query blob's region (scratch in it) */
};

static bool stack_window(const struct ckpt_task *t, pid_t pid, int memfd, uint64_t rsp,
			 struct scratch *s)
{
	if (rsp < 65536)
		return false;
	uint64_t lo = (rsp - 128 - STACK_SCRATCH) & ~15ull, hi = lo + STACK_SCRATCH;
	bool ok = false;
	for (uint32_t v = 0; v < t->nvmas && !ok; v++) {
		const struct ckpt_vma_rec *m = &t->vmas[v].r;
		ok = m->kind == CKPT_VMA_ANON && (m->prot & PROT_WRITE) && m->start <= lo &&
		     hi <= m->end;
	}
	if (!ok)
		return false;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	_cleanup_close_ int pm = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t pme[2] = {0, 0}, first = lo / CKPT_PAGE_SIZE,
		 n = (hi - 1) / CKPT_PAGE_SIZE - first + 1;
	if (pm < 0 || pread(pm, pme, n * 8, (off_t) (first * 8)) != (ssize_t) (n * 8))
		return false;
	/* present, and not write-protected by a userfaultfd (bit 57): the
	 * injected call writing there would block in the fault handler, a
	 * stopped task of the tree, forever */
	for (uint64_t i = 0; i < n; i++)
		if (!(pme[i] & PM_PRESENT) || (pme[i] & (1ull << 57)))
			return false;
	if (ckpt_mem_read(memfd, lo, s->saved, STACK_SCRATCH))
		return false;
	s->addr = lo;
	s->len = STACK_SCRATCH;
	s->on_stack = true;
	return true;
}

static int scratch_get(const struct ckpt_task *t, struct ckpt_tracee *tr, int memfd, uint64_t len,
		       struct scratch *s)
{
	memset(s, 0, sizeof(*s));
	if (len <= STACK_SCRATCH && stack_window(t, tr->pid, memfd, tr->base.rsp, s))
		return 0;
	len = len < 4096 ? 4096 : len;
	long addr = 0;
	int r = ckpt_inject(tr, SYS_mmap, 0, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t) -1, 0, &addr);
	if (!r && sys_failed(addr))
		r = (int) addr;
	if (r)
		return r;
	s->addr = (uint64_t) addr;
	s->len = len;
	return 0;
}

static int scratch_put(struct ckpt_tracee *tr, int memfd, struct scratch *s)
{
	if (s->on_stack)
		return ckpt_mem_write(memfd, s->addr, s->saved, STACK_SCRATCH);
	uint64_t addr = s->map_len ? s->map_addr : s->addr, len = s->map_len ? s->map_len : s->len;
	if (!len)
		return 0;
	long ret = 0;
	int r = ckpt_inject(tr, SYS_munmap, addr, len, 0, 0, 0, 0, &ret);
	return r ? r : sys_failed(ret) ? (int) ret : 0;
}

/* A SIGTRAP queued by someone else for the thread while it was stopped
 * was merged into a single-step's trap (ckpt_inject, t->trap_foreign):
 * the thread queues it to itself again, as it was (two-stop injection,
 * so that no trap of ours meets it). */
static int requeue_trap(struct ckpt_tracee *tr, int memfd, const struct scratch *s, int32_t tgid,
			int32_t tid)
{
	if (!tr->trap_foreign || !s->addr)
		return 0; /* (no scratch: an error path, the dump fails anyway) */
	tr->trap_foreign = 0;
	int step = tr->step;
	tr->step = 0;
	long ret = 0;
	int r = ckpt_mem_write(memfd, s->addr, tr->trap_info, sizeof(tr->trap_info));
	if (!r)
		r = ckpt_inject(tr, SYS_rt_tgsigqueueinfo, (uint64_t) tgid, (uint64_t) tid, SIGTRAP,
				s->addr, 0, 0, &ret);
	tr->step = step;
	return r ? r : sys_failed(ret) ? (int) ret : 0;
}

/* May injections into this thread single-step (one stop each)? Only if
 * the process's SIGTRAP handler is SIG_DFL (neither caught nor ignored:
 * the step's forced SIGTRAP would reset it) and no SIGTRAP is queued for
 * the thread (the step's would merge into it). */
static bool can_step(uint64_t sigcgt, const struct ckpt_siginfo *sigs, uint32_t nsigs)
{
	if (sigcgt & (1ull << (SIGTRAP - 1)))
		return false;
	for (uint32_t k = 0; k < nsigs; k++) {
		int32_t signo;
		memcpy(&signo, sigs[k].info, sizeof(signo));
		if (signo == SIGTRAP && !sigs[k].shared)
			return false;
	}
	return true;
}

/* ---- the query blob ----------------------------------------------------
 * When the task allows one-stop injections (can_step), its queries run as
 * one piece of code instead of one injection each: the dumper maps a region
 * PROT_READ | PROT_EXEC (never writable and executable at once: fine under
 * MDWE), writes into it code that first makes the region's data part
 * writable (mprotect; on failure it jumps to the end), then per query moves
 * its six arguments, runs `syscall` and stores rax in the data part, and
 * ends in an int3: one stop for all the queries, whose answers come back in
 * one read. Without an executable mapping (SELinux execmem, a seccomp
 * filter refusing it) the queries are injected one by one. */

#define BLOB_MAXQ     (CKPT_NSIG + 8)
#define BLOB_QBYTES   82 /* 7 movabs + syscall + movabs to memory */
#define BLOB_OUT      32 /* an answer's slot: struct kernel_sigaction, itimerval */
#define BLOB_NOANSWER UINT32_MAX

struct blob_q {
	long nr;
	uint64_t a[5]; /* rdi rsi rdx r10 r8; r9 is 0 */
	uint32_t out;  /* answer slot written through an argument, or BLOB_NOANSWER */
	int outarg;    /* which argument points at it */
};

static uint8_t *emit_mov(uint8_t *p, uint8_t rex, uint8_t op, uint64_t imm)
{
	*p++ = rex;
	*p++ = op;
	memcpy(p, &imm, 8);
	return p + 8;
}

/* mov rax/rdi/rsi/rdx/r10/r8/r9, imm64; syscall; mov [res], rax (if res) */
static uint8_t *emit_syscall(uint8_t *p, long nr, const uint64_t a[6], uint64_t res)
{
	static const uint8_t ops[7][2] = {{0x48, 0xb8}, {0x48, 0xbf}, {0x48, 0xbe}, {0x48, 0xba},
					  {0x49, 0xba}, {0x49, 0xb8}, {0x49, 0xb9}};
	p = emit_mov(p, ops[0][0], ops[0][1], (uint64_t) nr);
	for (int i = 0; i < 6; i++)
		p = emit_mov(p, ops[i + 1][0], ops[i + 1][1], a[i]);
	*p++ = 0x0f;
	*p++ = 0x05;
	return res ? emit_mov(p, 0x48, 0xa3, res) : p;
}

/* Run the queries of dump_injected as a blob. 1: no blob here (nothing
 * changed, inject one by one); 0: done, with *sc the scratch for the
 * socket queries inside the region (unmapped by scratch_put); <0: error. */
static int queries_blob(struct ckpt_task *t, struct ckpt_tracee *tr, int memfd, uint64_t sigcgt,
			uint64_t slen, struct scratch *sc)
{
	struct blob_q q[BLOB_MAXQ];
	uint32_t nq = 0, nout = 0;
	q[nq++] = (struct blob_q){.nr = SYS_brk, .out = BLOB_NOANSWER};
	for (unsigned s = 1; s <= CKPT_NSIG; s++)
		if ((sigcgt & (1ull << (s - 1))) && s != SIGKILL && s != SIGSTOP)
			q[nq++] = (struct blob_q){.nr = SYS_rt_sigaction,
						  .a = {s, 0, 0, 8},
						  .out = nout++,
						  .outarg = 2};
	for (unsigned which = 0; which < 3; which++)
		q[nq++] = (struct blob_q){
			.nr = SYS_getitimer, .a = {which}, .out = nout++, .outarg = 1};
	q[nq++] = (struct blob_q){.nr = SYS_sigaltstack, .out = nout++, .outarg = 1};
	q[nq++] = (struct blob_q){
		.nr = SYS_prctl, .a = {PR_GET_TID_ADDRESS}, .out = nout++, .outarg = 1};
	q[nq++] = (struct blob_q){.nr = SYS_prctl, .a = {PR_GET_THP_DISABLE}, .out = BLOB_NOANSWER};
	/* region: code pages, then data: nq results, nout answer slots, scratch */
	uint64_t clen = ((uint64_t) (nq + 1) * BLOB_QBYTES + 16 + CKPT_PAGE_SIZE - 1) &
			~(uint64_t) (CKPT_PAGE_SIZE - 1);
	uint64_t ans = (uint64_t) nq * 8, sofs = ans + (uint64_t) nout * BLOB_OUT;
	uint64_t dlen = (sofs + slen + CKPT_PAGE_SIZE - 1) & ~(uint64_t) (CKPT_PAGE_SIZE - 1);
	long base = 0;
	int r = ckpt_inject(tr, SYS_mmap, 0, clen + dlen, PROT_READ | PROT_EXEC,
			    MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t) -1, 0, &base);
	if (r)
		return r;
	if (sys_failed(base))
		return 1;
	sc->map_addr = (uint64_t) base;
	sc->map_len = clen + dlen;
	uint64_t data = (uint64_t) base + clen;
	_cleanup_free_ uint8_t *code = malloc(clen);
	_cleanup_free_ uint64_t *res = malloc(sofs);
	if (!code || !res)
		return -ENOMEM;
	uint8_t *p = code;
	uint64_t a[6] = {data, dlen, PROT_READ | PROT_WRITE};
	p = emit_syscall(p, SYS_mprotect, a, 0);
	static const uint8_t test_jnz[] = {0x48, 0x85, 0xc0, 0x0f, 0x85};
	memcpy(p, test_jnz, sizeof(test_jnz));
	p += sizeof(test_jnz);
	uint8_t *rel = p;
	p += 4;
	for (uint32_t i = 0; i < nq; i++) {
		memset(a, 0, sizeof(a));
		memcpy(a, q[i].a, sizeof(q[i].a));
		if (q[i].out != BLOB_NOANSWER)
			a[q[i].outarg] = data + ans + (uint64_t) q[i].out * BLOB_OUT;
		p = emit_syscall(p, q[i].nr, a, data + (uint64_t) i * 8);
	}
	*p++ = 0x31; /* xor eax, eax: done */
	*p++ = 0xc0;
	int32_t jump = (int32_t) (p - (rel + 4));
	memcpy(rel, &jump, 4);
	*p++ = 0xcc; /* int3 */
	uint64_t codelen = (uint64_t) (p - code);
	struct user_regs_struct regs;
	if (ckpt_mem_write(memfd, (uint64_t) base, code, codelen))
		return 1; /* no forced writes through /proc/PID/mem */
	r = ckpt_run_code(tr, (uint64_t) base, (uint64_t) base + codelen, &regs);
	if (r)
		return r;
	if (regs.rax) /* the mprotect failed: nothing else ran */
		return 1;
	r = ckpt_mem_read(memfd, data, res, sofs);
	if (r)
		return r;
	for (uint32_t i = 0; i < nq; i++) {
		if (q[i].nr != SYS_brk && sys_failed((long) res[i]))
			return (int) res[i];
		if (q[i].nr == SYS_brk) {
			t->r.mm.brk = res[i];
			continue;
		}
		if (q[i].nr == SYS_prctl && q[i].a[0] == PR_GET_THP_DISABLE) { /* its value */
			t->r.thp_disable = (uint32_t) res[i];
			continue;
		}
		const uint8_t *o = (const uint8_t *) res + ans + (uint64_t) q[i].out * BLOB_OUT;
		if (q[i].nr == SYS_rt_sigaction) {
			memcpy(&t->r.sigact[q[i].a[0] - 1], o, sizeof(t->r.sigact[0]));
		} else if (q[i].nr == SYS_getitimer) {
			memcpy(t->r.itimer[q[i].a[0]], o, sizeof(t->r.itimer[0]));
		} else if (q[i].nr == SYS_sigaltstack) {
			stack_t ss;
			memcpy(&ss, o, sizeof(ss));
			t->r.altstack_sp = (uint64_t) (uintptr_t) ss.ss_sp;
			t->r.altstack_size = ss.ss_size;
			t->r.altstack_flags = (uint32_t) ss.ss_flags;
		} else {
			memcpy(&t->r.clear_child_tid, o, sizeof(t->r.clear_child_tid));
		}
	}
	sc->addr = data + sofs;
	sc->len = slen;
	return 0;
}

/* Offset of the first `syscall` in our own vdso (the kernel maps the same
 * image into every task), 0 if none; 1 until looked for. */
static uint64_t own_vdso_syscall(void)
{
	static uint64_t off = 1;
	if (off != 1)
		return off;
	off = 0;
	const uint8_t *base = (const uint8_t *) (uintptr_t) getauxval(AT_SYSINFO_EHDR);
	if (!base || memcmp(base, ELFMAG, SELFMAG))
		return off;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *) base;
	uint64_t size = 0;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph =
			(const Elf64_Phdr *) (base + eh->e_phoff + (uint64_t) i * eh->e_phentsize);
		if (ph->p_type == PT_LOAD && ph->p_vaddr + ph->p_memsz > size)
			size = ph->p_vaddr + ph->p_memsz;
	}
	const uint8_t *hit = size > 2 ? memmem(base, size, "\x0f\x05", 2) : NULL;
	if (hit)
		off = (uint64_t) (hit - base);
	return off;
}

/* A `syscall` instruction of the task to inject with: in its vdso, where
 * ours has one if the bytes match (one read), else found by a scan of
 * its vdso or a small executable mapping. */
static int find_syscall(const struct ckpt_task *t, pid_t pid, int memfd, uint64_t *ip)
{
	uint64_t off = own_vdso_syscall();
	for (uint32_t v = 0; v < t->nvmas && off; v++) {
		const struct ckpt_vma_rec *m = &t->vmas[v].r;
		uint8_t insn[2];
		if (m->kind == CKPT_VMA_VDSO && m->start + off + 2 <= m->end &&
		    !ckpt_mem_read(memfd, m->start + off, insn, 2) && insn[0] == 0x0f &&
		    insn[1] == 0x05) {
			*ip = m->start + off;
			return 0;
		}
	}
	int r = -ENOENT;
	for (uint32_t v = 0; v < t->nvmas && r; v++)
		if (t->vmas[v].r.kind == CKPT_VMA_VDSO)
			r = ckpt_find_syscall_insn(pid, t->vmas[v].r.start, t->vmas[v].r.end, ip);
	for (uint32_t v = 0; v < t->nvmas && r; v++)
		if (t->vmas[v].r.prot & PROT_EXEC &&
		    t->vmas[v].r.end - t->vmas[v].r.start <= (1u << 20))
			r = ckpt_find_syscall_insn(pid, t->vmas[v].r.start, t->vmas[v].r.end, ip);
	return r;
}

/* the scratch, large enough for the biggest unix queue to peek */
static uint64_t scratch_len(const struct ckpt_task *t)
{
	for (uint32_t k = 0; k < t->nfds; k++)
		if (t->fds[k].r.type == CKPT_FD_UNIX && !t->fds[k].r.xtask &&
		    t->fds[k].r.dup_of == -1 &&
		    (t->fds[k].r.data_len || t->fds[k].r.sub != SOCK_STREAM))
			return PEEK_SCRATCH;
	return STACK_SCRATCH;
}

/* one injected syscall that writes its answer at @scratch, read into @out */
static int query(struct ckpt_tracee *tr, int memfd, long nr, uint64_t a1, uint64_t a2, uint64_t a3,
		 uint64_t a4, uint64_t scratch, void *out, size_t len)
{
	long ret = 0;
	int r = ckpt_inject(tr, nr, a1, a2, a3, a4, 0, 0, &ret);
	if (!r && sys_failed(ret))
		r = (int) ret;
	return r ? r : ckpt_mem_read(memfd, scratch, out, len);
}

/* the queries one injected syscall at a time (no blob could run): brk,
 * the handled signals' actions, the itimers, the alternate stack and
 * clear_child_tid */
static int queries_one_by_one(struct ckpt_task *t, struct ckpt_tracee *tr, int memfd,
			      uint64_t sigcgt, uint64_t scratch)
{
	long ret = 0;
	int r = ckpt_inject(tr, SYS_brk, 0, 0, 0, 0, 0, 0, &ret);
	if (r)
		return r;
	t->r.mm.brk = (uint64_t) ret;
	for (unsigned s = 1; s <= CKPT_NSIG && !r; s++)
		if ((sigcgt & (1ull << (s - 1))) && s != SIGKILL && s != SIGSTOP)
			r = query(tr, memfd, SYS_rt_sigaction, s, 0, scratch, 8, scratch,
				  &t->r.sigact[s - 1], sizeof(t->r.sigact[0]));
	for (unsigned which = 0; which < 3 && !r; which++)
		r = query(tr, memfd, SYS_getitimer, which, scratch, 0, 0, scratch,
			  t->r.itimer[which], sizeof(t->r.itimer[which]));
	stack_t ss;
	if (!r &&
	    !(r = query(tr, memfd, SYS_sigaltstack, 0, scratch, 0, 0, scratch, &ss, sizeof(ss)))) {
		t->r.altstack_sp = (uint64_t) (uintptr_t) ss.ss_sp;
		t->r.altstack_size = ss.ss_size;
		t->r.altstack_flags = (uint32_t) ss.ss_flags;
	}
	/* clear_child_tid, as set_tid_address(2) or CLONE_CHILD_CLEARTID left it */
	if (!r)
		r = query(tr, memfd, SYS_prctl, PR_GET_TID_ADDRESS, scratch, 0, 0, scratch,
			  &t->r.clear_child_tid, sizeof(t->r.clear_child_tid));
	if (!r && !(r = ckpt_inject(tr, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0, 0, &ret)))
		r = sys_failed(ret) ? (int) ret : 0; /* (as the blob's queries) */
	if (!r)
		t->r.thp_disable = (uint32_t) ret;
	return r;
}

/* @memfd: the task's /proc/PID/mem */
static int dump_injected(struct ckpt_task *t, struct ckpt_tracee *tr, uint64_t sigcgt, int memfd,
			 struct urs_err *err)
{
	pid_t pid = tr->pid;
	uint64_t ip = 0;
	bool named = false; /* err already names what failed */
	int r = find_syscall(t, pid, memfd, &ip);
	if (r)
		return urs_err_set(err, r, "pid %d: no syscall instruction found to inject with",
				   pid);
	tr->syscall_ip = ip;
	tr->step = can_step(sigcgt, t->sigs, t->nsigs);
	/* block every signal while injecting so none is dequeued behind our back */
	uint64_t all = ~0ull;
	if (ptrace(PTRACE_SETSIGMASK, pid, (void *) 8, &all) < 0)
		return urs_err_set(err, -errno, "pid %d: PTRACE_SETSIGMASK: %m", pid);
	uint64_t slen = scratch_len(t);
	struct scratch sc;
	memset(&sc, 0, sizeof(sc));
	r = tr->step ? queries_blob(t, tr, memfd, sigcgt, slen, &sc) : 1;
	if (r == 0) {
		r = dump_sock_injected(t, tr, memfd, sc.addr, err);
		named = r != 0;
		goto unmap;
	}
	if (r < 0)
		goto unmap;
	if (sc.map_len) { /* a region, but no blob ran: it goes, one by one instead */
		r = scratch_put(tr, memfd, &sc);
		if (r)
			goto out;
	}
	r = scratch_get(t, tr, memfd, slen, &sc);
	if (r)
		goto out;
	r = queries_one_by_one(t, tr, memfd, sigcgt, sc.addr);
	if (!r) {
		r = dump_sock_injected(t, tr, memfd, sc.addr, err);
		named = r != 0;
	}
unmap:;
	/* from here two stops each: a step's forced trap would unblock
	 * SIGTRAP and take the re-queued one's place (it would be lost) */
	tr->step = 0;
	int r2 = requeue_trap(tr, memfd, &sc, t->r.nspid, t->r.nspid);
	if (!r)
		r = r2;
	r2 = scratch_put(tr, memfd, &sc);
	if (!r)
		r = r2;
out:
	tr->step = 0;
	if (ptrace(PTRACE_SETSIGMASK, pid, (void *) 8, &t->r.sigmask) < 0 && !r)
		r = -errno;
	if (ckpt_set_regs(pid, &tr->base) < 0 && !r)
		r = -EIO;
	if (r && !named)
		return urs_err_set(err, r, "pid %d: injected query failed: %s", pid, strerror(-r));
	return r;
}

/* ---- pending signals ----------------------------------------------------- */

static int dump_sigpending(struct ckpt_task *t, const struct ckpt_tracee *tr, struct urs_err *err)
{
	pid_t pid = tr->pid;
	struct ckpt_siginfo *sigs = calloc(CKPT_MAX_SIGINFO, sizeof(*sigs));
	if (!sigs)
		return -ENOMEM;
	uint32_t n = 0;
	if (tr->stopped_sig) { /* dequeued while we seized it: it was first in line */
		memcpy(sigs[0].info, tr->stopped_info, sizeof(sigs[0].info));
		int32_t signo = tr->stopped_sig;
		memcpy(sigs[0].info, &signo, sizeof(signo));
		n = 1;
	}
	for (uint32_t shared = 0; shared <= 1; shared++) {
		for (uint64_t off = 0;;) {
			uint8_t buf[32][128];
			struct __ptrace_peeksiginfo_args a = {
				.off = off,
				.flags = shared ? PTRACE_PEEKSIGINFO_SHARED : 0,
				.nr = 32,
			};
			long got = ptrace(PTRACE_PEEKSIGINFO, pid, &a, buf);
			if (got < 0) {
				free(sigs);
				return urs_err_set(err, -errno, "pid %d: PTRACE_PEEKSIGINFO: %m",
						   pid);
			}
			if (got == 0)
				break;
			for (long k = 0; k < got; k++) {
				if (n == CKPT_MAX_SIGINFO) {
					free(sigs);
					return urs_err_set(err, -ENOTSUP,
							   "pid %d: more than %u pending signals",
							   pid, CKPT_MAX_SIGINFO);
				}
				sigs[n].shared = shared;
				memcpy(sigs[n].info, buf[k], 128);
				n++;
			}
			off += (uint64_t) got;
		}
	}
	if (!n) {
		free(sigs);
		return 0;
	}
	t->sigs = sigs;
	t->nsigs = n;
	return 0;
}

/* ---- seccomp ------------------------------------------------------------- */

#define SECCOMP_RET_USER_NOTIF_ 0x7fc00000u

/* Filters come newest first from PTRACE_SECCOMP_GET_FILTER; the image keeps
 * them oldest first, the order restore installs them in. */
static int dump_seccomp(struct dumpctx *c, struct ckpt_task *t, pid_t pid, struct urs_err *err)
{
	uint64_t buf[CKPT_MAX_BPF];
	struct ckpt_seccomp tmp[CKPT_MAX_SECCOMP];
	uint32_t n = 0;
	int r = 0;
	for (;; n++) {
		long len = ptrace(PTRACE_SECCOMP_GET_FILTER, pid, (void *) (uintptr_t) n, buf);
		if (len < 0 && (errno == ENOENT || (errno == EINVAL && n == 0)))
			break; /* no more filters / not in filter mode */
		if (len < 0) {
			r = urs_err_set(err, -errno, "pid %d: reading seccomp filter %u: %m", pid,
					n);
			goto fail;
		}
		if (n == CKPT_MAX_SECCOMP || len == 0 || len > (long) CKPT_MAX_BPF) {
			r = urs_err_set(err, -ENOTSUP,
					"pid %d: too many or too large seccomp filters", pid);
			goto fail;
		}
		for (long k = 0; k < len; k++) {
			/* BPF_RET|BPF_K with a user-notification action: the listener
			 * lives outside the task and cannot be re-created; a filter
			 * that acts the same without it is saved, if there is one */
			uint16_t code = (uint16_t) buf[k];
			uint32_t kk = (uint32_t) (buf[k] >> 32);
			if (code != 0x06 || (kk & 0xfff00000u) != SECCOMP_RET_USER_NOTIF_)
				continue;
			const uint64_t *alt = NULL;
			int alen = c && c->opts && c->opts->seccomp_replace
					   ? c->opts->seccomp_replace(c->opts->seccomp_ctx, buf,
								      (uint32_t) len, &alt)
					   : 0;
			if (alen <= 0 || alen > (int) CKPT_MAX_BPF) {
				r = urs_err_set(err, -ENOTSUP,
						"pid %d: seccomp filter %u uses user notification "
						"(a listener outside the task), which cannot be "
						"checkpointed",
						pid, n);
				goto fail;
			}
			memcpy(buf, alt, (size_t) alen * 8);
			len = alen;
			break;
		}
		struct __ptrace_seccomp_metadata md = {.filter_off = n};
		if (ptrace(PTRACE_SECCOMP_GET_METADATA, pid, (void *) sizeof(md), &md) < 0)
			md.flags = 0;
		tmp[n].flags = (uint32_t) md.flags & 2u;
		tmp[n].len = (uint32_t) len;
		tmp[n].insns = malloc((size_t) len * 8);
		if (!tmp[n].insns) {
			r = -ENOMEM;
			goto fail;
		}
		memcpy(tmp[n].insns, buf, (size_t) len * 8);
	}
	if (!n)
		return 0;
	t->seccomp = calloc(n, sizeof(*t->seccomp));
	if (!t->seccomp) {
		r = -ENOMEM;
		goto fail;
	}
	for (uint32_t k = 0; k < n; k++)
		t->seccomp[k] = tmp[n - 1 - k];
	t->nseccomp = n;
	return 0;
fail:
	for (uint32_t k = 0; k < n; k++)
		free(tmp[k].insns);
	return r;
}

/* ---- limits -------------------------------------------------------------- */

/* /proc/PID/limits rather than prlimit(2): reading another user's limits with
 * prlimit needs CAP_SYS_RESOURCE, which a dumper may not have. One line per
 * resource in RLIMIT_* order, soft and hard values at fixed columns. */
static int parse_limit(const char *p, uint64_t *v)
{
	while (*p == ' ')
		p++;
	if (!strncmp(p, "unlimited", 9)) {
		*v = RLIM_INFINITY;
		return 0;
	}
	char *end;
	*v = strtoull(p, &end, 10);
	return end == p ? -EINVAL : 0;
}

static int dump_limits(struct ckpt_task *t, pid_t pid, struct urs_err *err)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/limits", pid);
	int r = read_proc1(path, buf, sizeof(buf));
	if (r < 0)
		return urs_err_set(err, r, "pid %d: reading limits: %s", pid, strerror(-r));
	char *line = strchr(buf, '\n'); /* skip the header */
	for (unsigned i = 0; i < CKPT_NRLIMIT; i++) {
		if (!line || strlen(line + 1) < 47)
			return urs_err_set(err, -EINVAL, "pid %d: short limits file", pid);
		line++;
		if (parse_limit(line + 26, &t->r.rlim[i].cur) ||
		    parse_limit(line + 47, &t->r.rlim[i].max))
			return urs_err_set(err, -EINVAL, "pid %d: cannot parse limit %u", pid, i);
		line = strchr(line, '\n');
	}
	return 0;
}

/* ---- threads ---------------------------------------------------------------
 * A multi-threaded process: every thread is seized like the main one; the
 * main thread's record holds what the threads share (memory, fds, handlers,
 * credentials, filters), a THREAD record what each other thread has of its
 * own (registers incl. fs_base, FPU state, blocked mask, its pending
 * signals, rseq, robust list, alternate stack, clear_child_tid, name). A
 * thread that does not share the fd table or fs with the process (clone
 * without CLONE_FILES/CLONE_FS), or has other credentials or seccomp filters
 * than the main thread, is refused. */

static int seize_threads(struct dumpctx *c, uint32_t idx, bool start_only, struct urs_err *err)
{
	pid_t pid = c->tr[idx].pid;
	_cleanup_free_ pid_t *tids = malloc(CKPT_MAX_THREADS * sizeof(pid_t));
	if (!tids)
		return -ENOMEM;
	for (;;) { /* until a pass finds no new thread (running ones may make more) */
		uint32_t n = 0;
		bool fresh = false;
		int r = list_threads(pid, tids, CKPT_MAX_THREADS, &n);
		if (r)
			return urs_err_set(err, r, "pid %d: listing threads: %s", pid,
					   strerror(-r));
		for (uint32_t k = 0; k < n; k++) {
			bool known = false;
			for (uint32_t j = 0; j < c->nthr[idx] && !known; j++)
				known = c->thr[idx][j].tr.pid == tids[k];
			if (known)
				continue;
			if (c->nthr_all == CKPT_MAX_THREADS)
				return urs_err_set(err, -ENOTSUP,
						   "pid %d: the sandbox has more than %u threads "
						   "besides its processes' main ones",
						   pid, CKPT_MAX_THREADS);
			if (!c->thr[idx] &&
			    !(c->thr[idx] = calloc(CKPT_MAX_THREADS, sizeof(struct dthread))))
				return -ENOMEM;
			struct dthread *d = &c->thr[idx][c->nthr[idx]];
			struct urs_err e2;
			r = start_only ? ckpt_seize_start(&d->tr, tids[k], PTRACE_O_SUSPEND_SECCOMP,
							  &e2)
				       : ckpt_seize(&d->tr, tids[k], PTRACE_O_SUSPEND_SECCOMP, &e2);
			if (r == -ESRCH)
				continue; /* it exited meanwhile */
			if (r) {
				*err = e2;
				return r;
			}
			d->trapped = !start_only;
			c->nthr[idx]++;
			c->nthr_all++;
			fresh = true;
		}
		if (!fresh || start_only)
			return 0;
	}
}

/* The lines of a /proc status file that must be equal for a thread and its
 * main thread. */
static bool same_status(const char *a, const char *b)
{
	static const char *const keys[] = {"Uid",	 "Gid",	    "Groups",	      "CapInh",
					   "CapPrm",	 "CapEff",  "CapBnd",	      "CapAmb",
					   "NoNewPrivs", "Seccomp", "Seccomp_filters"};
	for (size_t k = 0; k < URS_ARRAY_SIZE(keys); k++) {
		const char *x = status_field(a, keys[k]), *y = status_field(b, keys[k]);
		if (!x || !y) {
			if (x != y)
				return false;
			continue;
		}
		size_t lx = strcspn(x, "\n"), ly = strcspn(y, "\n");
		if (lx != ly || memcmp(x, y, lx))
			return false;
	}
	return true;
}

/* What every thread has of its own, read while it is stopped: extended FPU
 * state (malloc'd), signal mask, rseq and robust-list registrations. */
struct cpu_state {
	uint8_t *xsave;
	uint32_t xsave_len, rseq_len, rseq_sig;
	uint64_t sigmask, rseq_ptr, robust_head, robust_len;
};

static int read_cpu_state(pid_t tid, struct cpu_state *cs, struct urs_err *err)
{
	memset(cs, 0, sizeof(*cs));
	uint32_t xlen = CKPT_MAX_XSAVE;
	if (!(cs->xsave = malloc(xlen)))
		return -ENOMEM;
	int r = ckpt_get_xsave(tid, cs->xsave, &xlen);
	if (r == 0 && ptrace(PTRACE_GETSIGMASK, tid, (void *) 8, &cs->sigmask) < 0)
		r = urs_err_set(err, -errno, "task %d: PTRACE_GETSIGMASK: %m", tid);
	else if (r)
		urs_err_set(err, r, "task %d: reading FPU state: %s", tid, strerror(-r));
	if (r) {
		free(cs->xsave);
		cs->xsave = NULL;
		return r;
	}
	cs->xsave_len = xlen;
	struct __ptrace_rseq_configuration rc = {0};
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, (void *) sizeof(rc), &rc) > 0) {
		cs->rseq_ptr = rc.rseq_abi_pointer;
		cs->rseq_len = rc.rseq_abi_size;
		cs->rseq_sig = rc.signature;
	}
	void *rhead = NULL;
	size_t rlen = 0;
	if (syscall(SYS_get_robust_list, tid, &rhead, &rlen) == 0) {
		cs->robust_head = (uint64_t) (uintptr_t) rhead;
		cs->robust_len = rlen;
	}
	return 0;
}

static int dump_thread(struct dumpctx *c, uint32_t idx, uint32_t k, struct urs_err *err)
{
	struct ckpt_task *t = &c->img.tasks[idx];
	struct ckpt_thread *th = &t->threads[k];
	struct ckpt_tracee *tr = &c->thr[idx][k].tr;
	pid_t pid = c->tr[idx].pid, tid = tr->pid;
	if (syscall(SYS_kcmp, pid, tid, KCMP_FILES, 0, 0) != 0 ||
	    syscall(SYS_kcmp, pid, tid, KCMP_FS, 0, 0) != 0)
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: thread %d does not share the fd table or working "
				   "directory of its process (multi-threaded process)",
				   pid, tid);
	char path[96], tbuf[64];
	_cleanup_free_ char *a = malloc(8192), *b = malloc(8192);
	if (!a || !b)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, pid);
	int r = read_proc1(path, a, 8192);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	int r2 = read_proc1(path, b, 8192);
	if (r < 0 || r2 < 0)
		return urs_err_set(err, r < 0 ? r : r2, "pid %d: thread %d: reading status", pid,
				   tid);
	if (!same_status(a, b))
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: thread %d has other credentials or seccomp state than "
				   "its main thread (multi-threaded process)",
				   pid, tid);
	th->r.tid = (int32_t) status_last_num(b, "NSpid");
	struct ckpt_task tmp = {0};
	r = dump_seccomp(c, &tmp, tid, err);
	if (r)
		return r;
	bool same = tmp.nseccomp == t->nseccomp;
	for (uint32_t q = 0; q < tmp.nseccomp; q++) {
		same = same && tmp.seccomp[q].len == t->seccomp[q].len &&
		       !memcmp(tmp.seccomp[q].insns, t->seccomp[q].insns,
			       (size_t) tmp.seccomp[q].len * 8);
		free(tmp.seccomp[q].insns);
	}
	free(tmp.seccomp);
	if (!same)
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: thread %d has other seccomp filters than its main "
				   "thread (multi-threaded process)",
				   pid, tid);
	th->r.regs = tr->base;
	struct cpu_state cs;
	r = read_cpu_state(tid, &cs, err);
	if (r)
		return r;
	th->xsave = cs.xsave;
	th->r.xsave_len = cs.xsave_len;
	th->r.sigmask = cs.sigmask;
	th->r.rseq_ptr = cs.rseq_ptr;
	th->r.rseq_len = cs.rseq_len;
	th->r.rseq_sig = cs.rseq_sig;
	th->r.robust_head = cs.robust_head;
	th->r.robust_len = cs.robust_len;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	if (read_proc1(path, tbuf, sizeof(tbuf)) > 0) {
		tbuf[strcspn(tbuf, "\n")] = 0;
		snprintf(th->r.comm, sizeof(th->r.comm), "%s", tbuf);
	}
	/* its own queue (the shared one is the process's, saved with the main thread) */
	r = dump_sigpending(&tmp, tr, err);
	if (r)
		return r;
	for (uint32_t q = 0; q < tmp.nsigs; q++)
		if (!tmp.sigs[q].shared)
			tmp.sigs[th->r.nsigs++] = tmp.sigs[q];
	if (th->r.nsigs)
		th->sigs = tmp.sigs;
	else
		free(tmp.sigs);
	return 0;
}

/* sigaltstack and clear_child_tid of each other thread, by syscalls
 * injected into it (a scratch page of its own, every signal blocked). */
static int dump_thread_injected(struct dumpctx *c, uint32_t idx, uint32_t k, int memfd,
				struct urs_err *err)
{
	struct ckpt_task *t = &c->img.tasks[idx];
	struct ckpt_thread *th = &t->threads[k];
	struct ckpt_tracee *tr = &c->thr[idx][k].tr;
	pid_t tid = tr->pid;
	tr->syscall_ip = c->tr[idx].syscall_ip;
	tr->step = can_step(c->sigcgt[idx], th->sigs, th->r.nsigs);
	uint64_t all = ~0ull;
	if (ptrace(PTRACE_SETSIGMASK, tid, (void *) 8, &all) < 0)
		return urs_err_set(err, -errno, "thread %d: PTRACE_SETSIGMASK: %m", tid);
	long ret = 0;
	struct scratch sc;
	int r = scratch_get(t, tr, memfd, STACK_SCRATCH, &sc);
	uint64_t scratch = sc.addr;
	if (!r)
		r = ckpt_inject(tr, SYS_sigaltstack, 0, scratch, 0, 0, 0, 0, &ret);
	if (!r && sys_failed(ret))
		r = (int) ret;
	if (!r) {
		stack_t ss;
		r = ckpt_mem_read(memfd, scratch, &ss, sizeof(ss));
		th->r.altstack_sp = (uint64_t) (uintptr_t) ss.ss_sp;
		th->r.altstack_size = ss.ss_size;
		th->r.altstack_flags = (uint32_t) ss.ss_flags;
	}
	if (!r)
		r = ckpt_inject(tr, SYS_prctl, PR_GET_TID_ADDRESS, scratch, 0, 0, 0, 0, &ret);
	if (!r && sys_failed(ret))
		r = (int) ret;
	if (!r)
		r = ckpt_mem_read(memfd, scratch, &th->r.clear_child_tid,
				  sizeof(th->r.clear_child_tid));
	if (sc.len) {
		tr->step = 0; /* two stops from here (see dump_injected) */
		int r2 = requeue_trap(tr, memfd, &sc, t->r.nspid, th->r.tid);
		if (!r)
			r = r2;
		r2 = scratch_put(tr, memfd, &sc);
		if (!r)
			r = r2;
	}
	tr->step = 0;
	if (ptrace(PTRACE_SETSIGMASK, tid, (void *) 8, &th->r.sigmask) < 0 && !r)
		r = -errno;
	if (ckpt_set_regs(tid, &tr->base) < 0 && !r)
		r = -EIO;
	if (r)
		return urs_err_set(err, r, "thread %d: injected query failed: %s", tid,
				   strerror(-r));
	return 0;
}

/* @memfd: the process's /proc/PID/mem (one mm for all its threads) */
static int dump_threads(struct dumpctx *c, uint32_t idx, int memfd, struct urs_err *err)
{
	struct ckpt_task *t = &c->img.tasks[idx];
	if (!c->nthr[idx])
		return 0;
	if (!(t->threads = calloc(c->nthr[idx], sizeof(*t->threads))))
		return -ENOMEM;
	t->nthreads = c->nthr[idx];
	for (uint32_t k = 0; k < t->nthreads; k++) {
		int r = dump_thread(c, idx, k, err);
		if (!r)
			r = dump_thread_injected(c, idx, k, memfd, err);
		if (r)
			return r;
	}
	return 0;
}

/* ---- one task ------------------------------------------------------------ */

static int dump_task(struct dumpctx *c, uint32_t idx, struct urs_err *err)
{
	struct ckpt_task *t = &c->img.tasks[idx];
	struct ckpt_tracee *tr = &c->tr[idx];
	pid_t pid = tr->pid;
	t->r.host_pid = pid;
	uint64_t sigcgt = c->sigcgt[idx];
	int r;
	t->r.regs = tr->base;
	struct cpu_state cs;
	r = read_cpu_state(pid, &cs, err);
	if (r)
		return r;
	t->xsave = cs.xsave;
	t->xsave_len = cs.xsave_len;
	t->r.sigmask = cs.sigmask;
	t->r.rseq_ptr = cs.rseq_ptr;
	t->r.rseq_len = cs.rseq_len;
	t->r.rseq_sig = cs.rseq_sig;
	t->r.robust_head = cs.robust_head;
	t->r.robust_len = cs.robust_len;
	char tpath[64], tbuf[64];
	snprintf(tpath, sizeof(tpath), "/proc/%d/timers", pid);
	if (read_small(tpath, tbuf, sizeof(tbuf)) > 0)
		return urs_err_set(err, -ENOTSUP,
				   "pid %d: POSIX timers (timer_create) cannot be checkpointed yet",
				   pid);
	r = dump_seccomp(c, t, pid, err);
	if (!r)
		r = dump_sigpending(t, tr, err);
	if (r)
		return r;
	r = dump_maps(c, t, pid, err);
	if (r)
		return r;
	r = dump_fds(c, idx, err);
	if (r)
		return r;
	r = dump_stat_mm(t, pid, err);
	if (r)
		return r;
	_cleanup_close_ int memfd = ckpt_open_mem(pid);
	if (memfd < 0)
		return urs_err_set(err, memfd, "pid %d: opening mem: %s", pid, strerror(-memfd));
	r = dump_injected(t, tr, sigcgt, memfd, err);
	if (!r)
		r = dump_threads(c, idx, memfd, err);
	if (r)
		return r;
	r = dump_limits(t, pid, err);
	if (r)
		return r;
	char path[64], buf[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (read_proc1(path, buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = 0;
		snprintf(t->r.comm, sizeof(t->r.comm), "%s", buf);
	}
	snprintf(path, sizeof(path), "/proc/%d/personality", pid);
	if (read_proc1(path, buf, sizeof(buf)) > 0)
		t->r.personality = (uint32_t) strtoul(buf, NULL, 16);
	_cleanup_free_ uint8_t *auxv = malloc(CKPT_MAX_AUXV);
	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	int an = auxv ? read_proc1(path, (char *) auxv, CKPT_MAX_AUXV) : -ENOMEM;
	if (an < 0)
		return urs_err_set(err, an, "pid %d: reading auxv: %s", pid, strerror(-an));
	t->auxv_len = (uint32_t) an & ~15u;
	t->auxv = steal_ptr(&auxv);
	t->cwd = read_link(pid, "cwd");
	t->exe = read_link(pid, "exe");
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	if (ckpt_root_id(AT_FDCWD, path, &t->root) == 0)
		t->has_root = 1;
	if (!t->cwd || t->cwd[0] != '/' || deleted(t->cwd))
		return urs_err_set(err, -ENOTSUP, "pid %d: working directory %s is not reachable",
				   pid, t->cwd ? t->cwd : "?");
	if (t->exe && (t->exe[0] != '/' || deleted(t->exe))) {
		free(t->exe);
		t->exe = NULL;
	}
	return dump_pages(c, t, pid, memfd, err);
}

/* ---- tree ---------------------------------------------------------------- */

/* Is pid a zombie? If so, *status gets its wait status (stat field 52). */
static bool is_zombie(pid_t pid, int32_t *status)
{
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_proc1(path, buf, sizeof(buf)) <= 0)
		return false;
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] != 'Z')
		return false;
	p += 2;
	*status = 0;
	for (int field = 3; *p; field++) { /* p is at field `field` */
		if (field == 52) {
			*status = (int32_t) strtol(p, NULL, 10);
			break;
		}
		p = strchr(p, ' ');
		if (!p)
			break;
		p++;
	}
	return true;
}

/* Record child n (a zombie) without seizing it: only its ids are saved. */
static void add_zombie(struct dumpctx *c, uint32_t n, pid_t pid, int32_t status, int32_t parent)
{
	memset(&c->tr[n], 0, sizeof(c->tr[n]));
	c->tr[n].pid = pid;
	c->img.tasks[n].r.zombie = 1;
	c->img.tasks[n].r.exit_status = status;
	c->img.tasks[n].r.parent = parent;
}

/* Children of pid as listed by the kernel (pids in our namespace). */
static int list_children(pid_t pid, pid_t *out, uint32_t max, uint32_t *n, struct urs_err *err)
{
	/* a child belongs to the thread that forked it: read every thread's list */
	_cleanup_free_ pid_t *tids = malloc(CKPT_MAX_THREADS * sizeof(pid_t));
	uint32_t nt = 0;
	int r = tids ? list_threads(pid, tids, CKPT_MAX_THREADS, &nt) : -ENOMEM;
	if (r)
		return urs_err_set(err, r, "pid %d: listing threads: %s", pid, strerror(-r));
	*n = 0;
	for (uint32_t k = 0; k <= nt; k++) {
		char path[96], buf[4096];
		pid_t tid = k < nt ? tids[k] : pid;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, tid);
		r = read_small(path, buf, sizeof(buf));
		if (r == -ENOENT && tid != pid)
			continue; /* the thread exited meanwhile */
		if (r < 0)
			return urs_err_set(err, r, "pid %d: listing children: %s", pid,
					   strerror(-r));
		for (char *p = buf; *p;) {
			char *end;
			long ch = strtol(p, &end, 10);
			if (end == p)
				break;
			p = end;
			if (*n == max)
				return urs_err_set(err, -ENOTSUP, "more than %u processes",
						   CKPT_MAX_TASKS);
			out[(*n)++] = (pid_t) ch;
		}
	}
	return 0;
}

static int seize_tree(struct dumpctx *c, pid_t root, struct urs_err *err)
{
	int r = ckpt_seize(&c->tr[0], root, PTRACE_O_SUSPEND_SECCOMP, err);
	if (r)
		return r;
	c->trapped[0] = 1;
	c->nseized = 1;
	c->img.tasks[0].r.parent = -1;
	r = seize_threads(c, 0, false, err);
	if (r)
		return r;
	/* breadth first: a task's children are listed once it is stopped */
	for (uint32_t i = 0; i < c->nseized; i++) {
		pid_t kids[CKPT_MAX_TASKS];
		uint32_t n;
		r = list_children(c->tr[i].pid, kids, CKPT_MAX_TASKS - c->nseized, &n, err);
		for (uint32_t k = 0; !r && k < n; k++) {
			int32_t status;
			if (is_zombie(kids[k], &status)) {
				add_zombie(c, c->nseized++, kids[k], status, (int32_t) i);
				continue;
			}
			r = ckpt_seize(&c->tr[c->nseized], kids[k], PTRACE_O_SUSPEND_SECCOMP, err);
			if (r)
				break;
			c->trapped[c->nseized] = 1;
			c->img.tasks[c->nseized].r.parent = (int32_t) i;
			c->nseized++;
			r = seize_threads(c, c->nseized - 1, false, err);
			if (r)
				break;
		}
		if (r)
			return r;
	}
	return 0;
}

/* ---- frozen cgroups ----------------------------------------------------------
 * A task frozen by the cgroup v2 freezer does not enter a ptrace stop until it
 * is thawed. So, for a cgroup frozen already: walk and check the whole tree
 * (it cannot change), seize + interrupt every task, thaw, and wait for each
 * to trap — the pending trap comes before any user instruction. A running
 * cgroup's tree is seized as without a freezer (seize_tree), then checked to
 * be all the cgroup holds. Before the detach the cgroup is frozen, so the
 * tasks run no further than the image until the caller thaws or kills them. */

static int in_pidlist(pid_t pid, const pid_t *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (l[i] == pid)
			return 1;
	return 0;
}

/* Every process of the cgroup is one of the tree (or the one allowed
 * outside it). */
static int cg_only_tree(struct dumpctx *c, const pid_t *pids, uint32_t n, pid_t root,
			struct urs_err *err)
{
	char path[PATH_MAX], buf[8192];
	snprintf(path, sizeof(path), "%s/cgroup.procs", c->freezer);
	int r = read_small(path, buf, sizeof(buf));
	if (r < 0)
		return urs_err_set(err, r, "checkpoint: reading %s: %s", path, strerror(-r));
	for (char *p = buf; *p;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		p = end;
		if (!in_pidlist((pid_t) v, pids, n) && (pid_t) v != c->outside)
			return urs_err_set(
				err, -ENOTSUP,
				"pid %ld is in the sandbox's cgroup but not a descendant of "
				"pid %d: it would run while the tree is dumped",
				v, root);
	}
	return 0;
}

/* Let go of every task and thread seize_tree took (they run on), for a
 * fresh start the freezer's way. */
static void unseize_all(struct dumpctx *c)
{
	for (uint32_t i = c->nseized; i-- > 0;) {
		for (uint32_t k = 0; k < c->nthr[i]; k++)
			if (c->thr[i][k].trapped)
				ckpt_detach(&c->thr[i][k].tr);
		if (c->trapped[i])
			ckpt_detach(&c->tr[i]);
		c->nthr[i] = 0;
		c->trapped[i] = 0;
		memset(&c->tr[i], 0, sizeof(c->tr[i]));
		memset(&c->img.tasks[i], 0, sizeof(c->img.tasks[i]));
	}
	c->nthr_all = 0;
	c->nseized = 0;
}

static int seize_frozen(struct dumpctx *c, pid_t root, struct urs_err *err)
{
	if (!urs_cg2_frozen_already(c->freezer)) {
		/* running: stop the tree with ptrace first (a stopped parent forks
		 * no more children, so the walk is complete), then check that the
		 * cgroup holds nothing else: one wake-up per task, where
		 * freezing first takes two (into the freezer, then thawed for the
		 * trap). A task that changes under the walk (a child gone between
		 * its listing and its seize: a forking workload) fails it: then
		 * everything is let go and the freezer's way below is taken. */
		struct urs_err e2 = {{0}};
		int r = seize_tree(c, root, &e2);
		if (r == 0) {
			pid_t *pids = malloc(c->nseized * sizeof(pid_t));
			if (!pids)
				return -ENOMEM;
			for (uint32_t i = 0; i < c->nseized; i++)
				pids[i] = c->tr[i].pid;
			r = cg_only_tree(c, pids, c->nseized, root, err);
			free(pids);
			return r;
		}
		unseize_all(c);
	}
	int r = urs_cg2_freeze_write(c->freezer, 1, err);
	if (!r)
		r = urs_cg2_wait_frozen(c->freezer, err);
	if (r)
		return r;
	/* walk and check everything before touching anything */
	pid_t pids[CKPT_MAX_TASKS];
	int32_t parent[CKPT_MAX_TASKS];
	uint32_t n = 1;
	pids[0] = root;
	parent[0] = -1;
	for (uint32_t i = 0; i < n; i++) {
		struct ckpt_task probe = {0};
		uint64_t cgt;
		int32_t status;
		bool zombie = i && is_zombie(pids[i], &status);
		r = dump_status(&probe, pids[i], zombie, &cgt, err);
		if (r)
			return r;
		pid_t kids[CKPT_MAX_TASKS];
		uint32_t k;
		r = list_children(pids[i], kids, CKPT_MAX_TASKS - n, &k, err);
		if (r)
			return r;
		for (uint32_t j = 0; j < k; j++) {
			parent[n] = (int32_t) i;
			pids[n++] = kids[j];
		}
	}
	r = cg_only_tree(c, pids, n, root, err);
	if (r)
		return r;
	for (uint32_t i = 0; i < n; i++) {
		int32_t status;
		if (i && is_zombie(pids[i], &status)) {
			add_zombie(c, i, pids[i], status, parent[i]);
			c->nseized++;
			continue;
		}
		r = ckpt_seize_start(&c->tr[i], pids[i], PTRACE_O_SUSPEND_SECCOMP, err);
		if (r)
			break;
		c->img.tasks[i].r.parent = parent[i];
		c->nseized++;
		r = seize_threads(c, i, true, err);
		if (r)
			break;
	}
	int r2 = urs_cg2_freeze_write(c->freezer, 0, err);
	if (!r)
		r = r2;
	for (uint32_t i = 0; i < c->nseized; i++) {
		if (c->img.tasks[i].r.zombie)
			continue;
		int rw = ckpt_seize_wait(&c->tr[i], r ? NULL : err);
		if (!rw)
			c->trapped[i] = 1;
		else if (!r)
			r = rw;
		for (uint32_t k = 0; k < c->nthr[i]; k++) {
			rw = ckpt_seize_wait(&c->thr[i][k].tr, r ? NULL : err);
			if (!rw)
				c->thr[i][k].trapped = 1;
			else if (!r)
				r = rw;
		}
	}
	return r;
}

/* Each seized task's status (all single-threaded before anything is
 * written), then every fd of the tree listed. */
static int dump_statuses(struct dumpctx *c, struct urs_err *err)
{
	int r = 0;
	for (uint32_t i = 0; i < c->nseized; i++) {
		r = dump_status(&c->img.tasks[i], c->tr[i].pid, c->img.tasks[i].r.zombie,
				&c->sigcgt[i], err);
		if (r)
			return r;
		if (i && c->img.tasks[i].r.nspid <= 0)
			return urs_err_set(err, -ENOTSUP, "pid %d: not in the root's pid namespace",
					   c->tr[i].pid);
	}
	for (uint32_t i = 0; i < c->nseized && !r; i++)
		if (!c->img.tasks[i].r.zombie && (r = scan_tree_fds(c, c->tr[i].pid)))
			r = urs_err_set(err, r, "pid %d: listing fds: %s", c->tr[i].pid,
					strerror(-r));
	ckpt_trace("dump: status and fds listed");
	return r;
}

static int pages_open(struct dumpctx *c, const struct ckpt_seal *seal, struct urs_err *err)
{
	c->pages_open = true;
	return ckpt_pages_open_stream(&c->pw, c->dirfd,
				      c->opts && c->opts->pages_stream ? c->opts->pages_fd : -1,
				      seal, c->img.id, err);
}

#define CUT_MAX	 4u		       /* cuts at most */
#define CUT_LEFT (4u * CKPT_MAC_CHUNK) /* what the freeze may find uncommitted */

/* The pre-copied page data committed as an object of its own while the
 * tree runs (opts->pages_cut): padded to a whole MiB with zero pages no
 * task refers to (an object ends on a chunk), the pipe drained, cut; then
 * more rounds for what was written meanwhile, and again while those came
 * to more than CUT_LEFT: the freeze's upload is then one small object. */
static int precopy_cut(struct dumpctx *c, struct urs_err *err)
{
	static const uint8_t zero[CKPT_PAGE_SIZE];
	uint64_t at, cut = 0;
	int r = 0;
	for (uint32_t k = 0; !r && k < CUT_MAX && c->pw.off - cut > CUT_LEFT; k++) {
		while (!r && c->pw.off % CKPT_MAC_CHUNK)
			r = ckpt_pages_append(&c->pw, zero, sizeof(zero), &at, err);
		if (r == 0)
			r = ckpt_pagesink_drain(&c->pw, err);
		if (r == 0)
			r = c->opts->pages_cut(c->opts->cut_ctx, cut = c->pw.off, err);
		ckpt_trace("dump: pre-copy committed");
		if (r == 0)
			r = ckpt_precopy_more(&c->pre, &c->pw, c->chunk, CHUNK, err);
	}
	return r;
}

/* The tree's memory copied while it runs (opts->precopy), unless it is
 * frozen already (a paused container: nothing to gain, and a frozen task
 * cannot be seized to track it) */
static int precopy(struct dumpctx *c, pid_t pid, const struct ckpt_seal *seal, struct urs_err *err)
{
	if (!c->opts->precopy || getenv("URSA_CKPT_NO_PRECOPY") /* (benchmarks compare) */ ||
	    !ckpt_wptrack_supported() || (c->freezer && urs_cg2_frozen_already(c->freezer)))
		return 0;
	int r = pages_open(c, seal, err);
	if (r == 0)
		r = ckpt_precopy_run(&c->pre, pid, &c->pw, c->chunk, CHUNK, err);
	if (r == 0 && c->opts->pages_cut && c->opts->pages_stream && c->pre.n)
		r = precopy_cut(c, err);
	if (r == 0) /* the freeze must not wait for the upload of the pre-copy */
		r = ckpt_pagesink_drain(&c->pw, err);
	ckpt_trace("dump: pre-copy drained");
	/* smaps now, the tree running: the freeze reads maps only (ckpt/maps.h) */
	if (r == 0 && c->pre.n && !(c->early = calloc(c->pre.n, sizeof(*c->early))))
		r = -ENOMEM;
	for (uint32_t i = 0; r == 0 && i < c->pre.n; i++) {
		struct urs_err e2; /* (not read: the freeze reads smaps) */
		c->early[c->nearly].pid = c->pre.procs[i].pid;
		if (ckpt_maps_read(c->pre.procs[i].pid, NULL, &c->early[c->nearly].m, &e2) == 0)
			c->nearly++;
	}
	/* what was written during the drain (an fdatasync of the whole copy,
	 * an upload's end) and smaps, copied while it still runs, and that
	 * written out too: the freeze is left the last round's writes only */
	if (r == 0)
		r = ckpt_precopy_more(&c->pre, &c->pw, c->chunk, CHUNK, err);
	if (r == 0)
		r = ckpt_pagesink_drain(&c->pw, err);
	/* (recorded: stored, or another process's copy of the frame) */
	c->st->precopy_pages = c->pre.pages + c->pre.shared_pages;
	c->st->precopy_ms = c->pre.ms;
	c->st->precopy_rounds = c->pre.rounds;
	ckpt_trace("dump: pre-copied");
	return r;
}

/* After a pre-copy: DIR/hotset (ckpt/workingset.h), what the tree wrote
 * last, for a lazy restore to bring in first; from @from on, the page data
 * is the freeze's. A hint: none without a pre-copy, past CKPT_HOT_MAX
 * blocks (a tree writing faster than the pre-copy converged: bringing all
 * that in before it runs would lengthen its downtime) or past what one
 * file covers, and none if it cannot be written (counted 0 in dump.log);
 * an older image's is removed either way. */
static void dump_hotset(struct dumpctx *c, const struct ckpt_seal *seal, uint64_t from)
{
	bool want = c->pre.n && from < c->img.pages_len;
	size_t n = ckpt_ws_file_len(c->img.pages_len);
	_cleanup_free_ uint8_t *bits =
		want ? calloc(ckpt_ws_nbytes(c->img.pages_len) + 1, 1) : NULL;
	_cleanup_free_ uint8_t *buf = bits ? malloc(n) : NULL;
	uint32_t k = buf ? ckpt_hot_bits(&c->img, from, bits) : 0;
	long len = k && k <= CKPT_HOT_MAX ? ckpt_ws_encode(CKPT_WS_HOT, seal, c->img.id,
							   c->img.pages_len, bits, buf)
					  : -ENOENT;
	unlinkat(c->dirfd, CKPT_HOT_FILE, 0); /* (an older image's, if any) */
	if (len < 0)
		return;
	/* (not synced here, in the freeze: ckpt_manifest_write syncs it with
	 * the image's files; a remote image's stage needs no sync) */
	_cleanup_close_ int fd = openat(c->dirfd, CKPT_HOT_FILE,
					O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && urs_write_all(fd, buf, (size_t) len) == 0)
		c->st->hot_blocks = k;
	else if (fd >= 0)
		unlinkat(c->dirfd, CKPT_HOT_FILE, 0);
}

/* pages.img, then core.img with the page-chunk MACs */
static int dump_image(struct dumpctx *c, const struct ckpt_seal *seal, struct urs_err *err)
{
	int r = c->pages_open ? 0 : pages_open(c, seal, err);
	uint64_t from = c->pw.off; /* (after a pre-copy: what the freeze writes begins here) */
	for (uint32_t i = 0; i < c->nseized && !r; i++) {
		c->img.tasks[i].r.host_pid = c->tr[i].pid;
		if (!c->img.tasks[i].r.zombie)
			r = dump_task(c, i, err);
	}
	if (r)
		return r;
	ckpt_trace("dump: tasks dumped");
	c->img.pages_len = c->pw.off;
	c->img.pages_crc = c->pw.crc;
	c->st->data_pages = c->pw.off / CKPT_PAGE_SIZE;
	r = ckpt_pages_finish(&c->pw, c->img.id, err);
	ckpt_trace("dump: pages finished");
	if (!r) { /* the chunk MACs go into core.img */
		c->img.page_macs = c->pw.macs.mac;
		c->img.npage_macs = c->pw.macs.n;
		c->pw.macs.mac = NULL;
		r = ckpt_image_write_core(&c->img, c->dirfd, seal, err);
	}
	if (!r)
		dump_hotset(c, seal, from);
	ckpt_trace("dump: core written");
	if (!r) {
		struct stat st;
		if (fstatat(c->dirfd, "core.img", &st, 0) == 0)
			c->st->image_bytes += (uint64_t) st.st_size;
		if (fstatat(c->dirfd, "pages.img", &st, 0) == 0)
			c->st->image_bytes += (uint64_t) st.st_size;
	}
	return r;
}

/* Let the tree go: frozen again first (once detached, each task goes
 * straight back into the freezer trap), detached, the freeze waited for.
 * Returns @r, or the first error of these if @r was 0. */
static int release_tree(struct dumpctx *c, int r, struct urs_err *err)
{
	if (c->freezer && c->nseized) {
		struct urs_err e2;
		int rf = urs_cg2_freeze_write(c->freezer, 1, r ? &e2 : err);
		if (!r)
			r = rf;
	}
	for (uint32_t i = c->nseized; i-- > 0;) {
		for (uint32_t k = 0; k < c->nthr[i]; k++)
			if (c->thr[i][k].trapped)
				ckpt_detach(&c->thr[i][k].tr);
		if (c->trapped[i])
			ckpt_detach(&c->tr[i]);
	}
	ckpt_trace("dump: detached");
	if (c->freezer && c->nseized) {
		struct urs_err e2;
		int rf = urs_cg2_wait_frozen(c->freezer, r ? &e2 : err);
		if (!r)
			r = rf;
	}
	return r;
}

void ckpt_dump_tracking_end(struct ckpt_precopy *pc)
{
	if (pc)
		ckpt_precopy_free(pc);
	free(pc);
}

static void dumpctx_free(struct dumpctx *c)
{
	free(c->chunk);
	for (uint32_t i = 0; i < c->nearly; i++)
		ckpt_maps_free(&c->early[i].m);
	free(c->early);
	for (uint32_t i = 0; c->tr && i < CKPT_MAX_TASKS; i++)
		free(c->thr[i]);
	free(c->tr);
	free(c->objs);
	ckpt_sockdiag_free(&c->diag);
	ckpt_image_free(&c->img);
	ckpt_pagemacs_free(&c->pw.macs);
	ckpt_pages_frames_free(&c->pw);
	if (c->dirfd >= 0)
		close(c->dirfd);
	if (c->rootfd >= 0)
		close(c->rootfd);
}

int ckpt_dump(pid_t pid, const char *dir, const struct ckpt_dump_opts *opts,
	      struct ckpt_dump_stats *stats, struct urs_err *err)
{
	struct ckpt_dump_stats dummy;
	if (!stats)
		stats = &dummy;
	memset(stats, 0, sizeof(*stats));
	double t0 = urs_now_ms();
	struct dumpctx c = {.st = stats, .dirfd = -1, .rootfd = -1};
	c.pw.fd = -1;
	int r;
	if (!opts || !opts->key)
		return urs_err_set(err, -ENOKEY,
				   "checkpoint: no key to authenticate the image with");
	struct ckpt_seal seal;
	memcpy(seal.key, opts->key, sizeof(seal.key));
	c.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.dirfd < 0) {
		explicit_bzero(&seal, sizeof(seal));
		return urs_err_set(err, -errno, "checkpoint: opening %s: %m", dir);
	}
	c.freezer = opts->freezer;
	c.outside = opts->outside;
	c.opts = opts;
	c.chunk = malloc(CHUNK * CKPT_PAGE_SIZE);
	c.tr = calloc(CKPT_MAX_TASKS, sizeof(*c.tr));
	c.img.tasks = calloc(CKPT_MAX_TASKS, sizeof(*c.img.tasks));
	if (getrandom(c.img.id, sizeof(c.img.id), 0) != sizeof(c.img.id))
		r = urs_err_set(err, -EIO, "checkpoint: getrandom failed");
	else if (!c.chunk || !c.tr || !c.img.tasks)
		r = -ENOMEM;
	else if (!(r = precopy(&c, pid, &seal, err)) &&
		 !(r = c.freezer ? seize_frozen(&c, pid, err) : seize_tree(&c, pid, err))) {
		c.st->frozen_at = urs_now_ms();
		ckpt_trace("dump: seized");
	}
	c.img.ntasks = c.nseized;
	if (!r)
		r = dump_statuses(&c, err);
	if (!r)
		r = dump_image(&c, &seal, err);
	if (r) {
		ckpt_pages_abort(&c.pw, c.dirfd);
		unlinkat(c.dirfd, "pages.img", 0);
		unlinkat(c.dirfd, "core.img.tmp", 0);
		unlinkat(c.dirfd, "core.img", 0);
		unlinkat(c.dirfd, CKPT_HOT_FILE, 0);
		if (r == -ENOMEM)
			urs_err_set(err, r, "checkpoint: out of memory");
	}
	r = release_tree(&c, r, err);
	struct ckpt_precopy *keep = opts->tracking && c.pre.n ? malloc(sizeof(*keep)) : NULL;
	if (opts->tracking)
		*opts->tracking = keep;
	if (keep) { /* the caller ends it, with the tree running or dead */
		*keep = c.pre;
		memset(&c.pre, 0, sizeof(c.pre));
	} else { /* (out of memory for it, or no caller to end it: ended now) */
		ckpt_precopy_free(&c.pre); /* tracking off: nothing of it stays in the tree */
	}
	stats->ntasks = c.nseized;
	stats->ms = urs_now_ms() - t0;
	dumpctx_free(&c);
	explicit_bzero(&seal, sizeof(seal));
	return r;
}
