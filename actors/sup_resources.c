/*
 * actors/sup_resources.c — linux.resources (the spec's) into the cgroup
 * module's resources (host/cgroup.h), and applied: the scalars (memory,
 * pids, cpu and the rest), the blockIO device lists, the device rules,
 * hugepage limits and unified keys. A field is applied or refused naming
 * it, never dropped. What the sandbox gets, not where the supervisor sits
 * (actors/sup_cgself.c); public as urs_resources_apply (supervisor.h).
 */
#include "actors/supervisor.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/cgroup.h"
#include "runtime/common.h"
#include "runtime/err.h"

/* linux.resources (spec) -> the cgroup module's resources */
/* memory, pids, cpu: the scalars, applied or refused naming the field */
static void res_scalars(struct urs_cg_resources *r, const struct urs_resources *res)
{
	if (res->memory.has_limit)
		r->mem_limit = res->memory.limit;
	if (res->memory.has_reservation)
		r->mem_reservation = res->memory.reservation;
	if (res->memory.has_swap)
		r->mem_swap = res->memory.swap;
	if (res->memory.has_swappiness)
		r->mem_swappiness = (int64_t) res->memory.swappiness;
	r->disable_oom_killer = res->memory.disable_oom_killer;
	if (res->pids.has_limit)
		r->pids_limit = res->pids.limit ? res->pids.limit : -1;
	if (res->cpu.has_shares)
		r->cpu_shares = res->cpu.shares;
	if (res->cpu.has_quota)
		r->cpu_quota = res->cpu.quota;
	if (res->cpu.has_period)
		r->cpu_period = res->cpu.period;
	r->cpus = res->cpu.cpus;
	r->mems = res->cpu.mems;
	/* the rest: applied, or refused naming the field (never dropped) */
	if (res->memory.has_kernel)
		r->mem_kernel = res->memory.kernel;
	if (res->memory.has_kernel_tcp)
		r->mem_kernel_tcp = res->memory.kernel_tcp;
	r->has_cpu_burst = res->cpu.has_burst;
	r->cpu_burst = res->cpu.burst;
	r->has_cpu_idle = res->cpu.has_idle;
	r->cpu_idle = res->cpu.idle;
	r->cpu_rt_runtime = res->cpu.has_rt_runtime ? res->cpu.rt_runtime : 0;
	r->cpu_rt_period = res->cpu.has_rt_period ? res->cpu.rt_period : 0;
	r->blkio_weight = res->block_io.has_weight ? res->block_io.weight : 0;
	r->blkio_leaf_weight = res->block_io.has_leaf_weight ? res->block_io.leaf_weight : 0;
	r->has_net_classid = res->network.has_class_id;
	r->net_classid = res->network.class_id;
	r->n_net_prio = res->network.n_priorities;
	r->rdma = res->has_rdma;
}

/* blockIO's device lists into @bd (@cap entries): weightDevice twice
 * (weight, leafWeight), then the throttle lists */
static int res_blkio(struct urs_cg_resources *r, const struct urs_resources *res,
		     struct urs_cg_blkio_dev *bd, size_t cap, struct urs_err *err)
{
	size_t nb = 0;
	for (int l = 0; l < 2 + URS_CG_THR__N; l++) {
		const struct urs_blkio_device *src =
			l < 2 ? res->block_io.weight_devices : res->block_io.throttle[l - 2];
		size_t n = l < 2 ? res->block_io.n_weight_devices : res->block_io.n_throttle[l - 2];
		size_t *dn = l == 0   ? &r->n_blkio_weight_dev
			     : l == 1 ? &r->n_blkio_leaf_weight_dev
				      : &r->n_blkio_throttle[l - 2];
		*(l == 0   ? &r->blkio_weight_dev
		  : l == 1 ? &r->blkio_leaf_weight_dev
			   : &r->blkio_throttle[l - 2]) = bd + nb;
		for (size_t i = 0; i < n; i++) {
			uint64_t v = l == 0   ? src[i].weight
				     : l == 1 ? src[i].leaf_weight
					      : src[i].rate;
			if (l < 2 && !v)
				continue; /* a weight of 0 is "not set" (runc) */
			if (nb == cap)
				return urs_err_set(err, -E2BIG,
						   "linux.resources.blockIO: more than %zu devices",
						   cap);
			bd[nb++] = (struct urs_cg_blkio_dev){src[i].major, src[i].minor, v};
			(*dn)++;
		}
	}
	return 0;
}

