/*
 * cmd/store_main.c — `ursa-store`, the short-lived process that moves a
 * checkpoint image to and from object storage (store/remote.h). A program
 * of its own because libcurl and libcrypto come only as shared libraries
 * (meson.build): the static `ursa` binary and the long-lived supervisor
 * never load them; `ursa checkpoint|restore --image-path s3://...` start
 * this beside themselves (cmd/remote.c).
 *
 *   ursa-store put [OPTS] [--stream FILE@OFF] s3://BUCKET/PREFIX STAGE
 *     With --stream, fd 3 is read to its end into FILE at OFF (the dumper's
 *     pages, never on local disk); then "streamed BYTES" on stdout. Meanwhile
 *     "cut N" on stdin (N: where in FILE the stream is, all of it read,
 *     objects of whole MiB) makes what came since the last cut an object of
 *     its own, completed at once, answered "cut N"; the rest goes into the
 *     next. Then a
 *     line "commit" on stdin uploads every file of the directory STAGE (the
 *     image's small files: inside the index unless they outgrow it, or with
 *     --no-inline, an object each) and the index, and answers "ok OBJECTS
 *     BYTES".
 *     Anything else on stdin — EOF above all, the caller died — removes
 *     every object written and exits 1: no image.
 *   ursa-store get [OPTS] s3://BUCKET/PREFIX DEST
 *     The image into the new directory DEST (0700), each object
 *     authenticated.
 *     While put has a multipart upload open, STAGE.mpu names it (the
 *     journal: store/remote.h); one left by an ursa-store killed halfway
 *     is for gc.
 *   ursa-store gc STAGE.mpu
 *     Aborts the multipart upload a journal names (with the profile and
 *     configuration file, endpoint and region put had), then removes the
 *     journal: at once when the store answered the abort for good
 *     (aborted, no such upload, not implemented), else (not asked,
 *     unreachable, 5xx, 4xx) on a later try, or once it is a day old (a
 *     bucket's lifecycle rule has the parts by then: docs/storage.md).
 *     One gc per journal at a time (flock), none while the journal's
 *     ursa-store still runs; started detached by the CLI (cmd/remote.c).
 *   OPTS: --key-file FILE (the host's checkpoint key, required), --config
 *     FILE (default /etc/ursa/s3.conf), --profile NAME.
 * Errors go to stderr as one line ("ursa-store: ..."); put also writes
 * "error: ..." on stdout for its caller.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/key.h"
#include "ckpt/restore.h"
#include "ckpt/trace.h"
#include "host/fdpass.h"
#include "host/fs.h"
#include "host/proc.h"
#include "runtime/common.h"
#include "runtime/loop.h"
#include "store/remote.h"
#include "store/s3_conf.h"
#include "store/serve.h"

struct args {
	const char *cmd, *url, *dir, *key_file, *config, *profile, *stream;
	bool serve, no_inline;
};

static int usage(void)
{
	fprintf(stderr, "usage: ursa-store put|get --key-file FILE [--config FILE] "
			"[--profile NAME] [--stream FILE@OFF] [--serve] [--no-inline] "
			"s3://BUCKET/PREFIX DIR\n");
	return 2;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int pos = 0;
	for (int i = 1; i < argc; i++) {
		const char **opt = !strcmp(argv[i], "--key-file")  ? &a->key_file
				   : !strcmp(argv[i], "--config")  ? &a->config
				   : !strcmp(argv[i], "--profile") ? &a->profile
				   : !strcmp(argv[i], "--stream")  ? &a->stream
								   : NULL;
		if (!strcmp(argv[i], "--serve"))
			a->serve = true;
		else if (!strcmp(argv[i], "--no-inline"))
			a->no_inline = true;
		else if (opt && i + 1 < argc)
			*opt = argv[++i];
		else if (opt || argv[i][0] == '-')
			return -1;
		else if (pos == 0)
			a->cmd = argv[i], pos++;
		else if (pos == 1)
			a->url = argv[i], pos++;
		else if (pos == 2)
			a->dir = argv[i], pos++;
		else
			return -1;
	}
	return pos == 3 && a->key_file ? 0 : -1;
}

static void say(bool reply, const char *fmt, const char *msg)
{
	fprintf(stderr, "ursa-store: %s\n", msg);
	if (reply) {
		/* one reply line: a store's text may hold newlines */
		char one[sizeof(((struct urs_err *) 0)->msg)];
		snprintf(one, sizeof(one), "%s", msg);
		for (char *c = one; *c; c++)
			if (*c == '\n' || *c == '\r')
				*c = ' ';
		printf(fmt, one);
		fflush(stdout);
	}
}

