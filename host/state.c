/*
 * host/state.c — see state.h. JSON through jansson.
 */
#include "host/state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/common.h"
#include "host/cgroup.h"
#include "host/fs.h"
#include "host/proc.h"
#include "runtime/io.h"

const char *urs_status_name(enum urs_status s)
{
	static const char *n[] = {"creating", "created", "running", "paused", "stopped"};
	return (unsigned) s < 5 ? n[s] : "unknown";
}

int urs_id_valid(const char *id, struct urs_err *err)
{
	size_t n = strlen(id);
	if (!n || n >= URS_ID_MAX)
		return urs_err_set(err, -EINVAL,
				   "invalid container id %s: must be 1 to %d characters",
				   n ? "(too long)" : "\"\"", URS_ID_MAX - 1);
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') ||
			  (i && (c == '_' || c == '.' || c == '+' || c == '-'));
		if (!ok)
			return urs_err_set(
				err, -EINVAL,
				"invalid container id \"%s\": character %zu ('%c') not allowed "
				"(letters, digits, and _ . + - after the first)",
				id, i + 1, c);
	}
	return 0;
}

int urs_state_path(char *buf, size_t len, const char *root, const char *id, const char *name)
{
	int n = snprintf(buf, len, "%s/%s%s%s", root, id, name ? "/" : "", name ? name : "");
	return n < 0 || (size_t) n >= len ? -ENAMETOOLONG : 0;
}

/* A --root someone else could write to lets them plant records (and hooks
 * that a later `delete` runs as us): refuse it. */
static int root_trusted(const char *root, struct urs_err *err)
{
	struct stat sb;
	if (stat(root, &sb) < 0)
		return urs_err_set(err, -errno, "--root %s: %m", root);
	if (!S_ISDIR(sb.st_mode))
		return urs_err_set(err, -ENOTDIR, "--root %s: not a directory", root);
	if (sb.st_uid != geteuid() || (sb.st_mode & 022))
		return urs_err_set(
			err, -EPERM,
			"--root %s: owned by uid %u with mode %03o: it must belong to uid %u "
			"and not be writable by group or others",
			root, (unsigned) sb.st_uid, (unsigned) (sb.st_mode & 0777),
			(unsigned) geteuid());
	return 0;
}

int urs_state_dir_create(const char *root, const char *id, struct urs_err *err)
{
	int r = urs_mkdir_p(root, 0711);
	if (r < 0)
		return urs_err_set(err, r, "--root %s: cannot create: %s", root, strerror(-r));
	if ((r = root_trusted(root, err)) < 0)
		return r;
	char path[PATH_MAX];
	if ((r = urs_state_path(path, sizeof(path), root, id, NULL)) < 0)
		return urs_err_set(err, r, "--root %s: path too long", root);
	if (mkdir(path, 0700) < 0) {
		r = -errno;
		if (r == -EEXIST)
			return urs_err_set(err, r, "container with id %s already exists", id);
		return urs_err_set(err, r, "creating %s: %s", path, strerror(-r));
	}
	return 0;
}

