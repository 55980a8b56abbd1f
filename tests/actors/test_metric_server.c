/*
 * tests/actors/test_metric_server.c — the metric server's pure parts: judging
 * request heads (incomplete, each 4xx/5xx, the size cap) and merging
 * sandboxes' expositions (one HELP/TYPE per family, samples of every
 * sandbox under it, replies that are not what a supervisor writes rejected
 * whole, type conflicts, reserved names). The I/O side is exercised by
 * tests/integration/metric_server.sh.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "actors/metric_server.h"

static int judge(const char *s)
{
	return urs_ms_http_judge(s, strlen(s), 8192);
}

static void test_judge(void **state)
{
	(void) state;
	assert_int_equal(judge("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"), 200);
	assert_int_equal(judge("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n"), 200);
	assert_int_equal(judge("GET http://h:1/metrics HTTP/1.1\r\nHost: h\r\n\r\n"), 200);
	assert_int_equal(judge("GET /metrics HTTP/1.0\r\n\r\n"), 200);
	/* incomplete: wait for more */
	assert_int_equal(judge(""), 0);
	assert_int_equal(judge("GET /metrics HTTP/1.1\r\nHost: a\r\n"), 0);
	assert_int_equal(judge("GET /metrics HTTP/1.1\r"), 0);
	/* malformed */
	assert_int_equal(judge("garbage\r\n\r\n"), 400);
	assert_int_equal(judge("GET /metrics HTTP/1.1\nHost: a\n\n"), 400);
	assert_int_equal(judge("GET /metrics HTTP/1.1\rX"), 400);
	assert_int_equal(judge("GET  /metrics HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
	assert_int_equal(judge("GET /metrics HTTP/1.1\r\n\r\n"), 400); /* no Host */
	assert_int_equal(judge("GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
	assert_int_equal(judge("GET /metrics HTTP/1.1\r\nHost : a\r\n\r\n"), 400);
	assert_int_equal(judge("GET /metrics HTTP/1.1\r\nHost: a\r\n x\r\n\r\n"), 400);
	assert_int_equal(judge("GET /metrics HTTP/1.1\r\nHost: a\x01\r\n\r\n"), 400);
	assert_int_equal(judge("GET /metrics HTTP/1.1 \r\nHost: a\r\n\r\n"), 400);
	assert_int_equal(judge("\r\n\r\n"), 400);
	/* method, target, version */
	assert_int_equal(judge("POST /metrics HTTP/1.1\r\nHost: a\r\n\r\n"), 405);
	assert_int_equal(judge("get /metrics HTTP/1.1\r\nHost: a\r\n\r\n"), 405);
	assert_int_equal(judge("GET /metric HTTP/1.1\r\nHost: a\r\n\r\n"), 404);
	assert_int_equal(judge("GET /metricsx HTTP/1.1\r\nHost: a\r\n\r\n"), 404);
	assert_int_equal(judge("GET * HTTP/1.1\r\nHost: a\r\n\r\n"), 404);
	assert_int_equal(judge("GET /metrics HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
	/* the cap: a head that has not ended within it */
	char big[100];
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	assert_int_equal(urs_ms_http_judge(big, 64, 64), 431);
	assert_int_equal(urs_ms_http_judge(big, 63, 64), 0);
}

static const char s1[] = "# HELP ursa_a_total A.\n# TYPE ursa_a_total counter\n"
			 "ursa_a_total{sandbox=\"s1\",request=\"x\"} 1\n"
			 "ursa_a_total{sandbox=\"s1\",request=\"y\"} 2\n"
			 "# HELP ursa_h H.\n# TYPE ursa_h histogram\n"
			 "ursa_h_bucket{sandbox=\"s1\",le=\"1\"} 0\n"
			 "ursa_h_bucket{sandbox=\"s1\",le=\"+Inf\"} 3\n"
			 "ursa_h_count{sandbox=\"s1\"} 3\nursa_h_sum{sandbox=\"s1\"} 9\n";
static const char s2[] = "# HELP ursa_a_total A.\n# TYPE ursa_a_total counter\n"
			 "ursa_a_total{sandbox=\"s2\",request=\"x\"} 5\n"
			 "# HELP ursa_g G.\n# TYPE ursa_g gauge\nursa_g{sandbox=\"s2\"} 7\n";

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_merge(void **state)
{
	(void) state;
	struct urs_ms_part parts[] = {
		{.id = "s1", .text = s1, .len = sizeof(s1) - 1},
		{.id = "gone"}, /* failed query: no text */
		{.id = "s2", .text = s2, .len = sizeof(s2) - 1},
	};
	struct urs_ms_buf b = {0};
	assert_int_equal(urs_ms_merge(parts, 3, &b), 2);
	const char *want = "# HELP ursa_a_total A.\n# TYPE ursa_a_total counter\n"
			   "ursa_a_total{sandbox=\"s1\",request=\"x\"} 1\n"
			   "ursa_a_total{sandbox=\"s1\",request=\"y\"} 2\n"
			   "ursa_a_total{sandbox=\"s2\",request=\"x\"} 5\n"
			   "# HELP ursa_h H.\n# TYPE ursa_h histogram\n"
			   "ursa_h_bucket{sandbox=\"s1\",le=\"1\"} 0\n"
			   "ursa_h_bucket{sandbox=\"s1\",le=\"+Inf\"} 3\n"
			   "ursa_h_count{sandbox=\"s1\"} 3\nursa_h_sum{sandbox=\"s1\"} 9\n"
			   "# HELP ursa_g G.\n# TYPE ursa_g gauge\nursa_g{sandbox=\"s2\"} 7\n";
	assert_string_equal(b.p, want);
	assert_null(parts[0].reason);
	assert_null(parts[2].reason);
	free(b.p);
}

/* Each of these replies is rejected whole, the others still merged. */
static void test_merge_rejects(void **state)
{
	(void) state;
	static const char *const bad[] = {
		/* another sandbox's label */
		"# TYPE ursa_g gauge\nursa_g{sandbox=\"s1\"} 1\n",
		/* no sandbox label */
		"# TYPE ursa_g gauge\nursa_g 1\n",
		/* sample before any TYPE */
		"ursa_g{sandbox=\"bad\"} 1\n",
		/* a sample of another family under this TYPE */
		"# TYPE ursa_g gauge\nursa_other{sandbox=\"bad\"} 1\n",
		/* _bucket under a counter */
		"# TYPE ursa_c counter\nursa_c_bucket{sandbox=\"bad\"} 1\n",
		/* a family twice */
		"# TYPE ursa_g gauge\nursa_g{sandbox=\"bad\"} 1\n# TYPE ursa_x gauge\n"
		"# TYPE ursa_g gauge\n",
		/* type conflicts with s1's counter */
		"# TYPE ursa_a_total gauge\nursa_a_total{sandbox=\"bad\"} 1\n",
		/* a name this server owns */
		"# TYPE ursa_sandbox_up gauge\nursa_sandbox_up{sandbox=\"bad\"} 1\n",
		/* no final newline, stray comment, blank line, bad value, bad type */
		"# TYPE ursa_g gauge\nursa_g{sandbox=\"bad\"} 1",
		"# TYPE ursa_g gauge\n# hello\nursa_g{sandbox=\"bad\"} 1\n",
		"# TYPE ursa_g gauge\n\nursa_g{sandbox=\"bad\"} 1\n",
		"# TYPE ursa_g gauge\nursa_g{sandbox=\"bad\"} 1 2 3\n",
		"# TYPE ursa_g gauge\nursa_g{sandbox=\"bad\"}\n",
		"# TYPE ursa_g gaug\nursa_g{sandbox=\"bad\"} 1\n",
		/* label value not closed, injection of a line */
		"# TYPE ursa_g gauge\nursa_g{sandbox=\"bad\",x=\"a} 1\n",
		"# TYPE ursa_g gauge\nursa_g{sandbox=\"bad\",x=\"\\q\"} 1\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct urs_ms_part parts[] = {
			{.id = "s1", .text = s1, .len = sizeof(s1) - 1},
			{.id = "bad", .text = bad[i], .len = strlen(bad[i])},
		};
		struct urs_ms_buf b = {0};
		assert_int_equal(urs_ms_merge(parts, 2, &b), 1);
		assert_non_null(parts[1].reason);
		assert_string_equal(parts[1].reason, "format");
		assert_null(strstr(b.p, "\"bad\""));
		assert_int_equal(count(b.p, "# TYPE "), 2);
		free(b.p);
	}
	/* and an acceptable one with extra labels, escapes and a timestamp */
	static const char good[] =
		"# TYPE ursa_g gauge\n"
		"ursa_g{sandbox=\"ok\",x=\"a\\\"b\\\\c\\n\",} -1.5e3 1700000000000\n";
	struct urs_ms_part p = {.id = "ok", .text = good, .len = sizeof(good) - 1};
	struct urs_ms_buf b = {0};
	assert_int_equal(urs_ms_merge(&p, 1, &b), 1);
	assert_null(p.reason);
	assert_string_equal(b.p, good);
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judge),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
