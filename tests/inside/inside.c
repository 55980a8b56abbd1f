/*
 * tests/inside/inside.c — `ursa-inside`, the static multi-call probe the
 * integration suite (tests/integration/) runs INSIDE containers, under ursa
 * and under runc, to look at the sandbox from within: capabilities, rlimits,
 * mounts, open fds, ids and maps, seccomp, /proc/<pid>/exe, environment...
 *
 * Output is machine-readable, one `key=value` per line, stable and sorted
 * where the kernel's order is not meaningful, so that the runner can diff
 * what ursa shows against what runc (the oracle) shows. Errors are reported
 * as errno names (EROFS, EPERM...), never as localized text.
 *
 * Several subcommands can run in one invocation, separated by "+":
 *   ursa-inside caps + rlimits + fds
 * The exit status is the last subcommand's (0 unless `exit N` or a usage
 * error). Statically linked so it runs in a bare busybox rootfs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

extern char **environ;

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

/* Print a value on one line: newlines and backslashes escaped. */
static void put_escaped(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char) s[i];
		if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\\')
			fputs("\\\\", stdout);
		else if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

/* Copy the value of "Field:" from /proc/self/status, trimmed. */
static int status_field(const char *field, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (!f)
		return -errno;
	char line[512];
	size_t fl = strlen(field);
	int r = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, fl) || line[fl] != ':')
			continue;
		char *v = line + fl + 1;
		v += strspn(v, " \t");
		v[strcspn(v, "\n")] = 0;
		snprintf(out, len, "%s", v);
		r = 0;
		break;
	}
	fclose(f);
	return r;
}

static void print_status(const char *field, const char *key)
{
	char v[512];
	int r = status_field(field, v, sizeof(v));
	printf("%s=%s\n", key, r < 0 ? errname(-r) : v);
}

