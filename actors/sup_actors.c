/*
 * actors/sup_actors.c — the actors on the supervisor's loop, one place for
 * every subsystem it carries: started once the loop exists (the netstack
 * with what a restore saved of it, the checkpointer, seccomp denial
 * counting, the gofer volumes), stopped before the loop ends; and the
 * checkpointer's way to the netstack's engine, what a checkpoint saves.
 */
#include "actors/sup_int.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "actors/checkpointer.h"
#include "actors/metrics.h"
#include "actors/netstack.h"
#include "host/proc.h"
#include "runtime/loop.h"

static struct urs_net *ckpt_engine(void *ctx)
{
	struct sup *s = ctx;
	return s->net ? urs_netstack_engine(s->net) : NULL;
}

/* the checkpointer, and what it reads of us */
void sup_start_checkpointer(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	s->ckpt_src = (struct urs_ckpt_src){.id = a->id,
					    .bundle = a->bundle,
					    .state_dir = a->state_dir,
					    .net = a->net,
					    .engine = ckpt_engine,
					    .engine_ctx = s,
					    .loop = s->lp,
					    .gofers = s->gofer,
					    .gofer_thread = &s->gt,
					    .gofer_dest = s->gdest,
					    .gofer_src = s->gsrc,
					    .init_pid = s->init_pid,
					    .sc = s->sc};
	urs_checkpointer_init(&s->ckpt, s->lp, &s->ckpt_src);
}

/* the actors on the loop: metrics, netstack, checkpointer, seccomp
 * counting, gofer volumes */
void sup_start_actors(struct sup *s)
{
	struct urs_sup_args *a = s->a;
	struct urs_err err = {{0}};
	int r;
	if (s->tapfd >= 0) {
		/* the engine owns the tap and the forwards from here; failing now
		 * leaves the sandbox without network: say so, and stop it */
		r = urs_netstack_start(&s->net, s->lp, s->tapfd, &s->netcfg, a->net, &err);
		s->tapfd = -1;
		if (r < 0) {
			fprintf(stderr, "ursa: %s\n", err.msg);
			urs_pidfd_signal(s->pidfd, SIGKILL);
		}
	}
	if (s->saved.root) { /* restored: the netstack's tables and counters */
		if (urs_supstate_apply_net(&s->saved, ckpt_engine(s), &err) < 0)
			fprintf(stderr, "ursa: restore: %s\n", err.msg);
		urs_supstate_free(&s->saved);
	}
	sup_start_checkpointer(s);
	if ((r = urs_sup_seccomp_start(s->lp)) < 0) {
		/* unanswered, denied syscalls would fail with ENOSYS instead of
		 * the profile's errno: do not run the workload like that */
		fprintf(stderr, "ursa: counting seccomp denials: %s\n", strerror(-r));
		urs_pidfd_signal(s->pidfd, SIGKILL);
	}
	if (sup_gofer_start(s) < 0) /* gofer volumes: unserved, every access would hang */
		urs_pidfd_signal(s->pidfd, SIGKILL);
}

void sup_stop_actors(struct sup *s)
{
	/* the loop ends next, so its cancels never complete: s->net stays
	 * unfreed (and unused) until our exit */
	urs_netstack_stop(s->net);
	sup_gofer_stop(s);
	urs_loop_fini(s->lp);
}
