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

int cmd_exec(int argc, char **argv)
{
	const char *process = NULL, *pid_file = NULL, *console = NULL, *cwd = NULL, *user = NULL;
	bool detach = false, tty = false, nnp = false, ignore = false;
	int preserve = 0;
	struct urs_strlist envs = {0}, caps = {0};
	const char *ignored_s = NULL;
	const struct urs_opt opts[] = {
		{"process", 'p', URS_OPT_STR, &process, "OCI process JSON file"},
		{"detach", 'd', URS_OPT_FLAG, &detach, "do not wait for the process"},
		{"pid-file", 0, URS_OPT_STR, &pid_file, "write the process's pid here"},
		{"console-socket", 0, URS_OPT_STR, &console, "AF_UNIX socket for the pty master"},
		{"tty", 't', URS_OPT_FLAG, &tty, "allocate a pseudo-terminal"},
		{"env", 'e', URS_OPT_LIST, &envs, "KEY=VALUE (repeatable)"},
		{"cwd", 0, URS_OPT_STR, &cwd, "working directory"},
		{"user", 'u', URS_OPT_STR, &user, "UID[:GID]"},
		{"cap", 'c', URS_OPT_LIST, &caps, "add a capability (repeatable)"},
		{"no-new-privs", 0, URS_OPT_FLAG, &nnp, "set no_new_privs"},
		{"preserve-fds", 0, URS_OPT_INT, &preserve, "pass fds 3..3+N-1 on"},
		{"process-label", 0, URS_OPT_STR, &ignored_s, "(accepted)"},
		{"apparmor", 0, URS_OPT_STR, &ignored_s, "(accepted)"},
		{"no-subreaper", 0, URS_OPT_FLAG, &ignore, "(accepted)"},
		{NULL, 0, 0, NULL, NULL},
	};
	struct urs_err err = {{0}};
	struct urs_state st;
	int next;
	int rc = urs_cmd_open("exec", "[options] ID [CMD ARGS...]", argc, argv, opts, &st, &next);
	if (rc >= 0)
		return rc;
	rc = 1;
	const char *id = st.id;
	int i = next - 1;
	json_t *cfg = NULL;
	struct urs_spec *spec = NULL;
	scmp_filter_ctx filter = NULL;
	int console_fd = -1;
	struct urs_cgroup cg;
	bool have_cg = false;
	if (!process && next >= argc) {
		urs_error("exec: give a command after the id, or --process FILE");
		goto out;
	}
	enum urs_status s = urs_container_status(&st);
	if (s != URS_ST_RUNNING && s != URS_ST_CREATED) {
		urs_error(s == URS_ST_PAUSED ? "cannot exec in a paused container"
					     : "cannot exec in a stopped container");
		goto out;
	}
	char path[PATH_MAX];
	urs_state_path(path, sizeof(path), G.root, id, "config.json");
	json_error_t je;
	if (!(cfg = json_load_file(path, 0, &je))) {
		urs_error("exec: the container's config (%s): %s", path, je.text);
		goto out;
	}
	json_t *proc;
	if (process) {
		if (!(proc = json_load_file(process, 0, &je))) {
			urs_error("exec: --process %s: line %d: %s", process, je.line, je.text);
			goto out;
		}
		json_object_set_new(cfg, "process", proc);
	} else {
		proc = json_object_get(cfg, "process");
		if (!json_is_object(proc)) {
			proc = json_object();
			json_object_set_new(cfg, "process", proc);
		}
		json_t *args = json_array();
		for (int k = i + 1; k < argc; k++)
			json_array_append_new(args, json_string(argv[k]));
		json_object_set_new(proc, "args", args);
		json_t *env = json_object_get(proc, "env");
		if (!json_is_array(env)) {
			env = json_array();
			json_object_set_new(proc, "env", env);
		}
		for (int k = 0; k < envs.n; k++)
			if (set_env(env, envs.v[k]) < 0) {
				urs_error("exec: --env %s: expected KEY=VALUE", envs.v[k]);
				goto out;
			}
		if (cwd)
			json_object_set_new(proc, "cwd", json_string(cwd));
		if (user) {
			unsigned uid, gid = 0;
			int n = sscanf(user, "%u:%u", &uid, &gid);
			if (n < 1) {
				urs_error("exec: --user %s: expected UID[:GID]", user);
				goto out;
			}
			json_t *u = json_pack("{s:I, s:I}", "uid", (json_int_t) uid, "gid",
					      (json_int_t) (n == 2 ? gid : 0));
			json_object_set_new(proc, "user", u);
		}
		json_object_set_new(proc, "terminal", json_boolean(tty));
		if (nnp)
			json_object_set_new(proc, "noNewPrivileges", json_true());
		json_t *c = json_object_get(proc, "capabilities");
		for (int k = 0; c && k < caps.n; k++) {
			const char *sets[] = {"bounding", "effective", "permitted", "inheritable"};
			for (size_t j = 0; j < 4; j++) {
				json_t *a = json_object_get(c, sets[j]);
				if (json_is_array(a))
					json_array_append_new(a, json_string(caps.v[k]));
			}
		}
	}
	char *text = json_dumps(cfg, JSON_COMPACT);
	int r = text ? urs_spec_parse(text, strlen(text), &spec, &err) : -ENOMEM;
	free(text);
	if (r < 0) {
		urs_error("exec: %s", err.msg);
		goto out;
	}
	if (urs_seal_self_for(spec, &err) < 0) {
		urs_error("%s", err.msg);
		goto out;
	}
	if (spec->lnx && spec->lnx->seccomp &&
	    urs_seccomp_build(spec->lnx->seccomp, &filter, &err) < 0) {
		urs_error("%s", err.msg);
		goto out;
	}
	if (spec->process->terminal) {
		if (!console) {
			urs_error("exec: --tty needs --console-socket");
			goto out;
		}
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", console);
		console_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (console_fd < 0 ||
		    connect(console_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
			urs_error("exec: --console-socket %s: %s", console, strerror(errno));
			goto out;
		}
	}
	have_cg = st.cgroup && urs_cg_from_string(&cg, st.cgroup, NULL) == 0;
	struct urs_exec_opts eo = {
		.init_pid = st.pid,
		.init_start = st.pid_start,
		.process = spec->process,
		.cg = have_cg ? &cg : NULL,
		.console_fd = console_fd,
		.preserve_fds = preserve,
		.seccomp = filter,
		.load_seccomp = filter ? urs_seccomp_load_hook : NULL,
	};
	pid_t pid;
	if (urs_exec_spawn(&eo, &pid, &err) < 0) {
		urs_error("%s", err.msg);
		goto out;
	}
	if (pid_file && urs_write_pid_file(pid_file, pid, &err) < 0) {
		urs_error("%s", err.msg);
		goto out;
	}
	rc = detach ? 0 : urs_wait_forwarding(pid, pid);
out:
	if (console_fd >= 0)
		close(console_fd);
	if (have_cg)
		urs_cg_close(&cg);
	if (filter)
		seccomp_release(filter);
	urs_spec_free(spec);
	json_decref(cfg);
	urs_state_clear(&st);
	return rc;
}
