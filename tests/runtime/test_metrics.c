/*
 * tests/runtime/test_metrics.c — metrics: arithmetic label cells, counters,
 * gauges and exponential histograms, the exact Prometheus text, -ENOSPC,
 * and concurrent increments from several threads (no lost updates).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "runtime/metrics.h"

static const char *const dirs[] = {"rx", "tx"};
static const char *const kinds[] = {"a", "b", "c"};
static const struct urs_metric_label lbl[] = {{"dir", dirs, 2}, {"kind", kinds, 3}};

static void test_counter_labels(void **state)
{
	(void) state;
	struct urs_metrics set = {0};
	struct urs_metric frames = {.name = "ursa_frames_total",
				    .help = "Frames.",
				    .type = URS_METRIC_COUNTER,
				    .labels = lbl,
				    .nlabels = 2};
	struct urs_metric up = {.name = "ursa_up", .help = "Up.", .type = URS_METRIC_GAUGE};
	assert_int_equal(urs_metric_register(&set, &frames), 0);
	assert_int_equal(urs_metric_register(&set, &up), 0);
	assert_int_equal(frames.ncells, 6);
	uint32_t tx_c[] = {1, 2};
	assert_int_equal(urs_metric_cell(&frames, tx_c), 5);
	urs_metric_add(&frames, urs_metric_cell(&frames, tx_c), 7);
	urs_metric_add(&frames, 0, 1);
	urs_metric_set(&up, 0, 1);
	char buf[2048];
	int n = urs_metrics_expose(&set, "sandbox=\"s1\"", buf, sizeof(buf));
	assert_true(n > 0);
	assert_non_null(strstr(
		buf, "# HELP ursa_frames_total Frames.\n# TYPE ursa_frames_total counter\n"));
	assert_non_null(strstr(buf, "ursa_frames_total{sandbox=\"s1\",dir=\"tx\",kind=\"c\"} 7\n"));
	assert_non_null(strstr(buf, "ursa_frames_total{sandbox=\"s1\",dir=\"rx\",kind=\"a\"} 1\n"));
	assert_non_null(strstr(buf, "ursa_frames_total{sandbox=\"s1\",dir=\"rx\",kind=\"b\"} 0\n"));
	assert_non_null(strstr(buf, "ursa_up{sandbox=\"s1\"} 1\n"));
	/* no labels at all: no braces */
	n = urs_metrics_expose(&set, NULL, buf, sizeof(buf));
	assert_non_null(strstr(buf, "\nursa_up 1\n"));
	assert_int_equal(urs_metrics_expose(&set, NULL, buf, 40), -ENOSPC);
	urs_metrics_free(&set);
}

static void test_histogram(void **state)
{
	(void) state;
	struct urs_metrics set = {0};
	struct urs_metric h = {.name = "ursa_lat_ns",
			       .help = "Latency.",
			       .type = URS_METRIC_HISTOGRAM,
			       .hist_first = 100,
			       .hist_buckets = 4};
	assert_int_equal(urs_metric_register(&set, &h), 0);
	urs_metric_observe(&h, 0, 50);	 /* <= 100 */
	urs_metric_observe(&h, 0, 100);	 /* <= 100 */
	urs_metric_observe(&h, 0, 150);	 /* <= 200 */
	urs_metric_observe(&h, 0, 800);	 /* <= 800 */
	urs_metric_observe(&h, 0, 5000); /* +Inf */
	char buf[2048];
	assert_true(urs_metrics_expose(&set, NULL, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "ursa_lat_ns_bucket{le=\"100\"} 2\n"));
	assert_non_null(strstr(buf, "ursa_lat_ns_bucket{le=\"200\"} 3\n"));
	assert_non_null(strstr(buf, "ursa_lat_ns_bucket{le=\"400\"} 3\n"));
	assert_non_null(strstr(buf, "ursa_lat_ns_bucket{le=\"800\"} 4\n"));
	assert_non_null(strstr(buf, "ursa_lat_ns_bucket{le=\"+Inf\"} 5\n"));
	assert_non_null(strstr(buf, "ursa_lat_ns_count 5\n"));
	assert_non_null(strstr(buf, "ursa_lat_ns_sum 6100\n"));
	struct urs_metric bad = {.name = "x", .help = "y", .type = URS_METRIC_HISTOGRAM};
	assert_int_equal(urs_metric_register(&set, &bad), -EINVAL);
	urs_metrics_free(&set);
}

static struct urs_metric shared = {
	.name = "ursa_shared_total", .help = "Shared.", .type = URS_METRIC_COUNTER};

static void *adder(void *arg)
{
	(void) arg;
	for (int i = 0; i < 100000; i++)
		urs_metric_add(&shared, 0, 1);
	return NULL;
}

static void test_concurrent(void **state)
{
	(void) state;
	struct urs_metrics set = {0};
	assert_int_equal(urs_metric_register(&set, &shared), 0);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, adder, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&shared.cells[0]), 400000);
	urs_metrics_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_labels),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
