/*
 * ckpt/image.c — encode, decode, validate, write and load checkpoint
 * images (see ckpt_image.h and docs/checkpoint.md). Decoding treats the image
 * as hostile input: every record length, count, address range and index is
 * bounds-checked before the restorer may act on it.
 */
#include "ckpt/image.h"
#include "ckpt/framemap.h"
#include "ckpt/pagesink.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "runtime/common.h"
#include "runtime/io.h"

#define CORE_MAGIC  "URSACKPT"
#define PAGES_MAGIC "URSAPAGE"
#define MAX_CORE    (256u << 20)

enum {
	REC_TASK = 1,
	REC_XSAVE = 2,
	REC_AUXV = 3,
	REC_CWD = 4,
	REC_EXE = 5,
	REC_VMA = 6,
	REC_RUNS = 7,
	REC_FD = 8,
	REC_SECCOMP = 9,
	REC_SIGINFO = 10,
	REC_SHM = 11,	 /* image-wide, before the first TASK */
	REC_THREAD = 12, /* a thread of the current task other than its main one */
	REC_ROOT = 13,	 /* the task's root directory (struct ckpt_root_rec) */
};

struct core_hdr {
	char magic[8];
	uint32_t version, arch;
	uint8_t id[16];
	uint64_t body_len, pages_len;
	uint32_t body_crc, pages_crc;
	uint32_t ntasks, hdr_crc;
};

struct pages_hdr {
	char magic[8];
	uint32_t version, pad;
	uint8_t id[16];
	uint64_t pages_len;
	uint32_t pages_crc, hdr_crc;
};

struct rec_hdr {
	uint32_t type, len;
};

/* ---- CRC32C ------------------------------------------------------------ */

static uint32_t crc_table[256];

static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[i] = c;
	}
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c = crc;
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		n -= 8;
	}
	uint32_t c32 = (uint32_t) c;
	while (n--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return c32;
}

uint32_t ckpt_crc32c(uint32_t crc, const void *buf, size_t n)
{
	static int mode; /* 0 unknown, 1 hw, 2 table */
	const uint8_t *p = buf;
	if (!mode) {
		__builtin_cpu_init();
		mode = __builtin_cpu_supports("sse4.2") ? 1 : 2;
		if (mode == 2)
			crc_table_init();
	}
	crc = ~crc;
	if (mode == 1) {
		crc = crc_hw(crc, p, n);
	} else {
		while (n--)
			crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	}
	return ~crc;
}

/* ---- free ------------------------------------------------------------- */

int ckpt_root_id(int dirfd, const char *path, struct ckpt_root_rec *out)
{
	struct statx sx;
	if (statx(dirfd, path, *path ? 0 : AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) < 0)
		return -errno;
	*out = (struct ckpt_root_rec){.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
				      .ino = sx.stx_ino};
	if (sx.stx_mask & STATX_BTIME) {
		out->btime_sec = sx.stx_btime.tv_sec;
		out->btime_nsec = sx.stx_btime.tv_nsec;
	}
	return 0;
}

bool ckpt_root_same(const struct ckpt_root_rec *a, const struct ckpt_root_rec *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->btime_sec == b->btime_sec &&
	       a->btime_nsec == b->btime_nsec;
}

void ckpt_image_free(struct ckpt_image *img)
{
	for (uint32_t i = 0; i < img->ntasks; i++) {
		struct ckpt_task *t = &img->tasks[i];
		free(t->xsave);
		free(t->auxv);
		free(t->cwd);
		free(t->exe);
		for (uint32_t v = 0; v < t->nvmas; v++)
			free(t->vmas[v].path);
		free(t->vmas);
		free(t->runs);
		for (uint32_t f = 0; f < t->nfds; f++) {
			free(t->fds[f].path);
			free(t->fds[f].data);
		}
		free(t->fds);
		for (uint32_t k = 0; k < t->nseccomp; k++)
			free(t->seccomp[k].insns);
		free(t->seccomp);
		free(t->sigs);
		for (uint32_t k = 0; k < t->nthreads; k++) {
			free(t->threads[k].xsave);
			free(t->threads[k].sigs);
		}
		free(t->threads);
	}
	free(img->tasks);
	for (uint32_t k = 0; k < img->nshms; k++)
		free(img->shms[k].runs);
	free(img->shms);
	if (img->pages_map)
		munmap((void *) img->pages_map, img->pages_map_len);
	free(img->page_macs);
	memset(img, 0, sizeof(*img));
}

