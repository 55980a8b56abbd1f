/*
 * cmd/do.c — `ursa do [options] [--] CMD ARGS...`: run CMD in a sandbox on
 * the host's root, like `runsc do`: the host's / read-only under a private
 * writable overlay (upper layer on a tmpfs that dies with the sandbox), a
 * fresh /proc, a minimal /dev, a private /tmp, Docker's default seccomp
 * profile and capability set; a cgroup only when --memory/--pids-limit ask
 * for limits. No bundle: the config is built here as
 * config.json text and goes through the same parser and launcher as
 * `ursa run`. CMD is not pid 1: a minimal init forks it, forwards signals
 * and reaps (host/init.c), so it ends on SIGINT/SIGTERM/SIGHUP as on the
 * host. Exit status is CMD's, 128 + N when it died of signal N.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/layer.h"
#include "cmd/cli.h"
#include "cmd/cmd.h"
#include "host/init.h"
#include "host/seccomp_bpf.h"
#include "runtime/common.h"

#define SCRATCH "/run/ursa/.do"

int urs_wait_forwarding(pid_t sup, pid_t init);

static json_t *strs(const char *const *v)
{
	json_t *a = json_array();
	for (; *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

static json_t *mnt(const char *dest, const char *type, const char *src, const char *const *opts)
{
	return json_pack("{s:s, s:s, s:s, s:o}", "destination", dest, "type", type, "source", src,
			 "options", strs(opts));
}

/* Docker's default set without CAP_MKNOD: Docker relies on the devices
 * cgroup to make mknod harmless, and `ursa do` runs without a cgroup unless
 * limits are asked for (tests/security/do_mknod_blockdev.sh). */
static const char *const docker_caps[] = {
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_SETGID",
	"CAP_SETUID",
	"CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_RAW",
	"CAP_SYS_CHROOT",
	"CAP_AUDIT_WRITE",
	"CAP_SETFCAP",
	NULL,
};

static const char *const masked[] = {
	"/proc/asound",
	"/proc/acpi",
	"/proc/kcore",
	"/proc/keys",
	"/proc/latency_stats",
	"/proc/timer_list",
	"/proc/timer_stats",
	"/proc/sched_debug",
	"/proc/scsi",
	"/sys/firmware",
	"/sys/devices/virtual/powercap",
	NULL,
};

