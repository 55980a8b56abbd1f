/*
 * runtime/bufring.c — see bufring.h.
 */
#include "runtime/bufring.h"

#include <string.h>
#include <sys/mman.h>

#include "runtime/probe.h"

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

int urs_bufring_init(struct urs_bufring *b, struct urs_loop *loop, uint16_t bgid, uint32_t size,
		     uint32_t max)
{
	memset(b, 0, sizeof(*b));
	if (!(loop->feat & URS_FEAT_BUF_RING))
		return -EOPNOTSUPP;
	if (!size || !max || max > 32768)
		return -EINVAL;
	b->loop = loop;
	b->bgid = bgid;
	b->size = size;
	b->max = max;
	b->entries = pow2_at_least(max);

	size_t ring_bytes = (size_t) b->entries * sizeof(struct io_uring_buf);
	size_t mem_bytes = (size_t) size * max;
	b->br = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->br == MAP_FAILED) {
		b->br = NULL;
		return -errno;
	}
	b->mem = mmap(NULL, mem_bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int r;
	if (b->mem == MAP_FAILED) {
		b->mem = NULL;
		r = -errno;
		goto fail;
	}
	b->state = calloc(max, 1);
	if (!b->state) {
		r = -ENOMEM;
		goto fail;
	}
	io_uring_buf_ring_init(b->br);
	struct io_uring_buf_reg reg = {
		.ring_addr = (unsigned long) b->br, .ring_entries = b->entries, .bgid = bgid};
	r = io_uring_register_buf_ring(&loop->ring, &reg, 0);
	if (r < 0)
		goto fail;
	r = urs_bufring_grow(b, 1);
	if (r < 0) {
		io_uring_unregister_buf_ring(&loop->ring, bgid);
		goto fail;
	}
	return 0;
fail:
	free(b->state);
	if (b->mem)
		munmap(b->mem, mem_bytes);
	munmap(b->br, ring_bytes);
	memset(b, 0, sizeof(*b));
	return r;
}

void urs_bufring_fini(struct urs_bufring *b)
{
	if (!b->br)
		return;
	io_uring_unregister_buf_ring(&b->loop->ring, b->bgid);
	munmap(b->mem, (size_t) b->size * b->max);
	munmap(b->br, (size_t) b->entries * sizeof(struct io_uring_buf));
	free(b->state);
	memset(b, 0, sizeof(*b));
}

static void provide(struct urs_bufring *b, uint16_t bid)
{
	io_uring_buf_ring_add(b->br, urs_bufring_addr(b, bid), b->size, bid,
			      io_uring_buf_ring_mask(b->entries), 0);
	io_uring_buf_ring_advance(b->br, 1);
	b->state[bid] = URS_BUF_KERNEL;
	b->in_kernel++;
}

static void retire(struct urs_bufring *b, uint16_t bid)
{
	madvise(urs_bufring_addr(b, bid), b->size, MADV_DONTNEED);
	b->state[bid] = URS_BUF_RETIRED;
}

int urs_bufring_grow(struct urs_bufring *b, uint32_t n)
{
	if (n > b->max)
		n = b->max;
	if (n <= b->active)
		return 0;
	for (uint32_t i = b->active; i < n; i++)
		if (b->state[i] == URS_BUF_RETIRED) /* KERNEL ones were never taken back */
			provide(b, (uint16_t) i);
	if (b->active)
		b->grows++;
	b->active = n;
	return 0;
}

int urs_bufring_shrink(struct urs_bufring *b, uint32_t n)
{
	if (n < 1)
		n = 1;
	if (n >= b->active)
		return 0;
	for (uint32_t i = n; i < b->active; i++)
		if (b->state[i] == URS_BUF_RETIRED)
			retire(b, (uint16_t) i); /* no-op for never-used ones, harmless */
	b->active = n;
	b->shrinks++;
	return 0;
}

void urs_bufring_trim(struct urs_bufring *b)
{
	/* Buffers the kernel holds but no request is using: their contents
	 * are dead, so their pages can go; the kernel faults fresh ones in when
	 * it next writes there. Retired ones are already empty. */
	for (uint32_t i = 0; i < b->max; i++)
		if (b->state[i] == URS_BUF_KERNEL)
			madvise(urs_bufring_addr(b, (uint16_t) i), b->size, MADV_DONTNEED);
	b->trims++;
}

void *urs_bufring_take(struct urs_bufring *b, int32_t res, uint32_t cqe_flags, uint16_t *bid)
{
	if (res == -ENOBUFS) {
		b->enobufs++;
		b->backlog = true;
	}
	if (!(cqe_flags & IORING_CQE_F_BUFFER))
		return NULL;
	uint16_t id = (uint16_t) (cqe_flags >> IORING_CQE_BUFFER_SHIFT);
	if (id >= b->max || b->state[id] != URS_BUF_KERNEL)
		return NULL; /* not ours: a bug in the caller, never trust it */
	b->state[id] = URS_BUF_USER;
	b->in_kernel--;
	if (b->in_kernel == 0) {
		b->drained++;
		/* With one slot every read drains the ring; -ENOBUFS tells there
		 * real backlog. With more, using them all before any came back is
		 * the "batch filled every buffer" signal. */
		if (b->active > 1)
			b->backlog = true;
	}
	*bid = id;
	return urs_bufring_addr(b, id);
}

void urs_bufring_recycle(struct urs_bufring *b, uint16_t bid)
{
	if (bid >= b->max || b->state[bid] != URS_BUF_USER)
		return;
	if (bid < b->active)
		provide(b, bid);
	else
		retire(b, bid);
}
