/*
 * actors/sc_count.c — see sc_count.h.
 *
 * One counter per native syscall number below URS_SECCOMP_COUNT_NR, plus
 * "other" (another ABI, or a larger number): a plain array, so its pages
 * are not even touched until something is denied. It is exposed sparsely
 * (only the syscalls denied at least once; libseccomp names them at scrape
 * time) rather than through runtime/metrics, whose exposition prints every
 * cell: 513 lines of zeros per scrape would be most of the reply. At most
 * URS_SC_SERIES syscalls get a series of their own, in the order they are
 * first denied; later ones count as "other" (a workload walking the
 * syscall table must not be able to grow the scrape past the reply buffer
 * and blind the metrics; every series stays monotonic).
 */
#include "actors/sc_count.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/seccomp_bpf.h"
#include "runtime/common.h"
#include "runtime/timer.h"

#define SC_OTHER URS_SECCOMP_COUNT_NR

int urs_sc_take(struct urs_sc_count *c, int listener, const struct urs_seccomp_denials *d,
		bool copy)
{
	if (copy && d && d->n_exc > URS_SC_EXC_MAX)
		return -E2BIG;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = listener;
	c->active = listener >= 0 && d;
	if (!d)
		return 0;
	c->d = *d;
	if (copy) {
		memcpy(c->exc, d->exc, d->n_exc * sizeof(*d->exc));
		c->d.exc = c->exc;
	}
	return 0;
}

static void sc_arm(struct urs_sc_count *c, struct urs_loop *loop);

static void sc_close(struct urs_sc_count *c)
{
	/* From now on the kernel fails the notifying syscalls with ENOSYS. */
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* one denial of (@arch, @nr) counted */
static void sc_count(struct urs_sc_count *c, uint32_t arch, int32_t nr)
{
	size_t cell =
		arch == c->d.native_arch && nr < URS_SECCOMP_COUNT_NR ? (size_t) nr : SC_OTHER;
	if (!c->shown[cell] && cell != SC_OTHER) {
		if (c->nshown < URS_SC_SERIES) {
			c->shown[cell] = true;
			c->nshown++;
		} else {
			cell = SC_OTHER;
		}
	}
	atomic_fetch_add_explicit(&c->denied[cell], 1, memory_order_relaxed);
}

/* nothing of @c runs any more: its owner may free it */
static void sc_ended(struct urs_sc_count *c)
{
	if (c->ended)
		c->ended(c->ended_arg); /* last: it may free @c */
}

static void pace_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct urs_sc_count *c = container_of(t, struct urs_sc_count, pace);
	if (res == 0 && c->fd >= 0) {
		c->window_ns = urs_now_ns();
		c->in_window = 0;
		sc_arm(c, loop);
		return;
	}
	sc_ended(c);
}

/* the next answer now, or after this window if it had its burst */
static void sc_next(struct urs_sc_count *c, struct urs_loop *loop)
{
	uint64_t now = urs_now_ns(), w = c->pace_window_ns ? c->pace_window_ns : URS_SC_WINDOW_NS;
	if (now - c->window_ns >= w) {
		c->window_ns = now;
		c->in_window = 0;
	}
	if (++c->in_window >= URS_SC_BURST &&
	    urs_timer_start(loop, &c->pace, c->window_ns + w - now, 0, pace_cb) == 0)
		return;
	sc_arm(c, loop);
}

static void sc_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) flags;
	struct urs_sc_count *c = container_of(op, struct urs_sc_count, op);
	if (res == -ECANCELED) {
		sc_ended(c);
		return;
	}
	if (res < 0 || (res & (POLLERR | POLLNVAL))) {
		atomic_fetch_add_explicit(&c->errors, 1, memory_order_relaxed);
		sc_close(c);
		sc_ended(c);
		return;
	}
	if (res & POLLIN) {
		/* one notification per readiness: a second RECV could block */
		uint32_t arch;
		int32_t nr;
		int r = urs_seccomp_notify_answer(c->fd, &c->d, &arch, &nr);
		if (nr >= 0)
			sc_count(c, arch, nr);
		if (r < 0 && r != -ENOENT && r != -EINTR)
			atomic_fetch_add_explicit(&c->errors, 1, memory_order_relaxed);
	} else if (res & POLLHUP) {
		sc_close(c); /* no task uses the filter any more */
		sc_ended(c);
		return;
	}
	sc_next(c, loop);
}

