/*
 * host/hooks.h — running OCI hooks: fork, the container's state JSON on the
 * hook's stdin, exec path with args/env, kill after the timeout.
 */
#ifndef URSA_HOST_HOOKS_H
#define URSA_HOST_HOOKS_H

#include "runtime/err.h"
#include "host/spec.h"

/* Run one hook; 0 if it exited 0. Message names the hook kind and index. */
int urs_hook_run(const struct urs_hook *h, enum urs_hook_kind kind, size_t idx,
		 const char *state_json, struct urs_err *err);
/* Run every hook of @kind in order; stops at the first failure. */
int urs_hooks_run(const struct urs_spec *spec, enum urs_hook_kind kind, const char *state_json,
		  struct urs_err *err);

#endif
