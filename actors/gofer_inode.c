/*
 * actors/gofer_inode.c — the gofer's inode table: one entry per host object
 * the kernel holds a reference to (nlookup > 0), keyed by (st_dev, st_ino)
 * so that the same object found through two names (hard links, a renamed
 * directory) is one FUSE inode with one stable nodeid. Node ids come from a
 * 64-bit counter and are never reused while the connection lives, so the
 * generation is always 0. Entries are allocated one by one and live in two
 * chained hash tables (by nodeid, by (dev, ino)); memory follows the live
 * count: FORGET frees entries, a hard limit refuses new ones (-ENFILE), and
 * the tables shrink when the count falls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/gofer_int.h"

#define MIN_BUCKETS 16u

static uint32_t hash_key(dev_t dev, ino_t ino)
{
	uint64_t x =
		(uint64_t) ino * 0x9E3779B97F4A7C15ull ^ (uint64_t) dev * 0xC2B2AE3D27D4EB4Full;
	return (uint32_t) (x >> 32);
}

static uint32_t hash_id(uint64_t id)
{
	return (uint32_t) ((id * 0x9E3779B97F4A7C15ull) >> 32);
}

int gofer_itable_init(struct gofer_itable *t, uint32_t max)
{
	*t = (struct gofer_itable){.max = max ? max : 1u << 20, .next_id = FUSE_ROOT_ID};
	t->nbuckets = MIN_BUCKETS;
	t->by_id = calloc(t->nbuckets, sizeof(*t->by_id));
	t->by_key = calloc(t->nbuckets, sizeof(*t->by_key));
	if (!t->by_id || !t->by_key) {
		free(t->by_id);
		free(t->by_key);
		return -ENOMEM;
	}
	return 0;
}

void gofer_itable_fini(struct gofer_itable *t, void (*each)(struct ginode *, void *), void *ctx)
{
	for (uint32_t b = 0; t->by_id && b < t->nbuckets; b++) {
		struct ginode *i = t->by_id[b];
		while (i) {
			struct ginode *n = i->next_id;
			if (each)
				each(i, ctx);
			if (i->fd >= 0)
				close(i->fd);
			free(i);
			i = n;
		}
	}
	free(t->by_id);
	free(t->by_key);
	*t = (struct gofer_itable){0};
}

struct ginode *gofer_inode_get(struct gofer_itable *t, uint64_t nodeid)
{
	for (struct ginode *i = t->by_id[hash_id(nodeid) & (t->nbuckets - 1)]; i; i = i->next_id)
		if (i->nodeid == nodeid)
			return i;
	return NULL;
}

static int resize(struct gofer_itable *t, uint32_t nb)
{
	struct ginode **id = calloc(nb, sizeof(*id)), **key = calloc(nb, sizeof(*key));
	if (!id || !key) {
		free(id);
		free(key);
		return -ENOMEM;
	}
	for (uint32_t b = 0; b < t->nbuckets; b++) {
		struct ginode *i = t->by_id[b];
		while (i) {
			struct ginode *n = i->next_id;
			uint32_t h = hash_id(i->nodeid) & (nb - 1);
			i->next_id = id[h];
			id[h] = i;
			uint32_t k = hash_key(i->dev, i->ino) & (nb - 1);
			i->next_key = key[k];
			key[k] = i;
			i = n;
		}
	}
	free(t->by_id);
	free(t->by_key);
	t->by_id = id;
	t->by_key = key;
	t->nbuckets = nb;
	return 0;
}

static struct ginode *find(struct gofer_itable *t, dev_t dev, ino_t ino)
{
	for (struct ginode *i = t->by_key[hash_key(dev, ino) & (t->nbuckets - 1)]; i;
	     i = i->next_key)
		if (i->dev == dev && i->ino == ino)
			return i;
	return NULL;
}

static struct ginode *insert(struct gofer_itable *t, int fd, const struct stat *st, int *err)
{
	if (t->live >= t->max) {
		*err = -ENFILE;
		return NULL;
	}
	if (t->live + 1 > t->nbuckets)
		resize(t, t->nbuckets * 2); /* on failure, longer chains */
	struct ginode *i = malloc(sizeof(*i));
	if (!i) {
		*err = -ENOMEM;
		return NULL;
	}
	*i = (struct ginode){.nodeid = t->next_id++,
			     .nlookup = 1,
			     .dev = st->st_dev,
			     .ino = st->st_ino,
			     .fd = fd,
			     .type = st->st_mode & S_IFMT};
	uint32_t h = hash_id(i->nodeid) & (t->nbuckets - 1);
	i->next_id = t->by_id[h];
	t->by_id[h] = i;
	uint32_t k = hash_key(i->dev, i->ino) & (t->nbuckets - 1);
	i->next_key = t->by_key[k];
	t->by_key[k] = i;
	t->live++;
	return i;
}

struct ginode *gofer_inode_ref(struct gofer_itable *t, int fd, const struct stat *st, int *err)
{
	struct ginode *i = find(t, st->st_dev, st->st_ino);
	if (i) {
		close(fd);
		i->nlookup++;
		return i;
	}
	i = insert(t, fd, st, err);
	if (!i)
		close(fd);
	return i;
}

int gofer_inode_root(struct gofer_itable *t, int fd)
{
	if (t->root)
		return -EEXIST;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	int err = 0;
	struct ginode *i = insert(t, fd, &st, &err);
	if (!i)
		return err;
	t->root = i;
	return 0;
}

void gofer_inode_forget(struct gofer_itable *t, struct ginode *i, uint64_t n)
{
	if (i == t->root)
		return; /* the root lives as long as the connection */
	i->nlookup = n >= i->nlookup ? 0 : i->nlookup - n;
	if (i->nlookup || i->opens)
		return;
	struct ginode **pp = &t->by_id[hash_id(i->nodeid) & (t->nbuckets - 1)];
	while (*pp && *pp != i)
		pp = &(*pp)->next_id;
	if (*pp)
		*pp = i->next_id;
	pp = &t->by_key[hash_key(i->dev, i->ino) & (t->nbuckets - 1)];
	while (*pp && *pp != i)
		pp = &(*pp)->next_key;
	if (*pp)
		*pp = i->next_key;
	if (i->fd >= 0)
		close(i->fd);
	free(i);
	t->live--;
}

void gofer_itable_compact(struct gofer_itable *t)
{
	uint32_t nb = t->nbuckets;
	while (nb > MIN_BUCKETS && t->live * 4 < nb)
		nb /= 2;
	if (nb != t->nbuckets)
		resize(t, nb);
}

size_t gofer_itable_mem(const struct gofer_itable *t)
{
	/* malloc rounds a 72-byte entry up to 80 */
	return (size_t) t->nbuckets * 2 * sizeof(void *) + (size_t) t->live * 80;
}
