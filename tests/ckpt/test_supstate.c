/*
 * tests/ckpt/test_supstate.c — the supervisor's state file
 * (actors/checkpointer.c, schema actors/supstate.ursc): seal/open round
 * trip of every part, refusal of a flipped byte anywhere, of every
 * truncation, of another key and of another kind of statefile; metric
 * values continuing (counters add, a changed shape refused); the
 * netstack's neighbor cache refilled in LRU order and its counters
 * continued (net/snapshot.h); the host key file (created 0600, stable,
 * refused when others may read it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "actors/checkpointer.h"
#include "actors/metrics.h"
#include "state/sha256.h"
#include "net/snapshot.h"
#include "state/codec.h"
#include "state/statefile.h"
#include "supstate_types.h"

static const uint8_t KEY[32] = "0123456789abcdef0123456789abcde";

struct fixture {
	struct sst_root st;
	struct sst_metric metrics[2];
	uint64_t v0[4], v1[1];
	struct sst_neigh neigh[3];
	struct sst_flow flows[1];
	struct sst_fwd fwd[1];
	struct sst_volume vol[1];
};

static void fill(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->v0[0] = 1;
	f->v0[1] = 0;
	f->v0[2] = 1u << 20;
	f->v0[3] = 7;
	f->v1[0] = 42;
	f->metrics[0] = (struct sst_metric){"ursa_supervisor_control_requests_total", f->v0, 4};
	f->metrics[1] = (struct sst_metric){"ursa_supervisor_signals_forwarded_total", f->v1, 1};
	for (int i = 0; i < 3; i++) {
		f->neigh[i].family = i == 2 ? AF_INET6 : AF_INET;
		f->neigh[i].addr[0] = 10;
		f->neigh[i].addr[3] = (uint8_t) (i + 2);
		f->neigh[i].mac[5] = (uint8_t) (0x10 + i);
	}
	f->flows[0] = (struct sst_flow){.proto = 6,
					.family = AF_INET,
					.lport = 8080,
					.rport = 443,
					.established = true,
					.idle_ms = 12};
	f->fwd[0] = (struct sst_fwd){.proto = 6, .sandbox_port = 80, .hostlen = 16};
	f->vol[0] = (struct sst_volume){.destination = "/data", .rdonly = true};
	static char cfg[] = "{\"ociVersion\":\"1.0.2\"}";
	f->st = (struct sst_root){
		.version = URS_SUPSTATE_VERSION,
		.saved_ns = 123456789,
		.config = {.id = "box",
			   .bundle = "/b",
			   .config_json = (uint8_t *) cfg,
			   .config_json_len = sizeof(cfg) - 1,
			   .net_mode = 1,
			   .fwds = f->fwd,
			   .fwds_len = 1},
		.metrics = f->metrics,
		.metrics_len = 2,
		.net = {.present = true,
			.stats = {.rx_frames = 100, .tx_bytes = 5000, .arp = 3},
			.neighbors = f->neigh,
			.neighbors_len = 3,
			.flows = f->flows,
			.flows_len = 1},
		.volumes = f->vol,
		.volumes_len = 1,
	};
}

static void seal(const struct sst_root *st, const uint8_t *key, uint8_t **buf, size_t *len)
{
	struct urs_err err = {{0}};
	assert_int_equal(urs_supstate_seal(st, key, 32, buf, len, &err), 0);
	assert_true(*len > 64);
}

static void test_round_trip(void **state)
{
	(void) state;
	struct fixture f;
	fill(&f);
	uint8_t *buf;
	size_t len;
	seal(&f.st, KEY, &buf, &len);
	struct urs_supstate s;
	struct urs_err err = {{0}};
	assert_int_equal(urs_supstate_open(buf, len, KEY, 32, &s, &err), 0);
	const struct sst_root *r = s.root;
	assert_int_equal(r->version, URS_SUPSTATE_VERSION);
	assert_int_equal(r->saved_ns, 123456789);
	assert_string_equal(r->config.id, "box");
	assert_string_equal(r->config.bundle, "/b");
	assert_int_equal(r->config.config_json_len, f.st.config.config_json_len);
	assert_memory_equal(r->config.config_json, f.st.config.config_json,
			    f.st.config.config_json_len);
	assert_int_equal(r->config.net_mode, 1);
	assert_int_equal(r->config.fwds_len, 1);
	assert_int_equal(r->config.fwds[0].sandbox_port, 80);
	assert_int_equal(r->metrics_len, 2);
	assert_string_equal(r->metrics[0].name, f.metrics[0].name);
	assert_int_equal(r->metrics[0].vals_len, 4);
	assert_memory_equal(r->metrics[0].vals, f.v0, sizeof(f.v0));
	assert_int_equal(r->metrics[1].vals[0], 42);
	assert_true(r->net.present);
	assert_int_equal(r->net.stats.rx_frames, 100);
	assert_int_equal(r->net.stats.tx_bytes, 5000);
	assert_int_equal(r->net.stats.arp, 3);
	assert_int_equal(r->net.neighbors_len, 3);
	assert_memory_equal(r->net.neighbors, f.neigh, sizeof(f.neigh));
	assert_int_equal(r->net.flows_len, 1);
	assert_int_equal(r->net.flows[0].lport, 8080);
	assert_true(r->net.flows[0].established);
	assert_int_equal(r->volumes_len, 1);
	assert_string_equal(r->volumes[0].destination, "/data");
	assert_true(r->volumes[0].rdonly);
	urs_supstate_free(&s);
	free(buf);
}

static void test_tamper(void **state)
{
	(void) state;
	struct fixture f;
	fill(&f);
	uint8_t *buf;
	size_t len;
	seal(&f.st, KEY, &buf, &len);
	/* a flipped bit anywhere: header, metadata, MACs, payload, trailer */
	for (size_t i = 0; i < len; i += (i < 128 || i > len - 128) ? 1 : 7) {
		buf[i] ^= 0x04;
		struct urs_supstate s;
		struct urs_err err = {{0}};
		int r = urs_supstate_open(buf, len, KEY, 32, &s, &err);
		if (r == 0)
			fail_msg("flipped byte %zu accepted", i);
		assert_true(err.msg[0]);
		buf[i] ^= 0x04;
	}
	/* every truncation, and bytes appended */
	for (size_t n = 0; n < len; n += n < 96 || n > len - 96 ? 1 : 13) {
		struct urs_supstate s;
		struct urs_err err = {{0}};
		if (urs_supstate_open(buf, n, KEY, 32, &s, &err) == 0)
			fail_msg("truncated to %zu accepted", n);
	}
	uint8_t *ext = malloc(len + 1);
	memcpy(ext, buf, len);
	ext[len] = 0;
	struct urs_supstate s;
	struct urs_err err = {{0}};
	assert_int_not_equal(urs_supstate_open(ext, len + 1, KEY, 32, &s, &err), 0);
	free(ext);
	/* another host's key */
	uint8_t other[32];
	memcpy(other, KEY, 32);
	other[0] ^= 1;
	memset(&err, 0, sizeof(err));
	assert_int_equal(urs_supstate_open(buf, len, other, 32, &s, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "MAC"));
	/* intact, it still opens */
	assert_int_equal(urs_supstate_open(buf, len, KEY, 32, &s, &err), 0);
	urs_supstate_free(&s);
	free(buf);
}

