/*
 * tests/shim/test_task.c — the Task service (shim/task.h) over ttrpc with
 * a fake backend whose "inits" are real child processes (forked, waiting
 * on a pipe for start) and whose operations the test completes itself, so
 * every order is forced, never raced: the lifecycle and its events
 * (create, start, exit, delete), Wait answered at exit, an init that dies
 * before create returned and one that dies while start runs (their exits
 * told after create/start), exec'd processes, containerd's error codes
 * (NOT_FOUND for a finished process, ALREADY_EXISTS, FAILED_PRECONDITION),
 * a backend failure reaching the client in the backend's words, a
 * terminal (the master over the console socket, its output copied to the
 * stdout FIFO, ResizePty), and Shutdown ending the shim only with no
 * container left.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/fdpass.h"
#include "runtime/loop.h"
#include "shim/proto/cgroups.pb-c.h"
#include "shim/proto/events.pb-c.h"
#include "shim/proto/task.pb-c.h"
#include "shim/task.h"
#include "tests/shim/client.h"

/* -- the fake backend ---------------------------------------------------- */

struct fake {
	shim_done done; /* the operation the test completes */
	void *arg;
	bool exit_on_start; /* the next init exits 7 when started */
	bool exit_at_once;  /* the next init (exec) exits 5 (4) before create (exec) returns */
	bool die_in_pause;  /* the next pause kills the init and waits for the test */
	int kills, deletes;
	int slave;	 /* the last terminal's slave end, or -1 */
	char image[128]; /* what checkpoint, restore or update were given */
	pid_t pids[16];	 /* every child made, killed at the teardown */
	int npids;
};

/* a terminal: the master sent over the console socket as ursa does, the
 * slave kept (the child writes to it; the test reads its size) */
static int fk_terminal(struct fake *f, const char *sock)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(m >= 0);
	assert_int_equal(grantpt(m), 0);
	assert_int_equal(unlockpt(m), 0);
	f->slave = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(f->slave >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *) &sa, sizeof(sa)), 0);
	assert_int_equal(urs_send_fd(c, "m", 1, m), 0);
	close(c);
	close(m);
	return f->slave;
}

static pid_t child(struct fake *f, int rfd, int code_at_once, bool exit_after)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid) {
		assert_true(f->npids < 16);
		f->pids[f->npids++] = pid;
		return pid;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* a test that dies takes its children */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGTERM, SIG_DFL);
	if (code_at_once >= 0)
		_exit(code_at_once);
	char c;
	if (read(rfd, &c, 1) != 1)
		_exit(99);
	if (f->slave >= 0 && write(f->slave, "hello from a tty\n", 17) != 17)
		_exit(98);
	if (exit_after)
		_exit(7);
	for (;;)
		pause();
}

static int fk_create(void *be, struct shim_ctr *c, shim_done done, void *arg)
{
	struct fake *f = be;
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	f->slave = -1;
	if (c->init.terminal)
		fk_terminal(f, c->init.con_path);
	c->init.pid = child(f, p[0], f->exit_at_once ? 5 : -1, f->exit_on_start);
	close(p[0]);
	c->be = (void *) (intptr_t) (p[1] + 1); /* the backend's record: start pipe + 1 */
	f->exit_at_once = f->exit_on_start = false;
	f->done = done, f->arg = arg;
	return 0;
}

static int fk_start(void *be, struct shim_ctr *c, shim_done done, void *arg)
{
	struct fake *f = be;
	int fd = (int) (intptr_t) c->be - 1;
	assert_int_equal(write(fd, "s", 1), 1);
	close(fd);
	c->be = NULL;
	f->done = done, f->arg = arg;
	return 0;
}

static int fk_exec(void *be, struct shim_proc *p, shim_done done, void *arg)
{
	struct fake *f = be;
	int q[2];
	assert_int_equal(pipe2(q, O_CLOEXEC), 0);
	bool at_once = f->exit_at_once;
	p->pid = child(f, q[0], at_once ? 4 : -1, false);
	f->exit_at_once = false;
	close(q[0]);
	if (!at_once) /* one that exits at once reads nothing: no SIGPIPE for us */
		assert_int_equal(write(q[1], "s", 1), 1);
	close(q[1]);
	f->done = done, f->arg = arg;
	return 0;
}

static int fk_kill(void *be, struct shim_ctr *c, int sig, bool all, shim_done done, void *arg)
{
	(void) all;
	struct fake *f = be;
	f->kills++;
	kill(c->init.pid, sig);
	done(arg, 0, NULL);
	return 0;
}

static int fk_pause(void *be, struct shim_ctr *c, bool pause, shim_done done, void *arg)
{
	struct fake *f = be;
	if (f->die_in_pause) { /* it dies while the pause runs; the test completes it */
		kill(c->init.pid, SIGKILL);
		f->die_in_pause = false;
		f->done = done, f->arg = arg;
		return 0;
	}
	kill(c->init.pid, pause ? SIGSTOP : SIGCONT);
	done(arg, 0, NULL);
	return 0;
}

static int fk_delete(void *be, struct shim_ctr *c, bool force, shim_done done, void *arg)
{
	if (c->be) /* never started: its start pipe */
		close((int) (intptr_t) c->be - 1);
	c->be = NULL;
	struct fake *f = be;
	f->deletes++;
	if (force)
		kill(c->init.pid, SIGKILL);
	done(arg, 0, NULL);
	return 0;
}

