/*
 * ckpt/lazy.c — the lazy restore's pager (ckpt/lazy.h): one thread with
 * its own fd table, serving every userfaultfd of a restored tree. Each
 * address space ("space") keeps the runs of image pages it still lacks,
 * sorted by address. A fault copies a block around it and cuts it from the
 * runs; the background prefetch takes blocks from the front of the runs;
 * munmap, MADV_DONTNEED and mremap cut or move runs; a fork copies them.
 * A space with no runs left is closed: from then on its memory is ordinary
 * memory. The thread ends when no space is left and no more will come.
 */
#include "ckpt/lazy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/common.h"
#include "runtime/io.h"
#include "state/sha256.h"
#include "host/fdpass.h"
#include "ckpt/workingset.h"
#include "store/serve.h"

_Static_assert(CKPT_WS_MAX <= URS_REMOTE_WS_MAX, "a working set fits ursa-store's message");

#define PAGE	       CKPT_PAGE_SIZE
#define FAULT_BLOCK    (16u * PAGE)  /* copied around a fault */
#define PREFETCH_BLOCK (256u * PAGE) /* copied per prefetch step */
#define READ_AHEAD     32u	     /* chunks asked for ahead of the prefetch */
#define PREFETCH_SCAN  READ_AHEAD    /* blocks looked at from the front (READ_AHEAD's) */
_Static_assert(PREFETCH_BLOCK == CKPT_MAC_CHUNK, "a prefetch block is a chunk: PREFETCH_SCAN");

struct space {
	int fd;
	bool counted; /* its runs are in lz->refs (from when the thread has it) */
	pid_t pid;    /* 0: a fork's child (unknown: messages say pid 0) */
	struct ckpt_run *runs;
	uint32_t nruns, cap;
	uint64_t *retry; /* fault addresses to serve again (an event came first) */
	uint32_t nretry, capretry;
};

struct ckpt_lazy {
	struct ckpt_seal seal;
	uint8_t id[16];
	const uint8_t *data; /* page data (after pages.img's header page) */
	uint64_t len;
	void *map;
	size_t maplen;
	uint8_t (*macs)[CKPT_MAC_LEN];
	uint8_t *ok; /* per chunk: authenticated (atomic) */
	uint32_t nmacs;
	/* a remote image: the page data comes into pages.img chunk by chunk
	 * from ursa-store (store/remote.h urs_remote_serve) on src, in both
	 * tables; asked and present per chunk, the socket under mu */
	int src;
	bool src_main_closed;
	pthread_mutex_t mu;
	uint8_t *asked, *present;
	uint32_t wanted; /* chunks ckpt_lazy_want asked for */
	uint32_t hints;	 /* read-ahead chunks asked for, not answered yet */
	int sock[2];	 /* [0]: ours, adds; [1]: the thread's */
	int efd;	 /* eventfd, in both tables: 1 when the thread ends */
	pthread_t th;
	bool th_started;
	ckpt_lazy_fail_fn fail;
	void *fail_ctx;
	/* a remote image's page data is ursa-store's memfd (pages_fd): a chunk
	 * no run of any space needs any more (refs: pages of the runs in it)
	 * is punched out of it once the restorer is done (sealed), and
	 * forgotten (ok and present cleared, ASKED_DROPPED: wanted again,
	 * which would mean a count went wrong, it is asked for alone with
	 * URS_REMOTE_SERVE_AGAIN, never read as zeros); only with no request
	 * for it unanswered (a range's and a fault's may both be: a reply
	 * after the punch would say a hole is in); gone: those whose refs fell
	 * to 0, checked at the end of the thread's turn (an mremap adds back) */
	int pages_fd; /* (in the thread's table only, once it runs) */
	uint32_t *refs, *gone;
	uint8_t *gone_at;   /* per chunk: in gone */
	uint16_t *inflight; /* per chunk: requests not answered yet (under mu) */
	uint32_t ngone;
	bool swept; /* gone_sweep done (once sealed) */
	/* the thread's own */
	struct space **sp;
	uint32_t nsp, spcap, rr;
	struct pollfd *pfd;
	uint32_t pfdcap;
	bool sock_open, sealed;
	bool starved; /* the prefetch waits for ursa-store's next chunk */
	bool hold;    /* faults only, no prefetch, until ckpt_lazy_go */
	bool held;    /* the creator's copy of hold: its end stays open for go */
	double t0;
	/* the working set (ckpt/workingset.h): ws, the recorded one or else
	 * the image's hot set, brought in before the tasks run (NULL: none);
	 * rec, the one being recorded while rec_open, from the restore's end
	 * (rec_t0) for a window */
	uint8_t *ws, *rec;
	char *dir; /* a local image's directory: the record goes there */
	bool rec_open;
	double rec_t0;
	/* shared (atomics; why written once before failed is set) */
	struct ckpt_lazy_stats st;
	bool stop;
	char why[256];
};

/* What goes through the socket: a space with its fd (SCM_RIGHTS), or
 * one of these without */
struct add_msg {
	struct space *s;
};
#define MSG_SEAL ((struct space *) 1)
#define MSG_GO	 ((struct space *) 2)

static void stat_add(const struct ckpt_lazy *lz, const uint64_t *field, uint64_t n)
{
	(void) lz;
	__atomic_add_fetch((uint64_t *) field, n, __ATOMIC_RELAXED);
}

/* ---- a remote image's chunks ---- */

/* asked[c]: not yet, in a range (served in turn), alone (ahead of ranges),
 * alone as a read-ahead's hint (fault_ahead; counted in hints), or in and
 * dropped since (drop_chunk: asked for again alone, with
 * URS_REMOTE_SERVE_AGAIN, only if a run needs it: ensure, need) */
enum { ASKED_NO, ASKED_RANGE, ASKED_ALONE, ASKED_HINT, ASKED_DROPPED };

