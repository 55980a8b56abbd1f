/*
 * actors/gofer/state.c — a gofer volume's state through a checkpoint
 * (docs/gofer.md "Checkpoint and restore"): export what the supervisor
 * saves in the volumes part of DIR/supervisor.img (actors/supstate.ursc),
 * map it to and from the schema's struct, and check/continue it in the
 * restored supervisor's new gofer.
 *
 * What is saved and why: the identity of the host directory (st_dev and
 * st_ino of the root: a restore onto another directory is refused before
 * anything is created), the mode (read-only, passthrough), the quota limits
 * and the usage counted against them, the number of open handles, and the
 * live inode table entries (nodeid, host dev/ino, type, opens). The kernel
 * side of the FUSE connection (its nodeids, file handles, dentries) dies
 * with the sandbox's mount namespace, so nodeids are not re-created: the
 * restored processes re-open their files by path through the new mount and
 * get new nodeids. attr.ino is the host st_ino, so st_ino seen inside the
 * sandbox is the same before and after without any mapping; the table is
 * kept for diagnostics and to check that open files are still the same
 * host objects.
 *
 * Reads only fields of struct urs_gofer / struct ginode that do not depend
 * on how the inode table keeps its host objects (nodeid, dev, ino, type,
 * opens, the quota counters): see gofer/int.h.
 */
#include <errno.h>
#include <sys/sysmacros.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "actors/gofer/int.h"
#include "supstate_types.h"

/* Entries worth saving: the root and those with open handles (what the
 * restored processes re-open). The rest are only the kernel's cache: it
 * looks them up again by path, and their st_ino is the host's anyway, so a
 * table of 2^20 cached entries does not make a 2^20-entry image. */
static bool keep(const struct ginode *i)
{
	return i->nodeid == 1 || i->opens > 0;
}

int urs_gofer_state_export(const struct urs_gofer *g, struct urs_gofer_state *out)
{
	memset(out, 0, sizeof(*out));
	struct stat st;
	if (fstat(g->root_fd, &st) < 0)
		return -errno;
	out->root_dev = (uint64_t) st.st_dev;
	out->root_ino = (uint64_t) st.st_ino;
	out->rdonly = g->o.rdonly;
	out->passthrough = g->passthrough;
	out->quota_bytes = g->o.quota_bytes;
	out->quota_inodes = g->o.quota_inodes;
	out->used_bytes = g->q_bytes;
	out->used_inodes = g->q_inodes;
	out->open_files = g->open_files;
	const struct gofer_itable *t = &g->it;
	uint32_t n = 0;
	for (uint32_t b = 0; t->by_id && b < t->nbuckets; b++)
		for (const struct ginode *i = t->by_id[b]; i; i = i->next_id)
			n += keep(i);
	out->inodes = calloc(n ? n : 1, sizeof(*out->inodes));
	if (!out->inodes)
		return -ENOMEM;
	for (uint32_t b = 0; t->by_id && b < t->nbuckets; b++)
		for (const struct ginode *i = t->by_id[b]; i && out->ninodes < n; i = i->next_id)
			if (keep(i))
				out->inodes[out->ninodes++] = (struct urs_gofer_inode_rec){
					.nodeid = i->nodeid,
					.dev = (uint64_t) i->dev,
					.ino = (uint64_t) i->ino,
					.type = i->type,
					.opens = i->opens,
				};
	return 0;
}

void urs_gofer_state_free(struct urs_gofer_state *s)
{
	free(s->inodes);
	s->inodes = NULL;
	s->ninodes = 0;
}

int urs_gofer_state_check_root(const struct urs_gofer_state *s, int dir_fd)
{
	struct stat st;
	if (fstat(dir_fd, &st) < 0)
		return -errno;
	if (!s->root_dev && !s->root_ino)
		return 0; /* an image without the identity (older): nothing to check */
	return (uint64_t) st.st_dev == s->root_dev && (uint64_t) st.st_ino == s->root_ino ? 0
											  : -ESTALE;
}

