/*
 * tests/ckpt/ckpt_tool.c — a thin CLI over ckpt/dump and ckpt/restore
 * for the checkpoint tests (until `ursa checkpoint/restore` exist):
 *   ckpt_tool dump PID DIR [CGROUP]   checkpoint the tree rooted at PID into DIR;
 *                             CGROUP: its frozen cgroup v2 directory
 *   ckpt_tool restore DIR     restore it; prints "pid N" (N in our pid ns)
 *   ckpt_tool seal DIR        (re)write DIR/manifest.img (ckpt/manifest.h): a
 *                             test that alters an image on purpose seals it
 *                             again to reach the checks behind the manifest
 * Both print one line of measurements ("dump_ms=..."), errors go to stderr.
 * The image is authenticated with the host's checkpoint key, ursa's own
 * (ckpt/key.h; $URSA_CKPT_KEY names another), made at the first dump.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/dump.h"
#include "ckpt/key.h"
#include "ckpt/manifest.h"
#include "ckpt/restore.h"

static int tool_key(bool create, uint8_t key[CKPT_KEY_LEN], struct urs_err *err)
{
	return ckpt_key(create, key, err);
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
	if (argc == 3 && !strcmp(argv[1], "restore")) {
		struct ckpt_restore_stats st;
		pid_t pid = 0;
		struct ckpt_restore_opts opts = {.key = key};
		int r = tool_key(false, key, &err);
		if (r == 0)
			r = ckpt_restore_ex(argv[2], &opts, &pid, &st, &err);
		if (r) {
			fprintf(stderr, "ckpt_tool: %s\n", err.msg);
			return 1;
		}
		printf("pid %d\nrestore_ms=%.3f load_ms=%.3f tasks=%u pages=%llu\n", pid, st.ms,
		       st.load_ms, st.ntasks, (unsigned long long) st.pages);
		return 0;
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
	fprintf(stderr, "usage: ckpt_tool dump PID DIR [CGROUP] | restore DIR | seal DIR\n");
	return 2;
}