/* the regular files of @dir and its subdirectories (one level), in name
 * order, each into an object */
static int put_dir(struct urs_remote *r, const char *dir, const char *sub, struct urs_err *err)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s%s%s", dir, *sub ? "/" : "", sub);
	struct dirent **ents = NULL;
	int n = scandir(path, &ents, NULL, alphasort), e = 0;
	if (n < 0)
		return urs_err_set(err, -errno, "reading %s: %m", path);
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		char rel[URS_REMOTE_FILE_MAX + 2], file[4400];
		struct stat sb;
		snprintf(rel, sizeof(rel), "%s%s%s", sub, *sub ? "/" : "", name);
		snprintf(file, sizeof(file), "%s/%s", path, name);
		if (e < 0 || name[0] == '.' || lstat(file, &sb) < 0)
			continue;
		if (S_ISDIR(sb.st_mode) && !*sub) {
			e = put_dir(r, dir, name, err);
		} else if (S_ISREG(sb.st_mode)) {
			int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			e = fd < 0 ? urs_err_set(err, -errno, "opening %s: %m", file)
				   : urs_remote_put_file(r, fd, rel, STDIN_FILENO, err);
			if (fd >= 0)
				close(fd);
		}
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return e;
}

static int stream(struct urs_remote *r, const char *spec, struct urs_err *err)
{
	char file[URS_REMOTE_FILE_MAX + 1];
	const char *at = strrchr(spec, '@');
	char *end;
	if (!at || (size_t) (at - spec) >= sizeof(file))
		return urs_err_set(err, -EINVAL, "--stream %s: not FILE@OFFSET", spec);
	unsigned long long off = strtoull(at + 1, &end, 10);
	if (*end || at[1] == 0)
		return urs_err_set(err, -EINVAL, "--stream %s: not FILE@OFFSET", spec);
	snprintf(file, (size_t) (at - spec) + 1, "%s", spec);
	int fl = fcntl(3, F_GETFL);
	if (fl < 0 || fcntl(3, F_SETFL, fl | O_NONBLOCK) < 0)
		return urs_err_set(err, -EBADF, "--stream: fd 3 is not open");
	/* "cut N" on stdin: what came so far is an object, completed now
	 * ("cut N" back once it is), and the stream goes on into the next */
	for (uint64_t at = off;;) {
		uint64_t before = urs_remote_stats(r)->plain;
		int e = urs_remote_put_fd(r, 3, file, at, STDIN_FILENO, err);
		if (e <= 0)
			return e;
		at += urs_remote_stats(r)->plain - before;
		printf("cut %llu\n", (unsigned long long) at);
		fflush(stdout);
	}
}

/* STAGE.mpu: the open multipart upload, for gc if this process is killed;
 * with this process (pid, start time: gc leaves a live one's alone) and the
 * store as put resolved it (not a secret), so that a gc under another
 * environment asks the same store. Best effort: without it, put goes on. */
static void journal(struct urs_remote *r, const struct args *a, const struct urs_s3_conf *conf)
{
	char path[PATH_MAX], head[1024];
	uint64_t start = 0;
	size_t dl = strlen(a->dir);
	while (dl > 1 && a->dir[dl - 1] == '/')
		dl--;
	urs_proc_start_time(getpid(), &start);
	int n = snprintf(head, sizeof(head),
			 "owner %d %llu\nprofile %s\nconfig %s\nendpoint %s\nregion %s\n",
			 (int) getpid(), (unsigned long long) start, conf->profile,
			 a->config ? a->config : "", conf->endpoint, conf->region);
	int e = n >= (int) sizeof(head) || snprintf(path, sizeof(path), "%.*s.mpu", (int) dl,
						    a->dir) >= PATH_MAX
			? -ENAMETOOLONG
			: urs_remote_journal(r, path, head);
	if (e < 0)
		fprintf(stderr,
			"ursa-store: no journal for the multipart upload (%s): if this "
			"process is killed mid-upload, the upload stays open\n",
			strerror(-e));
}

