/*
 * tests/actors/test_hosted.c — a sandbox handed over to a host
 * (actors/hosted.h, actors/sup_hosted.c), the host's side on a real loop:
 * a real child process stands for the init; the adopted sandbox answers
 * its control socket, and when the child dies its wait status goes to
 * ROOT/ID/exit and everything of it is freed. A hand-over without its fds
 * or with a wrong magic is refused and closes what came. A sandbox's
 * netstack runs on the host's loop and goes with its init. ROOT/ID/hosted
 * is read as written, refused when malformed. The supervisor's late
 * hand-over (a lazy restore's, once paged) waits for its open control
 * connections, then goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "actors/control.h"
#include "actors/hosted.h"
#include "actors/sup_int.h"
#include "host/init.h"
#include "host/proc.h"
#include "host/state.h"
#include "runtime/loop.h"
#include "runtime/timer.h"

static char root[64];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_hosted_read(void **state)
{
	(void) state;
	char dir[128], path[160];
	snprintf(dir, sizeof(dir), "%s/r", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	pid_t pid = 0;
	uint64_t start = 0;
	assert_int_equal(urs_hosted_read(dir, &pid, &start), -ENOENT);
	snprintf(path, sizeof(path), "%s/%s", dir, URS_HOSTED_FILE);
	write_file(path, "1234 98765\n");
	assert_int_equal(urs_hosted_read(dir, &pid, &start), 0);
	assert_int_equal(pid, 1234);
	assert_int_equal(start, 98765);
	write_file(path, "nonsense\n");
	assert_int_equal(urs_hosted_read(dir, &pid, &start), -EINVAL);
	write_file(path, "-3 5\n");
	assert_int_equal(urs_hosted_read(dir, &pid, &start), -EINVAL);
}

/* a hand-over's fds: @a, @b, @c, then -1 */
static struct urs_adopt adopt_of(const struct urs_handover *h, int a, int b, int c)
{
	struct urs_adopt o = {.h = h, .root = root};
	for (int i = 0; i < URS_HANDOVER_FDS; i++)
		o.fds[i] = -1;
	o.fds[0] = a, o.fds[1] = b, o.fds[2] = c;
	return o;
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_refused(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct urs_handover h = {.magic = 0xdead, .init_pid = 1, .execd = 1};
	snprintf(h.id, sizeof(h.id), "x");
	struct urs_adopt o = adopt_of(&h, p[0], p[1], -1);
	struct urs_err err = {{0}};
	assert_int_equal(urs_sup_adopt(&loop, &o, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "not a hand-over"));
	assert_false(fd_open(p[0]) || fd_open(p[1])); /* taken, so closed */
	/* the right magic, the control socket missing */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	h.magic = URS_HANDOVER_MAGIC;
	o.fds[0] = p[0], o.fds[1] = -1, o.fds[2] = p[1], o.fds[3] = -1;
	assert_int_equal(urs_sup_adopt(&loop, &o, &err), -EBADF);
	assert_false(fd_open(p[0]) || fd_open(p[1]));
	assert_int_equal(urs_sup_adopted(), 0);
	urs_loop_fini(&loop);
}

#include "tests/lib/deadline.h" /* the waits below */

/* run the loop until @done says so, waiting for its completions; 10 s at most */
static bool run_until(struct urs_loop *loop, bool (*done)(void *), void *arg)
{
	deadline_arm(loop, 10);
	bool ok;
	while (!(ok = done(arg)) && !expired)
		assert_int_equal(urs_loop_run_once(loop, true), 0);
	deadline_off(loop);
	return ok;
}

static bool readable(void *arg)
{
	struct pollfd p = {.fd = *(int *) arg, .events = POLLIN};
	return poll(&p, 1, 0) == 1;
}

static bool none_adopted(void *arg)
{
	(void) arg;
	return urs_sup_adopted() == 0;
}

/* "ping" on ROOT/ID/ctl.sock, answered by the host */
static void ping(struct urs_loop *loop, const char *ctl)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ctl);
	int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *) &sa, sizeof(sa)), 0);
	assert_int_equal(send(c, "ping", 5, 0), 5);
	assert_true(run_until(loop, readable, &c));
	char buf[64] = "";
	assert_true(recv(c, buf, sizeof(buf) - 1, 0) > 0);
	assert_string_equal(buf, "ok");
	close(c);
}

