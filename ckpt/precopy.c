/*
 * ckpt/precopy.c — a running tree's memory into the page data before the
 * freeze (ckpt/precopy.h): the processes found through /proc/PID/task/
 * TID/children, each write-tracked, then its tracked memory read through
 * /proc/PID/mem in chunks and recorded page by page.
 */
#include "ckpt/precopy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/framemap.h"
#include "ckpt/ptrace.h"
#include "host/pagemap.h"
#include "runtime/common.h"
#include "runtime/io.h"

/* the tree's processes, root first (at most CKPT_MAX_TASKS) */
static uint32_t list_tree(pid_t root, pid_t *pids)
{
	uint32_t n = 1;
	pids[0] = root;
	for (uint32_t i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task", pids[i]);
		DIR *d = opendir(path);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char cp[128], buf[4096];
			snprintf(cp, sizeof(cp), "/proc/%d/task/%s/children", pids[i], de->d_name);
			int fd = open(cp, O_RDONLY | O_CLOEXEC);
			ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
			if (fd >= 0)
				close(fd);
			buf[len > 0 ? len : 0] = 0;
			for (char *s = buf, *end; *s && n < CKPT_MAX_TASKS; s = end) {
				long c = strtol(s, &end, 10);
				if (end == s)
					break;
				pids[n++] = (pid_t) c;
			}
		}
		if (d)
			closedir(d);
	}
	return n;
}

static int record(struct ckpt_precopy_proc *p, uint64_t vaddr, uint64_t off, uint64_t pfn)
{
	if (urs_grow((void **) &p->pages, &p->cap, p->n, sizeof(*p->pages), 1024))
		return -ENOMEM;
	p->pages[p->n++] = (struct ckpt_precopy_page){vaddr, off, pfn};
	return 0;
}

struct copy {
	bool again;	/* a later round: update the records of pages written since */
	uint64_t taken; /* pages this round found written */
	struct ckpt_precopy *pc;
	struct ckpt_precopy_proc *p;
	struct ckpt_pages_writer *pw;
	int memfd, pm;
	uint8_t *chunk;
	uint32_t chunk_pages;
	uint64_t pfn[512];
	struct urs_err *err;
};

/* A run of populated pages; pages the process unmapped meanwhile are
 * skipped (the freeze finds them gone, or copies what is there now). */
static int copy_run(void *arg, const struct urs_pm_run *run)
{
	struct copy *c = arg;
	uint32_t max = c->chunk_pages < 512 ? c->chunk_pages : 512;
	for (uint64_t a = run->start; a < run->end;) {
		uint64_t k = (run->end - a) / CKPT_PAGE_SIZE;
		k = k > max ? max : k;
		if (ckpt_mem_read(c->memfd, a, c->chunk, k * CKPT_PAGE_SIZE) ||
		    urs_pagemap_frames(c->pm, a, k, c->pfn)) {
			a += k * CKPT_PAGE_SIZE;
			continue;
		}
		for (uint64_t i = 0; i < k; i++) {
			const uint8_t *pg = c->chunk + i * CKPT_PAGE_SIZE;
			uint64_t off = CKPT_PRECOPY_ZERO;
			int r = 0;
			uint64_t va = a + i * CKPT_PAGE_SIZE;
			struct ckpt_precopy_page *rec = NULL;
			if (!c->pfn[i])
				continue; /* swapped out meanwhile: copied frozen */
			if (c->again) {
				c->taken++;
				rec = (struct ckpt_precopy_page *) ckpt_precopy_page(c->p, va);
				if (!rec)
					continue; /* not copied before: copied frozen */
			}
			bool stored = false;
			uint64_t pfn = c->pfn[i] & ~URS_PFN_SHARED;
			if (ckpt_page_is_zero(pg))
				c->pc->zero_pages++;
			else if ((r = ckpt_pages_append_frame(c->pw, pg, c->pfn[i], &off, &stored,
							      c->err)) == 0)
				stored ? c->pc->shared_pages++ : c->pc->pages++;
			if (r == 0 && rec)
				*rec = (struct ckpt_precopy_page){va, off, pfn};
			else if (r == 0)
				r = record(c->p, va, off, pfn);
			if (r)
				return r;
		}
		a += k * CKPT_PAGE_SIZE;
	}
	return 0;
}

static int copy_proc(struct copy *c)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/pagemap", c->p->pid);
	c->pm = open(path, O_RDONLY | O_CLOEXEC);
	c->memfd = ckpt_open_mem(c->p->pid);
	int r = 0;
	for (uint32_t i = 0; c->pm >= 0 && c->memfd >= 0 && r == 0 && i < c->p->wp.nranges; i++) {
		const struct ckpt_wp_range *g = &c->p->wp.ranges[i];
		r = c->again ? urs_pagemap_take_written(c->pm, g->start, g->end, copy_run, c)
			     : urs_pagemap_walk(c->pm, g->start, g->end, copy_run, c);
		if (r > 0 || (r < 0 && r != -ENOMEM && !c->err->msg[0]))
			r = 0; /* the mapping changed under the walk: copied frozen */
	}
	if (c->pm >= 0)
		close(c->pm);
	if (c->memfd >= 0)
		close(c->memfd);
	return r;
}

