/*
 * tests/ckpt/test_gofer_state.c — a gofer volume's state through the
 * supervisor's state file (actors/gofer/state.c, schema
 * actors/supstate.ursc struct volume): export from a gofer (its inode
 * table entries, root identity, mode, quota limits and usage), to the
 * schema, sealed and opened again (actors/checkpointer.c), back, equal;
 * the root identity check (same directory, another one, an image without
 * it); import into a new gofer (root and mode checked, a changed quota
 * usage reported); and schema evolution: a version 1 file (written with
 * tests/ckpt/supstate_v1.ursc, without the new fields) still loads.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "actors/checkpointer.h"
#include "actors/gofer/gofer.h"
#include "actors/gofer/int.h"
#include "state/codec.h"
#include "state/statefile.h"
#include "supstate_types.h"
#include "supstate_v1_types.h"

static const uint8_t KEY[32] = "0123456789abcdef0123456789abcde";

struct vol {
	char dir[64], other[64];
	struct urs_gofer g;
	struct ginode in[3];
	struct ginode *buckets[4];
};

/* A gofer as the handlers leave it: root fd, options, counters and an
 * inode table of three entries (built by hand: only the fields the export
 * reads, chained in the table's buckets): the root, a cached file, an
 * open one. */
static void vol_make(struct vol *v)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->dir, sizeof(v->dir), "/tmp/gofer-state.XXXXXX");
	snprintf(v->other, sizeof(v->other), "/tmp/gofer-state.XXXXXX");
	assert_non_null(mkdtemp(v->dir));
	assert_non_null(mkdtemp(v->other));
	v->g.root_fd = open(v->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(v->g.root_fd >= 0);
	v->g.o.quota_bytes = 65536;
	v->g.o.quota_inodes = 100;
	v->g.q_bytes = 40960;
	v->g.q_inodes = 3;
	v->g.open_files = 2;
	v->g.passthrough = true;
	const uint32_t types[3] = {S_IFDIR, S_IFREG, S_IFREG};
	for (int k = 0; k < 3; k++) {
		v->in[k] = (struct ginode){.nodeid = (uint64_t) k + 1,
					   .dev = 0x803,
					   .ino = 1000 + (ino_t) k,
					   .type = types[k],
					   .opens = k == 2 ? 2 : 0,
					   .nlookup = 1};
	}
	/* buckets 0 and 3, one chain of two */
	v->buckets[0] = &v->in[0];
	v->buckets[3] = &v->in[1];
	v->in[1].next_id = &v->in[2];
	v->g.it.by_id = v->buckets;
	v->g.it.nbuckets = 4;
}

static void vol_free(struct vol *v)
{
	close(v->g.root_fd);
	rmdir(v->dir);
	rmdir(v->other);
}

static const struct urs_gofer_inode_rec *find(const struct urs_gofer_state *s, uint64_t nodeid)
{
	for (uint32_t k = 0; k < s->ninodes; k++)
		if (s->inodes[k].nodeid == nodeid)
			return &s->inodes[k];
	return NULL;
}

static void test_export(void **state)
{
	(void) state;
	struct vol v;
	vol_make(&v);
	struct urs_gofer_state s;
	assert_int_equal(urs_gofer_state_export(&v.g, &s), 0);
	struct stat st;
	assert_int_equal(stat(v.dir, &st), 0);
	assert_int_equal(s.root_dev, (uint64_t) st.st_dev);
	assert_int_equal(s.root_ino, (uint64_t) st.st_ino);
	assert_false(s.rdonly);
	assert_true(s.passthrough);
	assert_int_equal(s.quota_bytes, 65536);
	assert_int_equal(s.used_bytes, 40960);
	assert_int_equal(s.used_inodes, 3);
	assert_int_equal(s.open_files, 2);
	/* the root and the open file; not the entry only the kernel caches */
	assert_int_equal(s.ninodes, 2);
	assert_null(find(&s, 2));
	for (int k = 0; k < 3; k += 2) {
		const struct urs_gofer_inode_rec *r = find(&s, (uint64_t) k + 1);
		assert_non_null(r);
		assert_int_equal(r->ino, 1000 + k);
		assert_int_equal(r->dev, 0x803);
		assert_int_equal(r->type, v.in[k].type);
		assert_int_equal(r->opens, v.in[k].opens);
	}
	urs_gofer_state_free(&s);
	vol_free(&v);
}

