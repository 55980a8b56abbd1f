/*
 * tests/ckpt/timers.c — a workload holding a signalfd and timerfds across a
 * checkpoint: a signalfd for SIGUSR1 (blocked) with one SIGUSR1 pending, a
 * periodic timerfd (100 ms, non-blocking), a one-shot timerfd that expired
 * with its expiration unread, and a disarmed one. It prints READY (to OUT)
 * and waits for the file GO, then checks that the signal is read from the
 * signalfd, the one-shot has exactly one expiration to read, the periodic
 * one keeps its period (its next expiration at most one period away) and
 * fires, twice in a row, the disarmed one is disarmed, and the flags are
 * as they were; appends "OK <what>" / "FAIL <what>", then DONE. Nothing
 * is timed: expirations are waited for with poll() (WAIT_MS, far above a
 * period), never slept on. Static, so it runs in any rootfs.
 *   timers OUT GO
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 20000 /* for an expiration due within 100 ms */

static int out;

/* @fd readable (an expiration to read) within WAIT_MS; nothing read. */
static int ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, WAIT_MS) == 1 && (p.revents & POLLIN);
}

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

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	out = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644);
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	sigprocmask(SIG_BLOCK, &m, NULL);
	int sfd = signalfd(-1, &m, SFD_CLOEXEC);
	int per = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	int one = timerfd_create(CLOCK_BOOTTIME, TFD_CLOEXEC);
	int off = timerfd_create(CLOCK_REALTIME, 0);
	struct itimerspec p = {{0, 100000000}, {0, 100000000}}, o = {{0, 0}, {0, 1000000}};
	if (out < 0 || sfd < 0 || per < 0 || one < 0 || off < 0 || timerfd_settime(per, 0, &p, 0) ||
	    timerfd_settime(one, 0, &o, 0))
		return 4;
	kill(getpid(), SIGUSR1);
	if (!ready(one)) /* the one-shot expires, unread */
		return 5;
	say("READY\n");
	while (access(argv[2], F_OK))
		usleep(10000);
	struct signalfd_siginfo si;
	check(read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGUSR1,
	      "signalfd: the pending SIGUSR1");
	uint64_t n = 0;
	check(read(one, &n, 8) == 8 && n == 1, "one-shot timerfd: one unread expiration");
	struct itimerspec g;
	check(timerfd_gettime(one, &g) == 0 && !g.it_value.tv_sec && !g.it_value.tv_nsec,
	      "one-shot timerfd: disarmed after it");
	/* armed, its period kept, and its next expiration due within one
	 * period (a state, not a measurement: a restore that got the
	 * remaining time wrong shows here) */
	check(timerfd_gettime(per, &g) == 0 && g.it_interval.tv_nsec == 100000000 &&
		      !g.it_interval.tv_sec && (g.it_value.tv_sec || g.it_value.tv_nsec) &&
		      !g.it_value.tv_sec && g.it_value.tv_nsec <= 100000000,
	      "periodic timerfd: armed, 100 ms period, next expiration within it");
	check(fcntl(per, F_GETFL) & O_NONBLOCK, "periodic timerfd: non-blocking");
	/* pending ticks or the next one, then (all read) the one after */
	uint64_t n2 = 0;
	n = 0;
	int fired = ready(per) && read(per, &n, 8) == 8 && n >= 1;
	fired = fired && ready(per) && read(per, &n2, 8) == 8 && n2 >= 1;
	check(fired, "periodic timerfd: fires, and again after its ticks were read");
	check(timerfd_gettime(off, &g) == 0 && !g.it_value.tv_sec && !g.it_value.tv_nsec &&
		      !g.it_interval.tv_sec && !g.it_interval.tv_nsec,
	      "disarmed timerfd: disarmed");
	check(fcntl(sfd, F_GETFD) & FD_CLOEXEC, "signalfd: close-on-exec");
	say("DONE\n");
	return 0;
}
