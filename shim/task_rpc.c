/*
 * shim/task_rpc.c — the calls of containerd's Task service (shim/task.h):
 * each checks the state it needs and answers with containerd's codes and
 * its words ("...: not found"), or starts the backend's operation and
 * answers when that is done. What containerd relies on (its runtime/v2
 * README and its runc shim): Create answers with the init's pid and
 * publishes /tasks/create; Start (init or exec) publishes start or
 * exec-started before any exit; Kill of a finished process is NOT_FOUND;
 * Delete is for stopped or never-started processes; Wait answers at exit;
 * Shutdown ends the shim only when no container is left.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/proto/cgroups.pb-c.h"
#include "shim/proto/events.pb-c.h"
#include "shim/proto/task.pb-c.h"
#include "host/state.h"
#include "shim/rootfs.h"
#include "shim/task.h"

#define SVC "containerd.task.v2.Task"

typedef Containerd__Task__V2__DeleteRequest IdExec; /* id = 1, exec_id = 2 */
typedef Containerd__Task__V2__PidsRequest IdOnly;   /* id = 1 */

/* an operation under way: the call to answer when the backend is done */
struct pend {
	struct shim_task *t;
	struct ttrpc_call *call;
	struct shim_proc *p;
	uint64_t since; /* shim_reaper_seq() before the operation began */
	char *path;	/* a checkpoint's image path */
	int arg;	/* the operation's own: pause or resume */
};

/* an operation on @p begins: it holds @p's container until pend_free() */
static struct pend *pend_new(struct shim_task *t, struct ttrpc_call *call, struct shim_proc *p)
{
	struct pend *d = malloc(sizeof(*d));
	if (!d) {
		ttrpc_fail(call, TTRPC_INTERNAL, "out of memory");
		return NULL;
	}
	*d = (struct pend){.t = t, .call = call, .p = p};
	p->ctr->pending++;
	return d;
}

/* the operation is over: a container deleted meanwhile goes with its last one */
static void pend_free(struct pend *d)
{
	struct shim_task *t = d->t;
	struct shim_ctr *c = d->p->ctr;
	free(d->path);
	free(d);
	if (--c->pending == 0 && c->gone)
		shim_task_ctr_free(t, c);
}

/* an operation ended after its container was deleted: nobody to tell but the caller */
static bool pend_gone(struct pend *d)
{
	if (!d->p->ctr->gone)
		return false;
	ttrpc_fail(d->call, TTRPC_NOT_FOUND, "container %s deleted: not found", d->p->ctr->id);
	pend_free(d);
	return true;
}

/* Shutdown was asked for and the last container is gone: the shim ends */
static void maybe_empty(struct shim_task *t)
{
	if (t->shutdown && !t->ctrs && t->on_empty)
		t->on_empty(t->empty_arg);
}

#define FAIL(call, ...)                        \
	do {                                   \
		ttrpc_fail(call, __VA_ARGS__); \
		return;                        \
	} while (0)

static char *dup0(const char *s)
{
	return strdup(s ? s : "");
}

/* the process @id/@exec names, or NULL with the call failed as containerd expects */
static struct shim_proc *lookup(struct shim_task *t, struct ttrpc_call *call, const char *id,
				const char *exec)
{
	struct shim_ctr *c = shim_task_find(t, id);
	if (!c) {
		ttrpc_fail(call, TTRPC_NOT_FOUND, "container %s not created: not found", id);
		return NULL;
	}
	if (!exec || !*exec)
		return &c->init;
	for (struct shim_proc *p = c->execs; p; p = p->next)
		if (!strcmp(p->exec_id, exec))
			return p;
	ttrpc_fail(call, TTRPC_NOT_FOUND, "process does not exist %s: not found", exec);
	return NULL;
}

static const char *pname(const struct shim_proc *p)
{
	return p->exec_id ? p->exec_id : p->ctr->id;
}

/* -- Create -------------------------------------------------------------- */

static void create_reply(struct shim_task *t, struct pend *d);

/* a cleanup nobody waits for */
static void forget_done(void *arg, int err, const char *msg)
{
	(void) arg, (void) err, (void) msg;
}

static void create_done(void *arg, int err, const char *msg)
{
	struct pend *d = arg;
	struct shim_task *t = d->t;
	struct shim_proc *p = d->p;
	struct shim_ctr *c = p->ctr;
	struct urs_err why = {{0}};
	if (!err && (err = shim_task_proc_io_done(t, p, &why)) < 0)
		msg = why.msg;
	if (!err)
		err = shim_task_watch(t, p, d->since);
	if (err) {
		ttrpc_fail(d->call, TTRPC_UNKNOWN, "create %s: %s", c->id,
			   msg ? msg : strerror(-err));
		if (p->pid > 0) /* made, then failed here: not left behind */
			t->be->delete (t->be_arg, c, true, forget_done, NULL);
		shim_task_ctr_gone(t, c);
		pend_free(d);
		maybe_empty(t); /* a Shutdown that came meanwhile */
		return;
	}
	shim_task_watch_oom(t, c);
	create_reply(t, d);
}