const void *const urs_sc_handler = (const void *) sc_cb;

static void sc_arm(struct urs_sc_count *c, struct urs_loop *loop)
{
	io_uring_prep_poll_add(urs_op_sqe(&c->op), c->fd, POLLIN);
	c->op.flags = URS_OPF_WEAK;
	urs_submit(loop, &c->op, sc_cb);
}

int urs_sc_start(struct urs_sc_count *c, struct urs_loop *loop)
{
	if (!c->active || c->fd < 0)
		return 0;
	int r = urs_seccomp_notify_setup(c->fd);
	if (r < 0) {
		sc_close(c);
		return r;
	}
	sc_arm(c, loop);
	return 0;
}

void urs_sc_stop(struct urs_sc_count *c, struct urs_loop *loop)
{
	if (urs_op_busy(&c->op))
		urs_cancel(loop, &c->op);
	if (urs_timer_busy(&c->pace))
		urs_timer_cancel(loop, &c->pace);
	sc_close(c);
}

bool urs_sc_busy(const struct urs_sc_count *c)
{
	return urs_op_busy(&c->op) || urs_timer_busy(&c->pace);
}

int urs_sc_render(const struct urs_sc_count *c, const char *cl, char *buf, size_t len)
{
	if (!c->active)
		return 0;
	size_t o = 0;
	int n = snprintf(buf, len,
			 "# HELP ursa_seccomp_denied_total Syscalls the seccomp profile denied "
			 "(answered by the supervisor), by syscall; \"other\": another ABI or "
			 "number.\n# TYPE ursa_seccomp_denied_total counter\n");
	for (size_t i = 0; i <= SC_OTHER; i++) {
		if (n < 0 || (size_t) n >= len - o)
			return -ENOSPC;
		o += (size_t) n;
		n = 0;
		uint64_t v = atomic_load_explicit(&c->denied[i], memory_order_relaxed);
		if (!v || (i != SC_OTHER && !c->shown[i]))
			continue;
		char name[64] = "other";
		if (i != SC_OTHER)
			urs_seccomp_syscall_name((int) i, name, sizeof(name));
		if (!*name) /* a number libseccomp has no name for */
			snprintf(name, sizeof(name), "%zu", i);
		n = snprintf(buf + o, len - o,
			     "ursa_seccomp_denied_total{%s,syscall=\"%s\"} %" PRIu64 "\n", cl, name,
			     v);
	}
	if (n < 0 || (size_t) n >= len - o)
		return -ENOSPC;
	o += (size_t) n;
	n = snprintf(buf + o, len - o,
		     "# HELP ursa_seccomp_notify_errors_total Seccomp notifications the "
		     "supervisor failed to receive or answer.\n"
		     "# TYPE ursa_seccomp_notify_errors_total counter\n"
		     "ursa_seccomp_notify_errors_total{%s} %" PRIu64 "\n",
		     cl, atomic_load_explicit(&c->errors, memory_order_relaxed));
	if (n < 0 || (size_t) n >= len - o)
		return -ENOSPC;
	return (int) (o + (size_t) n);
}

int urs_sc_load_denied(struct urs_sc_count *c, const uint64_t *vals, uint32_t n)
{
	if (n != URS_ARRAY_SIZE(c->denied))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		atomic_fetch_add_explicit(&c->denied[i], vals[i], memory_order_relaxed);
	/* the series shown: the syscalls denied before, in number order (their
	 * first-denial order is not saved), within the cap */
	for (uint32_t i = 0; i < SC_OTHER; i++)
		if (!c->shown[i] && atomic_load_explicit(&c->denied[i], memory_order_relaxed)) {
			if (c->nshown < URS_SC_SERIES) {
				c->shown[i] = true;
				c->nshown++;
			} else {
				atomic_fetch_add_explicit(&c->denied[SC_OTHER], c->denied[i],
							  memory_order_relaxed);
				c->denied[i] = 0;
			}
		}
	return 0;
}
