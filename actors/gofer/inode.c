/*
 * actors/gofer/inode.c — the gofer's inode table: one entry per host object
 * the kernel holds a reference to (nlookup > 0), keyed by (st_dev, st_ino)
 * so that the same object found through two names (hard links, a renamed
 * directory) is one FUSE inode with one stable nodeid. Node ids come from a
 * 64-bit counter and are never reused while the connection lives, so the
 * generation is always 0. Entries are allocated one by one and live in two
 * chained hash tables (by nodeid, by (dev, ino)); memory follows the live
 * count: FORGET frees entries, a hard limit refuses new ones (-ENFILE), and
 * the tables shrink when the count falls.
 *
 * Entries hold no fd of their own: an entry keeps the object's file handle
 * (name_to_handle_at at lookup) and the O_PATH fd the handlers use is
 * reopened on demand (open_by_handle_at on the mount fd of its st_dev,
 * checked to be the same (dev, ino)) and kept in a small fd cache, a clock
 * over csize slots: a hit sets the slot's bit, an insertion into a full
 * cache closes the first fd whose bit is clear (clearing bits on the way).
 * So the fds the table holds are bounded by csize + the mount fds + the
 * root, whatever the kernel caches. Objects on file systems without handles
 * keep their O_PATH fd ("pinned") up to max_pinned, then -ENFILE.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/gofer/int.h"

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
	*t = (struct gofer_itable){.max = max ? max : 1u << 20,
				   .next_id = FUSE_ROOT_ID,
				   .csize = GOFER_FDCACHE,
				   .max_pinned = GOFER_MAX_PINNED};
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

void gofer_itable_limits(struct gofer_itable *t, uint32_t csize, uint32_t max_pinned)
{
	if (t->cache)
		return; /* too late: the cache exists */
	if (csize) {
		t->csize = csize < 2 ? 2 : csize > 4096 ? 4096 : csize;
	}
	if (max_pinned)
		t->max_pinned = max_pinned;
}

static void cache_drop(struct gofer_itable *t, struct ginode *i)
{
	if (i->cslot < 0)
		return;
	uint32_t s = (uint32_t) i->cslot, last = t->cused - 1;
	if (s != last) {
		t->cache[s] = t->cache[last];
		t->cache[s].i->cslot = (int16_t) s;
	}
	t->cache[last] = (struct gofer_cslot){0};
	t->cused--;
	i->cslot = -1;
}

/* Close @i's fd and forget it (the entry stays). */
static void release_fd(struct gofer_itable *t, struct ginode *i)
{
	if (i->fd < 0)
		return;
	cache_drop(t, i);
	if (i->hlen == 0 && i != t->root) {
		t->pinned--;
		if (t->shared_pinned && *t->shared_pinned)
			(*t->shared_pinned)--;
	}
	close(i->fd);
	i->fd = -1;
}

/* Keep @fd as @i's cached fd, evicting another when full; -ENOMEM (and
 * @fd closed: reopened next time) if the cache cannot be allocated. */
static int cache_put(struct gofer_itable *t, struct ginode *i, int fd)
{
	if (!t->cache) {
		t->cache = calloc(t->csize, sizeof(*t->cache));
		if (!t->cache) {
			close(fd);
			return -ENOMEM;
		}
	}
	uint32_t s;
	if (t->cused < t->csize) {
		s = t->cused++;
	} else {
		for (;;) {
			struct gofer_cslot *c = &t->cache[t->hand];
			if (c->i != t->protect && !c->ref)
				break;
			c->ref = false;
			t->hand = (t->hand + 1) % t->csize;
		}
		s = t->hand;
		struct ginode *v = t->cache[s].i;
		close(v->fd);
		v->fd = -1;
		v->cslot = -1;
		t->evictions++;
		t->hand = (t->hand + 1) % t->csize;
	}
	t->cache[s] = (struct gofer_cslot){.i = i, .ref = false};
	i->cslot = (int16_t) s;
	i->fd = fd;
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
			if (t->shared_pinned && i->fd >= 0 && i->hlen == 0 && i != t->root &&
			    *t->shared_pinned)
				(*t->shared_pinned)--;
			if (i->fd >= 0)
				close(i->fd);
			if (i->hlen > GOFER_HANDLE_INLINE)
				free(i->h.ext);
			free(i);
			i = n;
		}
	}
	for (uint32_t k = 0; k < t->nmnt; k++)
		if (t->mnt_fd[k] >= 0)
			close(t->mnt_fd[k]);
	free(t->cache);
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
			if (!i->stale) {
				uint32_t k = hash_key(i->dev, i->ino) & (nb - 1);
				i->next_key = key[k];
				key[k] = i;
			}
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

static unsigned char *hbytes(struct ginode *i)
{
	return i->hlen > GOFER_HANDLE_INLINE ? i->h.ext : i->h.in;
}