/* ROOT/@id made (its path in @dir), and the control socket listening in
 * it, as a supervisor hands it over */
static int sandbox_dir(const char *id, char *dir, size_t len)
{
	snprintf(dir, len, "%s/%s", root, id);
	assert_int_equal(mkdir(dir, 0700), 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, CTL_NAME);
	int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *) &sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 8), 0);
	return lfd;
}

static void test_adopt_serve_exit(void **state)
{
	(void) state;
	char dir[128], ctl[160], path[160];
	int lfd = sandbox_dir("c1", dir, sizeof(dir));
	snprintf(ctl, sizeof(ctl), "%s/%s", dir, CTL_NAME);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves nothing */
		pause();
		_exit(0);
	}
	int pidfd = (int) syscall(SYS_pidfd_open, child, 0);
	assert_true(pidfd >= 0);

	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_handover h = {
		.magic = URS_HANDOVER_MAGIC, .init_pid = child, .started = 1, .execd = 1};
	snprintf(h.id, sizeof(h.id), "c1");
	struct urs_adopt o = adopt_of(&h, pidfd, lfd, -1);
	o.bundle = "/b";
	struct urs_err err = {{0}};
	assert_int_equal(urs_sup_adopt(&loop, &o, &err), 0);
	assert_int_equal(urs_sup_adopted(), 1);
	/* the same sandbox again (a second message, other fds): refused */
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct urs_adopt again = adopt_of(&h, p[0], p[1], -1);
	assert_int_equal(urs_sup_adopt(&loop, &again, &err), -EEXIST);
	assert_false(fd_open(p[0]) || fd_open(p[1]));
	assert_int_equal(urs_sup_adopted(), 1);
	ping(&loop, ctl);
	ping(&loop, ctl); /* one request per connection, and the next */

	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child); /* reaped, as a shim does */
	assert_true(run_until(&loop, none_adopted, NULL));
	snprintf(path, sizeof(path), "%s/exit", dir);
	char buf[32] = "";
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_int_equal(atoi(buf), SIGKILL); /* the wait status */
	assert_false(fd_open(pidfd) || fd_open(lfd));
	urs_loop_fini(&loop);
}

/* an ARP request for the gateway from the sandbox (no virtio-net header) */
static void arp_ask(int tap, const struct urs_net_cfg *c)
{
	static const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 0x42};
	uint8_t f[60] = {0};
	memset(f, 0xff, 6);
	memcpy(f + 6, mac, 6);
	f[12] = 0x08, f[13] = 0x06;
	uint8_t *a = f + 14;
	a[1] = 1, a[2] = 0x08, a[4] = 6, a[5] = 4, a[7] = 1; /* Ethernet, IPv4, request */
	memcpy(a + 8, mac, 6);
	memcpy(a + 14, &c->addr4, 4);
	memcpy(a + 24, &c->gw4, 4);
	assert_int_equal(send(tap, f, sizeof(f), 0), (ssize_t) sizeof(f));
}

/* the other end closed (a reset when frames it never read were left) */
static bool at_eof(void *arg)
{
	char b[8];
	ssize_t n = recv(*(int *) arg, b, sizeof(b), MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* a TCP socket listening on 127.0.0.1:@port (0: any), its port in *@port */
static int listener(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(*port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *) &a, sizeof(a)) < 0 || listen(fd, 8) < 0) {
		close(fd);
		return -1;
	}
	getsockname(fd, (struct sockaddr *) &a, &l);
	*port = ntohs(a.sin_port);
	return fd;
}

