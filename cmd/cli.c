/*
 * cmd/cli.c — see cli.h.
 */
#include "cmd/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/hosted.h"
#include "host/cgroup.h"
#include "host/proc.h"
#include "runtime/common.h"

struct urs_global G = {.root = "/run/ursa"};

static const struct urs_opt *find(const struct urs_opt *o, const char *name, size_t n, char sh)
{
	for (; o && o->name; o++) {
		if (sh && o->short_name == sh)
			return o;
		if (!sh && strlen(o->name) == n && !strncmp(o->name, name, n))
			return o;
	}
	return NULL;
}

static void print_help(const char *cmd, const char *usage, const struct urs_opt *opts)
{
	printf("usage: ursa %s %s\n", cmd, usage);
	if (opts && opts->name)
		printf("\noptions:\n");
	for (const struct urs_opt *o = opts; o && o->name; o++) {
		char left[64];
		snprintf(left, sizeof(left), "%s%c%s--%s%s", o->short_name ? "-" : "",
			 o->short_name ? o->short_name : ' ', o->short_name ? ", " : "  ", o->name,
			 o->kind == URS_OPT_FLAG || o->kind == URS_OPT_ACCEPT ||
					 o->kind == URS_OPT_REFUSE
				 ? ""
				 : " VALUE");
		printf("  %-28s %s\n", left, o->help ? o->help : "");
	}
}

int urs_parse(const char *cmd, const char *usage, int argc, char **argv, const struct urs_opt *opts)
{
	int i = 1;
	while (i < argc) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			return i + 1;
		}
		if (a[0] != '-' || !a[1])
			return i; /* like runc (urfave/cli): options end at the first argument */
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			print_help(cmd, usage, opts);
			return -2;
		}
		const struct urs_opt *o;
		const char *val = NULL;
		if (a[1] == '-' || strlen(a) > 2) { /* --name[=v] or -name[=v] */
			const char *name = a + (a[1] == '-' ? 2 : 1);
			const char *eq = strchr(name, '=');
			size_t n = eq ? (size_t) (eq - name) : strlen(name);
			o = find(opts, name, n, 0);
			if (eq)
				val = eq + 1;
		} else {
			o = find(opts, NULL, 0, a[1]);
		}
		if (!o) {
			urs_error("%s: unknown option %s (see ursa %s --help)", cmd, a, cmd);
			return -1;
		}
		bool off = val && (!strcmp(val, "false") || !strcmp(val, "0"));
		if ((o->kind == URS_OPT_REFUSE && !off) || o->kind == URS_OPT_REFUSE_ARG) {
			urs_error("%s: --%s is not supported", cmd, o->name);
			return -1;
		}
		if (o->kind == URS_OPT_REFUSE) { /* --lazy-pages=false: not asked for */
			i++;
			continue;
		}
		if (o->kind == URS_OPT_ACCEPT) {
			i++;
			continue;
		}
		if (o->kind == URS_OPT_FLAG) {
			bool v = true;
			if (val)
				v = !strcmp(val, "true") || !strcmp(val, "1");
			*(bool *) o->out = v;
			i++;
			continue;
		}
		if (!val) {
			if (i + 1 >= argc) {
				urs_error("%s: option --%s needs a value", cmd, o->name);
				return -1;
			}
			val = argv[++i];
		}
		i++;
		if (o->kind == URS_OPT_ACCEPT_ARG) {
			continue;
		} else if (o->kind == URS_OPT_STR) {
			*(const char **) o->out = val;
		} else if (o->kind == URS_OPT_INT) {
			char *end;
			long v = strtol(val, &end, 10);
			if (*end || end == val) {
				urs_error("%s: option --%s: \"%s\" is not a number", cmd, o->name,
					  val);
				return -1;
			}
			*(int *) o->out = (int) v;
		} else {
			struct urs_strlist *l = o->out;
			if (l->n >= 64) {
				urs_error("%s: too many --%s options", cmd, o->name);
				return -1;
			}
			l->v[l->n++] = val;
		}
	}
	return i;
}

const char *const urs_cgroups_modes[] = {"soft", "full", "strict", "ignore", NULL};

bool urs_opt_one_of(const char *cmd, const char *opt, const char *val, const char *const *choices)
{
	if (!val)
		return true;
	char list[256] = "";
	size_t n = 0;
	for (const char *const *c = choices; *c; c++) {
		if (!strcmp(val, *c))
			return true;
		if (n < sizeof(list))
			n += (size_t) snprintf(list + n, sizeof(list) - n, "%s%s",
					       c == choices ? "" : ", ", *c);
	}
	urs_error("%s: --%s %s: unknown (one of %s)", cmd, opt, val, list);
	return false;
}