/* ---- encode ----------------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static int buf_put(struct buf *b, const void *p, size_t n)
{
	if (b->len + n + 8 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 8)
			cap *= 2;
		uint8_t *np = realloc(b->p, cap);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static int rec_put3(struct buf *b, uint32_t type, const void *a, size_t alen, const void *c,
		    size_t clen, const void *d, size_t dlen)
{
	static const uint8_t zero[8];
	if (alen + clen + dlen > UINT32_MAX / 2)
		return -E2BIG;
	struct rec_hdr h = {.type = type, .len = (uint32_t) (alen + clen + dlen)};
	int r = buf_put(b, &h, sizeof(h));
	if (!r)
		r = buf_put(b, a, alen);
	if (!r)
		r = buf_put(b, c, clen);
	if (!r)
		r = buf_put(b, d, dlen);
	size_t pad = (8 - (alen + clen + dlen) % 8) % 8;
	if (!r)
		r = buf_put(b, zero, pad);
	return r;
}

static int rec_put(struct buf *b, uint32_t type, const void *a, size_t alen, const void *c,
		   size_t clen)
{
	return rec_put3(b, type, a, alen, c, clen, NULL, 0);
}

int ckpt_image_encode(const struct ckpt_image *img, uint8_t **out, size_t *len, struct urs_err *err)
{
	struct buf b = {0};
	struct core_hdr h = {.version = CKPT_VERSION, .arch = EM_X86_64};
	int r = buf_put(&b, &h, sizeof(h));
	for (uint32_t k = 0; !r && k < img->nshms; k++) {
		const struct ckpt_shm *o = &img->shms[k];
		r = rec_put(&b, REC_SHM, &o->r, sizeof(o->r), o->runs,
			    (size_t) o->nruns * sizeof(*o->runs));
	}
	for (uint32_t i = 0; !r && i < img->ntasks; i++) {
		const struct ckpt_task *t = &img->tasks[i];
		r = rec_put(&b, REC_TASK, &t->r, sizeof(t->r), NULL, 0);
		if (!r && t->xsave_len)
			r = rec_put(&b, REC_XSAVE, t->xsave, t->xsave_len, NULL, 0);
		if (!r && t->auxv_len)
			r = rec_put(&b, REC_AUXV, t->auxv, t->auxv_len, NULL, 0);
		if (!r && t->cwd)
			r = rec_put(&b, REC_CWD, t->cwd, strlen(t->cwd), NULL, 0);
		if (!r && t->exe)
			r = rec_put(&b, REC_EXE, t->exe, strlen(t->exe), NULL, 0);
		if (!r && t->has_root)
			r = rec_put(&b, REC_ROOT, &t->root, sizeof(t->root), NULL, 0);
		for (uint32_t v = 0; !r && v < t->nvmas; v++) {
			const struct ckpt_vma *m = &t->vmas[v];
			r = rec_put(&b, REC_VMA, &m->r, sizeof(m->r), m->path,
				    m->path ? strlen(m->path) : 0);
		}
		if (!r && t->nruns)
			r = rec_put(&b, REC_RUNS, t->runs, (size_t) t->nruns * sizeof(*t->runs),
				    NULL, 0);
		for (uint32_t f = 0; !r && f < t->nfds; f++) {
			const struct ckpt_fd *d = &t->fds[f];
			struct ckpt_fd_rec fr = d->r;
			fr.path_len = d->path ? (uint32_t) strlen(d->path) : 0;
			fr.data_len = d->data ? d->r.data_len : 0;
			r = rec_put3(&b, REC_FD, &fr, sizeof(fr), d->path, fr.path_len, d->data,
				     fr.data_len);
		}
		if (!r && t->nsigs)
			r = rec_put(&b, REC_SIGINFO, t->sigs, (size_t) t->nsigs * sizeof(*t->sigs),
				    NULL, 0);
		for (uint32_t k = 0; !r && k < t->nseccomp; k++) {
			const struct ckpt_seccomp *sc = &t->seccomp[k];
			uint32_t hdr[2] = {sc->flags, 0};
			r = rec_put(&b, REC_SECCOMP, hdr, sizeof(hdr), sc->insns,
				    (size_t) sc->len * 8);
		}
		for (uint32_t k = 0; !r && k < t->nthreads; k++) {
			const struct ckpt_thread *th = &t->threads[k];
			r = rec_put3(&b, REC_THREAD, &th->r, sizeof(th->r), th->xsave,
				     th->r.xsave_len, th->sigs,
				     (size_t) th->r.nsigs * sizeof(*th->sigs));
		}
	}
	if (r) {
		free(b.p);
		return urs_err_set(err, r, "checkpoint image: encoding failed: %s", strerror(-r));
	}
	memcpy(h.magic, CORE_MAGIC, 8);
	memcpy(h.id, img->id, 16);
	h.body_len = b.len - sizeof(h);
	h.pages_len = img->pages_len;
	h.pages_crc = img->pages_crc;
	h.ntasks = img->ntasks;
	h.body_crc = ckpt_crc32c(0, b.p + sizeof(h), h.body_len);
	h.hdr_crc = 0;
	h.hdr_crc = ckpt_crc32c(0, &h, sizeof(h));
	memcpy(b.p, &h, sizeof(h));
	*out = b.p;
	*len = b.len;
	return 0;
}

/* ---- decode ----------------------------------------------------------- */