static int msink(void *ctx, const void *p, size_t n)
{
	size_t *o = ctx;
	memcpy((uint8_t *) (o + 1) + *o, p, n);
	*o += n;
	return 0;
}

static void test_foreign_kind(void **state)
{
	(void) state;
	/* a valid statefile under the right key, but another kind of payload */
	size_t *m = calloc(1, 1 << 16);
	struct urs_sf_writer w;
	const struct urs_sf_meta meta[] = {{"kind", "something-else"}, {"version", "1"}};
	assert_int_equal(urs_sf_writer_open(&w, msink, m, KEY, 32, 0, meta, 2), 0);
	assert_int_equal(urs_sf_write(&w, "hello", 5), 0);
	assert_int_equal(urs_sf_writer_close(&w), 0);
	struct urs_supstate s;
	struct urs_err err = {{0}};
	assert_int_equal(urs_supstate_open((uint8_t *) (m + 1), *m, KEY, 32, &s, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "not a supervisor state"));
	/* the right kind, but the payload is not a supstate stream */
	*m = 0;
	const struct urs_sf_meta meta2[] = {{"kind", URS_SUPSTATE_KIND}, {"version", "1"}};
	assert_int_equal(urs_sf_writer_open(&w, msink, m, KEY, 32, 0, meta2, 2), 0);
	assert_int_equal(urs_sf_write(&w, "hello", 5), 0);
	assert_int_equal(urs_sf_writer_close(&w), 0);
	memset(&err, 0, sizeof(err));
	assert_true(urs_supstate_open((uint8_t *) (m + 1), *m, KEY, 32, &s, &err) < 0);
	assert_non_null(strstr(err.msg, "decoding"));
	free(m);
}