static int fk_restore(void *be, struct shim_ctr *c, shim_done done, void *arg)
{
	struct fake *f = be;
	int q[2];
	assert_int_equal(pipe2(q, O_CLOEXEC), 0);
	c->init.pid = child(f, q[0], -1, false);
	close(q[0]);
	assert_int_equal(write(q[1], "s", 1), 1);
	close(q[1]);
	snprintf(f->image, sizeof(f->image), "%s", c->checkpoint);
	f->done = done, f->arg = arg;
	return 0;
}

static int fk_checkpoint(void *be, struct shim_ctr *c, const char *path, const char *work,
			 bool exit, shim_done done, void *arg)
{
	(void) c, (void) work;
	struct fake *f = be;
	snprintf(f->image, sizeof(f->image), "%s%s", path, exit ? " exit" : "");
	f->done = done, f->arg = arg;
	return 0;
}

static int fk_update(void *be, struct shim_ctr *c, const char *json, shim_done done, void *arg)
{
	(void) c;
	struct fake *f = be;
	snprintf(f->image, sizeof(f->image), "%s", json);
	done(arg, 0, NULL);
	return 0;
}

/* every child made that is not reaped: the container's processes */
static int fk_pids(void *be, struct shim_ctr *c, pid_t **pids, size_t *n)
{
	(void) be;
	*pids = calloc(3, sizeof(**pids));
	*n = 0;
	(*pids)[(*n)++] = c->init.pid;
	for (struct shim_proc *p = c->execs; p; p = p->next)
		if (p->pid > 0 && *n < 3)
			(*pids)[(*n)++] = p->pid;
	return 0;
}

static int fk_stats(void *be, struct shim_ctr *c, struct urs_cg_stats *st, bool *unified)
{
	(void) be, (void) c;
	*st = (struct urs_cg_stats){.mem_usage = 4096,
				    .mem_limit = 1 << 30,
				    .mem_max_usage = 8192,
				    .cpu_usage_ns = 123456789,
				    .pids_current = 2};
	*unified = false;
	return 0;
}

static const struct shim_backend fake_backend = {
	.create = fk_create,
	.start = fk_start,
	.exec = fk_exec,
	.kill = fk_kill,
	.pause = fk_pause,
	.delete = fk_delete,
	.restore = fk_restore,
	.checkpoint = fk_checkpoint,
	.update = fk_update,
	.pids = fk_pids,
	.stats = fk_stats,
};

/* -- the fixture --------------------------------------------------------- */

struct fx {
	struct urs_loop loop;
	struct shim_reaper reaper;
	struct shim_task t;
	struct fake fake;
	struct ttrpc_server *srv;
	int cli;
	uint32_t sid;
	char topics[32][32];
	int ntopics;
	int empty;
	char dir[64]; /* console sockets, FIFOs */
};

static void record(void *arg, const char *topic, const char *type_url, const ProtobufCMessage *ev)
{
	struct fx *f = arg;
	(void) ev;
	/* the type matches the topic: "/tasks/exec-added" <-> "...TaskExecAdded" */
	assert_non_null(strstr(type_url, "containerd.events.Task"));
	assert_true(f->ntopics < 32);
	snprintf(f->topics[f->ntopics++], sizeof(f->topics[0]), "%s", topic + 7);
}

static void on_empty(void *arg)
{
	((struct fx *) arg)->empty++;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_int_equal(urs_loop_init(&f->loop, NULL), 0);
	assert_int_equal(shim_reaper_init(&f->reaper, &f->loop), 0);
	snprintf(f->dir, sizeof(f->dir), "/tmp/ursa-test-task.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->fake.slave = -1;
	f->t = (struct shim_task){.run_dir = f->dir,
				  .loop = &f->loop,
				  .reaper = &f->reaper,
				  .be = &fake_backend,
				  .be_arg = &f->fake,
				  .publish = record,
				  .pub_arg = f,
				  .on_empty = on_empty,
				  .empty_arg = f};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "ursa-test-task-%d", getpid());
	socklen_t sl = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(l, (struct sockaddr *) &sa, sl), 0);
	assert_int_equal(listen(l, 8), 0);
	f->srv = ttrpc_server_new(&f->loop, l, shim_task_methods, &f->t);
	f->cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(f->cli, (struct sockaddr *) &sa, sl), 0);
	f->sid = 1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	for (int i = 0; i < f->fake.npids; i++)
		kill(f->fake.pids[i], SIGKILL); /* unreaped: still ours */
	close(f->cli);
	ttrpc_server_close(f->srv);
	shim_task_fini(&f->t); /* a terminal's copy stops */
	while (f->loop.live)
		urs_loop_run_once(&f->loop, true);
	shim_reaper_fini(&f->reaper);
	urs_loop_fini(&f->loop);
	while (waitpid(-1, NULL, 0) > 0)
		;
	if (f->fake.slave >= 0)
		close(f->fake.slave);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* send a call; return its stream id */
static uint32_t call(struct fx *f, const char *method, const ProtobufCMessage *m)
{
	uint32_t sid = f->sid;
	f->sid += 2;
	tc_send(f->cli, sid, method, m);
	return sid;
}

