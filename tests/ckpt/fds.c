/*
 * tests/ckpt/fds.c — a workload holding one of each fd kind the checkpoint
 * saves beyond files: a pipe with unread data, a FIFO with unread data, an
 * eventfd with a counter and a semaphore eventfd, an epoll set over a pipe,
 * the eventfd and a listening TCP socket, a socketpair with bytes queued both
 * ways (on one end from two writers: the parent and its child), seqpacket
 * and datagram socketpairs with messages queued (one of them empty), and a
 * child sharing a pipe and a socketpair with the parent (fds inherited
 * across fork). It prints READY (to OUT), waits until the file GO
 * exists, then checks everything and appends "OK <what>" or "FAIL <what>"
 * lines, then "DONE" (each process). Static, so it runs in any rootfs.
 *   fds OUT FIFO GO PORT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

static int out;

static void say(const char *fmt, ...)
{
	char b[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	if (write(out, b, (size_t) n) != n)
		_exit(3);
}

static void check(int ok, const char *what)
{
	say("%s %s\n", ok ? "OK" : "FAIL", what);
}

/* read exactly the bytes of s (non-blocking fds: what is there now) */
static int read_is(int fd, const char *s)
{
	char b[256] = {0};
	size_t want = strlen(s), got = 0;
	for (int tries = 0; got < want && tries < 100; tries++) {
		ssize_t n = read(fd, b + got, want - got);
		if (n > 0)
			got += (size_t) n;
		else if (n == 0)
			break;
		else if (errno == EAGAIN) {
			struct timespec ts = {0, 10000000};
			nanosleep(&ts, NULL);
		} else
			break;
	}
	return got == want && !memcmp(b, s, want);
}

