/*
 * cmd/exec.c — `ursa exec [options] ID [CMD ARGS...]`: run another process
 * in a running container. The process comes from --process FILE (an OCI
 * process object) or from the container's own config.json with the
 * trailing arguments and --env/--cwd/--user/--tty applied; either way it is
 * validated by the same parser as config.json and gets the container's
 * seccomp profile.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/cgroup.h"
#include "host/exec.h"
#include "host/seccomp.h"

int urs_wait_forwarding(pid_t sup, pid_t init);

static int set_env(json_t *env, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq)
		return -EINVAL;
	size_t i, n = (size_t) (eq - kv) + 1;
	json_t *v;
	json_array_foreach(env, i, v)
	{
		const char *s = json_string_value(v);
		if (s && !strncmp(s, kv, n))
			return json_array_set_new(env, i, json_string(kv));
	}
	return json_array_append_new(env, json_string(kv));
}

struct exec_args {
	const char *process, *pid_file, *console, *cwd, *user;
	bool detach, tty, nnp;
	int preserve;
	struct urs_strlist envs, caps;
	char **argv; /* CMD ARGS... (without --process), argc of them */
	int argc;
};

/* The flags' process (args, env, cwd, user, tty, caps) into @proc */
static int flags_process(json_t *proc, const struct exec_args *x)
{
	json_t *args = json_array();
	for (int k = 0; k < x->argc; k++)
		json_array_append_new(args, json_string(x->argv[k]));
	json_object_set_new(proc, "args", args);
	json_t *env = json_object_get(proc, "env");
	if (!json_is_array(env)) {
		env = json_array();
		json_object_set_new(proc, "env", env);
	}
	for (int k = 0; k < x->envs.n; k++)
		if (set_env(env, x->envs.v[k]) < 0) {
			urs_error("exec: --env %s: expected KEY=VALUE", x->envs.v[k]);
			return -1;
		}
	if (x->cwd)
		json_object_set_new(proc, "cwd", json_string(x->cwd));
	if (x->user) {
		unsigned uid, gid = 0;
		int n = sscanf(x->user, "%u:%u", &uid, &gid);
		if (n < 1) {
			urs_error("exec: --user %s: expected UID[:GID]", x->user);
			return -1;
		}
		json_t *u = json_pack("{s:I, s:I}", "uid", (json_int_t) uid, "gid",
				      (json_int_t) (n == 2 ? gid : 0));
		json_object_set_new(proc, "user", u);
	}
	json_object_set_new(proc, "terminal", json_boolean(x->tty));
	if (x->nnp)
		json_object_set_new(proc, "noNewPrivileges", json_true());
	json_t *c = json_object_get(proc, "capabilities");
	for (int k = 0; c && k < x->caps.n; k++) {
		const char *sets[] = {"bounding", "effective", "permitted", "inheritable"};
		for (size_t j = 0; j < 4; j++) {
			json_t *a = json_object_get(c, sets[j]);
			if (json_is_array(a))
				json_array_append_new(a, json_string(x->caps.v[k]));
		}
	}
	return 0;
}

/* The container's config.json with the process to exec in it (--process
 * FILE, or the container's own process changed by the flags), parsed. */
static int exec_spec(const char *id, const struct exec_args *x, struct urs_spec **spec)
{
	char path[PATH_MAX];
	urs_state_path(path, sizeof(path), G.root, id, "config.json");
	json_error_t je;
	json_t *cfg = json_load_file(path, 0, &je);
	if (!cfg) {
		urs_error("exec: the container's config (%s): %s", path, je.text);
		return -1;
	}
	json_t *proc;
	int r = 0;
	if (x->process) {
		if (!(proc = json_load_file(x->process, 0, &je))) {
			urs_error("exec: --process %s: line %d: %s", x->process, je.line, je.text);
			r = -1;
		} else {
			json_object_set_new(cfg, "process", proc);
		}
	} else {
		proc = json_object_get(cfg, "process");
		if (!json_is_object(proc)) {
			proc = json_object();
			json_object_set_new(cfg, "process", proc);
		}
		r = flags_process(proc, x);
	}
	char *text = r ? NULL : json_dumps(cfg, JSON_COMPACT);
	json_decref(cfg);
	if (r)
		return r;
	struct urs_err err = {{0}};
	r = text ? urs_spec_parse(text, strlen(text), spec, &err)
		 : urs_err_set(&err, -ENOMEM, "out of memory");
	free(text);
	if (r < 0)
		urs_error("exec: %s", err.msg);
	return r;
}