/* the next reply must be for @sid; returns its status code (0: ok), payload in *resp */
static int reply(struct fx *f, uint32_t sid, Ttrpc__Response **resp)
{
	assert_int_equal(tc_recv(&f->loop, f->cli, resp), sid);
	return (*resp)->status ? (*resp)->status->code : 0;
}

/* a call whose reply comes at once: its code (the reply dropped) */
static int rpc_code(struct fx *f, const char *method, const ProtobufCMessage *m, char *msg,
		    size_t len)
{
	Ttrpc__Response *r;
	int code = reply(f, call(f, method, m), &r);
	if (msg)
		snprintf(msg, len, "%s", r->status ? r->status->message : "");
	ttrpc__response__free_unpacked(r, NULL);
	return code;
}

/* turn the loop until the server has passed an operation to the backend */
static void until_called(struct fx *f)
{
	while (!f->fake.done)
		assert_true(urs_loop_run_once(&f->loop, true) >= 0);
}

/* complete the backend's operation under way */
static void complete(struct fx *f, int err, const char *msg)
{
	until_called(f);
	shim_done d = f->fake.done;
	f->fake.done = NULL;
	d(f->fake.arg, err, msg);
}

static uint32_t pid_of(Ttrpc__Response *r)
{
	Containerd__Task__V2__StartResponse *s =
		containerd__task__v2__start_response__unpack(NULL, r->payload.len, r->payload.data);
	uint32_t pid = s->pid;
	containerd__task__v2__start_response__free_unpacked(s, NULL);
	ttrpc__response__free_unpacked(r, NULL);
	return pid;
}

static uint32_t create(struct fx *f, const char *id)
{
	Containerd__Task__V2__CreateTaskRequest c = CONTAINERD__TASK__V2__CREATE_TASK_REQUEST__INIT;
	c.id = (char *) id;
	c.bundle = "/nonexistent-bundle";
	uint32_t sid = call(f, "Create", &c.base);
	complete(f, 0, NULL);
	Ttrpc__Response *r;
	assert_int_equal(reply(f, sid, &r), 0);
	return pid_of(r);
}

static void start(struct fx *f, const char *id, const char *exec)
{
	Containerd__Task__V2__DeleteRequest s = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	s.id = (char *) id;
	s.exec_id = (char *) (exec ? exec : "");
	uint32_t sid = call(f, "Start", &s.base);
	complete(f, 0, NULL);
	Ttrpc__Response *r;
	assert_int_equal(reply(f, sid, &r), 0);
	assert_true(pid_of(r) > 0);
}

static int state_of(struct fx *f, const char *id, const char *exec, uint32_t *exit_status)
{
	Containerd__Task__V2__DeleteRequest s = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	s.id = (char *) id;
	s.exec_id = (char *) (exec ? exec : "");
	Ttrpc__Response *r;
	int code = reply(f, call(f, "State", &s.base), &r);
	if (code) {
		ttrpc__response__free_unpacked(r, NULL);
		return -code;
	}
	Containerd__Task__V2__StateResponse *st =
		containerd__task__v2__state_response__unpack(NULL, r->payload.len, r->payload.data);
	int v = st->status;
	if (exit_status)
		*exit_status = st->exit_status;
	containerd__task__v2__state_response__free_unpacked(st, NULL);
	ttrpc__response__free_unpacked(r, NULL);
	return v;
}

static void assert_topics(struct fx *f, const char *want)
{
	char got[512] = "";
	for (int i = 0; i < f->ntopics; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "",
			 f->topics[i]);
	assert_string_equal(got, want);
}

/* whether the reaper keeps an unclaimed exit of @pid */
static bool kept(const struct shim_reaper *r, pid_t pid)
{
	for (int i = 0; i < SHIM_UNCLAIMED; i++)
		if (r->unclaimed[i].pid == pid)
			return true;
	return false;
}

/* turn the loop until @id's init is reaped */
static void until_stopped(struct fx *f, const char *id)
{
	struct shim_ctr *c = shim_task_find(&f->t, id);
	while (!c->init.reaped)
		urs_loop_run_once(&f->loop, true);
}

/* -- tests --------------------------------------------------------------- */

