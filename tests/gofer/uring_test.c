/*
 * tests/gofer/uring_test.c — the gofer's FUSE-over-io_uring transport
 * (actors/gofer/uring.c). As root, with the fuse module's enable_uring
 * parameter turned on for the test's duration (its old value is restored
 * at exit), in a private mount namespace on a private tmpfs:
 *   uring-pt   a gofer volume (passthrough): must negotiate io_uring
 *   uring-io   passthrough off, READDIR only: every byte through io_uring
 *   uring-off  io_uring offered but refused by the option (no_uring)
 * the whole conformance suite on uring-pt and uring-io (transcripts equal to
 * a plain bind mount's), then: requests really came through io_uring
 * (counted per completion of our ring, not inferred), the opt-out fell back
 * to /dev/fuse, a concurrent burst grew the entries within their bound,
 * idle memory returned, and with the parameter off a new volume uses the
 * classic protocol and passes a conformance test.
 * Exit 77 (skip) without root, /dev/fuse, or a writable enable_uring.
 */
#include <fcntl.h>
#include <linux/fuse.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actors/gofer/gofer.h"
#include "host/fuse_mount.h"
#include "tests/gofer/tap.h"

#define DIE(what) tap_die("uring_test", what)
#include "runtime/loop.h"
#include "runtime/timer.h"
#include "tests/gofer/conformance.h"
#include "tests/lib/skip.h"

struct shared {
	struct urs_gofer_stats st;
	size_t mem;
	int started;
};

struct vol {
	const char *name;
	char src[512], mnt[512];
	bool gofer;
	struct urs_gofer_opts o;
	pid_t server;
	struct shared *sh;
};

static char base[256];

/* ---- one gofer server per volume, in a child ---- */

struct server {
	struct urs_gofer *g;
	struct shared *sh;
	struct urs_timer tick;
};

static void tick_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct server *s = container_of(t, struct server, tick);
	if (res < 0)
		return;
	urs_gofer_get_stats(s->g, &s->sh->st);
	s->sh->mem = urs_gofer_mem(s->g);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (urs_gofer_done(s->g)) {
		urs_timer_cancel(loop, t);
		urs_loop_stop(loop);
	}
}

static void serve(int fuse_fd, const struct vol *v)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct urs_loop loop;
	int rfd = open(v->src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct server s = {.sh = v->sh};
	int r = urs_loop_init(&loop, NULL);
	if (r == 0)
		r = rfd < 0 ? -errno : urs_gofer_start(&loop, fuse_fd, rfd, &v->o, &s.g);
	if (rfd >= 0)
		close(rfd);
	if (r < 0) {
		v->sh->started = r;
		_exit(1);
	}
	v->sh->started = 1;
	urs_timer_start(&loop, &s.tick, 20000000ull, 20000000ull, tick_cb);
	urs_loop_run(&loop);
	urs_gofer_get_stats(s.g, &s.sh->st);
	urs_gofer_free(s.g);
	urs_loop_fini(&loop);
	_exit(0);
}

