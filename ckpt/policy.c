/*
 * ckpt/policy.c — the policy a restored image must satisfy, from the
 * bundle's config.json (ckpt/restore.h, struct ckpt_policy): the image is
 * untrusted, so its tasks may hold no capability, id, limit or seccomp
 * filter the configured process could not have.
 */
#include <errno.h>
#include <sys/resource.h>

#include "ckpt/restore.h"
#include "host/spec.h"

#define CAP_SETGID_BIT	     (1ull << 6)
#define CAP_SETUID_BIT	     (1ull << 7)
#define CAP_SYS_RESOURCE_BIT (1ull << 24)

int ckpt_policy_from_spec(const struct urs_spec *spec, bool notify, const void *bpf,
			  uint32_t bpf_len, struct ckpt_policy *p, struct urs_err *err)
{
	const struct urs_process *pr = spec->process;
	if (!pr)
		return urs_err_set(err, -EINVAL,
				   "restore: config.json has no process (the policy the image is "
				   "checked against comes from it)");
	if (urs_spec_has_ns(spec, URS_NS_USER))
		return urs_err_set(
			err, -ENOTSUP,
			"restore: sandboxes with a user namespace are not supported yet");
	if (notify)
		return urs_err_set(err, -ENOTSUP,
				   "restore: a seccomp profile with SCMP_ACT_NOTIFY is not "
				   "supported (its listener cannot be checkpointed)");
	*p = (struct ckpt_policy){
		.cap_bnd = pr->caps.present ? pr->caps.bounding : 0,
		.need_nnp = pr->no_new_privileges,
		.uid = pr->user.uid,
		.gid = pr->user.gid,
		.bpf = bpf,
		.bpf_len = bpf_len,
	};
	/* hard limits: what the init would get (ours, inherited), or the
	 * configured ones; a process can only lower them without
	 * CAP_SYS_RESOURCE, which the bounding set then has to allow */
	for (int k = 0; k < 16; k++) {
		struct rlimit rl;
		p->rlim_max[k] = getrlimit(k, &rl) == 0 ? rl.rlim_max : 0;
		for (size_t j = 0; j < pr->n_rlimits; j++)
			if (pr->rlimits[j].resource == k)
				p->rlim_max[k] = pr->rlimits[j].hard;
		if (p->cap_bnd & CAP_SYS_RESOURCE_BIT)
			p->rlim_max[k] = RLIM_INFINITY;
	}
	p->n_rlim = 16;
	/* a process that cannot change its ids keeps the configured ones */
	p->pin_uid = !(p->cap_bnd & CAP_SETUID_BIT);
	p->pin_gid = !(p->cap_bnd & CAP_SETGID_BIT);
	return 0;
}
