/*
 * shim/task.h — containerd's Task service (containerd.task.v2.Task) over a
 * backend that makes and drives the sandboxes: the containers and processes
 * the shim serves, their states, Wait answered at exit, and the task events
 * in the order containerd requires (create, start, exit, delete; exec-added,
 * exec-started, exit).
 *
 * The service knows processes, not sandboxes: the backend (struct
 * shim_backend) creates, starts, execs, signals, pauses and deletes, and
 * reports when it is done; exits come from the reaper (shim/reaper.h), as
 * the shim is the subreaper of every process it serves. Operations run
 * asynchronously: one container's slow create never holds another's calls.
 */
#ifndef URSA_SHIM_TASK_H
#define URSA_SHIM_TASK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "host/cgroup.h"
#include "runtime/loop.h"
#include "shim/console.h"
#include "shim/oom.h"
#include "shim/reaper.h"
#include "shim/stdio.h"
#include "shim/proto/wkt.pb-c.h"
#include "shim/ttrpc_server.h"

struct shim_ctr;

/* what a process is; the values are containerd's task Status */
enum shim_status {
	SHIM_UNKNOWN = 0,
	SHIM_CREATED = 1,
	SHIM_RUNNING = 2,
	SHIM_STOPPED = 3,
	SHIM_PAUSED = 4,
};

struct shim_proc {
	struct shim_ctr *ctr;
	struct shim_proc *next; /* the container's execs */
	char *exec_id;		/* NULL for the init */
	char *spec;		/* an exec's process (JSON), as containerd sent it */
	pid_t pid;
	enum shim_status st;
	bool op;	/* an operation that may make or start it is running */
	bool exit_held; /* it exited during that operation: reported after it */
	bool reaped;	/* its exit is known */
	uint32_t exit_status;
	struct timespec exited_at;
	char *in, *out, *err; /* stdio as containerd named it */
	bool terminal;
	struct shim_stdio io;
	struct shim_console *con;  /* its terminal's copy, with a terminal */
	int con_lfd;		   /* the console socket until the master came, or -1 */
	int logger;		   /* its logging binary's pidfd (shim/logger.h), or -1 */
	int logger_ready;	   /* its ready pipe until awaited, or -1 */
	char con_path[108];	   /* its path: --console-socket */
	struct ttrpc_call **waits; /* Wait calls answered at its exit */
	uint32_t nwaits, capwaits;
};

struct shim_task;

struct shim_ctr {
	struct shim_ctr *next;
	struct shim_task *task;
	char *id, *bundle;
	struct shim_proc init;
	struct shim_proc *execs;
	struct shim_proc *waiting; /* execs whose logging binary is not ready yet:
				    * their ids taken, nothing else of them seen */
	char *checkpoint;	   /* the image it is restored from at Start, or NULL */
	struct shim_oom *oom;	   /* its OOM kills, watched once it exists */
	bool rootfs_mounted;	   /* by the shim, from CreateTaskRequest.rootfs */
	bool deleting;
	bool gone;	  /* deleted (or its create failed): out of the list, freed
			   * when the last operation that holds it is over */
	uint32_t pending; /* operations under way that hold it */
	void *be;	  /* the backend's per-container record */
};

/* done: @err 0 or a negative errno, @msg why (the backend's own words) */
typedef void (*shim_done)(void *arg, int err, const char *msg);

struct shim_backend {
	/* create the container of @c (its init stopped before the workload,
	 * stdio @io); set c->init.pid before calling @done with 0 */
	int (*create)(void *be, struct shim_ctr *c, shim_done done, void *arg);
	/* start the init */
	int (*start)(void *be, struct shim_ctr *c, shim_done done, void *arg);
	/* run @p (p->spec) in the container; set p->pid before @done */
	int (*exec)(void *be, struct shim_proc *p, shim_done done, void *arg);
	/* signal the init (and every process with @all) */
	int (*kill)(void *be, struct shim_ctr *c, int sig, bool all, shim_done done, void *arg);
	/* freeze (@pause) or thaw */
	int (*pause)(void *be, struct shim_ctr *c, bool pause, shim_done done, void *arg);
	/* remove what create made (@force: even if the init still runs) */
	int (*delete)(void *be, struct shim_ctr *c, bool force, shim_done done, void *arg);
	/* create the container from the image at c->checkpoint and start it
	 * (containerd's restore: Create names the image, Start restores) */
	int (*restore)(void *be, struct shim_ctr *c, shim_done done, void *arg);
	/* save it to the image directory @path; @exit: stop it after */
	int (*checkpoint)(void *be, struct shim_ctr *c, const char *path, const char *work,
			  bool exit, shim_done done, void *arg);
	/* change its resources to @json (the OCI linux.resources object) */
	int (*update)(void *be, struct shim_ctr *c, const char *json, shim_done done, void *arg);
	/* its cgroups (for OOM events), or NULL when the backend has none */
	int (*cgroup)(void *be, struct shim_ctr *c, struct urs_cgroup *cg);
	/* the container's processes, host pids (*@pids malloc'd), now */
	int (*pids)(void *be, struct shim_ctr *c, pid_t **pids, size_t *n);
	/* its cgroup's usage, now; *@unified: the controllers are cgroup v2 */
	int (*stats)(void *be, struct shim_ctr *c, struct urs_cg_stats *st, bool *unified);
};