/* a handed-over sandbox with a user-mode network: its init, the
 * sandbox's end of its tap, its forward's host port */
struct netbox {
	pid_t child;
	int tap;
	uint16_t port;
};

static struct urs_handover *net_handover(pid_t child, const char *id)
{
	static struct urs_handover h; /* (7 KiB) */
	h = (struct urs_handover){.magic = URS_HANDOVER_MAGIC, .init_pid = child, .execd = 1};
	snprintf(h.id, sizeof(h.id), "%s", id);
	h.net = 1;
	urs_net_cfg_default(&h.net_part.cfg);
	h.net_part.cfg.vnet_hdr = false;
	urs_netopts_default(&h.net_part.o);
	h.net_part.o.mode = URS_NET_SANDBOX;
	h.net_part.o.n_fwd = 1;
	h.net_part.o.fwd[0] =
		(struct urs_netfwd){.proto = IPPROTO_TCP, .sandbox_port = 80, .fd = -1};
	return &h;
}

static void adopt_netbox(struct urs_loop *loop, const char *id, struct netbox *nb)
{
	char dir[128];
	int lfd = sandbox_dir(id, dir, sizeof(dir));
	nb->child = fork();
	assert_true(nb->child >= 0);
	if (nb->child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		syscall(SYS_close_range, 3, ~0u, 0); /* not another sandbox's tap */
		pause();
		_exit(0);
	}
	int pidfd = (int) syscall(SYS_pidfd_open, nb->child, 0);
	int tap[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, tap), 0);
	nb->port = 0;
	int fwd = listener(&nb->port);
	assert_true(pidfd >= 0 && fwd >= 0);
	struct urs_adopt o = adopt_of(net_handover(nb->child, id), pidfd, lfd, tap[0]);
	o.fds[3] = fwd;
	struct urs_err err = {{0}};
	assert_int_equal(urs_sup_adopt(loop, &o, &err), 0);
	nb->tap = tap[1];
}

/* the netstack answers an ARP request for its gateway */
static void arp_answered(struct urs_loop *loop, const struct netbox *nb)
{
	struct urs_net_cfg c;
	urs_net_cfg_default(&c);
	arp_ask(nb->tap, &c);
	assert_true(run_until(loop, readable, (void *) &nb->tap));
	uint8_t r[128];
	ssize_t n = recv(nb->tap, r, sizeof(r), 0);
	assert_true(n >= 42);
	assert_true(r[12] == 0x08 && r[13] == 0x06 && r[14 + 7] == 2); /* an ARP reply */
	assert_memory_equal(r + 14 + 14, &c.gw4, 4);
}

static bool port_free(uint16_t port)
{
	int l = listener(&port);
	if (l >= 0)
		close(l);
	return l >= 0;
}

/* the init ends: its netstack freed (the tap closed), its forward closed.
 * Frames come in after the init's end, before the loop sees either: the
 * stop and their reads' completions in one turn (the stop first) */
static void netbox_end(struct urs_loop *loop, struct netbox *nb)
{
	assert_false(port_free(nb->port)); /* held until now */
	kill(nb->child, SIGKILL);
	assert_int_equal(waitpid(nb->child, NULL, 0), nb->child);
	struct urs_net_cfg c;
	urs_net_cfg_default(&c);
	for (int i = 0; i < 8; i++)
		arp_ask(nb->tap, &c);
	assert_true(run_until(loop, at_eof, &nb->tap));
	assert_true(port_free(nb->port));
	close(nb->tap);
}

/* Sandboxes with a user-mode network: the host runs a netstack for each
 * on its one loop (the tap a socket pair here: it answers ARP for the
 * gateway), holds their port forwards, and when an init ends frees its
 * netstack, the forward's port free again and the tap closed, the other
 * still answering. A network part out of bounds is refused. */