/* Whether handles of this file system can be opened again, not only made
 * (overlayfs without nfs_export encodes handles but cannot decode them):
 * the directory @fd's own handle is tried on @m. */
static bool decodes(int m, int fd)
{
	struct {
		struct file_handle fh;
		unsigned char b[MAX_HANDLE_SZ];
	} h = {.fh.handle_bytes = MAX_HANDLE_SZ};
	int mid;
	if (name_to_handle_at(fd, "", &h.fh, &mid, AT_EMPTY_PATH) < 0)
		return false;
	int o = open_by_handle_at(m, &h.fh, O_PATH | O_CLOEXEC);
	if (o < 0)
		return false;
	close(o);
	return true;
}

/* The mount fd index for @dev, adding one (from the directory @fd) if new
 * and there is room; -1 if none. */
static int mount_index(struct gofer_itable *t, dev_t dev, int fd, bool dir)
{
	for (uint32_t k = 0; k < t->nmnt; k++)
		if (t->mnt_dev[k] == dev)
			return t->mnt_fd[k] >= 0 ? (int) k : -1;
	if (!dir || t->nmnt >= GOFER_MAX_MOUNTS)
		return -1;
	/* a readable fd: open_by_handle_at refuses O_PATH mount fds */
	int m = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (m >= 0 && !t->no_handles && !decodes(m, fd)) {
		close(m);
		m = -1;
	}
	t->mnt_dev[t->nmnt] = dev;
	t->mnt_fd[t->nmnt] = m; /* -1 remembered: no handles there */
	return m >= 0 ? (int) t->nmnt++ : (t->nmnt++, -1);
}

/* Fill @i's handle from @fd; -EOPNOTSUPP when there is none to use. */
static int take_handle(struct gofer_itable *t, struct ginode *i, int fd, bool dir)
{
	if (t->no_handles)
		return -EOPNOTSUPP;
	int m = mount_index(t, i->dev, fd, dir);
	if (m < 0)
		return -EOPNOTSUPP;
	struct {
		struct file_handle fh;
		unsigned char b[MAX_HANDLE_SZ];
	} h = {.fh.handle_bytes = MAX_HANDLE_SZ};
	int mid;
	if (name_to_handle_at(fd, "", &h.fh, &mid, AT_EMPTY_PATH) < 0)
		return -errno;
	if (h.fh.handle_bytes == 0 || h.fh.handle_bytes > MAX_HANDLE_SZ)
		return -EOPNOTSUPP;
	if (h.fh.handle_bytes > GOFER_HANDLE_INLINE) {
		i->h.ext = malloc(h.fh.handle_bytes);
		if (!i->h.ext)
			return -ENOMEM;
	}
	i->hlen = (uint8_t) h.fh.handle_bytes;
	i->htype = h.fh.handle_type;
	i->mnt = (uint8_t) m;
	memcpy(hbytes(i), h.fh.f_handle, i->hlen);
	return 0;
}

static bool pin_allowed(struct gofer_itable *t)
{
	if (t->pinned >= t->max_pinned)
		return false;
	if (t->shared_pinned && *t->shared_pinned >= t->max_pinned)
		return false;
	return true;
}

static struct ginode *insert(struct gofer_itable *t, const struct stat *st, int *err)
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
			     .fd = -1,
			     .type = st->st_mode & S_IFMT,
			     .cslot = -1};
	return i;
}

static void link_in(struct gofer_itable *t, struct ginode *i)
{
	uint32_t h = hash_id(i->nodeid) & (t->nbuckets - 1);
	i->next_id = t->by_id[h];
	t->by_id[h] = i;
	uint32_t k = hash_key(i->dev, i->ino) & (t->nbuckets - 1);
	i->next_key = t->by_key[k];
	t->by_key[k] = i;
	t->live++;
}

static int reopen_path(int fd)
{
	char p[32];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	/* followed: the magic link names the open file itself, no walk */
	int o = open(p, O_PATH | O_CLOEXEC);
	return o < 0 ? -errno : o;
}

/* Take @i out of the (dev, ino) chain: its nodeid stays valid until the
 * kernel forgets it, but lookups no longer find it. */
static void unlink_key(struct gofer_itable *t, struct ginode *i)
{
	struct ginode **pp = &t->by_key[hash_key(i->dev, i->ino) & (t->nbuckets - 1)];
	while (*pp && *pp != i)
		pp = &(*pp)->next_key;
	if (*pp)
		*pp = i->next_key;
	i->next_key = NULL;
	i->stale = 1;
}

/*
 * Is entry @i, found by (dev, ino), the object @fd is? An entry keeps a
 * handle, not the object: once its fd left the cache, the host may delete
 * the object and give its inode number to a new one (with another type, or
 * another generation in the handle).
 */
