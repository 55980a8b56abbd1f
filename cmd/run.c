/*
 * cmd/run.c — `ursa run`: create + start; in the foreground, wait for the
 * container, forward signals to it, delete it and exit with its status.
 */
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <string.h>
#include <sys/wait.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "cmd/tty.h"

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
	pid_t r;
	while ((r = waitpid(sup, &st, 0)) < 0 && errno == EINTR)
		;
	if (r < 0) { /* not our child (any more): nothing to report but failure */
		urs_error("waiting for pid %d: %s", (int) sup, strerror(errno));
		return 255;
	}
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
	int relay[2] = {-1, -1};
	if (c.spec->process && c.spec->process->terminal && !c.console_socket) {
		/* like runc: we are the console socket, and relay the pty */
		if (c.detach) {
			urs_error("run: process.terminal with --detach needs --console-socket");
			urs_create_args_free(&c);
			return 1;
		}
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, relay) < 0) {
			urs_error("run: socketpair: %s", strerror(errno));
			urs_create_args_free(&c);
			return 1;
		}
		o.use_console_fd = true;
		o.console_fd = relay[1];
	}
	r = urs_sandbox_create(&o, &sup, &st, &err);
	if (relay[1] >= 0)
		close(relay[1]);
	if (r < 0) {
		urs_error("%s", err.msg);
		if (relay[0] >= 0)
			close(relay[0]);
		urs_create_args_free(&c);
		return 1;
	}
	if (relay[0] >= 0) {
		int master = urs_tty_recv_master(relay[0]);
		close(relay[0]);
		if (master >= 0) {
			urs_tty_relay(master);
			close(master);
		}
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