static void test_adopt_net(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	/* more forwards than there can be: refused, what came closed */
	struct urs_handover *h = net_handover(1, "n0");
	h->net_part.o.n_fwd = URS_NET_MAX_FWD + 1;
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	struct urs_adopt bad = adopt_of(h, p[0], p[1], -1);
	struct urs_err err = {{0}};
	assert_int_equal(urs_sup_adopt(&loop, &bad, &err), -EPROTO);
	assert_false(fd_open(p[0]) || fd_open(p[1]));

	struct netbox a, b;
	adopt_netbox(&loop, "n1", &a);
	adopt_netbox(&loop, "n2", &b);
	arp_answered(&loop, &a);
	arp_answered(&loop, &b);
	netbox_end(&loop, &a);
	arp_answered(&loop, &b);
	netbox_end(&loop, &b);
	assert_true(run_until(&loop, none_adopted, NULL));
	urs_loop_fini(&loop);
}

static void start_done(void *arg, int err, const char *msg)
{
	(void) msg;
	assert_int_equal(err, 0);
	++*(int *) arg;
}

static bool is_one(void *arg)
{
	return *(int *) arg == 1;
}

/* a created sandbox @id (its init a paused child, its record's hooks
 * @hooks) adopted on @loop; *@init_end: the init's end of the sync socket */
static pid_t adopt_created(struct urs_loop *loop, const char *id, int hooks, int *init_end)
{
	char dir[128];
	int lfd = sandbox_dir(id, dir, sizeof(dir));
	int sync[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves nothing */
		/* sync[1], the test's, plays the init's end */
		close(sync[0]);
		close(sync[1]);
		pause();
		_exit(0);
	}
	int pidfd = (int) syscall(SYS_pidfd_open, child, 0);
	struct urs_state st = {.pid = child, .hooks = hooks, .exit_status = -1};
	snprintf(st.id, sizeof(st.id), "%s", id);
	assert_int_equal(urs_proc_start_time(child, &st.pid_start), 0);
	struct urs_err err = {{0}};
	assert_int_equal(urs_state_write(root, &st, &err), 0);
	struct urs_handover h = {.magic = URS_HANDOVER_MAGIC, .init_pid = child};
	snprintf(h.id, sizeof(h.id), "%s", id);
	struct urs_adopt o = adopt_of(&h, pidfd, lfd, sync[0]);
	assert_int_equal(urs_sup_adopt(loop, &o, &err), 0);
	*init_end = sync[1];
	return child;
}

static void end_child(struct urs_loop *loop, pid_t child)
{
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_true(run_until(loop, none_adopted, NULL));
}

/* `ursa start` in-process: the init's end of the sync socket gets START,
 * the record says started, and the start is done once the init's end
 * closes (its exec), not before; a second start, an unknown sandbox and one
 * with poststart hooks (or a record that cannot say) are refused or left
 * to the command */
static void test_hosted_start(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int init_end, done = 0;
	pid_t child = adopt_created(&loop, "s1", -1, &init_end);
	struct urs_err err = {{0}};
	assert_int_equal(urs_sup_hosted_start(root, "nope", start_done, &done, &err), -ENOENT);
	/* hooks unknown */
	assert_int_equal(urs_sup_hosted_start(root, "s1", start_done, &done, &err), -EAGAIN);
	struct urs_state st;
	assert_int_equal(urs_state_read(root, "s1", &st, &err), 0);
	st.hooks = 0;
	assert_int_equal(urs_state_write(root, &st, &err), 0);
	urs_state_clear(&st);
	assert_int_equal(urs_sup_hosted_start(root, "s1", start_done, &done, &err), 0);
	struct urs_sync_msg m;
	assert_int_equal(urs_sync_recv(init_end, &m), 0);
	assert_int_equal(m.type, URS_SYNC_START);
	struct urs_state back;
	assert_int_equal(urs_state_read(root, "s1", &back, &err), 0);
	assert_true(back.started);
	urs_state_clear(&back);
	assert_int_equal(urs_sup_hosted_start(root, "s1", start_done, &done, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "already running"));
	assert_int_equal(urs_loop_run_once(&loop, false), 0);
	assert_int_equal(done, 0); /* not exec'd yet */

	close(init_end); /* "exec'd" */
	assert_true(run_until(&loop, is_one, &done));
	end_child(&loop, child);
	assert_int_equal(done, 1); /* once */
	urs_loop_fini(&loop);
}

