/*
 * tests/ckpt/sigstate.c — a workload whose signal state a dump must leave
 * exactly as it was (tests/ckpt/sigstate.sh): the dumper injects syscalls,
 * and in one-stop mode each one ends in a forced SIGTRAP, which would reset
 * a caught, ignored or blocked SIGTRAP's handler and unblock it. MODE sets
 * SIGTRAP up as:
 *   handler   caught (the handler writes "TRAPPED" to stdout)
 *   ignore    SIG_IGN
 *   block     default, blocked in both threads
 *   pending   caught, blocked, and one SIGTRAP queued (raise)
 *   default   default, unblocked
 * In every mode SIGUSR1 is caught, SIGPIPE ignored, SIGUSR2 blocked with one
 * queued, and a second thread blocks SIGINT besides. Prints READY, then
 * both threads wait (pause) until killed; the test compares their
 * /proc/PID/task/TID/status signal lines before and after a dump.
 *   sigstate MODE
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_trap(int sig)
{
	(void) sig;
	(void) !write(1, "TRAPPED\n", 8);
}

static void on_usr1(int sig)
{
	(void) sig;
	(void) !write(1, "USR1\n", 5);
}

static void *thread(void *arg)
{
	(void) arg;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	const char *m = argv[1];
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	if (!strcmp(m, "block") || !strcmp(m, "pending"))
		sigaddset(&s, SIGTRAP);
	sigprocmask(SIG_BLOCK, &s, NULL);
	if (!strcmp(m, "handler") || !strcmp(m, "pending")) {
		sa.sa_handler = on_trap;
		sa.sa_flags = SA_RESTART | SA_NODEFER;
		sigaction(SIGTRAP, &sa, NULL);
	} else if (!strcmp(m, "ignore")) {
		signal(SIGTRAP, SIG_IGN);
	} else if (strcmp(m, "block") && strcmp(m, "default")) {
		return 2;
	}
	raise(SIGUSR2);
	if (!strcmp(m, "pending"))
		raise(SIGTRAP);
	pthread_t t;
	if (pthread_create(&t, NULL, thread, NULL))
		return 1;
	(void) !write(1, "READY\n", 6);
	for (;;)
		pause();
}
