/*
 * actors/sup_restore.c — `ursa restore` from the supervisor's side
 * (docs/checkpoint.md): its own saved state read and verified before
 * anything is created; the files of the tmpfs mounts and of a writable
 * layer put back before the processes; and with gofer volumes, the restore
 * run late, on a thread, once the volumes serve, READY after it. A plain
 * restore is one boot step (sup_boot_restore, actors/sup_boot.c).
 */
#include "actors/sup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "actors/checkpointer.h"
#include "actors/gofer/gofer.h"
#include "ckpt/lazy.h"
#include "ckpt/restore.h"
#include "ckpt/tmpfs.h"
#include "ckpt/trace.h"
#include "runtime/common.h"
#include "runtime/loop.h"

/* ursa restore: DIR/supervisor.img, verified with this host's key; none is
 * fine (older image) */
int sup_supstate_load(struct sup *s, struct urs_err *err)
{
	const struct urs_sup_args *a = s->a;
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", a->restore_dir, URS_SUPSTATE_FILE);
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	uint8_t key[URS_CKPT_KEY_LEN];
	int r = urs_ckpt_key(NULL, false, key, err);
	if (r < 0) {
		char m[sizeof(err->msg)];
		snprintf(m, sizeof(m), "%s", err->msg);
		return urs_err_set(err, r, "supervisor state %s refused: %s", path, m);
	}
	r = urs_supstate_read(a->restore_dir, key, sizeof(key), &s->saved, err);
	explicit_bzero(key, sizeof(key));
	return r == -ENOENT ? 0 : r;
}

/*
 * Before the processes come back: the files of the sandbox's tmpfs mounts
 * (ckpt/tmpfs.h), each mount's old device mapped to its new one; and
 * for `ursa do --id`, whose writable layer the CLI unpacked into the bundle
 * (ckpt/layer.c), the device its files showed (DIR/layer.dev: a file and
 * its old st_dev) to the one the same file shows now. Their files are new:
 * any inode.
 */
int sup_restore_files(struct sup *s, struct ckpt_dev_map *map, uint32_t *n, struct urs_err *err)
{
	struct urs_sup_args *a = s->a;
	/* the tmpfs contents we write are charged to our memory cgroup */
	int r = ckpt_tmpfs_has_content(a->restore_dir) ? sup_join_v2_now(NULL) : 0;
	if (r < 0)
		return urs_err_set(err, r, "restore: joining the sandbox's cgroup: %s",
				   strerror(-r));
	r = ckpt_tmpfs_restore(s->init_pid, a->restore_dir, map, SUP_DEV_MAP - 1, n, err);
	if (r < 0)
		return r;
	char p[PATH_MAX + 16], line[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/layer.dev", a->restore_dir);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t len = read(fd, line, sizeof(line) - 1);
	line[len > 0 ? len : 0] = 0;
	char *tab = strchr(line, '\t'), *nl = strchr(line, '\n'), *end;
	unsigned long long old = strtoull(line, &end, 16);
	if (!tab || !nl || end != tab || tab[1] != '/')
		return urs_err_set(err, -EINVAL, "restore: %s: malformed", p);
	*nl = 0;
	snprintf(p, sizeof(p), "/proc/%d/root", (int) s->init_pid);
	_cleanup_close_ int rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int f =
		rootfd < 0 ? -1 : (int) syscall(SYS_openat2, rootfd, tab + 1, &how, sizeof(how));
	struct stat st;
	if (f < 0 || fstat(f, &st) < 0)
		return urs_err_set(err, -errno, "restore: the writable layer's %s: %m", tab + 1);
	map[(*n)++] = (struct ckpt_dev_map){.from = old, .to = st.st_dev, .any_ino = true};
	return 0;
}

struct late_restore {
	struct sup *s;
	uint8_t key[URS_CKPT_KEY_LEN]; /* ro.key */
	const char *dir;
	pid_t init;
	struct ckpt_restore_opts ro;
	struct ckpt_dev_map *map; /* ro.dev_map, filled on by sup_restore_files */
	uint32_t nmap;
	struct urs_err err;
	int r, efd;
	struct urs_op op;
	uint64_t val;
	bool done;
};

static void *late_restore_thread(void *p)
{
	struct late_restore *lr = p;
	ckpt_trace("sup: restoring (gofer volumes served)");
	/* here too: reaching a tmpfs may cross a volume, answered by the loop */
	lr->r = sup_restore_files(lr->s, lr->map, &lr->nmap, &lr->err);
	lr->ro.n_dev_map = lr->nmap;
	if (lr->r >= 0)
		lr->r = ckpt_restore_ex(lr->dir, &lr->ro, &(pid_t){0}, NULL, &lr->err);
	uint64_t one = 1;
	if (write(lr->efd, &one, sizeof(one)) < 0) {
		/* the eventfd cannot fail this way */
	}
	return NULL;
}

static void late_done_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) res, (void) flags;
	container_of(op, struct late_restore, op)->done = true;
}

