/*
 * cmd/ckpt_seccomp.c — checkpointing a sandbox whose seccomp denials are
 * counted. Counting turns the profile's ERRNO actions into user
 * notifications answered by the supervisor (docs/sandbox.md, "seccomp"),
 * and a notify filter cannot be made again at restore: its listener lives
 * outside the task. What the filter does to the workload is the profile's
 * plain ERRNO filter's, so when the dumper finds a notify filter that is
 * exactly the counting filter of the container's own profile (rebuilt
 * from ROOT/ID/config.json, as `create` built it), the image gets the
 * plain one instead: the one `ursa restore` compiles and requires. After a
 * restore the sandbox's denials get the profile's errno as before but are
 * no longer counted. Built only when such a filter is met (never for
 * sandboxes without one: no cost on the usual path).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/seccomp.h"
#include "host/seccomp_bpf.h"
#include "host/spec.h"

/* @profile compiled with (@count) or without counting, into @out. */
static int compile(const struct urs_seccomp *profile, bool count, struct urs_bpf *out)
{
	struct urs_seccomp_denials *denials = NULL;
	const char *why = NULL;
	struct urs_seccomp_opts so = {.count = count ? &denials : NULL, .why = &why};
	scmp_filter_ctx ctx = NULL;
	struct urs_err err = {{0}};
	int r = urs_seccomp_build_opts(profile, &so, &ctx, &err);
	if (r == 0 && count && !denials)
		r = -ENOENT; /* this profile is never counted */
	if (r == 0)
		r = urs_seccomp_compile(ctx, out, &err);
	if (ctx)
		seccomp_release(ctx);
	free(denials);
	malloc_trim(0);
	return r;
}

int urs_ckpt_seccomp_replace(void *ctx, const uint64_t *insns, uint32_t len, const uint64_t **out)
{
	const struct urs_state *st = ctx;
	static struct urs_bpf plain;
	if (plain.prog.len) { /* one profile per container: built once */
		*out = (const uint64_t *) (const void *) plain.prog.filter;
		return (int) plain.prog.len;
	}
	char cfg[PATH_MAX];
	struct urs_spec *spec = NULL;
	if (urs_state_path(cfg, sizeof(cfg), G.root, st->id, "config.json") < 0 ||
	    urs_spec_load(cfg, &spec, NULL) < 0)
		return -ENOENT;
	int r = -ENOENT;
	const struct urs_seccomp *profile = spec->lnx ? spec->lnx->seccomp : NULL;
	struct urs_bpf counting = {0};
	if (profile && !urs_seccomp_uses_notify(profile) &&
	    compile(profile, true, &counting) == 0) {
		if (counting.prog.len == len &&
		    !memcmp(counting.prog.filter, insns, (size_t) len * sizeof(*insns)) &&
		    compile(profile, false, &plain) == 0) {
			*out = (const uint64_t *) (const void *) plain.prog.filter;
			r = (int) plain.prog.len;
		}
		urs_bpf_release(&counting);
	}
	urs_spec_free(spec);
	return r;
}
