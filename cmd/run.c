/*
 * cmd/run.c — `ursa run`: create + start; in the foreground, wait for the
 * container, forward signals to it, delete it and exit with its status.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"

static volatile pid_t fwd_pid;

static void forward(int sig)
{
	if (fwd_pid > 0)
		kill(fwd_pid, sig);
}

int urs_wait_forwarding(pid_t sup, pid_t init);

int urs_wait_forwarding(pid_t sup, pid_t init)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
	struct sigaction sa = {.sa_handler = forward};
	fwd_pid = init;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	int st;
	while (waitpid(sup, &st, 0) < 0)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int cmd_run(int argc, char **argv)
{
	struct urs_create_args c = {0};
	int r = urs_create_parse("run", argc, argv, &c, true);
	if (r < 0)
		return r == -2 ? 0 : 1;
	struct urs_err err = {{0}};
	struct urs_sandbox_opts o;
	struct urs_state st;
	pid_t sup;
	if ((r = urs_bundle_prepare(&c, &o, &err)) < 0) {
		urs_error("%s", err.msg);
		urs_create_args_free(&c);
		return 1;
	}
	o.autostart = true;
	if (!c.detach && c.spec->process && c.spec->process->terminal && !c.console_socket)
		c.spec->process->terminal = false; /* the caller's terminal is the container's */
	if ((r = urs_sandbox_create(&o, &sup, &st, &err)) < 0) {
		urs_error("%s", err.msg);
		urs_create_args_free(&c);
		return 1;
	}
	urs_sandbox_hooks(G.root, &st, c.spec, URS_HOOK_POSTSTART, "running", urs_warn);
	int rc = 0;
	if (!c.detach) {
		rc = urs_wait_forwarding(sup, st.pid);
		if (!c.keep && urs_container_delete(c.id, true, &err) < 0)
			urs_error("%s", err.msg);
	}
	urs_state_clear(&st);
	urs_create_args_free(&c);
	return rc;
}
