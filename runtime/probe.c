/*
 * runtime/probe.c — one-time probe of the kernel's io_uring features.
 *
 * Opcodes are probed with IORING_REGISTER_PROBE; setup flags with a trial
 * ring; provided buffer rings with a trial registration (and the
 * incremental flag with a second one). The result is cached for the
 * process; forced-off bits are applied on every read so tests can flip them.
 */
#include "runtime/probe.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime/compat.h"

static uint32_t probed;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static uint32_t forced_off;
static uint32_t env_off;

static const struct {
	uint32_t bit;
	const char *name;
} names[] = {
	{URS_FEAT_SINGLE_ISSUER, "single_issuer"}, {URS_FEAT_DEFER_TASKRUN, "defer_taskrun"},
	{URS_FEAT_COOP_TASKRUN, "coop_taskrun"},   {URS_FEAT_MSG_RING, "msg_ring"},
	{URS_FEAT_BUF_RING, "buf_ring"},	   {URS_FEAT_READ_MSHOT, "read_multishot"},
	{URS_FEAT_CQE_SKIP, "cqe_skip"},	   {URS_FEAT_PBUF_INC, "pbuf_inc"},
	{URS_FEAT_URING_CMD, "uring_cmd"},
};

const char *urs_feature_name(uint32_t bit)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].bit == bit)
			return names[i].name;
	return NULL;
}

int urs_features_parse(const char *list, uint32_t *mask)
{
	*mask = 0;
	while (list && *list) {
		const char *end = strchr(list, ',');
		size_t n = end ? (size_t) (end - list) : strlen(list);
		bool found = false;
		if (n == 3 && !strncmp(list, "all", 3)) {
			*mask |= URS_FEAT_ALL;
			found = true;
		}
		for (size_t i = 0; !found && i < sizeof(names) / sizeof(names[0]); i++) {
			if (strlen(names[i].name) == n && !strncmp(names[i].name, list, n)) {
				*mask |= names[i].bit;
				found = true;
			}
		}
		if (!found && n)
			return -EINVAL;
		list = end ? end + 1 : NULL;
	}
	return 0;
}

static bool try_setup(unsigned flags)
{
	struct io_uring ring;
	struct io_uring_params p = {.flags = flags};
	if (io_uring_queue_init_params(2, &ring, &p) < 0)
		return false;
	io_uring_queue_exit(&ring);
	return true;
}

static bool try_buf_ring(struct io_uring *ring, unsigned flags)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *mem =
		mmap(NULL, (size_t) pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return false;
	struct io_uring_buf_reg reg = {.ring_addr = (unsigned long) mem,
				       .ring_entries = 1,
				       .bgid = 0,
				       .URS_BUF_REG_FLAGS = (__u16) flags};
	bool ok = io_uring_register_buf_ring(ring, &reg, 0) == 0;
	if (ok)
		io_uring_unregister_buf_ring(ring, 0);
	munmap(mem, (size_t) pg);
	return ok;
}

static uint32_t probe_kernel(void)
{
	/* One trial ring with the most demanding flags answers three questions
	 * at once (a kernel with DEFER_TASKRUN has the other two); only if it is
	 * refused do we try the flags one by one. Each ring setup costs ~80 us,
	 * and the supervisor probes on every sandbox start. */
	uint32_t f = 0;
	struct io_uring ring;
	struct io_uring_params p0 = {.flags = IORING_SETUP_SINGLE_ISSUER |
					      IORING_SETUP_DEFER_TASKRUN};
	if (io_uring_queue_init_params(2, &ring, &p0) == 0) {
		f |= URS_FEAT_SINGLE_ISSUER | URS_FEAT_DEFER_TASKRUN | URS_FEAT_COOP_TASKRUN;
	} else {
		if (try_setup(IORING_SETUP_SINGLE_ISSUER))
			f |= URS_FEAT_SINGLE_ISSUER;
		if (try_setup(IORING_SETUP_COOP_TASKRUN))
			f |= URS_FEAT_COOP_TASKRUN;
		if (io_uring_queue_init(2, &ring, 0) < 0)
			return f;
	}
	if (ring.features & IORING_FEAT_CQE_SKIP)
		f |= URS_FEAT_CQE_SKIP;
	struct io_uring_probe *p = io_uring_get_probe_ring(&ring);
	if (p) {
		if (io_uring_opcode_supported(p, IORING_OP_MSG_RING))
			f |= URS_FEAT_MSG_RING;
		/* SQE128 came with it (5.19); its users set up their own ring */
		if (io_uring_opcode_supported(p, IORING_OP_URING_CMD))
			f |= URS_FEAT_URING_CMD;
		/* liburing 2.3 knows only opcodes < IORING_OP_LAST; read raw */
		if (p->last_op >= URS_IORING_OP_READ_MULTISHOT &&
		    (p->ops[URS_IORING_OP_READ_MULTISHOT].flags & IO_URING_OP_SUPPORTED))
			f |= URS_FEAT_READ_MSHOT;
		io_uring_free_probe(p);
	}
	if (try_buf_ring(&ring, 0))
		f |= URS_FEAT_BUF_RING;
	if ((f & URS_FEAT_BUF_RING) && try_buf_ring(&ring, IOU_PBUF_RING_INC))
		f |= URS_FEAT_PBUF_INC;
	io_uring_queue_exit(&ring);
	if (!(f & URS_FEAT_BUF_RING))
		f &= ~URS_FEAT_READ_MSHOT; /* multishot read needs provided buffers */
	return f;
}

static void probe_once_fn(void)
{
	probed = probe_kernel();
	const char *e = getenv("URSA_IOURING_DISABLE");
	if (e && urs_features_parse(e, &env_off) < 0)
		env_off = 0;
}

uint32_t urs_features(void)
{
	pthread_once(&probe_once, probe_once_fn);
	uint32_t f = probed & ~(forced_off | env_off);
	if (!(f & URS_FEAT_SINGLE_ISSUER))
		f &= ~URS_FEAT_DEFER_TASKRUN; /* DEFER_TASKRUN requires SINGLE_ISSUER */
	return f;
}

void urs_features_force_off(uint32_t mask)
{
	forced_off |= mask;
}

void urs_features_reset(void)
{
	forced_off = 0;
}
