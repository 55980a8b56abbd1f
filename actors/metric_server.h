/*
 * actors/metric_server.h — `ursa metric-server`: one HTTP endpoint,
 * GET /metrics, that scrapes every sandbox under a state root.
 *
 * Single-threaded, on one runtime loop: io_uring multishot accept, recv and
 * sendmsg per client, and per sandbox an asynchronous connect/send/recv on
 * its supervisor's control socket (ROOT/ID/ctl.sock, request "metrics").
 * Everything a client or a sandbox can hold is bounded: request bytes,
 * header time, total time per client, clients at once, sandbox queries at
 * once and the time each may take. A sandbox that is gone, refuses, hangs
 * or answers garbage is skipped (ursa_sandbox_up 0, a comment line, and
 * ursa_scrape_errors_total{reason}); it never holds up the others.
 *
 * Clients that ask while a scrape runs share its result (one scrape in
 * flight at a time), so N scrapers cost one pass over the sandboxes.
 *
 * The pure parts (request parsing, merging the sandboxes' expositions into
 * one in which every family has its HELP and TYPE once) are exported for
 * tests.
 */
#ifndef URSA_ACTORS_METRIC_SERVER_H
#define URSA_ACTORS_METRIC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/err.h"

struct urs_ms_opts {
	const char *root;	    /* state root: ROOT/ID/ctl.sock */
	const char *listen;	    /* "ADDR:PORT", "[V6]:PORT" or "unix:PATH" */
	uint32_t max_request;	    /* request head bytes (default 8192) */
	uint32_t max_clients;	    /* open client connections (default 64) */
	uint32_t max_parallel;	    /* sandbox queries in flight (default 32) */
	uint64_t header_timeout_ns; /* until the request head is complete (default 5 s) */
	uint64_t client_timeout_ns; /* a client's whole life (default 30 s) */
	uint64_t scrape_timeout_ns; /* one sandbox's answer (default 2 s) */
};

/*
 * Bind, print "listening on ADDR" on stdout (the port actually bound, so
 * PORT 0 works), serve until SIGINT or SIGTERM, then close every client,
 * cancel every query and return 0 (negative errno on setup failure).
 */
int urs_metric_server_run(const struct urs_ms_opts *o, struct urs_err *err);

/*
 * Judge the request head in @buf[0..len) (more bytes may follow): 0 when it
 * is incomplete and @len < @cap, else the HTTP status to answer: 200 for
 * GET /metrics, 400 malformed (bare LF, controls, bad request line, bad
 * header, HTTP/1.1 without Host), 404 other targets, 405 other methods,
 * 431 head longer than @cap, 505 other HTTP versions.
 */
int urs_ms_http_judge(const char *buf, size_t len, size_t cap);

/* One sandbox's reply in a scrape: @text (its exposition) or a @reason. */
struct urs_ms_part {
	const char *id;
	const char *text; /* NULL when the query failed */
	size_t len;
	const char *reason; /* why it failed (set by the merge on bad text) */
};

struct urs_ms_buf {
	char *p;
	size_t len, cap;
};

/*
 * Append the merged exposition of @parts to @out: families in order of first
 * appearance, each with its HELP and TYPE once, then the samples of every
 * sandbox. A reply is taken whole or not at all: it must be families of
 * HELP/TYPE/sample lines whose samples carry sandbox="ID" first and whose
 * types agree with the other sandboxes'; otherwise its reason becomes
 * "format". Returns the number of parts taken, or -ENOMEM.
 */
int urs_ms_merge(struct urs_ms_part *parts, size_t n, struct urs_ms_buf *out);
int urs_ms_buf_put(struct urs_ms_buf *b, const char *s, size_t n);

#endif
