/*
 * cmd/metric_server.c — `ursa metric-server --listen ADDR:PORT|unix:PATH`:
 * serve GET /metrics for every sandbox under --root (the work lives in
 * actors/metric_server.c; this file is flags and their bounds).
 */
#include <stdio.h>
#include <string.h>

#include "actors/metric_server.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"

int cmd_metric_server(int argc, char **argv)
{
	const char *listen = NULL;
	int max_request = 8192, max_clients = 64, max_parallel = 32;
	int header_ms = 5000, client_ms = 30000, scrape_ms = 2000;
	const struct urs_opt opts[] = {
		{"listen", 'l', URS_OPT_STR, &listen, "ADDR:PORT, [V6]:PORT or unix:PATH"},
		{"max-request-bytes", 0, URS_OPT_INT, &max_request, "request head size cap (8192)"},
		{"max-clients", 0, URS_OPT_INT, &max_clients, "open connections at most (64)"},
		{"max-parallel", 0, URS_OPT_INT, &max_parallel, "sandboxes queried at once (32)"},
		{"header-timeout-ms", 0, URS_OPT_INT, &header_ms,
		 "time to send the request head (5000)"},
		{"client-timeout-ms", 0, URS_OPT_INT, &client_ms,
		 "a client's whole connection (30000)"},
		{"scrape-timeout-ms", 0, URS_OPT_INT, &scrape_ms, "one sandbox's answer (2000)"},
		{NULL, 0, 0, NULL, NULL},
	};
	int i = urs_parse("metric-server", "--listen ADDR:PORT|unix:PATH [options]", argc, argv,
			  opts);
	if (i < 0)
		return i == -2 ? 0 : 1;
	if (i < argc) {
		urs_error("metric-server: unexpected argument \"%s\"", argv[i]);
		return 1;
	}
	if (!listen) {
		urs_error("metric-server: --listen ADDR:PORT|unix:PATH is required");
		return 1;
	}
	if (max_request < 64 || max_request > (1 << 20) || max_clients < 1 || max_clients > 65536 ||
	    max_parallel < 1 || max_parallel > 4096 || header_ms < 1 || client_ms < 1 ||
	    scrape_ms < 1) {
		urs_error("metric-server: a limit is out of range (see --help)");
		return 1;
	}
	struct urs_ms_opts o = {
		.root = G.root,
		.listen = listen,
		.max_request = (uint32_t) max_request,
		.max_clients = (uint32_t) max_clients,
		.max_parallel = (uint32_t) max_parallel,
		.header_timeout_ns = (uint64_t) header_ms * 1000000ull,
		.client_timeout_ns = (uint64_t) client_ms * 1000000ull,
		.scrape_timeout_ns = (uint64_t) scrape_ms * 1000000ull,
	};
	struct urs_err err = {{0}};
	if (urs_metric_server_run(&o, &err) < 0) {
		urs_error("%s", err.msg);
		return 1;
	}
	return 0;
}