/* Again what was written during the last round, until what is left is
 * small (what the freeze then copies fits the page data's pipe without
 * waiting for the upload) or stops shrinking (a workload that writes
 * faster than the copy goes: the freeze copies the rest). */
static int later_rounds(struct ckpt_precopy *pc, struct ckpt_pages_writer *pw, uint8_t *chunk,
			uint32_t chunk_pages, uint32_t max, struct urs_err *err)
{
	uint64_t last = UINT64_MAX;
	while (pc->rounds < max) {
		uint64_t taken = 0;
		for (uint32_t i = 0; i < pc->n; i++) {
			struct copy c = {.again = true,
					 .pc = pc,
					 .p = &pc->procs[i],
					 .pw = pw,
					 .chunk = chunk,
					 .chunk_pages = chunk_pages,
					 .err = err};
			int r = copy_proc(&c);
			if (r)
				return r;
			taken += c.taken;
		}
		pc->rounds++;
		if (taken <= CKPT_PRECOPY_SMALL || taken * 2 > last)
			break;
		last = taken;
	}
	return 0;
}

int ckpt_precopy_run(struct ckpt_precopy *pc, pid_t root, struct ckpt_pages_writer *pw,
		     uint8_t *chunk, uint32_t chunk_pages, struct urs_err *err)
{
	memset(pc, 0, sizeof(*pc));
	if (!ckpt_wptrack_supported())
		return 0;
	double t0 = urs_now_ms();
	pid_t pids[CKPT_MAX_TASKS];
	uint32_t n = list_tree(root, pids);
	pc->procs = calloc(n, sizeof(*pc->procs));
	if (!pc->procs)
		return urs_err_set(err, -ENOMEM, "checkpoint: out of memory");
	int r = 0;
	for (uint32_t i = 0; i < n && r == 0; i++) {
		struct ckpt_precopy_proc *p = &pc->procs[pc->n];
		struct urs_err e2 = {{0}};
		p->pid = pids[i];
		if (ckpt_wptrack_arm(&p->wp, pids[i], &e2) < 0)
			continue; /* copied whole, frozen */
		pc->n++;
		struct copy c = {.pc = pc,
				 .p = p,
				 .pw = pw,
				 .chunk = chunk,
				 .chunk_pages = chunk_pages,
				 .err = err};
		r = copy_proc(&c);
	}
	pc->rounds = 1;
	if (r == 0)
		r = later_rounds(pc, pw, chunk, chunk_pages, CKPT_PRECOPY_ROUNDS, err);
	pc->ms = urs_now_ms() - t0;
	return r;
}

int ckpt_precopy_more(struct ckpt_precopy *pc, struct ckpt_pages_writer *pw, uint8_t *chunk,
		      uint32_t chunk_pages, struct urs_err *err)
{
	if (!pc->n)
		return 0;
	double t0 = urs_now_ms();
	int r = later_rounds(pc, pw, chunk, chunk_pages, pc->rounds + CKPT_PRECOPY_ROUNDS, err);
	pc->ms += urs_now_ms() - t0;
	return r;
}

const struct ckpt_precopy_proc *ckpt_precopy_proc(const struct ckpt_precopy *pc, pid_t pid)
{
	for (uint32_t i = 0; pc && i < pc->n; i++)
		if (pc->procs[i].pid == pid)
			return &pc->procs[i];
	return NULL;
}

/* the first record at or above @vaddr, searched in [lo, p->n) */
static uint32_t lower_bound(const struct ckpt_precopy_proc *p, uint32_t lo, uint64_t vaddr)
{
	uint32_t hi = p->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (p->pages[mid].vaddr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct ckpt_precopy_page *ckpt_precopy_page(const struct ckpt_precopy_proc *p, uint64_t vaddr)
{
	uint32_t i = lower_bound(p, 0, vaddr);
	return i < p->n && p->pages[i].vaddr == vaddr ? &p->pages[i] : NULL;
}

const struct ckpt_precopy_page *ckpt_precopy_page_from(const struct ckpt_precopy_proc *p,
						       uint64_t vaddr, uint32_t *cursor)
{
	uint32_t i = *cursor;
	if (i < p->n && p->pages[i].vaddr < vaddr) /* the next one, or a jump: search */
		i = p->pages[i + 1 < p->n ? i + 1 : i].vaddr >= vaddr ? i + 1
								      : lower_bound(p, i, vaddr);
	*cursor = i;
	return i < p->n && p->pages[i].vaddr == vaddr ? &p->pages[i] : NULL;
}

void ckpt_precopy_free(struct ckpt_precopy *pc)
{
	for (uint32_t i = 0; pc->procs && i < pc->n; i++) {
		ckpt_wptrack_disarm(&pc->procs[i].wp);
		free(pc->procs[i].pages);
	}
	free(pc->procs);
	memset(pc, 0, sizeof(*pc));
}
