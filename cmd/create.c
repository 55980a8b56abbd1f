/*
 * cmd/create.c — `ursa create`: make a container from a bundle, its init
 * blocked until `ursa start`. Also the flags create and run share, and the
 * CLI's part of a bundle's loading (actors/bundle.h): its globals, and the
 * re-exec from a sealed copy.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/sandbox.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/seccomp.h"
#include "host/selfexec.h"

/* A container that could ptrace our processes gets them from a sealed copy
 * of ursa (host/selfexec.h); returns only if no re-exec was needed. */
int urs_seal_self_for(const struct urs_spec *spec, struct urs_err *err)
{
	const struct urs_process *p = spec->process;
	uint64_t bounding = p && p->caps.present ? p->caps.bounding : 0;
	if (!urs_needs_sealed_self(bounding, urs_spec_has_ns(spec, URS_NS_USER)) ||
	    urs_running_sealed())
		return 0;
	int r = urs_reexec_sealed(G.argv);
	return urs_err_set(err, r, "re-executing from a sealed copy (CAP_SYS_PTRACE container): %s",
			   strerror(-r));
}

void urs_create_args_cli(struct urs_create_args *c)
{
	c->root = G.root;
	c->log = G.log;
	c->log_json = G.log_json;
	c->profile = G.profile;
	c->seal_self = urs_seal_self_for;
}

int urs_create_parse(const char *cmd, int argc, char **argv, struct urs_create_args *c,
		     bool with_detach)
{
	urs_create_args_cli(c);
	const struct urs_opt opts[] = {
		{"bundle", 'b', URS_OPT_STR, &c->bundle, "bundle directory (default: .)"},
		{"pid-file", 0, URS_OPT_STR, &c->pid_file, "write the container init's pid here"},
		{"console-socket", 0, URS_OPT_STR, &c->console_socket,
		 "AF_UNIX socket that receives the pty master"},
		{"no-pivot", 0, URS_OPT_FLAG, &c->no_pivot,
		 "MS_MOVE + chroot instead of pivot_root"},
		{"no-new-keyring", 0, URS_OPT_FLAG, &c->no_new_keyring, "keep the session keyring"},
		{"preserve-fds", 0, URS_OPT_INT, &c->preserve_fds, "pass fds 3..3+N-1 on"},
		{"detach", 'd', URS_OPT_FLAG, &c->detach,
		 with_detach ? "do not wait" : "(ignored)"},
		{"no-subreaper", 0, URS_OPT_FLAG, &c->no_subreaper, "(accepted)"},
		{"keep", 0, URS_OPT_FLAG, &c->keep, "run: do not delete after exit"},
		{"host-socket", 0, URS_OPT_STR, &c->host_socket,
		 "create: hand the sandbox's supervision to the process listening here "
		 "(containerd-shim-ursa-v2)"},
		{NULL, 0, 0, NULL, NULL},
	};
	int i = urs_parse(cmd, "[options] ID", argc, argv, opts);
	if (i < 0)
		return i;
	if (!(c->id = urs_require_id(cmd, argc, argv, i)))
		return -1;
	if (i + 1 < argc) {
		urs_error("%s: unexpected argument \"%s\" after the id", cmd, argv[i + 1]);
		return -1;
	}
	if (c->host_socket && strcmp(cmd, "create")) {
		urs_error("%s: --host-socket: only create hands a sandbox over", cmd);
		return -1;
	}
	if (c->preserve_fds < 0 || c->preserve_fds > 200) {
		urs_error("%s: --preserve-fds %d: out of range (0..200)", cmd, c->preserve_fds);
		return -1;
	}
	return 0;
}

int cmd_create(int argc, char **argv)
{
	struct urs_create_args c = {0};
	int r = urs_create_parse("create", argc, argv, &c, false);
	if (r < 0)
		return r == -2 ? 0 : 1;
	struct urs_err err = {{0}};
	struct urs_sandbox_opts o;
	struct urs_state st;
	pid_t sup;
	r = urs_bundle_prepare(&c, &o, &err);
	if (c.count_why)
		urs_debug("seccomp: denials not counted: %s", c.count_why);
	if (r < 0 || (r = urs_sandbox_create(&o, &sup, &st, &err)) < 0) {
		urs_error("%s", err.msg);
		urs_create_args_free(&c);
		return 1;
	}
	urs_state_clear(&st);
	urs_create_args_free(&c);
	return 0;
}