static uint64_t scrape(const char *series)
{
	static char buf[1 << 16];
	int n = urs_sup_metrics_render("t", NULL, NULL, NULL, buf, sizeof(buf));
	assert_true(n > 0);
	const char *p = strstr(buf, series);
	assert_non_null(p);
	return strtoull(p + strlen(series), NULL, 10);
}

struct collect {
	struct sst_metric m[32];
	uint32_t n;
};

static int collect_cb(void *ctx, const char *name, const uint64_t *vals, uint32_t n)
{
	struct collect *c = ctx;
	assert_true(c->n < 32);
	struct sst_metric *m = &c->m[c->n++];
	m->name = strdup(name);
	m->vals = malloc(n * sizeof(*vals) + 1);
	memcpy(m->vals, vals, n * sizeof(*vals));
	m->vals_len = n;
	return 0;
}

static void test_metrics_continue(void **state)
{
	(void) state;
	assert_int_equal(urs_sup_metrics_init(), 0);
	urs_metric_add(&urs_m_signals, 0, 3);
	urs_metric_add(&urs_m_ctl_requests, URS_REQ_METRICS, 2);
	/* save what this "supervisor" has, as the checkpointer does */
	struct fixture f;
	fill(&f);
	uint64_t sig = 40, req[URS_REQ__N] = {0};
	req[URS_REQ_METRICS] = 1000;
	struct sst_metric ms[] = {
		{"ursa_supervisor_signals_forwarded_total", &sig, 1},
		{"ursa_supervisor_control_requests_total", req, URS_REQ__N},
		{"ursa_no_such_metric_total", &sig, 1},
	};
	f.st.metrics = ms;
	f.st.metrics_len = 3;
	uint8_t *buf;
	size_t len;
	seal(&f.st, KEY, &buf, &len);
	struct urs_supstate s;
	struct urs_err err = {{0}};
	assert_int_equal(urs_supstate_open(buf, len, KEY, 32, &s, &err), 0);
	assert_int_equal(urs_supstate_apply_metrics(&s, &err), 0);
	assert_int_equal(scrape("ursa_supervisor_signals_forwarded_total{sandbox=\"t\"} "), 43);
	assert_int_equal(scrape("ursa_supervisor_control_requests_total{sandbox=\"t\",request="
				"\"metrics\"} "),
			 1002);
	urs_supstate_free(&s);
	free(buf);
	/* another shape (a label value more or less): refused, nothing added */
	ms[1].vals_len = URS_REQ__N - 1;
	f.st.metrics_len = 2;
	seal(&f.st, KEY, &buf, &len);
	assert_int_equal(urs_supstate_open(buf, len, KEY, 32, &s, &err), 0);
	assert_int_equal(urs_supstate_apply_metrics(&s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "control_requests"));
	urs_supstate_free(&s);
	free(buf);
	/* urs_sup_metrics_save -> load: every saved metric loads back, so
	 * applying the supervisor's own values doubles its counters */
	struct collect c = {0};
	assert_int_equal(urs_sup_metrics_save(NULL, NULL, collect_cb, &c), 0);
	assert_true(c.n >= 4);
	f.st.metrics = c.m;
	f.st.metrics_len = c.n;
	seal(&f.st, KEY, &buf, &len);
	assert_int_equal(urs_supstate_open(buf, len, KEY, 32, &s, &err), 0);
	assert_int_equal(urs_supstate_apply_metrics(&s, &err), 0);
	assert_int_equal(scrape("ursa_supervisor_signals_forwarded_total{sandbox=\"t\"} "), 86);
	urs_supstate_free(&s);
	free(buf);
	for (uint32_t i = 0; i < c.n; i++) {
		free(c.m[i].name);
		free(c.m[i].vals);
	}
}

static int tx_none(void *ctx, const struct iovec *iov, int iovcnt)
{
	(void) ctx;
	(void) iov;
	(void) iovcnt;
	return 0;
}

struct seen {
	struct urs_net_neigh_info e[8];
	int n;
};

static int see(void *ctx, const struct urs_net_neigh_info *e)
{
	struct seen *s = ctx;
	if (s->n < 8)
		s->e[s->n++] = *e;
	return 0;
}