/*
 * ursa restore with gofer volumes: the restored processes re-open their
 * files and working directories on the volumes by path, through the NEW
 * FUSE mounts, which only answer once their gofers serve on our loop. So
 * the restore runs here, after sup_gofer_start, on a thread of its own (the
 * ptrace tracer) while this thread serves the loop; READY is reported
 * after it. Files saved on the old FUSE device are accepted on the new one
 * (dev_map; inodes are the host's, checked).
 */
static int late_restore(struct sup *s, struct urs_err *err)
{
	struct urs_sup_args *a = s->a;
	static struct late_restore lr;
	static struct ckpt_dev_map map[SUP_DEV_MAP];
	uint32_t nmap = 0;
	for (int i = 0; i < URS_GOFER_MAX; i++) {
		if (!s->gdest[i] || !s->gfuse_dev[i])
			continue;
		uint64_t now = urs_gofer_mount_dev(s->init_pid, s->gdest[i]);
		if (now)
			map[nmap++] = (struct ckpt_dev_map){.from = s->gfuse_dev[i], .to = now};
	}
	lr = (struct late_restore){
		.s = s, .dir = a->restore_dir, .init = s->init_pid, .map = map, .nmap = nmap};
	lr.ro = (struct ckpt_restore_opts){.policy = a->restore_policy,
					   .puppet = s->init_pid,
					   .dev_map = map,
					   .n_dev_map = nmap,
					   .before_charged = sup_join_v2_now};
	sup_lazy_opts(s, &lr.ro);
	int r = urs_ckpt_key(NULL, false, lr.key, err);
	if (r < 0)
		return r;
	lr.ro.key = lr.key;
	lr.efd = eventfd(0, EFD_CLOEXEC);
	if (lr.efd < 0) {
		explicit_bzero(lr.key, sizeof(lr.key));
		return urs_err_set(err, -errno, "restore: eventfd: %m");
	}
	pthread_t th;
	r = pthread_create(&th, NULL, late_restore_thread, &lr);
	if (r) {
		explicit_bzero(lr.key, sizeof(lr.key));
		close(lr.efd);
		return urs_err_set(err, -r, "restore: thread: %s", strerror(r));
	}
	io_uring_prep_read(urs_op_sqe(&lr.op), lr.efd, &lr.val, sizeof(lr.val), 0);
	urs_submit(s->lp, &lr.op, late_done_cb);
	while (!lr.done)
		if (urs_loop_run_once(s->lp, true) < 0)
			break;
	pthread_join(th, NULL);
	close(lr.efd);
	explicit_bzero(lr.key, sizeof(lr.key));
	if (lr.r < 0)
		return urs_err_set(err, lr.r, "%s", lr.err.msg);
	return 0;
}

/* The pager failed (on its thread, with a table of its own): its tasks
 * are SIGKILLed, the init first; the reason goes where `ursa state` and
 * `ursa delete` find it (ROOT/ID/killed, cmd/cli.c urs_sup_killed). */