/* CREATED: /tasks/create, the init's pid to the caller (0 until a restore) */
static void create_reply(struct shim_task *t, struct pend *d)
{
	struct shim_proc *p = d->p;
	struct shim_ctr *c = p->ctr;
	p->st = SHIM_CREATED;
	Containerd__Events__TaskIO io = CONTAINERD__EVENTS__TASK_IO__INIT;
	io.stdin = p->in, io.stdout = p->out, io.stderr = p->err, io.terminal = p->terminal;
	Containerd__Events__TaskCreate ev = CONTAINERD__EVENTS__TASK_CREATE__INIT;
	ev.container_id = c->id, ev.bundle = c->bundle, ev.io = &io, ev.pid = (uint32_t) p->pid;
	ev.checkpoint = c->checkpoint ? c->checkpoint : "";
	t->publish(t->pub_arg, "/tasks/create", "containerd.events.TaskCreate", &ev.base);
	Containerd__Task__V2__StartResponse r = CONTAINERD__TASK__V2__START_RESPONSE__INIT;
	r.pid = (uint32_t) p->pid;
	ttrpc_reply(d->call, &r.base);
	pend_free(d);
	p->op = false; /* its exit may be told now, after create */
	if (p->exit_held)
		shim_task_report_exit(t, p);
}

/* its logging binary, if any, is ready (@err 0) or not: the container is made */
static void create_go(void *arg, int err, const char *msg)
{
	struct pend *d = arg;
	struct shim_task *t = d->t;
	struct shim_ctr *c = d->p->ctr;
	if (err) {
		shim_task_proc_unready(&c->init);
		create_done(d, err, msg);
		return;
	}
	if (c->checkpoint) { /* restored at Start, as runc's shim does: no process yet */
		create_reply(t, d);
		return;
	}
	d->since = shim_reaper_seq(t->reaper);
	int e = t->be->create(t->be_arg, c, create_done, d);
	if (e < 0)
		create_done(d, e, NULL);
}

static struct shim_ctr *ctr_new(struct shim_task *t,
				const Containerd__Task__V2__CreateTaskRequest *r)
{
	struct shim_ctr *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->task = t;
	c->init.ctr = c;
	c->init.io = (struct shim_stdio){.fd = {-1, -1, -1}, .stdin_keep = -1};
	c->init.con_lfd = -1;
	c->init.logger = -1;
	c->init.logger_ready = -1;
	c->id = strdup(r->id);
	c->bundle = strdup(r->bundle);
	c->init.in = dup0(r->stdin);
	c->init.out = dup0(r->stdout);
	c->init.err = dup0(r->stderr);
	c->init.terminal = r->terminal;
	c->checkpoint = *r->checkpoint ? strdup(r->checkpoint) : NULL;
	c->next = t->ctrs;
	t->ctrs = c;
	if (!c->id || !c->bundle || !c->init.in || !c->init.out || !c->init.err) {
		shim_task_ctr_free(t, c);
		return NULL;
	}
	return c;
}

static void on_create(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct shim_task *t = arg;
	const Containerd__Task__V2__CreateTaskRequest *r = (const void *) req;
	struct urs_err err = {{0}};
	if (!*r->bundle)
		FAIL(call, TTRPC_INVALID_ARGUMENT, "create %s: a bundle is needed", r->id);
	if (urs_id_valid(r->id, &err) < 0) /* it names files: no '/' */
		FAIL(call, TTRPC_INVALID_ARGUMENT, "create: %s", err.msg);
	if (shim_task_find(t, r->id))
		FAIL(call, TTRPC_ALREADY_EXISTS, "task %s: already exists", r->id);
	struct shim_ctr *c = ctr_new(t, r);
	if (!c)
		FAIL(call, TTRPC_INTERNAL, "create %s: out of memory", r->id);
	int e = shim_rootfs_mount(c->bundle, r->rootfs, r->n_rootfs, &err);
	c->rootfs_mounted = e == 0 && r->n_rootfs;
	if (e == 0)
		e = shim_task_proc_io(t, &c->init, &err);
	struct pend *d = e ? NULL : pend_new(t, call, &c->init);
	if (e) {
		ttrpc_fail(call, TTRPC_UNKNOWN, "create %s: %s", r->id, err.msg);
		shim_task_ctr_free(t, c);
		return;
	}
	if (!d)
		return shim_task_ctr_free(t, c);
	c->init.op = true; /* Delete waits for it (refused meanwhile) */
	e = shim_task_proc_ready(t, &c->init, create_go, d);
	if (e <= 0)
		create_go(d, e, e ? strerror(-e) : NULL);
}

