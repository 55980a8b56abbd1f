/*
 * cmd/tty.c — `ursa run` with process.terminal and no --console-socket, as
 * runc does it: we are the console socket's listener ourselves, take the pty
 * master, put our own terminal in raw mode and relay bytes both ways (with
 * window size changes) until the container's side closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "cmd/tty.h"
#include "host/fdpass.h"

int urs_tty_recv_master(int sock)
{
	char name[128];
	int fd;
	ssize_t n = urs_recv_fd(sock, name, sizeof(name), &fd);
	if (n < 0)
		return (int) n;
	return fd >= 0 ? fd : -EBADMSG;
}

static volatile sig_atomic_t winch;

static void on_winch(int sig)
{
	(void) sig;
	winch = 1;
}

static void copy_winsize(int master)
{
	struct winsize ws;
	if (ioctl(0, TIOCGWINSZ, &ws) == 0)
		ioctl(master, TIOCSWINSZ, &ws);
}

static int pump(int from, int to)
{
	char buf[16384];
	ssize_t n = read(from, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 && (errno == EINTR || errno == EAGAIN) ? 0 : -1;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t) (n - off));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		off += w;
	}
	return 0;
}

void urs_tty_relay(int master)
{
	struct termios saved;
	bool raw = isatty(0) && tcgetattr(0, &saved) == 0;
	if (raw) {
		struct termios t = saved;
		cfmakeraw(&t);
		tcsetattr(0, TCSANOW, &t);
		copy_winsize(master);
	}
	struct sigaction sa = {.sa_handler = on_winch};
	sigaction(SIGWINCH, &sa, NULL);
	bool in_open = true;
	for (;;) {
		if (winch) {
			winch = 0;
			copy_winsize(master);
		}
		struct pollfd p[2] = {{.fd = master, .events = POLLIN},
				      {.fd = in_open ? 0 : -1, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			if (pump(master, 1) < 0)
				break; /* EIO: the container side is closed */
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
			if (pump(0, master) < 0)
				in_open = false;
	}
	if (raw)
		tcsetattr(0, TCSANOW, &saved);
}
