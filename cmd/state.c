/*
 * cmd/state.c — `ursa state ID`: the OCI state JSON (plus runc's rootfs,
 * created, owner), with the status as it is now.
 */
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"

json_t *urs_state_json(const struct urs_state *st, enum urs_status s);

json_t *urs_state_json(const struct urs_state *st, enum urs_status s)
{
	struct passwd *pw = getpwuid(st->owner);
	json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:s}", "ociVersion", "1.0.2",
			      "id", st->id, "status", urs_status_name(s), "pid",
			      (json_int_t) (s == URS_ST_STOPPED ? 0 : st->pid), "bundle",
			      st->bundle, "rootfs", st->rootfs, "created", st->created, "owner",
			      pw ? pw->pw_name : "");
	if (o && st->annotations) {
		json_t *a = json_loads(st->annotations, 0, NULL);
		if (a)
			json_object_set_new(o, "annotations", a);
	}
	return o;
}

int cmd_state(int argc, char **argv)
{
	struct urs_state st;
	int rc = urs_cmd_open("state", "ID", argc, argv, NULL, &st, NULL);
	if (rc >= 0)
		return rc;
	char why[600];
	if (urs_sup_gone(&st, why, sizeof(why)))
		urs_warn(why);
	if (urs_sandbox_killed(&st, why, sizeof(why)))
		urs_warn(why);
	json_t *o = urs_state_json(&st, urs_container_status(&st));
	char *s = json_dumps(o, JSON_INDENT(2));
	printf("%s\n", s);
	free(s);
	json_decref(o);
	urs_state_clear(&st);
	return 0;
}