static const char *const readonly[] = {
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

/* The run.ursa.* annotations: the minimal init, and the network settings
 * as a bundle would carry them (docs/network.md): what `ursa restore` of a
 * registered sandbox reads. */
static json_t *annotations(bool mini_init, const char *network, const struct urs_strlist *ports,
			   const struct urs_strlist *netset)
{
	json_t *a = json_object();
	/* CMD is not pid 1: a minimal init forwards signals to it (host/init.h) */
	if (mini_init)
		json_object_set_new(a, URS_ANN_INIT, json_string("minimal"));
	if (strcmp(network, "host"))
		json_object_set_new(a, "run.ursa.network", json_string(network));
	if (ports->n) {
		char list[4096] = "";
		size_t n = 0;
		for (int k = 0; k < ports->n && n < sizeof(list); k++)
			n += (size_t) snprintf(list + n, sizeof(list) - n, "%s%s", k ? "," : "",
					       ports->v[k]);
		json_object_set_new(a, "run.ursa.ports", json_string(list));
	}
	for (int k = 0; k < netset->n; k++) {
		const char *eq = strchr(netset->v[k], '=');
		if (!eq)
			continue; /* refused before */
		char key[256];
		snprintf(key, sizeof(key), "run.ursa.network.%.*s", (int) (eq - netset->v[k]),
			 netset->v[k]);
		json_object_set_new(a, key, json_string(eq + 1));
	}
	return a;
}

/* The process: CMD as root with Docker's capabilities, no new privileges,
 * --env (a PATH and the caller's TERM unless given); NULL on a bad --env */
static json_t *do_process(const char *cwd, const struct urs_strlist *envs, char **args, int nargs,
			  struct urs_err *err)
{
	json_t *env = json_array();
	bool have_path = false, have_term = false;
	for (int i = 0; i < envs->n; i++) {
		if (!strchr(envs->v[i], '=')) {
			urs_err_set(err, -EINVAL, "do: --env %s: expected KEY=VALUE", envs->v[i]);
			json_decref(env);
			return NULL;
		}
		have_path |= !strncmp(envs->v[i], "PATH=", 5);
		have_term |= !strncmp(envs->v[i], "TERM=", 5);
		json_array_append_new(env, json_string(envs->v[i]));
	}
	if (!have_path)
		json_array_append_new(env, json_string("PATH=/usr/local/sbin:/usr/local/bin:/usr/"
						       "sbin:/usr/bin:/sbin:/bin"));
	if (!have_term && getenv("TERM")) {
		char t[128];
		snprintf(t, sizeof(t), "TERM=%s", getenv("TERM"));
		json_array_append_new(env, json_string(t));
	}
	json_t *argv = json_array();
	for (int i = 0; i < nargs; i++)
		json_array_append_new(argv, json_string(args[i]));
	json_t *caps = strs(docker_caps);
	json_t *proc = json_pack("{s:b, s:{s:i, s:i}, s:o, s:o, s:s, s:{s:O, s:O, s:O}, s:b}",
				 "terminal", 0, "user", "uid", 0, "gid", 0, "args", argv, "env",
				 env, "cwd", cwd, "capabilities", "bounding", caps, "effective",
				 caps, "permitted", caps, "noNewPrivileges", 1);
	json_decref(caps);
	return proc;
}

/* The fresh kernel file systems every sandbox gets */
static json_t *base_mounts(void)
{
	static const char *const o_proc[] = {"nosuid", "noexec", "nodev", NULL};
	static const char *const o_dev[] = {"nosuid", "strictatime", "mode=755", "size=65536k",
					    NULL};
	static const char *const o_pts[] = {"nosuid",	     "noexec",	  "newinstance",
					    "ptmxmode=0666", "mode=0620", NULL};
	static const char *const o_shm[] = {"nosuid",	 "noexec",	"nodev",
					    "mode=1777", "size=65536k", NULL};
	static const char *const o_mq[] = {"nosuid", "noexec", "nodev", NULL};
	static const char *const o_sys[] = {"nosuid", "noexec", "nodev", "ro", NULL};
	static const char *const o_tmp[] = {"nosuid", "nodev", "mode=1777", NULL};
	json_t *mounts = json_array();
	json_array_append_new(mounts, mnt("/proc", "proc", "proc", o_proc));
	json_array_append_new(mounts, mnt("/dev", "tmpfs", "tmpfs", o_dev));
	json_array_append_new(mounts, mnt("/dev/pts", "devpts", "devpts", o_pts));
	json_array_append_new(mounts, mnt("/dev/shm", "tmpfs", "shm", o_shm));
	json_array_append_new(mounts, mnt("/dev/mqueue", "mqueue", "mqueue", o_mq));
	json_array_append_new(mounts, mnt("/sys", "sysfs", "sysfs", o_sys));
	json_array_append_new(mounts, mnt("/tmp", "tmpfs", "tmpfs", o_tmp));
	return mounts;
}

/* One --volume HOST:DEST[:MODE] as a bind mount into @mounts. MODE: ro or
 * rw, and/or gofer (a mediated volume, docs/gofer.md), with quota=SIZE
 * and/or inodes=N (gofer only). */
static int volume_mount(json_t *mounts, const char *v, struct urs_err *err)
{
	char host[PATH_MAX], dest[PATH_MAX], mode[96] = "";
	const char *c1 = strchr(v, ':');
	const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || c1 == v || c1[1] != '/')
		return urs_err_set(err, -EINVAL,
				   "do: --volume %s: expected HOST:DEST[:ro][:gofer] with an "
				   "absolute DEST",
				   v);
	snprintf(host, sizeof(host), "%.*s", (int) (c1 - v), v);
	snprintf(dest, sizeof(dest), "%.*s", (int) (c2 ? c2 - c1 - 1 : (long) strlen(c1 + 1)),
		 c1 + 1);
	if (c2)
		snprintf(mode, sizeof(mode), "%s", c2 + 1);
	bool ro = false, gofer = false, bad = false;
	char quota[48] = "", inodes[48] = "";
	for (char *t = mode, *end; t && *t; t = end ? end + 1 : NULL) {
		if ((end = strchr(t, ':')))
			*end = 0;
		if (!strcmp(t, "ro") || !strcmp(t, "rw"))
			ro = !strcmp(t, "ro");
		else if (!strcmp(t, "gofer"))
			gofer = true;
		else if (!strncmp(t, "quota=", 6) && strlen(t) < 30)
			snprintf(quota, sizeof(quota), "ursa-gofer-quota=%s", t + 6);
		else if (!strncmp(t, "inodes=", 7) && strlen(t) < 30)
			snprintf(inodes, sizeof(inodes), "ursa-gofer-inodes=%s", t + 7);
		else
			bad = true;
	}
	if (bad || ((*quota || *inodes) && !gofer))
		return urs_err_set(err, -EINVAL,
				   "do: --volume %s: unknown mode (ro, rw, gofer, ro:gofer; "
				   "gofer:quota=SIZE:inodes=N)",
				   v);
	char real[PATH_MAX];
	if (!realpath(host, real))
		return urs_err_set(err, -errno, "do: --volume %s: %s: %m", v, host);
	const char *o_ro[] = {"rbind", "ro", "nosuid", "nodev", NULL};
	const char *o_rw[] = {"rbind", "rw", NULL};
	const char *o_g[8] = {"rbind", ro ? "ro" : "rw", "nosuid", "nodev", "ursa-gofer"};
	int ng = 5;
	if (*quota)
		o_g[ng++] = quota;
	if (*inodes)
		o_g[ng++] = inodes;
	o_g[ng] = NULL;
	json_array_append_new(mounts, mnt(dest, "bind", real, gofer ? o_g : (ro ? o_ro : o_rw)));
	return 0;
}

