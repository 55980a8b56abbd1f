/*
 * tests/ckpt/ckpt_tool.c — a thin CLI over ckpt/dump and ckpt/restore
 * for the checkpoint tests (until `ursa checkpoint/restore` exist):
 *   ckpt_tool dump PID DIR [CGROUP]   checkpoint the tree rooted at PID into DIR;
 *                             CGROUP: its frozen cgroup v2 directory
 *   ckpt_tool restore DIR     restore it; prints "pid N" (N in our pid ns)
 * Both print one line of measurements ("dump_ms=..."), errors go to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/dump.h"
#include "ckpt/restore.h"

int main(int argc, char **argv)
{
	struct urs_err err = {{0}};
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "dump")) {
		struct ckpt_dump_stats st;
		struct ckpt_dump_opts opts = {.freezer = argc == 5 ? argv[4] : NULL};
		int r = ckpt_dump((pid_t) atoi(argv[2]), argv[3], &opts, &st, &err);
		if (r) {
			fprintf(stderr, "ckpt_tool: %s\n", err.msg);
			return 1;
		}
		printf("dump_ms=%.3f tasks=%u pages=%llu zero_pages=%llu image_bytes=%llu\n", st.ms,
		       st.ntasks, (unsigned long long) st.pages, (unsigned long long) st.zero_pages,
		       (unsigned long long) st.image_bytes);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "restore")) {
		struct ckpt_restore_stats st;
		pid_t pid = 0;
		int r = ckpt_restore(argv[2], &pid, &st, &err);
		if (r) {
			fprintf(stderr, "ckpt_tool: %s\n", err.msg);
			return 1;
		}
		printf("pid %d\nrestore_ms=%.3f load_ms=%.3f tasks=%u pages=%llu\n", pid, st.ms,
		       st.load_ms, st.ntasks, (unsigned long long) st.pages);
		return 0;
	}
	fprintf(stderr, "usage: ckpt_tool dump PID DIR [CGROUP] | restore DIR\n");
	return 2;
}
