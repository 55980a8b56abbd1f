/*
 * tests/host/test_cgroup.c — host/cgroup.c against the real cgroup fs of
 * this machine (root only; skipped otherwise): placement beneath our own
 * cgroup, limits read back from the files, enter/freeze/thaw/pids/kill with
 * forked children, clear errors naming file and value, rollback of a
 * partial creation, the state-file string, and that nothing is left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sched.h>
#include <pthread.h>
#include <sys/syscall.h>

#include "host/cgroup.h"
#include "runtime/common.h"
#include "tests/lib/skip.h"

static bool usable;
static int mode;
/* "<mount><own cgroup>" per hierarchy, learnt from a probe cgroup */
static char base[URS_CG_NHIER][URS_CG_PATH_MAX];
static bool ursa_existed[URS_CG_NHIER];
/* global so that a failed test's teardown can still clean up */
static struct urs_cgroup cg, cg2, holder, back;
static pid_t kids[4];

#define OK(expr)                                                    \
	do {                                                        \
		int rc_ = (expr);                                   \
		if (rc_ != 0)                                       \
			fail_msg("%s = %d: %s", #expr, rc_, e.msg); \
	} while (0)

#define NEED()                                                                     \
	do {                                                                       \
		if (!usable)                                                       \
			URS_CM_SKIP("needs root and a writable cgroup hierarchy"); \
	} while (0)

static void mkid(char *id, size_t len, const char *what)
{
	snprintf(id, len, "cgtest-%d-%s", (int) getpid(), what);
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static int read_file(const char *dir, const char *file, char *buf, size_t len)
{
	char p[URS_CG_PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	while (n && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return (int) n;
}

static void assert_file(const char *dir, const char *file, const char *want)
{
	char buf[4096];
	int r = read_file(dir, file, buf, sizeof(buf));
	if (r < 0)
		fail_msg("reading %s/%s: %s", dir, file, strerror(-r));
	if (strcmp(buf, want))
		fail_msg("%s/%s is \"%s\", want \"%s\"", dir, file, buf, want);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Deadline (s) for what is waited for (a state reached, polled every
 * millisecond): what takes milliseconds here, far above that so that a
 * busy machine does not fail the test, and still bounded so that a
 * regression fails instead of hanging. */
#define WAIT_S 20.0

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* State letter of /proc/PID/status ('S', 'D', ...). */
static char proc_state(pid_t pid)
{
	char p[64], buf[4096];
	snprintf(p, sizeof(p), "/proc/%d", (int) pid);
	if (read_file(p, "status", buf, sizeof(buf)) < 0)
		return '?';
	const char *s = strstr(buf, "State:");
	if (!s)
		return '?';
	s += 6;
	while (*s == ' ' || *s == '\t')
		s++;
	return *s;
}

/*
 * A child that waits for a byte on @go (sent once it is in the cgroup),
 * touches 1 MiB of new memory (charged to the cgroup), optionally forks a
 * grandchild, reports on @ready and then counts in *ctr every millisecond.
 */
static pid_t spawn(volatile uint64_t *ctr, int *go_w, int *ready_r, bool grandchild)
{
	int go[2], ready[2];
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		close(go[1]);
		close(ready[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		volatile char *m = malloc(1 << 20);
		if (!m)
			_exit(3);
		for (size_t i = 0; i < (1 << 20); i += 4096)
			m[i] = 1;
		if (grandchild && fork() == 0) {
			for (;;)
				pause();
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		for (;;) {
			if (ctr)
				(*ctr)++;
			sleep_ms(1);
		}
	}
	close(go[0]);
	close(ready[1]);
	for (size_t i = 0; i < URS_ARRAY_SIZE(kids); i++) {
		if (!kids[i]) {
			kids[i] = pid;
			break;
		}
	}
	*go_w = go[1];
	*ready_r = ready[0];
	return pid;
}

static void release(int go_w, int ready_r)
{
	char c = 'g';
	assert_int_equal(write(go_w, &c, 1), 1);
	assert_int_equal(read(ready_r, &c, 1), 1);
	close(go_w);
	close(ready_r);
}

static void untrack(pid_t pid)
{
	for (size_t i = 0; i < URS_ARRAY_SIZE(kids); i++)
		if (kids[i] == pid)
			kids[i] = 0;
}

static void reap_killed(pid_t pid, int sig)
{
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	untrack(pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), sig);
}

static void assert_all_gone(const struct urs_cgroup *cg)
{
	for (int h = 0; h < URS_CG_NHIER; h++)
		if (cg->h[h].path[0] && exists(cg->h[h].path))
			fail_msg("%s still exists", cg->h[h].path);
}

static void reset(struct urs_cgroup *c)
{
	memset(c, 0, sizeof(*c));
	for (int h = 0; h < URS_CG_NHIER; h++) {
		c->h[h].fd = -1;
		c->h[h].alias = -1;
	}
}

/* After every test, even a failed one: no child, no cgroup of ours left. */
static int teardown(void **state)
{
	(void) state;
	struct urs_cgroup *all[] = {&cg, &cg2, &holder, &back};
	for (size_t i = 0; i < URS_ARRAY_SIZE(all); i++) {
		bool ours = false;
		for (int h = 0; h < URS_CG_NHIER; h++)
			ours |= all[i]->h[h].created > 0;
		if (ours)
			(void) urs_cg_kill_all(all[i], SIGKILL, NULL);
		(void) urs_cg_destroy(all[i], NULL);
		reset(all[i]);
	}
	/* after the cgroups: a child frozen by a failed test only dies once thawed */
	for (size_t i = 0; i < URS_ARRAY_SIZE(kids); i++) {
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
		kids[i] = 0;
	}
	while (waitpid(-1, NULL, WNOHANG) > 0) /* grandchildren (we are their subreaper) */
		;
	return 0;
}

static int setup(void **state)
{
	(void) state;
	reset(&cg);
	reset(&cg2);
	reset(&holder);
	reset(&back);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	mode = urs_cg_mode();
	if (geteuid() != 0 || mode < 0)
		return 0;
	struct urs_cgroup probe;
	struct urs_err e = {{0}};
	char id[64], suffix[96];
	mkid(id, sizeof(id), "probe");
	if (urs_cg_create(&probe, NULL, id, 0, &e) < 0) {
		print_message("cgroup tests disabled: %s\n", e.msg);
		return 0;
	}
	snprintf(suffix, sizeof(suffix), "/ursa/%s", id);
	for (int h = 0; h < URS_CG_NHIER; h++) {
		size_t n = strlen(probe.h[h].path), sl = strlen(suffix);
		if (n > sl) {
			memcpy(base[h], probe.h[h].path, n - sl);
			base[h][n - sl] = '\0';
		}
	}
	/* did ursa/ exist before the probe? (the probe made it if created > 1) */
	for (int h = 0; h < URS_CG_NHIER; h++)
		ursa_existed[h] = probe.h[h].alias < 0 && probe.h[h].created == 1;
	if (urs_cg_destroy(&probe, &e) < 0) {
		print_message("cgroup tests disabled: %s\n", e.msg);
		return 0;
	}
	usable = true;
	return 0;
}

static void test_mode(void **state)
{
	(void) state;
	if (mode == -ENOENT)
		URS_CM_SKIP_OR_FAIL("no cgroup hierarchy mounted");
	assert_true(mode == URS_CG_LEGACY || mode == URS_CG_HYBRID || mode == URS_CG_UNIFIED);
	assert_int_equal(urs_cg_mode(), mode); /* cached, stable */
	if (mode == URS_CG_HYBRID)
		assert_true(exists("/sys/fs/cgroup/unified/cgroup.procs"));
	assert_int_equal(urs_cg_shares_to_weight(0), 0);
	assert_int_equal(urs_cg_shares_to_weight(2), 1);
	assert_int_equal(urs_cg_shares_to_weight(1024), 39);
	assert_int_equal(urs_cg_shares_to_weight(262144), 10000);
}

static void own_cgroup(const char *name, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	assert_non_null(f);
	char line[1024];
	out[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		for (char *t = strtok(c1 + 1, ","); t; t = strtok(NULL, ","))
			if (!strcmp(t, name))
				snprintf(out, len, "%s", strcmp(c2 + 1, "/") ? c2 + 1 : "");
	}
	fclose(f);
}

static void test_create_nested(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	char id[64];
	mkid(id, sizeof(id), "nested");
	OK(urs_cg_create(&cg, NULL, id, 0, &e));
	assert_int_equal(cg.mode, mode);
	if (cg.h[URS_CG_MEMORY].path[0]) {
		char own[512], want[URS_CG_PATH_MAX + 600];
		own_cgroup("memory", own, sizeof(own));
		snprintf(want, sizeof(want), "/sys/fs/cgroup/memory%s/ursa/%s", own, id);
		assert_string_equal(cg.h[URS_CG_MEMORY].path, want);
		assert_string_not_equal(cg.h[URS_CG_MEMORY].path, "/sys/fs/cgroup/memory");
		assert_true(exists(want));
		assert_true(cg.h[URS_CG_MEMORY].created >= 1);
	}
	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (!cg.h[h].path[0])
			continue;
		if (!exists(cg.h[h].path))
			fail_msg("%s was not created", cg.h[h].path);
		if (h == URS_CG_CPUSET) {
			char buf[256];
			assert_true(read_file(cg.h[h].path, "cpuset.cpus", buf, sizeof(buf)) > 0);
			assert_true(read_file(cg.h[h].path, "cpuset.mems", buf, sizeof(buf)) > 0);
		}
	}
	OK(urs_cg_destroy(&cg, &e));
	assert_all_gone(&cg);
	OK(urs_cg_destroy(&cg, &e)); /* idempotent */
}

static void test_apply_readback(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	char id[64];
	mkid(id, sizeof(id), "apply");
	OK(urs_cg_create(&cg, NULL, id, 0, &e));

	const struct urs_cg_device devs[] = {
		{.allow = false, .type = 'a', .major = -1, .minor = -1, .access = "rwm"},
		{.allow = true, .type = 'c', .major = 1, .minor = 3, .access = "rwm"},
		{.allow = true, .type = 'c', .major = -1, .minor = -1, .access = "m"},
	};
	struct urs_cg_resources r = URS_CG_RESOURCES_INIT;
	r.mem_limit = 64 << 20;
	r.mem_reservation = 32 << 20;
	r.mem_swap = 128 << 20;
	r.mem_swappiness = 10;
	r.pids_limit = 42;
	r.cpu_shares = 512;
	r.cpu_quota = 50000;
	r.cpu_period = 100000;
	r.cpus = "0";
	r.mems = "0";
	r.devices = devs;
	r.n_devices = URS_ARRAY_SIZE(devs);
	OK(urs_cg_apply(&cg, &r, &e));

	if (mode == URS_CG_UNIFIED) {
		const char *d = cg.h[URS_CG_V2].path;
		assert_file(d, "memory.max", "67108864");
		assert_file(d, "memory.low", "33554432");
		assert_file(d, "pids.max", "42");
		assert_file(d, "cpu.max", "50000 100000");
		assert_file(d, "cpu.weight", "20");
	} else {
		const char *m = cg.h[URS_CG_MEMORY].path;
		char buf[4096];
		assert_file(m, "memory.limit_in_bytes", "67108864");
		assert_file(m, "memory.soft_limit_in_bytes", "33554432");
		assert_file(m, "memory.swappiness", "10");
		bool memsw = read_file(m, "memory.memsw.limit_in_bytes", buf, sizeof(buf)) >= 0;
		if (memsw)
			assert_file(m, "memory.memsw.limit_in_bytes", "134217728");
		assert_file(cg.h[URS_CG_PIDS].path, "pids.max", "42");
		assert_file(cg.h[URS_CG_CPU].path, "cpu.shares", "512");
		assert_file(cg.h[URS_CG_CPU].path, "cpu.cfs_quota_us", "50000");
		assert_file(cg.h[URS_CG_CPU].path, "cpu.cfs_period_us", "100000");
		assert_file(cg.h[URS_CG_CPUSET].path, "cpuset.cpus", "0");
		assert_file(cg.h[URS_CG_CPUSET].path, "cpuset.mems", "0");
		assert_true(read_file(cg.h[URS_CG_DEVICES].path, "devices.list", buf, sizeof(buf)) >
			    0);
		assert_non_null(strstr(buf, "c 1:3 rwm"));
		assert_non_null(strstr(buf, "c *:* m"));
		assert_null(strstr(buf, "a *:* rwm"));

		/* update: grow past the old memsw (memsw first), then shrink */
		struct urs_cg_resources u = URS_CG_RESOURCES_INIT;
		u.mem_limit = 256 << 20;
		u.mem_swap = 512 << 20;
		u.pids_limit = -1;
		u.cpu_quota = -1;
		OK(urs_cg_update(&cg, &u, &e));
		assert_file(m, "memory.limit_in_bytes", "268435456");
		if (memsw)
			assert_file(m, "memory.memsw.limit_in_bytes", "536870912");
		assert_file(cg.h[URS_CG_PIDS].path, "pids.max", "max");
		assert_file(cg.h[URS_CG_CPU].path, "cpu.cfs_quota_us", "-1");
		u.mem_limit = 16 << 20;
		u.mem_swap = 32 << 20;
		OK(urs_cg_update(&cg, &u, &e));
		assert_file(m, "memory.limit_in_bytes", "16777216");
		if (memsw)
			assert_file(m, "memory.memsw.limit_in_bytes", "33554432");
		/* unlimited memory implies unlimited memory+swap */
		struct urs_cg_resources un = URS_CG_RESOURCES_INIT;
		un.mem_limit = -1;
		OK(urs_cg_update(&cg, &un, &e));
		assert_true(read_file(m, "memory.limit_in_bytes", buf, sizeof(buf)) > 0);
		assert_true(strtoull(buf, NULL, 10) > (1ull << 40));
	}
	OK(urs_cg_destroy(&cg, &e));
	assert_all_gone(&cg);
}

static void *idle_thread(void *arg)
{
	(void) arg;
	pause();
	return NULL;
}

/* In a child: does /proc/self/cgroup's line for hierarchy @h (its
 * "N:CTRLS:" prefix found by @name, or "0::" for v2) end with "/@id"? */
static bool self_in(const char *name, const char *id)
{
	char buf[8192];
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		bool v2 = !strcmp(name, "v2");
		char *c2 = strchr(strchr(line, ':') ? strchr(line, ':') + 1 : line, ':');
		if (!c2)
			continue;
		bool match = v2 ? !strncmp(line, "0::", 3) : strstr(line, name) && line[0] != '0';
		if (!match)
			continue;
		size_t l = strlen(c2 + 1), il = strlen(id);
		return l > il && c2[1 + l - il - 1] == '/' && !strcmp(c2 + 1 + l - il, id);
	}
	return false;
}

/* The lock-free ways in and out (host/cgroup.c): a single-threaded process
 * moves itself into the v1 hierarchies and back to where it came from; a
 * child cloned with CLONE_INTO_CGROUP is born in the v2 one;
 * urs_cg_v2_has tells them apart. */
static void test_self_migration(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	char id[64];
	mkid(id, sizeof(id), "self");
	OK(urs_cg_create(&cg, NULL, id, 0, &e));
	bool v1 = cg.h[URS_CG_PIDS].path[0] != 0, v2 = cg.h[URS_CG_V2].path[0] != 0;
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		struct urs_cgroup home;
		struct urs_err e2;
		int bad = 0;
		if (urs_cg_home_v1(&home, &cg, &e2) < 0 || urs_cg_enter_self_v1(&cg, &e2) < 0)
			_exit(10);
		if (v1 && !self_in("pids", id))
			bad |= 1; /* moved into v1 */
		if (v2 && (self_in("v2", id) || urs_cg_v2_has(&cg, getpid())))
			bad |= 2; /* but not into v2 */
		if (v2) {
			int fd = urs_cg_open_v2(&cg, &e2);
			struct clone_args ca = {.flags = CLONE_INTO_CGROUP,
						.exit_signal = SIGCHLD,
						.cgroup = (uint64_t) fd};
			pid_t c = fd < 0 ? -1 : (pid_t) syscall(SYS_clone3, &ca, sizeof(ca));
			if (c == 0)
				_exit(self_in("v2", id) && (!v1 || self_in("pids", id)) ? 0 : 1);
			int st = 0;
			if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) ||
			    WEXITSTATUS(st) != 0)
				bad |= 4; /* the clone is in both */
		}
		if (urs_cg_enter_self_v1(&home, &e2) < 0 || (v1 && self_in("pids", id)))
			bad |= 8; /* and back out */
		_exit(bad);
	}
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_false(urs_cg_v2_has(&cg, getpid()));
	/* a multi-threaded caller is refused (its other threads would stay) */
	p = fork();
	if (p == 0) {
		pthread_t t;
		struct urs_err e2;
		if (pthread_create(&t, NULL, idle_thread, NULL))
			_exit(10);
		_exit(urs_cg_enter_self_v1(&cg, &e2) == -EBUSY ? 0 : 1);
	}
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	OK(urs_cg_destroy(&cg, &e));
}

static void test_lifecycle(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	char id[64];
	mkid(id, sizeof(id), "life");
	OK(urs_cg_create(&cg, NULL, id, 0, &e));

	volatile uint64_t *ctr =
		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(ctr != MAP_FAILED);
	int go, ready;
	pid_t child = spawn(ctr, &go, &ready, false);
	OK(urs_cg_enter(&cg, child, &e));
	release(go, ready);

	pid_t *pids;
	size_t n;
	OK(urs_cg_pids(&cg, &pids, &n, &e));
	assert_int_equal(n, 1);
	assert_int_equal(pids[0], child);
	free(pids);

	struct urs_cg_stats st;
	OK(urs_cg_stats(&cg, &st, &e));
	assert_int_equal(st.pids_current, 1);
	if (st.mem_usage < (1u << 20))
		fail_msg("usage %llu max %llu limit %llu", (unsigned long long) st.mem_usage,
			 (unsigned long long) st.mem_max_usage, (unsigned long long) st.mem_limit);
	assert_true(st.mem_max_usage >= st.mem_usage || st.mem_max_usage == 0);
	assert_true(st.mem_limit > 0);

	assert_int_equal(urs_cg_is_frozen(&cg, &e), 0);
	OK(urs_cg_freeze(&cg, true, &e));
	assert_int_equal(urs_cg_is_frozen(&cg, &e), 1);
	if (cg.h[URS_CG_FREEZER].path[0]) {
		assert_file(cg.h[URS_CG_FREEZER].path, "freezer.state", "FROZEN");
		assert_int_equal(proc_state(child), 'D'); /* v1 frozen tasks show D */
	}
	uint64_t c1 = *ctr;
	sleep_ms(50);
	assert_int_equal(*ctr, c1); /* no progress while frozen */

	OK(urs_cg_freeze(&cg, false, &e));
	assert_int_equal(urs_cg_is_frozen(&cg, &e), 0);
	if (cg.h[URS_CG_FREEZER].path[0])
		assert_file(cg.h[URS_CG_FREEZER].path, "freezer.state", "THAWED");
	for (double end = now_s() + WAIT_S; *ctr == c1 && now_s() < end;)
		sleep_ms(1);
	assert_true(*ctr > c1); /* a thawed child progresses */

	/* SIGKILL to a paused sandbox: killed and thawed (v1 frozen tasks only
	 * die once thawed); bounded so that a regression fails, not hangs */
	OK(urs_cg_freeze(&cg, true, &e));
	OK(urs_cg_kill_all(&cg, SIGKILL, &e));
	int wst = 0;
	pid_t w = 0;
	for (double end = now_s() + WAIT_S; w == 0 && now_s() < end;) {
		w = waitpid(child, &wst, WNOHANG);
		if (!w)
			sleep_ms(1);
	}
	assert_int_equal(w, child);
	untrack(child);
	assert_true(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL);
	assert_int_equal(urs_cg_is_frozen(&cg, &e), 0);
	OK(urs_cg_destroy(&cg, &e));
	assert_all_gone(&cg);
	munmap((void *) ctr, 4096);
}

/* SIGTERM goes the freeze/signal/thaw way and reaches a grandchild too. */
static void test_kill_tree(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	char id[64];
	mkid(id, sizeof(id), "tree");
	OK(urs_cg_create(&cg, NULL, id, 0, &e));
	int go, ready;
	pid_t child = spawn(NULL, &go, &ready, true);
	OK(urs_cg_enter(&cg, child, &e));
	release(go, ready);

	pid_t *pids;
	size_t n;
	OK(urs_cg_pids(&cg, &pids, &n, &e));
	assert_int_equal(n, 2);
	free(pids);

	OK(urs_cg_kill_all(&cg, SIGTERM, &e));
	reap_killed(child, SIGTERM);
	assert_int_equal(urs_cg_is_frozen(&cg, &e), 0); /* thawed again */
	for (double end = now_s() + WAIT_S; now_s() < end;) {
		OK(urs_cg_pids(&cg, &pids, &n, &e));
		free(pids);
		if (!n)
			break;
		sleep_ms(1);
	}
	assert_int_equal(n, 0); /* the grandchild died too */
	OK(urs_cg_destroy(&cg, &e));
	assert_all_gone(&cg);
}

static bool swap_on(void)
{
	char buf[4096];
	int n = read_file("/proc", "swaps", buf, sizeof(buf));
	return n < 0 || strchr(buf, '\n') != NULL; /* more than the header line */
}

static void assert_msg(const struct urs_err *e, const char *a, const char *b)
{
	if (!strstr(e->msg, a) || (b && !strstr(e->msg, b)))
		fail_msg("error \"%s\" does not name \"%s\" / \"%s\"", e->msg, a, b ? b : "");
}

static void test_bad_values(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	char id[64];
	mkid(id, sizeof(id), "bad");
	OK(urs_cg_create(&cg, NULL, id, 0, &e));

	struct urs_cg_resources r = URS_CG_RESOURCES_INIT;
	r.cpu_quota = 1; /* below the 1 ms minimum (negatives all mean "none" on 6.x) */
	if (mode == URS_CG_UNIFIED) {
		r.cpu_quota = 0;
		r.cpu_period = 5; /* below the kernel's minimum of 1000 */
		assert_int_equal(urs_cg_apply(&cg, &r, &e), -EINVAL);
		assert_msg(&e, "cpu.max", "\"max 5\"");
	} else {
		assert_int_equal(urs_cg_apply(&cg, &r, &e), -EINVAL);
		assert_string_equal(e.msg,
				    "cgroup: writing \"1\" to cpu.cfs_quota_us: Invalid argument");
	}

	r = (struct urs_cg_resources) URS_CG_RESOURCES_INIT;
	r.cpus = "999";
	assert_true(urs_cg_apply(&cg, &r, &e) < 0);
	assert_msg(&e, "cpuset.cpus", "\"999\"");

	r = (struct urs_cg_resources) URS_CG_RESOURCES_INIT;
	r.mem_limit = 64 << 20;
	r.mem_swap = 32 << 20;
	assert_int_equal(urs_cg_apply(&cg, &r, &e), -EINVAL);
	assert_msg(&e, "memory+swap", "below");

	r = (struct urs_cg_resources) URS_CG_RESOURCES_INIT;
	r.mem_swappiness = 101;
	if (mode != URS_CG_UNIFIED) {
		assert_int_equal(urs_cg_apply(&cg, &r, &e), -EINVAL);
		assert_msg(&e, "swappiness", "101");
	}

	const struct urs_cg_kv kv[] = {{"memory.max", "1G"}};
	r = (struct urs_cg_resources) URS_CG_RESOURCES_INIT;
	r.unified = kv;
	r.n_unified = 1;
	if (mode != URS_CG_UNIFIED) {
		assert_int_equal(urs_cg_apply(&cg, &r, &e), -EINVAL);
		assert_msg(&e, "unified", NULL);
	}

	/* a memory limit below what the sandbox already uses (no swap here) */
	int go, ready;
	pid_t child = spawn(NULL, &go, &ready, false);
	OK(urs_cg_enter(&cg, child, &e));
	release(go, ready);
	r = (struct urs_cg_resources) URS_CG_RESOURCES_INIT;
	r.mem_limit = 4096;
	int rc = urs_cg_apply(&cg, &r, &e);
	if (mode != URS_CG_UNIFIED && !swap_on()) {
		/* v1 without swap cannot reclaim the child's anonymous memory */
		assert_int_equal(rc, -EBUSY);
		assert_string_equal(e.msg, "cgroup: writing \"4096\" to memory.limit_in_bytes: "
					   "Device or resource busy");
	} /* (cgroup2 OOM-kills instead; with swap the kernel may swap the child out) */

	OK(urs_cg_kill_all(&cg, SIGKILL, &e));
	reap_killed(child, SIGKILL);
	OK(urs_cg_destroy(&cg, &e));
	assert_all_gone(&cg);
}

static bool has_file(int h, const char *file)
{
	char p[URS_CG_PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", cg.h[h].path, file);
	return cg.h[h].path[0] && access(p, F_OK) == 0;
}

/* #17.5: blockIO, kernelTCP, cpu burst: written where runc writes them; what
 * the host cannot take is refused naming the linux.resources field */
static void test_apply_more(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	char id[64];
	mkid(id, sizeof(id), "more");
	OK(urs_cg_create(&cg, NULL, id, 0, &e));
	const struct urs_cg_blkio_dev rbps[] = {{7, 0, 1048576}}, wiops[] = {{7, 0, 100}};
	struct urs_cg_resources r = URS_CG_RESOURCES_INIT;
	r.blkio_throttle[URS_CG_THR_RBPS] = rbps;
	r.n_blkio_throttle[URS_CG_THR_RBPS] = 1;
	r.blkio_throttle[URS_CG_THR_WIOPS] = wiops;
	r.n_blkio_throttle[URS_CG_THR_WIOPS] = 1;
	char buf[256];
	if (mode != URS_CG_UNIFIED && has_file(URS_CG_BLKIO, "blkio.throttle.read_bps_device")) {
		r.has_cpu_burst = has_file(URS_CG_CPU, "cpu.cfs_burst_us");
		r.cpu_burst = 1000;
		r.mem_kernel_tcp =
			has_file(URS_CG_MEMORY, "memory.kmem.tcp.limit_in_bytes") ? 1 << 24 : 0;
		OK(urs_cg_apply(&cg, &r, &e));
		const char *b = cg.h[URS_CG_BLKIO].path;
		assert_file(b, "blkio.throttle.read_bps_device", "7:0 1048576");
		assert_file(b, "blkio.throttle.write_iops_device", "7:0 100");
		if (r.has_cpu_burst)
			assert_file(cg.h[URS_CG_CPU].path, "cpu.cfs_burst_us", "1000");
		if (r.mem_kernel_tcp)
			assert_file(cg.h[URS_CG_MEMORY].path, "memory.kmem.tcp.limit_in_bytes",
				    "16777216");
		r = (struct urs_cg_resources) URS_CG_RESOURCES_INIT;
		r.blkio_leaf_weight = 300; /* CFQ only: gone since Linux 5.0 */
		if (!has_file(URS_CG_BLKIO, "blkio.leaf_weight")) {
			assert_int_equal(urs_cg_apply(&cg, &r, &e), -EOPNOTSUPP);
			assert_string_equal(e.msg,
					    "linux.resources.blockIO.leafWeight: not supported "
					    "on this host (the blkio cgroup has no "
					    "blkio.leaf_weight)");
		}
	} else if (mode == URS_CG_UNIFIED && has_file(URS_CG_V2, "io.max")) {
		OK(urs_cg_apply(&cg, &r, &e));
		assert_true(read_file(cg.h[URS_CG_V2].path, "io.max", buf, sizeof(buf)) >= 0);
		assert_non_null(strstr(buf, "7:0 rbps=1048576"));
	}
	const struct urs_cg_hugepage hp[] = {{"2MB", 1 << 21}};
	r = (struct urs_cg_resources) URS_CG_RESOURCES_INIT;
	r.hugepages = hp;
	r.n_hugepages = 1;
	if (mode != URS_CG_UNIFIED) {
		assert_int_equal(urs_cg_apply(&cg, &r, &e), -EOPNOTSUPP);
		assert_msg(&e, "linux.resources.hugepageLimits: not supported", NULL);
	}
	r = (struct urs_cg_resources) URS_CG_RESOURCES_INIT;
	r.has_net_classid = true;
	r.net_classid = 0x100001;
	assert_int_equal(urs_cg_apply(&cg, &r, &e), -EOPNOTSUPP);
	assert_msg(&e, "linux.resources.network.classID: not supported", NULL);
	r = (struct urs_cg_resources) URS_CG_RESOURCES_INIT;
	r.rdma = true;
	assert_int_equal(urs_cg_apply(&cg, &r, &e), -EOPNOTSUPP);
	assert_msg(&e, "linux.resources.rdma: not supported", NULL);
	OK(urs_cg_destroy(&cg, &e));
	assert_all_gone(&cg);
}

static void test_bad_args(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	assert_int_equal(urs_cg_create(&cg, NULL, "a/b", 0, &e), -EINVAL);
	assert_msg(&e, "container id", "a/b");
	assert_int_equal(urs_cg_create(&cg, NULL, "", 0, &e), -EINVAL);
	assert_int_equal(urs_cg_create(&cg, NULL, "..", 0, &e), -EINVAL);
	assert_int_equal(urs_cg_create(&cg, "x/../../y", "id", 0, &e), -EINVAL);
	assert_msg(&e, "cgroupsPath", "x/../../y");
	assert_int_equal(urs_cg_create(&cg, "/", "id", 0, &e), -EINVAL);
	assert_msg(&e, "root", NULL);
	assert_int_equal(urs_cg_create(&cg, "//./", "id", 0, &e), -EINVAL);
	assert_int_equal(urs_cg_create(&cg, "a;b", "id", 0, &e), -EINVAL);
}

/* An existing cgroup with processes is refused, and the refusal removes
 * nothing of the owner's. */
static void test_existing_busy(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	char id[64];
	mkid(id, sizeof(id), "busy");
	OK(urs_cg_create(&cg, NULL, id, 0, &e));
	int go, ready;
	pid_t child = spawn(NULL, &go, &ready, false);
	OK(urs_cg_enter(&cg, child, &e));
	release(go, ready);

	assert_int_equal(urs_cg_create(&cg2, NULL, id, 0, &e), -EBUSY);
	assert_msg(&e, "already exists", id);
	for (int h = 0; h < URS_CG_NHIER; h++)
		if (cg.h[h].path[0])
			assert_true(exists(cg.h[h].path));
	OK(urs_cg_destroy(&cg2, &e)); /* made nothing, removes nothing */
	for (int h = 0; h < URS_CG_NHIER; h++)
		if (cg.h[h].path[0])
			assert_true(exists(cg.h[h].path));

	OK(urs_cg_kill_all(&cg, SIGKILL, &e));
	reap_killed(child, SIGKILL);
	OK(urs_cg_destroy(&cg, &e));
	assert_all_gone(&cg);
}

/* Creation fails in the last hierarchy (cgroup2, cgroup.max.depth = 0 on
 * the parent): what was made in the v1 hierarchies is removed again. */
static void test_partial_create(void **state)
{
	(void) state;
	NEED();
	if (mode != URS_CG_HYBRID)
		URS_CM_SKIP("hybrid hosts only (v1 controllers beside cgroup2)");
	struct urs_err e = {{0}};
	char hid[64], path[128];
	mkid(hid, sizeof(hid), "holder");
	OK(urs_cg_create(&holder, hid, NULL, 0, &e));
	char p[URS_CG_PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/cgroup.max.depth", holder.h[URS_CG_V2].path);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0", 1), 1);
	close(fd);

	snprintf(path, sizeof(path), "%s/a/b", hid);
	int rc = urs_cg_create(&cg, path, "unused", 0, &e);
	assert_int_equal(rc, -EAGAIN);
	assert_msg(&e, "creating", hid);
	for (int h = 0; h < URS_CG_V2; h++) {
		if (!holder.h[h].path[0])
			continue;
		snprintf(p, sizeof(p), "%s/a", holder.h[h].path);
		if (exists(p))
			fail_msg("%s left behind", p);
		assert_true(exists(holder.h[h].path));
	}
	OK(urs_cg_destroy(&cg, &e)); /* nothing more to do */
	OK(urs_cg_destroy(&holder, &e));
	assert_all_gone(&holder);
}

/* An absolute cgroupsPath is used as-is in every hierarchy (runc). */
static void test_absolute(void **state)
{
	(void) state;
	NEED();
	if (mode == URS_CG_UNIFIED)
		URS_CM_SKIP("not on a unified host");
	struct urs_err e = {{0}};
	char own[512], id[64], path[700], want[URS_CG_PATH_MAX + 700];
	own_cgroup("memory", own, sizeof(own));
	mkid(id, sizeof(id), "abs");
	snprintf(path, sizeof(path), "%s/%s/x", own, id);
	OK(urs_cg_create(&cg, path, NULL, 0, &e));
	snprintf(want, sizeof(want), "/sys/fs/cgroup/memory%s", path);
	assert_string_equal(cg.h[URS_CG_MEMORY].path, want);
	assert_int_equal(cg.h[URS_CG_MEMORY].created, 2);
	snprintf(want, sizeof(want), "/sys/fs/cgroup/pids%s", path);
	assert_string_equal(cg.h[URS_CG_PIDS].path, want);
	OK(urs_cg_destroy(&cg, &e));
	assert_all_gone(&cg);
	snprintf(want, sizeof(want), "/sys/fs/cgroup/memory%s/%s", own, id);
	assert_false(exists(want));
}

static void test_string_roundtrip(void **state)
{
	(void) state;
	NEED();
	struct urs_err e = {{0}};
	char id[64];
	mkid(id, sizeof(id), "str");
	OK(urs_cg_create(&cg, NULL, id, 0, &e));

	char s[URS_CG_STRING_MAX], s2[URS_CG_STRING_MAX];
	int n = urs_cg_to_string(&cg, s, sizeof(s));
	assert_true(n > 0);
	assert_int_equal((size_t) n, strlen(s));
	assert_int_equal(strncmp(s, "mode=", 5), 0);
	assert_int_equal(urs_cg_to_string(&cg, s2, 10), -ENOSPC);
	OK(urs_cg_from_string(&back, s, &e));
	assert_int_equal(back.mode, cg.mode);
	for (int h = 0; h < URS_CG_NHIER; h++) {
		assert_string_equal(back.h[h].path, cg.h[h].path);
		assert_int_equal(back.h[h].alias, cg.h[h].alias);
		if (cg.h[h].alias < 0)
			assert_int_equal(back.h[h].created, cg.h[h].created);
		assert_int_equal(back.h[h].fd, -1);
	}
	assert_int_equal(urs_cg_to_string(&back, s2, sizeof(s2)), n);
	assert_string_equal(s, s2);

	static const char *const bad[] = {
		"",
		"mode=weird",
		"memory=1:/sys/fs/cgroup/memory/x",
		"mode=hybrid;bogus=1:/x",
		"mode=hybrid;memory=1:relative",
		"mode=hybrid;memory=x:/a",
		"mode=hybrid;memory=1:/a/../b",
		"mode=hybrid;memory=1:/a;memory=1:/b",
		"mode=hybrid;memory=1:/tmp/x", /* outside the cgroup mounts */
		"mode=hybrid;memory=1:/sys/fs/cgroupx/a",
		"mode=hybrid;memory=1:/sys/fs/cgroup",
	};
	struct urs_cgroup junk;
	for (size_t i = 0; i < URS_ARRAY_SIZE(bad); i++) {
		if (urs_cg_from_string(&junk, bad[i], &e) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
	}

	/* a later CLI invocation removes the cgroup through the string */
	urs_cg_close(&cg);
	OK(urs_cg_destroy(&back, &e));
	assert_all_gone(&cg);
}

/* Last: nothing of ours is left beneath our cgroup in any hierarchy. */
static void test_nothing_left(void **state)
{
	(void) state;
	NEED();
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "cgtest-%d-", (int) getpid());
	for (int h = 0; h < URS_CG_NHIER; h++) {
		if (!base[h][0])
			continue;
		for (int level = 0; level < 2; level++) {
			char dir[URS_CG_PATH_MAX + 8];
			snprintf(dir, sizeof(dir), "%s%s", base[h], level ? "/ursa" : "");
			DIR *d = opendir(dir);
			if (!d) {
				assert_int_equal(level, 1);
				continue;
			}
			bool empty = true;
			struct dirent *ent;
			while ((ent = readdir(d))) {
				if (ent->d_type != DT_DIR || ent->d_name[0] == '.')
					continue;
				empty = false;
				if (!strncmp(ent->d_name, prefix, strlen(prefix)))
					fail_msg("%s/%s left behind", dir, ent->d_name);
			}
			closedir(d);
			/* we made ursa/ ourselves: it must not linger empty */
			if (level == 1 && !ursa_existed[h] && empty)
				fail_msg("%s left behind (empty)", dir);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_mode, teardown),
		cmocka_unit_test_teardown(test_create_nested, teardown),
		cmocka_unit_test_teardown(test_apply_readback, teardown),
		cmocka_unit_test_teardown(test_lifecycle, teardown),
		cmocka_unit_test_teardown(test_self_migration, teardown),
		cmocka_unit_test_teardown(test_kill_tree, teardown),
		cmocka_unit_test_teardown(test_bad_values, teardown),
		cmocka_unit_test_teardown(test_apply_more, teardown),
		cmocka_unit_test_teardown(test_bad_args, teardown),
		cmocka_unit_test_teardown(test_existing_busy, teardown),
		cmocka_unit_test_teardown(test_partial_create, teardown),
		cmocka_unit_test_teardown(test_absolute, teardown),
		cmocka_unit_test_teardown(test_string_roundtrip, teardown),
		cmocka_unit_test_teardown(test_nothing_left, teardown),
	};
	return cmocka_run_group_tests_name("cgroup", tests, setup, NULL);
}