static char *build_config(bool mini_init, const char *network, const char *resolv, const char *cwd,
			  const struct urs_strlist *envs, const struct urs_strlist *vols,
			  const struct urs_strlist *ports, const struct urs_strlist *netset,
			  long long memory, int pids, char **args, int nargs, struct urs_err *err)
{
	json_t *proc = do_process(cwd, envs, args, nargs, err);
	if (!proc)
		return NULL;
	json_t *mounts = base_mounts();
	for (int i = 0; i < vols->n; i++)
		if (volume_mount(mounts, vols->v[i], err) < 0) {
			json_decref(mounts);
			json_decref(proc);
			return NULL;
		}
	if (resolv) {
		/* the sandbox's resolver is its gateway (the netstack forwards) */
		static const char *const o_resolv[] = {"bind", "ro", "nosuid", "nodev", NULL};
		json_array_append_new(mounts, mnt("/etc/resolv.conf", "bind", resolv, o_resolv));
	}
	json_t *ns = json_pack("[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}]", "type", "pid", "type",
			       "mount", "type", "ipc", "type", "uts", "type", "cgroup");
	if (strcmp(network, "host"))
		json_array_append_new(ns, json_pack("{s:s}", "type", "network"));
	json_t *cfg = json_pack(
		"{s:s, s:{s:s, s:b}, s:o, s:s, s:o, s:{s:o, s:o, s:o}, s:o}", "ociVersion", "1.0.2",
		"root", "path", "/", "readonly", 0, "process", proc, "hostname", "ursa", "mounts",
		mounts, "linux", "namespaces", ns, "maskedPaths", strs(masked), "readonlyPaths",
		strs(readonly), "annotations", annotations(mini_init, network, ports, netset));
	if (memory > 0 || pids > 0) {
		json_t *res = json_object();
		if (memory > 0)
			json_object_set_new(res, "memory", json_pack("{s:I}", "limit", memory));
		if (pids > 0)
			json_object_set_new(res, "pids", json_pack("{s:i}", "limit", pids));
		json_object_set_new(json_object_get(cfg, "linux"), "resources", res);
	}
	char *s = json_dumps(cfg, JSON_COMPACT);
	json_decref(cfg);
	return s;
}

