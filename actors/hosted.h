/*
 * actors/hosted.h — a sandbox's supervision handed over to the process
 * that hosts it (issue #21, docs/shim.md "One process per pod").
 *
 * `ursa create --host-socket PATH` builds the sandbox as always: its
 * supervisor makes the namespaces, the cgroups and the init. Then, instead
 * of staying as a process beside the init, the supervisor hands the
 * serving part over to the process listening on PATH (the pod's
 * containerd-shim-ursa-v2): the init's pidfd, the control socket's
 * listener and the sync socket go over SCM_RIGHTS, and the host runs the
 * control protocol, the checkpointer and the init's exit on its own loop,
 * one `struct sup` per sandbox. The builder then exits.
 *
 * Only a sandbox whose supervisor has nothing else to run is handed over:
 * no gofer volume, no lazy restore's pager (a lazily restored one goes
 * once its paging is done: sup_hand_over_late), no restored netstack's tables,
 * no profile. Counted seccomp denials go with
 * it (the filter's listener and its errno table), and so does its
 * user-mode network: the tap, the port forwards' bound sockets and the
 * engine's configuration; the host runs the netstack on its loop, one per
 * such sandbox. Any other, or a host that refuses or is not there, keeps
 * its supervisor process (nothing is lost: the hand-over is an
 * optimisation of memory, never of behaviour).
 *
 * ROOT/ID/hosted ("PID START\n": the host's pid and start time) says who
 * serves the sandbox now; `ursa state` checks that process's life instead
 * of the builder's.
 */
#ifndef URSA_ACTORS_HOSTED_H
#define URSA_ACTORS_HOSTED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "actors/netstack.h"
#include "actors/sc_count.h"
#include "host/state.h"
#include "runtime/err.h"
#include "runtime/loop.h"

#define URS_HOSTED_FILE	   "hosted"
#define URS_HANDOVER_MAGIC 0x55485633u /* "UHV3": with the network part */

/* The hand-over message; its fds, in this order: the init's pidfd, the
 * control socket's listener, the sync socket unless the init has exec'd
 * (execd), the seccomp filter's listener with counted denials (sc: then
 * sc_table is the profile's errno table, actors/sc_count.h), and with a
 * user-mode network (net) the tap, then each of net_part.o's forwards'
 * bound sockets in its order (their fds in the message are -1). */
struct urs_handover {
	uint32_t magic;
	int32_t init_pid;
	uint8_t started, execd, sc, net;
	char id[URS_ID_MAX];
	struct {
		uint16_t base_errno, n_exc;
		uint32_t converted, native_arch;
		struct urs_seccomp_deny_exc exc[URS_SC_EXC_MAX];
	} sc_table;
	struct {
		struct urs_net_cfg cfg; /* the engine's */
		struct urs_netopts o;	/* the sandbox's network options */
	} net_part;
};
#define URS_HANDOVER_FDS (5 + URS_NET_MAX_FWD)

/* What a host needs of the sandbox it adopts, besides the message. */
struct urs_adopt {
	const struct urs_handover *h;
	int fds[URS_HANDOVER_FDS]; /* as they came, -1 after the last; taken (closed on failure too)
				    */
	const char *root;	   /* ursa's --root, where ROOT/ID is */
	const char *bundle;
	const char *cgroup; /* the record's serialized cgroup, or NULL */
};

/**
 * urs_sup_adopt() - serve a handed-over sandbox on @loop
 * @loop: the host's loop
 * @o: the sandbox (its fds are taken whatever happens)
 * @err: why not
 *
 * Starts the control socket, the checkpointer, the netstack (a refusal if
 * it cannot start: the supervisor then serves the sandbox) and the watch on
 * the init;
 * when the init ends its status goes to ROOT/ID/exit and everything of the
 * sandbox is freed once its last connection closed.
 *
 * Return: 0, or a negative errno with @err set.
 */
int urs_sup_adopt(struct urs_loop *loop, const struct urs_adopt *o, struct urs_err *err);

/* told once a started sandbox's process is exec'd (or its init ended) */
typedef void (*urs_hosted_done)(void *arg, int err, const char *msg);

/**
 * urs_sup_hosted_start() - `ursa start` of a sandbox served here, in-process
 * @root: ursa's --root
 * @id: the container
 * @done: called with (@arg, 0, NULL) from the loop once the process is
 *        exec'd or the init has ended, as `ursa start` returns; only when
 *        this returned 0
 * @arg: for @done
 * @err: why not
 *
 * What `ursa start` does, without running it: the init told to go, the
 * record marked started. Not for a container whose record names poststart
 * hooks (or cannot say): those run in the command. One whose record names
 * startContainer hooks is done at once (they may take long; runc's start
 * does not wait for them either).
 *
 * Return: 0; -ENOENT when @id is not served here, -EAGAIN when it has hooks
 * (run the command for either); another negative errno with @err set.
 */
int urs_sup_hosted_start(const char *root, const char *id, urs_hosted_done done, void *arg,
			 struct urs_err *err);

/**
 * urs_sup_adopted() - sandboxes served now
 *
 * Return: how many urs_sup_adopt() took that are not freed yet.
 */
unsigned urs_sup_adopted(void);

/**
 * urs_hosted_read() - who hosts the sandbox in @state_dir
 * @state_dir: ROOT/ID
 * @pid: the host's pid
 * @start: its start time (host/proc.h)
 *
 * Return: 0, -ENOENT when it is not handed over, another negative errno.
 */
int urs_hosted_read(const char *state_dir, pid_t *pid, uint64_t *start);

#endif
