/*
 * shim/main.c — containerd-shim-ursa-v2: containerd's shim v2 binary for
 * the runtime io.containerd.ursa.v2 (docs/shim.md).
 *
 *   -namespace NS -address ADDR -publish-binary BIN -id ID [-debug] start
 *	(cwd: the bundle) serve the task's group: print the socket's address
 *	and write BUNDLE/address. A container of a group whose shim runs
 *	(same io.kubernetes.cri.sandbox-id, or io.containerd.runc.v2.group)
 *	gets that shim's address; otherwise a new shim is forked, which
 *	serves the Task service until Shutdown finds no container left.
 *   -namespace NS -address ADDR -id ID -bundle DIR delete
 *	the shim is gone: delete the container with `ursa delete --force`,
 *	unmount its rootfs, print a DeleteResponse (pid, 137, now).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/common.h"
#include "runtime/io.h"
#include "runtime/mem.h"
#include "shim/backend_cli.h"
#include "shim/host.h"
#include "shim/events.h"
#include "shim/proto/task.pb-c.h"
#include "shim/rootfs.h"
#include "shim/task.h"
#include "state/sha256.h"

#define SOCK_DIR    "/run/containerd/s"
#define STATE_ROOT  "/run/containerd/ursa"
#define SERVE_LFD   3 /* "serve": the listener start made */
#define SERVE_READY 4 /* "serve": the pipe start reads the daemon's word from */
#define SETTLE_NS   (100 * 1000 * 1000ull) /* after a burst of requests */

extern char **environ;

struct args {
	const char *ns, *address, *publish, *id, *bundle, *sock, *action;
	int debug;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	static const char *const valued[] = {
		"namespace", "address", "publish-binary", "id", "bundle", "socket", NULL};
	const char **dst[] = {&a->ns, &a->address, &a->publish, &a->id, &a->bundle, &a->sock};
	*a = (struct args){.ns = "default", .address = ""};
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (s[0] != '-') {
			a->action = s;
			continue;
		}
		s += s[1] == '-' ? 2 : 1;
		const char *eq = strchr(s, '=');
		size_t len = eq ? (size_t) (eq - s) : strlen(s);
		if (len == 5 && !strncmp(s, "debug", 5)) {
			a->debug = 1;
			continue;
		}
		int k = 0;
		while (valued[k] && (strlen(valued[k]) != len || strncmp(valued[k], s, len)))
			k++;
		if (!valued[k] || (!eq && i + 1 >= argc)) {
			fprintf(stderr, "containerd-shim-ursa-v2: unknown or incomplete flag %s\n",
				argv[i]);
			return -EINVAL;
		}
		const char *v = eq ? eq + 1 : argv[++i];
		*dst[k] = v;
	}
	return 0;
}

/* the group a container is served with: its pod's, else its own id */
static void group_of(const char *id, char *group, size_t len)
{
	static const char *const labels[] = {"io.containerd.runc.v2.group",
					     "io.kubernetes.cri.sandbox-id", NULL};
	snprintf(group, len, "%s", id);
	json_t *j = json_load_file("config.json", 0, NULL);
	json_t *an = json_object_get(j, "annotations");
	for (int i = 0; labels[i]; i++) {
		const char *v = json_string_value(json_object_get(an, labels[i]));
		if (v && *v) {
			snprintf(group, len, "%s", v);
			break;
		}
	}
	json_decref(j);
}

/* /run/containerd/s/HEX: sha256 of "ursa:ADDRESS/NS/GROUP" */
static void socket_path(const struct args *a, const char *group, char *path, size_t len)
{
	struct urs_sha256 h;
	uint8_t d[32];
	urs_sha256_init(&h);
	urs_sha256_update(&h, "ursa:", 5);
	urs_sha256_update(&h, a->address, strlen(a->address));
	urs_sha256_update(&h, "/", 1);
	urs_sha256_update(&h, a->ns, strlen(a->ns));
	urs_sha256_update(&h, "/", 1);
	urs_sha256_update(&h, group, strlen(group));
	urs_sha256_final(&h, d);
	int o = snprintf(path, len, "%s/", SOCK_DIR);
	for (int i = 0; i < 32 && o + 2 < (int) len; i++)
		o += snprintf(path + o, len - (size_t) o, "%02x", d[i]);
}