/* @json as DIR/config.json, the registered sandbox's bundle. */
static int write_config(const char *dir, const char *json)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/config.json", dir);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t n = strlen(json);
	if (write(fd, json, n) != (ssize_t) n)
		return errno ? -errno : -EIO;
	return 0;
}

/* /run/ursa/.resolv-PID.conf naming the gateway(s); bind-mounted read-only
 * on the sandbox's /etc/resolv.conf and unlinked once the sandbox exists. */
static int write_resolv(const struct urs_netopts *o, const char *dir, char *path, size_t len)
{
#if !URSA_HAVE_NETSTACK
	(void) o;
	(void) dir;
	(void) path;
	(void) len;
	return -ENOSYS;
#else
	struct urs_net_cfg nc;
	urs_net_cfg_default(&nc);
	urs_netopts_apply(o, &nc);
	char a4[INET_ADDRSTRLEN], a6[INET6_ADDRSTRLEN], text[256];
	inet_ntop(AF_INET, &nc.gw4, a4, sizeof(a4));
	inet_ntop(AF_INET6, &nc.gw6, a6, sizeof(a6));
	int n = snprintf(text, sizeof(text),
			 "# written by ursa: the gateway forwards DNS\nnameserver %s\n", a4);
	if (nc.ipv6)
		n += snprintf(text + n, sizeof(text) - (size_t) n, "nameserver %s\n", a6);
	/* not in SCRATCH: the init mounts a tmpfs over it before binding; a
	 * registered sandbox's layer (@dir) keeps it for a restore */
	if (dir)
		snprintf(path, len, "%s/resolv.conf", dir);
	else
		snprintf(path, len, "/run/ursa/.resolv-%d.conf", (int) getpid());
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t) n) != n) {
		int r = errno ? -errno : -EIO;
		unlink(path);
		return r;
	}
	return 0;
#endif
}

/* The minimal init is a fork of ursa: a restore maps the ursa binary from
 * its host path inside the sandbox. A registered (checkpointable) sandbox
 * gets it only where the sandbox sees that path: on the host's root file
 * system (the overlay shows nothing mounted on it), not below its own fresh
 * mounts or a volume. Else CMD is pid 1, as before, and we say so. */
static bool mini_init(const char *reg_id, const struct urs_strlist *vols)
{
	if (!reg_id)
		return true;
	static const char *const fresh[] = {"/tmp/", "/dev/", "/proc/", "/sys/"};
	char exe[PATH_MAX] = "/proc/self/exe";
	struct stat se, sr;
	bool seen = realpath("/proc/self/exe", exe) && stat(exe, &se) == 0 && stat("/", &sr) == 0 &&
		    se.st_dev == sr.st_dev;
	for (size_t k = 0; seen && k < URS_ARRAY_SIZE(fresh); k++)
		seen = strncmp(exe, fresh[k], strlen(fresh[k])) != 0;
	for (int k = 0; seen && k < vols->n; k++) {
		const char *d = strchr(vols->v[k], ':'), *e = d ? strchr(d + 1, ':') : NULL;
		size_t n = d ? (e ? (size_t) (e - d - 1) : strlen(d + 1)) : 0;
		seen = !(n && !strncmp(exe, d + 1, n) && (exe[n] == '/' || n == 1));
	}
	if (!seen) {
		char msg[PATH_MAX + 300];
		snprintf(msg, sizeof(msg),
			 "do --id: the sandbox cannot see the ursa binary %s (not on the "
			 "host's root file system, or below /tmp, /dev or a volume), which "
			 "restoring the minimal init needs: the command is pid 1 instead (it "
			 "ignores signals it has no handler for)",
			 exe);
		urs_warn(msg);
	}
	return seen;
}