/* the device rules, into *@out (the caller frees it): the spec's (a new
 * sandbox always gets a policy, like runc: deny all first when the spec has
 * no rule, or the v1 devices cgroup inherits "allow all" from its parent),
 * what every container gets (runc's AllowedDevices), and the nodes
 * linux.devices asks ursa to create (a privileged container: every node of
 * the host's /dev) */
static int res_devices(struct urs_cg_resources *r, const struct urs_resources *res,
		       const struct urs_linux *created, struct urs_cg_device **out,
		       struct urs_err *err)
{
	static const struct urs_cg_device dflt[] = {
		{true, 'c', -1, -1, "m"}, {true, 'b', -1, -1, "m"},    {true, 'c', 1, 3, "rwm"},
		{true, 'c', 1, 8, "rwm"}, {true, 'c', 1, 7, "rwm"},    {true, 'c', 5, 0, "rwm"},
		{true, 'c', 1, 5, "rwm"}, {true, 'c', 1, 9, "rwm"},    {true, 'c', 136, -1, "rwm"},
		{true, 'c', 5, 2, "rwm"}, {true, 'c', 10, 200, "rwm"},
	};
	size_t nd = 0, want = res->n_devices + 1 + URS_ARRAY_SIZE(dflt);
	for (size_t i = 0; created && i < created->n_devices; i++)
		want += created->devices[i].type != 'p';
	struct urs_cg_device *devs = *out = calloc(want, sizeof(*devs));
	if (!devs)
		return urs_err_set(err, -ENOMEM, "linux.resources.devices: out of memory");
	bool any = res->n_devices > 0 || created;
	if (created && !res->n_devices)
		devs[nd++] = (struct urs_cg_device){false, 'a', -1, -1, "rwm"};
	for (size_t i = 0; i < res->n_devices; i++, nd++) {
		devs[nd] = (struct urs_cg_device){.allow = res->devices[i].allow,
						  .type = res->devices[i].type,
						  .major = res->devices[i].major,
						  .minor = res->devices[i].minor};
		memcpy(devs[nd].access, res->devices[i].access, sizeof(devs[nd].access));
	}
	for (size_t i = 0; any && i < URS_ARRAY_SIZE(dflt); i++)
		devs[nd++] = dflt[i];
	for (size_t i = 0; created && i < created->n_devices; i++) {
		const struct urs_device *d = &created->devices[i];
		if (d->type == 'p')
			continue;
		devs[nd++] = (struct urs_cg_device){true, d->type == 'b' ? 'b' : 'c', d->major,
						    d->minor, "rwm"};
	}
	r->devices = devs;
	r->n_devices = nd;
	return 0;
}

int urs_resources_apply(struct urs_cgroup *cg, const struct urs_resources *res,
			const struct urs_linux *created, struct urs_err *err)
{
	struct urs_cg_resources r = URS_CG_RESOURCES_INIT;
	_cleanup_free_ struct urs_cg_device *devs = NULL;
	struct urs_cg_kv kv[64];
	struct urs_cg_blkio_dev bd[256];
	struct urs_cg_hugepage hp[16];
	res_scalars(&r, res);
	int e = res_blkio(&r, res, bd, URS_ARRAY_SIZE(bd), err);
	if (e < 0)
		return e;
	if (res->n_hugepage_limits > URS_ARRAY_SIZE(hp))
		return urs_err_set(err, -E2BIG, "linux.resources.hugepageLimits: more than %zu",
				   URS_ARRAY_SIZE(hp));
	for (size_t i = 0; i < res->n_hugepage_limits; i++)
		hp[i] = (struct urs_cg_hugepage){res->hugepage_limits[i].page_size,
						 res->hugepage_limits[i].limit};
	r.hugepages = hp;
	r.n_hugepages = res->n_hugepage_limits;
	if (created && created->has_intel_rdt)
		return urs_err_set(err, -EOPNOTSUPP,
				   "linux.intelRdt: not supported by ursa (Intel RDT / resctrl)");
	if ((e = res_devices(&r, res, created, &devs, err)) < 0)
		return e;
	if (res->n_unified > URS_ARRAY_SIZE(kv))
		return urs_err_set(err, -E2BIG, "linux.resources.unified: more than %zu keys",
				   URS_ARRAY_SIZE(kv));
	for (size_t i = 0; i < res->n_unified; i++)
		kv[i] = (struct urs_cg_kv){res->unified[i].key, res->unified[i].value};
	r.unified = kv;
	r.n_unified = res->n_unified;
	return urs_cg_apply(cg, &r, err);
}