static void test_lifecycle(void **state)
{
	struct fx *f = *state;
	uint32_t pid = create(f, "a");
	assert_true(pid > 0);
	assert_int_equal(state_of(f, "a", NULL, NULL), SHIM_CREATED);
	start(f, "a", NULL);
	assert_int_equal(state_of(f, "a", NULL, NULL), SHIM_RUNNING);

	Containerd__Task__V2__DeleteRequest w = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	w.id = "a";
	uint32_t wsid = call(f, "Wait", &w.base);
	Containerd__Task__V2__KillRequest k = CONTAINERD__TASK__V2__KILL_REQUEST__INIT;
	k.id = "a";
	k.signal = SIGTERM;
	assert_int_equal(rpc_code(f, "Kill", &k.base, NULL, 0), 0);
	Ttrpc__Response *r;
	assert_int_equal(reply(f, wsid, &r), 0); /* the Wait, at the exit */
	Containerd__Task__V2__WaitResponse *wr =
		containerd__task__v2__wait_response__unpack(NULL, r->payload.len, r->payload.data);
	assert_int_equal(wr->exit_status, 128 + SIGTERM);
	assert_non_null(wr->exited_at);
	containerd__task__v2__wait_response__free_unpacked(wr, NULL);
	ttrpc__response__free_unpacked(r, NULL);

	uint32_t st;
	assert_int_equal(state_of(f, "a", NULL, &st), SHIM_STOPPED);
	assert_int_equal(st, 143);
	char msg[256];
	assert_int_equal(rpc_code(f, "Kill", &k.base, msg, sizeof(msg)), TTRPC_NOT_FOUND);
	assert_non_null(strstr(msg, "already finished"));
	/* a Wait after the exit answers at once */
	assert_int_equal(rpc_code(f, "Wait", &w.base, NULL, 0), 0);

	assert_int_equal(rpc_code(f, "Delete", &w.base, NULL, 0), 0);
	assert_int_equal(f->fake.deletes, 1);
	assert_int_equal(state_of(f, "a", NULL, NULL), -TTRPC_NOT_FOUND);
	assert_topics(f, "create start exit delete");
	Containerd__Task__V2__ShutdownRequest sd = CONTAINERD__TASK__V2__SHUTDOWN_REQUEST__INIT;
	assert_int_equal(rpc_code(f, "Shutdown", &sd.base, NULL, 0), 0);
	assert_int_equal(f->empty, 1);
}

/* an init dead before create returned: create first, then its exit */
static void test_exit_before_create_returns(void **state)
{
	struct fx *f = *state;
	f->fake.exit_at_once = true;
	Containerd__Task__V2__CreateTaskRequest c = CONTAINERD__TASK__V2__CREATE_TASK_REQUEST__INIT;
	c.id = "early";
	c.bundle = "/nonexistent-bundle";
	uint32_t sid = call(f, "Create", &c.base);
	until_called(f);
	pid_t pid = f->fake.pids[f->fake.npids - 1];
	while (!kept(&f->reaper, pid)) /* reaped, unclaimed: nobody watches it yet */
		urs_loop_run_once(&f->loop, true);
	complete(f, 0, NULL);
	Ttrpc__Response *r;
	assert_int_equal(reply(f, sid, &r), 0);
	pid_of(r);
	uint32_t st;
	assert_int_equal(state_of(f, "early", NULL, &st), SHIM_STOPPED);
	assert_int_equal(st, 5);
	assert_topics(f, "create exit");
}

/* an init dead while start runs: start first, then its exit */
static void test_exit_while_starting(void **state)
{
	struct fx *f = *state;
	f->fake.exit_on_start = true;
	create(f, "quick");
	Containerd__Task__V2__DeleteRequest s = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	s.id = "quick";
	uint32_t sid = call(f, "Start", &s.base);
	until_called(f);
	until_stopped(f, "quick"); /* reaped while start is under way: held */
	assert_topics(f, "create");
	complete(f, 0, NULL);
	Ttrpc__Response *r;
	assert_int_equal(reply(f, sid, &r), 0);
	pid_of(r);
	assert_topics(f, "create start exit");
	uint32_t st;
	assert_int_equal(state_of(f, "quick", NULL, &st), SHIM_STOPPED);
	assert_int_equal(st, 7);
}