/* how the service tells containerd what happened; @type_url names @ev's type */
typedef void (*shim_publish_fn)(void *arg, const char *topic, const char *type_url,
				const ProtobufCMessage *ev);

struct shim_task {
	struct urs_loop *loop;
	struct shim_reaper *reaper;
	const struct shim_backend *be;
	void *be_arg;
	shim_publish_fn publish;
	void *pub_arg;
	const char *run_dir;	     /* where console sockets go (root-only) */
	const char *ns;		     /* containerd's namespace (logging binaries) */
	void (*on_empty)(void *arg); /* Shutdown with no container left */
	void *empty_arg;
	unsigned logger_ready_ms; /* a logging binary's deadline; 0: SHIM_LOGGER_READY_MS */
	struct shim_ctr *ctrs;
	bool shutdown; /* Shutdown was asked for: exit once the last one goes */
};

/* the Task service's methods, for ttrpc_server_new() (arg: struct shim_task) */
extern const struct ttrpc_method shim_task_methods[];

/**
 * shim_task_find() - a container the service serves
 * @t: the service
 * @id: its id
 *
 * Return: the container, or NULL.
 */
struct shim_ctr *shim_task_find(struct shim_task *t, const char *id);

/**
 * shim_task_fini() - free every container record (processes are not touched)
 * @t: the service
 */
void shim_task_fini(struct shim_task *t);

/* -- between shim/task.c and shim/task_rpc.c ------------------------------ */

/* a timestamp message for @at */
void shim_task_ts(Google__Protobuf__Timestamp *ts, const struct timespec *at);
/* watch @p's pid (made after shim_reaper_seq() was @since) for its exit */
int shim_task_watch(struct shim_task *t, struct shim_proc *p, uint64_t since);
/* @p exited (wait @status at @at): told now, or held while p->op */
void shim_task_exited(struct shim_task *t, struct shim_proc *p, int status,
		      const struct timespec *at);
/* tell a known exit: STOPPED, /tasks/exit, the Wait calls answered */
void shim_task_report_exit(struct shim_task *t, struct shim_proc *p);
/* answer @call when @p exits */
int shim_task_add_wait(struct shim_proc *p, struct ttrpc_call *call);
/* open @p's stdio (and its console socket with a terminal); @err: why not */
int shim_task_proc_io(struct shim_task *t, struct shim_proc *p, struct urs_err *err);
/* @p's logging binary, if any, is ready: 0 none to wait for; 1 @done
 * runs from the loop once it is (err 0) or is not (why); <0 could not wait */
int shim_task_proc_ready(struct shim_task *t, struct shim_proc *p, shim_done done, void *arg);
/* its logging binary was not ready: killed (reaped by the reaper) */
void shim_task_proc_unready(struct shim_proc *p);
/* after the backend made @p: hand its stdio on (a terminal's copy starts); @err: why not */
int shim_task_proc_io_done(struct shim_task *t, struct shim_proc *p, struct urs_err *err);
/* free what @p holds (its Wait calls fail with NOT_FOUND); not @p itself */
void shim_task_proc_free(struct shim_task *t, struct shim_proc *p);
/* take @c out of the list; it is freed when no operation holds it */
void shim_task_ctr_gone(struct shim_task *t, struct shim_ctr *c);
/* unlink and free @c, its execs, its rootfs mount */
void shim_task_ctr_free(struct shim_task *t, struct shim_ctr *c);
/* watch @c's memory cgroup: /tasks/oom at each OOM kill */
void shim_task_watch_oom(struct shim_task *t, struct shim_ctr *c);
/* publish an event whose only field is the container id */
void shim_task_publish_id(struct shim_task *t, const char *topic, const char *type_url,
			  const char *id);

#endif
