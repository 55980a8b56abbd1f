/*
 * shim/task.c — the records of the Task service (shim/task.h): containers
 * and processes, what happens when a process exits, and the events that
 * tell containerd. The calls themselves are in shim/task_rpc.c.
 *
 * Order of events. A process that exits while the operation that makes or
 * starts it is still running (an init dead before `create` returned its
 * pid, an exec'd `true`) has its exit held until that operation's own
 * event is out: containerd must see create/start (exec-started) first.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/common.h"
#include "shim/proto/events.pb-c.h"
#include "shim/proto/task.pb-c.h"
#include "shim/logger.h"
#include "shim/rootfs.h"
#include "shim/task.h"

struct shim_ctr *shim_task_find(struct shim_task *t, const char *id)
{
	for (struct shim_ctr *c = t->ctrs; c; c = c->next)
		if (!strcmp(c->id, id))
			return c;
	return NULL;
}

void shim_task_ts(Google__Protobuf__Timestamp *ts, const struct timespec *at)
{
	google__protobuf__timestamp__init(ts);
	ts->seconds = at->tv_sec;
	ts->nanos = (int32_t) at->tv_nsec;
}

static void answer_waits(struct shim_proc *p)
{
	Containerd__Task__V2__WaitResponse w = CONTAINERD__TASK__V2__WAIT_RESPONSE__INIT;
	Google__Protobuf__Timestamp ts;
	shim_task_ts(&ts, &p->exited_at);
	w.exit_status = p->exit_status;
	w.exited_at = &ts;
	for (uint32_t i = 0; i < p->nwaits; i++)
		ttrpc_reply(p->waits[i], &w.base);
	free(p->waits);
	p->waits = NULL;
	p->nwaits = p->capwaits = 0;
}

/* the exit is known and may be told: STOPPED, the event, the waiters */
void shim_task_report_exit(struct shim_task *t, struct shim_proc *p)
{
	p->st = SHIM_STOPPED;
	p->exit_held = false;
	shim_stdio_close_stdin(&p->io);
	Containerd__Events__TaskExit ev = CONTAINERD__EVENTS__TASK_EXIT__INIT;
	Google__Protobuf__Timestamp ts;
	shim_task_ts(&ts, &p->exited_at);
	ev.container_id = p->ctr->id;
	ev.id = p->exec_id ? p->exec_id : p->ctr->id;
	ev.pid = (uint32_t) p->pid;
	ev.exit_status = p->exit_status;
	ev.exited_at = &ts;
	t->publish(t->pub_arg, "/tasks/exit", "containerd.events.TaskExit", &ev.base);
	answer_waits(p);
}

/* a process's exit, from the reaper (or found kept when it was watched) */
void shim_task_exited(struct shim_task *t, struct shim_proc *p, int status,
		      const struct timespec *at)
{
	p->reaped = true;
	p->exit_status = shim_wait_code(status);
	p->exited_at = *at;
	if (p->ctr->gone)
		return; /* deleted: containerd has been told */
	if (p->op)
		p->exit_held = true;
	else
		shim_task_report_exit(t, p);
}

static void proc_exit_cb(void *arg, pid_t pid, int status, const struct timespec *at)
{
	(void) pid;
	struct shim_proc *p = arg;
	shim_task_exited(p->ctr->task, p, status, at);
}

/* watch a process the backend made; an exit already seen is taken now */
int shim_task_watch(struct shim_task *t, struct shim_proc *p, uint64_t since)
{
	int status;
	struct timespec at;
	int r = shim_reaper_watch(t->reaper, p->pid, since, proc_exit_cb, p, &status, &at);
	if (r == 1)
		shim_task_exited(t, p, status, &at);
	return r < 0 ? r : 0;
}

int shim_task_add_wait(struct shim_proc *p, struct ttrpc_call *call)
{
	void *arr = p->waits;
	if (urs_grow(&arr, &p->capwaits, p->nwaits, sizeof(*p->waits), 2) < 0)
		return -ENOMEM;
	p->waits = arr;
	p->waits[p->nwaits++] = call;
	return 0;
}

static void logger_exit_cb(void *arg, pid_t pid, int status, const struct timespec *at)
{
	(void) arg, (void) pid, (void) status, (void) at; /* reaped: all it needed */
}

/* stdout and stderr to a logging binary (shim/logger.h), which the reaper
 * reaps when it ends (an exit before the watch, after @since, is kept);
 * its readiness is awaited by shim_task_proc_ready() */
static int proc_logger(struct shim_task *t, struct shim_proc *p, uint64_t since,
		       struct urs_err *err)
{
	int out, errfd, ready;
	pid_t pid;
	int e = shim_logger_spawn(p->out, p->exec_id ? p->exec_id : p->ctr->id,
				  t->ns ? t->ns : "default", &out, &errfd, &ready, &pid, err);
	if (e < 0)
		return e;
	p->logger = (int) syscall(SYS_pidfd_open, pid, 0);
	e = p->logger < 0 ? -errno : 0;
	if (e < 0) /* no handle to end it by later: ended now (not reaped yet: ours) */
		kill(pid, SIGKILL);
	int status;
	struct timespec at;
	shim_reaper_watch(t->reaper, pid, since, logger_exit_cb, NULL, &status, &at);
	if (e < 0) {
		close(out), close(errfd), close(ready);
		return urs_err_set(err, e, "logging binary %s: pidfd_open: %s", p->out,
				   strerror(-e));
	}
	p->logger_ready = ready;
	if (p->io.fd[1] >= 0)
		close(p->io.fd[1]);
	p->io.fd[1] = out;
	if (p->terminal) { /* the terminal carries both: no stderr, EOF at once */
		close(errfd);
	} else {
		if (p->io.fd[2] >= 0)
			close(p->io.fd[2]);
		p->io.fd[2] = errfd;
	}
	return 0;
}