/* -- Start --------------------------------------------------------------- */

static void start_done(void *arg, int err, const char *msg)
{
	struct pend *d = arg;
	struct shim_task *t = d->t;
	struct shim_proc *p = d->p;
	struct urs_err why = {{0}};
	bool made = p->exec_id || p->ctr->checkpoint; /* exec'd or restored just now */
	if (made && p->ctr->gone && !err)
		p->op = false; /* its exit, if it comes, is nobody's: the container is gone */
	if (pend_gone(d))
		return;
	if (!err && made && (err = shim_task_proc_io_done(t, p, &why)) < 0)
		msg = why.msg;
	if (!err && made)
		err = shim_task_watch(t, p, d->since);
	if (err) {
		ttrpc_fail(d->call, TTRPC_UNKNOWN, "start %s: %s", pname(p),
			   msg ? msg : strerror(-err));
		pend_free(d);
		p->op = false;
		if (p->exit_held)
			shim_task_report_exit(t, p);
		return;
	}
	if (p->st != SHIM_STOPPED)
		p->st = SHIM_RUNNING;
	if (!p->exec_id)
		shim_task_watch_oom(t, p->ctr); /* a restored one's cgroup exists now */
	if (p->exec_id) {
		Containerd__Events__TaskExecStarted ev =
			CONTAINERD__EVENTS__TASK_EXEC_STARTED__INIT;
		ev.container_id = p->ctr->id, ev.exec_id = p->exec_id, ev.pid = (uint32_t) p->pid;
		t->publish(t->pub_arg, "/tasks/exec-started", "containerd.events.TaskExecStarted",
			   &ev.base);
	} else {
		Containerd__Events__TaskStart ev = CONTAINERD__EVENTS__TASK_START__INIT;
		ev.container_id = p->ctr->id, ev.pid = (uint32_t) p->pid;
		t->publish(t->pub_arg, "/tasks/start", "containerd.events.TaskStart", &ev.base);
	}
	Containerd__Task__V2__StartResponse r = CONTAINERD__TASK__V2__START_RESPONSE__INIT;
	r.pid = (uint32_t) p->pid;
	ttrpc_reply(d->call, &r.base);
	pend_free(d);
	p->op = false; /* its exit may be told now, after start */
	if (p->exit_held)
		shim_task_report_exit(t, p);
}

static void on_start(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct shim_task *t = arg;
	const IdExec *r = (const void *) req;
	struct shim_proc *p = lookup(t, call, r->id, r->exec_id);
	if (!p)
		return;
	if (p->st != SHIM_CREATED || p->op)
		FAIL(call, TTRPC_FAILED_PRECONDITION, "start %s: it is not created", pname(p));
	struct pend *d = pend_new(t, call, p);
	if (!d)
		return;
	p->op = true;
	int e;
	d->since = shim_reaper_seq(t->reaper);
	if (p->exec_id) {
		e = t->be->exec(t->be_arg, p, start_done, d);
	} else if (p->ctr->checkpoint) {
		e = t->be->restore(t->be_arg, p->ctr, start_done, d);
	} else {
		e = t->be->start(t->be_arg, p->ctr, start_done, d);
	}
	if (e < 0)
		start_done(d, e, NULL);
}

/* -- Exec ---------------------------------------------------------------- */

/* its logging binary, if any, is ready (@err 0) or not: the exec is added
 * (unless its container went, or another took its id, meanwhile) */
