/*
 * tests/ckpt/ckpt_tool.c — a thin CLI over ckpt/dump and ckpt/restore
 * for the checkpoint tests (until `ursa checkpoint/restore` exist):
 *   ckpt_tool dump PID DIR [CGROUP]   checkpoint the tree rooted at PID into DIR;
 *                             CGROUP: its frozen cgroup v2 directory
 *   ckpt_tool restore DIR     restore it; prints "pid N" (N in our pid ns)
 *   ckpt_tool restore --lazy[-hold] DIR   the same, lazily (ckpt/lazy.h);
 *                             --lazy-hold: faults only until SIGUSR2. Then
 *                             pages until every page is in and prints
 *                             "lazy done=1 faults=..." before it exits
 *   ckpt_tool seal DIR        (re)write DIR/manifest.img (ckpt/manifest.h): a
 *                             test that alters an image on purpose seals it
 *                             again to reach the checks behind the manifest
 * Both print one line of measurements ("dump_ms=..."), errors go to stderr.
 * The image is authenticated with the host's checkpoint key, ursa's own
 * (ckpt/key.h; $URSA_CKPT_KEY names another), made at the first dump.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/dump.h"
#include "ckpt/key.h"
#include "ckpt/lazy.h"
#include "ckpt/manifest.h"
#include "ckpt/restore.h"

static int tool_key(bool create, uint8_t key[CKPT_KEY_LEN], struct urs_err *err)
{
	return ckpt_key(create, key, err);
}

/* a lazy restore: wait until every page is in, say how they came */
static int lazy_report(struct ckpt_lazy *lz)
{
	fflush(stdout);
	int r = ckpt_lazy_wait(lz);
	struct ckpt_lazy_stats ls;
	ckpt_lazy_stats(lz, &ls);
	printf("lazy done=%d faults=%llu fault_pages=%llu zero_pages=%llu prefetch_pages=%llu "
	       "spaces=%llu chunks=%llu ws_blocks=%llu hot_blocks=%llu ws_pages=%llu rec=%d "
	       "rec_blocks=%llu ms=%.3f\n",
	       ls.done, (unsigned long long) ls.faults, (unsigned long long) ls.fault_pages,
	       (unsigned long long) ls.zero_pages, (unsigned long long) ls.prefetch_pages,
	       (unsigned long long) ls.spaces, (unsigned long long) ls.chunks,
	       (unsigned long long) ls.ws_blocks, (unsigned long long) ls.hot_blocks,
	       (unsigned long long) ls.ws_pages, ls.rec, (unsigned long long) ls.rec_blocks, ls.ms);
	if (r)
		fprintf(stderr, "ckpt_tool: %s\n", ckpt_lazy_why(lz));
	ckpt_lazy_free(lz);
	return r ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct urs_err err = {{0}};
	uint8_t key[CKPT_KEY_LEN];
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "dump")) {
		struct ckpt_dump_stats st;
		struct ckpt_dump_opts opts = {.freezer = argc == 5 ? argv[4] : NULL, .key = key};
		int r = tool_key(true, key, &err);
		if (r == 0)
			r = ckpt_dump((pid_t) atoi(argv[2]), argv[3], &opts, &st, &err);
		if (r) {
			fprintf(stderr, "ckpt_tool: %s\n", err.msg);
			return 1;
		}
		printf("dump_ms=%.3f tasks=%u pages=%llu zero_pages=%llu image_bytes=%llu\n", st.ms,
		       st.ntasks, (unsigned long long) st.pages, (unsigned long long) st.zero_pages,
		       (unsigned long long) st.image_bytes);
		return 0;
	}
	bool hold = argc == 4 && !strcmp(argv[1], "restore") && !strcmp(argv[2], "--lazy-hold");
	bool lazy =
		hold || (argc == 4 && !strcmp(argv[1], "restore") && !strcmp(argv[2], "--lazy"));
	if ((argc == 3 && !strcmp(argv[1], "restore")) || lazy) {
		struct ckpt_restore_stats st;
		pid_t pid = 0;
		struct ckpt_lazy *lz = NULL;
		struct ckpt_restore_opts opts = {
			.key = key, .lazy = lazy, .lazy_hold = hold, .lazy_out = &lz};
		sigset_t usr2;
		sigemptyset(&usr2);
		sigaddset(&usr2, SIGUSR2);
		if (hold)
			sigprocmask(SIG_BLOCK, &usr2, NULL);
		int r = tool_key(false, key, &err);
		if (r == 0)
			r = ckpt_restore_ex(argv[argc - 1], &opts, &pid, &st, &err);
		if (r) {
			fprintf(stderr, "ckpt_tool: %s\n", err.msg);
			return 1;
		}
		printf("pid %d\nrestore_ms=%.3f load_ms=%.3f tasks=%u pages=%llu shared=%llu\n",
		       pid, st.ms, st.load_ms, st.ntasks, (unsigned long long) st.pages,
		       (unsigned long long) st.shared);
		if (hold) { /* faults only until SIGUSR2 */
			fflush(stdout);
			int sig;
			sigwait(&usr2, &sig);
			ckpt_lazy_go(lz);
		}
		return lz ? lazy_report(lz) : 0;
	}
	if (argc == 3 && !strcmp(argv[1], "seal")) {
		struct ckpt_seal seal;
		int r = tool_key(false, seal.key, &err);
		if (r == 0)
			r = ckpt_manifest_write(argv[2], &seal, &err);
		explicit_bzero(&seal, sizeof(seal));
		if (r) {
			fprintf(stderr, "ckpt_tool: %s\n", err.msg);
			return 1;
		}
		return 0;
	}
	fprintf(stderr, "usage: ckpt_tool dump PID DIR [CGROUP] | restore [--lazy|--lazy-hold] DIR "
			"| seal DIR\n");
	return 2;
}