int urs_state_write(const char *root, const struct urs_state *st, struct urs_err *err)
{
	json_t *o =
		json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:I}", "id", st->id,
			  "bundle", st->bundle, "rootfs", st->rootfs, "created", st->created,
			  "owner", (json_int_t) st->owner, "pid", (json_int_t) st->pid, "pid_start",
			  (json_int_t) st->pid_start, "sup_pid", (json_int_t) st->sup_pid,
			  "sup_start", (json_int_t) st->sup_start, "started", st->started,
			  "exit_status", (json_int_t) st->exit_status);
	if (!o)
		return urs_err_set(err, -ENOMEM, "state: out of memory");
	if (st->cgroup)
		json_object_set_new(o, "cgroup", json_string(st->cgroup));
	if (st->config)
		json_object_set_new(o, "config", json_string(st->config));
	if (st->hooks >= 0)
		json_object_set_new(o, "hooks", json_integer(st->hooks));
	if (st->host_mnt)
		json_object_set_new(o, "host_mnt", json_true());
	if (st->stdio_ino[0] | st->stdio_ino[1] | st->stdio_ino[2]) {
		json_t *a = json_array();
		for (int k = 0; a && k < 3; k++)
			json_array_append_new(a, json_pack("[I,I]", (json_int_t) st->stdio_dev[k],
							   (json_int_t) st->stdio_ino[k]));
		if (a)
			json_object_set_new(o, "stdio", a);
	}
	if (st->annotations) {
		json_t *a = json_loads(st->annotations, 0, NULL);
		if (a)
			json_object_set_new(o, "annotations", a);
	}
	char path[PATH_MAX], tmp[PATH_MAX];
	if (urs_state_path(path, sizeof(path), root, st->id, "state.json") < 0 ||
	    urs_state_path(tmp, sizeof(tmp), root, st->id, ".state.json.tmp") < 0) {
		json_decref(o);
		return urs_err_set(err, -ENAMETOOLONG, "state: path too long");
	}
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return urs_err_set(err, -ENOMEM, "state: out of memory");
	/* 0644 whatever the umask: writable by us alone (an image's copy of it
	 * must pass the manifest's owner check) */
	int r = urs_write_file_atomic(path, tmp, text, strlen(text), 0644);
	free(text);
	if (r < 0)
		return urs_err_set(err, r, "state: writing %s: %s", path, strerror(-r));
	return 0;
}

static void copy_str(char *dst, size_t len, json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	snprintf(dst, len, "%s", s ? s : "");
}

static char *dup_str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? strdup(s) : NULL;
}

int urs_state_read(const char *root, const char *id, struct urs_state *st, struct urs_err *err)
{
	memset(st, 0, sizeof(*st));
	st->exit_status = -1;
	char path[PATH_MAX];
	if (urs_id_valid(id, err) < 0)
		return -EINVAL;
	if (urs_state_path(path, sizeof(path), root, id, "state.json") < 0)
		return urs_err_set(err, -ENAMETOOLONG, "state: path too long");
	struct stat rsb;
	if (stat(root, &rsb) == 0) {
		int r = root_trusted(root, err);
		if (r < 0)
			return r;
	}
	json_error_t je;
	json_t *o = json_load_file(path, 0, &je);
	if (!o) {
		struct stat sb;
		char dir[PATH_MAX];
		urs_state_path(dir, sizeof(dir), root, id, NULL);
		if (stat(dir, &sb) < 0)
			return urs_err_set(err, -ENOENT, "container %s does not exist", id);
		return urs_err_set(err, -EIO, "container %s: state file %s unreadable: %s", id,
				   path, je.text);
	}
	copy_str(st->id, sizeof(st->id), o, "id");
	copy_str(st->bundle, sizeof(st->bundle), o, "bundle");
	copy_str(st->rootfs, sizeof(st->rootfs), o, "rootfs");
	copy_str(st->created, sizeof(st->created), o, "created");
	st->owner = (uid_t) json_integer_value(json_object_get(o, "owner"));
	st->pid = (pid_t) json_integer_value(json_object_get(o, "pid"));
	st->pid_start = (uint64_t) json_integer_value(json_object_get(o, "pid_start"));
	st->sup_pid = (pid_t) json_integer_value(json_object_get(o, "sup_pid"));
	st->sup_start = (uint64_t) json_integer_value(json_object_get(o, "sup_start"));
	st->started = json_is_true(json_object_get(o, "started"));
	st->host_mnt = json_is_true(json_object_get(o, "host_mnt"));
	json_t *es = json_object_get(o, "exit_status");
	st->exit_status = es ? (int) json_integer_value(es) : -1;
	st->cgroup = dup_str(o, "cgroup");
	st->config = dup_str(o, "config");
	json_t *hk = json_object_get(o, "hooks");
	st->hooks = json_is_integer(hk) ? (int) json_integer_value(hk) : -1;
	json_t *a = json_object_get(o, "annotations");
	if (a)
		st->annotations = json_dumps(a, JSON_COMPACT);
	json_t *io = json_object_get(o, "stdio");
	for (int k = 0; k < 3 && json_array_size(io) == 3; k++) {
		json_t *e = json_array_get(io, (size_t) k);
		st->stdio_dev[k] = (uint64_t) json_integer_value(json_array_get(e, 0));
		st->stdio_ino[k] = (uint64_t) json_integer_value(json_array_get(e, 1));
	}
	json_decref(o);
	return 0;
}