static void wait_go(const char *go)
{
	struct stat st;
	while (stat(go, &st) < 0) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: fds OUT FIFO GO PORT\n");
		return 2;
	}
	/* glibc registered a robust-futex list head at start: it must survive */
	void *rh0 = NULL, *rh = NULL;
	size_t rl0 = 0, rl = 0;
	syscall(SYS_get_robust_list, 0, &rh0, &rl0);
	out = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (out < 0)
		return 2;
	int p1[2], p2[2], pc[2], sv[2], s2[2], q[2], g[2];
	if (pipe2(p1, O_NONBLOCK) || pipe2(p2, O_NONBLOCK) || pipe(pc) ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || socketpair(AF_UNIX, SOCK_STREAM, 0, s2) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, q) || socketpair(AF_UNIX, SOCK_DGRAM, 0, g))
		return 2;
	if (write(q[1], "m1", 2) != 2 || write(q[1], "m22", 3) != 3 || write(g[1], "d1", 2) != 2 ||
	    write(g[1], "", 0) != 0 || write(g[1], "d333", 4) != 4)
		return 2;
	if (write(p1[1], "pipe-data-123", 13) != 13 || write(p2[1], "p2", 2) != 2 ||
	    write(pc[1], "to-child", 8) != 8 || write(sv[0], "sp-to-b", 7) != 7 ||
	    write(sv[1], "sp-to-a", 7) != 7 || write(s2[0], "from-parent", 11) != 11)
		return 2;
	unlink(argv[2]);
	if (mkfifo(argv[2], 0600))
		return 2;
	int fr = open(argv[2], O_RDONLY | O_NONBLOCK), fw = open(argv[2], O_WRONLY | O_NONBLOCK);
	if (fr < 0 || fw < 0 || write(fw, "fifo-data", 9) != 9)
		return 2;
	int ev = eventfd(0, EFD_NONBLOCK), sem = eventfd(0, EFD_NONBLOCK | EFD_SEMAPHORE);
	uint64_t v = 42, v3 = 3;
	if (ev < 0 || sem < 0 || write(ev, &v, 8) != 8 || write(sem, &v3, 8) != 8)
		return 2;
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t) atoi(argv[4]))};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *) &sa, sizeof(sa)) || listen(ls, 7))
		return 2;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e1 = {.events = EPOLLIN, .data.u64 = 0x1111222233334444ull};
	struct epoll_event e2 = {.events = EPOLLIN, .data.u64 = 7};
	struct epoll_event e3 = {.events = EPOLLIN | EPOLLET, .data.u64 = 9};
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p2[0], &e1) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &e2) || epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e3))
		return 2;
	pid_t child = fork();
	if (child == 0) {
		close(pc[1]);
		close(s2[0]);
		if (write(s2[1], "from-child", 10) != 10 || write(sv[1], "+kid", 4) != 4)
			_exit(2);
		say("READY child\n");
		wait_go(argv[3]);
		check(read_is(pc[0], "to-child"), "child: pipe from the parent");
		check(read_is(s2[1], "from-parent"), "child: socketpair from the parent");
		say("DONE child\n");
		_exit(0);
	}
	close(pc[0]);
	close(s2[1]);
	say("READY parent\n");
	wait_go(argv[3]);
	check(syscall(SYS_get_robust_list, 0, &rh, &rl) == 0 && rh0 && rh == rh0 && rl == rl0,
	      "robust list registration");
	check(read_is(p1[0], "pipe-data-123"), "pipe data");
	check(write(p1[1], "more", 4) == 4 && read_is(p1[0], "more"), "pipe still a pipe");
	check(read_is(fr, "fifo-data"), "fifo data");
	uint64_t got = 0;
	check(read(ev, &got, 8) == 8 && got == 42, "eventfd counter 42");
	check(read(sem, &got, 8) == 8 && got == 1 && read(sem, &got, 8) == 8 && got == 1,
	      "semaphore eventfd");
	check(read_is(sv[0], "sp-to-a+kid") && read_is(sv[1], "sp-to-b"),
	      "socketpair queued data (two writers)");
	char m[16];
	check(recv(q[0], m, sizeof(m), MSG_DONTWAIT) == 2 && !memcmp(m, "m1", 2) &&
		      recv(q[0], m, sizeof(m), MSG_DONTWAIT) == 3 && !memcmp(m, "m22", 3) &&
		      recv(q[0], m, sizeof(m), MSG_DONTWAIT) < 0,
	      "seqpacket messages");
	check(recv(g[0], m, sizeof(m), MSG_DONTWAIT) == 2 && !memcmp(m, "d1", 2) &&
		      recv(g[0], m, sizeof(m), MSG_DONTWAIT) == 0 &&
		      recv(g[0], m, sizeof(m), MSG_DONTWAIT) == 4 && !memcmp(m, "d333", 4),
	      "datagram messages (one empty)");
	check(read_is(s2[0], "from-child"), "socketpair from the child");
	struct epoll_event evs[8];
	int n = epoll_wait(ep, evs, 8, 0);
	int saw_pipe = 0, saw_ls = 0;
	for (int k = 0; k < n; k++) {
		saw_pipe |= evs[k].data.u64 == 0x1111222233334444ull;
		saw_ls |= evs[k].data.u64 == 7;
	}
	/* the eventfd was read above: not ready; the pipe p2 has data: ready */
	check(n == 1 && saw_pipe, "epoll: only the pipe is ready");
	int cs = socket(AF_INET, SOCK_STREAM, 0);
	int cr = connect(cs, (struct sockaddr *) &sa, sizeof(sa));
	n = epoll_wait(ep, evs, 8, 2000);
	for (int k = 0; k < n; k++)
		saw_ls |= evs[k].data.u64 == 7;
	int as = accept(ls, NULL, NULL);
	check(cr == 0 && saw_ls && as >= 0, "listening socket: epoll reports a connection, accept");
	int status = 0;
	waitpid(child, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited 0");
	say("DONE parent\n");
	return 0; /* the FIFO stays: a restore of this image reopens it */
}
