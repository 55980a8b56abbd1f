/*
 * actors/checkpointer.c — the supervisor's state in a checkpoint image:
 * gather + seal (save), verify + decode + apply (restore), the host key,
 * and the checkpointer actor that writes the file with batched io_uring
 * writes (up to CKPT_DIRECT_MAX bytes, the usual few KiB: one pwrite). See
 * checkpointer.h.
 */
#include "actors/checkpointer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "actors/gofer/gofer.h"
#include "actors/gofer/thread.h"
#include "actors/metrics.h"
#include "actors/netstack.h"
#include "host/spec.h"
#include "net/snapshot.h"
#include "runtime/common.h"
#include "state/codec.h"
#include "state/statefile.h"
#include "supstate_types.h"

#define CKPT_DIRECT_MAX (256u << 10)

/* ---- seal and open ---- */

struct membuf {
	uint8_t *p;
	size_t len, cap, off;
};

static int mem_sink(void *ctx, const void *buf, size_t len)
{
	struct membuf *m = ctx;
	if (m->len + len > m->cap) {
		size_t cap = m->cap ? m->cap : 16384;
		while (cap < m->len + len)
			cap *= 2;
		uint8_t *p = realloc(m->p, cap);
		if (!p)
			return -ENOMEM;
		m->p = p;
		m->cap = cap;
	}
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

static ssize_t mem_source(void *ctx, void *buf, size_t len)
{
	struct membuf *m = ctx;
	size_t n = m->len - m->off < len ? m->len - m->off : len;
	memcpy(buf, m->p + m->off, n);
	m->off += n;
	return (ssize_t) n;
}

int urs_supstate_seal(const struct sst_root *st, const uint8_t *key, size_t keylen, uint8_t **out,
		      size_t *len, struct urs_err *err)
{
	struct urs_st_enc e;
	int r = urs_st_enc_init(&e, 64u << 10, NULL, NULL);
	if (r < 0)
		return urs_err_set(err, r, "supervisor state: encoder: %s", strerror(-r));
	if ((r = supstate_save_root(&e, st)) < 0) {
		urs_st_enc_free(&e);
		return urs_err_set(err, r, "supervisor state: encoding: %s", strerror(-r));
	}
	size_t n;
	const uint8_t *data = urs_st_enc_data(&e, &n);
	char ver[16];
	snprintf(ver, sizeof(ver), "%d", URS_SUPSTATE_VERSION);
	const struct urs_sf_meta meta[] = {
		{"kind", URS_SUPSTATE_KIND},
		{"version", ver},
		{"sandbox", st->config.id ? st->config.id : ""},
	};
	struct membuf m = {0};
	struct urs_sf_writer w;
	/* zstd level 1: 5 KB -> 1.7 KB (config.json, the seccomp table's zeros)
	 * for ~17 us */
	r = urs_sf_writer_open(&w, mem_sink, &m, key, keylen, 1, meta, URS_ARRAY_SIZE(meta));
	if (r == 0) {
		r = urs_sf_write(&w, data, n);
		int c = urs_sf_writer_close(&w);
		if (r == 0)
			r = c;
	}
	urs_st_enc_free(&e);
	if (r < 0) {
		free(m.p);
		return urs_err_set(err, r, "supervisor state: sealing: %s", strerror(-r));
	}
	*out = m.p;
	*len = m.len;
	return 0;
}

int urs_supstate_open(const uint8_t *buf, size_t len, const uint8_t *key, size_t keylen,
		      struct urs_supstate *out, struct urs_err *err)
{
	memset(out, 0, sizeof(*out));
	struct membuf m = {.p = (uint8_t *) buf, .len = len};
	struct urs_sf_reader rd;
	int r = urs_sf_reader_open(&rd, mem_source, &m, key, keylen);
	if (r < 0) {
		urs_err_set(err, r, "%s", rd.msg[0] ? rd.msg : strerror(-r));
		urs_sf_reader_close(&rd);
		return r;
	}
	const char *kind = urs_sf_meta_get(&rd, "kind");
	const char *ver = urs_sf_meta_get(&rd, "version");
	if (!kind || strcmp(kind, URS_SUPSTATE_KIND)) {
		/* the message first: kind lives in the reader */
		urs_err_set(err, -EBADMSG, "not a supervisor state file (kind %s)",
			    kind ? kind : "missing");
		urs_sf_reader_close(&rd);
		return -EBADMSG;
	}
	if (!ver || atoi(ver) != URS_SUPSTATE_VERSION) {
		urs_err_set(err, -EBADMSG, "unsupported supervisor state version %s",
			    ver ? ver : "(none)");
		urs_sf_reader_close(&rd);
		return -EBADMSG;
	}
	uint8_t *payload = NULL;
	size_t plen = 0;
	r = urs_sf_read_all(&rd, &payload, &plen);
	if (r < 0) {
		urs_err_set(err, r, "%s", rd.msg[0] ? rd.msg : strerror(-r));
		urs_sf_reader_close(&rd);
		return r;
	}
	urs_sf_reader_close(&rd);
	struct urs_st_dec *d = calloc(1, sizeof(*d));
	if (!d) {
		free(payload);
		return urs_err_set(err, -ENOMEM, "supervisor state: out of memory");
	}
	/* bounded: the file is at most URS_SUPSTATE_MAX */
	const struct urs_st_limits lim = {.max_arena = 8 * (size_t) URS_SUPSTATE_MAX};
	urs_st_dec_init(d, &lim);
	r = supstate_load_root(d, payload, plen, NULL, &out->root);
	free(payload); /* nothing borrowed: d->borrow is off */
	if (r < 0) {
		urs_err_set(err, r, "decoding: %s", d->msg);
		urs_st_dec_free(d);
		free(d);
		return r;
	}
	out->dec = d;
	return 0;
}

void urs_supstate_free(struct urs_supstate *s)
{
	if (s->dec) {
		urs_st_dec_free(s->dec);
		free(s->dec);
	}
	s->dec = NULL;
	s->root = NULL;
}

int urs_supstate_read(const char *dir, const uint8_t *key, size_t keylen, struct urs_supstate *out,
		      struct urs_err *err)
{
	char path[4200];
	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/%s", dir, URS_SUPSTATE_FILE);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT
				       : urs_err_set(err, -errno, "%s: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return urs_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || (sb.st_mode & 022))
		return urs_err_set(err, -EPERM,
				   "%s: must be a regular file owned by uid %u and writable by "
				   "nobody else",
				   path, (unsigned) geteuid());
	if (sb.st_size > (off_t) URS_SUPSTATE_MAX)
		return urs_err_set(err, -E2BIG, "%s: larger than %u bytes", path, URS_SUPSTATE_MAX);
	size_t len = (size_t) sb.st_size;
	uint8_t *buf = malloc(len + 1);
	if (!buf)
		return urs_err_set(err, -ENOMEM, "%s: out of memory", path);
	size_t got = 0;
	while (got < len) {
		ssize_t k = pread(fd, buf + got, len - got, (off_t) got);
		if (k <= 0)
			break;
		got += (size_t) k;
	}
	int r = 0;
	if (got != len) {
		r = urs_err_set(err, -EIO, "%s: short read", path);
	} else {
		r = urs_supstate_open(buf, len, key, keylen, out, err);
		if (r < 0)
			urs_err_wrap(err, r, "supervisor state %s refused", path);
	}
	free(buf);
	return r;
}

int urs_supstate_apply_metrics(const struct urs_supstate *s, struct urs_err *err)
{
	const struct sst_root *st = s->root;
	/* all or nothing: every metric is checked before any is added */
	for (int check = 1; check >= 0; check--)
		for (uint32_t i = 0; st && i < st->metrics_len; i++) {
			const struct sst_metric *m = &st->metrics[i];
			if (!m->name)
				continue;
			int r = urs_sup_metrics_load(m->name, m->vals, m->vals_len, check);
			if (r == -EINVAL)
				return urs_err_set(err, r,
						   "supervisor state: metric %s has %u values, "
						   "this build another shape: no metric restored",
						   m->name, m->vals_len);
			/* -ENOENT: a metric this build does not have: skipped */
		}
	return 0;
}

int urs_supstate_apply_net(const struct urs_supstate *s, struct urs_net *net, struct urs_err *err)
{
	const struct sst_root *st = s->root;
	if (!st || !net || !st->net.present)
		return 0;
	const struct sst_netstats *b = &st->net.stats;
	const struct urs_net_stats base = {
		.rx_frames = b->rx_frames,
		.rx_bytes = b->rx_bytes,
		.tx_frames = b->tx_frames,
		.tx_bytes = b->tx_bytes,
		.tx_again = b->tx_again,
		.drop_bad = b->drop_bad,
		.drop_frag = b->drop_frag,
		.drop_csum = b->drop_csum,
		.drop_policy = b->drop_policy,
		.drop_limit = b->drop_limit,
		.drop_other = b->drop_other,
		.arp = b->arp,
		.ndp = b->ndp,
		.icmp_echo = b->icmp_echo,
		.tcp_open = b->tcp_open,
		.tcp_refused = b->tcp_refused,
		.tcp_reset = b->tcp_reset,
		.udp_open = b->udp_open,
		.dns_queries = b->dns_queries,
	};
	urs_net_stats_add(net, &base);
	for (uint32_t i = 0; i < st->net.neighbors_len; i++) {
		const struct sst_neigh *n = &st->net.neighbors[i];
		struct urs_net_neigh_info x = {.family = n->family};
		memcpy(&x.addr, n->addr, 16);
		memcpy(x.mac, n->mac, 6);
		int r = urs_net_neigh_add(net, &x);
		if (r < 0)
			return urs_err_set(err, r, "supervisor state: neighbor %u: %s", i,
					   strerror(-r));
	}
	return 0;
}

/* ---- gather ---- */

struct gather {
	struct sst_root *st;
	uint32_t metrics_cap, neigh_cap, flows_cap;
	int err;
};

static int gather_metric(void *ctx, const char *name, const uint64_t *vals, uint32_t n)
{
	struct gather *g = ctx;
	struct sst_root *st = g->st;
	if (urs_grow((void **) &st->metrics, &g->metrics_cap, st->metrics_len, sizeof(*st->metrics),
		     16))
		return -ENOMEM;
	struct sst_metric *m = &st->metrics[st->metrics_len];
	memset(m, 0, sizeof(*m));
	m->name = strdup(name);
	m->vals = malloc((size_t) n * sizeof(*vals) + 1);
	if (!m->name || !m->vals) {
		free(m->name);
		free(m->vals);
		return -ENOMEM;
	}
	memcpy(m->vals, vals, (size_t) n * sizeof(*vals));
	m->vals_len = n;
	st->metrics_len++;
	return 0;
}

static int gather_neigh(void *ctx, const struct urs_net_neigh_info *e)
{
	struct gather *g = ctx;
	struct sst_net *n = &g->st->net;
	if (urs_grow((void **) &n->neighbors, &g->neigh_cap, n->neighbors_len,
		     sizeof(*n->neighbors), 16))
		return -ENOMEM;
	struct sst_neigh *x = &n->neighbors[n->neighbors_len++];
	memset(x, 0, sizeof(*x));
	x->family = e->family;
	memcpy(x->addr, &e->addr, 16);
	memcpy(x->mac, e->mac, 6);
	return 0;
}

static int gather_flow(void *ctx, const struct urs_net_flow_info *f)
{
	struct gather *g = ctx;
	struct sst_net *n = &g->st->net;
	if (urs_grow((void **) &n->flows, &g->flows_cap, n->flows_len, sizeof(*n->flows), 16))
		return -ENOMEM;
	struct sst_flow *x = &n->flows[n->flows_len++];
	*x = (struct sst_flow){.proto = f->proto,
			       .family = f->family,
			       .lport = f->lport,
			       .rport = f->rport,
			       .inbound = f->inbound,
			       .established = f->established,
			       .idle_ms = f->idle_ms};
	memcpy(x->raddr, &f->raddr, 16);
	return 0;
}

static void gather_free(struct sst_root *st)
{
	for (uint32_t i = 0; i < st->metrics_len; i++) {
		free(st->metrics[i].name);
		free(st->metrics[i].vals);
	}
	free(st->metrics);
	free(st->net.neighbors);
	free(st->net.flows);
	for (uint32_t i = 0; i < st->volumes_len; i++)
		free(st->volumes[i].inodes);
	free(st->volumes);
	free(st->config.config_json);
	free(st->config.fwds);
}

static uint8_t *slurp(const char *path, uint32_t *len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0 || sb.st_size > (1 << 24))
		return NULL;
	uint8_t *p = malloc((size_t) sb.st_size + 1);
	if (p && read(fd, p, (size_t) sb.st_size) != (ssize_t) sb.st_size) {
		free(p);
		return NULL;
	}
	*len = (uint32_t) sb.st_size;
	return p;
}

/* The gofer volumes' part of the state (their thread's lock held; @dev:
 * each volume's FUSE st_dev, read from /proc before taking it). */
static int save_gofers(const struct urs_ckpt_src *src, struct sst_root *st, const uint64_t *dev,
		       struct urs_err *err)
{
	uint32_t nv = 0;
	for (int i = 0; src->gofers && i < URS_GOFER_MAX; i++)
		nv += src->gofers[i] != NULL;
	if (nv && !(st->volumes = calloc(nv, sizeof(*st->volumes))))
		return urs_err_set(err, -ENOMEM, "out of memory");
	for (int i = 0; src->gofers && i < URS_GOFER_MAX; i++) {
		if (!src->gofers[i])
			continue;
		struct sst_volume *v = &st->volumes[st->volumes_len++];
		struct urs_gofer_state gs;
		int r = urs_gofer_state_export(src->gofers[i], &gs);
		if (r == 0)
			r = urs_gofer_state_to_sst(&gs, v);
		urs_gofer_state_free(&gs);
		if (r < 0)
			return urs_err_set(err, r, "saving gofer volume %s: %s", src->gofer_dest[i],
					   strerror(-r));
		v->destination = (char *) src->gofer_dest[i];
		v->host_path = (char *) src->gofer_src[i];
		v->fuse_dev = dev[i];
	}
	return 0;
}

static int gather(const struct urs_ckpt_src *src, struct sst_root *st, struct urs_err *err)
{
	struct gather g = {.st = st};
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	st->version = URS_SUPSTATE_VERSION;
	st->saved_ns = (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
	st->config.id = (char *) src->id;
	st->config.bundle = (char *) src->bundle;
	if (src->state_dir) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/config.json", src->state_dir);
		st->config.config_json = slurp(path, &st->config.config_json_len);
	}
	const struct urs_netopts *no = src->net;
	if (no) {
		st->config.net_mode = (uint8_t) no->mode;
		st->config.ipv6 = no->ipv6;
		st->config.fwds = calloc(no->n_fwd + 1, sizeof(*st->config.fwds));
		if (!st->config.fwds)
			return urs_err_set(err, -ENOMEM, "out of memory");
		for (unsigned i = 0; i < no->n_fwd; i++) {
			struct sst_fwd *f = &st->config.fwds[st->config.fwds_len++];
			f->proto = (uint8_t) no->fwd[i].proto;
			f->sandbox_port = no->fwd[i].sandbox_port;
			f->hostlen = no->fwd[i].hostlen <= sizeof(f->host) ? no->fwd[i].hostlen : 0;
			memcpy(f->host, &no->fwd[i].host, f->hostlen);
		}
	}
	int r = urs_sup_metrics_save(src->loop, src->sc, gather_metric, &g);
	if (r)
		return urs_err_set(err, r < 0 ? r : -EIO, "saving metrics: %s", strerror(-r));
	struct urs_net *net = src->engine ? src->engine(src->engine_ctx) : NULL;
	if (net) {
		st->net.present = true;
		const struct urs_net_stats *s = urs_net_stats(net);
		st->net.stats = (struct sst_netstats){
			.rx_frames = s->rx_frames,
			.rx_bytes = s->rx_bytes,
			.tx_frames = s->tx_frames,
			.tx_bytes = s->tx_bytes,
			.tx_again = s->tx_again,
			.drop_bad = s->drop_bad,
			.drop_frag = s->drop_frag,
			.drop_csum = s->drop_csum,
			.drop_policy = s->drop_policy,
			.drop_limit = s->drop_limit,
			.drop_other = s->drop_other,
			.arp = s->arp,
			.ndp = s->ndp,
			.icmp_echo = s->icmp_echo,
			.tcp_open = s->tcp_open,
			.tcp_refused = s->tcp_refused,
			.tcp_reset = s->tcp_reset,
			.udp_open = s->udp_open,
			.dns_queries = s->dns_queries,
		};
		if ((r = urs_net_neigh_each(net, gather_neigh, &g)) ||
		    (r = urs_net_flow_each(net, gather_flow, &g)))
			return urs_err_set(err, r, "saving the netstack: %s", strerror(-r));
	}
	/* gofer volumes (actors/gofer/state.c): identity, mode, quotas, the
	 * live inode table; read under their thread's lock */
	uint64_t dev[URS_GOFER_MAX] = {0};
	for (int i = 0; src->gofers && src->init_pid > 0 && i < URS_GOFER_MAX; i++)
		if (src->gofer_dest[i])
			dev[i] = urs_gofer_mount_dev(src->init_pid, src->gofer_dest[i]);
	struct urs_gofer_thread *gt = src->gofer_thread ? *src->gofer_thread : NULL;
	if (gt)
		urs_gofer_thread_lock(gt);
	r = save_gofers(src, st, dev, err);
	if (gt)
		urs_gofer_thread_unlock(gt);
	return r;
}

/* ---- the actor ---- */

enum { CKPT_MSG_SAVE = 1 };

static void finish(struct urs_checkpointer *c, int res, const char *msg)
{
	struct urs_ckpt_req *req = c->req;
	if (c->fd >= 0)
		close(c->fd);
	if (res < 0 && c->dirfd >= 0)
		unlinkat(c->dirfd, c->tmp, 0);
	if (c->dirfd >= 0)
		close(c->dirfd);
	c->fd = c->dirfd = -1;
	free(c->buf);
	c->buf = NULL;
	c->req = NULL;
	if (res == 0)
		c->saves++;
	req->done(req->ctx, res, msg);
}

static void chunk_cb(struct urs_writer *w, struct urs_wchunk *ch, int res)
{
	(void) ch;
	struct urs_checkpointer *c = container_of(w, struct urs_checkpointer, w);
	char msg[256] = "";
	if (res >= 0 && (size_t) res != c->len) {
		/* a short write: the rest says why (ENOSPC, EDQUOT...) */
		ssize_t k = pwrite(c->fd, c->buf + res, c->len - (size_t) res, (off_t) res);
		res = k < 0 ? -errno : (size_t) k == c->len - (size_t) res ? (int) c->len : -EIO;
	}
	if (res >= 0 && renameat(c->dirfd, c->tmp, c->dirfd, URS_SUPSTATE_FILE) < 0)
		res = -errno;
	if (res < 0)
		snprintf(msg, sizeof(msg), "writing %s/%s: %s", c->req->dir, URS_SUPSTATE_FILE,
			 strerror(-res));
	finish(c, res < 0 ? res : 0, msg);
}

static void handle(struct urs_actor *self, struct urs_msg *m)
{
	struct urs_checkpointer *c = container_of(self, struct urs_checkpointer, actor);
	struct urs_ckpt_req *req;
	memcpy(&req, m->data, sizeof(req));
	c->req = req;
	struct urs_err err = {{0}};
	struct sst_root st = {0};
	uint8_t key[URS_CKPT_KEY_LEN];
	int r = gather(c->src, &st, &err);
	if (r == 0)
		r = urs_ckpt_key(req->key_file[0] ? req->key_file : NULL, false, key, &err);
	if (r == 0)
		r = urs_supstate_seal(&st, key, sizeof(key), &c->buf, &c->len, &err);
	gather_free(&st);
	explicit_bzero(key, sizeof(key));
	if (r == 0 && c->len > UINT32_MAX)
		r = urs_err_set(&err, -E2BIG, "supervisor state: too large");
	if (r == 0) {
		c->dirfd = open(req->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		snprintf(c->tmp, sizeof(c->tmp), "%s.tmp", URS_SUPSTATE_FILE);
		c->fd = c->dirfd < 0 ? -1
				     : openat(c->dirfd, c->tmp,
					      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
					      0600);
		if (c->fd < 0)
			r = urs_err_set(&err, -errno, "%s/%s: %s", req->dir, c->tmp,
					strerror(errno));
	}
	/* A small state (a few KiB, the usual case) is written at once: a
	 * buffered write through io_uring is handed to an io-wq worker, whose
	 * start costs milliseconds here (the pages sink has the same rule) */
	if (r == 0 && c->len <= CKPT_DIRECT_MAX) {
		int res = 0;
		for (size_t off = 0; off < c->len;) {
			ssize_t k = pwrite(c->fd, c->buf + off, c->len - off, (off_t) off);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				res = k < 0 ? -errno : -EIO;
				break;
			}
			off += (size_t) k;
		}
		chunk_cb(&c->w, &c->chunk, res < 0 ? res : (int) c->len);
		return;
	}
	if (r == 0 && (r = urs_writer_init(&c->w, self->loop, c->fd, 0, 0, 0, NULL)) < 0)
		urs_err_set(&err, r, "writer: %s", strerror(-r));
	if (r == 0 &&
	    (r = urs_writer_write(&c->w, &c->chunk, c->buf, (uint32_t) c->len, chunk_cb)) < 0)
		urs_err_set(&err, r, "writing %s: %s", req->dir, strerror(-r));
	if (r < 0)
		finish(c, r, err.msg);
	/* else: chunk_cb finishes */
}

void urs_checkpointer_init(struct urs_checkpointer *c, struct urs_loop *loop,
			   const struct urs_ckpt_src *src)
{
	memset(c, 0, sizeof(*c));
	c->src = src;
	c->fd = c->dirfd = -1;
	urs_actor_init(&c->actor, loop, handle);
}

bool urs_checkpointer_busy(const struct urs_checkpointer *c)
{
	return c->req != NULL;
}

int urs_checkpointer_save(struct urs_checkpointer *c, struct urs_ckpt_req *req)
{
	if (c->req)
		return -EBUSY;
	struct urs_msg *m = urs_msg_alloc(c->actor.loop, CKPT_MSG_SAVE);
	if (!m)
		return -ENOMEM;
	memcpy(m->data, &req, sizeof(req));
	m->len = sizeof(req);
	c->req = req; /* busy from now: a second request is refused */
	int r = urs_send(&c->actor, m);
	if (r < 0)
		c->req = NULL;
	return r;
}
