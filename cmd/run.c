/*
 * cmd/run.c — `ursa run`: create + start; in the foreground, wait for the
 * container, forward signals to it, delete it and exit with its status.
 */
#include <errno.h>
#include <stdbool.h>
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

static int wait_code(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Forward signals to @init and wait for it and for @sup (the same pid for
 * `ursa exec`'s process). The init is our child (the supervisor clones it
 * with CLONE_PARENT), so its status comes to us as runc's would; if the
 * supervisor dies while the init still runs, the sandbox has lost its
 * network and volumes: the init is killed and the failure said. An init
 * that is not ours (ECHILD) is reported by the supervisor's status.
 */
int urs_wait_forwarding(pid_t sup, pid_t init)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
	struct sigaction sa = {.sa_handler = forward};
	fwd_pid = init;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	int st, code = -1, sup_code = -1;
	bool init_done = false, sup_done = false;
	while (!init_done || !sup_done) {
		pid_t r = waitpid(init_done ? sup : -1, &st, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) { /* neither is our child (any more) */
			if (sup_done || errno != ECHILD || init_done)
				break;
			urs_error("waiting for pid %d: %s", (int) sup, strerror(errno));
			return 255;
		}
		if (r == init) {
			init_done = true;
			code = wait_code(st);
		}
		if (r == sup) {
			sup_done = true;
			sup_code = wait_code(st);
			if (init_done)
				break;
			int ist;
			pid_t w = waitpid(init, &ist, WNOHANG);
			if (w == init) {
				init_done = true;
				code = wait_code(ist);
			} else if (w < 0) { /* not ours: the supervisor said how it ended */
				break;
			} else if (WIFSIGNALED(st)) {
				urs_error(
					"the sandbox's supervisor (pid %d) died of signal %d (%s): "
					"stopping its container",
					(int) sup, WTERMSIG(st), sigabbrev_np(WTERMSIG(st)));
				kill(init, SIGKILL); /* our unreaped child: still it */
			}
		}
	}
	return code >= 0 ? code : sup_code >= 0 ? sup_code : 255;
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
	r = urs_bundle_prepare(&c, &o, &err);
	if (c.count_why)
		urs_debug("seccomp: denials not counted: %s", c.count_why);
	if (r < 0) {
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