int shim_task_proc_io(struct shim_task *t, struct shim_proc *p, struct urs_err *err)
{
	bool logger = shim_logger_is(p->out);
	uint64_t since = shim_reaper_seq(t->reaper);
	int e = shim_stdio_open(&p->io, p->in, logger ? "" : p->out, logger ? "" : p->err,
				p->terminal, err);
	if (e == 0 && logger && (e = proc_logger(t, p, since, err)) < 0)
		shim_stdio_close(&p->io);
	if (e < 0 || !p->terminal)
		return e;
	p->con_lfd = shim_console_listen(t->run_dir, p->con_path, sizeof(p->con_path));
	if (p->con_lfd < 0)
		return urs_err_set(err, p->con_lfd, "console socket in %s: %s", t->run_dir,
				   strerror(-p->con_lfd));
	return 0;
}

int shim_task_proc_ready(struct shim_task *t, struct shim_proc *p, shim_done done, void *arg)
{
	if (p->logger_ready < 0)
		return 0;
	int fd = p->logger_ready;
	p->logger_ready = -1;
	int e = shim_logger_await(t->loop, fd, p->out,
				  t->logger_ready_ms ? t->logger_ready_ms : SHIM_LOGGER_READY_MS,
				  done, arg);
	return e < 0 ? e : 1;
}

void shim_task_proc_unready(struct shim_proc *p)
{
	if (p->logger >= 0) /* not ready: not told to end, made to */
		syscall(SYS_pidfd_send_signal, p->logger, SIGKILL, NULL, 0);
}

int shim_task_proc_io_done(struct shim_task *t, struct shim_proc *p, struct urs_err *err)
{
	if (!p->terminal) {
		shim_stdio_close(&p->io); /* the process has them now */
		return 0;
	}
	int m = shim_console_take(p->con_lfd, p->con_path);
	p->con_lfd = -1;
	if (m < 0)
		return urs_err_set(err, m, "no terminal came over the console socket: %s",
				   strerror(-m));
	p->con = shim_console_start(t->loop, m, p->io.fd[0], p->io.fd[1]);
	p->io.fd[0] = p->io.fd[1] = -1; /* the console's now */
	if (!p->con)
		return urs_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

void shim_task_proc_free(struct shim_task *t, struct shim_proc *p)
{
	if (p->con)
		shim_console_close(p->con);
	if (p->con_lfd >= 0) {
		close(p->con_lfd);
		unlink(p->con_path);
	}
	if (p->pid > 0 && !p->reaped)
		shim_reaper_unwatch(t->reaper, p->pid);
	for (uint32_t i = 0; i < p->nwaits; i++)
		ttrpc_fail(p->waits[i], TTRPC_NOT_FOUND, "process %s deleted: not found",
			   p->exec_id ? p->exec_id : p->ctr->id);
	free(p->waits);
	shim_stdio_close(&p->io);
	shim_stdio_close_stdin(&p->io);
	if (p->logger_ready >= 0)
		close(p->logger_ready);
	if (p->logger >= 0) { /* it ends at end of input; deleted first: told to */
		syscall(SYS_pidfd_send_signal, p->logger, SIGTERM, NULL, 0);
		close(p->logger);
		p->logger = -1;
	}
	free(p->exec_id);
	free(p->spec);
	free(p->in);
	free(p->out);
	free(p->err);
}

void shim_task_ctr_gone(struct shim_task *t, struct shim_ctr *c)
{
	for (struct shim_ctr **pp = &t->ctrs; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	c->gone = true;
	if (c->oom) { /* v1 signals the eventfd when the cgroup goes: not an OOM */
		shim_oom_stop(c->oom);
		c->oom = NULL;
	}
	if (!c->pending)
		shim_task_ctr_free(t, c);
}

void shim_task_ctr_free(struct shim_task *t, struct shim_ctr *c)
{
	for (struct shim_ctr **pp = &t->ctrs; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	while (c->execs) {
		struct shim_proc *p = c->execs;
		c->execs = p->next;
		shim_task_proc_free(t, p);
		free(p);
	}
	shim_task_proc_free(t, &c->init);
	if (c->oom)
		shim_oom_stop(c->oom);
	if (c->rootfs_mounted)
		shim_rootfs_umount(c->bundle);
	free(c->id);
	free(c->bundle);
	free(c->checkpoint);
	free(c);
}

static void oom_cb(void *arg)
{
	struct shim_ctr *c = arg;
	shim_task_publish_id(c->task, "/tasks/oom", "containerd.events.TaskOOM", c->id);
}

void shim_task_watch_oom(struct shim_task *t, struct shim_ctr *c)
{
	struct urs_cgroup cg;
	if (c->oom || !t->be->cgroup || t->be->cgroup(t->be_arg, c, &cg) < 0)
		return;
	c->oom = shim_oom_watch(t->loop, &cg, oom_cb, c); /* none: no events, as without */
	urs_cg_close(&cg);
}

void shim_task_fini(struct shim_task *t)
{
	while (t->ctrs)
		shim_task_ctr_free(t, t->ctrs);
}

/* publish a container-id-only event (paused, resumed, oom) */
void shim_task_publish_id(struct shim_task *t, const char *topic, const char *type_url,
			  const char *id)
{
	Containerd__Events__TaskOOM ev = CONTAINERD__EVENTS__TASK_OOM__INIT;
	ev.container_id = (char *) id;
	t->publish(t->pub_arg, topic, type_url, &ev.base);
}
