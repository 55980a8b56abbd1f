/*
 * host/seccomp_bpf.c — see seccomp_bpf.h.
 */
#include "host/seccomp_bpf.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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

bool urs_seccomp_uses_notify(const struct urs_seccomp *p)
{
	if (p->default_action == URS_SCMP_ACT_NOTIFY)
		return true;
	for (size_t i = 0; i < p->n_syscalls; i++)
		if (p->syscalls[i].action == URS_SCMP_ACT_NOTIFY)
			return true;
	return false;
}