static void test_errors(void **state)
{
	struct fx *f = *state;
	char msg[256];
	Containerd__Task__V2__DeleteRequest s = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	s.id = "nope";
	assert_int_equal(rpc_code(f, "Start", &s.base, msg, sizeof(msg)), TTRPC_NOT_FOUND);
	assert_non_null(strstr(msg, ": not found"));
	assert_int_equal(rpc_code(f, "Wait", &s.base, NULL, 0), TTRPC_NOT_FOUND);

	create(f, "b");
	Containerd__Task__V2__CreateTaskRequest c = CONTAINERD__TASK__V2__CREATE_TASK_REQUEST__INIT;
	c.id = "b";
	c.bundle = "/x";
	assert_int_equal(rpc_code(f, "Create", &c.base, NULL, 0), TTRPC_ALREADY_EXISTS);
	c.id = "a/b";
	assert_int_equal(rpc_code(f, "Create", &c.base, msg, sizeof(msg)), TTRPC_INVALID_ARGUMENT);
	assert_non_null(strstr(msg, "not allowed"));
	c.id = "b";
	start(f, "b", NULL);
	s.id = "b";
	assert_int_equal(rpc_code(f, "Delete", &s.base, msg, sizeof(msg)),
			 TTRPC_FAILED_PRECONDITION);
	assert_non_null(strstr(msg, "running"));
	assert_int_equal(rpc_code(f, "Start", &s.base, NULL, 0), TTRPC_FAILED_PRECONDITION);
	/* pause and resume, with their events */
	Containerd__Task__V2__PidsRequest p = CONTAINERD__TASK__V2__PIDS_REQUEST__INIT;
	p.id = "b";
	assert_int_equal(rpc_code(f, "Resume", &p.base, NULL, 0), TTRPC_FAILED_PRECONDITION);
	assert_int_equal(rpc_code(f, "Pause", &p.base, NULL, 0), 0);
	assert_int_equal(state_of(f, "b", NULL, NULL), SHIM_PAUSED);
	assert_int_equal(rpc_code(f, "Resume", &p.base, NULL, 0), 0);
	Containerd__Task__V2__ResizePtyRequest rp = CONTAINERD__TASK__V2__RESIZE_PTY_REQUEST__INIT;
	rp.id = "b";
	assert_int_equal(rpc_code(f, "ResizePty", &rp.base, msg, sizeof(msg)),
			 TTRPC_FAILED_PRECONDITION);
	assert_non_null(strstr(msg, "no terminal"));
	Containerd__Task__V2__UpdateTaskRequest up =
		CONTAINERD__TASK__V2__UPDATE_TASK_REQUEST__INIT;
	up.id = "b";
	assert_int_equal(rpc_code(f, "Update", &up.base, msg, sizeof(msg)), TTRPC_INVALID_ARGUMENT);
	Google__Protobuf__Any res = GOOGLE__PROTOBUF__ANY__INIT;
	res.type_url = "types.containerd.io/opencontainers/runtime-spec/1/LinuxResources";
	res.value.data = (uint8_t *) "{\"pids\":{\"limit\":9}}";
	res.value.len = strlen((char *) res.value.data);
	up.resources = &res;
	assert_int_equal(rpc_code(f, "Update", &up.base, NULL, 0), 0);
	assert_string_equal(f->fake.image, "{\"pids\":{\"limit\":9}}");

	/* the backend's failure, in its words; nothing of the container left */
	c.id = "bad";
	uint32_t sid = call(f, "Create", &c.base);
	complete(f, -EIO, "the bundle is broken");
	Ttrpc__Response *r;
	assert_int_equal(reply(f, sid, &r), TTRPC_UNKNOWN);
	assert_non_null(strstr(r->status->message, "the bundle is broken"));
	ttrpc__response__free_unpacked(r, NULL);
	assert_null(shim_task_find(&f->t, "bad"));
	assert_topics(f, "create start paused resumed");

	/* Shutdown with a container left: the shim stays */
	Containerd__Task__V2__ShutdownRequest sd = CONTAINERD__TASK__V2__SHUTDOWN_REQUEST__INIT;
	assert_int_equal(rpc_code(f, "Shutdown", &sd.base, NULL, 0), 0);
	assert_int_equal(f->empty, 0);
}

/* Pids: the init and the exec'd process, which carries its exec id; Stats:
 * the backend's numbers as containerd's v1 cgroup metrics */
static void check_pids_stats(struct fx *f, const char *id)
{
	Containerd__Task__V2__PidsRequest p = CONTAINERD__TASK__V2__PIDS_REQUEST__INIT;
	p.id = (char *) id;
	Ttrpc__Response *r;
	assert_int_equal(reply(f, call(f, "Pids", &p.base), &r), 0);
	Containerd__Task__V2__PidsResponse *pr =
		containerd__task__v2__pids_response__unpack(NULL, r->payload.len, r->payload.data);
	assert_int_equal(pr->n_processes, 2);
	assert_null(pr->processes[0]->info);
	assert_non_null(pr->processes[1]->info);
	assert_string_equal(pr->processes[1]->info->type_url, "containerd.runc.v1.ProcessDetails");
	Containerd__Task__V2__ProcessDetails *pd = containerd__task__v2__process_details__unpack(
		NULL, pr->processes[1]->info->value.len, pr->processes[1]->info->value.data);
	assert_string_equal(pd->exec_id, "e1");
	containerd__task__v2__process_details__free_unpacked(pd, NULL);
	containerd__task__v2__pids_response__free_unpacked(pr, NULL);
	ttrpc__response__free_unpacked(r, NULL);

	assert_int_equal(reply(f, call(f, "Stats", &p.base), &r), 0);
	Containerd__Task__V2__StatsResponse *sr =
		containerd__task__v2__stats_response__unpack(NULL, r->payload.len, r->payload.data);
	assert_string_equal(sr->stats->type_url, "io.containerd.cgroups.v1.Metrics");
	Io__Containerd__Cgroups__V1Metrics *m = io__containerd__cgroups__v1_metrics__unpack(
		NULL, sr->stats->value.len, sr->stats->value.data);
	assert_int_equal(m->memory->usage->usage, 4096);
	assert_int_equal(m->memory->usage->max, 8192);
	assert_int_equal(m->cpu->usage->total, 123456789);
	assert_int_equal(m->pids->current, 2);
	io__containerd__cgroups__v1_metrics__free_unpacked(m, NULL);
	containerd__task__v2__stats_response__free_unpacked(sr, NULL);
	ttrpc__response__free_unpacked(r, NULL);
}

