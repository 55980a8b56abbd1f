/*
 * actors/sup_gofer.c — the gofer volumes (docs/gofer.md) from the
 * supervisor's side, hook by hook: opened before the clone, served on
 * their thread once READY is given, stopped at exit, their series in the
 * metrics reply; at a restore, checked against the checkpoint before
 * anything is created, and continued from their saved state once the
 * processes are back. The gofer itself is actors/gofer/.
 */
#include "actors/sup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "actors/gofer/gofer.h"
#include "actors/gofer/thread.h"
#include "runtime/common.h"
#include "supstate_types.h"

/* ---- gofer volumes (docs/gofer.md) ----
 * Before the clone: /dev/fuse and the host directory for each "ursa-gofer"
 * mount (the init mounts the former and closes both). After the loop
 * exists: one gofer per volume on it. At exit: stopped before the loop. */

int sup_gofer_open(struct urs_sup_args *a, struct urs_err *err)
{
	const struct urs_spec *spec = a->launch.spec;
	struct urs_launch *L = &a->launch;
	L->n_gofer = 0;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct urs_mount *m = &spec->mounts[i];
		if (!m->gofer)
			continue;
		if (L->n_gofer >= URS_GOFER_MAX) {
			return urs_err_set(err, -E2BIG,
					   "mounts[%zu]: too many \"ursa-gofer\" volumes", i);
		}
		int dir = open(m->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0) {
			int r = -errno;
			return urs_err_set(err, r, "mounts[%zu]: gofer volume source %s: %s", i,
					   m->source, strerror(-r));
		}
		int fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
		if (fuse < 0) {
			int r = -errno;
			close(dir);
			return urs_err_set(err, r,
					   "mounts[%zu]: gofer volume: opening /dev/fuse: %s", i,
					   strerror(-r));
		}
		L->gofer_dir[L->n_gofer] = dir;
		L->gofer_fuse[L->n_gofer] = fuse;
		L->n_gofer++;
	}
	return 0;
}

void sup_gofer_close_fds(struct urs_launch *L)
{
	for (int i = 0; i < L->n_gofer; i++) {
		if (L->gofer_dir[i] >= 0)
			close(L->gofer_dir[i]);
		if (L->gofer_fuse[i] >= 0)
			close(L->gofer_fuse[i]);
		L->gofer_dir[i] = L->gofer_fuse[i] = -1;
	}
	L->n_gofer = 0;
}

/* fds all the gofer volumes may hold at once, besides 3 per volume (fuse,
 * root, mount fds): cached inode fds (split), open files, pinned inodes */
#define GOFER_FDS_CACHE	 64u
#define GOFER_FDS_OPEN	 96u
#define GOFER_FDS_PINNED 64u

/* READY given: serve each volume, on the gofer thread (actors/
 * gofer/thread.h). A volume that cannot be served would hang every access
 * to it: the sandbox is stopped instead. */
int sup_gofer_start(struct sup *s)
{
	struct urs_launch *L = &s->a->launch;
	if (!L->n_gofer)
		return 0;
	/* the supervisor's fd table stays small whatever the sandbox does:
	 * open files and pinned inodes share caps, the fd caches split 64 */
	s->gofer_fds = (struct urs_gofer_budget){.max_open = GOFER_FDS_OPEN,
						 .max_pinned = GOFER_FDS_PINNED};
	uint32_t cache = GOFER_FDS_CACHE / (uint32_t) L->n_gofer;
	struct urs_gofer_vol v[URS_GOFER_MAX];
	const char *dest[URS_GOFER_MAX];
	for (int i = 0, k = 0; i < L->n_gofer; i++) {
		while (!s->a->launch.spec->mounts[k].gofer)
			k++;
		const struct urs_mount *m = &s->a->launch.spec->mounts[k++];
		v[i] = (struct urs_gofer_vol){.fuse_fd = L->gofer_fuse[i],
					      .root_fd = L->gofer_dir[i],
					      .opts = {.rdonly = (m->flags & MS_RDONLY) != 0,
						       .quota_bytes = m->gofer_quota_bytes,
						       .quota_inodes = m->gofer_quota_inodes,
						       .fd_cache = cache < 4 ? 4 : cache,
						       .budget = &s->gofer_fds}};
		dest[i] = m->destination;
		s->gdest[i] = m->destination; /* checkpoint/restore */
		s->gsrc[i] = m->source;
		L->gofer_fuse[i] = -1; /* the gofer's (closed by it, even on failure) */
	}
	int failed;
	int r = urs_gofer_thread_start(v, L->n_gofer, s->gofer, &s->gt, &failed);
	for (int i = 0; i < L->n_gofer; i++) { /* the roots: the gofers keep copies */
		close(L->gofer_dir[i]);
		L->gofer_dir[i] = -1;
	}
	if (r < 0)
		fprintf(stderr, "ursa: gofer volume%s%s: %s\n", failed >= 0 ? " " : "s",
			failed >= 0 ? dest[failed] : "", strerror(-r));
	return r;
}

