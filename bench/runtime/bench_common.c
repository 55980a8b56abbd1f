/*
 * bench/runtime/bench_common.c — the counting allocator wrappers, clocks and
 * output formatting declared in bench.h, shared by the ursa and libuv
 * benchmark programs so both are measured identically.
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The real allocator, reached through the linker's --wrap. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t nmemb, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t nmemb, size_t n);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);

static _Atomic uint64_t alloc_calls, alloc_bytes;

static inline void count(size_t n)
{
	atomic_fetch_add_explicit(&alloc_calls, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&alloc_bytes, n, memory_order_relaxed);
}

void *__wrap_malloc(size_t n)
{
	count(n);
	return __real_malloc(n);
}

void *__wrap_calloc(size_t nmemb, size_t n)
{
	count(nmemb * n);
	return __real_calloc(nmemb, n);
}

void *__wrap_realloc(void *p, size_t n)
{
	count(n);
	return __real_realloc(p, n);
}

void __wrap_free(void *p)
{
	__real_free(p);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
	count(n);
	return __real_posix_memalign(p, align, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
	count(n);
	return __real_aligned_alloc(align, n);
}

void *bench_malloc(size_t n)
{
	return __wrap_malloc(n);
}

void *bench_calloc(size_t nmemb, size_t n)
{
	return __wrap_calloc(nmemb, n);
}

void *bench_realloc(void *p, size_t n)
{
	return __wrap_realloc(p, n);
}

void bench_free(void *p)
{
	__wrap_free(p);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

uint64_t bench_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

void bench_mark(struct bench_mark *m)
{
	m->a.calls = atomic_load_explicit(&alloc_calls, memory_order_relaxed);
	m->a.bytes = atomic_load_explicit(&alloc_bytes, memory_order_relaxed);
	m->cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	m->wall_ns = clock_ns(CLOCK_MONOTONIC);
}

/* Go prints whole numbers; keep a fraction when the value is small but not 0. */
static void fmt_per_op(char *buf, size_t len, double v)
{
	if (v == 0 || v >= 10)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.2f", v);
}

void bench_report(const char *name, uint64_t n, const struct bench_mark *start, const char *extra)
{
	struct bench_mark end;
	bench_mark(&end);
	double d = n ? (double) n : 1;
	char bop[32], aop[32];
	fmt_per_op(bop, sizeof(bop), (double) (end.a.bytes - start->a.bytes) / d);
	fmt_per_op(aop, sizeof(aop), (double) (end.a.calls - start->a.calls) / d);
	printf("Benchmark%-36s %10llu %12.1f ns/op %8s B/op %8s allocs/op %10.1f cpu-ns/op%s%s\n",
	       name, (unsigned long long) n, (double) (end.wall_ns - start->wall_ns) / d, bop, aop,
	       (double) (end.cpu_ns - start->cpu_ns) / d, extra ? " " : "", extra ? extra : "");
	fflush(stdout);
}

bool bench_selected(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++) {
		size_t n = strlen(argv[i]);
		if (n && argv[i][n - 1] == '$') { /* exact name */
			if (strlen(name) == n - 1 && !strncmp(name, argv[i], n - 1))
				return true;
		} else if (strstr(name, argv[i])) {
			return true;
		}
	}
	return false;
}

static long status_field_kib(const char *path, const char *key)
{
	FILE *f = fopen(path, "re");
	char line[256];
	size_t klen = strlen(key);
	long v = -1;
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			sscanf(line + klen + 1, "%ld", &v);
			break;
		}
	}
	if (f)
		fclose(f);
	return v;
}

long bench_rss_kib(void)
{
	return status_field_kib("/proc/self/status", "VmRSS");
}

long bench_pss_anon_kib(void)
{
	return status_field_kib("/proc/self/smaps_rollup", "Pss_Anon");
}