static bool same_object(struct ginode *i, int fd, const struct stat *st)
{
	if (i->type != (st->st_mode & S_IFMT))
		return false;
	if (!i->hlen)
		return true; /* pinned: the fd keeps the object alive */
	struct {
		struct file_handle fh;
		unsigned char b[MAX_HANDLE_SZ];
	} h = {.fh.handle_bytes = MAX_HANDLE_SZ};
	int mid;
	if (name_to_handle_at(fd, "", &h.fh, &mid, AT_EMPTY_PATH) < 0)
		return true; /* cannot tell: the reopen's dev/ino check still holds */
	return h.fh.handle_bytes == i->hlen && h.fh.handle_type == i->htype &&
	       !memcmp(h.fh.f_handle, hbytes(i), i->hlen);
}

struct ginode *gofer_inode_ref(struct gofer_itable *t, int fd, bool opath, const struct stat *st,
			       int *err)
{
	struct ginode *i = find(t, st->st_dev, st->st_ino);
	if (i && !same_object(i, fd, st)) {
		unlink_key(t, i); /* stale: a new entry for the new object */
		i = NULL;
	}
	if (i) {
		i->nlookup++;
		if (opath) {
			if (i->fd < 0 && i->hlen)
				cache_put(t, i, fd); /* saves the next reopen */
			else
				close(fd);
		}
		return i;
	}
	i = insert(t, st, err);
	if (!i)
		goto fail;
	int r = take_handle(t, i, fd, S_ISDIR(st->st_mode));
	if (r == -ENOMEM) {
		*err = r;
		goto fail;
	}
	if (r < 0) {
		/* no handle (file system without export support): keep an fd,
		 * within the cap */
		if (!pin_allowed(t)) {
			t->refused++;
			*err = -ENFILE;
			goto fail;
		}
		int pfd = opath ? fd : reopen_path(fd);
		if (pfd < 0) {
			*err = pfd;
			goto fail;
		}
		opath = false; /* taken */
		i->fd = pfd;
		t->pinned++;
		if (t->shared_pinned)
			(*t->shared_pinned)++;
	} else if (opath) {
		cache_put(t, i, fd);
		opath = false;
	}
	link_in(t, i);
	return i;
fail:
	if (i && i->hlen > GOFER_HANDLE_INLINE)
		free(i->h.ext);
	free(i);
	if (opath)
		close(fd);
	return NULL;
}

int gofer_inode_fd(struct gofer_itable *t, struct ginode *i)
{
	if (i->fd >= 0) {
		if (i->cslot >= 0)
			t->cache[i->cslot].ref = true;
		return i->fd;
	}
	if (!i->hlen)
		return -ESTALE; /* a pinned fd is never closed before the entry */
	struct {
		struct file_handle fh;
		unsigned char b[MAX_HANDLE_SZ];
	} h = {.fh.handle_bytes = i->hlen, .fh.handle_type = i->htype};
	memcpy(h.fh.f_handle, hbytes(i), i->hlen);
	int fd = open_by_handle_at(t->mnt_fd[i->mnt], &h.fh, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;
		t->stale++;
		return err == ENOENT || err == ESTALE ? -ESTALE : -err;
	}
	/* the handle names the object the lookup verified: check it is */
	struct stat st;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != i->dev ||
	    st.st_ino != i->ino) {
		close(fd);
		t->stale++;
		return -ESTALE;
	}
	t->reopens++;
	int r = cache_put(t, i, fd);
	return r < 0 ? r : fd;
}

int gofer_inode_fd2(struct gofer_itable *t, struct ginode *a, struct ginode *b, int *fa, int *fb)
{
	*fa = gofer_inode_fd(t, a);
	if (*fa < 0)
		return *fa;
	t->protect = a;
	*fb = gofer_inode_fd(t, b);
	t->protect = NULL;
	return *fb < 0 ? *fb : 0;
}

int gofer_inode_root(struct gofer_itable *t, int fd)
{
	if (t->root)
		return -EEXIST;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	int err = 0;
	struct ginode *i = insert(t, &st, &err);
	if (!i)
		return err;
	i->fd = fd; /* never evicted, never counted as pinned */
	link_in(t, i);
	t->root = i;
	if (S_ISDIR(st.st_mode))
		mount_index(t, st.st_dev, fd, true);
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
	unlink_key(t, i);
	release_fd(t, i);
	if (i->hlen > GOFER_HANDLE_INLINE)
		free(i->h.ext);
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
	/* malloc rounds a 104-byte entry up to 112 (handles > 24 bytes: rare,
	 * not counted) */
	return (size_t) t->nbuckets * 2 * sizeof(void *) + (size_t) t->live * 112 +
	       (t->cache ? (size_t) t->csize * sizeof(*t->cache) : 0);
}

uint32_t gofer_itable_fds(const struct gofer_itable *t)
{
	uint32_t n = t->cused + t->pinned + (t->root ? 1 : 0);
	for (uint32_t k = 0; k < t->nmnt; k++)
		n += t->mnt_fd[k] >= 0;
	return n;
}