static void test_exec(void **state)
{
	struct fx *f = *state;
	create(f, "c");
	start(f, "c", NULL);
	Containerd__Task__V2__ExecProcessRequest e =
		CONTAINERD__TASK__V2__EXEC_PROCESS_REQUEST__INIT;
	Google__Protobuf__Any spec = GOOGLE__PROTOBUF__ANY__INIT;
	spec.type_url = "types.containerd.io/opencontainers/runtime-spec/1/Process";
	spec.value.data = (uint8_t *) "{\"args\":[\"sh\"]}";
	spec.value.len = strlen((char *) spec.value.data);
	e.id = "c";
	e.exec_id = "e1";
	e.spec = &spec;
	assert_int_equal(rpc_code(f, "Exec", &e.base, NULL, 0), 0);
	char msg[256];
	assert_int_equal(rpc_code(f, "Exec", &e.base, msg, sizeof(msg)), TTRPC_ALREADY_EXISTS);
	e.exec_id = "../../etc/x"; /* exec ids name files in the bundle */
	assert_int_equal(rpc_code(f, "Exec", &e.base, msg, sizeof(msg)), TTRPC_INVALID_ARGUMENT);
	e.exec_id = "e1";
	assert_int_equal(state_of(f, "c", "e1", NULL), SHIM_CREATED);
	start(f, "c", "e1");
	assert_int_equal(state_of(f, "c", "e1", NULL), SHIM_RUNNING);
	check_pids_stats(f, "c");
	Containerd__Task__V2__DeleteRequest w = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	w.id = "c";
	w.exec_id = "e1";
	uint32_t wsid = call(f, "Wait", &w.base);
	Containerd__Task__V2__KillRequest k = CONTAINERD__TASK__V2__KILL_REQUEST__INIT;
	k.id = "c";
	k.exec_id = "e1";
	k.signal = SIGKILL;
	assert_int_equal(rpc_code(f, "Kill", &k.base, NULL, 0), 0);
	assert_int_equal(f->fake.kills, 0); /* an exec'd process is signalled by the shim */
	Ttrpc__Response *r;
	assert_int_equal(reply(f, wsid, &r), 0);
	ttrpc__response__free_unpacked(r, NULL);
	assert_int_equal(state_of(f, "c", NULL, NULL), SHIM_RUNNING); /* the init runs on */
	assert_int_equal(rpc_code(f, "Delete", &w.base, NULL, 0), 0);
	assert_int_equal(state_of(f, "c", "e1", NULL), -TTRPC_NOT_FOUND);
	assert_topics(f, "create start exec-added exec-started exit");
}

/* a terminal: the master comes over the console socket, what the process
 * writes reaches the stdout FIFO, ResizePty sizes it, no socket is left */