static void vol_up(struct vol *v)
{
	snprintf(v->src, sizeof(v->src), "%s/src-%s", base, v->name);
	snprintf(v->mnt, sizeof(v->mnt), "%s/mnt-%s", base, v->name);
	if (mkdir(v->src, 0755) < 0 || mkdir(v->mnt, 0755) < 0)
		DIE("mkdir");
	v->sh = mmap(NULL, sizeof(*v->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	if (v->sh == MAP_FAILED)
		DIE("mmap");
	if (!v->gofer) {
		if (mount(v->src, v->mnt, NULL, MS_BIND, NULL) < 0)
			DIE("bind mount");
		return;
	}
	struct urs_fuse_mount_opts mo = {.max_read = v->o.max_write};
	int fd = urs_fuse_mount(v->mnt, &mo);
	if (fd < 0) {
		errno = -fd;
		DIE("urs_fuse_mount");
	}
	v->o.trace = getenv("GOFER_TRACE") && !strcmp(getenv("GOFER_TRACE"), v->name);
	v->server = fork();
	if (v->server < 0)
		DIE("fork");
	if (v->server == 0)
		serve(fd, v);
	close(fd);
	struct stat st; /* the first access waits for INIT (and, with io_uring,
			 * for every queue's first entry) */
	if (stat(v->mnt, &st) < 0)
		DIE("stat of the new mount");
	if (v->sh->started != 1) {
		fprintf(stderr, "gofer server %s did not start: %d\n", v->name, v->sh->started);
		exit(1);
	}
}

static void vol_down(struct vol *v)
{
	if (umount2(v->mnt, MNT_DETACH) < 0)
		fprintf(stderr, "umount %s: %s\n", v->mnt, strerror(errno));
	if (!v->gofer)
		return;
	for (int k = 0; k < 1000; k++) {
		int ws;
		if (waitpid(v->server, &ws, WNOHANG) == v->server) {
			tap_report(WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
				   "%s: server exited cleanly after unmount", v->name);
			return;
		}
		usleep(10000);
	}
	tap_report(false, "%s: server exited after unmount", v->name);
	kill(v->server, SIGKILL);
	waitpid(v->server, NULL, 0);
}

/* Fresh stats: the servers publish them every 20 ms. */
static void settle(void)
{
	usleep(100000);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* ---- transcripts ---- */

static char *run_on(const struct vol *v, const char *name, test_fn fn, int *hard)
{
	struct tctx c = {.root = v->mnt, .name = name};
	char d[1024];
	snprintf(d, sizeof(d), "%s/%s", v->mnt, name);
	if (mkdir(d, 0755) < 0)
		tlog(&c, "mkdir test dir: %s\n", strerrorname_np(errno));
	fn(&c);
	*hard += c.failed;
	if (!c.log)
		tlog(&c, "(empty)\n");
	return c.log;
}

static void compare(const char *name, test_fn fn, const struct vol *oracle, struct vol **gofers,
		    int ng)
{
	int hard = 0;
	char *o = run_on(oracle, name, fn, &hard);
	for (int k = 0; k < ng; k++) {
		char *g = run_on(gofers[k], name, fn, &hard);
		tap_report(!strcmp(o, g) && !hard, "%s on %s matches the oracle", name,
			   gofers[k]->name);
		if (getenv("GOFER_TEST_VERBOSE") && strcmp(o, g))
			fprintf(stderr, "---- oracle ----\n%s---- %s ----\n%s", o, gofers[k]->name,
				g);
		free(g);
	}
	free(o);
}

/* @n processes stat @files distinct names each, uncached (attr_timeout 0):
 * requests from both CPUs at once. */
static void burst(const char *dir, int n, int files)
{
	char p[1024];
	for (int k = 0; k < files; k++) {
		snprintf(p, sizeof(p), "%s/b%d", dir, k);
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd >= 0)
			close(fd);
	}
	pid_t kids[16];
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			struct stat st;
			for (int r = 0; r < 5; r++)
				for (int k = 0; k < files; k++) {
					snprintf(p, sizeof(p), "%s/b%d", dir, k);
					stat(p, &st);
				}
			_exit(0);
		}
	}
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
}