static int put(struct urs_remote *r, const struct args *a, struct urs_err *err)
{
	int e = urs_remote_put_begin(r, err);
	if (e == 0 && a->stream && (e = stream(r, a->stream, err)) == 0) {
		printf("streamed %" PRIu64 "\n", urs_remote_stats(r)->plain);
		fflush(stdout);
	}
	char line[64] = "";
	if (e == 0 && (!fgets(line, sizeof(line), stdin) || strcmp(line, "commit\n")))
		e = urs_err_set(err, -ECANCELED, "cancelled by the caller (no commit)");
	if (e == 0)
		e = put_dir(r, a->dir, "", err);
	if (e == 0)
		e = urs_remote_put_commit(r, err);
	if (e == 0) {
		const struct urs_remote_stats *st = urs_remote_stats(r);
		printf("ok %" PRIu32 " %" PRIu64 "\n", st->objects, st->sealed);
		fflush(stdout);
		return 0;
	}
	say(true, "error: %s\n", err->msg);
	struct urs_err e2 = {{0}};
	if (urs_remote_put_abort(r, &e2) < 0)
		fprintf(stderr, "ursa-store: removing what was written: %s\n", e2.msg);
	return e;
}

/* --serve: what the restore asks for before its tasks run, from the image
 * now in @dir (ckpt_restore_first_chunks), fetched without waiting to be
 * asked; NULL (none) when that cannot be known */
static uint8_t *first_chunks(const char *dir, int pages_fd, const uint8_t key[CKPT_KEY_LEN],
			     size_t *n)
{
	struct ckpt_seal seal;
	memcpy(seal.key, key, sizeof(seal.key));
	struct urs_err e = {{0}};
	uint8_t *p = NULL;
	int r = ckpt_restore_first_chunks(dir, pages_fd, &seal, &p, n, &e);
	if (r < 0) /* (the restore goes on: each chunk comes when asked) */
		fprintf(stderr, "ursa-store: warning: nothing fetched ahead of the restore: %s\n",
			e.msg);
	if (r <= 0) {
		free(p);
		p = NULL;
	}
	explicit_bzero(&seal, sizeof(seal));
	return p;
}

static int get(struct urs_remote *r, const struct args *a, const uint8_t key[CKPT_KEY_LEN],
	       struct urs_err *err)
{
	if (mkdir(a->dir, 0700) < 0)
		return urs_err_set(err, -errno, "creating %s: %m", a->dir);
	_cleanup_close_ int dfd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return urs_err_set(err, -errno, "opening %s: %m", a->dir);
	/* --serve: the page data is left out, then served on fd 3 chunk by
	 * chunk (a lazy restore's pager asks); "ok" says the rest is in */
	int e = a->serve ? urs_remote_get_ex(r, dfd, "pages.img", 4096 /* after its header page */,
					     err)
			 : urs_remote_get(r, dfd, err);
	int rm = e < 0 ? urs_rm_tree(a->dir) : 0; /* made here: not left half-filled */
	if (rm < 0)
		fprintf(stderr, "ursa-store: %s is left half-filled: %s\n", a->dir, strerror(-rm));
	if (e < 0 || !a->serve)
		return e;
	ckpt_trace("store: all but the page data in");
	signal(SIGPIPE, SIG_IGN); /* the pager may go first: EPIPE, not death */
	/* the page data's memfd, first on the pager's socket (store/serve.h) */
	struct urs_remote_chunk_reply rp = {.chunk = URS_REMOTE_SERVE_PAGES};
	if ((e = urs_send_fd(3, &rp, sizeof(rp), urs_remote_lazy_fd(r))) < 0)
		return urs_err_set(err, e, "handing the page data's memfd to the restore: %s",
				   strerror(-e));
	printf("ok\n");
	fflush(stdout);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) { /* the caller reads to EOF: no copy of its pipe stays */
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
	size_t nfirst;
	uint8_t *first = first_chunks(a->dir, urs_remote_lazy_fd(r), key, &nfirst);
	ckpt_trace("store: first chunks known");
	e = urs_remote_serve(r, dfd, 3, first, nfirst, err);
	free(first);
	return e;
}

/* the journal's "NAME VALUE" lines */
struct journal {
	char owner[64], profile[130], config[PATH_MAX], endpoint[520], region[70],
		bucket[URS_S3_BUCKET_MAX + 1], key[1100], upload[URS_S3_UPLOAD_MAX];
};