static int cmd_caps(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	static const char *const f[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
	for (size_t i = 0; i < ARRAY_SIZE(f); i++)
		print_status(f[i], f[i]);
	return 0;
}

static const struct {
	const char *name;
	int res;
} rlims[] = {
	{"RLIMIT_AS", RLIMIT_AS},
	{"RLIMIT_CORE", RLIMIT_CORE},
	{"RLIMIT_CPU", RLIMIT_CPU},
	{"RLIMIT_DATA", RLIMIT_DATA},
	{"RLIMIT_FSIZE", RLIMIT_FSIZE},
	{"RLIMIT_LOCKS", RLIMIT_LOCKS},
	{"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
	{"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
	{"RLIMIT_NICE", RLIMIT_NICE},
	{"RLIMIT_NOFILE", RLIMIT_NOFILE},
	{"RLIMIT_NPROC", RLIMIT_NPROC},
	{"RLIMIT_RSS", RLIMIT_RSS},
	{"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
	{"RLIMIT_RTTIME", RLIMIT_RTTIME},
	{"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
	{"RLIMIT_STACK", RLIMIT_STACK},
};

static void put_rlim(rlim_t v)
{
	if (v == RLIM_INFINITY)
		fputs("unlimited", stdout);
	else
		printf("%llu", (unsigned long long) v);
}

static int cmd_rlimits(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	for (size_t i = 0; i < ARRAY_SIZE(rlims); i++) {
		struct rlimit rl;
		printf("%s=", rlims[i].name);
		if (getrlimit(rlims[i].res, &rl) < 0) {
			printf("%s\n", errname(errno));
			continue;
		}
		put_rlim(rl.rlim_cur);
		putchar(':');
		put_rlim(rl.rlim_max);
		putchar('\n');
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Sort a comma-separated option list in place (order is not meaningful). */
static void sort_opts(char *opts)
{
	char *v[128];
	size_t n = 0;
	for (char *save, *t = strtok_r(opts, ",", &save); t && n < ARRAY_SIZE(v);
	     t = strtok_r(NULL, ",", &save))
		v[n++] = strdup(t);
	qsort(v, n, sizeof(v[0]), cmp_str);
	opts[0] = 0;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		o += (size_t) sprintf(opts + o, "%s%s", i ? "," : "", v[i]);
		free(v[i]);
	}
}

/*
 * mount=POINT TYPE OPTS PROPAGATION, one per mount in mountinfo order.
 * OPTS = per-mount and per-superblock options merged and sorted; the
 * propagation is "private", "shared", "master" or "shared+master" (peer
 * group numbers dropped: they differ between runs).
 */
static int cmd_mounts(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		printf("mounts=%s\n", errname(errno));
		return 1;
	}
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = 0;
		char *fld[64];
		int n = 0;
		for (char *save, *t = strtok_r(line, " ", &save); t && n < 64;
		     t = strtok_r(NULL, " ", &save))
			fld[n++] = t;
		/* id parent maj:min root point opts [optional...] - type source superopts */
		int dash = -1;
		for (int i = 6; i < n; i++)
			if (!strcmp(fld[i], "-")) {
				dash = i;
				break;
			}
		if (n < 6 || dash < 0 || dash + 3 >= n + 1)
			continue;
		bool shared = false, master = false;
		for (int i = 6; i < dash; i++) {
			shared |= !strncmp(fld[i], "shared:", 7);
			master |= !strncmp(fld[i], "master:", 7);
		}
		const char *prop = shared && master ? "shared+master"
				   : shared	    ? "shared"
				   : master	    ? "master"
						    : "private";
		const char *type = dash + 1 < n ? fld[dash + 1] : "?";
		const char *super = dash + 3 < n ? fld[dash + 3] : "";
		char opts[4096];
		snprintf(opts, sizeof(opts), "%s%s%s", fld[5], *super ? "," : "", super);
		sort_opts(opts);
		printf("mount=%s %s %s %s\n", fld[4], type, opts, prop);
	}
	free(line);
	fclose(f);
	return 0;
}

/* fd.N=TARGET for every open fd but the directory stream's own. */
static int cmd_fds(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		printf("fds=%s\n", errname(errno));
		return 1;
	}
	int self = dirfd(d), fds[1024], n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 1024) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd != self)
			fds[n++] = fd;
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (fds[j] < fds[i]) {
				int t = fds[i];
				fds[i] = fds[j];
				fds[j] = t;
			}
	printf("fds=");
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", fds[i]);
	putchar('\n');
	for (int i = 0; i < n; i++) {
		char p[64], t[PATH_MAX];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fds[i]);
		ssize_t l = readlink(p, t, sizeof(t) - 1);
		printf("fd.%d=%s\n", fds[i], l < 0 ? errname(errno) : (t[l] = 0, t));
	}
	return 0;
}

static int cmd_hostname(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	struct utsname u;
	if (uname(&u) < 0) {
		printf("hostname=%s\n", errname(errno));
		return 1;
	}
	printf("hostname=%s\ndomainname=%s\n", u.nodename, u.domainname);
	return 0;
}

/* A whole small file on one line: runs of blanks squeezed, lines joined by ';'. */
static void print_file_line(const char *key, const char *path)
{
	FILE *f = fopen(path, "re");
	printf("%s=", key);
	if (!f) {
		printf("%s\n", errname(errno));
		return;
	}
	int c, prev = ' ';
	bool first = true;
	while ((c = fgetc(f)) != EOF) {
		if (c == ' ' || c == '\t') {
			if (prev != ' ' && prev != '\n')
				putchar(' ');
			c = ' ';
		} else if (c == '\n') {
			prev = c;
			continue;
		} else {
			if (prev == '\n' && !first)
				putchar(';');
			putchar(c);
			first = false;
		}
		prev = c;
	}
	putchar('\n');
	fclose(f);
}

static int cmd_ids(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	printf("uid=%d\neuid=%d\ngid=%d\negid=%d\n", (int) getuid(), (int) geteuid(),
	       (int) getgid(), (int) getegid());
	gid_t g[256];
	int n = getgroups(256, g);
	printf("groups=");
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", (int) g[i]);
	putchar('\n');
	print_file_line("uid_map", "/proc/self/uid_map");
	print_file_line("gid_map", "/proc/self/gid_map");
	print_file_line("setgroups", "/proc/self/setgroups");
	return 0;
}

