/*
 * actors/bundle.c — a sandbox's options from an OCI bundle (actors/bundle.h):
 * config.json loaded and checked, the root resolved, the seccomp profile
 * compiled before the supervisor is forked, the network settings from the
 * run.ursa.* annotations. What `ursa create`, `run` and `restore` share.
 */
#include "actors/bundle.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/seccomp.h"

/* Count seccomp denials? The annotation run.ursa.seccomp-count ("true" /
 * "false"; clients pass annotations through, not environments), else
 * URSA_SECCOMP_COUNT=0 (a developer's switch), else yes. */
static int seccomp_count_setting(const struct urs_spec *spec, bool *count, struct urs_err *err)
{
	const char *env = getenv("URSA_SECCOMP_COUNT");
	*count = !(env && !strcmp(env, "0"));
	return urs_spec_ann_bool(spec, URS_ANN_SECCOMP_COUNT, count, err);
}

/* The sandbox NIC needs a network namespace of the sandbox's own, and port
 * forwards and network settings need the NIC: refused, never dropped. */
static int net_check(const struct urs_spec *spec, const struct urs_netopts *net,
		     const char *needs_nic, struct urs_err *err)
{
	bool own = false;
	for (size_t i = 0; spec->lnx && i < spec->lnx->n_namespaces; i++)
		own |= spec->lnx->namespaces[i].type == URS_NS_NETWORK &&
		       !spec->lnx->namespaces[i].path;
	if (net->mode == URS_NET_SANDBOX && !own)
		return urs_err_set(
			err, -EINVAL,
			"config.json: annotations[\"%s\"] = \"sandbox\" needs a new network "
			"namespace (a \"network\" entry without a path in "
			"linux.namespaces)",
			URS_ANN_NETWORK);
	if (needs_nic && net->mode != URS_NET_SANDBOX)
		return urs_err_set(
			err, -EINVAL,
			"config.json: annotations[\"%s\"]: applies to the sandbox NIC only; "
			"add annotations[\"%s\"] = \"sandbox\"",
			needs_nic, URS_ANN_NETWORK);
	return 0;
}

/* the profile built into a filter, compiled now so that `start` does not
 * wait for it (a NOTIFY profile keeps libseccomp's loader for its
 * listener fd); denials counted by the supervisor (ERRNO → NOTIFY) unless
 * URSA_SECCOMP_COUNT=0 or the profile rules it out (seccomp.h) */
static int prepare_seccomp(struct urs_create_args *c, struct urs_err *err)
{
	const char *why = NULL;
	bool count;
	int r = seccomp_count_setting(c->spec, &count, err);
	if (r < 0)
		return r;
	count = count && !c->plain_seccomp;
	struct urs_seccomp_opts so = {.count = count ? &c->denials : NULL, .why = &why};
	r = urs_seccomp_build_opts(c->spec->lnx->seccomp, &so, (scmp_filter_ctx *) &c->filter, err);
	if (r < 0)
		return r;
	c->count_why = why;
	if (urs_seccomp_uses_notify(c->spec->lnx->seccomp))
		return 0;
	r = urs_seccomp_compile(c->filter, &c->bpf, err);
	seccomp_release(c->filter);
	c->filter = NULL;
	/* libseccomp's rule database leaves ~1 MiB of freed heap behind: hand
	 * the pages back before the supervisor is forked, or it keeps them
	 * (bench/RESULTS.md, seccomp) */
	malloc_trim(0);
	return r;
}

/* networking: what the spec says, as with runc (a new net namespace has
 * loopback only), unless the annotations ask for the sandbox NIC
 * (docs/network.md) */