static char *dup_path(const uint8_t *p, size_t n, int absolute)
{
	if (n == 0 || n >= PATH_MAX || memchr(p, 0, n) || (absolute && p[0] != '/'))
		return NULL;
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static void *grow(void *arr, uint32_t n, size_t elem)
{
	/* grow by doubling when n is a power of two (or zero) */
	if (n && (n & (n - 1)))
		return arr;
	size_t cap = n ? (size_t) n * 2 : 4;
	return realloc(arr, cap * elem);
}

/* Per-type shape of one fd record (a dup carries nothing of its own; one
 * shared with an earlier task carries only its type). */
/* Datagrams as saved: {u32 length, bytes}, exactly filling @dl bytes; each
 * no larger than the restorer's 32 KiB send buffer. */
static bool msgs_ok(const uint8_t *p, uint32_t dl)
{
	for (uint32_t off = 0; off < dl;) {
		uint32_t ml;
		if (dl - off < 4)
			return false;
		memcpy(&ml, p + off, 4);
		off += 4;
		if (ml > dl - off || ml > 32768)
			return false;
		off += ml;
	}
	return true;
}

static bool fd_rec_ok(const struct ckpt_fd *d)
{
	const struct ckpt_fd_rec *r = &d->r;
	if (r->dup_of != -1)
		return true;
	if (r->type < CKPT_FD_REG || r->type > CKPT_FD_TYPE_MAX)
		return false;
	if (r->xtask)
		return !d->path && !d->data && r->xfd >= 0 && r->type != CKPT_FD_EXT;
	bool has_path = r->type == CKPT_FD_REG || r->type == CKPT_FD_DIR ||
			r->type == CKPT_FD_CHR || r->type == CKPT_FD_FIFO;
	if (has_path != (d->path != NULL))
		return false;
	uint32_t dl = d->data ? r->data_len : 0;
	switch (r->type) {
	case CKPT_FD_EXT:
		return (r->fd <= 2 ? r->sub == 0 : r->sub <= 2) && !dl;
	case CKPT_FD_PIPE:
		return (r->oflags & O_ACCMODE) != O_RDWR && dl <= r->sub &&
		       r->sub <= CKPT_MAX_FDDATA;
	case CKPT_FD_FIFO:
		return dl <= r->sub && r->sub <= CKPT_MAX_FDDATA;
	case CKPT_FD_EPOLL:
		return dl % sizeof(struct ckpt_epoll_tgt) == 0 &&
		       dl / sizeof(struct ckpt_epoll_tgt) <= CKPT_MAX_EPOLL;
	case CKPT_FD_UNIX:
		if (!r->ino || r->peer == r->ino)
			return false;
		if (r->sub == SOCK_STREAM)
			return true;
		if (r->sub != SOCK_DGRAM && r->sub != SOCK_SEQPACKET)
			return false;
		return msgs_ok(d->data, dl);
	case CKPT_FD_TCP_LISTEN: {
		struct ckpt_inet_listen l;
		if (dl != sizeof(l))
			return false;
		memcpy(&l, d->data, sizeof(l));
		return l.family == AF_INET || l.family == AF_INET6;
	}
	case CKPT_FD_TCP_CLOSED:
		return !dl && (r->sub == AF_INET || r->sub == AF_INET6);
	case CKPT_FD_SIGNALFD:
		return !dl;
	case CKPT_FD_UNIX_LISTEN:
	case CKPT_FD_UNIX_BOUND: {
		struct ckpt_unix_listen l;
		bool bound = r->type == CKPT_FD_UNIX_BOUND;
		if (bound ? dl < sizeof(l) : dl != sizeof(l))
			return false;
		memcpy(&l, d->data, sizeof(l));
		if (bound ? (l.type != SOCK_DGRAM || l.backlog ||
			     !msgs_ok(d->data + sizeof(l), dl - (uint32_t) sizeof(l)))
			  : (l.type != SOCK_STREAM && l.type != SOCK_SEQPACKET))
			return false;
		if (l.pad || !l.name_len || l.name_len > sizeof(l.name))
			return false;
		if (l.name[0] == '\0')
			return true; /* abstract: any bytes */
		/* a path: absolute, one terminating NUL at most, at the end */
		size_t n = strnlen(l.name, l.name_len);
		return l.name[0] == '/' && n + (n < l.name_len) == l.name_len;
	}
	case CKPT_FD_TIMERFD: {
		struct ckpt_timerfd tf;
		if (dl != sizeof(tf))
			return false;
		memcpy(&tf, d->data, sizeof(tf));
		bool clock = tf.clockid == CLOCK_REALTIME || tf.clockid == CLOCK_MONOTONIC ||
			     tf.clockid == CLOCK_BOOTTIME || tf.clockid == CLOCK_REALTIME_ALARM ||
			     tf.clockid == CLOCK_BOOTTIME_ALARM;
		return clock && tf.value_sec >= 0 && tf.interval_sec >= 0 && tf.value_nsec >= 0 &&
		       tf.value_nsec < 1000000000 && tf.interval_nsec >= 0 &&
		       tf.interval_nsec < 1000000000;
	}
	case CKPT_FD_UDP: {
		struct ckpt_inet_udp u;
		if (dl != sizeof(u))
			return false;
		memcpy(&u, d->data, sizeof(u));
		return (u.family == AF_INET || u.family == AF_INET6) && !u.pad;
	}
	case CKPT_FD_SHM:
		return !dl && (r->oflags & O_ACCMODE) != 3;
	default:
		return !dl;
	}
}

/* A shared memory object: sane size, runs sorted, inside it and inside the
 * page data. */
static int validate_shm(const struct ckpt_image *img, uint32_t k, struct urs_err *err)
{
	const struct ckpt_shm *o = &img->shms[k];
	uint64_t span = ckpt_shm_span(o);
	if (o->r.id != k || o->r.size > CKPT_MAX_USER_ADDR || (o->r.flags & ~CKPT_SHM_MEMFD) ||
	    o->r.pad || !memchr(o->r.name, 0, sizeof(o->r.name)) ||
	    (!(o->r.flags & CKPT_SHM_MEMFD) && o->r.name[0]))
		return urs_err_set(err, -EINVAL, "checkpoint image: bad shared memory object %u",
				   k);
	uint64_t prev = 0;
	for (uint32_t i = 0; i < o->nruns; i++) {
		const struct ckpt_run *run = &o->runs[i];
		uint64_t bytes = run->npages * CKPT_PAGE_SIZE;
		if (!run->npages || run->npages > (1ull << 36) || run->vaddr % CKPT_PAGE_SIZE ||
		    run->off % CKPT_PAGE_SIZE || run->vaddr < prev || run->vaddr > span ||
		    bytes > span - run->vaddr || run->off > img->pages_len ||
		    bytes > img->pages_len - run->off)
			return urs_err_set(err, -EINVAL,
					   "checkpoint image: shared memory object %u: bad page "
					   "run %u",
					   k, i);
		prev = run->vaddr + bytes;
	}
	return 0;
}

/* task idx's other threads: unique ids, names, their own signals */
static int validate_threads(const struct ckpt_image *img, uint32_t idx, struct urs_err *err)
{
	const struct ckpt_task *t = &img->tasks[idx];
	for (uint32_t k = 0; k < t->nthreads; k++) {
		const struct ckpt_thread *th = &t->threads[k];
		bool dup = th->r.tid <= 0 || th->r.tid == t->r.nspid;
		for (uint32_t j = 0; j < img->ntasks && !dup; j++) {
			dup = j != idx && img->tasks[j].r.nspid == th->r.tid;
			for (uint32_t q = 0; q < img->tasks[j].nthreads && !dup; q++)
				dup = (j != idx || q != k) &&
				      img->tasks[j].threads[q].r.tid == th->r.tid;
		}
		for (uint32_t q = 0; q < th->r.nsigs && !dup; q++) {
			int32_t signo;
			memcpy(&signo, th->sigs[q].info, sizeof(signo));
			dup = signo < 1 || signo > (int32_t) CKPT_NSIG || th->sigs[q].shared;
		}
		if (dup || !memchr(th->r.comm, 0, sizeof(th->r.comm)))
			return urs_err_set(err, -EINVAL,
					   "checkpoint image: task %u: bad thread %d (id, name or "
					   "pending signal)",
					   idx, th->r.tid);
	}
	return 0;
}

/* mappings: aligned, ordered, sane kinds; shmem ones inside a known object */
static int validate_vmas(const struct ckpt_image *img, uint32_t idx, struct urs_err *err)
{
	const struct ckpt_task *t = &img->tasks[idx];
	uint64_t prev_end = 0;
	for (uint32_t v = 0; v < t->nvmas; v++) {
		const struct ckpt_vma_rec *m = &t->vmas[v].r;
		if (m->start % CKPT_PAGE_SIZE || m->end % CKPT_PAGE_SIZE || m->start >= m->end ||
		    m->start < prev_end || m->end > CKPT_MAX_USER_ADDR || m->start < 4096 ||
		    (m->prot & ~7u) || m->kind < CKPT_VMA_ANON || m->kind > CKPT_VMA_SHMEM ||
		    (m->flags & ~15u) || m->pgoff % CKPT_PAGE_SIZE ||
		    (m->kind == CKPT_VMA_FILE) != (t->vmas[v].path != NULL) ||
		    (m->kind == CKPT_VMA_ANON && (m->flags & CKPT_VMA_SHARED)) ||
		    (m->kind != CKPT_VMA_SHMEM && m->shm))
			return urs_err_set(err, -EINVAL,
					   "checkpoint image: task %u: invalid mapping %#llx-%#llx",
					   idx, (unsigned long long) m->start,
					   (unsigned long long) m->end);
		if (m->kind == CKPT_VMA_SHMEM) {
			/* a known object, mapped shared, entirely inside it */
			const struct ckpt_shm *o = m->shm < img->nshms ? &img->shms[m->shm] : NULL;
			if (!o || m->flags != CKPT_VMA_SHARED || m->pgoff > ckpt_shm_span(o) ||
			    m->end - m->start > ckpt_shm_span(o) - m->pgoff)
				return urs_err_set(
					err, -EINVAL,
					"checkpoint image: task %u: shared memory mapping "
					"%#llx-%#llx: unknown object %u or offset %#llx "
					"out of range",
					idx, (unsigned long long) m->start,
					(unsigned long long) m->end, m->shm,
					(unsigned long long) m->pgoff);
		}
		prev_end = m->end;
	}
	return 0;
}

/* page runs: ordered, inside the page data and a private mapping */
static int validate_runs(const struct ckpt_image *img, uint32_t idx, struct urs_err *err)
{
	const struct ckpt_task *t = &img->tasks[idx];
	uint32_t v = 0;
	uint64_t prev = 0;
	for (uint32_t i = 0; i < t->nruns; i++) {
		const struct ckpt_run *run = &t->runs[i];
		uint64_t bytes = run->npages * CKPT_PAGE_SIZE;
		if (!run->npages || run->npages > (1ull << 36) || run->vaddr % CKPT_PAGE_SIZE ||
		    run->off % CKPT_PAGE_SIZE || run->vaddr < prev || run->off > img->pages_len ||
		    bytes > img->pages_len - run->off)
			return urs_err_set(err, -EINVAL,
					   "checkpoint image: task %u: bad page run %u", idx, i);
		while (v < t->nvmas && t->vmas[v].r.end <= run->vaddr)
			v++;
		if (v == t->nvmas || t->vmas[v].r.start > run->vaddr ||
		    bytes > t->vmas[v].r.end - run->vaddr ||
		    (t->vmas[v].r.kind != CKPT_VMA_ANON && t->vmas[v].r.kind != CKPT_VMA_FILE) ||
		    (t->vmas[v].r.flags & CKPT_VMA_SHARED))
			return urs_err_set(err, -EINVAL,
					   "checkpoint image: task %u: page run %u outside a "
					   "private mapping",
					   idx, i);
		prev = run->vaddr + bytes;
	}
	return 0;
}

/* fds: ascending, duplicates and shared ones of known fds, epoll targets known */
static int validate_fds(const struct ckpt_image *img, uint32_t idx, struct urs_err *err)
{
	const struct ckpt_task *t = &img->tasks[idx];
	int prev_fd = -1;
	for (uint32_t f = 0; f < t->nfds; f++) {
		const struct ckpt_fd *d = &t->fds[f];
		if (d->r.fd <= prev_fd || d->r.fd >= (1 << 20) ||
		    (d->r.dup_of != -1 && (d->r.dup_of < 0 || d->r.dup_of >= d->r.fd)) ||
		    (d->r.dup_of != -1 && (d->r.xtask || d->path || d->data)) || !fd_rec_ok(d))
			return urs_err_set(err, -EINVAL, "checkpoint image: task %u: bad fd %d",
					   idx, d->r.fd);
		if (d->r.xtask) {
			/* the same open file description as a non-dup fd of an earlier task */
			uint32_t s = d->r.xtask - 1, g;
			const struct ckpt_task *src = s < idx ? &img->tasks[s] : NULL;
			for (g = 0; src && g < src->nfds && src->fds[g].r.fd != d->r.xfd; g++)
				;
			if (!src || g == src->nfds || src->fds[g].r.dup_of != -1 ||
			    src->fds[g].r.type != d->r.type)
				return urs_err_set(
					err, -EINVAL,
					"checkpoint image: task %u: fd %d shares unknown "
					"fd %d of task %u",
					idx, d->r.fd, d->r.xfd, s);
		}
		if (d->r.dup_of != -1) {
			uint32_t g;
			for (g = 0; g < f && t->fds[g].r.fd != d->r.dup_of; g++)
				;
			if (g == f || t->fds[g].r.dup_of != -1)
				return urs_err_set(err, -EINVAL,
						   "checkpoint image: task %u: fd %d duplicates "
						   "unknown fd %d",
						   idx, d->r.fd, d->r.dup_of);
		}
		if (d->r.type == CKPT_FD_SHM && d->r.dup_of == -1 && !d->r.xtask &&
		    d->r.sub >= img->nshms)
			return urs_err_set(
				err, -EINVAL,
				"checkpoint image: task %u: fd %d: unknown shared memory "
				"object %u",
				idx, d->r.fd, d->r.sub);
		if (d->r.type == CKPT_FD_EPOLL && !d->r.xtask)
			for (uint32_t k = 0; k < d->r.data_len / sizeof(struct ckpt_epoll_tgt);
			     k++) {
				struct ckpt_epoll_tgt tg;
				memcpy(&tg, d->data + k * sizeof(tg), sizeof(tg));
				uint32_t g;
				for (g = 0; g < t->nfds && t->fds[g].r.fd != tg.tfd; g++)
					;
				if (g == t->nfds || tg.tfd == d->r.fd)
					return urs_err_set(err, -EINVAL,
							   "checkpoint image: task %u: epoll fd %d "
							   "watches unknown fd %d",
							   idx, d->r.fd, tg.tfd);
			}
		prev_fd = d->r.fd;
	}
	return 0;
}

static int validate_task(const struct ckpt_image *img, uint32_t idx, struct urs_err *err)
{
	const struct ckpt_task *t = &img->tasks[idx];
	if (idx == 0 ? t->r.parent != -1 : (t->r.parent < 0 || (uint32_t) t->r.parent >= idx))
		return urs_err_set(err, -EINVAL, "checkpoint image: task %u: bad parent index %d",
				   idx, t->r.parent);
	if (t->r.nspid <= 0)
		return urs_err_set(err, -EINVAL, "checkpoint image: task %u: bad pid %d", idx,
				   t->r.nspid);
	for (uint32_t j = 0; j < idx; j++)
		if (img->tasks[j].r.nspid == t->r.nspid)
			return urs_err_set(err, -EINVAL, "checkpoint image: pid %d appears twice",
					   t->r.nspid);
	if (t->r.zombie) {
		if (idx == 0 || t->nvmas || t->nruns || t->nfds || t->nsigs || t->nseccomp ||
		    t->nthreads)
			return urs_err_set(err, -EINVAL, "checkpoint image: task %u: bad zombie",
					   idx);
		return 0;
	}
	if (!t->xsave || t->xsave_len < 576 || !t->cwd)
		return urs_err_set(err, -EINVAL,
				   "checkpoint image: task %u (pid %d): missing FPU state or cwd",
				   idx, t->r.nspid);
	if (t->auxv_len % 16)
		return urs_err_set(err, -EINVAL, "checkpoint image: task %u: bad auxv length", idx);
	for (uint32_t k = 0; k < t->nseccomp; k++)
		if (t->seccomp[k].flags & ~2u /* SECCOMP_FILTER_FLAG_LOG */)
			return urs_err_set(err, -EINVAL,
					   "checkpoint image: task %u: bad seccomp flags", idx);
	for (uint32_t k = 0; k < t->nsigs; k++) {
		int32_t signo;
		memcpy(&signo, t->sigs[k].info, sizeof(signo));
		if (signo < 1 || signo > (int32_t) CKPT_NSIG || t->sigs[k].shared > 1)
			return urs_err_set(err, -EINVAL,
					   "checkpoint image: task %u: bad pending signal", idx);
	}
	if (t->r.ngroups > CKPT_MAX_GROUPS)
		return urs_err_set(err, -EINVAL, "checkpoint image: task %u: too many groups", idx);
	if (t->r.thp_disable != 0 && t->r.thp_disable != 1 && t->r.thp_disable != 3)
		return urs_err_set(
			err, -EINVAL,
			"checkpoint image: task %u: bad transparent huge page setting %u", idx,
			t->r.thp_disable);
	int r = validate_threads(img, idx, err);
	if (!r)
		r = validate_vmas(img, idx, err);
	if (!r)
		r = validate_runs(img, idx, err);
	if (!r)
		r = validate_fds(img, idx, err);
	return r;
}

static int rec_shm(struct ckpt_image *img, const uint8_t *d, uint32_t len, struct urs_err *err)
{
	size_t rl = len - sizeof(struct ckpt_shm_rec);
	if (len < sizeof(struct ckpt_shm_rec) || img->nshms >= CKPT_MAX_SHM ||
	    rl % sizeof(struct ckpt_run) || rl / sizeof(struct ckpt_run) > CKPT_MAX_RUNS)
		return urs_err_set(err, -EINVAL, "checkpoint image: bad shared memory record");
	struct ckpt_shm *no = grow(img->shms, img->nshms, sizeof(*no));
	if (!no)
		return -ENOMEM;
	img->shms = no;
	struct ckpt_shm *o = &img->shms[img->nshms++];
	memcpy(&o->r, d, sizeof(o->r));
	o->runs = NULL;
	o->nruns = (uint32_t) (rl / sizeof(struct ckpt_run));
	if (o->nruns) {
		if (!(o->runs = malloc(rl)))
			return -ENOMEM;
		memcpy(o->runs, d + sizeof(o->r), rl);
	}
	return 0;
}

/* XSAVE, AUXV: a blob of at most @max bytes, once */
static int rec_blob(uint8_t **dst, uint32_t *dlen, uint32_t max, const uint8_t *d, uint32_t len,
		    struct urs_err *err)
{
	if (*dst || !len || len > max)
		return urs_err_set(err, -EINVAL, "checkpoint image: bad FPU/auxv record");
	if (!(*dst = malloc(len)))
		return -ENOMEM;
	memcpy(*dst, d, len);
	*dlen = len;
	return 0;
}

static int rec_vma(struct ckpt_task *t, const uint8_t *d, uint32_t len, struct urs_err *err)
{
	if (len < sizeof(struct ckpt_vma_rec) || t->nvmas >= CKPT_MAX_VMAS)
		return urs_err_set(err, -EINVAL, "checkpoint image: bad mapping record");
	struct ckpt_vma *nv = grow(t->vmas, t->nvmas, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	t->vmas = nv;
	struct ckpt_vma *m = &t->vmas[t->nvmas++];
	memcpy(&m->r, d, sizeof(m->r));
	m->path = NULL;
	size_t pl = len - sizeof(m->r);
	if (pl && !(m->path = dup_path(d + sizeof(m->r), pl, 1)))
		return urs_err_set(err, -EINVAL, "checkpoint image: bad mapping path");
	return 0;
}

static int rec_fd(struct ckpt_task *t, const uint8_t *d, uint32_t len, struct urs_err *err)
{
	if (len < sizeof(struct ckpt_fd_rec) || t->nfds >= CKPT_MAX_FDS)
		return urs_err_set(err, -EINVAL, "checkpoint image: bad fd record");
	struct ckpt_fd *nf = grow(t->fds, t->nfds, sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	t->fds = nf;
	struct ckpt_fd *f = &t->fds[t->nfds++];
	memcpy(&f->r, d, sizeof(f->r));
	f->path = NULL;
	f->data = NULL;
	size_t rest = len - sizeof(f->r);
	if ((uint64_t) f->r.path_len + f->r.data_len != rest || f->r.data_len > CKPT_MAX_FDDATA)
		return urs_err_set(err, -EINVAL, "checkpoint image: bad fd record");
	const uint8_t *q = d + sizeof(f->r);
	if (f->r.path_len && !(f->path = dup_path(q, f->r.path_len, 1)))
		return urs_err_set(err, -EINVAL, "checkpoint image: bad fd path");
	if (f->r.data_len) {
		if (!(f->data = malloc(f->r.data_len)))
			return -ENOMEM;
		memcpy(f->data, q + f->r.path_len, f->r.data_len);
	}
	return 0;
}

static int rec_thread(struct ckpt_task *t, const uint8_t *d, uint32_t len, uint32_t *nthreads,
		      struct urs_err *err)
{
	struct ckpt_thread_rec tr;
	if (len < sizeof(tr) || (*nthreads)++ >= CKPT_MAX_THREADS)
		return urs_err_set(err, -EINVAL, "checkpoint image: bad thread record");
	memcpy(&tr, d, sizeof(tr));
	if (tr.xsave_len < 576 || tr.xsave_len > CKPT_MAX_XSAVE || tr.nsigs > CKPT_MAX_SIGINFO ||
	    len - sizeof(tr) !=
		    (uint64_t) tr.xsave_len + (uint64_t) tr.nsigs * sizeof(struct ckpt_siginfo))
		return urs_err_set(err, -EINVAL, "checkpoint image: bad thread record");
	struct ckpt_thread *nt = grow(t->threads, t->nthreads, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	t->threads = nt;
	struct ckpt_thread *th = &t->threads[t->nthreads++];
	th->r = tr;
	th->sigs = NULL;
	if (!(th->xsave = malloc(tr.xsave_len)))
		return -ENOMEM;
	memcpy(th->xsave, d + sizeof(tr), tr.xsave_len);
	if (tr.nsigs) {
		size_t sl = (size_t) tr.nsigs * sizeof(struct ckpt_siginfo);
		if (!(th->sigs = malloc(sl)))
			return -ENOMEM;
		memcpy(th->sigs, d + sizeof(tr) + tr.xsave_len, sl);
	}
	return 0;
}

static int rec_siginfo(struct ckpt_task *t, const uint8_t *d, uint32_t len, struct urs_err *err)
{
	if (t->sigs || !len || len % sizeof(struct ckpt_siginfo) ||
	    len / sizeof(struct ckpt_siginfo) > CKPT_MAX_SIGINFO)
		return urs_err_set(err, -EINVAL, "checkpoint image: bad signal record");
	if (!(t->sigs = malloc(len)))
		return -ENOMEM;
	memcpy(t->sigs, d, len);
	t->nsigs = len / sizeof(struct ckpt_siginfo);
	return 0;
}

static int rec_seccomp(struct ckpt_task *t, const uint8_t *d, uint32_t len, struct urs_err *err)
{
	uint32_t hdr[2];
	if (len <= sizeof(hdr) || (len - sizeof(hdr)) % 8 ||
	    (len - sizeof(hdr)) / 8 > CKPT_MAX_BPF || t->nseccomp >= CKPT_MAX_SECCOMP)
		return urs_err_set(err, -EINVAL, "checkpoint image: bad seccomp record");
	memcpy(hdr, d, sizeof(hdr));
	struct ckpt_seccomp *ns = grow(t->seccomp, t->nseccomp, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	t->seccomp = ns;
	struct ckpt_seccomp *sc = &t->seccomp[t->nseccomp++];
	sc->flags = hdr[0];
	sc->len = (len - sizeof(hdr)) / 8;
	if (!(sc->insns = malloc((size_t) sc->len * 8)))
		return -ENOMEM;
	memcpy(sc->insns, d + sizeof(hdr), (size_t) sc->len * 8);
	return 0;
}

/* One record of the current task @t (REC_SHM and REC_TASK are the body's). */
static int rec_task_part(struct ckpt_task *t, uint32_t type, const uint8_t *d, uint32_t len,
			 uint32_t *nthreads, struct urs_err *err)
{
	switch (type) {
	case REC_XSAVE:
		return rec_blob(&t->xsave, &t->xsave_len, CKPT_MAX_XSAVE, d, len, err);
	case REC_AUXV:
		return rec_blob(&t->auxv, &t->auxv_len, CKPT_MAX_AUXV, d, len, err);
	case REC_CWD:
	case REC_EXE: {
		char **dst = type == REC_CWD ? &t->cwd : &t->exe;
		if (*dst || !(*dst = dup_path(d, len, 1)))
			return urs_err_set(err, -EINVAL, "checkpoint image: bad cwd/exe path");
		return 0;
	}
	case REC_ROOT:
		if (t->has_root || len != sizeof(t->root))
			return urs_err_set(err, -EINVAL,
					   "checkpoint image: bad root directory record");
		memcpy(&t->root, d, sizeof(t->root));
		t->has_root = 1;
		return 0;
	case REC_VMA:
		return rec_vma(t, d, len, err);
	case REC_RUNS:
		if (t->runs || !len || len % sizeof(struct ckpt_run) ||
		    len / sizeof(struct ckpt_run) > CKPT_MAX_RUNS)
			return urs_err_set(err, -EINVAL, "checkpoint image: bad page runs");
		if (!(t->runs = malloc(len)))
			return -ENOMEM;
		memcpy(t->runs, d, len);
		t->nruns = len / sizeof(struct ckpt_run);
		return 0;
	case REC_FD:
		return rec_fd(t, d, len, err);
	case REC_THREAD:
		return rec_thread(t, d, len, nthreads, err);
	case REC_SIGINFO:
		return rec_siginfo(t, d, len, err);
	case REC_SECCOMP:
		return rec_seccomp(t, d, len, err);
	default:
		return urs_err_set(err, -EINVAL, "checkpoint image: unknown record type %u", type);
	}
}

static int decode_body(const uint8_t *p, size_t len, struct ckpt_image *img, uint32_t ntasks,
		       struct urs_err *err)
{
	img->tasks = calloc(ntasks, sizeof(*img->tasks));
	if (!img->tasks)
		return -ENOMEM;
	struct ckpt_task *t = NULL;
	size_t off = 0;
	uint32_t nthreads = 0; /* in the whole image */
	while (off < len) {
		struct rec_hdr h;
		if (len - off < sizeof(h))
			return urs_err_set(err, -EINVAL, "checkpoint image: truncated record");
		memcpy(&h, p + off, sizeof(h));
		off += sizeof(h);
		size_t padded = ((size_t) h.len + 7) & ~(size_t) 7;
		if (h.len > len - off || padded > len - off)
			return urs_err_set(err, -EINVAL, "checkpoint image: record overruns body");
		const uint8_t *d = p + off;
		off += padded;
		int r = 0;
		if (h.type == REC_SHM) {
			r = t ? urs_err_set(err, -EINVAL,
					    "checkpoint image: bad shared memory record")
			      : rec_shm(img, d, h.len, err);
		} else if (h.type == REC_TASK) {
			if (img->ntasks == ntasks || h.len != sizeof(t->r))
				return urs_err_set(err, -EINVAL,
						   "checkpoint image: bad task record");
			t = &img->tasks[img->ntasks++];
			memcpy(&t->r, d, sizeof(t->r));
		} else {
			r = !t ? urs_err_set(err, -EINVAL, "checkpoint image: record before task")
			       : rec_task_part(t, h.type, d, h.len, &nthreads, err);
		}
		if (r)
			return r;
	}
	if (img->ntasks != ntasks)
		return urs_err_set(err, -EINVAL, "checkpoint image: %u tasks announced, %u found",
				   ntasks, img->ntasks);
	for (uint32_t k = 0; k < img->nshms; k++) {
		int r = validate_shm(img, k, err);
		if (r)
			return r;
	}
	for (uint32_t i = 0; i < img->ntasks; i++) {
		int r = validate_task(img, i, err);
		if (r)
			return r;
	}
	return 0;
}

int ckpt_image_decode(const uint8_t *buf, size_t len, struct ckpt_image *img, struct urs_err *err)
{
	struct core_hdr h;
	if (len < sizeof(h))
		return urs_err_set(err, -EINVAL, "checkpoint image: core.img truncated (%zu bytes)",
				   len);
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, CORE_MAGIC, 8))
		return urs_err_set(err, -EINVAL, "checkpoint image: core.img is not an ursa image");
	uint32_t hcrc = h.hdr_crc;
	h.hdr_crc = 0;
	if (ckpt_crc32c(0, &h, sizeof(h)) != hcrc)
		return urs_err_set(err, -EBADMSG,
				   "checkpoint image: core.img header checksum "
				   "mismatch (corrupted)");
	if (h.version < CKPT_VERSION && h.arch == EM_X86_64)
		return urs_err_set(err, -EPROTONOSUPPORT,
				   "checkpoint image: core.img is version %u, made by an ursa "
				   "before images were authenticated (version %u): not restored; "
				   "checkpoint the container again",
				   h.version, CKPT_VERSION);
	if (h.version != CKPT_VERSION || h.arch != EM_X86_64)
		return urs_err_set(err, -EPROTONOSUPPORT,
				   "checkpoint image: version %u arch %u not supported", h.version,
				   h.arch);
	if (h.body_len != len - sizeof(h))
		return urs_err_set(err, -EBADMSG,
				   "checkpoint image: core.img is %zu bytes, header says %llu "
				   "(truncated or extended)",
				   len, (unsigned long long) (h.body_len + sizeof(h)));
	if (ckpt_crc32c(0, buf + sizeof(h), h.body_len) != h.body_crc)
		return urs_err_set(err, -EBADMSG,
				   "checkpoint image: core.img body checksum mismatch (corrupted)");
	if (h.ntasks == 0 || h.ntasks > CKPT_MAX_TASKS || h.pages_len % CKPT_PAGE_SIZE)
		return urs_err_set(err, -EINVAL,
				   "checkpoint image: bad task count or pages length");
	memset(img, 0, sizeof(*img));
	memcpy(img->id, h.id, 16);
	img->pages_len = h.pages_len;
	img->pages_crc = h.pages_crc;
	int r = decode_body(buf + sizeof(h), h.body_len, img, h.ntasks, err);
	if (r) {
		if (r == -ENOMEM)
			urs_err_set(err, r, "checkpoint image: out of memory");
		ckpt_image_free(img);
	}
	return r;
}

/* ---- files ------------------------------------------------------------ */

/* pages.img is written by ckpt/pagesink.c (batched io_uring writes);
 * the header page is made here, where the format lives */
int ckpt_pages_open(struct ckpt_pages_writer *w, int dirfd, const struct ckpt_seal *seal,
		    const uint8_t id[16], struct urs_err *err)
{
	return ckpt_pages_open_stream(w, dirfd, -1, seal, id, err);
}

int ckpt_pages_open_stream(struct ckpt_pages_writer *w, int dirfd, int stream_fd,
			   const struct ckpt_seal *seal, const uint8_t id[16], struct urs_err *err)
{
	int r = ckpt_pagesink_open(w, dirfd, stream_fd, err);
	if (r == 0)
		ckpt_pagemacs_start(&w->macs, seal, id);
	return r;
}

int ckpt_pages_append(struct ckpt_pages_writer *w, const void *p, size_t n, uint64_t *off,
		      struct urs_err *err)
{
	if (ckpt_pagemacs_update(&w->macs, p, n))
		return urs_err_set(err, -ENOMEM, "checkpoint: page MACs: out of memory");
	return ckpt_pagesink_append(w, p, n, off, err);
}

int ckpt_pages_finish(struct ckpt_pages_writer *w, const uint8_t id[16], struct urs_err *err)
{
	ckpt_pages_frames_free(w); /* (nothing is appended any more) */
	if (ckpt_pagemacs_finish(&w->macs))
		return urs_err_set(err, -ENOMEM, "checkpoint: page MACs: out of memory");
	uint8_t page[CKPT_PAGE_SIZE] = {0};
	struct pages_hdr h = {.version = CKPT_VERSION};
	memcpy(h.magic, PAGES_MAGIC, 8);
	memcpy(h.id, id, 16);
	h.pages_len = w->off;
	h.pages_crc = w->crc;
	h.hdr_crc = ckpt_crc32c(0, &h, sizeof(h));
	memcpy(page, &h, sizeof(h));
	return ckpt_pagesink_finish(w, page, err);
}

void ckpt_pages_abort(struct ckpt_pages_writer *w, int dirfd)
{
	ckpt_pagesink_abort(w, dirfd);
	ckpt_pagemacs_free(&w->macs);
	ckpt_pages_frames_free(w);
}

int ckpt_image_write_core(const struct ckpt_image *img, int dirfd, const struct ckpt_seal *seal,
			  struct urs_err *err)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	if (img->npage_macs != ckpt_seal_nchunks(img->pages_len))
		return urs_err_set(err, -EINVAL,
				   "checkpoint: %u page MACs for %llu bytes of page data",
				   img->npage_macs, (unsigned long long) img->pages_len);
	int r = ckpt_image_encode(img, &buf, &len, err);
	if (r)
		return r;
	size_t macs = (size_t) img->npage_macs * CKPT_MAC_LEN;
	uint8_t *b = realloc(buf, len + macs + CKPT_MAC_LEN);
	if (!b)
		return urs_err_set(err, -ENOMEM, "checkpoint: out of memory");
	buf = b;
	if (macs)
		memcpy(buf + len, img->page_macs, macs);
	ckpt_seal_core(seal, buf, len + macs, buf + len + macs);
	len += macs + CKPT_MAC_LEN;
	_cleanup_close_ int fd = openat(
		dirfd, "core.img.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return urs_err_set(err, -errno, "checkpoint: creating core.img: %m");
	r = urs_write_all(fd, buf, len);
	if (r)
		return urs_err_set(err, r, "checkpoint: writing core.img: %s", strerror(-r));
	if (renameat(dirfd, "core.img.tmp", dirfd, "core.img") < 0)
		return urs_err_set(err, -errno, "checkpoint: renaming core.img: %m");
	return 0;
}

static int read_file_at(int dirfd, const char *name, uint8_t **out, size_t *len,
			struct urs_err *err)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return urs_err_set(err, -errno, "restore: opening %s: %m", name);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return urs_err_set(err, -errno, "restore: %s: %m", name);
	if (!S_ISREG(st.st_mode) || st.st_size > MAX_CORE)
		return urs_err_set(err, -EINVAL, "restore: %s is not a regular file of sane size",
				   name);
	_cleanup_free_ uint8_t *b = malloc(st.st_size ? (size_t) st.st_size : 1);
	if (!b)
		return -ENOMEM;
	size_t got = 0;
	while (got < (size_t) st.st_size) {
		ssize_t n = read(fd, b + got, (size_t) st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return urs_err_set(err, -errno, "restore: reading %s: %m", name);
		if (n == 0)
			break;
		got += (size_t) n;
	}
	*len = got;
	*out = steal_ptr(&b);
	return 0;
}

/* core.img as read: authenticated (the core MAC over every byte before
 * it), then the encoded core (header + body: *core_len bytes) and the page
 * MACs after it found. The header's lengths are used, bounded, before the
 * MAC is checked; nothing else is read from it until then. */
static int core_open(const uint8_t *buf, size_t len, const struct ckpt_seal *seal, size_t *core_len,
		     uint32_t *nmacs, struct urs_err *err)
{
	struct core_hdr h;
	if (len < sizeof(h))
		return urs_err_set(err, -EINVAL, "checkpoint image: core.img truncated (%zu bytes)",
				   len);
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, CORE_MAGIC, 8))
		return urs_err_set(err, -EINVAL, "checkpoint image: core.img is not an ursa image");
	if (h.version != CKPT_VERSION) { /* decoding it says what is wrong */
		struct ckpt_image tmp = {0};
		int r = ckpt_image_decode(buf, len, &tmp, err);
		ckpt_image_free(&tmp);
		return r ? r : urs_err_set(err, -EPROTONOSUPPORT, "checkpoint image: version");
	}
	if (h.pages_len > CKPT_MAX_USER_ADDR) /* no overflow below, MAC'd or not */
		return urs_err_set(err, -EBADMSG,
				   "checkpoint image: core.img claims %llu bytes of page data",
				   (unsigned long long) h.pages_len);
	uint64_t n = ckpt_seal_nchunks(h.pages_len);
	if (h.body_len > len || n > len / CKPT_MAC_LEN ||
	    sizeof(h) + h.body_len + (n + 1) * CKPT_MAC_LEN != len)
		return urs_err_set(err, -EBADMSG,
				   "checkpoint image: core.img is %zu bytes, which its header "
				   "does not account for (truncated or extended)",
				   len);
	/* checksums first: they tell a corrupted image from a forged one */
	uint32_t hcrc = h.hdr_crc;
	h.hdr_crc = 0;
	if (ckpt_crc32c(0, &h, sizeof(h)) != hcrc ||
	    ckpt_crc32c(0, buf + sizeof(h), h.body_len) != h.body_crc)
		return urs_err_set(err, -EBADMSG,
				   "checkpoint image: core.img checksum mismatch (corrupted)");
	uint8_t mac[CKPT_MAC_LEN];
	ckpt_seal_core(seal, buf, len - CKPT_MAC_LEN, mac);
	if (!urs_mac_equal(mac, buf + len - CKPT_MAC_LEN, CKPT_MAC_LEN))
		return urs_err_set(err, -EBADMSG,
				   "checkpoint image: core.img fails authentication: altered, or "
				   "made with another host's checkpoint key");
	*core_len = sizeof(h) + (size_t) h.body_len;
	*nmacs = (uint32_t) n;
	return 0;
}

/* Authenticate and decode core.img of dirfd into img (zeroed), page MACs
 * included. */
static int core_load(int dirfd, const struct ckpt_seal *seal, struct ckpt_image *img,
		     struct urs_err *err)
{
	_cleanup_free_ uint8_t *core = NULL;
	size_t len = 0, core_len = 0;
	uint32_t n = 0;
	int r = read_file_at(dirfd, "core.img", &core, &len, err);
	if (r || (r = core_open(core, len, seal, &core_len, &n, err)) ||
	    (r = ckpt_image_decode(core, core_len, img, err)))
		return r;
	if (n) {
		img->page_macs = malloc((size_t) n * CKPT_MAC_LEN);
		if (!img->page_macs) {
			ckpt_image_free(img);
			return urs_err_set(err, -ENOMEM, "restore: out of memory");
		}
		memcpy(img->page_macs, core + core_len, (size_t) n * CKPT_MAC_LEN);
	}
	img->npage_macs = n;
	return 0;
}

int ckpt_image_check_core(const char *dir, const struct ckpt_seal *seal, struct urs_err *err)
{
	_cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return urs_err_set(err, -errno, "opening image directory %s: %m", dir);
	struct ckpt_image img;
	memset(&img, 0, sizeof(img));
	int r = core_load(dirfd, seal, &img, err);
	if (r == 0)
		ckpt_image_free(&img);
	return r;
}

int ckpt_image_load(const char *dir, const struct ckpt_seal *seal, struct ckpt_image *img,
		    struct urs_err *err)
{
	return ckpt_image_load_ex(dir, -1, seal, 0, img, err);
}

int ckpt_image_load_ex(const char *dir, int pages_fd, const struct ckpt_seal *seal, unsigned flags,
		       struct ckpt_image *img, struct urs_err *err)
{
	bool lazy = flags & CKPT_LOAD_LAZY;
	memset(img, 0, sizeof(*img));
	_cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return urs_err_set(err, -errno, "restore: opening image directory %s: %m", dir);
	int r = core_load(dirfd, seal, img, err);
	if (r)
		return r;
	_cleanup_close_ int pfd =
		pages_fd >= 0 ? fcntl(pages_fd, F_DUPFD_CLOEXEC, 3)
			      : openat(dirfd, "pages.img", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (pfd < 0 || fstat(pfd, &st) < 0) {
		r = urs_err_set(err, -errno, "restore: opening pages.img: %m");
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size != CKPT_PAGE_SIZE + img->pages_len) {
		r = urs_err_set(err, -EBADMSG,
				"restore: pages.img is %lld bytes, core.img expects %llu "
				"(truncated, or from another image)",
				(long long) st.st_size,
				(unsigned long long) (CKPT_PAGE_SIZE + img->pages_len));
		goto fail;
	}
	void *m = mmap(NULL, (size_t) st.st_size, PROT_READ,
		       MAP_PRIVATE | (lazy ? 0 : MAP_POPULATE), pfd, 0);
	if (m == MAP_FAILED) {
		r = urs_err_set(err, -errno, "restore: mapping pages.img: %m");
		goto fail;
	}
	img->pages_map = m;
	img->pages_map_len = (size_t) st.st_size;
	struct pages_hdr h;
	memcpy(&h, m, sizeof(h));
	uint32_t hcrc = h.hdr_crc;
	h.hdr_crc = 0;
	if (memcmp(h.magic, PAGES_MAGIC, 8) || ckpt_crc32c(0, &h, sizeof(h)) != hcrc ||
	    h.version != CKPT_VERSION) {
		r = urs_err_set(err, -EBADMSG, "restore: pages.img header is corrupted");
		goto fail;
	}
	if (memcmp(h.id, img->id, 16) || h.pages_len != img->pages_len ||
	    h.pages_crc != img->pages_crc) {
		r = urs_err_set(err, -EBADMSG,
				"restore: pages.img belongs to another image (id mismatch)");
		goto fail;
	}
	if (lazy) /* the pager authenticates each chunk before its first use */
		return 0;
	if (ckpt_crc32c(0, img->pages_map + CKPT_PAGE_SIZE, img->pages_len) != img->pages_crc) {
		r = urs_err_set(err, -EBADMSG,
				"restore: pages.img checksum mismatch (corrupted page data)");
		goto fail;
	}
	r = ckpt_seal_check_pages(seal, img->id, img->pages_map + CKPT_PAGE_SIZE, img->pages_len,
				  (const uint8_t(*)[CKPT_MAC_LEN]) img->page_macs, err);
	if (r)
		goto fail;
	return 0;
fail:
	ckpt_image_free(img);
	return r;
}
