/*
 * cmd/spec.c — `ursa spec [--bundle DIR]`: write runc's default config.json.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"

int cmd_spec(int argc, char **argv)
{
	const char *bundle = ".";
	bool rootless = false;
	const struct urs_opt opts[] = {
		{"bundle", 'b', URS_OPT_STR, &bundle, "where to write config.json"},
		{"rootless", 0, URS_OPT_FLAG, &rootless, "(not supported)"},
		{NULL, 0, 0, NULL, NULL},
	};
	int i = urs_parse("spec", "[--bundle DIR]", argc, argv, opts);
	if (i < 0)
		return i == -2 ? 0 : 1;
	if (rootless) {
		urs_error("spec: --rootless is not supported");
		return 1;
	}
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		urs_error("spec: %s: %s", path,
			  errno == EEXIST ? "file exists, remove it first" : strerror(errno));
		return 1;
	}
	const char *s = urs_spec_default_json();
	size_t n = strlen(s);
	bool ok = write(fd, s, n) == (ssize_t) n;
	close(fd);
	if (!ok) {
		urs_error("spec: writing %s: %s", path, strerror(errno));
		return 1;
	}
	return 0;
}