static int possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int a, b, n = 0;
	char sep;
	if (!f)
		return -1;
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			if (fscanf(f, "%c", &sep) != 1)
				sep = 0;
		}
		n += b - a + 1;
		if (sep != ',')
			break;
	}
	fclose(f);
	return n;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0)
		return urs_skip("needs root");
	if (access("/dev/fuse", R_OK | W_OK) < 0)
		return urs_skip_or_fail("no /dev/fuse");
	if (!tap_uring_param('1'))
		return urs_test_ci() ? 1 : 77; /* tap.c said why */
	struct rlimit rl = {65536, 65536};
	setrlimit(RLIMIT_NOFILE, &rl);
	if (unshare(CLONE_NEWNS) < 0)
		DIE("unshare");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		DIE("make / private");
	snprintf(base, sizeof(base), "/tmp/ursa-uring-test-XXXXXX");
	if (!mkdtemp(base))
		DIE("mkdtemp");
	if (mount("tmpfs", base, "tmpfs", 0, "size=2g,mode=0755") < 0)
		DIE("tmpfs");

	struct vol oracle = {.name = "oracle"};
	struct vol pt = {.name = "uring-pt", .gofer = true, .o = {.idle_ns = 200000000ull}};
	struct vol io = {.name = "uring-io",
			 .gofer = true,
			 .o = {.no_passthrough = true,
			       .no_readdirplus = true,
			       .idle_ns = 200000000ull,
			       .attr_timeout_set = true}}; /* attr_timeout 0: nothing cached */
	struct vol off = {.name = "uring-off", .gofer = true, .o = {.no_uring = true}};
	vol_up(&oracle);
	vol_up(&pt);
	vol_up(&io);
	vol_up(&off);

	struct vol *both[] = {&pt, &io};
	for (const struct ctest *t = ctests; t->name; t++)
		compare(t->name, t->fn, &oracle, both, 2);
	compare("file_basic_off", ctests[0].fn, &oracle, (struct vol *[]){&off}, 1);

	settle();
	int nq = possible_cpus();
	for (int k = 0; k < 2; k++) {
		struct vol *v = both[k];
		const struct urs_gofer_stats *s = &v->sh->st;
		printf("# %s: %llu requests, %llu through io_uring, %u queues, %u entries, "
		       "%llu grows, passthrough %s\n",
		       v->name, (unsigned long long) s->requests,
		       (unsigned long long) s->uring_requests, s->uring_queues, s->uring_entries,
		       (unsigned long long) s->uring_grows, s->passthrough ? "yes" : "no");
		/* all but INIT, FORGET, BATCH_FORGET and INTERRUPT (always
		 * /dev/fuse) come through the ring */
		uint64_t classic = s->by_op[FUSE_INIT] + s->by_op[FUSE_FORGET] +
				   s->by_op[FUSE_BATCH_FORGET] + s->by_op[FUSE_INTERRUPT];
		tap_report(s->uring && s->uring_requests > 1000 &&
				   s->uring_requests + classic == s->requests,
			   "%s: negotiated FUSE over io_uring, every request but INIT/FORGET/"
			   "INTERRUPT came through it",
			   v->name);
		tap_report(s->uring_queues == (uint32_t) nq && s->uring_entries >= (uint32_t) nq,
			   "%s: one queue per possible CPU (%d), each with an entry", v->name, nq);
	}
	tap_report(io.sh->st.by_op[FUSE_READ] > 0 && io.sh->st.by_op[FUSE_WRITE] > 0 &&
			   io.sh->st.by_op[FUSE_READDIR] > 0,
		   "uring-io: READ, WRITE and READDIR answered through io_uring");
	tap_report(!off.sh->st.uring && off.sh->st.uring_requests == 0 && off.sh->st.requests > 10,
		   "uring-off: no_uring keeps the classic /dev/fuse protocol (%llu requests)",
		   (unsigned long long) off.sh->st.requests);

	/* growth under load (the concurrent tests of the suite, then a burst
	 * from 6 processes), bounded by max_bufs (8) / queues per queue */
	{
		uint32_t before = io.sh->st.uring_entries;
		char d[600];
		snprintf(d, sizeof(d), "%s/burst", io.mnt);
		mkdir(d, 0755);
		burst(d, 6, 100);
		settle();
		const struct urs_gofer_stats *s = &io.sh->st;
		uint32_t bound = (uint32_t) nq * (8 / (uint32_t) nq ? 8 / (uint32_t) nq : 1);
		printf("# uring-io burst: entries %u -> %u (bound %u), grows %llu\n", before,
		       s->uring_entries, bound, (unsigned long long) s->uring_grows);
		tap_report(s->uring_grows > 0 && s->uring_entries > (uint32_t) nq &&
				   s->uring_entries <= bound,
			   "uring-io: entries grew under load (the suite, a 6-process burst), "
			   "within max_bufs / queues per queue");
	}

	/* idle: payload pages of the entries waiting in the kernel returned */
	for (int k = 0; k < 1000; k++) {
		usleep(10000);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (k >= 70 && pt.sh->mem <= 64 * 1024 && io.sh->mem <= 64 * 1024)
			break;
	}
	printf("# idle memory: uring-pt %zu bytes, uring-io %zu bytes\n", pt.sh->mem, io.sh->mem);
	tap_report(pt.sh->mem <= 64 * 1024 && io.sh->mem <= 64 * 1024,
		   "idle io_uring volumes hold <= 64 KiB (entries' payload pages returned)");

	/* the parameter off: a new connection uses the classic protocol */
	if (!tap_uring_param('0'))
		DIE("enable_uring=0");
	struct vol cl = {.name = "classic", .gofer = true};
	vol_up(&cl);
	compare("file_basic_classic", ctests[0].fn, &oracle, (struct vol *[]){&cl}, 1);
	compare("dirs_classic", ctests[4].fn, &oracle, (struct vol *[]){&cl}, 1);
	settle();
	tap_report(!cl.sh->st.uring && cl.sh->st.uring_requests == 0 && cl.sh->st.requests > 10,
		   "enable_uring=0: not offered, classic /dev/fuse (%llu requests)",
		   (unsigned long long) cl.sh->st.requests);
	/* the io_uring connections keep working with the parameter off */
	compare("rename_after", ctests[6].fn, &oracle, (struct vol *[]){&io}, 1);

	vol_down(&cl);
	vol_down(&off);
	vol_down(&io);
	vol_down(&pt);
	vol_down(&oracle);
	umount2(base, MNT_DETACH);
	rmdir(base);
	return tap_done();
}
