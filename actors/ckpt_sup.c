/*
 * actors/ckpt_sup.c — the supervisor's part in a checkpoint, from the side
 * of the process that checkpoints (ckpt/run.h's callbacks): "exec-wait"
 * (a just-started init has exec'd), "guard" (held open; its close thaws
 * the v2 freezer), "checkpoint DIR\tKEYFILE" (the supervisor's own state,
 * metrics, netstack tables, config, into DIR/supervisor.img, sealed with
 * the image's key by its checkpointer actor). The supervisor's side is in
 * actors/sup_control.c.
 */
#include "actors/ckpt_sup.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "actors/checkpointer.h"
#include "actors/control.h"
#include "ckpt/trace.h"
#include "runtime/common.h"

/* Its answer once it has (an older supervisor: "unknown request", and we
 * go on); 10 s at most. */
static void sup_exec_wait(void *ctx, const char *sdir)
{
	(void) ctx;
	char reply[64];
	int fd = urs_ctl_send(sdir, "exec-wait");
	if (fd >= 0)
		urs_ctl_recv(fd, reply, sizeof(reply)); /* closes fd */
}

static int sup_guard(void *ctx, const char *sdir)
{
	(void) ctx;
	return urs_ctl_send(sdir, "guard");
}

static int sup_ask(void *ctx, const char *sdir, const char *dir, const char *key_file,
		   struct urs_err *err)
{
	struct urs_ckpt_sup *s = ctx;
	char req[4352];
	int n = snprintf(req, sizeof(req), "checkpoint %s\t%s", dir, key_file);
	if (n < 0 || (size_t) n >= sizeof(req) || strpbrk(dir, "\t\n"))
		return urs_err_set(err, -ENAMETOOLONG,
				   "the image directory %s (with the key file %s) is too long or "
				   "holds a tab or newline",
				   dir, key_file);
	ckpt_trace("cli: supervisor asked");
	int fd = urs_ctl_send(sdir, req);
	if (fd < 0)
		return urs_err_set(err, fd, "the supervisor's state: %s", strerror(-fd));
	s->ctlfd = fd;
	return 0;
}

/* its answer: its state is in DIR/supervisor.img */
static int sup_wait(void *ctx, struct urs_err *err)
{
	struct urs_ckpt_sup *s = ctx;
	if (s->ctlfd < 0)
		return 0;
	char reply[512];
	int r = urs_ctl_recv(s->ctlfd, reply, sizeof(reply));
	s->ctlfd = -1; /* closed by urs_ctl_recv */
	ckpt_trace("cli: supervisor state written");
	if (r == 0 && !strcmp(reply, "error: unknown request")) {
		/* a supervisor started by an older ursa: an image without its
		 * state (restore then starts its counters from zero) */
		ckpt_worklog(s->work, "dump.log",
			     "supervisor state: not supported by its supervisor");
		return 0;
	}
	if (r < 0)
		return urs_err_set(err, r, "the supervisor's state: %s", strerror(-r));
	if (strncmp(reply, "ok", 2))
		return urs_err_set(err, -EIO, "the supervisor's state: %s", reply);
	return 0;
}

/* no image: none of the supervisor's state either (once it is written, if
 * the request is still being answered) */
static void sup_forget(void *ctx, const char *dir)
{
	struct urs_ckpt_sup *s = ctx;
	char reply[512], sup_img[4200];
	if (s->ctlfd >= 0)
		urs_ctl_recv(s->ctlfd, reply, sizeof(reply));
	s->ctlfd = -1;
	snprintf(sup_img, sizeof(sup_img), "%s/%s", dir, URS_SUPSTATE_FILE);
	unlink(sup_img);
}

const struct ckpt_run_sup urs_ckpt_sup_ops = {
	.exec_wait = sup_exec_wait,
	.guard = sup_guard,
	.ask = sup_ask,
	.wait = sup_wait,
	.forget = sup_forget,
};