/* export -> schema -> sealed file -> opened -> back: the same state */
static void test_round_trip(void **state)
{
	(void) state;
	struct vol v;
	vol_make(&v);
	struct urs_gofer_state s, back;
	assert_int_equal(urs_gofer_state_export(&v.g, &s), 0);
	struct sst_volume vol = {.destination = "/data", .host_path = v.dir, .fuse_dev = 77};
	assert_int_equal(urs_gofer_state_to_sst(&s, &vol), 0);
	struct sst_root root = {.version = URS_SUPSTATE_VERSION, .volumes = &vol, .volumes_len = 1};
	uint8_t *buf;
	size_t len;
	struct urs_err err = {{0}};
	assert_int_equal(urs_supstate_seal(&root, KEY, sizeof(KEY), &buf, &len, &err), 0);
	struct urs_supstate o;
	assert_int_equal(urs_supstate_open(buf, len, KEY, sizeof(KEY), &o, &err), 0);
	assert_int_equal(o.root->volumes_len, 1);
	const struct sst_volume *ov = &o.root->volumes[0];
	assert_string_equal(ov->destination, "/data");
	assert_string_equal(ov->host_path, v.dir);
	assert_int_equal(ov->fuse_dev, 77);
	assert_int_equal(urs_gofer_state_from_sst(ov, &back), 0);
	assert_int_equal(back.root_dev, s.root_dev);
	assert_int_equal(back.root_ino, s.root_ino);
	assert_int_equal(back.rdonly, s.rdonly);
	assert_int_equal(back.passthrough, s.passthrough);
	assert_int_equal(back.quota_bytes, s.quota_bytes);
	assert_int_equal(back.quota_inodes, s.quota_inodes);
	assert_int_equal(back.used_bytes, s.used_bytes);
	assert_int_equal(back.used_inodes, s.used_inodes);
	assert_int_equal(back.open_files, s.open_files);
	assert_int_equal(back.ninodes, s.ninodes);
	assert_memory_equal(back.inodes, s.inodes, s.ninodes * sizeof(*s.inodes));

	/* the same directory passes; another one, or the same name replaced, not */
	assert_int_equal(urs_gofer_state_check_root(&back, v.g.root_fd), 0);
	int other = open(v.other, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(urs_gofer_state_check_root(&back, other), -ESTALE);
	close(other);

	/* import into the restored volume's new gofer */
	struct vol w;
	vol_make(&w);
	close(w.g.root_fd);
	w.g.root_fd = open(v.dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(urs_gofer_state_import(&w.g, &back, &err), 0);
	assert_string_equal(err.msg, ""); /* same usage counted at start */
	w.g.q_bytes = 1234;		  /* the host changed meanwhile: said, kept */
	assert_int_equal(urs_gofer_state_import(&w.g, &back, &err), 0);
	assert_non_null(strstr(err.msg, "40960 bytes"));
	assert_int_equal(w.g.q_bytes, 1234);
	w.g.o.rdonly = true;
	assert_int_equal(urs_gofer_state_import(&w.g, &back, &err), -EINVAL);
	assert_string_equal(err.msg, "saved rw, configured ro");
	w.g.o.rdonly = false;
	close(w.g.root_fd);
	w.g.root_fd = open(v.other, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(urs_gofer_state_import(&w.g, &back, &err), -ESTALE);
	assert_string_equal(err.msg, "the host directory is not the one checkpointed");
	vol_free(&w);

	urs_supstate_free(&o);
	free(buf);
	free(vol.inodes);
	urs_gofer_state_free(&s);
	urs_gofer_state_free(&back);
	vol_free(&v);
}

struct membuf {
	uint8_t *p;
	size_t len;
};

static int mem_sink(void *ctx, const void *buf, size_t len)
{
	struct membuf *m = ctx;
	uint8_t *p = realloc(m->p, m->len + len);
	if (!p)
		return -ENOMEM;
	memcpy(p + m->len, buf, len);
	m->p = p;
	m->len += len;
	return 0;
}

/* A version 1 file (no identity, quotas, fuse_dev, inode types) loads with
 * the current schema: the new fields are zero, the old ones kept; a state
 * without a root identity checks nothing. */
static void test_v1_file_loads(void **state)
{
	(void) state;
	struct sv1_inode in = {.ino = 5, .host_ino = 4242, .host_dev = 0x803, .nlookup = 1};
	struct sv1_volume vol = {
		.destination = "/data", .rdonly = true, .inodes = &in, .inodes_len = 1};
	struct sv1_root root = {.version = 1, .volumes = &vol, .volumes_len = 1};
	struct urs_st_enc e;
	assert_int_equal(urs_st_enc_init(&e, 4096, NULL, NULL), 0);
	assert_int_equal(supstate_v1_save_root(&e, &root), 0);
	size_t n;
	const uint8_t *data = urs_st_enc_data(&e, &n);
	const struct urs_sf_meta meta[] = {
		{"kind", URS_SUPSTATE_KIND}, {"version", "1"}, {"sandbox", "old"}};
	struct membuf m = {0};
	struct urs_sf_writer w;
	assert_int_equal(urs_sf_writer_open(&w, mem_sink, &m, KEY, sizeof(KEY), 0, meta, 3), 0);
	assert_int_equal(urs_sf_write(&w, data, n), 0);
	assert_int_equal(urs_sf_writer_close(&w), 0);
	urs_st_enc_free(&e);

	struct urs_supstate o;
	struct urs_err err = {{0}};
	assert_int_equal(urs_supstate_open(m.p, m.len, KEY, sizeof(KEY), &o, &err), 0);
	assert_int_equal(o.root->volumes_len, 1);
	const struct sst_volume *v = &o.root->volumes[0];
	assert_string_equal(v->destination, "/data");
	assert_true(v->rdonly);
	assert_int_equal(v->host_dev, 0);
	assert_int_equal(v->host_ino, 0);
	assert_int_equal(v->fuse_dev, 0);
	assert_int_equal(v->used_bytes, 0);
	assert_null(v->host_path);
	assert_int_equal(v->inodes_len, 1);
	assert_int_equal(v->inodes[0].host_ino, 4242);
	assert_int_equal(v->inodes[0].type, 0);
	struct urs_gofer_state s;
	assert_int_equal(urs_gofer_state_from_sst(v, &s), 0);
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(urs_gofer_state_check_root(&s, fd), 0); /* nothing to check */
	close(fd);
	urs_gofer_state_free(&s);
	urs_supstate_free(&o);
	free(m.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_v1_file_loads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
