/*
 * actors/sandbox_restore.h — a sandbox made from a checkpoint image: the
 * image checked before anything is made (ckpt_container_image_open), the
 * bundle's options (actors/bundle.h) with the image's tree as the init's,
 * under the policy config.json gives (ckpt_policy_from_spec), then
 * urs_sandbox_create. `ursa restore` is its flags around it.
 */
#ifndef URSA_ACTORS_SANDBOX_RESTORE_H
#define URSA_ACTORS_SANDBOX_RESTORE_H

#include <sys/types.h>

#include "actors/bundle.h"
#include "host/state.h"
#include "runtime/err.h"

/* Restore @c->id from the image directory @image (local, or a stage of
 * one fetched from object storage). Without @c->bundle: an `ursa do`
 * sandbox's layer (unpacked from the image), else the current directory if
 * it has a config.json, else the bundle recorded in the image. On success
 * the supervisor's pid in *@sup and the record in *@st (the caller clears
 * it); on failure nothing is left (no record, cgroup, process or layer). */
int urs_sandbox_restore(struct urs_create_args *c, const char *image, pid_t *sup,
			struct urs_state *st, struct urs_err *err);

#endif