static void log_line(const char *level, const char *msg)
{
	if (!G.log)
		return;
	int fd = open(G.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	char ts[64];
	urs_rfc3339_now(ts, sizeof(ts));
	if (G.log_json) {
		/* JSON-escape the message */
		char esc[2048];
		size_t o = 0;
		for (const char *p = msg; *p && o < sizeof(esc) - 8; p++) {
			unsigned char c = (unsigned char) *p;
			if (c == '"' || c == '\\') {
				esc[o++] = '\\';
				esc[o++] = (char) c;
			} else if (c < 0x20) {
				o += (size_t) snprintf(esc + o, sizeof(esc) - o, "\\u%04x", c);
			} else {
				esc[o++] = (char) c;
			}
		}
		esc[o] = 0;
		dprintf(fd, "{\"level\":\"%s\",\"msg\":\"%s\",\"time\":\"%s\"}\n", level, esc, ts);
	} else {
		dprintf(fd, "time=\"%s\" level=%s msg=\"%s\"\n", ts, level, msg);
	}
	close(fd);
}

void urs_error(const char *fmt, ...)
{
	char msg[1536];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "ursa: %s\n", msg);
	log_line("error", msg);
}

void urs_warn(const char *msg)
{
	fprintf(stderr, "ursa: warning: %s\n", msg);
	log_line("warning", msg);
}

void urs_debug(const char *fmt, ...)
{
	if (!G.debug)
		return;
	char msg[1536];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "ursa: debug: %s\n", msg);
	log_line("debug", msg);
}

bool urs_sup_gone(const struct urs_state *st, char *buf, size_t len)
{
	char path[PATH_MAX];
	pid_t host;
	uint64_t host_start;
	if (urs_state_path(path, sizeof(path), G.root, st->id, NULL) < 0)
		return false;
	bool hosted = urs_hosted_read(path, &host, &host_start) == 0;
	if (hosted ? urs_proc_alive(host, host_start)
		   : st->sup_pid <= 0 || urs_proc_alive(st->sup_pid, st->sup_start))
		return false;
	if (urs_state_path(path, sizeof(path), G.root, st->id, "exit") < 0 ||
	    access(path, F_OK) == 0)
		return false; /* it saw the init end and said so: a normal exit */
	if (hosted) {
		snprintf(buf, len,
			 "the shim serving %s (pid %d) is gone: its container has no supervision "
			 "any more",
			 st->id, (int) host);
		return true;
	}
	urs_state_path(path, sizeof(path), G.root, st->id, "crash");
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (n > 0) {
		buf[n] = 0;
		buf[strcspn(buf, "\n")] = 0;
		return true;
	}
	snprintf(buf, len,
		 "the supervisor of %s (pid %d) is gone without a word: killed (SIGKILL, or the "
		 "OOM killer); its container has no network, volumes or metrics any more",
		 st->id, (int) st->sup_pid);
	return true;
}

bool urs_sandbox_killed(const struct urs_state *st, char *buf, size_t len)
{
	char path[PATH_MAX];
	if (urs_state_path(path, sizeof(path), G.root, st->id, "killed") < 0)
		return false;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (n <= 0)
		return false;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return true;
}

int urs_signal_parse(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*end && end != s)
		return v > 0 && v < NSIG ? (int) v : -1;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (int i = 1; i < NSIG; i++) {
		const char *n = sigabbrev_np(i);
		if (n && !strcasecmp(n, s))
			return i;
	}
	return -1;
}

const char *urs_require_id(const char *cmd, int argc, char **argv, int i)
{
	if (i >= argc) {
		urs_error("%s: missing container id (usage: ursa %s [options] ID)", cmd, cmd);
		return NULL;
	}
	struct urs_err err;
	if (urs_id_valid(argv[i], &err) < 0) {
		urs_error("%s", err.msg);
		return NULL;
	}
	return argv[i];
}

int urs_cmd_open(const char *cmd, const char *usage, int argc, char **argv,
		 const struct urs_opt *opts, struct urs_state *st, int *next)
{
	int i = urs_parse(cmd, usage, argc, argv, opts);
	if (i < 0)
		return i == -2 ? 0 : 1;
	const char *id = urs_require_id(cmd, argc, argv, i);
	if (!id)
		return 1;
	struct urs_err err = {{0}};
	if (urs_state_read(G.root, id, st, &err) < 0) {
		urs_error("%s", err.msg);
		return 1;
	}
	if (next)
		*next = i + 1;
	return -1;
}

int urs_cmd_cgroup(const char *cmd, const struct urs_state *st, struct urs_cgroup *cg)
{
	struct urs_err err = {{0}};
	if (!st->cgroup || !*st->cgroup) {
		urs_error("%s: container %s has no cgroup", cmd, st->id);
		return -ENOENT;
	}
	int r = urs_cg_from_string(cg, st->cgroup, &err);
	if (r < 0)
		urs_error("%s: %s", cmd, err.msg);
	return r;
}