void sup_gofer_stop(struct sup *s)
{
	urs_gofer_thread_stop(s->gt, s->gofer);
	s->gt = NULL;
}

/* The volumes in the order of s->gofer[]: their destinations label them. */
int sup_gofer_metrics(struct sup *s, char *buf, int n, size_t len)
{
	const char *vols[URS_GOFER_MAX];
	uint32_t nv = 0;
	const struct urs_spec *sp = s->a->launch.spec;
	for (size_t k = 0; sp && k < sp->n_mounts && nv < URS_GOFER_MAX; k++)
		if (sp->mounts[k].gofer)
			vols[nv++] = sp->mounts[k].destination;
	if (!nv)
		return n;
	char labels[160];
	snprintf(labels, sizeof(labels), "sandbox=\"%s\"", s->a->id);
	if (s->gt)
		urs_gofer_thread_lock(s->gt);
	int m = urs_gofer_metrics_render(s->gofer, vols, nv, labels, buf + n, len - (size_t) n);
	if (s->gt)
		urs_gofer_thread_unlock(s->gt);
	return m < 0 ? m : n + m;
}

/* ---- end of gofer volumes */

/* ---- gofer volumes through checkpoint/restore (docs/gofer.md
 * "Checkpoint and restore", actors/gofer/state.c) */

/* Restore, before anything is created: each saved volume must be a gofer
 * volume of this configuration on the same host directory (st_dev, st_ino
 * of its root), else the restore is refused. */
int sup_gofer_saved_check(struct sup *s, struct urs_err *err)
{
	const struct sst_root *st = s->saved.root;
	const struct urs_spec *spec = s->a->launch.spec;
	for (uint32_t v = 0; st && v < st->volumes_len; v++) {
		const struct sst_volume *sv = &st->volumes[v];
		int idx = 0;
		const struct urs_mount *m = NULL;
		for (size_t k = 0; spec && k < spec->n_mounts; k++) {
			if (!spec->mounts[k].gofer)
				continue;
			if (sv->destination &&
			    !strcmp(spec->mounts[k].destination, sv->destination)) {
				m = &spec->mounts[k];
				break;
			}
			idx++;
		}
		if (!m || idx >= URS_GOFER_MAX)
			return urs_err_set(err, -ENOENT,
					   "restore: gofer volume %s of the checkpoint is not in "
					   "this configuration",
					   sv->destination ? sv->destination : "?");
		int r = urs_gofer_state_from_sst(sv, &s->gsaved[idx]);
		if (r < 0)
			return urs_err_set(err, r, "restore: out of memory");
		s->gfuse_dev[idx] = sv->fuse_dev;
		s->gsaved_any = true;
		_cleanup_close_ int dir = open(m->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
		r = dir < 0 ? -errno : urs_gofer_state_check_root(&s->gsaved[idx], dir);
		if (r == -ESTALE)
			return urs_err_set(err, r,
					   "restore: gofer volume %s: host directory %s is not the "
					   "one checkpointed (%s; device/inode of its root differ: "
					   "replaced?)",
					   m->destination, m->source,
					   sv->host_path ? sv->host_path : "?");
		if (r < 0)
			return urs_err_set(err, r, "restore: gofer volume %s: %s: %s",
					   m->destination, m->source, strerror(-r));
	}
	return 0;
}

/* Restored: each volume continues from its saved state (checks; quota
 * accounting goes on from the host's usage, a difference is said). */
void sup_gofer_import(struct sup *s)
{
	if (s->gt)
		urs_gofer_thread_lock(s->gt);
	for (int i = 0; i < URS_GOFER_MAX; i++) {
		if (!s->gofer[i] || !s->gdest[i] || !s->gsaved_any)
			continue;
		struct urs_err err = {{0}};
		int r = urs_gofer_state_import(s->gofer[i], &s->gsaved[i], &err);
		if (r < 0 || err.msg[0])
			fprintf(stderr, "ursa: restore: gofer volume %s: %s\n", s->gdest[i],
				err.msg);
	}
	if (s->gt)
		urs_gofer_thread_unlock(s->gt);
	for (int i = 0; i < URS_GOFER_MAX; i++)
		urs_gofer_state_free(&s->gsaved[i]);
}

/* ---- end of gofer volumes through checkpoint/restore */
