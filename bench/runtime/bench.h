/*
 * bench/runtime/bench.h — what every runtime benchmark program shares: a
 * clock, allocation counters and the Go-benchmark-style output line, so that
 * the ursa and libuv programs measure and print the same way and their lines
 * can be compared by bench/runtime/run (or benchstat).
 *
 * Allocation counting: the bench executables are linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,
 * --wrap=posix_memalign,--wrap=aligned_alloc, so every call made from
 * statically linked code (the bench program itself and libursa.a) goes
 * through bench_common.c and is counted. Shared libraries are not affected by
 * --wrap: libuv's allocations are routed through the same counters with
 * uv_replace_allocator(bench_malloc, ...); liburing allocates only at ring
 * setup (the opcode probe), never on the paths measured here. B/op is the sum
 * of requested sizes (as Go counts it), allocs/op the number of calls;
 * free() is not counted.
 */
#ifndef URSA_BENCH_RUNTIME_BENCH_H
#define URSA_BENCH_RUNTIME_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_allocs {
	uint64_t calls, bytes;
};

struct bench_mark {
	uint64_t wall_ns, cpu_ns;
	struct bench_allocs a;
};

/* Counting allocator entry points, for uv_replace_allocator(). */
void *bench_malloc(size_t n);
void *bench_calloc(size_t nmemb, size_t n);
void *bench_realloc(void *p, size_t n);
void bench_free(void *p);

uint64_t bench_now_ns(void);
/* Snapshot clocks and allocation counters. */
void bench_mark(struct bench_mark *m);

/*
 * Print `Benchmark<name>  N  x ns/op  y B/op  z allocs/op [extra]` for @n
 * operations between @start and now. @extra (may be NULL) is appended as is,
 * e.g. "12.5 cpu-ns/op".
 */
void bench_report(const char *name, uint64_t n, const struct bench_mark *start, const char *extra);

/* Whether benchmark @name was selected on the command line: no argument, an
 * argument that is a substring of @name, or one equal to @name + "$". */
bool bench_selected(int argc, char **argv, const char *name);

/* Resident set size and anonymous PSS of this process, in KiB (-1 on error). */
long bench_rss_kib(void);
long bench_pss_anon_kib(void);

#endif
