/*
 * actors/sup_crash.c — the supervisor's last word when it dies of a fault
 * (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS): one line in ROOT/ID/crash
 * and, when `ursa` was given --log, the same line appended there as an
 * error, so that `ursa state`/`delete` (cmd/cli.c, urs_sup_gone) and the
 * shim reading the log can say why the sandbox lost its supervisor. The
 * handler runs on a static alternate stack (a stack overflow is a fault
 * too) and uses only async-signal-safe calls on buffers prepared at arm
 * time; then it re-raises the signal, so the process still dies of it.
 * SIGKILL cannot be caught: its absence of a word is what `state` reports.
 */
#include "actors/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char crash_path[4200], log_path[4200], prefix[600];
static bool log_json;
static char alt_stack[16384];

/* @v as decimal into @p; returns the end. */
static char *put_num(char *p, unsigned v)
{
	char d[12];
	int n = 0;
	do
		d[n++] = (char) ('0' + v % 10);
	while ((v /= 10) && n < 11);
	while (n)
		*p++ = d[--n];
	return p;
}

static char *put_str(char *p, const char *s, const char *end)
{
	while (*s && p < end)
		*p++ = *s++;
	return p;
}

static void write_line(const char *path, int flags, const char *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0600);
	if (fd < 0)
		return;
	if (write(fd, buf, n) < 0) {
		/* nothing left to do: we are dying */
	}
	close(fd);
}

static void on_fault(int sig)
{
	char msg[800] = "", *p = msg, *end = msg + sizeof(msg) - 64;
	p = put_str(p, prefix, end);
	p = put_num(p, (unsigned) sig);
	p = put_str(p, " (SIG", end);
	const char *name = sigabbrev_np(sig); /* a table lookup */
	p = put_str(p, name ? name : "?", end);
	p = put_str(p, ")", end);
	size_t n = (size_t) (p - msg);
	msg[n] = '\n';
	if (crash_path[0])
		write_line(crash_path, O_TRUNC, msg, n + 1);
	if (log_path[0]) {
		char line[1000] = "", *q = line, *lend = line + sizeof(line) - 8;
		q = put_str(q, log_json ? "{\"level\":\"error\",\"msg\":\"" : "level=error msg=\"",
			    lend);
		for (size_t i = 0; i < n && q < lend; i++) /* no quotes in our text */
			*q++ = msg[i] == '"' || msg[i] == '\\' ? '\'' : msg[i];
		q = put_str(q, log_json ? "\"}\n" : "\"\n", lend + 4);
		write_line(log_path, O_APPEND, line, (size_t) (q - line));
	}
	raise(sig); /* SA_RESETHAND: the default action, once we return */
}

void urs_sup_crash_arm(const char *state_dir, const char *id, const char *log, bool json)
{
	if (state_dir)
		snprintf(crash_path, sizeof(crash_path), "%s/crash", state_dir);
	if (log && *log)
		snprintf(log_path, sizeof(log_path), "%s", log);
	log_json = json;
	snprintf(prefix, sizeof(prefix), "the supervisor of %s (pid %d) died of signal ",
		 id ? id : "the sandbox", (int) getpid());
	stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof(alt_stack)};
	sigaltstack(&ss, NULL);
	static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
	struct sigaction sa = {.sa_handler = on_fault, .sa_flags = SA_ONSTACK | SA_RESETHAND};
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigaction(faults[i], &sa, NULL);
}
