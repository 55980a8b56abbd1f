/*
 * shim/backend_cli.h — the Task service's backend that drives sandboxes
 * with `ursa` commands (create, start, exec, kill, pause, resume, delete)
 * as containerd's runc shim drives runc: each command runs as a child of
 * the shim, watched by the reaper, and its error is read back from the
 * JSON log it was given (BUNDLE/log.json). The first step of the shim;
 * the supervisor moves into the shim's own loop next (docs/shim.md).
 */
#ifndef URSA_SHIM_BACKEND_CLI_H
#define URSA_SHIM_BACKEND_CLI_H

#include "shim/task.h"

struct shim_cli {
	struct shim_task *t;
	char ursa[4096];     /* the ursa binary */
	char root[4096];     /* its --root */
	char host_sock[108]; /* create's --host-socket (shim/host.h), or "" */
};

extern const struct shim_backend shim_cli_backend;

/**
 * shim_cli_init() - find the ursa binary and name the state root
 * @b: the backend (its arg for shim_cli_backend)
 * @t: the Task service it serves
 * @ursa: the binary, or NULL for `ursa` beside the running executable
 * @root: ursa's --root for this shim's containers
 *
 * Return: 0 or a negative errno (-ENOENT: no ursa binary).
 */
int shim_cli_init(struct shim_cli *b, struct shim_task *t, const char *ursa, const char *root);

#endif