/* --network, -p, --net into @net: 0, or 125 (said why) */
static int do_netopts(struct urs_netopts *net, const char *network, const struct urs_strlist *ports,
		      const struct urs_strlist *netset)
{
	struct urs_err err = {{0}};
	urs_netopts_default(net);
	if (urs_netopts_mode(net, network, &err) < 0) {
		urs_error("do: --%s", err.msg);
		return 125;
	}
	for (int k = 0; k < ports->n; k++)
		if (urs_netopts_forward(net, ports->v[k], &err) < 0) {
			urs_error("do: -p: %s", err.msg);
			return 125;
		}
	for (int k = 0; k < netset->n; k++) {
		char kv[256];
		snprintf(kv, sizeof(kv), "%s", netset->v[k]);
		char *eq = strchr(kv, '=');
		if (!eq) {
			urs_error("do: --net %s: expected KEY=VALUE", netset->v[k]);
			return 125;
		}
		*eq = 0;
		if (urs_netopts_set(net, kv, eq + 1, &err) < 0) {
			urs_error("do: --net: %s", err.msg);
			return 125;
		}
	}
	if ((ports->n || netset->n) && net->mode != URS_NET_SANDBOX) {
		urs_error("do: %s needs --network sandbox", ports->n ? "-p" : "--net");
		return 125;
	}
	return 0;
}

/* The current directory, if the sandbox can see it: the overlay shows the
 * host's root file system only, not what is mounted on it (/tmp, /run,
 * other disks), so elsewhere start at "/". */
static const char *default_cwd(char *here, size_t len, const struct urs_strlist *vols)
{
	struct stat cur, root;
	const char *cwd = getcwd(here, len) && stat(".", &cur) == 0 && stat("/", &root) == 0 &&
					  cur.st_dev == root.st_dev
				  ? here
				  : "/";
	/* nor below the sandbox's own fresh mounts */
	static const char *const fresh[] = {"/tmp/", "/dev/", "/proc/", "/sys/"};
	for (size_t k = 0; k < URS_ARRAY_SIZE(fresh); k++)
		if (!strncmp(cwd, fresh[k], strlen(fresh[k])))
			cwd = "/";
	/* nor inside a gofer volume (the init cannot enter it: docs/gofer.md) */
	for (int k = 0; k < vols->n; k++) {
		const char *d = strchr(vols->v[k], ':'), *e = d ? strchr(d + 1, ':') : NULL;
		size_t n = d ? (e ? (size_t) (e - d - 1) : strlen(d + 1)) : 0;
		while (n > 1 && d[n] == '/')
			n--;
		if (e && strstr(e, "gofer") && n && !strncmp(cwd, d + 1, n) &&
		    (cwd[n] == '/' || !cwd[n] || n == 1))
			cwd = "/";
	}
	return cwd;
}

/* Where the writable layer goes: with --id, registered under the state
 * root on a tmpfs the host sees (ckpt/layer.c), so that it can be
 * checkpointed; else SCRATCH. 0 or 125 (said why). */
static int prepare_scratch(const char *reg_id, char *scratch, size_t len)
{
	struct urs_err err = {{0}};
	if (reg_id) {
		if (urs_id_valid(reg_id, &err) < 0) {
			urs_error("do: --id: %s", err.msg);
			return 125;
		}
		if (ckpt_layer_make(G.root, reg_id, true, scratch, len, &err) < 0) {
			urs_error("%s", err.msg);
			return 125;
		}
		return 0;
	}
	mkdir("/run/ursa", 0711);
	if (mkdir(SCRATCH, 0700) < 0 && errno != EEXIST) {
		urs_error("do: creating %s: %s", SCRATCH, strerror(errno));
		return 125;
	}
	return 0;
}

