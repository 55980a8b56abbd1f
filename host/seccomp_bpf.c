/*
 * host/seccomp_bpf.c — see seccomp_bpf.h.
 */
#include "host/seccomp_bpf.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/seccomp.h"
#include "host/spec.h"
#include "runtime/common.h"

int urs_seccomp_compile(scmp_filter_ctx ctx, struct urs_bpf *out, struct urs_err *err)
{
	memset(out, 0, sizeof(*out));
	_cleanup_close_ int fd = memfd_create("ursa-bpf", MFD_CLOEXEC);
	if (fd < 0)
		return urs_err_set(err, -errno, "seccomp: memfd: %m");
	int r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return urs_err_set(err, r, "seccomp: compiling the filter: %s", strerror(-r));
	struct stat sb;
	if (fstat(fd, &sb) < 0 || sb.st_size <= 0 || sb.st_size % sizeof(struct sock_filter) ||
	    sb.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return urs_err_set(err, -EINVAL, "seccomp: compiled filter has a bad size (%lld)",
				   (long long) sb.st_size);
	void *insns = malloc((size_t) sb.st_size);
	if (!insns)
		return urs_err_set(err, -ENOMEM, "seccomp: out of memory");
	if (pread(fd, insns, (size_t) sb.st_size, 0) != sb.st_size) {
		free(insns);
		return urs_err_set(err, -EIO, "seccomp: reading the compiled filter: %m");
	}
	out->prog.len = (unsigned short) (sb.st_size / sizeof(struct sock_filter));
	out->prog.filter = insns;
	out->owned = insns;
	uint32_t v = 0;
	if (seccomp_attr_get(ctx, SCMP_FLTATR_CTL_TSYNC, &v) == 0 && v)
		out->flags |= SECCOMP_FILTER_FLAG_TSYNC;
	if (seccomp_attr_get(ctx, SCMP_FLTATR_CTL_LOG, &v) == 0 && v)
		out->flags |= SECCOMP_FILTER_FLAG_LOG;
	if (seccomp_attr_get(ctx, SCMP_FLTATR_CTL_SSB, &v) == 0 && v)
		out->flags |= SECCOMP_FILTER_FLAG_SPEC_ALLOW;
	return 0;
}

void urs_bpf_release(struct urs_bpf *b)
{
	free(b->owned);
	memset(b, 0, sizeof(*b));
}

int urs_bpf_load_hook(void *bpf, struct urs_err *err)
{
	struct urs_bpf *b = bpf;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, b->flags, &b->prog) < 0)
		return urs_err_set(err, -errno, "seccomp: loading the filter (%u instructions): %m",
				   b->prog.len);
	return 0;
}

int urs_bpf_load_notify_hook(void *bpf, int *listener, struct urs_err *err)
{
	struct urs_bpf *b = bpf;
	unsigned int flags = b->flags | SECCOMP_FILTER_FLAG_NEW_LISTENER;

	*listener = -1;
	/* TSYNC and NEW_LISTENER only go together with TSYNC_ESRCH */
	if (flags & SECCOMP_FILTER_FLAG_TSYNC)
		flags |= SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &b->prog);
	if (fd < 0)
		return urs_err_set(
			err, -errno,
			"seccomp: loading the filter with a listener (%u instructions): %m",
			b->prog.len);
	*listener = (int) fd;
	return 0;
}

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/* Room for the kernel's struct seccomp_notif, which may be larger than ours. */
#define NOTIF_MAX 256
static size_t notif_size = sizeof(struct seccomp_notif);

int urs_seccomp_notify_setup(int listener)
{
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
		return -errno;
	if (sz.seccomp_notif > NOTIF_MAX ||
	    sz.seccomp_notif_resp > sizeof(struct seccomp_notif_resp))
		return -EOVERFLOW; /* a newer kernel than we can answer safely */
	if (sz.seccomp_notif > notif_size)
		notif_size = sz.seccomp_notif;
	/* the notifying task and the supervisor hand off CPU-to-CPU: the kernel
	 * can switch directly instead of waking through the scheduler */
	ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
	return 0;
}

int urs_seccomp_notify_answer(int listener, const struct urs_seccomp_denials *d, uint32_t *arch,
			      int32_t *nr)
{
	_Alignas(8) unsigned char buf[NOTIF_MAX];
	struct seccomp_notif *n = (struct seccomp_notif *) buf;

	*nr = -1;
	*arch = 0;
	memset(buf, 0, notif_size); /* the kernel wants it zeroed */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, n) < 0)
		return -errno; /* ENOENT: the task died after the wake-up */
	*nr = n->data.nr;
	*arch = n->data.arch;
	uint16_t e = urs_seccomp_denial_errno(d, n->data.arch, n->data.nr);
	struct seccomp_notif_resp resp = {.id = n->id, .val = 0, .error = -(int32_t) e, .flags = 0};
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
		return -errno; /* ENOENT: the task was killed meanwhile */
	return 0;
}

bool urs_seccomp_uses_notify(const struct urs_seccomp *p)
{
	if (p->default_action == URS_SCMP_ACT_NOTIFY)
		return true;
	for (size_t i = 0; i < p->n_syscalls; i++)
		if (p->syscalls[i].action == URS_SCMP_ACT_NOTIFY)
			return true;
	return false;
}
