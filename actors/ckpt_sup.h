/*
 * actors/ckpt_sup.h — the supervisor's part in a checkpoint, asked over its
 * control socket (actors/control.h) by the process that checkpoints: the
 * callbacks of ckpt_run_checkpoint() (ckpt/run.h).
 */
#ifndef URSA_ACTORS_CKPT_SUP_H
#define URSA_ACTORS_CKPT_SUP_H

#include "ckpt/run.h"

/* the callbacks' context: one checkpoint's request */
struct urs_ckpt_sup {
	const char *work; /* --work-path, or NULL */
	int ctlfd;	  /* the state's request, waiting for its answer, or -1 */
};

/* exec_wait, guard, ask, wait, forget on a struct urs_ckpt_sup */
extern const struct ckpt_run_sup urs_ckpt_sup_ops;

#endif
