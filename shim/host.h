/*
 * shim/host.h — the shim as the supervisor of its pod's sandboxes (issue
 * #21 step 2, docs/shim.md "One process per pod"). The shim listens on
 * SOCKET.h beside its ttrpc socket; `ursa create --host-socket` makes the
 * sandbox's supervisor hand the sandbox over there once it is built
 * (actors/hosted.h), and the shim serves it on its own loop from then on:
 * the control socket, checkpoints, the init's exit. A hand-over is taken
 * only from the supervisor ursa's record names for a container this shim
 * is creating; anything else is refused, and that supervisor goes on
 * serving its sandbox itself.
 */
#ifndef URSA_SHIM_HOST_H
#define URSA_SHIM_HOST_H

#include "runtime/loop.h"
#include "shim/task.h"

struct shim_host {
	struct urs_loop *loop;
	struct shim_task *t;
	const char *root; /* ursa's --root for this shim's containers */
	int fd;		  /* the listener, or -1 */
	struct urs_op accept_op;
	char path[108];
	unsigned taken, refused; /* hand-overs so far */
	unsigned conns;		 /* hand-over connections open */
};

/**
 * shim_host_init() - listen for hand-overs at @path
 * @h: the host
 * @loop: the shim's loop
 * @t: its Task service (the containers it creates)
 * @root: ursa's --root for them
 * @path: the socket (a stale one is replaced)
 *
 * Return: 0 or a negative errno (then no sandbox is handed over).
 */
int shim_host_init(struct shim_host *h, struct urs_loop *loop, struct shim_task *t,
		   const char *root, const char *path);

/**
 * shim_host_close() - stop listening and remove the socket
 * @h: the host (sandboxes already adopted are served on)
 */
void shim_host_close(struct shim_host *h);

#endif
