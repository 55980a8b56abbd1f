/*
 * shim/oom.c — OOM kills of a container's memory cgroup (shim/oom.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "runtime/common.h"
#include "shim/oom.h"

struct shim_oom {
	struct urs_loop *loop;
	struct urs_op op;
	int fd;				   /* the eventfd (v1) or the inotify fd (v2) */
	char events[URS_CG_PATH_MAX + 32]; /* memory.events (v2), memory.oom_control (v1) */
	uint64_t kills;			   /* their oom_kill count as last read */
	bool v2, stopped;
	void (*cb)(void *arg);
	void *arg;
	uint8_t buf[256]; /* an eventfd count or inotify events */
};

/* the "oom_kill N" count of memory.events (v2) or memory.oom_control (v1), or 0 */
static uint64_t oom_kills(const char *path)
{
	char b[1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	b[n > 0 ? n : 0] = 0;
	const char *k = strstr(b, "oom_kill ");
	return k ? strtoull(k + 9, NULL, 10) : 0;
}

static void arm(struct shim_oom *o);

static void read_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop, (void) flags;
	struct shim_oom *o = container_of(op, struct shim_oom, op);
	if (o->stopped || res <= 0) {
		close(o->fd);
		free(o);
		return;
	}
	/* both files count kills ("oom_kill N"); v1 also signals the eventfd
	 * when the cgroup is removed, which is no kill */
	uint64_t k = oom_kills(o->events);
	if (k > o->kills)
		o->cb(o->arg);
	o->kills = k;
	arm(o);
}

static void arm(struct shim_oom *o)
{
	io_uring_prep_read(urs_op_sqe(&o->op), o->fd, o->buf, sizeof(o->buf), 0);
	o->op.flags = URS_OPF_WEAK;
	urs_submit(o->loop, &o->op, read_cb);
}

static int watch_v1(struct shim_oom *o, const char *dir)
{
	char p[URS_CG_PATH_MAX + 32], line[64];
	snprintf(o->events, sizeof(o->events), "%s/memory.oom_control", dir);
	o->kills = oom_kills(o->events);
	int ctl = open(o->events, O_RDONLY | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	o->fd = eventfd(0, EFD_CLOEXEC);
	snprintf(p, sizeof(p), "%s/cgroup.event_control", dir);
	int ev = o->fd < 0 ? -1 : open(p, O_WRONLY | O_CLOEXEC);
	int n = snprintf(line, sizeof(line), "%d %d", o->fd, ctl);
	int r = ev >= 0 && write(ev, line, (size_t) n) == n ? 0 : -errno;
	if (ev >= 0)
		close(ev);
	close(ctl);
	return r;
}

static int watch_v2(struct shim_oom *o, const char *dir)
{
	snprintf(o->events, sizeof(o->events), "%s/memory.events", dir);
	o->v2 = true;
	o->kills = oom_kills(o->events);
	o->fd = inotify_init1(IN_CLOEXEC);
	if (o->fd < 0 || inotify_add_watch(o->fd, o->events, IN_MODIFY) < 0)
		return -errno;
	return 0;
}

struct shim_oom *shim_oom_watch(struct urs_loop *loop, const struct urs_cgroup *cg,
				void (*cb)(void *arg), void *arg)
{
	bool v2 = cg->mode == URS_CG_UNIFIED;
	const char *dir = cg->h[v2 ? URS_CG_V2 : URS_CG_MEMORY].path;
	if (!dir[0]) {
		errno = ENOENT;
		return NULL;
	}
	struct shim_oom *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	*o = (struct shim_oom){.loop = loop, .fd = -1, .cb = cb, .arg = arg};
	int r = v2 ? watch_v2(o, dir) : watch_v1(o, dir);
	if (r < 0) {
		if (o->fd >= 0)
			close(o->fd);
		free(o);
		errno = -r;
		return NULL;
	}
	arm(o);
	return o;
}

void shim_oom_stop(struct shim_oom *o)
{
	o->stopped = true;
	urs_cancel(o->loop, &o->op);
}