static void test_terminal(void **state)
{
	struct fx *f = *state;
	char fifo[128];
	snprintf(fifo, sizeof(fifo), "%s/out", f->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	int rd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* ctr's end, opened first */
	assert_true(rd >= 0);
	Containerd__Task__V2__CreateTaskRequest c = CONTAINERD__TASK__V2__CREATE_TASK_REQUEST__INIT;
	c.id = "tty";
	c.bundle = "/nonexistent-bundle";
	c.terminal = 1;
	c.stdout = fifo;
	c.stderr = "/nonexistent/never-opened-with-a-terminal";
	uint32_t sid = call(f, "Create", &c.base);
	complete(f, 0, NULL);
	Ttrpc__Response *r;
	assert_int_equal(reply(f, sid, &r), 0);
	pid_of(r);
	start(f, "tty", NULL);
	char buf[64] = "";
	size_t got = 0;
	while (got < 18) { /* the copy runs on the loop */
		ssize_t n = read(rd, buf + got, sizeof(buf) - 1 - got);
		if (n > 0)
			got += (size_t) n;
		else
			urs_loop_run_once(&f->loop, false);
	}
	assert_memory_equal(buf, "hello from a tty\r\n", 18); /* the line discipline's CRLF */
	Containerd__Task__V2__ResizePtyRequest rp = CONTAINERD__TASK__V2__RESIZE_PTY_REQUEST__INIT;
	rp.id = "tty";
	rp.width = 132;
	rp.height = 43;
	assert_int_equal(rpc_code(f, "ResizePty", &rp.base, NULL, 0), 0);
	struct winsize ws;
	assert_int_equal(ioctl(f->fake.slave, TIOCGWINSZ, &ws), 0);
	assert_int_equal(ws.ws_col, 132);
	assert_int_equal(ws.ws_row, 43);

	/* the process goes (and the fake's slave end): the client's stdout
	 * reader sees end-of-file, and the task is deleted with its console */
	Containerd__Task__V2__KillRequest k = CONTAINERD__TASK__V2__KILL_REQUEST__INIT;
	k.id = "tty";
	k.signal = SIGKILL;
	assert_int_equal(rpc_code(f, "Kill", &k.base, NULL, 0), 0);
	close(f->fake.slave);
	f->fake.slave = -1;
	for (;;) {
		ssize_t n = read(rd, buf, sizeof(buf));
		if (n == 0)
			break; /* EOF: no writer left */
		urs_loop_run_once(&f->loop, false);
	}
	until_stopped(f, "tty");
	assert_int_equal(rpc_code(f, "Delete", &k.base, NULL, 0), 0);
	unlink(fifo);
	DIR *d = opendir(f->dir);
	for (struct dirent *e; (e = readdir(d));)
		assert_null(strstr(e->d_name, ".sock")); /* the console socket went */
	closedir(d);
	close(rd);
}

/* Checkpoint publishes /tasks/checkpointed; a Create naming the image makes
 * no process (pid 0), its Start restores */
static void test_checkpoint_restore(void **state)
{
	struct fx *f = *state;
	create(f, "k");
	Containerd__Task__V2__CheckpointTaskRequest ck =
		CONTAINERD__TASK__V2__CHECKPOINT_TASK_REQUEST__INIT;
	ck.id = "k";
	char msg[256];
	assert_int_equal(rpc_code(f, "Checkpoint", &ck.base, msg, sizeof(msg)),
			 TTRPC_FAILED_PRECONDITION); /* created, not running */
	start(f, "k", NULL);
	assert_int_equal(rpc_code(f, "Checkpoint", &ck.base, NULL, 0), TTRPC_INVALID_ARGUMENT);
	ck.path = "/images/k1";
	Containerd__Task__V2__RuncCheckpointOptions o =
		CONTAINERD__TASK__V2__RUNC_CHECKPOINT_OPTIONS__INIT;
	o.exit = 1;
	uint8_t ob[64];
	Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
	any.type_url = "containerd.runc.v1.CheckpointOptions";
	any.value.data = ob;
	any.value.len = containerd__task__v2__runc_checkpoint_options__pack(&o, ob);
	ck.options = &any;
	uint32_t sid = call(f, "Checkpoint", &ck.base);
	complete(f, 0, NULL);
	Ttrpc__Response *r;
	assert_int_equal(reply(f, sid, &r), 0);
	ttrpc__response__free_unpacked(r, NULL);
	assert_string_equal(f->fake.image, "/images/k1 exit");

	Containerd__Task__V2__CreateTaskRequest c = CONTAINERD__TASK__V2__CREATE_TASK_REQUEST__INIT;
	c.id = "k2";
	c.bundle = "/nonexistent-bundle";
	c.checkpoint = "/images/k1";
	assert_int_equal(reply(f, call(f, "Create", &c.base), &r), 0);
	assert_int_equal(pid_of(r), 0); /* nothing runs before the restore */
	assert_int_equal(state_of(f, "k2", NULL, NULL), SHIM_CREATED);
	start(f, "k2", NULL);
	assert_string_equal(f->fake.image, "/images/k1");
	assert_int_equal(state_of(f, "k2", NULL, NULL), SHIM_RUNNING);
	assert_true(shim_task_find(&f->t, "k2")->init.pid > 0);
	assert_topics(f, "create start checkpointed create start");
}

/* Exec of a process (its spec "{}") as @exec_id in @id: the reply's code */
static int exec_add(struct fx *f, const char *id, const char *exec_id)
{
	Containerd__Task__V2__ExecProcessRequest e =
		CONTAINERD__TASK__V2__EXEC_PROCESS_REQUEST__INIT;
	Google__Protobuf__Any spec = GOOGLE__PROTOBUF__ANY__INIT;
	spec.value.data = (uint8_t *) "{}";
	spec.value.len = 2;
	e.id = (char *) id;
	e.exec_id = (char *) exec_id;
	e.spec = &spec;
	return rpc_code(f, "Exec", &e.base, NULL, 0);
}

/* an operation's completion after its container was deleted answers
 * NOT_FOUND and frees nothing twice; Delete of a never-started init has no
 * exit time (not 1970) */
static void test_delete_during_exec(void **state)
{
	struct fx *f = *state;
	create(f, "d");
	Containerd__Task__V2__DeleteRequest dr = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	dr.id = "d";
	Ttrpc__Response *r;
	create(f, "d0");
	dr.id = "d0";
	assert_int_equal(reply(f, call(f, "Delete", &dr.base), &r), 0);
	Containerd__Task__V2__DeleteResponse *del = containerd__task__v2__delete_response__unpack(
		NULL, r->payload.len, r->payload.data);
	assert_null(del->exited_at); /* never started, never exited */
	containerd__task__v2__delete_response__free_unpacked(del, NULL);
	ttrpc__response__free_unpacked(r, NULL);
	dr.id = "d";

	start(f, "d", NULL);
	assert_int_equal(exec_add(f, "d", "probe"), 0);
	Containerd__Task__V2__DeleteRequest s = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	s.id = "d";
	s.exec_id = "probe";
	uint32_t ssid = call(f, "Start", &s.base);
	until_called(f); /* the exec's command runs */
	shim_done exec_done = f->fake.done;
	void *exec_arg = f->fake.arg;
	f->fake.done = NULL;
	Containerd__Task__V2__KillRequest k = CONTAINERD__TASK__V2__KILL_REQUEST__INIT;
	k.id = "d";
	k.signal = SIGKILL;
	assert_int_equal(rpc_code(f, "Kill", &k.base, NULL, 0), 0);
	until_stopped(f, "d");
	assert_int_equal(rpc_code(f, "Delete", &dr.base, NULL, 0), 0);
	assert_null(shim_task_find(&f->t, "d"));
	exec_done(exec_arg, 0, NULL); /* the exec's command ends after the delete */
	char msg[256];
	assert_int_equal(reply(f, ssid, &r), TTRPC_NOT_FOUND);
	snprintf(msg, sizeof(msg), "%s", r->status->message);
	ttrpc__response__free_unpacked(r, NULL);
	assert_non_null(strstr(msg, "deleted"));
	assert_topics(f, "create create delete start exec-added exit delete");
}

/* a logging binary is awaited on the loop: other calls are answered
 * meanwhile and the container is made only once it is ready; an exec's
 * that is not ready by the deadline fails the Exec, naming it, and leaves
 * no exec behind */
static void test_logger_wait(void **state)
{
	struct fx *f = *state;
	char fifo[128], uri[256];
	snprintf(fifo, sizeof(fifo), "%s/go", f->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* ready when the test writes to the FIFO; then reads its input to EOF */
	snprintf(uri, sizeof(uri),
		 "binary:///bin/sh?-c=read+x+%%3C%s%%3B+exec+5%%3E%%26-+cat+%%3C%%263", fifo);
	Containerd__Task__V2__CreateTaskRequest c = CONTAINERD__TASK__V2__CREATE_TASK_REQUEST__INIT;
	c.id = "lg";
	c.bundle = "/nonexistent-bundle";
	c.stdout = uri;
	uint32_t sid = call(f, "Create", &c.base);
	assert_int_equal(state_of(f, "other", NULL, NULL), -TTRPC_NOT_FOUND); /* served meanwhile */
	assert_null(f->fake.done); /* not made before its logger is ready */
	int w = open(fifo, O_WRONLY | O_CLOEXEC);
	assert_true(w >= 0);
	assert_int_equal(write(w, "go\n", 3), 3);
	close(w);
	complete(f, 0, NULL);
	Ttrpc__Response *r;
	assert_int_equal(reply(f, sid, &r), 0);
	assert_true(pid_of(r) > 0);
	start(f, "lg", NULL);

	/* an exec's id is taken while its logger gets ready: the same id again
	 * is refused at once; then the first is added */
	Containerd__Task__V2__ExecProcessRequest e =
		CONTAINERD__TASK__V2__EXEC_PROCESS_REQUEST__INIT;
	Google__Protobuf__Any spec = GOOGLE__PROTOBUF__ANY__INIT;
	spec.value.data = (uint8_t *) "{}";
	spec.value.len = 2;
	e.id = "lg";
	e.exec_id = "x";
	e.spec = &spec;
	e.stdout = uri;
	sid = call(f, "Exec", &e.base);
	Containerd__Task__V2__ExecProcessRequest e2 = e;
	e2.stdout = "";
	char msg[256];
	assert_int_equal(rpc_code(f, "Exec", &e2.base, msg, sizeof(msg)), TTRPC_ALREADY_EXISTS);
	assert_int_equal(state_of(f, "lg", "x", NULL), -TTRPC_NOT_FOUND); /* not seen yet */
	w = open(fifo, O_WRONLY | O_CLOEXEC);
	assert_true(w >= 0);
	assert_int_equal(write(w, "go\n", 3), 3);
	close(w);
	assert_int_equal(reply(f, sid, &r), 0);
	ttrpc__response__free_unpacked(r, NULL);
	assert_int_equal(state_of(f, "lg", "x", NULL), SHIM_CREATED);

	/* one not ready by the deadline: the Exec fails naming the program (not
	 * its arguments) and leaves no exec */
	f->t.logger_ready_ms = 100;
	e.exec_id = "slow";
	e.stdout = "binary:///bin/sh?-c=exec+sleep+1000";
	assert_int_equal(rpc_code(f, "Exec", &e.base, msg, sizeof(msg)), TTRPC_UNKNOWN);
	assert_non_null(strstr(msg, "exec slow: logging binary /bin/sh: not ready after 100 ms"));
	assert_null(strstr(msg, "sleep"));
	assert_int_equal(state_of(f, "lg", "slow", NULL), -TTRPC_NOT_FOUND);
	assert_topics(f, "create start exec-added");
}

/* exits during an operation are told after it: an exec'd process dead
 * before its start returned, an init killed while a pause ran */
static void test_exits_held(void **state)
{
	struct fx *f = *state;
	create(f, "h");
	start(f, "h", NULL);
	assert_int_equal(exec_add(f, "h", "true"), 0);
	f->fake.exit_at_once = true;
	Containerd__Task__V2__DeleteRequest s = CONTAINERD__TASK__V2__DELETE_REQUEST__INIT;
	s.id = "h";
	s.exec_id = "true";
	uint32_t sid = call(f, "Start", &s.base);
	until_called(f);
	pid_t pid = f->fake.pids[f->fake.npids - 1];
	while (!kept(&f->reaper, pid)) /* reaped before the start is done */
		urs_loop_run_once(&f->loop, true);
	complete(f, 0, NULL);
	Ttrpc__Response *r;
	assert_int_equal(reply(f, sid, &r), 0);
	pid_of(r);
	uint32_t st;
	assert_int_equal(state_of(f, "h", "true", &st), SHIM_STOPPED);
	assert_int_equal(st, 4);

	f->fake.die_in_pause = true;
	Containerd__Task__V2__PidsRequest p = CONTAINERD__TASK__V2__PIDS_REQUEST__INIT;
	p.id = "h";
	sid = call(f, "Pause", &p.base);
	until_called(f);
	until_stopped(f, "h");
	assert_int_equal(state_of(f, "h", NULL, NULL), SHIM_RUNNING); /* held */
	complete(f, 0, NULL);
	assert_int_equal(reply(f, sid, &r), 0);
	ttrpc__response__free_unpacked(r, NULL);
	assert_int_equal(state_of(f, "h", NULL, &st), SHIM_STOPPED);
	assert_int_equal(st, 137);
	assert_topics(f, "create start exec-added exec-started exit paused exit");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_before_create_returns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_while_starting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_terminal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete_during_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exits_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_logger_wait, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