static int journal_read(int fd, struct journal *j)
{
	char text[8192];
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	if (n < 0)
		return -errno;
	text[n] = 0;
	*j = (struct journal){0};
	for (char *line = text, *nl; *line; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			return -EINVAL;
		*nl = 0;
		char *v = strchr(line, ' ');
		if (!v)
			return -EINVAL;
		*v++ = 0;
		const struct {
			const char *name;
			char *to;
			size_t cap;
		} f[] = {{"owner", j->owner, sizeof(j->owner)},
			 {"profile", j->profile, sizeof(j->profile)},
			 {"config", j->config, sizeof(j->config)},
			 {"endpoint", j->endpoint, sizeof(j->endpoint)},
			 {"region", j->region, sizeof(j->region)},
			 {"bucket", j->bucket, sizeof(j->bucket)},
			 {"key", j->key, sizeof(j->key)},
			 {"upload", j->upload, sizeof(j->upload)}};
		for (size_t i = 0; i < URS_ARRAY_SIZE(f); i++)
			if (!strcmp(line, f[i].name) &&
			    snprintf(f[i].to, f[i].cap, "%s", v) >= (int) f[i].cap)
				return -ENAMETOOLONG;
	}
	return j->bucket[0] && j->key[0] && j->upload[0] ? 0 : -EINVAL;
}

/* the store the journal names: its endpoint and region over this
 * environment's (the credentials are this command's or the file's) */
static int journal_conf(const struct journal *j, struct urs_s3_conf *conf, struct urs_err *err)
{
	extern char **environ;
	size_t n = 0;
	while (environ[n])
		n++;
	_cleanup_free_ char **env = calloc(n + 3, sizeof(*env));
	char ep[600], rg[100];
	if (!env)
		return urs_err_set(err, -ENOMEM, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "AWS_ENDPOINT_URL=", 17) &&
		    strncmp(environ[i], "AWS_REGION=", 11) &&
		    strncmp(environ[i], "AWS_DEFAULT_REGION=", 19) &&
		    strncmp(environ[i], "AWS_PROFILE=", 12))
			env[k++] = environ[i];
	snprintf(ep, sizeof(ep), "AWS_ENDPOINT_URL=%s", j->endpoint);
	snprintf(rg, sizeof(rg), "AWS_REGION=%s", j->region);
	if (j->endpoint[0])
		env[k++] = ep;
	if (j->region[0])
		env[k++] = rg;
	return urs_s3_conf_load(conf, j->config[0] ? j->config : NULL,
				j->profile[0] ? j->profile : NULL, env, err);
}

/* remove @path if it is still the file @fd (a new journal renamed onto the
 * name meanwhile is not ours) */
static void unlink_same(const char *path, int fd)
{
	struct stat a, b;
	if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		unlink(path);
	urs_rmdir_parent_named(path, "/.remote"); /* (with its last journal) */
}

/* a line of gc's, after its UTC time (detached, it goes to a log), in one
 * write: gc runs of other commands may append to the same log */
__attribute__((format(printf, 1, 2))) static void gc_say(const char *fmt, ...)
{
	char line[1024];
	time_t now = time(NULL);
	struct tm tm;
	size_t n = strftime(line, sizeof(line),
			    "%Y-%m-%dT%H:%M:%SZ ursa-store: ", gmtime_r(&now, &tm));
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (m >= 0 && n + (size_t) m >= sizeof(line)) /* cut: still one line */
		memcpy(line + sizeof(line) - 2, "\n", 2);
	if (m >= 0 && write(2, line, strnlen(line, sizeof(line))) < 0) {
		/* nowhere else to say it */
	}
}