/*
 * Syscalls the suite filters, each tried with harmless arguments; the result
 * is "ok" or the errno name. Called through syscall(2) so libc cannot
 * substitute another one.
 */
static long try_syscall(const char *name, int *known)
{
	static char buf[PATH_MAX];
	*known = 1;
	if (!strcmp(name, "getppid"))
		return syscall(SYS_getppid);
	if (!strcmp(name, "personality"))
		return syscall(SYS_personality, 0xffffffffUL); /* query only */
	if (!strcmp(name, "getcwd"))
		return syscall(SYS_getcwd, buf, sizeof(buf));
	if (!strcmp(name, "mkdir"))
		return syscall(SYS_mkdir, "/.ursa-inside-mkdir", 0700);
	if (!strcmp(name, "mkdirat"))
		return syscall(SYS_mkdirat, AT_FDCWD, "/.ursa-inside-mkdir", 0700);
	if (!strcmp(name, "uname"))
		return syscall(SYS_uname, buf);
	if (!strcmp(name, "unshare"))
		return syscall(SYS_unshare, 0);
	if (!strcmp(name, "chroot"))
		return syscall(SYS_chroot, "/");
	if (!strcmp(name, "sethostname"))
		return syscall(SYS_sethostname, "x", 1);
	if (!strcmp(name, "keyctl"))
		return syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0);
	if (!strcmp(name, "mount"))
		return syscall(SYS_mount, "none", "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY,
			       NULL);
	*known = 0;
	return -1;
}

static int cmd_seccomp(int argc, char **argv)
{
	print_status("Seccomp", "Seccomp");
	print_status("Seccomp_filters", "Seccomp_filters");
	for (int i = 1; i < argc; i++) {
		int known;
		errno = 0;
		long r = try_syscall(argv[i], &known);
		if (!known)
			printf("syscall.%s=unknown\n", argv[i]);
		else
			printf("syscall.%s=%s\n", argv[i], r < 0 ? errname(errno) : "ok");
	}
	rmdir("/.ursa-inside-mkdir");
	return 0;
}

static void try_open(const char *key, const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	printf("%s=%s\n", key, fd < 0 ? errname(errno) : "ok");
	if (fd >= 0)
		close(fd);
}

/*
 * The CVE-2019-5736 class: nothing in the container may reach the runtime's
 * binary. Print what every visible process executes, and try to open the
 * executables of pid 1 and of ourselves for writing (directly and by
 * re-opening an O_PATH fd through /proc/self/fd).
 */
static int cmd_exe(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char p[300], t[PATH_MAX];
		snprintf(p, sizeof(p), "/proc/%s/exe", e->d_name);
		ssize_t l = readlink(p, t, sizeof(t) - 1);
		printf("exe.%s=%s\n", e->d_name, l < 0 ? errname(errno) : (t[l] = 0, t));
	}
	if (d)
		closedir(d);
	try_open("exe.write.self", "/proc/self/exe", O_WRONLY);
	try_open("exe.write.init", "/proc/1/exe", O_WRONLY);
	try_open("exe.rdwr.init", "/proc/1/exe", O_RDWR);
	int fd = open("/proc/1/exe", O_PATH | O_CLOEXEC);
	if (fd < 0) {
		printf("exe.reopen.init=%s\n", errname(errno));
	} else {
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		try_open("exe.reopen.init", p, O_WRONLY);
		close(fd);
	}
	return 0;
}

static int cmd_env(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	size_t n = 0;
	while (environ[n])
		n++;
	char **v = calloc(n + 1, sizeof(*v));
	memcpy(v, environ, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < n; i++) {
		fputs("env=", stdout);
		put_escaped(v[i], strlen(v[i]));
		putchar('\n');
	}
	free(v);
	return 0;
}

static int cmd_cwd(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	char b[PATH_MAX];
	printf("cwd=%s\n", getcwd(b, sizeof(b)) ? b : errname(errno));
	return 0;
}

static int cmd_umask(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	print_status("Umask", "umask");
	return 0;
}

static int cmd_nnp(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	print_status("NoNewPrivs", "NoNewPrivs");
	return 0;
}

static int cmd_oom(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	print_file_line("oom_score_adj", "/proc/self/oom_score_adj");
	return 0;
}