/* chunks [@c, @c + @n) in one range */
static int ask(struct ckpt_lazy *lz, uint32_t c, uint32_t n, struct urs_err *err)
{
	struct urs_remote_chunk_req q = {.chunk = c, .n = n};
	if (n == 1 && lz->asked[c] == ASKED_DROPPED) /* (ursa-store has served it) */
		q.n |= URS_REMOTE_SERVE_AGAIN;
	ssize_t w;
	do /* (a stream socket: 8 bytes go at once; no SIGPIPE if it is gone) */
		w = send(lz->src, &q, sizeof(q), MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	int e = w == (ssize_t) sizeof(q) ? 0 : w < 0 ? -errno : -EIO;
	if (e < 0)
		return urs_err_set(err, e, "lazy restore: asking ursa-store for chunk %u: %s", c,
				   strerror(-e));
	memset(&lz->asked[c], n == 1 ? ASKED_ALONE : ASKED_RANGE, n);
	for (uint32_t k = 0; k < n; k++)
		lz->inflight[c + k]++;
	return 0;
}

/* one reply of ursa-store's, waited for */
static int answer(struct ckpt_lazy *lz, struct urs_err *err)
{
	struct urs_remote_chunk_reply rp;
	size_t got = 0;
	while (got < sizeof(rp)) {
		ssize_t n = read(lz->src, (char *) &rp + got, sizeof(rp) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return urs_err_set(err, n < 0 ? -errno : -EPIPE,
					   "lazy restore: ursa-store, which fetches the page data "
					   "from object storage, is gone (%s)",
					   n < 0 ? strerror(errno) : "it closed its socket");
		got += (size_t) n;
	}
	rp.msg[sizeof(rp.msg) - 1] = 0;
	if (rp.chunk == URS_REMOTE_SERVE_WS) { /* the working set stored, or not */
		__atomic_store_n(&lz->st.rec, rp.status < 0 ? rp.status : 1, __ATOMIC_RELEASE);
		return 0;
	}
	if (rp.status < 0)
		return urs_err_set(err, rp.status < -4095 ? -EIO : rp.status,
				   "lazy restore: page data from object storage: %s", rp.msg);
	if (rp.chunk >= lz->nmacs || !lz->asked[rp.chunk])
		return urs_err_set(err, -EPROTO,
				   "lazy restore: ursa-store answered chunk %u, never asked for",
				   rp.chunk);
	if (lz->asked[rp.chunk] == ASKED_HINT && lz->hints)
		lz->hints--;
	if (lz->inflight[rp.chunk])
		lz->inflight[rp.chunk]--;
	if (lz->asked[rp.chunk] == ASKED_DROPPED) /* (never: dropped with none unanswered) */
		return 0;
	/* ursa-store opened it (AES-256-GCM under the image's key: bound to
	 * the image, the object and its place) before it wrote it: checked
	 * once is enough, the chunk MAC is not computed again (docs/storage.md
	 * "Lazy restore") */
	__atomic_store_n(&lz->ok[rp.chunk], 1, __ATOMIC_RELEASE);
	__atomic_store_n(&lz->present[rp.chunk], 1, __ATOMIC_RELEASE);
	return 0;
}

int ckpt_lazy_pages_fd(int src, int *fd, struct urs_err *err)
{
	struct urs_remote_chunk_reply rp;
	*fd = -1;
	int got = -1;
	ssize_t n = urs_recv_fd(src, &rp, sizeof(rp), &got);
	_cleanup_close_ int own = got;
	while (n > 0 && (size_t) n < sizeof(rp)) { /* (the fd came with the first part) */
		ssize_t m = recv(src, (char *) &rp + n, sizeof(rp) - (size_t) n, MSG_WAITALL);
		if (m < 0 && errno == EINTR)
			continue;
		n = m < 0 ? -errno : m == 0 ? -EPIPE : n + m;
	}
	if (n < 0 && n != -EPIPE)
		return urs_err_set(err, (int) n, "lazy restore: reading ursa-store's socket: %s",
				   strerror((int) -n));
	if (n != (ssize_t) sizeof(rp))
		return urs_err_set(err, -EPIPE,
				   "lazy restore: ursa-store, which fetches the page data from "
				   "object storage, is gone (it closed its socket)");
	/* shmem (not hugetlbfs: a hole there with its pool empty is SIGBUS),
	 * its size fixed */
	struct statfs fs;
	bool shmem = own >= 0 && fstatfs(own, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
	int seals = shmem ? fcntl(own, F_GET_SEALS) : -1;
	if (rp.chunk != URS_REMOTE_SERVE_PAGES || rp.status || !shmem || seals < 0 ||
	    (seals & URS_REMOTE_PAGES_SEALS) != URS_REMOTE_PAGES_SEALS)
		return urs_err_set(err, -EPROTO,
				   "lazy restore: ursa-store's first message is not pages.img in "
				   "memory, sealed at its size (chunk %u, status %d, %s)",
				   rp.chunk, rp.status,
				   own < 0		 ? "no fd"
				   : !shmem || seals < 0 ? "not a memfd"
							 : "not sealed");
	*fd = own;
	own = -1;
	return 0;
}

/* chunk @c in pages.img: asked for if it was not, and waited for; @urgent
 * (a task waits on it): asked for alone even if a range holds it, so that
 * it does not wait for the range (ursa-store keeps a buffer for those) */
static int ensure(struct ckpt_lazy *lz, uint32_t c, bool urgent, struct urs_err *err)
{
	if (lz->src < 0 || __atomic_load_n(&lz->present[c], __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&lz->mu);
	uint8_t a = lz->asked[c];
	int r = a != ASKED_DROPPED && (a >= ASKED_ALONE || (a && !urgent)) ? 0 : ask(lz, c, 1, err);
	while (!r && !__atomic_load_n(&lz->present[c], __ATOMIC_ACQUIRE))
		r = answer(lz, err);
	pthread_mutex_unlock(&lz->mu);
	return r;
}

/* the replies that have come (not waited for), under mu */
static int replies_locked(struct ckpt_lazy *lz, struct urs_err *err)
{
	struct urs_remote_chunk_reply rp;
	int r = 0;
	for (;;) {
		ssize_t n = recv(lz->src, &rp, sizeof(rp), MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if ((n < 0 && errno == EAGAIN) || (n > 0 && n < (ssize_t) sizeof(rp)))
			break;		   /* (a reply is written whole: the rest is on its way) */
		if ((r = answer(lz, err))) /* whole, or the error of a socket gone */
			break;
	}
	return r;
}

/* the same, for the thread, which polls src */
static int replies(struct ckpt_lazy *lz, struct urs_err *err)
{
	pthread_mutex_lock(&lz->mu);
	int r = replies_locked(lz, err);
	pthread_mutex_unlock(&lz->mu);
	return r;
}

/* are the chunks of [@off, +@n) in pages.img? */
static bool in_file(const struct ckpt_lazy *lz, uint64_t off, uint64_t n)
{
	for (uint64_t c = off / CKPT_MAC_CHUNK; lz->src >= 0 && c <= (off + n - 1) / CKPT_MAC_CHUNK;
	     c++)
		if (!__atomic_load_n(&lz->present[c], __ATOMIC_ACQUIRE))
			return false;
	return true;
}

/* chunk @c is to be asked for ahead: never asked and, where the runs are
 * counted, needed by one (a dropped one is asked for alone: need) */
static bool askable(const struct ckpt_lazy *lz, uint64_t c)
{
	return !lz->asked[c] && (!lz->refs || lz->refs[c]);
}

/* the chunks of [@off, +@n), which a run needs now, asked for alone if
 * nothing will bring them (never asked, or dropped) */
static int need(struct ckpt_lazy *lz, uint64_t off, uint64_t n, struct urs_err *err)
{
	int r = 0;
	if (lz->src < 0 || !n)
		return 0;
	pthread_mutex_lock(&lz->mu);
	for (uint64_t c = off / CKPT_MAC_CHUNK; !r && c <= (off + n - 1) / CKPT_MAC_CHUNK; c++)
		if (!lz->asked[c] || lz->asked[c] == ASKED_DROPPED)
			r = ask(lz, (uint32_t) c, 1, err);
	pthread_mutex_unlock(&lz->mu);
	return r;
}

/* the chunks after @off+@n asked for ahead (not waited for) */
static int ahead(struct ckpt_lazy *lz, uint64_t off, uint64_t n, struct urs_err *err)
{
	if (lz->src < 0)
		return 0;
	uint64_t c0 = off / CKPT_MAC_CHUNK, end = (off + n) / CKPT_MAC_CHUNK + READ_AHEAD;
	int r = 0;
	end = end < lz->nmacs ? end : lz->nmacs;
	pthread_mutex_lock(&lz->mu);
	/* what is not asked for and starts in the window, in ranges that may
	 * reach past it: as the window moves a chunk at a time, a request
	 * still asks for URS_REMOTE_SERVE_MAXN (each costs the store one) */
	for (uint64_t c = c0; !r && c < end;) {
		uint32_t k = 0;
		while (c + k < lz->nmacs && k < URS_REMOTE_SERVE_MAXN && askable(lz, c + k))
			k++;
		r = k ? ask(lz, (uint32_t) c, k, err) : 0;
		c += k ? k : 1;
	}
	pthread_mutex_unlock(&lz->mu);
	return r;
}

static int verify(struct ckpt_lazy *lz, uint64_t off, uint64_t len, bool urgent,
		  struct urs_err *err)
{
	if (!len)
		return 0;
	if (off > lz->len || len > lz->len - off)
		return urs_err_set(err, -EBADMSG,
				   "lazy restore: pages %llu+%llu outside the page data",
				   (unsigned long long) off, (unsigned long long) len);
	for (uint64_t c = off / CKPT_MAC_CHUNK; c <= (off + len - 1) / CKPT_MAC_CHUNK; c++) {
		if (__atomic_load_n(&lz->ok[c], __ATOMIC_ACQUIRE))
			continue;
		int r = ensure(lz, (uint32_t) c, urgent, err);
		if (r)
			return r;
		r = ckpt_seal_check_chunk(&lz->seal, lz->id, lz->data, lz->len, c,
					  (const uint8_t(*)[CKPT_MAC_LEN]) lz->macs, "lazy restore",
					  err);
		if (r)
			return r;
		__atomic_store_n(&lz->ok[c], 1, __ATOMIC_RELEASE);
		stat_add(lz, &lz->st.chunks, 1);
	}
	return 0;
}

int ckpt_lazy_verify(struct ckpt_lazy *lz, uint64_t off, uint64_t len, struct urs_err *err)
{
	return verify(lz, off, len, true, err);
}

/* chunks asked ahead by ckpt_lazy_want, at most (the pager's thread reads
 * the replies meanwhile; this bounds what is fetched before it is needed) */
#define WANT_MAX 256u

int ckpt_lazy_want(struct ckpt_lazy *lz, uint64_t off, uint64_t len, struct urs_err *err)
{
	if (lz->src < 0 || !len || off > lz->len || len > lz->len - off)
		return 0; /* (a range outside the data: ckpt_lazy_verify says so) */
	int r = 0;
	pthread_mutex_lock(&lz->mu);
	for (uint64_t c = off / CKPT_MAC_CHUNK;
	     !r && c <= (off + len - 1) / CKPT_MAC_CHUNK && lz->wanted < WANT_MAX; c++)
		/* (in a working-set range too: the restorer would ask for it
		 * alone anyway, as ensure does, rather than wait for the range) */
		if (lz->asked[c] < ASKED_ALONE && !lz->present[c]) {
			r = ask(lz, (uint32_t) c, 1, err);
			lz->wanted++;
		}
	pthread_mutex_unlock(&lz->mu);
	return r;
}

const uint8_t *ckpt_lazy_data(const struct ckpt_lazy *lz)
{
	return lz->data;
}

int ckpt_lazy_done_fd(const struct ckpt_lazy *lz)
{
	return lz->efd;
}

/* ---- what the runs still need of a remote image's page data ---- */

/* chunk @c into gone, once (room: one entry per chunk) */
static void gone_add(struct ckpt_lazy *lz, uint32_t c)
{
	if (!lz->gone_at[c]) {
		lz->gone_at[c] = 1;
		lz->gone[lz->ngone++] = c;
	}
}

/* @sign (1 or -1) times the pages of [@off, +@len) of page data, chunk by
 * chunk; a chunk whose count falls to 0 goes to gone */
static void refs_add(struct ckpt_lazy *lz, uint64_t off, uint64_t len, int sign)
{
	if (!lz->refs || !len)
		return;
	for (uint64_t c = off / CKPT_MAC_CHUNK;
	     c <= (off + len - 1) / CKPT_MAC_CHUNK && c < lz->nmacs; c++) {
		uint64_t a = c * CKPT_MAC_CHUNK, b = a + CKPT_MAC_CHUNK;
		a = a > off ? a : off;
		b = b < off + len ? b : off + len;
		uint32_t pages = (uint32_t) ((b - a) / PAGE);
		if (sign > 0) {
			lz->refs[c] += pages;
			continue;
		}
		lz->refs[c] -= pages < lz->refs[c] ? pages : lz->refs[c];
		if (!lz->refs[c])
			gone_add(lz, (uint32_t) c);
	}
}

/* every run of @s, counted in (1) or out (-1) */
static void space_count(struct ckpt_lazy *lz, struct space *s, int sign)
{
	s->counted = sign > 0;
	for (uint32_t k = 0; k < s->nruns; k++)
		refs_add(lz, s->runs[k].off, s->runs[k].npages * PAGE, sign);
}

/* chunk @c out of the memfd and forgotten (see struct ckpt_lazy) */
static void drop_chunk(struct ckpt_lazy *lz, uint32_t c)
{
	uint64_t off = (uint64_t) c * CKPT_MAC_CHUNK;
	uint64_t len = lz->len - off < CKPT_MAC_CHUNK ? lz->len - off : CKPT_MAC_CHUNK;
	pthread_mutex_lock(&lz->mu);
	__atomic_store_n(&lz->ok[c], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&lz->present[c], 0, __ATOMIC_RELEASE);
	lz->asked[c] = ASKED_DROPPED;
	pthread_mutex_unlock(&lz->mu);
	if (fallocate(lz->pages_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t) (PAGE + off), (off_t) len) == 0)
		stat_add(lz, &lz->st.dropped, 1);
}

/* the chunks of gone no run needs: dropped once they are in, no request
 * for them is unanswered, and the restorer is done with the page data
 * (sealed); one still awaited stays in gone, one never asked for leaves */
static void drop_gone(struct ckpt_lazy *lz)
{
	if (!lz->sealed || lz->pages_fd < 0)
		return;
	uint32_t keep = 0;
	for (uint32_t i = 0; i < lz->ngone; i++) {
		uint32_t c = lz->gone[i];
		pthread_mutex_lock(&lz->mu);
		bool in = __atomic_load_n(&lz->present[c], __ATOMIC_ACQUIRE);
		bool awaited = lz->inflight[c] > 0;
		pthread_mutex_unlock(&lz->mu);
		if (!lz->refs[c] && awaited) {
			lz->gone[keep++] = c;
			continue;
		}
		lz->gone_at[c] = 0;
		if (!lz->refs[c] && in)
			drop_chunk(lz, c);
	}
	lz->ngone = keep;
}

/* sealed: a chunk in that no run needs (the restorer's own reads, a
 * read-ahead past what the runs hold) is dropped too */
static void gone_sweep(struct ckpt_lazy *lz)
{
	for (uint32_t c = 0; lz->refs && c < lz->nmacs; c++)
		if (!lz->refs[c] && __atomic_load_n(&lz->present[c], __ATOMIC_ACQUIRE))
			gone_add(lz, c);
}

/* ---- a space's runs ---- */

/* the run holding @addr, or -1 */
static int32_t run_at(const struct space *s, uint64_t addr)
{
	uint32_t lo = 0, hi = s->nruns;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct ckpt_run *r = &s->runs[mid];
		if (addr < r->vaddr)
			hi = mid;
		else if (addr >= r->vaddr + r->npages * PAGE)
			lo = mid + 1;
		else
			return (int32_t) mid;
	}
	return -1;
}

static int run_insert(struct space *s, uint32_t at, struct ckpt_run r)
{
	if (urs_grow((void **) &s->runs, &s->cap, s->nruns, sizeof(*s->runs), 16))
		return -ENOMEM;
	memmove(&s->runs[at + 1], &s->runs[at], (s->nruns - at) * sizeof(*s->runs));
	s->runs[at] = r;
	s->nruns++;
	return 0;
}

/* Remove [@a, @b) (page aligned) from the runs; what was there goes to
 * @moved (if not NULL, room for the pieces is the caller's: at most nruns+1). */
static int runs_cut(struct ckpt_lazy *lz, struct space *s, uint64_t a, uint64_t b,
		    struct ckpt_run *moved, uint32_t *nmoved)
{
	for (uint32_t k = 0; k < s->nruns; k++) {
		struct ckpt_run *r = &s->runs[k];
		uint64_t rs = r->vaddr, re = r->vaddr + r->npages * PAGE;
		if (re <= a || rs >= b)
			continue;
		uint64_t cs = rs > a ? rs : a, ce = re < b ? re : b;
		if (s->counted)
			refs_add(lz, r->off + (cs - rs), ce - cs, -1);
		if (moved)
			moved[(*nmoved)++] =
				(struct ckpt_run){cs, (ce - cs) / PAGE, r->off + (cs - rs)};
		struct ckpt_run tail = {ce, (re - ce) / PAGE, r->off + (ce - rs)};
		r->npages = (cs - rs) / PAGE;
		if (tail.npages) {
			if (run_insert(s, k + 1, tail))
				return -ENOMEM;
			r = &s->runs[k];
		}
		if (!r->npages) {
			memmove(r, r + 1, (s->nruns - k - 1) * sizeof(*r));
			s->nruns--;
			k--;
		}
	}
	return 0;
}

/* mremap moved [@from, @from+@len) to @to: so do the pages still to come */
static int runs_move(struct ckpt_lazy *lz, struct space *s, uint64_t from, uint64_t to,
		     uint64_t len)
{
	uint32_t n = 0;
	_cleanup_free_ struct ckpt_run *moved = malloc((s->nruns + 1) * sizeof(*moved));
	if (!moved || runs_cut(lz, s, from, from + len, moved, &n))
		return -ENOMEM;
	for (uint32_t k = 0; k < n; k++) {
		struct ckpt_run r = moved[k];
		r.vaddr = r.vaddr - from + to;
		uint32_t at = 0;
		while (at < s->nruns && s->runs[at].vaddr < r.vaddr)
			at++;
		if (run_insert(s, at, r))
			return -ENOMEM;
		if (s->counted) /* (needed again: still in gone, not dropped) */
			refs_add(lz, r.off, r.npages * PAGE, 1);
	}
	return 0;
}

/* ---- copying ---- */

/* UFFDIO_COPY @n bytes of run @k at its @skip: 0 (all copied, woken),
 * -EAGAIN (an mremap/fork/unmap event comes first), -ESRCH (the space is
 * gone), or another negative errno; *@done: bytes copied or found there */
static int copy_in(struct ckpt_lazy *lz, struct space *s, const struct ckpt_run *r, uint64_t skip,
		   uint64_t n, bool urgent, uint64_t *done, struct urs_err *err)
{
	*done = 0;
	int v = verify(lz, r->off + skip, n, urgent, err);
	if (v)
		return v;
	struct uffdio_copy c = {.dst = r->vaddr + skip,
				.src = (uint64_t) (uintptr_t) (lz->data + r->off + skip),
				.len = n};
	if (ioctl(s->fd, UFFDIO_COPY, &c) == 0) {
		*done = n;
		return 0;
	}
	int e = errno;
	if (c.copy > 0) { /* part of it: the next page is there already, or an event */
		*done = (uint64_t) c.copy;
		return 0;
	}
	if (e == EEXIST) { /* that page is in (a fault's block, a fork's copy) */
		*done = PAGE;
		return 0;
	}
	if (e == ENOENT && n > PAGE) /* crosses mappings (split by mprotect): a page at a time */
		return copy_in(lz, s, r, skip, PAGE, urgent, done, err);
	if (e == ENOENT) { /* that page is mapped no more, or not by us: nothing to bring */
		*done = PAGE;
		return 0;
	}
	if (e == EAGAIN || e == ESRCH)
		return -e;
	return urs_err_set(err, -e, "lazy restore: pid %d: UFFDIO_COPY at %#llx: %s", s->pid,
			   (unsigned long long) c.dst, strerror(e));
}

static int wake_or_zero(struct space *s, uint64_t addr, bool zero, struct urs_err *err)
{
	if (zero) {
		struct uffdio_zeropage z = {.range = {addr, PAGE}};
		if (ioctl(s->fd, UFFDIO_ZEROPAGE, &z) == 0)
			return 0;
		if (errno == EAGAIN || errno == ESRCH)
			return -errno;
		if (errno != EEXIST && errno != ENOENT)
			return urs_err_set(err, -errno,
					   "lazy restore: pid %d: UFFDIO_ZEROPAGE at %#llx: %m",
					   s->pid, (unsigned long long) addr);
	}
	struct uffdio_range w = {addr, PAGE};
	if (ioctl(s->fd, UFFDIO_WAKE, &w) < 0 && errno != ESRCH)
		return urs_err_set(err, -errno, "lazy restore: pid %d: UFFDIO_WAKE at %#llx: %m",
				   s->pid, (unsigned long long) addr);
	return 0;
}

/* ---- the working set ---- */

static bool ws_has(const struct ckpt_lazy *lz, uint64_t off)
{
	uint64_t b = off / CKPT_WS_BLOCK;
	return lz->ws[b / 8] & (1u << (b % 8));
}

/* a fault brought [@off, +@n) of the page data in: recorded in the window */
static void ws_note(struct ckpt_lazy *lz, uint64_t off, uint64_t n)
{
	if (!lz->rec_open || !n ||
	    (!lz->held && lz->rec_t0 > 0 && urs_now_ms() - lz->rec_t0 >= CKPT_WS_WINDOW_MS))
		return;
	for (uint64_t b = off / CKPT_WS_BLOCK; b <= (off + n - 1) / CKPT_WS_BLOCK; b++)
		lz->rec[b / 8] |= (uint8_t) (1u << (b % 8));
}

/* the chunks the recorded working set needs, asked for at once (not waited
 * for), in WS_ASK_MAX requests at most: nothing reads ursa-store's replies
 * yet, and once its queue and both socket buffers were full neither side
 * would move (the rest is asked for when ckpt_lazy_add needs it) */
#define WS_ASK_MAX 256u
static int ws_ask(struct ckpt_lazy *lz, struct urs_err *err)
{
	const uint32_t per = CKPT_MAC_CHUNK / CKPT_WS_BLOCK;
	int r = 0;
	uint32_t asks = 0;
	pthread_mutex_lock(&lz->mu);
	for (uint32_t c = 0; !r && c < lz->nmacs && asks < WS_ASK_MAX;) {
		uint32_t k = 0;
		for (bool need = true; need && c + k < lz->nmacs && k < URS_REMOTE_SERVE_MAXN;) {
			need = false;
			for (uint32_t b = (c + k) * per; b < (c + k + 1) * per && !need; b++)
				need = (uint64_t) b * CKPT_WS_BLOCK < lz->len &&
				       ws_has(lz, (uint64_t) b * CKPT_WS_BLOCK);
			k += need;
		}
		r = k ? ask(lz, c, k, err) : 0;
		asks += k ? 1 : 0;
		c += k ? k : 1;
	}
	pthread_mutex_unlock(&lz->mu);
	return r;
}

/* without a recorded working set: the record to make (@rec, lz's now),
 * starting from a remote image's hot set if it has one, which becomes ws:
 * its pages are brought in first, so they would never fault, and the
 * record keeps them. A local image's hot set is not used: its faults cost
 * no round trip, and bringing scattered blocks in before the tasks run
 * costs a chunk's authentication each (measured: a 1 GiB migration's
 * restore 35 -> 54-62 ms, its downtime no shorter) */
static int ws_record_setup(struct ckpt_lazy *lz, const char *dir, uint8_t *rec, struct urs_err *err)
{
	lz->rec = rec;
	lz->rec_open = true;
	if (lz->src < 0)
		return (lz->dir = strdup(dir))
			       ? 0
			       : urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
	size_t nb = ckpt_ws_nbytes(lz->len);
	uint8_t *hot = calloc(nb + 1, 1);
	if (!hot)
		return urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
	long k = ckpt_ws_load(CKPT_WS_HOT, dir, &lz->seal, lz->id, lz->len, hot, err);
	if (k <= 0) { /* none (-ENOENT), an empty one, or one refused */
		free(hot);
		return k == 0 || k == -ENOENT ? 0 : urs_err_wrap(err, (int) k, "lazy restore");
	}
	memcpy(rec, hot, nb);
	lz->ws = hot;
	lz->st.hot_blocks = (uint64_t) k;
	return ws_ask(lz, err);
}

/* the recorded working set or, without one, the recording to make (and
 * the hot set): read from @dir (NULL: none of them) */
static int ws_setup(struct ckpt_lazy *lz, const char *dir, struct urs_err *err)
{
	uint8_t *bits = dir ? calloc(ckpt_ws_nbytes(lz->len) + 1, 1) : NULL;
	if (!dir)
		return 0;
	if (!bits)
		return urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
	long k = ckpt_ws_load(CKPT_WS_REC, dir, &lz->seal, lz->id, lz->len, bits, err);
	if (k == -ENOENT) { /* none yet (or of another image): record it */
		return ws_record_setup(lz, dir, bits, err);
	}
	if (k < 0) {
		free(bits);
		return urs_err_wrap(err, (int) k, "lazy restore");
	}
	lz->ws = bits;
	lz->st.ws_blocks = (uint64_t) k;
	return lz->src >= 0 ? ws_ask(lz, err) : 0;
}

/* the recorded working set's pages of a task that does not run yet: in
 * before it does, and out of its runs */
static int ws_fill(struct ckpt_lazy *lz, struct space *s, const struct ckpt_run *runs, uint32_t n,
		   struct urs_err *err)
{
	for (uint32_t k = 0; k < n; k++) {
		const struct ckpt_run *r = &runs[k];
		for (uint64_t p = 0, q; p < r->npages; p = q) {
			for (q = p + 1; q < r->npages && ws_has(lz, r->off + p * PAGE) ==
								 ws_has(lz, r->off + q * PAGE);)
				q++;
			if (!ws_has(lz, r->off + p * PAGE))
				continue;
			for (uint64_t at = p * PAGE, done; at < q * PAGE; at += done) {
				int e = copy_in(lz, s, r, at, q * PAGE - at, false, &done, err);
				if (e == -EAGAIN || e == -ESRCH)
					return urs_err_set(err, e,
							   "lazy restore: pid %d moved "
							   "before it ran",
							   s->pid);
				if (e)
					return e;
			}
			stat_add(lz, &lz->st.ws_pages, q - p);
			if (runs_cut(lz, s, r->vaddr + p * PAGE, r->vaddr + q * PAGE, NULL, NULL))
				return urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
		}
	}
	return 0;
}

/* to ursa-store, which stores it beside the remote image; replies are
 * read meanwhile (ursa-store, writing one, would not read: neither side
 * would move once both socket buffers are full) */
static int ws_send(struct ckpt_lazy *lz, const uint8_t *p, size_t n, struct urs_err *err)
{
	struct urs_remote_chunk_req q = {.chunk = URS_REMOTE_SERVE_WS, .n = (uint32_t) n};
	struct iovec iov[2] = {{&q, sizeof(q)}, {(void *) p, n}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	size_t left = sizeof(q) + n;
	int e = 0;
	pthread_mutex_lock(&lz->mu);
	while (!e && left) {
		ssize_t w = sendmsg(lz->src, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = {lz->src, POLLIN | POLLOUT, 0};
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				e = urs_err_set(err, -errno, "lazy restore: poll: %m");
			else if (pf.revents & POLLIN)
				e = replies_locked(lz, err); /* (the store's error: the pager's) */
			continue;
		}
		if (w <= 0) {
			e = urs_err_set(err, w < 0 ? -errno : -EIO,
					"lazy restore: the working set to ursa-store: %s",
					w < 0 ? strerror(errno) : "nothing written");
			break;
		}
		left -= (size_t) w;
		while (w > 0 && mh.msg_iovlen) { /* past what went */
			size_t t =
				(size_t) w < mh.msg_iov->iov_len ? (size_t) w : mh.msg_iov->iov_len;
			mh.msg_iov->iov_base = (char *) mh.msg_iov->iov_base + t;
			mh.msg_iov->iov_len -= t;
			w -= (ssize_t) t;
			if (!mh.msg_iov->iov_len) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
	if (e && left < sizeof(q) + n) /* cut short: ursa-store must not read on */
		shutdown(lz->src, SHUT_WR);
	pthread_mutex_unlock(&lz->mu);
	return e;
}

/* into a local image's directory (opened here: the thread's fd table
 * holds only its own fds) */
static int ws_store_local(const char *dir, const uint8_t *p, size_t n)
{
	_cleanup_close_ int dfd = open(dir, O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return dfd < 0 ? -errno : ckpt_ws_store(CKPT_WS_REC, dfd, p, n);
}

/* the window closed (or paging ended first): the record goes with the
 * image. Its own failure is only counted (st.rec); an error ursa-store
 * answered meanwhile is the pager's. Not after ckpt_lazy_free (a failed
 * restore: what it saw is no working set). */
static int ws_record(struct ckpt_lazy *lz, struct urs_err *err)
{
	lz->rec_open = false;
	if (__atomic_load_n(&lz->stop, __ATOMIC_ACQUIRE))
		return 0;
	size_t n = ckpt_ws_file_len(lz->len);
	_cleanup_free_ uint8_t *buf = malloc(n);
	long k = buf ? ckpt_ws_encode(CKPT_WS_REC, &lz->seal, lz->id, lz->len, lz->rec, buf)
		     : -ENOMEM;
	struct urs_err why = {{0}};
	int e = k < 0	       ? (int) k
		: lz->src >= 0 ? ws_send(lz, buf, (size_t) k, &why)
		: lz->dir      ? ws_store_local(lz->dir, buf, (size_t) k)
			       : 0;
	lz->st.rec_blocks = ckpt_ws_count(lz->rec, lz->len);
	/* through ursa-store: stored once it says so (ws_stored) */
	__atomic_store_n(&lz->st.rec, e < 0 ? e : lz->src >= 0 ? 2 : 1, __ATOMIC_RELEASE);
	if (e < 0 && lz->src >= 0) {
		*err = why;
		return e;
	}
	return 0;
}

/* paging over, the working set handed to ursa-store: its side closed, what
 * ursa-store says about storing it read (chunk replies on the way too) */
static void ws_stored(struct ckpt_lazy *lz)
{
	struct urs_err ignored;
	struct urs_remote_chunk_req go = {.chunk = URS_REMOTE_SERVE_WS, .n = 0};
	if (lz->src < 0 || __atomic_load_n(&lz->st.rec, __ATOMIC_ACQUIRE) != 2 ||
	    __atomic_load_n(&lz->stop, __ATOMIC_ACQUIRE))
		return;
	if (send(lz->src, &go, sizeof(go), MSG_NOSIGNAL) != (ssize_t) sizeof(go)) {
		__atomic_store_n(&lz->st.rec, -EPIPE, __ATOMIC_RELEASE);
		return;
	}
	shutdown(lz->src, SHUT_WR);
	pthread_mutex_lock(&lz->mu);
	while (__atomic_load_n(&lz->st.rec, __ATOMIC_ACQUIRE) == 2)
		if (answer(lz, &ignored) < 0) {
			__atomic_store_n(&lz->st.rec, -EPIPE, __ATOMIC_RELEASE);
			break;
		}
	pthread_mutex_unlock(&lz->mu);
}

/* a fault's run read ahead in address order: the chunks holding the
 * FAULT_AHEAD bytes after the fault's block, each asked for alone (ahead
 * of the prefetch's ranges), not waited for: a task that goes through its
 * memory in order (a scan, a sequential writer) finds them in when it
 * gets there, instead of waiting a round trip per chunk. A hint: at most
 * HINT_MAX unanswered (nothing reads replies while faults are served: an
 * unbounded number would fill both socket buffers), and sent only if the
 * socket takes it at once (a fault's own request is never blocked by it) */
#define FAULT_AHEAD CKPT_MAC_CHUNK
#define HINT_MAX    8u
static void fault_ahead(struct ckpt_lazy *lz, const struct ckpt_run *run, uint64_t b)
{
	uint64_t end = run->vaddr + run->npages * PAGE;
	if (lz->src < 0 || b >= end)
		return;
	uint64_t last = end - b > FAULT_AHEAD ? b + FAULT_AHEAD : end;
	uint64_t c0 = (run->off + (b - run->vaddr)) / CKPT_MAC_CHUNK;
	uint64_t c1 = (run->off + (last - run->vaddr) - 1) / CKPT_MAC_CHUNK;
	pthread_mutex_lock(&lz->mu);
	for (uint64_t c = c0; c <= c1 && c < lz->nmacs && lz->hints < HINT_MAX; c++) {
		struct urs_remote_chunk_req q = {.chunk = (uint32_t) c, .n = 1};
		if (lz->asked[c] || __atomic_load_n(&lz->present[c], __ATOMIC_ACQUIRE))
			continue;
		if (send(lz->src, &q, sizeof(q), MSG_NOSIGNAL | MSG_DONTWAIT) !=
		    (ssize_t) sizeof(q))
			break; /* (full, or gone: the next request or reply says so) */
		lz->asked[c] = ASKED_HINT;
		lz->hints++;
		lz->inflight[c]++;
	}
	pthread_mutex_unlock(&lz->mu);
}

/* a fault at @addr: the block of its run around it, else a zero page */
static int serve_fault(struct ckpt_lazy *lz, struct space *s, uint64_t addr, struct urs_err *err)
{
	addr &= ~(uint64_t) (PAGE - 1);
	int32_t k = run_at(s, addr);
	if (k < 0) {
		int r = wake_or_zero(s, addr, true, err);
		if (!r)
			stat_add(lz, &lz->st.zero_pages, 1);
		return r;
	}
	struct ckpt_run run = s->runs[k];
	uint64_t end = run.vaddr + run.npages * PAGE;
	uint64_t a = addr & ~(uint64_t) (FAULT_BLOCK - 1), b = a + FAULT_BLOCK;
	a = a < run.vaddr ? run.vaddr : a;
	b = b > end ? end : b;
	uint64_t done, one = 0;
	int r = copy_in(lz, s, &run, a - run.vaddr, b - a, true, &done, err);
	/* something in the block is in already (copy_in stopped there) and the
	 * fault's page was not reached: just that page */
	if (!r && a + done <= addr)
		r = copy_in(lz, s, &run, addr - run.vaddr, PAGE, true, &one, err);
	if (r)
		return r;
	stat_add(lz, &lz->st.fault_pages, (done + one) / PAGE);
	ws_note(lz, run.off + (a - run.vaddr), done);
	ws_note(lz, run.off + (addr - run.vaddr), one);
	/* whether copied now or found there, the page is in: wake its waiter;
	 * only what is in leaves the runs (the rest of the block may not be) */
	r = wake_or_zero(s, addr, false, err);
	if (!r)
		fault_ahead(lz, &run, b);
	if (!r)
		r = runs_cut(lz, s, a, a + done, NULL, NULL);
	return r || !one ? r : runs_cut(lz, s, addr, addr + PAGE, NULL, NULL);
}

/* ---- events ---- */

static int space_new(struct ckpt_lazy *lz, int fd, pid_t pid, const struct ckpt_run *runs,
		     uint32_t n, struct space **out)
{
	struct space *s = calloc(1, sizeof(*s));
	if (!s || urs_grow((void **) &lz->sp, &lz->spcap, lz->nsp, sizeof(*lz->sp), 8)) {
		free(s);
		return -ENOMEM;
	}
	s->fd = fd;
	s->pid = pid;
	s->cap = n ? n : 1;
	s->runs = malloc(s->cap * sizeof(*s->runs));
	if (!s->runs) {
		free(s);
		return -ENOMEM;
	}
	if (n)
		memcpy(s->runs, runs, n * sizeof(*runs));
	s->nruns = n;
	space_count(lz, s, 1);
	lz->sp[lz->nsp++] = s;
	stat_add(lz, &lz->st.spaces, 1);
	if (out)
		*out = s;
	return 0;
}

static int on_event(struct ckpt_lazy *lz, struct space *s, const struct uffd_msg *m,
		    struct urs_err *err)
{
	switch (m->event) {
	case UFFD_EVENT_PAGEFAULT: {
		stat_add(lz, &lz->st.faults, 1);
		int r = serve_fault(lz, s, m->arg.pagefault.address, err);
		if (r != -EAGAIN)
			return r;
		if (urs_grow((void **) &s->retry, &s->capretry, s->nretry, sizeof(*s->retry), 16))
			return urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
		s->retry[s->nretry++] = m->arg.pagefault.address;
		return 0;
	}
	case UFFD_EVENT_FORK:
		if (space_new(lz, (int) m->arg.fork.ufd, 0, s->runs, s->nruns, NULL)) {
			close((int) m->arg.fork.ufd);
			return urs_err_set(err, -ENOMEM, "lazy restore: out of memory at a fork");
		}
		return 0;
	case UFFD_EVENT_REMAP:
		if (runs_move(lz, s, m->arg.remap.from, m->arg.remap.to, m->arg.remap.len))
			return urs_err_set(err, -ENOMEM,
					   "lazy restore: out of memory at an mremap");
		return 0;
	case UFFD_EVENT_REMOVE:
	case UFFD_EVENT_UNMAP:
		if (runs_cut(lz, s, m->arg.remove.start, m->arg.remove.end, NULL, NULL))
			return urs_err_set(err, -ENOMEM, "lazy restore: out of memory at an unmap");
		return 0;
	default:
		return urs_err_set(err, -EPROTO, "lazy restore: unexpected userfaultfd event %u",
				   m->event);
	}
}

/* the first error of a batch is kept; -ESRCH (the space is gone) only
 * where nothing worse happened */
static int worst(int have, int r)
{
	return !have || (have == -ESRCH && r && r != -ESRCH) ? r : have;
}

/* One read's messages. The kernel hands out pending faults before events,
 * and counts an event handled once read: the task that caused it goes on
 * (its fork made, its pages zapped or moved). So the events are applied
 * first — a fork's child gets the runs as they were, DONTNEED/munmap/mremap
 * change the runs — and only then the faults read with them. Every message
 * is taken even after an error (a fork's new fd must not be dropped). */
static int batch(struct ckpt_lazy *lz, struct space *s, const struct uffd_msg *m, size_t n,
		 struct urs_err *err)
{
	int have = 0;
	for (int faults = 0; faults < 2; faults++)
		for (size_t k = 0; k < n; k++)
			if ((m[k].event == UFFD_EVENT_PAGEFAULT) == faults)
				have = worst(have, on_event(lz, s, &m[k], have ? NULL : err));
	return have;
}

/* every message @s has queued, then the faults that waited for events */
static int drain(struct ckpt_lazy *lz, struct space *s, struct urs_err *err)
{
	struct uffd_msg m[16];
	int have = 0;
	for (;;) {
		ssize_t n = read(s->fd, m, sizeof(m));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0)
			return urs_err_set(err, -errno, "lazy restore: reading a userfaultfd: %m");
		/* the fork's new spaces may move lz->sp; s itself stays */
		have = worst(have, batch(lz, s, m, (size_t) n / sizeof(m[0]), have ? NULL : err));
	}
	uint32_t n = s->nretry;
	_cleanup_free_ uint64_t *again = n ? malloc(n * sizeof(*again)) : NULL;
	if (n && !again)
		return urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
	if (n)
		memcpy(again, s->retry, n * sizeof(*again));
	s->nretry = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct uffd_msg f = {.event = UFFD_EVENT_PAGEFAULT};
		f.arg.pagefault.address = again[k];
		have = worst(have, on_event(lz, s, &f, have ? NULL : err));
	}
	return have;
}

/* the prefetch's next block not in yet: the first of the PREFETCH_SCAN
 * blocks from the front that is wholly in, as run @*k at @*skip, @*n bytes. ursa-store's
 * ranges come in side by side (and a fault's chunk alone): a block is
 * copied once in, rather than all of them after the first range ends */
static bool later_in(const struct ckpt_lazy *lz, const struct space *s, uint32_t *k, uint64_t *skip,
		     uint64_t *n)
{
	uint32_t left = PREFETCH_SCAN;
	for (uint32_t i = 0; i < s->nruns && left; i++) {
		const struct ckpt_run *r = &s->runs[i];
		for (uint64_t at = 0; at < r->npages * PAGE && left; at += PREFETCH_BLOCK, left--) {
			uint64_t m = r->npages * PAGE - at < PREFETCH_BLOCK ? r->npages * PAGE - at
									    : PREFETCH_BLOCK;
			if (in_file(lz, r->off + at, m)) {
				*k = i, *skip = at, *n = m;
				return true;
			}
		}
	}
	return false;
}

/* one block from the front of @s's runs, or the first later one in
 * (later_in); -EAGAIN: read its events first; -EINPROGRESS: no block is
 * wholly in yet (the thread does not wait for them here: faults would
 * wait behind it) */
static int prefetch(struct ckpt_lazy *lz, struct space *s, struct urs_err *err)
{
	struct ckpt_run *r = &s->runs[0];
	uint64_t n = r->npages * PAGE < PREFETCH_BLOCK ? r->npages * PAGE : PREFETCH_BLOCK;
	uint64_t done, skip = 0;
	uint32_t k = 0;
	int e = ahead(lz, r->off, n, err);
	if (!e && !in_file(lz, r->off, n)) /* (what ahead leaves: a dropped chunk) */
		e = need(lz, r->off, n, err);
	if (!e && !in_file(lz, r->off, n) && !later_in(lz, s, &k, &skip, &n))
		return -EINPROGRESS;
	r = &s->runs[k];
	if (!e)
		e = copy_in(lz, s, r, skip, n, false, &done, err);
	if (e)
		return e;
	if (done != n) /* stopped at a page that is in: the next step skips it */
		stat_add(lz, &lz->st.prefetch_pages, done / PAGE);
	else
		stat_add(lz, &lz->st.prefetch_pages, n / PAGE);
	uint64_t a = r->vaddr + skip;
	return runs_cut(lz, s, a, a + (done ? done : PAGE), NULL, NULL);
}

/* ---- the thread ---- */

static void space_close(struct ckpt_lazy *lz, uint32_t k)
{
	struct space *s = lz->sp[k];
	if (s->counted) /* (what it still lacked is needed by no one now) */
		space_count(lz, s, -1);
	close(s->fd);
	free(s->runs);
	free(s->retry);
	free(s);
	lz->sp[k] = lz->sp[--lz->nsp];
}

static int take_add(struct ckpt_lazy *lz, struct urs_err *err)
{
	struct add_msg a;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = {&a, sizeof(a)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.b,
			    .msg_controllen = sizeof(u.b)};
	ssize_t n = recvmsg(lz->sock[1], &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) { /* the other end closed: sealed, and no go will come */
		close(lz->sock[1]);
		lz->sock[1] = -1;
		lz->sock_open = false;
		lz->sealed = true;
		lz->hold = false;
		lz->rec_t0 = lz->rec_t0 > 0 ? lz->rec_t0 : urs_now_ms();
		if (lz->rec_open && lz->held) /* the hold was the window */
			return ws_record(lz, err);
		return 0;
	}
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (n == sizeof(a) && !c && (a.s == MSG_SEAL || a.s == MSG_GO)) {
		lz->sealed |= a.s == MSG_SEAL;
		lz->hold &= a.s != MSG_GO;
		if (lz->sealed && !(lz->rec_t0 > 0))
			lz->rec_t0 = urs_now_ms(); /* the tasks run: the window opens */
		if (a.s == MSG_GO && lz->rec_open) /* the hold was the window */
			return ws_record(lz, err);
		return 0;
	}
	if (n != sizeof(a) || !c || c->cmsg_type != SCM_RIGHTS)
		return urs_err_set(err, -EPROTO, "lazy restore: a malformed add");
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	a.s->fd = fd;
	if (urs_grow((void **) &lz->sp, &lz->spcap, lz->nsp, sizeof(*lz->sp), 8)) {
		close(fd);
		free(a.s->runs);
		free(a.s);
		return urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
	}
	space_count(lz, a.s, 1);
	lz->sp[lz->nsp++] = a.s;
	stat_add(lz, &lz->st.spaces, 1);
	return 0;
}

/* one turn: wait (not while there is prefetching to do), events, one block */
static int turn(struct ckpt_lazy *lz, struct urs_err *err)
{
	uint32_t n = 0;
	if (urs_grow((void **) &lz->pfd, &lz->pfdcap, lz->nsp + 2, sizeof(*lz->pfd), 16))
		return urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
	if (lz->src >= 0) /* (first: its replies are read before the faults) */
		lz->pfd[n++] = (struct pollfd){lz->src, POLLIN, 0};
	if (lz->sock_open)
		lz->pfd[n++] = (struct pollfd){lz->sock[1], POLLIN, 0};
	uint32_t sp0 = n;
	for (uint32_t k = 0; k < lz->nsp; k++)
		lz->pfd[n++] = (struct pollfd){lz->sp[k]->fd, POLLIN, 0};
	/* no wait while there is prefetching to do; a starved one waits for a
	 * reply (or 5 ms: the restorer's thread may have read it) */
	int timeout = !lz->nsp || lz->hold ? -1 : lz->starved ? 5 : 0;
	if (lz->rec_open && !lz->held && lz->rec_t0 > 0) { /* woken when the window closes */
		double left = lz->rec_t0 + CKPT_WS_WINDOW_MS - urs_now_ms();
		int ms = left > 0 ? (int) left + 1 : 0;
		timeout = timeout < 0 || ms < timeout ? ms : timeout;
	}
	if (poll(lz->pfd, n, timeout) < 0 && errno != EINTR)
		return urs_err_set(err, -errno, "lazy restore: poll: %m");
	int r = lz->src >= 0 && lz->pfd[0].revents ? replies(lz, err) : 0;
	lz->starved &= !(lz->src >= 0 && lz->pfd[0].revents);
	if (!r && lz->rec_open && !lz->held && lz->rec_t0 > 0 &&
	    urs_now_ms() - lz->rec_t0 >= CKPT_WS_WINDOW_MS)
		r = ws_record(lz, err);
	if (!r && lz->sock_open && lz->pfd[sp0 - 1].revents)
		r = take_add(lz, err);
	for (uint32_t k = 0; !r && k < lz->nsp; k++) {
		r = drain(lz, lz->sp[k], err);
		if (r == -ESRCH) { /* exited or exec'd: nothing more to bring */
			space_close(lz, k--);
			r = 0;
		}
	}
	if (r || !lz->nsp || lz->hold)
		return r;
	uint32_t k = lz->rr++ % lz->nsp;
	struct space *s = lz->sp[k];
	if (s->nruns)
		r = prefetch(lz, s, err);
	if (r == -EAGAIN)
		r = 0; /* its events first, next turn */
	/* starved until a step finds its chunks in: the reply it waited for
	 * may have been read by a fault's wait (ensure), never seen by poll */
	lz->starved = r == -EINPROGRESS;
	if (r == -EINPROGRESS)
		return 0;
	if (r == -ESRCH || (!r && !s->nruns && !s->nretry)) {
		space_close(lz, k); /* complete: its memory is ordinary memory now */
		r = 0;
	}
	return r;
}

/* a turn, then what no run needs any more out of the page data */
static int turn_drop(struct ckpt_lazy *lz, struct urs_err *err)
{
	int r = turn(lz, err);
	if (lz->sealed && !lz->swept) {
		gone_sweep(lz);
		lz->swept = true;
	}
	drop_gone(lz);
	return r;
}

static void fail_all(struct ckpt_lazy *lz, const char *why)
{
	snprintf(lz->why, sizeof(lz->why), "%s", why);
	for (uint32_t k = 0; k < lz->nsp; k++)
		if (lz->sp[k]->pid > 0)
			kill(lz->sp[k]->pid, SIGKILL);
	__atomic_store_n(&lz->st.failed, true, __ATOMIC_RELEASE);
	if (lz->fail)
		lz->fail(lz->fail_ctx, why);
}

/* does @pid run (not gone, not a zombie)? */
static bool pid_alive(pid_t pid)
{
	char path[32], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* close every fd but the @n of @k (-1: none; sorted here) */
static void keep_only(int *k, int n)
{
	for (int i = 0; i < n; i++) /* sorted */
		for (int j = i + 1; j < n; j++)
			if (k[j] < k[i]) {
				int t = k[i];
				k[i] = k[j];
				k[j] = t;
			}
	unsigned from = 0;
	for (int i = 0; i < n; i++) {
		if (k[i] < 0)
			continue;
		if ((unsigned) k[i] > from)
			syscall(SYS_close_range, from, (unsigned) k[i] - 1, 0u);
		from = (unsigned) k[i] + 1;
	}
	syscall(SYS_close_range, from, ~0u, 0u);
}

static void *pager_main(void *arg)
{
	struct ckpt_lazy *lz = arg;
	struct urs_err err = {{0}};
	/* a table of its own, holding only its end of the socket: the
	 * creator closes that end in its table once told (ckpt_lazy_new) */
	int r = unshare(CLONE_FILES) < 0 ? -errno : 0;
	int me = lz->sock[1];
	int keep[] = {me, lz->efd, lz->src, lz->pages_fd};
	if (!r)
		keep_only(keep, (int) URS_ARRAY_SIZE(keep));
	if (send(me, &r, sizeof(r), MSG_NOSIGNAL) != sizeof(r) || r)
		return NULL; /* ckpt_lazy_new fails (shared table: it keeps the fds) */
	while (!r && (lz->nsp || !lz->sealed) && !__atomic_load_n(&lz->stop, __ATOMIC_ACQUIRE))
		r = turn_drop(lz, &err);
	/* stopped: address spaces of a tree that is gone (the sandbox ended)
	 * are no failure; one still there would read zeros for its pages to
	 * come. A fork's child has no pid here: it goes with its tree */
	bool alive = false;
	for (uint32_t k = 0; k < lz->nsp; k++)
		alive |= lz->sp[k]->pid > 0 && pid_alive(lz->sp[k]->pid);
	if (!r && !alive)
		while (lz->nsp)
			space_close(lz, 0);
	if (r)
		fail_all(lz, err.msg);
	else if (lz->nsp)
		fail_all(lz, "lazy restore: stopped before every page was in");
	else if (lz->rec_open && lz->sealed) /* all in before the window closed */
		ws_record(lz, &err);	     /* (a store's error now: paging is over) */
	if (!r && !lz->nsp) /* complete: before it says so, whether the record was stored */
		ws_stored(lz);
	while (lz->nsp)
		space_close(lz, 0);
	if (lz->sock[1] >= 0)
		close(lz->sock[1]);
	lz->st.ms = urs_now_ms() - lz->t0;
	__atomic_store_n(&lz->st.done, !r && !__atomic_load_n(&lz->st.failed, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	if (lz->map && lz->sealed) { /* all in, the restorer done with it: the image goes */
		munmap(lz->map, lz->maplen);
		lz->map = NULL;
	}
	uint64_t one = 1;
	if (write(lz->efd, &one, sizeof(one)) < 0) { /* cannot fail: a fresh counter */
	}
	close(lz->efd); /* (its copies in this thread's table) */
	if (lz->src >= 0)
		close(lz->src); /* ursa-store ends with it */
	return NULL;
}

/* what ckpt_lazy_new made before its thread runs (img keeps its pages) */
/* what ckpt_lazy_new allocated for the chunks and the working set, and
 * the key */
static void tables_free(struct ckpt_lazy *lz)
{
	free(lz->ok);
	free(lz->asked);
	free(lz->present);
	free(lz->refs);
	free(lz->gone);
	free(lz->gone_at);
	free(lz->inflight);
	free(lz->ws);
	free(lz->rec);
	free(lz->dir);
	explicit_bzero(&lz->seal, sizeof(lz->seal));
}

static void lazy_undo(struct ckpt_lazy *lz)
{
	int fds[] = {lz->sock[0], lz->sock[1], lz->efd, lz->src, lz->pages_fd};
	for (size_t k = 0; k < URS_ARRAY_SIZE(fds); k++)
		if (fds[k] >= 0)
			close(fds[k]);
	tables_free(lz);
	free(lz);
}

static int lazy_fds(struct ckpt_lazy *lz, int src, int pages_fd, struct urs_err *err)
{
	lz->sock[0] = lz->sock[1] = lz->efd = lz->src = lz->pages_fd = -1;
	if (src >= 0 && (lz->src = fcntl(src, F_DUPFD_CLOEXEC, 3)) < 0)
		return urs_err_set(err, -errno, "lazy restore: the page server's socket: %m");
	if (src >= 0 && pages_fd >= 0 && (lz->pages_fd = fcntl(pages_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		return urs_err_set(err, -errno, "lazy restore: the page data's memfd: %m");
	if ((lz->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, lz->sock) < 0) {
		lz->sock[0] = lz->sock[1] = -1;
		return urs_err_set(err, -errno, "lazy restore: the pager's sockets: %m");
	}
	return 0;
}

int ckpt_lazy_new(struct ckpt_lazy **out, struct ckpt_image *img, const char *dir,
		  const struct ckpt_seal *seal, bool hold, int src, int pages_fd,
		  ckpt_lazy_fail_fn fail, void *ctx, struct urs_err *err)
{
	struct ckpt_lazy *lz = calloc(1, sizeof(*lz));
	uint32_t nmacs = (uint32_t) ckpt_seal_nchunks(img->pages_len), n = nmacs ? nmacs : 1;
	if (!lz)
		return urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
	int r = lazy_fds(lz, src, pages_fd, err);
	if (!r &&
	    (!(lz->ok = calloc(n, 1)) || !(lz->asked = calloc(n, 1)) ||
	     !(lz->present = calloc(n, 1)) || !(lz->inflight = calloc(n, sizeof(*lz->inflight))) ||
	     (lz->pages_fd >= 0 &&
	      (!(lz->refs = calloc(n, sizeof(*lz->refs))) ||
	       !(lz->gone = calloc(n, sizeof(*lz->gone))) || !(lz->gone_at = calloc(n, 1))))))
		r = urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
	if (r) {
		lazy_undo(lz);
		return r;
	}
	pthread_mutex_init(&lz->mu, NULL);
	lz->seal = *seal;
	memcpy(lz->id, img->id, 16);
	lz->data = img->pages_map + CKPT_PAGE_SIZE;
	lz->len = img->pages_len;
	lz->nmacs = nmacs;
	if ((r = ws_setup(lz, dir, err))) {
		pthread_mutex_destroy(&lz->mu);
		lazy_undo(lz);
		return r;
	}
	lz->macs = img->page_macs;
	lz->fail = fail;
	lz->fail_ctx = ctx;
	lz->sock_open = true;
	lz->hold = lz->held = hold;
	lz->t0 = urs_now_ms();
	lz->map = (void *) img->pages_map; /* (the thread's to unmap once it is done) */
	lz->maplen = img->pages_map_len;
	int e = pthread_create(&lz->th, NULL, pager_main, lz);
	int ready = -EIO;
	ssize_t got = -1;
	while (!e && (got = recv(lz->sock[0], &ready, sizeof(ready), 0)) < 0 && errno == EINTR)
		;
	if (!e && (got != sizeof(ready) || ready))
		pthread_join(lz->th, NULL);
	if (e || ready) {
		lazy_undo(lz);
		return urs_err_set(err, e ? -e : ready, "lazy restore: starting the pager: %s",
				   strerror(e ? e : -ready));
	}
	lz->th_started = true;
	close(lz->sock[1]);    /* the thread's copy is the only one now */
	if (lz->pages_fd >= 0) /* (the same: its number stays, the thread's) */
		close(lz->pages_fd);
	img->pages_map = NULL;
	img->pages_map_len = 0;
	img->page_macs = NULL;
	*out = lz;
	return 0;
}

int ckpt_lazy_add(struct ckpt_lazy *lz, int uffd, pid_t pid, const struct ckpt_run *runs,
		  uint32_t nruns, struct urs_err *err)
{
	struct space *s = calloc(1, sizeof(*s));
	if (s && nruns && !(s->runs = malloc(nruns * sizeof(*runs)))) {
		free(s);
		s = NULL;
	}
	if (!s) {
		close(uffd);
		return urs_err_set(err, -ENOMEM, "lazy restore: out of memory");
	}
	if (nruns)
		memcpy(s->runs, runs, nruns * sizeof(*runs));
	s->nruns = s->cap = nruns;
	s->pid = pid;
	s->fd = uffd;
	int e = lz->ws ? ws_fill(lz, s, runs, nruns, err) : 0;
	s->fd = -1;
	if (e) {
		close(uffd);
		free(s->runs);
		free(s);
		return e;
	}
	struct add_msg a = {s};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u = {0};
	struct iovec iov = {&a, sizeof(a)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.b,
			    .msg_controllen = sizeof(u.b)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &uffd, sizeof(int));
	ssize_t n;
	do
		n = sendmsg(lz->sock[0], &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	e = errno;
	close(uffd);
	if (n != sizeof(a)) {
		free(s->runs);
		free(s);
		return urs_err_set(err, n < 0 ? -e : -EIO,
				   "lazy restore: handing pid %d to the pager: %s", pid,
				   n < 0 ? strerror(e) : "short write");
	}
	return 0;
}

static void say(struct ckpt_lazy *lz, struct space *what)
{
	struct add_msg a = {what};
	if (lz->sock[0] >= 0)
		send(lz->sock[0], &a, sizeof(a), MSG_NOSIGNAL);
}

void ckpt_lazy_seal(struct ckpt_lazy *lz)
{
	/* the restore is over: only the thread asks ursa-store any more, on
	 * its copy (same number, its own table) */
	lz->src_main_closed = lz->src >= 0 && close(lz->src) == 0;
	if (lz->held) {
		say(lz, MSG_SEAL);
	} else if (lz->sock[0] >= 0) { /* nothing more to say: its end goes */
		close(lz->sock[0]);
		lz->sock[0] = -1;
	}
}

void ckpt_lazy_go(struct ckpt_lazy *lz)
{
	say(lz, MSG_GO);
}

void ckpt_lazy_stats(const struct ckpt_lazy *lz, struct ckpt_lazy_stats *st)
{
	const struct ckpt_lazy_stats *s = &lz->st;
	st->faults = __atomic_load_n(&s->faults, __ATOMIC_RELAXED);
	st->fault_pages = __atomic_load_n(&s->fault_pages, __ATOMIC_RELAXED);
	st->zero_pages = __atomic_load_n(&s->zero_pages, __ATOMIC_RELAXED);
	st->prefetch_pages = __atomic_load_n(&s->prefetch_pages, __ATOMIC_RELAXED);
	st->spaces = __atomic_load_n(&s->spaces, __ATOMIC_RELAXED);
	st->chunks = __atomic_load_n(&s->chunks, __ATOMIC_RELAXED);
	st->dropped = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
	st->ws_blocks = s->ws_blocks;
	st->hot_blocks = s->hot_blocks;
	st->ws_pages = __atomic_load_n(&s->ws_pages, __ATOMIC_RELAXED);
	st->rec = __atomic_load_n(&s->rec, __ATOMIC_ACQUIRE);
	st->rec_blocks = st->rec ? s->rec_blocks : 0;
	st->done = __atomic_load_n(&s->done, __ATOMIC_ACQUIRE);
	st->failed = __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE);
	st->ms = st->done || st->failed ? s->ms : 0;
}

const char *ckpt_lazy_why(const struct ckpt_lazy *lz)
{
	return __atomic_load_n(&lz->st.failed, __ATOMIC_ACQUIRE) ? lz->why : "";
}

int ckpt_lazy_wait(struct ckpt_lazy *lz)
{
	if (lz->sock[0] >= 0) { /* sealed, and released if held */
		close(lz->sock[0]);
		lz->sock[0] = -1;
	}
	if (lz->th_started) {
		pthread_join(lz->th, NULL);
		lz->th_started = false;
	}
	return __atomic_load_n(&lz->st.failed, __ATOMIC_ACQUIRE) ? -EIO : 0;
}

void ckpt_lazy_free(struct ckpt_lazy *lz)
{
	if (!lz)
		return;
	__atomic_store_n(&lz->stop, true, __ATOMIC_RELEASE);
	ckpt_lazy_wait(lz);
	close(lz->efd);
	if (lz->src >= 0 && !lz->src_main_closed)
		close(lz->src);
	pthread_mutex_destroy(&lz->mu);
	free(lz->sp);
	free(lz->pfd);
	free(lz->macs);
	if (lz->map)
		munmap(lz->map, lz->maplen);
	tables_free(lz);
	free(lz);
}