static int listen_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 ||
	    listen(fd, 64) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* whether a live shim serves @path. A connect alone can succeed for a shim
 * just killed: its io_uring, torn down after the process is gone, still
 * holds the listening socket for a moment. So the listener's process (the
 * daemon listens again when it starts, which makes it the socket's peer)
 * must exist and not be a zombie. */
static bool shim_alive(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
		return false;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid <= 0)
		return true; /* unknown: taken as alive (the safe side) */
	char p[64], st[512];
	snprintf(p, sizeof(p), "/proc/%d/stat", cr.pid);
	_cleanup_close_ int sfd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n = sfd < 0 ? -1 : read(sfd, st, sizeof(st) - 1);
	if (n <= 0)
		return false; /* gone */
	st[n] = 0;
	const char *e = strrchr(st, ')');
	return !(e && e[1] == ' ' && (e[2] == 'Z' || e[2] == 'X'));
}

/* the shim's sockets and ursa's state live in @dir: it must be a directory
 * of ours that nobody else may write (else another user could plant a
 * socket the shim would take for its own, or swap a console socket) */
static bool private_dir(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	    !(st.st_mode & 022))
		return true;
	fprintf(stderr,
		"containerd-shim-ursa-v2: %s: not a directory of uid %u that only it may "
		"write\n",
		dir, (unsigned) geteuid());
	return false;
}

/* BUNDLE/address, written whole (a temporary file renamed) */
static int write_address(const char *addr)
{
	return urs_write_file_atomic("address", ".address", addr, strlen(addr), 0644);
}

/* -- serving ------------------------------------------------------------- */

struct shim {
	struct urs_loop loop;
	struct shim_reaper reaper;
	struct shim_events ev;
	struct shim_task task;
	struct shim_cli cli;
	struct shim_host host; /* its pod's sandboxes, handed over (shim/host.h) */
	struct ttrpc_server *srv;
	struct urs_mem_settler settle; /* memory handed back after each burst */
	char sock[108];		       /* its path while it is this shim's */
};

/* after each request: settle once the burst is over (runtime/mem.h); an
 * idle pod keeps only what its sandboxes need */
static void settle_soon(void *arg)
{
	struct shim *s = arg;
	urs_mem_settle_soon(&s->loop, &s->settle);
}

/* Shutdown found no container: the socket's name goes first (a start for
 * the group from now on makes a new shim, whose socket must not be the one
 * this shim unlinks on its way out), then the server */
static void on_empty(void *arg)
{
	struct shim *s = arg;
	if (!s->srv)
		return;
	unlink(s->sock);
	s->sock[0] = 0;
	urs_mem_settle_off(&s->loop, &s->settle);
	shim_host_close(&s->host);
	ttrpc_server_close(s->srv);
	s->srv = NULL;
}