static void exec_go(void *arg, int err, const char *msg)
{
	struct pend *d = arg;
	struct shim_task *t = d->t;
	struct shim_proc *p = d->p;
	struct shim_ctr *c = p->ctr;
	int code = TTRPC_UNKNOWN;
	for (struct shim_proc **pp = &c->waiting; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	p->next = NULL;
	if (!err && (c->gone || c->deleting))
		code = TTRPC_NOT_FOUND, err = -ENOENT, msg = "its container was deleted: not found";
	else if (!err && c->init.st != SHIM_RUNNING)
		code = TTRPC_FAILED_PRECONDITION, err = -EINVAL,
		msg = "the container is not running";
	if (err) {
		ttrpc_fail(d->call, code, "exec %s: %s", p->exec_id, msg);
		shim_task_proc_unready(p);
		shim_task_proc_free(t, p);
		free(p);
		d->p = &c->init; /* what pend_free() looks at */
		pend_free(d);
		return;
	}
	p->st = SHIM_CREATED;
	p->next = c->execs;
	c->execs = p;
	Containerd__Events__TaskExecStarted ev = CONTAINERD__EVENTS__TASK_EXEC_STARTED__INIT;
	ev.container_id = c->id, ev.exec_id = p->exec_id; /* TaskExecAdded: no pid */
	t->publish(t->pub_arg, "/tasks/exec-added", "containerd.events.TaskExecAdded", &ev.base);
	ttrpc_reply(d->call, NULL);
	pend_free(d);
}

static void on_exec(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct shim_task *t = arg;
	const Containerd__Task__V2__ExecProcessRequest *r = (const void *) req;
	struct shim_proc *init = lookup(t, call, r->id, NULL);
	if (!init)
		return;
	struct urs_err err = {{0}};
	if (!r->spec)
		FAIL(call, TTRPC_INVALID_ARGUMENT, "exec in %s: a process is needed", r->id);
	if (urs_id_valid(r->exec_id, &err) < 0) /* it names files: no '/' */
		FAIL(call, TTRPC_INVALID_ARGUMENT, "exec in %s: exec %s", r->id, err.msg);
	struct shim_ctr *c = init->ctr;
	for (struct shim_proc *q = c->execs; q; q = q->next)
		if (!strcmp(q->exec_id, r->exec_id))
			FAIL(call, TTRPC_ALREADY_EXISTS, "id %s: already exists", r->exec_id);
	for (struct shim_proc *q = c->waiting; q; q = q->next) /* (reserved) */
		if (!strcmp(q->exec_id, r->exec_id))
			FAIL(call, TTRPC_ALREADY_EXISTS, "id %s: already exists", r->exec_id);
	if (init->st != SHIM_RUNNING)
		FAIL(call, TTRPC_FAILED_PRECONDITION, "exec %s: container %s is not running",
		     r->exec_id, r->id);
	struct shim_proc *p = calloc(1, sizeof(*p));
	if (!p)
		FAIL(call, TTRPC_INTERNAL, "out of memory");
	p->ctr = c;
	p->io = (struct shim_stdio){.fd = {-1, -1, -1}, .stdin_keep = -1};
	p->con_lfd = -1;
	p->logger = -1;
	p->logger_ready = -1;
	p->terminal = r->terminal;
	p->exec_id = strdup(r->exec_id);
	p->spec = malloc(r->spec->value.len + 1);
	p->in = dup0(r->stdin), p->out = dup0(r->stdout), p->err = dup0(r->stderr);
	int e = -ENOMEM;
	if (p->exec_id && p->spec && p->in && p->out && p->err) {
		memcpy(p->spec, r->spec->value.data, r->spec->value.len);
		p->spec[r->spec->value.len] = 0;
		e = shim_task_proc_io(t, p, &err);
	} else {
		urs_err_set(&err, e, "out of memory");
	}
	if (e) {
		shim_task_proc_free(t, p);
		free(p);
		FAIL(call, TTRPC_UNKNOWN, "exec %s: %s", r->exec_id, err.msg);
	}
	struct pend *d = pend_new(t, call, p); /* holds the container while its logger starts */
	if (!d) {
		shim_task_proc_free(t, p);
		free(p);
		return;
	}
	e = shim_task_proc_ready(t, p, exec_go, d);
	if (e > 0) { /* its id is taken meanwhile */
		p->next = c->waiting;
		c->waiting = p;
		return;
	}
	exec_go(d, e, e ? strerror(-e) : NULL);
}

/* -- State, Wait, Pids, Connect ------------------------------------------ */

static void on_state(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	const IdExec *r = (const void *) req;
	struct shim_proc *p = lookup(arg, call, r->id, r->exec_id);
	if (!p)
		return;
	Containerd__Task__V2__StateResponse s = CONTAINERD__TASK__V2__STATE_RESPONSE__INIT;
	Google__Protobuf__Timestamp ts;
	s.id = (char *) pname(p);
	s.exec_id = p->exec_id ? p->exec_id : "";
	s.bundle = p->ctr->bundle;
	s.pid = (uint32_t) (p->pid > 0 ? p->pid : 0);
	s.status = (Containerd__Task__V2__Status) p->st;
	s.stdin = p->in, s.stdout = p->out, s.stderr = p->err, s.terminal = p->terminal;
	if (p->st == SHIM_STOPPED) {
		s.exit_status = p->exit_status;
		shim_task_ts(&ts, &p->exited_at);
		s.exited_at = &ts;
	}
	ttrpc_reply(call, &s.base);
}

static void on_wait(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	const IdExec *r = (const void *) req;
	struct shim_proc *p = lookup(arg, call, r->id, r->exec_id);
	if (!p)
		return;
	if (p->st == SHIM_STOPPED) {
		Containerd__Task__V2__WaitResponse w = CONTAINERD__TASK__V2__WAIT_RESPONSE__INIT;
		Google__Protobuf__Timestamp ts;
		shim_task_ts(&ts, &p->exited_at);
		w.exit_status = p->exit_status;
		w.exited_at = &ts;
		ttrpc_reply(call, &w.base);
	} else if (shim_task_add_wait(p, call) < 0) {
		ttrpc_fail(call, TTRPC_INTERNAL, "out of memory");
	}
}

/* an exec'd process's info: containerd.runc.v1.ProcessDetails with its id */
static void exec_info(Google__Protobuf__Any *any, uint8_t *buf, size_t len, const char *exec_id)
{
	Containerd__Task__V2__ProcessDetails pd = CONTAINERD__TASK__V2__PROCESS_DETAILS__INIT;
	pd.exec_id = (char *) exec_id;
	google__protobuf__any__init(any);
	any->type_url = "containerd.runc.v1.ProcessDetails";
	any->value.data = buf;
	any->value.len = containerd__task__v2__process_details__get_packed_size(&pd) <= len
				 ? containerd__task__v2__process_details__pack(&pd, buf)
				 : 0;
}

static void on_pids(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct shim_task *t = arg;
	const IdOnly *r = (const void *) req;
	struct shim_proc *init = lookup(t, call, r->id, NULL);
	if (!init)
		return;
	pid_t *pids = NULL;
	size_t n = 0;
	int e = t->be->pids(t->be_arg, init->ctr, &pids, &n);
	if (e < 0)
		FAIL(call, TTRPC_UNKNOWN, "pids of %s: %s", r->id, strerror(-e));
	Containerd__Task__V2__ProcessInfo *info = calloc(n ? n : 1, sizeof(*info));
	Containerd__Task__V2__ProcessInfo **pi = calloc(n ? n : 1, sizeof(*pi));
	Google__Protobuf__Any *any = calloc(n ? n : 1, sizeof(*any));
	uint8_t(*bufs)[288] = calloc(n ? n : 1, sizeof(*bufs));
	if (!info || !pi || !any || !bufs) {
		ttrpc_fail(call, TTRPC_INTERNAL, "out of memory");
	} else {
		for (size_t i = 0; i < n; i++) {
			containerd__task__v2__process_info__init(&info[i]);
			info[i].pid = (uint32_t) pids[i];
			pi[i] = &info[i];
			for (struct shim_proc *p = init->ctr->execs; p; p = p->next)
				if (p->pid == pids[i]) {
					exec_info(&any[i], bufs[i], sizeof(bufs[i]), p->exec_id);
					info[i].info = &any[i];
				}
		}
		Containerd__Task__V2__PidsResponse pr = CONTAINERD__TASK__V2__PIDS_RESPONSE__INIT;
		pr.n_processes = n;
		pr.processes = pi;
		ttrpc_reply(call, &pr.base);
	}
	free(bufs);
	free(any);
	free(pi);
	free(info);
	free(pids);
}

/* the cgroup's usage as containerd's cgroup metrics (v1 or v2), in an Any */
static void on_stats(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct shim_task *t = arg;
	const IdOnly *r = (const void *) req;
	struct shim_proc *init = lookup(t, call, r->id, NULL);
	if (!init)
		return;
	struct urs_cg_stats st;
	bool unified = false;
	int e = t->be->stats(t->be_arg, init->ctr, &st, &unified);
	if (e < 0)
		FAIL(call, TTRPC_NOT_FOUND, "stats of %s: cgroup: %s: not found", r->id,
		     strerror(-e));
	uint8_t buf[256];
	Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
	any.value.data = buf;
	if (unified) {
		Io__Containerd__Cgroups__V2PidsStat p = IO__CONTAINERD__CGROUPS__V2_PIDS_STAT__INIT;
		Io__Containerd__Cgroups__V2CPUStat c = IO__CONTAINERD__CGROUPS__V2_CPUSTAT__INIT;
		Io__Containerd__Cgroups__V2MemoryStat m =
			IO__CONTAINERD__CGROUPS__V2_MEMORY_STAT__INIT;
		Io__Containerd__Cgroups__V2Metrics mt = IO__CONTAINERD__CGROUPS__V2_METRICS__INIT;
		p.current = st.pids_current;
		c.usage_usec = st.cpu_usage_ns / 1000;
		m.usage = st.mem_usage, m.usage_limit = st.mem_limit;
		mt.pids = &p, mt.cpu = &c, mt.memory = &m;
		any.type_url = "io.containerd.cgroups.v2.Metrics";
		any.value.len = io__containerd__cgroups__v2_metrics__pack(&mt, buf);
	} else {
		Io__Containerd__Cgroups__V1PidsStat p = IO__CONTAINERD__CGROUPS__V1_PIDS_STAT__INIT;
		Io__Containerd__Cgroups__V1CPUUsage u = IO__CONTAINERD__CGROUPS__V1_CPUUSAGE__INIT;
		Io__Containerd__Cgroups__V1CPUStat c = IO__CONTAINERD__CGROUPS__V1_CPUSTAT__INIT;
		Io__Containerd__Cgroups__V1MemoryEntry me =
			IO__CONTAINERD__CGROUPS__V1_MEMORY_ENTRY__INIT;
		Io__Containerd__Cgroups__V1MemoryStat m =
			IO__CONTAINERD__CGROUPS__V1_MEMORY_STAT__INIT;
		Io__Containerd__Cgroups__V1Metrics mt = IO__CONTAINERD__CGROUPS__V1_METRICS__INIT;
		p.current = st.pids_current;
		u.total = st.cpu_usage_ns;
		c.usage = &u;
		me.usage = st.mem_usage, me.limit = st.mem_limit, me.max = st.mem_max_usage;
		m.usage = &me;
		mt.pids = &p, mt.cpu = &c, mt.memory = &m;
		any.type_url = "io.containerd.cgroups.v1.Metrics";
		any.value.len = io__containerd__cgroups__v1_metrics__pack(&mt, buf);
	}
	Containerd__Task__V2__StatsResponse sr = CONTAINERD__TASK__V2__STATS_RESPONSE__INIT;
	sr.stats = &any;
	ttrpc_reply(call, &sr.base);
}

static void on_connect(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	const IdOnly *r = (const void *) req;
	struct shim_ctr *c = shim_task_find(arg, r->id);
	Containerd__Task__V2__ConnectResponse cr = CONTAINERD__TASK__V2__CONNECT_RESPONSE__INIT;
	cr.shim_pid = (uint32_t) getpid();
	cr.task_pid = c && c->init.pid > 0 ? (uint32_t) c->init.pid : 0;
	cr.version = "";
	ttrpc_reply(call, &cr.base);
}

/* -- Kill, Pause, Resume, CloseIO ---------------------------------------- */

/* the generic end of an operation answered with Empty */
static void empty_done(void *arg, int err, const char *msg)
{
	struct pend *d = arg;
	struct shim_proc *p = d->p;
	if (pend_gone(d))
		return;
	if (err)
		ttrpc_fail(d->call, TTRPC_UNKNOWN, "%s: %s", pname(p), msg ? msg : strerror(-err));
	else
		ttrpc_reply(d->call, NULL);
	pend_free(d);
}

static void on_kill(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct shim_task *t = arg;
	const Containerd__Task__V2__KillRequest *r = (const void *) req;
	struct shim_proc *p = lookup(t, call, r->id, r->exec_id);
	if (!p)
		return;
	if (p->st == SHIM_STOPPED || p->reaped)
		FAIL(call, TTRPC_NOT_FOUND, "process %s already finished: not found", pname(p));
	if (p->pid <= 0)
		FAIL(call, TTRPC_FAILED_PRECONDITION, "process %s is not started", pname(p));
	if (r->signal == 0 || r->signal >= (uint32_t) NSIG)
		FAIL(call, TTRPC_INVALID_ARGUMENT, "kill %s: signal %u", pname(p), r->signal);
	if (p->exec_id) {
		/* unreaped, so the pid is still this child's */
		if (kill(p->pid, (int) r->signal) < 0)
			FAIL(call, TTRPC_UNKNOWN, "kill %s: %s", pname(p), strerror(errno));
		ttrpc_reply(call, NULL);
		return;
	}
	struct pend *d = pend_new(t, call, p);
	if (!d)
		return;
	int e = t->be->kill(t->be_arg, p->ctr, (int) r->signal, r->all, empty_done, d);
	if (e < 0)
		empty_done(d, e, NULL);
}

static void pause_done(void *arg, int err, const char *msg)
{
	struct pend *d = arg;
	struct shim_proc *p = d->p;
	struct shim_task *t = d->t;
	if (!err && p->st != SHIM_STOPPED && !p->ctr->gone) {
		p->st = d->arg ? SHIM_PAUSED : SHIM_RUNNING;
		shim_task_publish_id(d->t, d->arg ? "/tasks/paused" : "/tasks/resumed",
				     d->arg ? "containerd.events.TaskPaused"
					    : "containerd.events.TaskResumed",
				     p->ctr->id);
	}
	bool gone = p->ctr->gone;
	empty_done(d, err, msg); /* frees d (and p with it, if its container went) */
	if (gone)
		return;
	p->op = false;
	if (p->exit_held) /* it died while frozen or thawing */
		shim_task_report_exit(t, p);
}

static void pause_resume(struct shim_task *t, struct ttrpc_call *call, const char *id, bool pause)
{
	struct shim_proc *p = lookup(t, call, id, NULL);
	if (!p)
		return;
	if (p->op || p->st != (pause ? SHIM_RUNNING : SHIM_PAUSED))
		FAIL(call, TTRPC_FAILED_PRECONDITION, "%s %s: it is not %s",
		     pause ? "pause" : "resume", id, pause ? "running" : "paused");
	struct pend *d = pend_new(t, call, p);
	if (!d)
		return;
	d->arg = pause;
	p->op = true;
	int e = t->be->pause(t->be_arg, p->ctr, pause, pause_done, d);
	if (e < 0)
		pause_done(d, e, NULL);
}

static void on_pause(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	pause_resume(arg, call, ((const IdOnly *) req)->id, true);
}

static void on_resume(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	pause_resume(arg, call, ((const IdOnly *) req)->id, false);
}

static void on_close_io(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	const Containerd__Task__V2__CloseIORequest *r = (const void *) req;
	struct shim_proc *p = lookup(arg, call, r->id, r->exec_id);
	if (!p)
		return;
	if (r->stdin && p->con)
		shim_console_close_stdin(p->con);
	if (r->stdin)
		shim_stdio_close_stdin(&p->io);
	ttrpc_reply(call, NULL);
}

static void on_resize(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	const Containerd__Task__V2__ResizePtyRequest *r = (const void *) req;
	struct shim_proc *p = lookup(arg, call, r->id, r->exec_id);
	if (!p)
		return;
	if (!p->con)
		FAIL(call, TTRPC_FAILED_PRECONDITION, "resize %s: it has no terminal", pname(p));
	int e = shim_console_resize(p->con, r->width, r->height);
	if (e < 0)
		FAIL(call, TTRPC_UNKNOWN, "resize %s: %s", pname(p), strerror(-e));
	ttrpc_reply(call, NULL);
}

/* -- Checkpoint, Update --------------------------------------------------- */

static void checkpoint_done(void *arg, int err, const char *msg)
{
	struct pend *d = arg;
	struct shim_proc *p = d->p;
	struct shim_task *t = d->t;
	if (!err && !p->ctr->gone) {
		Containerd__Events__TaskCheckpointed ev =
			CONTAINERD__EVENTS__TASK_CHECKPOINTED__INIT;
		ev.container_id = p->ctr->id;
		ev.checkpoint = d->path;
		d->t->publish(d->t->pub_arg, "/tasks/checkpointed",
			      "containerd.events.TaskCheckpointed", &ev.base);
	}
	bool gone = p->ctr->gone;
	empty_done(d, err, msg); /* frees d (and p with it, if its container went) */
	if (gone)
		return;
	p->op = false;
	if (p->exit_held) /* stopped by the checkpoint (exit), or died during it */
		shim_task_report_exit(t, p);
}

static void on_checkpoint(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct shim_task *t = arg;
	const Containerd__Task__V2__CheckpointTaskRequest *r = (const void *) req;
	struct shim_proc *p = lookup(t, call, r->id, NULL);
	if (!p)
		return;
	if (p->op || (p->st != SHIM_RUNNING && p->st != SHIM_PAUSED))
		FAIL(call, TTRPC_FAILED_PRECONDITION, "checkpoint %s: it is not running", r->id);
	if (!*r->path)
		FAIL(call, TTRPC_INVALID_ARGUMENT, "checkpoint %s: no image path", r->id);
	Containerd__Task__V2__RuncCheckpointOptions *o = NULL;
	if (r->options && !strcmp(r->options->type_url, "containerd.runc.v1.CheckpointOptions"))
		o = containerd__task__v2__runc_checkpoint_options__unpack(
			NULL, r->options->value.len, r->options->value.data);
	struct pend *d = pend_new(t, call, p);
	if (d && !(d->path = strdup(r->path))) {
		ttrpc_fail(call, TTRPC_INTERNAL, "out of memory");
		pend_free(d), d = NULL;
	}
	if (d) {
		p->op = true;
		int e = t->be->checkpoint(t->be_arg, p->ctr, r->path, o ? o->work_path : NULL,
					  o && o->exit, checkpoint_done, d);
		if (e < 0)
			checkpoint_done(d, e, NULL);
	}
	if (o)
		containerd__task__v2__runc_checkpoint_options__free_unpacked(o, NULL);
}

static void on_update(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct shim_task *t = arg;
	const Containerd__Task__V2__UpdateTaskRequest *r = (const void *) req;
	struct shim_proc *p = lookup(t, call, r->id, NULL);
	if (!p)
		return;
	if (!r->resources || !r->resources->value.len)
		FAIL(call, TTRPC_INVALID_ARGUMENT, "update %s: no resources", r->id);
	if (p->pid <= 0 || p->reaped)
		FAIL(call, TTRPC_FAILED_PRECONDITION, "update %s: it is not created or has exited",
		     r->id);
	char *json = strndup((const char *) r->resources->value.data, r->resources->value.len);
	struct pend *d = json ? pend_new(t, call, p) : NULL;
	if (!json)
		ttrpc_fail(call, TTRPC_INTERNAL, "out of memory");
	int e = d ? t->be->update(t->be_arg, p->ctr, json, empty_done, d) : 0;
	if (e < 0)
		empty_done(d, e, NULL);
	free(json);
}

/* -- Delete, Shutdown ---------------------------------------------------- */

/* never exited: no exited_at (containerd reads an absent one as the zero
 * time; {0, 0} would be 1970) */
static void delete_reply(struct ttrpc_call *call, const struct shim_proc *p)
{
	Containerd__Task__V2__DeleteResponse r = CONTAINERD__TASK__V2__DELETE_RESPONSE__INIT;
	Google__Protobuf__Timestamp ts;
	shim_task_ts(&ts, &p->exited_at);
	r.pid = (uint32_t) (p->pid > 0 ? p->pid : 0);
	r.exit_status = p->exit_status;
	r.exited_at = p->reaped ? &ts : NULL;
	ttrpc_reply(call, &r.base);
}

static void delete_done(void *arg, int err, const char *msg)
{
	struct pend *d = arg;
	struct shim_task *t = d->t;
	struct shim_proc *p = d->p;
	struct shim_ctr *c = p->ctr;
	if (err) {
		c->deleting = false;
		ttrpc_fail(d->call, TTRPC_UNKNOWN, "delete %s: %s", c->id,
			   msg ? msg : strerror(-err));
		pend_free(d);
		p->op = false;
		if (p->exit_held)
			shim_task_report_exit(t, p);
		return;
	}
	Containerd__Events__TaskDelete ev = CONTAINERD__EVENTS__TASK_DELETE__INIT;
	Google__Protobuf__Timestamp ts;
	shim_task_ts(&ts, &p->exited_at);
	ev.container_id = c->id, ev.pid = (uint32_t) (p->pid > 0 ? p->pid : 0);
	ev.exit_status = p->exit_status, ev.exited_at = p->reaped ? &ts : NULL;
	t->publish(t->pub_arg, "/tasks/delete", "containerd.events.TaskDelete", &ev.base);
	delete_reply(d->call, p);
	shim_task_ctr_gone(t, c); /* freed now, or when the operations on it end */
	pend_free(d);
	maybe_empty(t);
}

static void on_delete(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	struct shim_task *t = arg;
	const IdExec *r = (const void *) req;
	struct shim_proc *p = lookup(t, call, r->id, r->exec_id);
	if (!p)
		return;
	if (p->op || p->ctr->deleting)
		FAIL(call, TTRPC_FAILED_PRECONDITION, "delete %s: an operation is under way",
		     pname(p));
	if (p->st == SHIM_RUNNING || p->st == SHIM_PAUSED)
		FAIL(call, TTRPC_FAILED_PRECONDITION, "delete %s: cannot delete a running process",
		     pname(p));
	if (p->exec_id) {
		delete_reply(call, p);
		for (struct shim_proc **pp = &p->ctr->execs; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		shim_task_proc_free(t, p);
		free(p);
		return;
	}
	struct pend *d = pend_new(t, call, p);
	if (!d)
		return;
	p->op = true;
	p->ctr->deleting = true;
	if (p->ctr->oom) { /* v1 signals the eventfd when the cgroup goes: not an OOM */
		shim_oom_stop(p->ctr->oom);
		p->ctr->oom = NULL;
	}
	int e = t->be->delete (t->be_arg, p->ctr, p->st == SHIM_CREATED, delete_done, d);
	if (e < 0)
		delete_done(d, e, NULL);
}

static void on_shutdown(struct ttrpc_call *call, const ProtobufCMessage *req, void *arg)
{
	(void) req;
	struct shim_task *t = arg;
	ttrpc_reply(call, NULL);
	t->shutdown = true; /* containers left: the shim stays for them */
	maybe_empty(t);
}

#define M(name, in, fn)                                                  \
	{                                                                \
		SVC, name, &containerd__task__v2__##in##__descriptor, fn \
	}

const struct ttrpc_method shim_task_methods[] = {
	M("State", delete_request, on_state),
	M("Create", create_task_request, on_create),
	M("Start", delete_request, on_start),
	M("Delete", delete_request, on_delete),
	M("Pids", pids_request, on_pids),
	M("Pause", pids_request, on_pause),
	M("Resume", pids_request, on_resume),
	M("Checkpoint", checkpoint_task_request, on_checkpoint),
	M("Kill", kill_request, on_kill),
	M("Exec", exec_process_request, on_exec),
	M("ResizePty", resize_pty_request, on_resize),
	M("CloseIO", close_iorequest, on_close_io),
	M("Update", update_task_request, on_update),
	M("Wait", delete_request, on_wait),
	M("Stats", pids_request, on_stats),
	M("Connect", pids_request, on_connect),
	M("Shutdown", shutdown_request, on_shutdown),
	{0},
};
