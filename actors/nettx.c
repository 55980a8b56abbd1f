/*
 * actors/nettx.c — batched tap writes from a lazily grown slot pool (see
 * nettx.h). Writes to a tap complete inline when the ring submits them (the
 * tap takes IOCB_NOWAIT writes), so frames leave in the order they were
 * queued; the slot is free again when its completion is reaped.
 */
#include "actors/nettx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/common.h"

struct urs_nettx_slot {
	struct urs_op op;
	struct urs_nettx *t;
};

void urs_nettx_init(struct urs_nettx *t, struct urs_loop *loop, int fd, uint32_t slot_bytes,
		    uint32_t max, void (*ready)(void *ctx), void *ctx)
{
	memset(t, 0, sizeof(*t));
	t->loop = loop;
	t->fd = fd;
	t->slot_bytes = slot_bytes;
	t->max = max < 1 ? 1 : max > URS_NETTX_MAX ? URS_NETTX_MAX : max;
	t->active = 1;
	t->ready = ready;
	t->ctx = ctx;
}

static int map(struct urs_nettx *t)
{
	t->slots = calloc(t->max, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	void *m = mmap(NULL, (size_t) t->max * t->slot_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		free(t->slots);
		t->slots = NULL;
		return -ENOMEM;
	}
	t->mem = m;
	for (uint32_t i = 0; i < t->max; i++)
		t->slots[i].t = t;
	return 0;
}

static void write_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct urs_nettx_slot *s = container_of(op, struct urs_nettx_slot, op);
	struct urs_nettx *t = s->t;
	t->busy &= ~(1u << (uint32_t) (s - t->slots));
	if (res < 0 && res != -ECANCELED)
		t->errors++;
	if (t->stopping) {
		if (!t->busy)
			t->ready(t->ctx); /* the last write: the owner may free t */
		return;
	}
	if (t->want_ready) {
		t->want_ready = false;
		t->ready(t->ctx);
	}
}

static int free_slot(const struct urs_nettx *t)
{
	uint32_t mask = t->active >= 32 ? ~0u : (1u << t->active) - 1;
	uint32_t avail = ~t->busy & mask;
	return avail ? __builtin_ctz(avail) : -1;
}

int urs_nettx_send(struct urs_nettx *t, const struct iovec *iov, int iovcnt)
{
	size_t len = 0;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > t->slot_bytes)
		return -EMSGSIZE;
	if (!t->mem && map(t) < 0)
		return -ENOMEM;
	int i = free_slot(t);
	if (i < 0 && t->active < t->max) {
		/* every slot in flight: that is backlog, double */
		t->active = t->active * 2 > t->max ? t->max : t->active * 2;
		t->grows++;
		i = free_slot(t);
	}
	if (i < 0) {
		t->backlog = true;
		t->want_ready = true;
		t->again++;
		return -EAGAIN;
	}
	if (t->busy)
		t->backlog = true;
	unsigned char *p = t->mem + (size_t) i * t->slot_bytes;
	size_t off = 0;
	for (int k = 0; k < iovcnt; k++) {
		memcpy(p + off, iov[k].iov_base, iov[k].iov_len);
		off += iov[k].iov_len;
	}
	struct urs_op *op = &t->slots[i].op;
	io_uring_prep_write(urs_op_sqe(op), t->fd, p, (unsigned) len, 0);
	op->flags |= URS_OPF_WEAK;
	t->busy |= 1u << i;
	t->used = true;
	t->touched |= 1u << i;
	t->frames++;
	urs_submit(t->loop, op, write_cb);
	return 0;
}

void urs_nettx_idle(struct urs_nettx *t)
{
	if (!t->mem || t->stopping)
		return;
	if (!t->backlog && t->active > 1) {
		t->active = 1;
		t->shrinks++;
	}
	/* pages of slots out of service (and of slot 0 after a period without
	 * frames) go back, unless a write still holds them */
	if (!t->backlog) {
		uint32_t keep = t->busy | (t->used ? 1u : 0u);
		uint32_t drop = t->touched & ~keep;
		for (uint32_t i = 0; drop >> i; i++)
			if (drop & (1u << i))
				madvise(t->mem + (size_t) i * t->slot_bytes, t->slot_bytes,
					MADV_DONTNEED);
		t->touched &= keep;
	}
	t->backlog = false;
	t->used = false;
}

void urs_nettx_stop(struct urs_nettx *t)
{
	t->stopping = true;
	t->want_ready = false;
}

void urs_nettx_fini(struct urs_nettx *t)
{
	if (t->mem)
		munmap(t->mem, (size_t) t->max * t->slot_bytes);
	free(t->slots);
	t->mem = NULL;
	t->slots = NULL;
}
