/*
 * cmd/list.c — `ursa list [--format table|json] [--quiet]`.
 */
#include <dirent.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"

json_t *urs_state_json(const struct urs_state *st, enum urs_status s);

int cmd_list(int argc, char **argv)
{
	const char *format = "table";
	bool quiet = false;
	const struct urs_opt opts[] = {
		{"format", 'f', URS_OPT_STR, &format, "table or json"},
		{"quiet", 'q', URS_OPT_FLAG, &quiet, "ids only"},
		{NULL, 0, 0, NULL, NULL},
	};
	int i = urs_parse("list", "[options]", argc, argv, opts);
	if (i < 0)
		return i == -2 ? 0 : 1;
	bool json = !strcmp(format, "json");
	if (!json && strcmp(format, "table")) {
		urs_error("list: --format %s: expected table or json", format);
		return 1;
	}
	json_t *arr = json_array();
	DIR *d = opendir(G.root);
	if (!json && !quiet)
		printf("%-20s %-8s %-10s %-40s %-32s %s\n", "ID", "PID", "STATUS", "BUNDLE",
		       "CREATED", "OWNER");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		struct urs_state st;
		if (urs_state_read(G.root, e->d_name, &st, NULL) < 0)
			continue;
		enum urs_status s = urs_container_status(&st);
		if (json) {
			json_array_append_new(arr, urs_state_json(&st, s));
		} else if (quiet) {
			printf("%s\n", st.id);
		} else {
			struct passwd *pw = getpwuid(st.owner);
			printf("%-20s %-8d %-10s %-40s %-32s %s\n", st.id,
			       s == URS_ST_STOPPED ? 0 : (int) st.pid, urs_status_name(s),
			       st.bundle, st.created, pw ? pw->pw_name : "");
		}
		urs_state_clear(&st);
	}
	if (d)
		closedir(d);
	if (json) {
		char *s = json_dumps(arr, JSON_COMPACT);
		printf("%s\n", s);
		free(s);
	}
	json_decref(arr);
	return 0;
}