static void test_net_apply(void **state)
{
	(void) state;
	struct urs_loop loop;
	assert_int_equal(urs_loop_init(&loop, NULL), 0);
	struct urs_net_cfg cfg;
	urs_net_cfg_default(&cfg);
	struct urs_net *net;
	assert_int_equal(urs_net_init(&net, &loop, &cfg, tx_none, NULL), 0);
	struct fixture f;
	fill(&f);
	uint8_t *buf;
	size_t len;
	seal(&f.st, KEY, &buf, &len);
	struct urs_supstate s;
	struct urs_err err = {{0}};
	assert_int_equal(urs_supstate_open(buf, len, KEY, 32, &s, &err), 0);
	assert_int_equal(urs_supstate_apply_net(&s, net, &err), 0);
	const struct urs_net_stats *st = urs_net_stats(net);
	assert_int_equal(st->rx_frames, 100);
	assert_int_equal(st->tx_bytes, 5000);
	assert_int_equal(st->neigh_entries, 3);
	/* exported least recent first: the order they were saved in */
	struct seen seen = {0};
	assert_int_equal(urs_net_neigh_each(net, see, &seen), 0);
	assert_int_equal(seen.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(seen.e[i].family, f.neigh[i].family);
		assert_memory_equal(&seen.e[i].addr, f.neigh[i].addr, 16);
		assert_memory_equal(seen.e[i].mac, f.neigh[i].mac, 6);
	}
	/* applied twice: counters add up (a second generation) */
	assert_int_equal(urs_supstate_apply_net(&s, net, &err), 0);
	assert_int_equal(urs_net_stats(net)->rx_frames, 200);
	urs_supstate_free(&s);
	free(buf);
	urs_net_fini(net);
	while (urs_loop_run_once(&loop, false) > 0)
		;
	urs_loop_fini(&loop);
}

static void test_key_file(void **state)
{
	(void) state;
	char dir[] = "/tmp/ursa-supstate-key.XXXXXX";
	assert_non_null(mkdtemp(dir));
	uint8_t k1[32], k2[32];
	struct urs_err err = {{0}};
	char sub[256], path[256];
	snprintf(sub, sizeof(sub), "%s/lib", dir); /* made, 0700, at the first use */
	snprintf(path, sizeof(path), "%s/checkpoint.key", sub);
	assert_int_equal(urs_ckpt_key(path, false, k1, &err), -ENOKEY);
	assert_non_null(strstr(err.msg, "no checkpoint key"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(urs_ckpt_key(path, true, k1, &err), 0);
	assert_int_equal(urs_ckpt_key(path, false, k2, &err), 0);
	assert_memory_equal(k1, k2, 32);
	struct stat sb;
	assert_int_equal(stat(sub, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(sb.st_size, 32);
	/* the host's key: $URSA_CKPT_KEY names it (restore --key-file) */
	setenv("URSA_CKPT_KEY", path, 1);
	memset(k2, 0, sizeof(k2));
	assert_int_equal(urs_ckpt_key(NULL, false, k2, &err), 0);
	assert_memory_equal(k1, k2, 32);
	unsetenv("URSA_CKPT_KEY");
	char where[256];
	assert_int_equal(ckpt_key_path(where, sizeof(where)), 0);
	assert_string_equal(where, CKPT_KEY_PATH);
	chmod(path, 0644);
	memset(&err, 0, sizeof(err));
	assert_int_equal(urs_ckpt_key(path, true, k2, &err), -EPERM);
	unlink(path);
	rmdir(sub);
	rmdir(dir);
}

/* the statefile's MAC (state/sha256.c) against OpenSSL's */
static void test_hmac_vs_openssl(void **state)
{
	(void) state;
	uint8_t a[32], b[32];
	struct urs_sha256 s;
	urs_sha256_init(&s);
	urs_sha256_update(&s, "abc", 3);
	urs_sha256_final(&s, a);
	static const uint8_t abc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
					0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
					0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
					0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
	assert_memory_equal(a, abc, 32);
	uint8_t data[700], key[140];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t) (i * 131 + 7);
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t) (i * 17 + 3);
	for (size_t kl = 0; kl <= sizeof(key); kl += kl < 70 ? 1 : 23)
		for (size_t n = 0; n <= sizeof(data); n += n < 130 ? 1 : 37) {
			struct urs_hmac_sha256 h;
			urs_hmac_sha256_init(&h, key, kl);
			/* in two pieces, to cross the block buffer */
			urs_hmac_sha256_update(&h, data, n / 3);
			urs_hmac_sha256_update(&h, data + n / 3, n - n / 3);
			urs_hmac_sha256_final(&h, a);
			unsigned bl = 0;
			assert_non_null(HMAC(EVP_sha256(), key, (int) kl, data, n, b, &bl));
			assert_int_equal(bl, 32);
			if (memcmp(a, b, 32))
				fail_msg("HMAC differs: key %zu bytes, data %zu bytes", kl, n);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),	cmocka_unit_test(test_tamper),
		cmocka_unit_test(test_foreign_kind),	cmocka_unit_test(test_metrics_continue),
		cmocka_unit_test(test_net_apply),	cmocka_unit_test(test_key_file),
		cmocka_unit_test(test_hmac_vs_openssl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