/* ursa-store gc JOURNAL: 0 when nothing is left to do */
static int gc(const char *path)
{
	setsid(); /* detached from the command's terminal: no SIGINT or SIGHUP from it */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : 1;
	struct stat sb;
	struct journal j;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
		return gc_say("%s: not a journal\n", path), 1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return 0; /* another gc is at it */
	int e = journal_read(fd, &j), pid = 0;
	unsigned long long start = 0;
	if (e == 0 && sscanf(j.owner, "%d %llu", &pid, &start) == 2 && pid > 0 &&
	    urs_proc_alive(pid, start))
		return 0; /* its ursa-store still runs: the upload is its own */
	if (e < 0 || time(NULL) - sb.st_mtime > 24 * 3600) {
		gc_say("%s: %s: removed\n", path,
		       e < 0 ? "not a journal"
			     : "a day old, given up (the bucket's lifecycle rule)");
		unlink_same(path, fd);
		return 0;
	}
	struct urs_err err = {{0}};
	struct urs_s3_conf conf;
	struct urs_loop loop;
	struct urs_remote *r = NULL;
	uint8_t zero[CKPT_KEY_LEN] = {0}; /* no image: nothing sealed */
	bool asked = false;
	e = journal_conf(&j, &conf, &err);
	bool looped = e == 0 && (e = urs_loop_init(&loop, NULL)) == 0;
	if (e < 0 && !err.msg[0])
		urs_err_set(&err, e, "io_uring: %s", strerror(-e));
	if (looped && (e = urs_remote_open(&loop, &conf, j.bucket, "", zero, NULL, &r, &err)) == 0)
		e = urs_remote_abort_upload(r, j.key, j.upload, &err), asked = true;
	explicit_bzero(&conf, sizeof(conf));
	/* for good only when the store answered the abort: done, no such
	 * upload, or one it cannot abort (not implemented); anything else
	 * (not asked, unreachable, 5xx, 4xx such as expired or other
	 * credentials) is tried again by a later command */
	bool done = asked && (e == 0 || e == -ENOENT || e == -EOPNOTSUPP);
	if (e == 0 || (asked && e == -ENOENT))
		gc_say("multipart upload %s of s3://%s/%s %s\n", j.upload, j.bucket, j.key,
		       e ? "was gone already" : "aborted");
	else
		gc_say("multipart upload %s of s3://%s/%s: %s%s\n", j.upload, j.bucket, j.key,
		       err.msg, done ? "" : " (tried again later)");
	if (done)
		unlink_same(path, fd);
	urs_remote_close(r);
	if (looped)
		urs_loop_fini(&loop);
	return done ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct args a = {0};
	ckpt_trace("store: started");
	if (argc == 3 && !strcmp(argv[1], "gc"))
		return gc(argv[2]);
	if (parse_args(argc, argv, &a) < 0 || (strcmp(a.cmd, "put") && strcmp(a.cmd, "get")))
		return usage();
	bool is_put = !strcmp(a.cmd, "put");
	struct urs_err err = {{0}};
	struct urs_s3_url url;
	struct urs_s3_conf conf;
	uint8_t key[CKPT_KEY_LEN];
	struct urs_loop loop;
	struct urs_remote *r = NULL;
	int e = urs_s3_url_parse(a.url, &url, &err);
	if (e == 0)
		e = urs_s3_conf_load(&conf, a.config, a.profile, NULL, &err);
	if (e == 0)
		e = ckpt_key_file(a.key_file, is_put, key, &err);
	if (e == 0 && (e = urs_loop_init(&loop, NULL)) < 0)
		urs_err_set(&err, e, "io_uring: %s", strerror(-e));
	if (e < 0) {
		say(is_put, "error: %s\n", err.msg);
		return 1;
	}
	/* --serve: ranges of up to URS_REMOTE_SERVE_MAXN chunks, as the pager
	 * asks, and buffers for faults' chunks of their own */
	struct urs_remote_opts ro = {.part_chunks = a.serve ? URS_REMOTE_SERVE_MAXN : 0,
				     .single_bufs = a.serve ? URS_REMOTE_SERVE_SINGLES : 0,
				     .no_inline = a.no_inline};
	e = urs_remote_open(&loop, &conf, url.bucket, url.prefix, key, &ro, &r, &err);
	if (e == 0 && is_put)
		journal(r, &a, &conf);
	explicit_bzero(&conf, sizeof(conf));
	ckpt_trace("store: client ready");
	if (e == 0)
		e = is_put ? put(r, &a, &err) : get(r, &a, key, &err);
	else
		say(is_put, "error: %s\n", err.msg);
	explicit_bzero(key, sizeof(key));
	if (e < 0 && !is_put)
		say(false, "%s", err.msg);
	urs_remote_close(r);
	urs_loop_fini(&loop);
	return e < 0 ? 1 : 0;
}