int urs_gofer_state_import(struct urs_gofer *g, const struct urs_gofer_state *s,
			   struct urs_err *err)
{
	if (err)
		err->msg[0] = 0;
	int r = urs_gofer_state_check_root(s, g->root_fd);
	if (r < 0)
		return urs_err_set(err, r, "the host directory is not the one checkpointed");
	if (s->rdonly != g->o.rdonly)
		return urs_err_set(err, -EINVAL, "saved %s, configured %s", s->rdonly ? "ro" : "rw",
				   g->o.rdonly ? "ro" : "rw");
	/* Quota usage: the new gofer counted the host at start (the truth: any
	 * change made on the host meanwhile is in it), so accounting continues
	 * from there. It equals the saved usage unless the host changed; a
	 * difference is reported, the host's count kept. */
	if ((g->o.quota_bytes || g->o.quota_inodes) && (s->quota_bytes || s->quota_inodes) &&
	    (g->q_bytes != s->used_bytes || g->q_inodes != s->used_inodes))
		urs_err_set(err, 0,
			    "quota usage changed on the host since the checkpoint: %llu bytes %llu "
			    "inodes saved, %llu bytes %llu inodes now",
			    (unsigned long long) s->used_bytes, (unsigned long long) s->used_inodes,
			    (unsigned long long) g->q_bytes, (unsigned long long) g->q_inodes);
	return 0;
}

int urs_gofer_state_to_sst(const struct urs_gofer_state *s, struct sst_volume *v)
{
	v->rdonly = s->rdonly;
	v->host_dev = s->root_dev;
	v->host_ino = s->root_ino;
	v->passthrough = s->passthrough;
	v->quota_bytes = s->quota_bytes;
	v->quota_inodes = s->quota_inodes;
	v->used_bytes = s->used_bytes;
	v->used_inodes = s->used_inodes;
	v->open_files = s->open_files;
	v->inodes = calloc(s->ninodes ? s->ninodes : 1, sizeof(*v->inodes));
	if (!v->inodes)
		return -ENOMEM;
	v->inodes_len = s->ninodes;
	for (uint32_t k = 0; k < s->ninodes; k++)
		v->inodes[k] = (struct sst_inode){.ino = s->inodes[k].nodeid,
						  .host_ino = s->inodes[k].ino,
						  .host_dev = s->inodes[k].dev,
						  .type = s->inodes[k].type,
						  .opens = s->inodes[k].opens};
	return 0;
}

int urs_gofer_state_from_sst(const struct sst_volume *v, struct urs_gofer_state *s)
{
	memset(s, 0, sizeof(*s));
	s->rdonly = v->rdonly;
	s->root_dev = v->host_dev;
	s->root_ino = v->host_ino;
	s->passthrough = v->passthrough;
	s->quota_bytes = v->quota_bytes;
	s->quota_inodes = v->quota_inodes;
	s->used_bytes = v->used_bytes;
	s->used_inodes = v->used_inodes;
	s->open_files = v->open_files;
	s->inodes = calloc(v->inodes_len ? v->inodes_len : 1, sizeof(*s->inodes));
	if (!s->inodes)
		return -ENOMEM;
	s->ninodes = v->inodes_len;
	for (uint32_t k = 0; k < v->inodes_len; k++)
		s->inodes[k] = (struct urs_gofer_inode_rec){.nodeid = v->inodes[k].ino,
							    .dev = v->inodes[k].host_dev,
							    .ino = v->inodes[k].host_ino,
							    .type = v->inodes[k].type,
							    .opens = v->inodes[k].opens};
	return 0;
}

uint64_t urs_gofer_mount_dev(pid_t pid, const char *dest)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int) pid);
	FILE *f = fopen(path, "re");
	uint64_t dev = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		char mp[2048];
		if (strstr(line, " - fuse.ursa-gofer ") &&
		    sscanf(line, "%*u %*u %u:%u %*s %2047s", &maj, &min, mp) == 3 &&
		    !strcmp(mp, dest))
			dev = (uint64_t) makedev(maj, min); /* the last one mounted there */
	}
	if (f)
		fclose(f);
	return dev;
}