struct do_run_args {
	const char *reg_id, *scratch;
	char *resolv; /* the resolv.conf written for it (unlinked once mounted) */
	struct urs_netopts *net;
	long long mem;
	int pids;
	bool no_prewarm;
};

/* The sandbox of @spec under Docker's default seccomp profile, waited for:
 * CMD's exit status (125 if it could not be made) */
static int do_run(struct urs_spec *spec, const struct do_run_args *d)
{
	struct urs_err err = {{0}};
	/* Docker's default profile, compiled when ursa was built */
	struct urs_bpf filter = {
		.prog = {.len = urs_default_bpf_len,
			 .filter = (struct sock_filter *) urs_default_bpf},
	};
	/* counted denials: opt-in here (URSA_SECCOMP_COUNT=1), as nothing can
	 * scrape a `do` sandbox's metrics yet and counting slows denied calls */
	const char *cnt = getenv("URSA_SECCOMP_COUNT");
	bool count = cnt && !strcmp(cnt, "1");
	if (count)
		filter.prog =
			(struct sock_fprog){.len = urs_default_count_bpf_len,
					    .filter = (struct sock_filter *) urs_default_count_bpf};
	char id[64];
	snprintf(id, sizeof(id), "do-%d", (int) getpid());
	struct urs_sandbox_opts o = {
		.root = d->reg_id ? G.root : NULL,
		.id = d->reg_id ? d->reg_id : id,
		.bundle = d->reg_id ? d->scratch : NULL,
		.spec = spec,
		.overlay_scratch = d->scratch,
		.overlay_prepared = d->reg_id != NULL,
		.autostart = true,
		.no_prewarm = d->no_prewarm,
		/* Without limits there is nothing a cgroup adds: the pid namespace
		 * takes every process down with CMD. Creating one costs a cgroup
		 * migration (an RCU grace period when cold: 8-36 ms here). A
		 * registered sandbox has one: its checkpoint freezes it. */
		.no_cgroup = !d->mem && !d->pids && !d->reg_id,
		.seccomp = &filter,
		.load_seccomp = urs_bpf_load_hook,
		.seccomp_notify = count,
		.load_seccomp_notify = urs_bpf_load_notify_hook,
		.seccomp_count = count ? &urs_default_denials : NULL,
		.profile = G.profile,
		.net = d->net,
	};
	struct urs_state st;
	pid_t sup;
	int r = urs_sandbox_create(&o, &sup, &st, &err);
	if (*d->resolv && !d->reg_id)
		unlink(d->resolv); /* mounted in the sandbox by now (or not needed) */
	*d->resolv = 0;
	if (r < 0) {
		urs_error("%s", err.msg);
		return 125;
	}
	int rc = urs_wait_forwarding(sup, st.pid);
	if (!d->reg_id) {
		urs_sandbox_cgroup_remove(st.cgroup);
	} else {
		/* a checkpoint that ended it deletes it itself, under the lock of
		 * the record's directory: wait for that, then there is no record */
		char sdir[PATH_MAX];
		urs_state_path(sdir, sizeof(sdir), G.root, d->reg_id, NULL);
		_cleanup_close_ int lk = open(sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lk >= 0 && flock(lk, LOCK_EX) == 0 &&
		    urs_container_delete(d->reg_id, true, &err) < 0)
			urs_debug("do: deleting %s: %s", d->reg_id, err.msg);
	}
	urs_state_clear(&st);
	return rc;
}

