/*
 * runtime/metrics.c — see metrics.h.
 */
#include "runtime/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int urs_metric_register(struct urs_metrics *set, struct urs_metric *m)
{
	if (!m->name || !m->help || m->nlabels > URS_METRIC_MAX_LABELS)
		return -EINVAL;
	uint64_t cells = 1;
	for (uint32_t i = 0; i < m->nlabels; i++) {
		if (!m->labels[i].n)
			return -EINVAL;
		cells *= m->labels[i].n;
		if (cells > (1u << 20))
			return -E2BIG;
	}
	if (m->type == URS_METRIC_HISTOGRAM) {
		if (!m->hist_first || !m->hist_buckets || m->hist_buckets > URS_HIST_MAX_BUCKETS)
			return -EINVAL;
		m->stride = m->hist_buckets + 3; /* buckets, +Inf, count, sum */
	} else {
		m->stride = 1;
	}
	m->ncells = (uint32_t) cells;
	m->cells = calloc((size_t) cells * m->stride, sizeof(*m->cells));
	if (!m->cells)
		return -ENOMEM;
	m->next = NULL;
	if (set->tail)
		set->tail->next = m;
	else
		set->head = m;
	set->tail = m;
	set->count++;
	return 0;
}

void urs_metrics_free(struct urs_metrics *set)
{
	for (struct urs_metric *m = set->head; m; m = m->next) {
		free(m->cells);
		m->cells = NULL;
	}
	set->head = set->tail = NULL;
	set->count = 0;
}

void urs_metric_observe(struct urs_metric *m, uint32_t cell, uint64_t v)
{
	_Atomic uint64_t *c = &m->cells[(size_t) cell * m->stride];
	uint32_t b = 0;
	/* smallest i with v <= first << i: count the doublings */
	for (uint64_t bound = m->hist_first; b < m->hist_buckets && v > bound; b++)
		bound <<= 1;
	atomic_fetch_add_explicit(&c[b], 1, memory_order_relaxed); /* b == n: +Inf */
	atomic_fetch_add_explicit(&c[m->hist_buckets + 1], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c[m->hist_buckets + 2], v, memory_order_relaxed);
}

struct out {
	char *buf;
	size_t len, used;
	bool full;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	if (o->full)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t) n >= o->len - o->used)
		o->full = true;
	else
		o->used += (size_t) n;
}

/* One sample line: name[suffix]{const,labels[,le="x"]} value; no braces at
 * all when there is no label. */
static void sample(struct out *o, const struct urs_metric *m, const char *suffix, uint32_t cell,
		   const char *cl, const char *le, uint64_t value)
{
	bool any = m->nlabels || (cl && *cl) || le;
	put(o, "%s%s%s", m->name, suffix, any ? "{" : "");
	uint32_t idx[URS_METRIC_MAX_LABELS];
	for (uint32_t i = m->nlabels; i-- > 0;) {
		idx[i] = cell % m->labels[i].n;
		cell /= m->labels[i].n;
	}
	const char *sep = "";
	if (cl && *cl) {
		put(o, "%s", cl);
		sep = ",";
	}
	for (uint32_t i = 0; i < m->nlabels; i++, sep = ",")
		put(o, "%s%s=\"%s\"", sep, m->labels[i].name, m->labels[i].values[idx[i]]);
	if (le)
		put(o, "%sle=\"%s\"", sep, le);
	put(o, "%s %" PRIu64 "\n", any ? "}" : "", value);
}

static const char *type_name(enum urs_metric_type t)
{
	return t == URS_METRIC_COUNTER ? "counter" : t == URS_METRIC_GAUGE ? "gauge" : "histogram";
}

int urs_metrics_expose(const struct urs_metrics *set, const char *cl, char *buf, size_t len)
{
	struct out o = {.buf = buf, .len = len};
	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	for (const struct urs_metric *m = set->head; m; m = m->next) {
		put(&o, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
		    type_name(m->type));
		for (uint32_t c = 0; c < m->ncells; c++) {
			const _Atomic uint64_t *v = &m->cells[(size_t) c * m->stride];
			if (m->type != URS_METRIC_HISTOGRAM) {
				sample(&o, m, "", c, cl, NULL,
				       atomic_load_explicit(v, memory_order_relaxed));
				continue;
			}
			uint64_t cum = 0, bound = m->hist_first;
			for (uint32_t b = 0; b <= m->hist_buckets; b++, bound <<= 1) {
				char le[24];
				cum += atomic_load_explicit(&v[b], memory_order_relaxed);
				if (b < m->hist_buckets)
					snprintf(le, sizeof(le), "%" PRIu64, bound);
				else
					snprintf(le, sizeof(le), "+Inf");
				sample(&o, m, "_bucket", c, cl, le, cum);
			}
			sample(&o, m, "_count", c, cl, NULL,
			       atomic_load_explicit(&v[m->hist_buckets + 1], memory_order_relaxed));
			sample(&o, m, "_sum", c, cl, NULL,
			       atomic_load_explicit(&v[m->hist_buckets + 2], memory_order_relaxed));
		}
	}
	return o.full ? -ENOSPC : (int) o.used;
}