static void lazy_fail(void *ctx, const char *why)
{
	struct sup *s = ctx;
	char path[PATH_MAX];
	if (!s->a->state_dir ||
	    snprintf(path, sizeof(path), "%s/killed", s->a->state_dir) >= (int) sizeof(path))
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	dprintf(fd, "killed by ursa: %s\n", why);
	close(fd);
}

void sup_lazy_opts(struct sup *s, struct ckpt_restore_opts *ro)
{
	ro->lazy = s->a->restore_lazy;
	ro->lazy_remote = s->a->restore_remote;
	ro->unshared = s->a->restore_unshared;
	ro->lazy_src = s->a->restore_src;
	ro->lazy_out = &s->lazy;
	ro->lazy_fail = lazy_fail;
	ro->lazy_ctx = s;
}

/* ROOT/ID/paged: how the memory came in (one line, for people and
 * benchmarks); whether every page is in */
static bool lazy_report(struct sup *s)
{
	struct ckpt_lazy_stats st;
	char path[PATH_MAX];
	ckpt_lazy_stats(s->lazy, &st);
	if (!s->a->state_dir ||
	    snprintf(path, sizeof(path), "%s/paged", s->a->state_dir) >= (int) sizeof(path))
		return st.done;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return st.done;
	dprintf(fd,
		"%s ms=%.1f faults=%llu fault_pages=%llu zero_pages=%llu prefetch_pages=%llu "
		"spaces=%llu chunks=%llu ws_blocks=%llu hot_blocks=%llu ws_pages=%llu rec=%d "
		"rec_blocks=%llu dropped=%llu\n",
		st.done ? "done" : "failed", st.ms, (unsigned long long) st.faults,
		(unsigned long long) st.fault_pages, (unsigned long long) st.zero_pages,
		(unsigned long long) st.prefetch_pages, (unsigned long long) st.spaces,
		(unsigned long long) st.chunks, (unsigned long long) st.ws_blocks,
		(unsigned long long) st.hot_blocks, (unsigned long long) st.ws_pages, st.rec,
		(unsigned long long) st.rec_blocks, (unsigned long long) st.dropped);
	close(fd);
	return st.done;
}

static void lazy_done_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct sup *s = container_of(op, struct sup, lazy_op);
	if (res == -ECANCELED)
		return;
	s->paging = false;
	bool done = lazy_report(s);
	sup_exec_waiters_answer(s);
	if (!done)
		return; /* failed: its tasks are killed (lazy_fail), we stay for their end */
	/* every page in, every userfaultfd closed: the pager is of no more use */
	ckpt_lazy_free(s->lazy);
	s->lazy = NULL;
	sup_hand_over_late(s);
}

void sup_lazy_watch(struct sup *s)
{
	if (!s->lazy || s->lazy_watched)
		return;
	s->lazy_watched = true;
	s->paging = true;
	io_uring_prep_read(urs_op_sqe(&s->lazy_op), ckpt_lazy_done_fd(s->lazy), &s->lazy_val,
			   sizeof(s->lazy_val), 0);
	s->lazy_op.flags = URS_OPF_WEAK;
	urs_submit(s->lp, &s->lazy_op, lazy_done_cb);
}

/* ursa restore with gofer volumes: now that they serve; READY after it */
int sup_late_ready(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	int r = late_restore(s, &err);
	if (r < 0) {
		sup_kill_init(s);
		sup_report(a, r, s->init_pid, sup_cgstr, err.msg);
		sup_stop_actors(s);
		return 1;
	}
	sup_gofer_import(s);
	if (a->restore_remote && a->restore_src >= 0) { /* the pager has its own copy */
		close(a->restore_src);
		a->restore_src = -1;
	}
	sup_lazy_watch(s);
	if (sup_ready_recorded(s, sup_cgstr) < 0) {
		sup_stop_actors(s);
		sup_abandon(s);
		return 1;
	}
	if (a->start_now) { /* as above: the record first; the init runs already */
		close(s->sync_fd);
		s->sync_fd = -1;
	}
	s->started = s->execd = true; /* restored: it runs already */
	return 0;
}