static int cmd_sysctl(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		char p[PATH_MAX], k[PATH_MAX];
		snprintf(k, sizeof(k), "sysctl.%s", argv[i]);
		snprintf(p, sizeof(p), "/proc/sys/%s", argv[i]);
		for (char *c = p + strlen("/proc/sys/"); *c; c++)
			if (*c == '.')
				*c = '/';
		print_file_line(k, p);
	}
	return 0;
}

/* write.PATH=ok|ERRNO: create (or truncate) PATH and write a byte to it. */
static int cmd_write(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		int fd = open(argv[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int e = 0;
		if (fd < 0)
			e = errno;
		else if (write(fd, "x", 1) != 1)
			e = errno ? errno : EIO;
		if (fd >= 0 && close(fd) < 0 && !e)
			e = errno;
		printf("write.%s=%s\n", argv[i], e ? errname(e) : "ok");
	}
	return 0;
}

/* read.PATH=ok|ERRNO, read.PATH.len=N, read.PATH.head=the first 200 bytes. */
static int cmd_read(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			printf("read.%s=%s\n", argv[i], errname(errno));
			continue;
		}
		char b[200];
		size_t total = 0, head = 0;
		ssize_t r;
		int e = 0;
		char chunk[65536];
		while ((r = read(fd, chunk, sizeof(chunk))) > 0 && total < (1u << 24)) {
			if (head < sizeof(b)) {
				size_t c = sizeof(b) - head < (size_t) r ? sizeof(b) - head
									 : (size_t) r;
				memcpy(b + head, chunk, c);
				head += c;
			}
			total += (size_t) r;
		}
		if (r < 0)
			e = errno;
		close(fd);
		printf("read.%s=%s\nread.%s.len=%zu\nread.%s.head=", argv[i], e ? errname(e) : "ok",
		       argv[i], total, argv[i]);
		put_escaped(b, head);
		putchar('\n');
	}
	return 0;
}

/* stat.PATH=TYPE MODE UID GID [dev=MAJ:MIN] or ERRNO (lstat: no following). */
static int cmd_stat(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct stat sb;
		if (lstat(argv[i], &sb) < 0) {
			printf("stat.%s=%s\n", argv[i], errname(errno));
			continue;
		}
		const char *t = S_ISDIR(sb.st_mode)    ? "dir"
				: S_ISREG(sb.st_mode)  ? "file"
				: S_ISLNK(sb.st_mode)  ? "link"
				: S_ISCHR(sb.st_mode)  ? "chr"
				: S_ISBLK(sb.st_mode)  ? "blk"
				: S_ISFIFO(sb.st_mode) ? "fifo"
						       : "sock";
		printf("stat.%s=%s %04o %d %d", argv[i], t, (unsigned) (sb.st_mode & 07777),
		       (int) sb.st_uid, (int) sb.st_gid);
		if (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode))
			printf(" dev=%u:%u", major(sb.st_rdev), minor(sb.st_rdev));
		putchar('\n');
	}
	return 0;
}

static int cmd_pid(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	printf("pid=%d\nppid=%d\n", (int) getpid(), (int) getppid());
	print_file_line("cgroup", "/proc/self/cgroup");
	return 0;
}

/* cgroup.N=PATH for every line "N:CONTROLLERS:PATH" of /proc/PID/cgroup
 * (PID: argv[1], default self), so that two processes' memberships can be
 * compared line by line. */
static int cmd_cgroup(int argc, char **argv)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s/cgroup", argc > 1 ? argv[1] : "self");
	FILE *f = fopen(path, "re");
	if (!f) {
		printf("cgroup=%s\n", errname(errno));
		return 0;
	}
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c1 && c2)
			printf("cgroup.%.*s=%s\n", (int) (c1 - line), line, c2 + 1);
	}
	fclose(f);
	return 0;
}

static int cmd_sleep(int argc, char **argv)
{
	double s = argc > 1 ? atof(argv[1]) : 1;
	struct timespec ts = {(time_t) s, (long) ((s - (double) (time_t) s) * 1e9)};
	fflush(stdout);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return 0;
}

