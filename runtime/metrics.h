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

/* Register @m (before the loop starts): allocates its one array. */
int urs_metric_register(struct urs_metrics *set, struct urs_metric *m);
void urs_metrics_free(struct urs_metrics *set);

/* Cell of a label combination (@idx[i] = index of label i's value); the
 * caller passes indices it got from its own enums, so this is arithmetic. */
static inline uint32_t urs_metric_cell(const struct urs_metric *m, const uint32_t *idx)
{
	uint32_t c = 0;
	for (uint32_t i = 0; i < m->nlabels; i++)
		c = c * m->labels[i].n + idx[i];
	return c;
}

static inline void urs_metric_add(struct urs_metric *m, uint32_t cell, uint64_t v)
{
	atomic_fetch_add_explicit(&m->cells[(size_t) cell * m->stride], v, memory_order_relaxed);
}

static inline void urs_metric_set(struct urs_metric *m, uint32_t cell, uint64_t v)
{
	atomic_store_explicit(&m->cells[(size_t) cell * m->stride], v, memory_order_relaxed);
}

void urs_metric_observe(struct urs_metric *m, uint32_t cell, uint64_t v);

/*
 * Prometheus text format (version 0.0.4) for every metric of @set, each
 * sample carrying @const_labels (e.g. `sandbox="x"`, may be NULL) first.
 * Returns the length written, or -ENOSPC (buffer too small).
 */
int urs_metrics_expose(const struct urs_metrics *set, const char *const_labels, char *buf,
		       size_t len);

#endif
