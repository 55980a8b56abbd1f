/*
 * runtime/metrics.h — allocation-free counters, gauges and histograms, and
 * their Prometheus text exposition.
 *
 * A metric is a caller-owned, usually static, struct: name, help, type, and
 * optional label fields whose allowed values are fixed at registration. Its
 * storage is ONE array allocated at registration, one cell per combination
 * of label values; the cell of a combination is computed arithmetically
 * (mixed radix over the label value indices), so there is no heap object per
 * value and no map (seed 000: gVisor's syscall metric built 2 002 objects and
 * a map at boot, ~260 KiB). Updates are relaxed atomic adds on that array:
 * no allocation, no lock, safe from any thread.
 *
 * Histograms have exponential buckets: bucket i counts observations
 * <= first << i (factor 2), plus +Inf, a count and a sum per cell.
 */
#ifndef URSA_RUNTIME_METRICS_H
#define URSA_RUNTIME_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum urs_metric_type { URS_METRIC_COUNTER, URS_METRIC_GAUGE, URS_METRIC_HISTOGRAM };

struct urs_metric_label {
	const char *name;
	const char *const *values; /* allowed values */
	uint32_t n;
};

#define URS_METRIC_MAX_LABELS 4
#define URS_HIST_MAX_BUCKETS  32

struct urs_metric {
	const char *name; /* "ursa_..." */
	const char *help;
	enum urs_metric_type type;
	const struct urs_metric_label *labels;
	uint32_t nlabels;
	uint64_t hist_first; /* histogram: upper bound of bucket 0 */
	uint32_t hist_buckets;
	/* filled by registration */
	uint32_t ncells;
	uint32_t stride; /* uint64 slots per cell */
	_Atomic uint64_t *cells;
	struct urs_metric *next;
};

struct urs_metrics {
	struct urs_metric *head, *tail;
	uint32_t count;
};

/**
 * urs_metric_register() - add @m to @set and allocate its one array
 * @set: the set it is exposed with
 * @m: the metric, caller-owned (usually static); name, help, type, labels
 *     and histogram bounds filled in
 *
 * Before the loop starts (the set is not locked): the only allocation a
 * metric ever makes, zeroed, one cell per label combination.
 *
 * Return: 0; -EINVAL (no name or help, more than URS_METRIC_MAX_LABELS
 * labels, a label without values, a histogram without bounds or with more
 * than URS_HIST_MAX_BUCKETS buckets); -E2BIG (over 2^20 cells); -ENOMEM.
 */
int urs_metric_register(struct urs_metrics *set, struct urs_metric *m);

/**
 * urs_metrics_free() - free every registered metric's array and empty @set
 * @set: the set; its metrics (caller-owned) may be registered again
 */
void urs_metrics_free(struct urs_metrics *set);

/**
 * urs_metric_cell() - cell of a label combination
 * @m: a registered metric
 * @idx: @idx[i] = index of label i's value, one per label
 *
 * The caller passes indices it got from its own enums, so this is
 * arithmetic (mixed radix); nothing is checked.
 *
 * Return: the cell, for urs_metric_add() and friends.
 */
static inline uint32_t urs_metric_cell(const struct urs_metric *m, const uint32_t *idx)
{
	uint32_t c = 0;
	for (uint32_t i = 0; i < m->nlabels; i++)
		c = c * m->labels[i].n + idx[i];
	return c;
}

/**
 * urs_metric_add() - add @v to a counter's or gauge's cell
 * @m: a registered counter or gauge
 * @cell: from urs_metric_cell() (0 without labels)
 * @v: the amount
 *
 * A relaxed atomic add: any thread, no lock, no allocation.
 */
static inline void urs_metric_add(struct urs_metric *m, uint32_t cell, uint64_t v)
{
	atomic_fetch_add_explicit(&m->cells[(size_t) cell * m->stride], v, memory_order_relaxed);
}

/**
 * urs_metric_set() - set a gauge's cell to @v
 * @m: a registered gauge
 * @cell: from urs_metric_cell() (0 without labels)
 * @v: the value
 *
 * A relaxed atomic store: any thread, no lock, no allocation.
 */
static inline void urs_metric_set(struct urs_metric *m, uint32_t cell, uint64_t v)
{
	atomic_store_explicit(&m->cells[(size_t) cell * m->stride], v, memory_order_relaxed);
}

/**
 * urs_metric_observe() - count one observation in a histogram's cell
 * @m: a registered histogram
 * @cell: from urs_metric_cell() (0 without labels)
 * @v: the observed value
 *
 * Into the first bucket whose bound (hist_first << i) is >= @v, else +Inf;
 * plus the cell's count and sum. Relaxed atomic adds: any thread, no
 * allocation.
 */
void urs_metric_observe(struct urs_metric *m, uint32_t cell, uint64_t v);

/**
 * urs_metrics_expose() - Prometheus text format (version 0.0.4) for @set
 * @set: the metrics, in registration order
 * @const_labels: put first in every sample (e.g. `sandbox="x"`), or NULL
 * @buf: the output, NUL-terminated
 * @len: its size
 *
 * Reads the cells with relaxed loads (any thread); histogram buckets are
 * made cumulative here. Allocates nothing.
 *
 * Return: the length written, or -ENOSPC (buffer too small; its contents
 * are then cut short).
 */
int urs_metrics_expose(const struct urs_metrics *set, const char *const_labels, char *buf,
		       size_t len);

#endif