/* @ready: told "" when the shim serves, or why it cannot (then closed) */
static int serve(const struct args *a, int lfd, const char *sock, int ready)
{
	static struct shim s;
	char root[PATH_MAX];
	s.host.fd = -1;
	snprintf(root, sizeof(root), "%s/%s", STATE_ROOT, a->ns);
	/* listening again makes this process the socket's peer (SO_PEERCRED):
	 * shim_alive() asks for it */
	int r = listen(lfd, 64) < 0 ? -errno : 0;
	if (r == 0)
		r = urs_loop_init(&s.loop, NULL);
	if (r == 0)
		r = shim_reaper_init(&s.reaper, &s.loop);
	if (r == 0)
		r = shim_events_init(&s.ev, &s.loop, getenv("TTRPC_ADDRESS"), a->ns);
	s.task = (struct shim_task){.loop = &s.loop,
				    .reaper = &s.reaper,
				    .be = &shim_cli_backend,
				    .be_arg = &s.cli,
				    .publish = shim_events_publish,
				    .pub_arg = &s.ev,
				    .run_dir = STATE_ROOT,
				    .ns = a->ns,
				    .on_empty = on_empty,
				    .empty_arg = &s};
	if (r == 0)
		r = shim_cli_init(&s.cli, &s.task, NULL, root);
	char host[sizeof(s.cli.host_sock)];
	if (r == 0 && snprintf(host, sizeof(host), "%s.h", sock) < (int) sizeof(host) &&
	    shim_host_init(&s.host, &s.loop, &s.task, s.cli.root, host) == 0)
		snprintf(s.cli.host_sock, sizeof(s.cli.host_sock), "%s", host);
	/* else: no hand-over, each sandbox keeps its supervisor process */
	if (r == 0 && !(s.srv = ttrpc_server_new(&s.loop, lfd, shim_task_methods, &s.task)))
		r = -errno;
	if (r < 0) {
		dprintf(ready, "containerd-shim-ursa-v2: %s", strerror(-r));
		shim_host_close(&s.host);
		close(ready);
		unlink(sock);
		return 1;
	}
	s.settle.delay_ns = SETTLE_NS;
	ttrpc_server_on_handled(s.srv, settle_soon, &s);
	close(ready); /* serving: start may print the address */
	snprintf(s.sock, sizeof(s.sock), "%s", sock);
	r = urs_loop_run(&s.loop);
	if (s.sock[0]) /* ended otherwise than by Shutdown */
		unlink(s.sock);
	shim_host_close(&s.host);
	shim_events_fini(&s.ev);
	shim_task_fini(&s.task);
	shim_reaper_fini(&s.reaper);
	return r < 0 ? 1 : 0;
}

/* a process's oom_score_adj, or 0 */
static int oom_score_of(pid_t pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/oom_score_adj", pid);
	FILE *f = fopen(p, "re");
	int v = 0;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* the shim's own score; the containers it makes inherit it (runc's have
 * containerd's + 1 this way) */
static void set_oom_score(int v)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		dprintf(fd, "%d", v);
		close(fd);
	}
}