/* --console-socket: connected, or -1 (said why) */
static int exec_console(const char *console)
{
	if (!console) {
		urs_error("exec: --tty needs --console-socket");
		return -1;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", console);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		urs_error("exec: --console-socket %s: %s", console, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The process spawned in the container (its cgroup, namespaces, seccomp),
 * waited for unless --detach: its exit status, or 1 */
static int exec_run(const struct urs_state *st, const struct exec_args *x)
{
	struct urs_err err = {{0}};
	struct urs_spec *spec = NULL;
	scmp_filter_ctx filter = NULL;
	int console_fd = -1, rc = 1;
	struct urs_cgroup cg;
	bool have_cg = false;
	if (exec_spec(st->id, x, &spec) < 0)
		goto out;
	if (urs_seal_self_for(spec, &err) < 0 ||
	    (spec->lnx && spec->lnx->seccomp &&
	     urs_seccomp_build(spec->lnx->seccomp, &filter, &err) < 0)) {
		urs_error("%s", err.msg);
		goto out;
	}
	if (spec->process->terminal && (console_fd = exec_console(x->console)) < 0)
		goto out;
	have_cg = st->cgroup && urs_cg_from_string(&cg, st->cgroup, NULL) == 0;
	struct urs_exec_opts eo = {
		.init_pid = st->pid,
		.init_start = st->pid_start,
		.process = spec->process,
		.cg = have_cg ? &cg : NULL,
		.console_fd = console_fd,
		.preserve_fds = x->preserve,
		.seccomp = filter,
		.load_seccomp = filter ? urs_seccomp_load_hook : NULL,
	};
	pid_t pid;
	if (urs_exec_spawn(&eo, &pid, &err) < 0 ||
	    (x->pid_file && urs_write_pid_file(x->pid_file, pid, &err) < 0)) {
		urs_error("%s", err.msg);
		goto out;
	}
	rc = x->detach ? 0 : urs_wait_forwarding(pid, pid);
out:
	if (console_fd >= 0)
		close(console_fd);
	if (have_cg)
		urs_cg_close(&cg);
	if (filter)
		seccomp_release(filter);
	urs_spec_free(spec);
	return rc;
}

int cmd_exec(int argc, char **argv)
{
	struct exec_args x = {0};
	bool ignore = false;
	const char *ignored_s = NULL;
	const struct urs_opt opts[] = {
		{"process", 'p', URS_OPT_STR, &x.process, "OCI process JSON file"},
		{"detach", 'd', URS_OPT_FLAG, &x.detach, "do not wait for the process"},
		{"pid-file", 0, URS_OPT_STR, &x.pid_file, "write the process's pid here"},
		{"console-socket", 0, URS_OPT_STR, &x.console, "AF_UNIX socket for the pty master"},
		{"tty", 't', URS_OPT_FLAG, &x.tty, "allocate a pseudo-terminal"},
		{"env", 'e', URS_OPT_LIST, &x.envs, "KEY=VALUE (repeatable)"},
		{"cwd", 0, URS_OPT_STR, &x.cwd, "working directory"},
		{"user", 'u', URS_OPT_STR, &x.user, "UID[:GID]"},
		{"cap", 'c', URS_OPT_LIST, &x.caps, "add a capability (repeatable)"},
		{"no-new-privs", 0, URS_OPT_FLAG, &x.nnp, "set no_new_privs"},
		{"preserve-fds", 0, URS_OPT_INT, &x.preserve, "pass fds 3..3+N-1 on"},
		{"process-label", 0, URS_OPT_STR, &ignored_s, "(accepted)"},
		{"apparmor", 0, URS_OPT_STR, &ignored_s, "(accepted)"},
		{"no-subreaper", 0, URS_OPT_FLAG, &ignore, "(accepted)"},
		{NULL, 0, 0, NULL, NULL},
	};
	struct urs_state st;
	int next;
	int rc = urs_cmd_open("exec", "[options] ID [CMD ARGS...]", argc, argv, opts, &st, &next);
	if (rc >= 0)
		return rc;
	rc = 1;
	x.argv = argv + next;
	x.argc = argc - next;
	enum urs_status s = urs_container_status(&st);
	if (!x.process && next >= argc)
		urs_error("exec: give a command after the id, or --process FILE");
	else if (s != URS_ST_RUNNING && s != URS_ST_CREATED)
		urs_error(s == URS_ST_PAUSED ? "cannot exec in a paused container"
					     : "cannot exec in a stopped container");
	else
		rc = exec_run(&st, &x);
	urs_state_clear(&st);
	return rc;
}