/* an init that ends before its exec ends the start too (once); one whose
 * record names startContainer hooks is done at once */
static void test_hosted_start_ends(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int init_end, done = 0;
	struct urs_err err = {{0}};
	pid_t child = adopt_created(&loop, "s2", 0, &init_end);
	assert_int_equal(urs_sup_hosted_start(root, "s2", start_done, &done, &err), 0);
	assert_int_equal(urs_loop_run_once(&loop, false), 0);
	assert_int_equal(done, 0);
	end_child(&loop, child); /* its end of the socket still open */
	assert_int_equal(done, 1);
	close(init_end);

	done = 0;
	child = adopt_created(&loop, "s3", 1 << URS_HOOK_START_CONTAINER, &init_end);
	assert_int_equal(urs_sup_hosted_start(root, "s3", start_done, &done, &err), 0);
	assert_int_equal(done, 1);
	end_child(&loop, child);
	assert_int_equal(done, 1);
	close(init_end);
	urs_loop_fini(&loop);
}

/* an init that neither execs nor ends: the start is done all the same
 * once its time (2 s) is up, as a control "start" is answered, and only
 * once; the init is still there, told to go */
static void test_hosted_start_expires(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	int init_end, done = 0;
	struct urs_err err = {{0}};
	pid_t child = adopt_created(&loop, "s4", 0, &init_end);
	assert_int_equal(urs_sup_hosted_start(root, "s4", start_done, &done, &err), 0);
	assert_int_equal(urs_loop_run_once(&loop, false), 0);
	assert_int_equal(done, 0);
	assert_true(run_until(&loop, is_one, &done)); /* the 2 s timer */
	assert_int_equal(kill(child, 0), 0);	      /* the init did not end */
	struct urs_sync_msg m;
	assert_int_equal(urs_sync_recv(init_end, &m), 0);
	assert_int_equal(m.type, URS_SYNC_START);
	end_child(&loop, child);
	assert_int_equal(done, 1);
	close(init_end);
	urs_loop_fini(&loop);
}

static int setup(void **state)
{
	(void) state;
	snprintf(root, sizeof(root), "/tmp/ursa-hosted.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	(void) state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- the late hand-over (a lazy restore's, once paged) ---- */

static struct urs_sup_args late_args;
static struct sup late_sup;

/* the supervisor's side, in a child of the test (its host is its parent,
 * as is_our_host wants): a control connection open when the hand-over is
 * asked for; 'd' on @told once it was asked (had it gone at once, the
 * process would have ended first) and the accept is still armed, not
 * cancelled (exit 15 if not); the connection closed once @go says so;
 * the loop turned until the hand-over ends the process (status 0) */
static void late_child(const char *dir, const char *host_path, int go, int told)
{
	struct sup *s = &late_sup;
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* (a failed test leaves nothing) */
	late_args.host_socket = host_path;
	late_args.state_dir = dir;
	late_args.id = "late";
	s->a = &late_args;
	s->lp = &s->loop;
	s->state_dfd = s->sync_fd = s->sig_fd = s->tapfd = -1;
	s->init_pid = getppid(); /* (any live process stands for the init) */
	s->pidfd = (int) syscall(SYS_pidfd_open, getppid(), 0);
	s->started = s->execd = true;
	s->ctl_fd = sup_ctl_listen(dir);
	if (s->pidfd < 0 || s->ctl_fd < 0 || urs_loop_init(s->lp, NULL) < 0)
		_exit(10);
	sup_accept_start(s);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, CTL_NAME);
	int cl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (cl < 0 || connect(cl, (struct sockaddr *) &sa, sizeof(sa)) < 0)
		_exit(11);
	while (s->conns == 0)
		if (urs_loop_run_once(s->lp, true) < 0)
			_exit(12);
	sup_hand_over_late(s);
	for (int i = 0; i < 8; i++) /* what that asked of the loop, done */
		if (urs_loop_run_once(s->lp, false) < 0)
			_exit(12);
	/* the accept armed still, no cancel asked: other clients are served */
	if (!urs_op_busy(&s->accept_op) || (s->accept_op.flags & URS_OPF_CANCEL))
		_exit(15);
	char c;
	if (write(told, "d", 1) != 1 || read(go, &c, 1) != 1)
		_exit(13);
	close(cl);
	for (;;)
		if (urs_loop_run_once(s->lp, true) < 0)
			_exit(14);
}

/* the hand-over message as a host receives it: its fds counted, closed */
static ssize_t recv_handover(int fd, struct urs_handover *h, int *nfd)
{
	char cbuf[CMSG_SPACE(sizeof(int) * URS_HANDOVER_FDS)];
	struct iovec iov = {.iov_base = h, .iov_len = sizeof(*h)};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	*nfd = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); n > 0 && c; c = CMSG_NXTHDR(&m, c)) {
		int k = (int) ((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++)
			close(((int *) (void *) CMSG_DATA(c))[i]);
		*nfd += k;
	}
	return n;
}