static int cmd_exit(int argc, char **argv)
{
	fflush(stdout);
	exit(argc > 1 ? atoi(argv[1]) : 0);
}

/* Wait for a signal with every disposition left as it is (default). */
static int cmd_signal_exit(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	printf("waiting=%d\n", (int) getpid());
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
	caught = sig;
}

/* Catch the usual termination signals; exit 128+signal after printing it. */
static int cmd_trap(int argc, char **argv)
{
	(void) argc;
	(void) argv;
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT};
	struct sigaction sa = {.sa_handler = on_signal};
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	printf("waiting=%d\n", (int) getpid());
	fflush(stdout);
	while (!caught)
		pause();
	printf("signal=%d\n", (int) caught);
	fflush(stdout);
	_exit(128 + caught);
}

/* Block until PATH exists (polling every 20 ms), at most SECONDS. */
static int cmd_wait_file(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	double limit = argc > 2 ? atof(argv[2]) : 10;
	struct timespec ts = {0, 20 * 1000 * 1000};
	for (double t = 0; t < limit; t += 0.02) {
		if (access(argv[1], F_OK) == 0) {
			printf("wait.%s=ok\n", argv[1]);
			return 0;
		}
		nanosleep(&ts, NULL);
	}
	printf("wait.%s=ETIMEDOUT\n", argv[1]);
	return 1;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{"caps", cmd_caps, "the five capability sets"},
	{"rlimits", cmd_rlimits, "soft:hard of every resource"},
	{"mounts", cmd_mounts, "mount point, type, sorted options, propagation"},
	{"fds", cmd_fds, "open fds and their targets"},
	{"hostname", cmd_hostname, "nodename and domainname"},
	{"ids", cmd_ids, "uids, gids, groups, uid_map, gid_map"},
	{"seccomp", cmd_seccomp, "[SYSCALL...]: seccomp mode, then try each syscall"},
	{"exe", cmd_exe, "/proc/*/exe targets; write attempts on them"},
	{"env", cmd_env, "the environment, sorted"},
	{"cwd", cmd_cwd, "working directory"},
	{"umask", cmd_umask, "umask"},
	{"nnp", cmd_nnp, "NoNewPrivs"},
	{"oom", cmd_oom, "oom_score_adj"},
	{"sysctl", cmd_sysctl, "KEY...: /proc/sys values"},
	{"write", cmd_write, "PATH...: create and write, report errno"},
	{"read", cmd_read, "PATH...: read, report errno, length and head"},
	{"stat", cmd_stat, "PATH...: type, mode, owner"},
	{"pid", cmd_pid, "pid, ppid, cgroup"},
	{"cgroup", cmd_cgroup, "[PID]: every line of /proc/PID/cgroup (default self)"},
	{"sleep", cmd_sleep, "SECONDS"},
	{"exit", cmd_exit, "N: exit with status N"},
	{"signal-exit", cmd_signal_exit, "wait for a signal, default dispositions"},
	{"trap", cmd_trap, "wait for a signal, exit 128+signal"},
	{"wait-file", cmd_wait_file, "PATH [SECONDS]: wait until PATH exists"},
};

static void usage(void)
{
	fprintf(stderr, "usage: ursa-inside CMD [ARGS...] [+ CMD [ARGS...]]...\n");
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(stderr, "  %-12s %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv)
{
	int rc = 0;
	if (argc < 2) {
		usage();
		return 2;
	}
	for (int i = 1; i < argc;) {
		int j = i;
		while (j < argc && strcmp(argv[j], "+"))
			j++;
		size_t k;
		for (k = 0; k < ARRAY_SIZE(cmds); k++)
			if (!strcmp(argv[i], cmds[k].name))
				break;
		if (k == ARRAY_SIZE(cmds)) {
			fprintf(stderr, "ursa-inside: unknown command \"%s\"\n", argv[i]);
			usage();
			return 2;
		}
		char *save = j < argc ? argv[j] : NULL;
		argv[j < argc ? j : argc] = NULL;
		rc = cmds[k].fn(j - i, argv + i);
		if (j < argc)
			argv[j] = save;
		fflush(stdout);
		i = j + 1;
	}
	return rc;
}