static int prepare_net(struct urs_create_args *c, struct urs_err *err)
{
	urs_netopts_default(&c->net);
	c->net.mode = URS_NET_NONE;
	const char *needs_nic = NULL; /* an annotation that only the NIC can honour */
	for (size_t i = 0; i < c->spec->n_annotations; i++) {
		const struct urs_kv *kv = &c->spec->annotations[i];
		int r = 0;
		if (!strcmp(kv->key, URS_ANN_NETWORK)) {
			r = urs_netopts_mode(&c->net, kv->value, err);
		} else if (!strcmp(kv->key, URS_ANN_PORTS)) {
			r = urs_netopts_forwards(&c->net, kv->value, err);
			needs_nic = kv->key;
		} else if (!strncmp(kv->key, URS_ANN_NET_PREFIX, strlen(URS_ANN_NET_PREFIX))) {
			r = urs_netopts_set(&c->net, kv->key + strlen(URS_ANN_NET_PREFIX),
					    kv->value, err);
			needs_nic = kv->key;
		}
		if (r < 0) {
			char why[sizeof(err->msg)];
			snprintf(why, sizeof(why), "%s", err->msg);
			return urs_err_set(err, r, "config.json: annotations[\"%s\"]: %s", kv->key,
					   why);
		}
	}
	return net_check(c->spec, &c->net, needs_nic, err);
}

int urs_bundle_prepare(struct urs_create_args *c, struct urs_sandbox_opts *o, struct urs_err *err)
{
	char cfg[PATH_MAX];
	if (!realpath(c->bundle ? c->bundle : ".", c->bundle_abs))
		return urs_err_set(err, -errno, "--bundle %s: %m", c->bundle ? c->bundle : ".");
	if (snprintf(cfg, sizeof(cfg), "%s/config.json", c->bundle_abs) >= (int) sizeof(cfg))
		return urs_err_set(err, -ENAMETOOLONG, "--bundle %s: path too long", c->bundle_abs);
	int r = urs_spec_load(cfg, &c->spec, err);
	if (r < 0)
		return r;
	if (!c->spec->root.path)
		return urs_err_set(err, -EINVAL, "config.json: root.path: missing");
	if (c->seal_self && (r = c->seal_self(c->spec, err)) < 0)
		return r;
	char rootfs[PATH_MAX];
	int n = c->spec->root.path[0] == '/'
			? snprintf(rootfs, sizeof(rootfs), "%s", c->spec->root.path)
			: snprintf(rootfs, sizeof(rootfs), "%s/%s", c->bundle_abs,
				   c->spec->root.path);
	if (n >= (int) sizeof(rootfs))
		return urs_err_set(err, -ENAMETOOLONG, "config.json: root.path: path too long");
	struct stat sb;
	if (!realpath(rootfs, c->rootfs_abs) || stat(c->rootfs_abs, &sb) < 0)
		return urs_err_set(err, -ENOENT, "config.json: root.path %s: no such directory",
				   rootfs);
	if (!S_ISDIR(sb.st_mode))
		return urs_err_set(err, -ENOTDIR, "config.json: root.path %s: not a directory",
				   rootfs);
	if (c->spec->lnx && c->spec->lnx->seccomp && (r = prepare_seccomp(c, err)) < 0)
		return r;
	if ((r = prepare_net(c, err)) < 0)
		return r;
	*o = (struct urs_sandbox_opts){
		.root = c->root,
		.id = c->id,
		.bundle = c->bundle_abs,
		.spec = c->spec,
		.rootfs = c->rootfs_abs,
		.console_socket = c->console_socket,
		.pid_file = c->pid_file,
		.no_pivot = c->no_pivot,
		.no_new_keyring = c->no_new_keyring,
		.preserve_fds = c->preserve_fds,
		.no_prewarm = getenv("URSA_BENCH_NO_PREWARM") != NULL, /* benchmark only */
		.seccomp = c->filter	     ? c->filter
			   : c->bpf.prog.len ? (void *) &c->bpf
					     : NULL,
		.load_seccomp = c->filter ? urs_seccomp_load_hook : urs_bpf_load_hook,
		.seccomp_notify = c->filter != NULL || c->denials, /* a listener comes with READY */
		.load_seccomp_notify =
			c->denials ? urs_bpf_load_notify_hook : urs_seccomp_load_notify_hook,
		.seccomp_count = c->denials,
		.profile = c->profile,
		.net = &c->net,
		.log = c->log,
		.log_json = c->log_json,
		.host_socket = c->host_socket,
	};
	return 0;
}

void urs_create_args_free(struct urs_create_args *c)
{
	if (c->filter)
		seccomp_release(c->filter);
	urs_bpf_release(&c->bpf);
	free(c->denials);
	urs_spec_free(c->spec);
}
