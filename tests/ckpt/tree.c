/*
 * tests/ckpt/tree.c — a process-tree workload for checkpoint tests (static):
 * the parent (meant to be pid 1 of a new pid namespace) chdirs to argv[1],
 * sets umask 027, RLIMIT_NOFILE 200/300, blocks SIGUSR2, installs a SIGUSR1
 * handler, then forks two children (the first in its own process group).
 * Every process appends its counter "n\n" every 10 ms to p.txt / c1.txt /
 * c2.txt (the second child then drops to uid/gid 65534 and no capabilities).
 * A third child exits at once with status 7 and stays a zombie (nothing is
 * reaped) until SIGUSR1, on which the parent reaps it and appends
 * "usr1 n reaped=PID status=S" to usr1.txt. An ITIMER_REAL interval timer
 * makes the parent append "alarm n" to alarm.txt every 50 ms. After a
 * restore every file must continue its sequence and the signal state,
 * timer, limits, umask, cwd, credentials, pids and process groups must be
 * as they were.
 */
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_usr1, got_alrm;

static void on_alrm(int sig)
{
	(void) sig;
	got_alrm = 1;
}

static void on_usr1(int sig)
{
	(void) sig;
	got_usr1 = 1;
}

static int open_out(const char *name)
{
	return open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

static void loop(int fd, int sigfd, int alrmfd)
{
	for (unsigned long n = 1;; n++) {
		char line[96];
		int len = snprintf(line, sizeof(line), "%lu\n", n);
		if (write(fd, line, (size_t) len) != len)
			_exit(1);
		if (sigfd >= 0 && got_usr1) {
			got_usr1 = 0;
			int st = 0;
			pid_t z = waitpid(-1, &st, WNOHANG);
			len = snprintf(line, sizeof(line), "usr1 %lu reaped=%d status=%d\n", n,
				       (int) z, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			if (write(sigfd, line, (size_t) len) != len)
				_exit(1);
		}
		if (alrmfd >= 0 && got_alrm) {
			got_alrm = 0;
			len = snprintf(line, sizeof(line), "alarm %lu\n", n);
			if (write(alrmfd, line, (size_t) len) != len)
				_exit(1);
		}
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2 || chdir(argv[1]) < 0)
		return 2;
	syscall(SYS_close_range, 3, ~0u, 0);
	umask(027);
	struct rlimit rl = {200, 300};
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 1; i <= 2; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			if (i == 1) {
				setpgid(0, 0);
				loop(open_out("c1.txt"), -1, -1);
			}
			int fd = open_out("c2.txt");
			gid_t nobody = 65534;
			if (setgroups(1, &nobody) < 0 || setresgid(nobody, nobody, nobody) < 0 ||
			    setresuid(nobody, nobody, nobody) < 0)
				_exit(1);
			loop(fd, -1, -1);
		}
	}
	if (fork() == 0)
		_exit(7); /* the zombie */
	int sigfd = open("usr1.txt", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	/* an interval timer: SIGALRM every 50 ms appends "alarm n" to alarm.txt */
	struct sigaction sa2 = {.sa_handler = on_alrm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa2, NULL);
	struct itimerval itv = {{0, 50000}, {0, 50000}};
	if (setitimer(ITIMER_REAL, &itv, NULL) < 0)
		return 1;
	loop(open_out("p.txt"), sigfd, open_out("alarm.txt"));
}