/* sup_hand_over_late: asked while a control connection is open, it waits
 * for that connection's end (nothing reaches the host meanwhile); then the
 * accept is cancelled, the sandbox goes to the host (its pidfd and control
 * listener, ROOT/ID/hosted naming the host) and the process ends there */
static void test_late_hand_over(void **state)
{
	(void) state;
	char dir[128], host_path[128];
	snprintf(dir, sizeof(dir), "%s/late", root);
	snprintf(host_path, sizeof(host_path), "%s/host.sock", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", host_path);
	int hl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(hl >= 0);
	assert_int_equal(bind(hl, (struct sockaddr *) &sa, sizeof(sa)), 0);
	assert_int_equal(listen(hl, 4), 0);
	int go[2], told[2];
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(told, O_CLOEXEC), 0);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0)
		late_child(dir, host_path, go[0], told[1]);
	close(go[0]);
	close(told[1]);
	/* asked, and still here; nothing came to the host while the
	 * connection was open (a hand-over then would be here first) */
	struct pollfd w[2] = {{.fd = told[0], .events = POLLIN}, {.fd = hl, .events = POLLIN}};
	assert_true(poll(w, 2, 30000) >= 1);
	assert_false(w[1].revents & POLLIN);
	char c = 0;
	assert_int_equal(read(told[0], &c, 1), 1);
	struct pollfd p = {.fd = hl, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_int_equal(write(go[1], "x", 1), 1);
	assert_int_equal(poll(&p, 1, 30000), 1);
	int conn = accept4(hl, NULL, NULL, SOCK_CLOEXEC);
	assert_true(conn >= 0);
	struct urs_handover h;
	int nfd = 0;
	assert_int_equal(recv_handover(conn, &h, &nfd), (ssize_t) sizeof(h));
	assert_int_equal(h.magic, URS_HANDOVER_MAGIC);
	assert_string_equal(h.id, "late");
	assert_int_equal(nfd, 2); /* the init's pidfd, the control listener */
	pid_t who = 0;
	uint64_t start = 0;
	assert_int_equal(urs_hosted_read(dir, &who, &start), 0);
	assert_int_equal(who, getpid());
	assert_int_equal(send(conn, "ok", 2, 0), 2);
	int st = -1;
	assert_int_equal(waitpid(kid, &st, 0), kid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	close(conn);
	close(hl);
	close(go[1]);
	close(told[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hosted_read),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_adopt_serve_exit),
		cmocka_unit_test(test_adopt_net),
		cmocka_unit_test(test_hosted_start),
		cmocka_unit_test(test_hosted_start_ends),
		cmocka_unit_test(test_hosted_start_expires),
		cmocka_unit_test(test_late_hand_over),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