/* the daemon: its own session, stdio to /dev/null and the bundle's log FIFO */
static void daemonize(void)
{
	setsid();
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	int log = open("log", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	dup2(nul, 0);
	dup2(nul, 1);
	dup2(log >= 0 ? log : nul, 2);
	if (log > 2)
		close(log);
	if (nul > 2)
		close(nul);
	if (chdir("/") < 0)
		_exit(1);
	signal(SIGPIPE, SIG_IGN);
}

/* The daemon runs as a fresh image of this program ("serve", its listener
 * as fd 3 and the word to start as fd 4): a forked start process would hand
 * it the heap, stack and data pages start touched, which every idle pod
 * would keep (bench/RESULTS.md, density). Returns only if exec failed: then
 * *@lfd and *@ready are the fds to serve with from here, close-on-exec,
 * and no other copy of them is open. */
static void reexec(const struct args *a, int *lfd, const char *sock, int *ready)
{
	/* above both places first (either may sit on the other's), then in
	 * place: dup2's copies have no FD_CLOEXEC, the originals close */
	int l = fcntl(*lfd, F_DUPFD_CLOEXEC, SERVE_READY + 1);
	int r = fcntl(*ready, F_DUPFD_CLOEXEC, SERVE_READY + 1);
	if (l < 0 || r < 0) { /* the originals are as they were */
		urs_closep(&l);
		urs_closep(&r);
		return;
	}
	/* containerd's flags again, as runc's shim keeps them: ps shows whose */
	char *const argv[] = {"containerd-shim-ursa-v2",
			      "-namespace",
			      (char *) a->ns,
			      "-id",
			      (char *) (a->id ? a->id : ""),
			      "-address",
			      (char *) a->address,
			      "-socket",
			      (char *) sock,
			      "serve",
			      NULL};
	if (dup2(l, SERVE_LFD) >= 0 && dup2(r, SERVE_READY) >= 0)
		execve("/proc/self/exe", argv, environ);
	/* serve with the copies: fds 3 and 4 are either the originals or
	 * copies without close-on-exec that every child would inherit */
	if (*lfd != SERVE_LFD && *lfd != SERVE_READY)
		close(*lfd);
	if (*ready != SERVE_LFD && *ready != SERVE_READY)
		close(*ready);
	close(SERVE_LFD);
	close(SERVE_READY);
	*lfd = l;
	*ready = r;
}

/* "serve": what start's daemon runs (reexec); refused unless fd 3 is a
 * socket listening at -socket and fd 4 a pipe (start's word goes there) */
static int do_serve(const struct args *a)
{
	int on = 0;
	socklen_t len = sizeof(on);
	struct stat st;
	struct sockaddr_un sa = {0};
	socklen_t sl = sizeof(sa);
	bool is_pipe = fstat(SERVE_READY, &st) == 0 && S_ISFIFO(st.st_mode);
	if (!a->sock || !is_pipe ||
	    getsockopt(SERVE_LFD, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0 || !on ||
	    getsockname(SERVE_LFD, (struct sockaddr *) &sa, &sl) < 0 || sa.sun_family != AF_UNIX ||
	    strncmp(sa.sun_path, a->sock, sizeof(sa.sun_path))) {
		const char *why = "containerd-shim-ursa-v2: serve is started by start only";
		if (is_pipe)
			dprintf(SERVE_READY, "%s", why);
		fprintf(stderr, "%s\n", why);
		return 2;
	}
	prctl(PR_SET_NAME, "containerd-shim"); /* as exec'd by containerd, not "exe" */
	fcntl(SERVE_LFD, F_SETFD, FD_CLOEXEC);
	fcntl(SERVE_READY, F_SETFD, FD_CLOEXEC);
	mallopt(M_MMAP_THRESHOLD, 8192);
	mallopt(M_TOP_PAD, 0);
	return serve(a, SERVE_LFD, a->sock, SERVE_READY);
}

static int do_start(const struct args *a)
{
	char group[256], sock[108], addr[128];
	group_of(a->id, group, sizeof(group));
	socket_path(a, group, sock, sizeof(sock));
	snprintf(addr, sizeof(addr), "unix://%s", sock);
	mkdir("/run/containerd", 0711);
	mkdir(SOCK_DIR, 0700);
	mkdir(STATE_ROOT, 0700);
	if (!private_dir(SOCK_DIR) || !private_dir(STATE_ROOT))
		return 1;
	int lfd = listen_at(sock);
	if (lfd == -EADDRINUSE && shim_alive(sock)) {
		/* the group's shim runs: it serves this container too */
		if (write_address(addr) < 0)
			return 1;
		fputs(addr, stdout);
		return 0;
	}
	if (lfd == -EADDRINUSE) { /* a dead shim's socket */
		unlink(sock);
		lfd = listen_at(sock);
	}
	if (lfd < 0) {
		fprintf(stderr, "containerd-shim-ursa-v2: listen on %s: %s\n", sock,
			strerror(-lfd));
		return 1;
	}
	int oom = oom_score_of(getppid()); /* containerd's */
	fflush(stdout);
	int rp[2];
	if (pipe2(rp, O_CLOEXEC) < 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(rp[0]);
		set_oom_score(oom < 1000 ? oom + 1
					 : 1000); /* as containerd's shims: just above it */
		daemonize();
		int ready = rp[1];
		reexec(a, &lfd, sock, &ready);
		_exit(serve(a, lfd, sock, ready)); /* could not: serve from here */
	}
	close(lfd);
	close(rp[1]);
	/* the daemon's word: nothing (it serves) or why it could not start */
	char why[256];
	ssize_t n = read(rp[0], why, sizeof(why) - 1);
	close(rp[0]);
	if (n > 0) {
		why[n] = 0;
		fprintf(stderr, "%s\n", why);
		return 1;
	}
	if (write_address(addr) < 0) {
		kill(pid, SIGKILL);
		unlink(sock);
		return 1;
	}
	fputs(addr, stdout);
	return 0;
}

/* -- delete -------------------------------------------------------------- */

/* the socket BUNDLE/address names, if no shim answers on it any more (a
 * killed shim leaves it; a live one serves the rest of its pod) */
static void remove_dead_socket(const char *bundle)
{
	char p[PATH_MAX], addr[256] = "";
	snprintf(p, sizeof(p), "%s/address", bundle);
	FILE *f = fopen(p, "re");
	if (!f)
		return;
	if (!fgets(addr, sizeof(addr), f))
		addr[0] = 0;
	fclose(f);
	const char *path = !strncmp(addr, "unix://", 7) ? addr + 7 : NULL;
	if (path && !strncmp(path, SOCK_DIR "/", strlen(SOCK_DIR) + 1) && !shim_alive(path)) {
		unlink(path);
		snprintf(p, sizeof(p), "%s.h", path); /* its hand-over socket (shim/host.h) */
		unlink(p);
	}
}

static int do_delete(const struct args *a)
{
	char bundle[PATH_MAX], root[PATH_MAX], ursa[PATH_MAX], self[PATH_MAX];
	snprintf(bundle, sizeof(bundle), "%s", a->bundle ? a->bundle : ".");
	snprintf(root, sizeof(root), "%s/%s", STATE_ROOT, a->ns);
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(ursa, sizeof(ursa), "%s/ursa", self);
	const char *argv[] = {ursa, "--root", root, "delete", "--force", a->id, NULL};
	pid_t pid;
	int status;
	/* stdout is the DeleteResponse's alone: ursa's words go to stderr */
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	if (posix_spawn(&pid, ursa, &fa, NULL, (char *const *) argv, environ) == 0)
		waitpid(pid, &status, 0);
	posix_spawn_file_actions_destroy(&fa);
	shim_rootfs_umount(bundle);
	remove_dead_socket(bundle);
	char pidf[PATH_MAX];
	snprintf(pidf, sizeof(pidf), "%s/init.pid", bundle);
	long ipid = 0;
	FILE *f = fopen(pidf, "re");
	if (f) {
		if (fscanf(f, "%ld", &ipid) != 1)
			ipid = 0;
		fclose(f);
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	ts.seconds = now.tv_sec;
	ts.nanos = (int32_t) now.tv_nsec;
	Containerd__Task__V2__DeleteResponse r = CONTAINERD__TASK__V2__DELETE_RESPONSE__INIT;
	r.pid = ipid > 0 && ipid <= INT_MAX ? (uint32_t) ipid : 0;
	r.exit_status = 128 + SIGKILL;
	r.exited_at = &ts;
	uint8_t out[256];
	size_t len = containerd__task__v2__delete_response__pack(&r, out);
	return urs_write_all(1, out, len) < 0;
}

int main(int argc, char **argv)
{
	struct args a;
	if (parse_args(argc, argv, &a) < 0)
		return 2;
	if (a.action && !strcmp(a.action, "start") && a.id)
		return do_start(&a);
	if (a.action && !strcmp(a.action, "delete") && a.id)
		return do_delete(&a);
	if (a.action && !strcmp(a.action, "serve"))
		return do_serve(&a);
	fprintf(stderr, "usage: containerd-shim-ursa-v2 -namespace NS -address ADDR "
			"-publish-binary BIN -id ID [-bundle DIR] [-debug] start|delete\n"
			"(started by containerd for the runtime io.containerd.ursa.v2)\n");
	return 2;
}
