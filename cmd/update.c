/*
 * cmd/update.c — `ursa update [--resources FILE|-] [--memory N] [--pids-limit N]
 * [--cpu-quota N] [--cpu-period N] [--cpu-shares N] [--cpuset-cpus S] ID`:
 * change a container's cgroup limits. The resources JSON (an OCI
 * linux.resources object, what containerd's shim sends on stdin) is
 * validated by the config.json parser; flags override it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/supervisor.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/cgroup.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (cap - n < 2) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	if (f != stdin)
		fclose(f);
	if (buf)
		buf[n] = 0;
	*len = n;
	return buf;
}

int cmd_update(int argc, char **argv)
{
	const char *resources = NULL, *memory = NULL, *cpus = NULL, *mems = NULL;
	int pids = 0, quota = 0, period = 0, shares = 0;
	const struct urs_opt opts[] = {
		{"resources", 'r', URS_OPT_STR, &resources,
		 "linux.resources JSON file, - for stdin"},
		{"memory", 'm', URS_OPT_STR, &memory, "memory limit in bytes"},
		{"pids-limit", 0, URS_OPT_INT, &pids, "maximum number of pids"},
		{"cpu-quota", 0, URS_OPT_INT, &quota, "CFS quota in microseconds"},
		{"cpu-period", 0, URS_OPT_INT, &period, "CFS period in microseconds"},
		{"cpu-shares", 0, URS_OPT_INT, &shares, "CPU shares"},
		{"cpuset-cpus", 0, URS_OPT_STR, &cpus, "CPUs allowed"},
		{"cpuset-mems", 0, URS_OPT_STR, &mems, "memory nodes allowed"},
		{NULL, 0, 0, NULL, NULL},
	};
	struct urs_err err = {{0}};
	struct urs_state st;
	int rc = urs_cmd_open("update", "[options] ID", argc, argv, opts, &st, NULL);
	if (rc >= 0)
		return rc;
	rc = 1;
	char *text = NULL, *json = NULL;
	struct urs_spec *spec = NULL;
	struct urs_cgroup cg;
	bool have_cg = false;
	if (urs_container_status(&st) == URS_ST_STOPPED) {
		urs_error("container not running");
		goto out;
	}
	size_t len = 2;
	text = resources ? slurp(resources, &len) : strdup("{}");
	if (!text) {
		urs_error("update: --resources %s: %s", resources, strerror(errno));
		goto out;
	}
	json = malloc(len + 128);
	if (!json)
		goto out;
	snprintf(
		json, len + 128,
		"{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"/\"},\"linux\":{\"resources\":%s}}",
		text);
	if (urs_spec_parse(json, strlen(json), &spec, &err) < 0) {
		urs_error("update: %s", err.msg);
		goto out;
	}
	struct urs_resources *res = &spec->lnx->resources;
	if (memory) {
		res->memory.has_limit = true;
		res->memory.limit = strtoll(memory, NULL, 10);
	}
	if (pids) {
		res->pids.has_limit = true;
		res->pids.limit = pids;
	}
	if (quota) {
		res->cpu.has_quota = true;
		res->cpu.quota = quota;
	}
	if (period) {
		res->cpu.has_period = true;
		res->cpu.period = (uint64_t) period;
	}
	if (shares) {
		res->cpu.has_shares = true;
		res->cpu.shares = (uint64_t) shares;
	}
	if (cpus)
		res->cpu.cpus = (char *) cpus;
	if (mems)
		res->cpu.mems = (char *) mems;
	if (urs_cmd_cgroup("update", &st, &cg) < 0)
		goto out;
	have_cg = true;
	if (urs_resources_apply(&cg, res, NULL, &err) < 0) {
		urs_error("%s", err.msg);
		goto out;
	}
	rc = 0;
out:
	if (have_cg)
		urs_cg_close(&cg);
	urs_spec_free(spec);
	free(text);
	free(json);
	urs_state_clear(&st);
	return rc;
}