void urs_state_clear(struct urs_state *st)
{
	free(st->cgroup);
	free(st->annotations);
	free(st->config);
	st->cgroup = st->annotations = st->config = NULL;
}

pid_t urs_state_sup_live(const struct urs_state *st)
{
	return st->sup_pid > 0 && urs_proc_alive(st->sup_pid, st->sup_start) ? st->sup_pid : 0;
}

/* ROOT/ID's entries unlinked, then ROOT/ID: a file a late writer made
 * meanwhile (a hosting shim's exit record, actors/hosted.h) goes on the
 * next pass */
int urs_state_remove(const char *root, const char *id)
{
	char path[PATH_MAX];
	if (urs_state_path(path, sizeof(path), root, id, NULL) < 0)
		return -ENAMETOOLONG;
	_cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	for (int pass = 0;; pass++) {
		DIR *d = fdopendir(dup(dfd));
		if (d) {
			struct dirent *e;
			while ((e = readdir(d)))
				if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
					unlinkat(dfd, e->d_name, 0);
			closedir(d);
		}
		if (rmdir(path) == 0 || errno == ENOENT)
			return 0;
		if (errno != ENOTEMPTY || pass == 2)
			return -errno;
	}
}

void urs_rfc3339_now(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%09ldZ", base, ts.tv_nsec);
}

int urs_oci_state_json(char *buf, size_t len, const char *id, const char *status, pid_t pid,
		       const char *bundle, const char *annotations)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:s}", "ociVersion", "1.0.2", "id",
			      id ? id : "", "status", status, "pid", (json_int_t) pid, "bundle",
			      bundle ? bundle : "");
	if (!o)
		return -ENOMEM;
	if (annotations) {
		json_t *a = json_loads(annotations, 0, NULL);
		if (a)
			json_object_set_new(o, "annotations", a);
	}
	size_t n = json_dumpb(o, buf, len ? len - 1 : 0, JSON_COMPACT);
	json_decref(o);
	if (!len || n >= len)
		return -ENOSPC;
	buf[n] = 0;
	return (int) n;
}

char *urs_json_object_kv(const char *const *keys, const char *const *values, size_t n)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < n; i++)
		json_object_set_new(o, keys[i], json_string(values[i]));
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

int urs_state_save_config(const char *root, const char *id, const char *config_path)
{
	char dst[PATH_MAX];
	if (urs_state_path(dst, sizeof(dst), root, id, "config.json") < 0)
		return -ENAMETOOLONG;
	_cleanup_close_ int in = open(config_path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	_cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		int r = urs_write_all(out, buf, (size_t) n); /* ENOSPC says so */
		if (r < 0)
			return r;
	}
	return n < 0 ? -errno : 0;
}

enum urs_status urs_container_status(const struct urs_state *st)
{
	if (!st->pid)
		return URS_ST_CREATING;
	if (!urs_proc_alive(st->pid, st->pid_start))
		return URS_ST_STOPPED;
	if (st->cgroup) {
		struct urs_cgroup cg;
		if (urs_cg_from_string(&cg, st->cgroup, NULL) == 0) {
			int fr = urs_cg_is_frozen(&cg, NULL);
			urs_cg_close(&cg);
			if (fr == 1)
				return URS_ST_PAUSED;
		}
	}
	return st->started ? URS_ST_RUNNING : URS_ST_CREATED;
}