int cmd_do(int argc, char **argv)
{
	int r;
	const char *network = "sandbox", *cwd = NULL, *memory = NULL, *reg_id = NULL;
	int pids = 0;
	struct urs_strlist envs = {0}, vols = {0}, ports = {0}, netset = {0};
	bool no_prewarm = getenv("URSA_BENCH_NO_PREWARM") != NULL;
	const struct urs_opt opts[] = {
		{"network", 0, URS_OPT_STR, &network,
		 "sandbox (default: a NIC served by the supervisor), none (lo only) or host"},
		{"publish", 'p', URS_OPT_LIST, &ports,
		 "[HOSTIP:]HOSTPORT:SANDBOXPORT[/tcp|udp] port forward (repeatable)"},
		{"net", 0, URS_OPT_LIST, &netset,
		 "KEY=VALUE network setting (repeatable): ipv4=A.B.C.D/N, ipv6=X::/N, "
		 "allow=CIDR[,CIDR], max-flows=N (docs/network.md)"},
		{"cwd", 0, URS_OPT_STR, &cwd, "working directory (default: the current one)"},
		{"env", 'e', URS_OPT_LIST, &envs, "KEY=VALUE (repeatable)"},
		{"volume", 'v', URS_OPT_LIST, &vols,
		 "HOST:DEST[:ro][:gofer[:quota=SIZE][:inodes=N]] bind mount, or with gofer a FUSE "
		 "volume served by the "
		 "supervisor (repeatable)"},
		{"memory", 'm', URS_OPT_STR, &memory,
		 "memory limit in bytes (puts it in a cgroup)"},
		{"pids-limit", 0, URS_OPT_INT, &pids, "pid limit (puts it in a cgroup)"},
		{"id", 0, URS_OPT_STR, &reg_id,
		 "register the sandbox as ID: state, kill, exec, checkpoint work on it "
		 "(its writable layer then lives in ROOT/.do/ID)"},
		{NULL, 0, 0, NULL, NULL},
	};
	int i = urs_parse("do", "[options] [--] CMD [ARGS...]", argc, argv, opts);
	if (i < 0)
		return i == -2 ? 0 : 125;
	if (i >= argc) {
		urs_error(
			"do: missing the command to run (usage: ursa do [options] -- CMD ARGS...)");
		return 125;
	}
	static struct urs_netopts net;
	if (do_netopts(&net, network, &ports, &netset))
		return 125;
	char here[PATH_MAX];
	if (!cwd)
		cwd = default_cwd(here, sizeof(here), &vols);
	if (cwd[0] != '/') {
		urs_error("do: --cwd %s: must be absolute", cwd);
		return 125;
	}
	long long mem = 0;
	char *end;
	if (memory && ((mem = strtoll(memory, &end, 10)) <= 0 || *end)) {
		urs_error("do: --memory %s: expected a positive number of bytes", memory);
		return 125;
	}
	char scratch[PATH_MAX] = SCRATCH;
	if (prepare_scratch(reg_id, scratch, sizeof(scratch)))
		return 125;
	int rc = 125;
	struct urs_spec *spec = NULL;
	struct urs_err err = {{0}};
	char resolv[PATH_MAX] = "";
	if (net.mode == URS_NET_SANDBOX &&
	    (r = write_resolv(&net, reg_id ? scratch : NULL, resolv, sizeof(resolv))) < 0) {
		urs_error("do: writing the sandbox's resolv.conf: %s", strerror(-r));
		goto out;
	}
	char *json =
		build_config(mini_init(reg_id, &vols), network, *resolv ? resolv : NULL, cwd, &envs,
			     &vols, &ports, &netset, mem, pids, argv + i, argc - i, &err);
	if (!json) {
		urs_error("%s", err.msg);
		goto out;
	}
	r = urs_spec_parse(json, strlen(json), &spec, &err);
	if (r == 0 && reg_id && (r = write_config(scratch, json)) < 0)
		urs_err_set(&err, r, "do: writing %s/config.json: %s", scratch, strerror(-r));
	free(json);
	if (r < 0) {
		urs_error("%s", err.msg);
		goto out;
	}
	rc = do_run(spec, &(struct do_run_args){.reg_id = reg_id,
						.scratch = scratch,
						.resolv = resolv,
						.net = &net,
						.mem = mem,
						.pids = pids,
						.no_prewarm = no_prewarm});
out:
	if (*resolv && !reg_id)
		unlink(resolv);
	if (reg_id)
		ckpt_layer_remove(G.root, reg_id, NULL);
	urs_spec_free(spec);
	return rc;
}
