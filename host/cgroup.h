/*
 * host/cgroup.h — cgroups of one sandbox: where they go, creating and
 * removing them, moving processes in, limits (OCI linux.resources), freeze,
 * kill, pids and stats, on unified (cgroup2 only), hybrid (v1 controllers +
 * cgroup2 at /sys/fs/cgroup/unified) and legacy (v1 only) hosts.
 *
 * Placement (what runc's cgroupfs driver does):
 *   - relative or empty cgroupsPath: beneath the CALLER's own cgroup in each
 *     hierarchy (from /proc/<caller>/cgroup), default name "ursa/<id>". On a
 *     unified host the v2 cgroup goes beneath the PARENT of the caller's
 *     cgroup, as runc does: the caller's own cgroup holds processes, so the
 *     "no internal processes" rule would forbid enabling controllers in it.
 *   - absolute cgroupsPath: that path inside each hierarchy, as-is (not
 *     nested under the caller), like runc.
 *   - never a hierarchy's root itself.
 * systemd-style "slice:prefix:name" paths are not interpreted (no systemd
 * driver); they are taken as a relative path.
 *
 * Every fallible function returns a negative errno and, when err is given,
 * a message naming the file and value, e.g.
 *   cgroup: writing "-5" to cpu.cfs_quota_us: Invalid argument
 */
#ifndef URSA_HOST_CGROUP_H
#define URSA_HOST_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/err.h"

enum urs_cg_mode {
	URS_CG_LEGACY = 1, /* v1 controllers only */
	URS_CG_HYBRID = 2, /* v1 controllers + cgroup2 at /sys/fs/cgroup/unified */
	URS_CG_UNIFIED = 3 /* cgroup2 at /sys/fs/cgroup */
};

/* The mode of this host (cached), or -ENOENT when no cgroup fs is mounted. */
int urs_cg_mode(void);

/* Hierarchies a sandbox may live in. URS_CG_V2 is the cgroup2 hierarchy
 * (the only one on unified hosts, the controller-less one on hybrid hosts). */
enum urs_cg_hier {
	URS_CG_MEMORY,
	URS_CG_PIDS,
	URS_CG_CPU,
	URS_CG_CPUACCT,
	URS_CG_CPUSET,
	URS_CG_FREEZER,
	URS_CG_DEVICES,
	URS_CG_BLKIO,
	URS_CG_SYSTEMD, /* the named v1 hierarchy "name=systemd", where a host has it */
	URS_CG_V2,
	URS_CG_NHIER
};

#define URS_CG_PATH_MAX 512
/* Enough for urs_cg_to_string() of any cgroup. */
#define URS_CG_STRING_MAX (32 + URS_CG_NHIER * (URS_CG_PATH_MAX + 16))

struct urs_cg_dir {
	char path[URS_CG_PATH_MAX]; /* absolute directory, "" = hierarchy not used */
	uint8_t created;	    /* trailing path levels urs_cg_create made */
	int8_t alias;		    /* co-mounted with this earlier hierarchy, or -1 */
	int fd;			    /* cached O_DIRECTORY fd, -1 = not open */
};

/*
 * One sandbox's cgroups. Filled by urs_cg_create() or urs_cg_from_string();
 * it caches directory fds, so release it with urs_cg_close() (or
 * urs_cg_destroy()), and do not copy it by value while fds are open.
 */
struct urs_cgroup {
	int mode; /* enum urs_cg_mode */
	struct urs_cg_dir h[URS_CG_NHIER];
};

/* Name of a hierarchy ("memory", ..., "unified"). */
const char *urs_cg_hier_name(enum urs_cg_hier h);

/*
 * Compute the paths and create the directories (mkdir -p), remembering
 * which levels were new. @cgroups_path: NULL/"" (→ "ursa/<id>"), relative or
 * absolute. @caller: whose cgroup relative paths nest under (0 = self).
 * New cpuset levels get cpuset.cpus/mems from their parent; on unified
 * hosts the needed controllers are enabled in the ancestors'
 * cgroup.subtree_control. An existing leaf is joined only if empty
 * (-EBUSY otherwise). On failure nothing created is left behind.
 */
int urs_cg_create(struct urs_cgroup *cg, const char *cgroups_path, const char *id, pid_t caller,
		  struct urs_err *err);

/**
 * urs_cg_create_over() - urs_cg_create(), over a killed predecessor's cgroups
 * @cg: filled as by urs_cg_create()
 * @cgroups_path: as for urs_cg_create()
 * @id: as for urs_cg_create()
 * @caller: as for urs_cg_create()
 * @prev: the predecessor's cgroups (urs_cg_from_string() of its record,
 *        host/teardown.h), or NULL: urs_cg_create() itself
 * @adopt: join them as they are (else remove them first, once its tasks
 *         are gone: urs_cg_destroy(), ~1 s at most)
 * @err: what failed, and where
 *
 * Only when every directory is the one @prev names. Adopted, those still
 * there, busy with its exiting tasks, are joined and become ours with the
 * levels it had made (urs_cg_destroy() removes them with ours); a freezer
 * it left set is thawed.
 * Return: 0; -EXDEV (nothing made, nothing removed) when @prev names other
 * directories; another negative errno as urs_cg_create().
 */
int urs_cg_create_over(struct urs_cgroup *cg, const char *cgroups_path, const char *id,
		       pid_t caller, struct urs_cgroup *prev, bool adopt, struct urs_err *err);

/**
 * urs_cg_adoptable() - may a new sandbox join these busy cgroups as they are
 * @cg: a killed predecessor's cgroups
 *
 * Not if any of them holds a cgroup of its own (a sandbox with a writable
 * cgroup namespace made it; v2: its init could not be cloned in), or
 * enables controllers for its children, or counts an OOM kill (a client
 * watching the count would report one the new sandbox never had). Every
 * directory must still be there.
 * Return: true if it may.
 */
bool urs_cg_adoptable(struct urs_cgroup *cg);

/* The caller's own cgroups in @cg's v1 hierarchies (paths only, nothing
 * created), to move back there with urs_cg_enter_self_v1(). */
int urs_cg_home_v1(struct urs_cgroup *home, const struct urs_cgroup *cg, struct urs_err *err);

/* Move @pid into every hierarchy (cgroup.procs: takes the kernel's global
 * migration lock, i.e. an RCU grace period when it was idle; see cgroup.c). */
int urs_cg_enter(struct urs_cgroup *cg, pid_t pid, struct urs_err *err);

/**
 * urs_cg_enter_only() - move @pid (all its threads) into the hierarchies
 *                       of @cg in @hiers only
 * @cg: the cgroup
 * @pid: the process
 * @hiers: bits 1 << enum urs_cg_hier (one co-mounted with an earlier one
 *         moves with it)
 * @err: what failed
 *
 * cgroup.procs writes: the kernel's global migration lock, as urs_cg_enter.
 *
 * Return: 0 or a negative errno.
 */
int urs_cg_enter_only(struct urs_cgroup *cg, pid_t pid, unsigned hiers, struct urs_err *err);

/* Move the calling process into every v1 hierarchy of @cg, each by
 * writing "0" to its tasks file: a self-migration the kernel does without
 * the global lock. The caller must be single-threaded (-EBUSY otherwise,
 * nothing moved). The v2 hierarchy is left out: children go there with
 * clone3(CLONE_INTO_CGROUP, urs_cg_open_v2()), or urs_cg_enter_v2(). */
int urs_cg_enter_self_v1(struct urs_cgroup *cg, struct urs_err *err);
/* The same for the hierarchies in @hiers only (bit 1 << enum urs_cg_hier;
 * one co-mounted with an earlier one moves with it). */
int urs_cg_enter_self_v1_only(struct urs_cgroup *cg, unsigned hiers, struct urs_err *err);

/**
 * urs_cg_enter_thread_v1() - move the calling thread alone into the v1
 *                            hierarchies of @cg in @hiers
 * @cg: the cgroup
 * @hiers: bits 1 << enum urs_cg_hier
 * @err: what failed
 *
 * "0" to each tasks file: no global lock, other threads stay where they
 * are. For the memory controller that is enough when the caller is the
 * thread-group leader: v1 charges an address space to its owner's cgroup
 * and the OOM killer walks thread-group leaders.
 *
 * Return: 0 or a negative errno.
 */
int urs_cg_enter_thread_v1(struct urs_cgroup *cg, unsigned hiers, struct urs_err *err);

/* Move @pid into the v2 hierarchy only (cgroup.procs); 0 if there is none. */
int urs_cg_enter_v2(struct urs_cgroup *cg, pid_t pid, struct urs_err *err);

/* A new O_DIRECTORY|O_CLOEXEC fd of the v2 cgroup for clone3(CLONE_INTO_CGROUP)
 * (unified and hybrid hosts; -ENOENT when the cgroup has no v2 hierarchy). */
int urs_cg_open_v2(struct urs_cgroup *cg, struct urs_err *err);

/* Is @pid (a process) in the v2 cgroup? false when unknown. */
bool urs_cg_v2_has(struct urs_cgroup *cg, pid_t pid);

/*
 * Resources, with runc's conventions: 0 means "not set" for every number
 * except where noted; -1 means unlimited.
 */
struct urs_cg_device {
	bool allow;
	char type;	/* 'a', 'b' or 'c' */
	int64_t major;	/* -1 = any */
	int64_t minor;	/* -1 = any */
	char access[4]; /* subset of "rwm", NUL-terminated */
};

struct urs_cg_kv {
	const char *key; /* a file name in the v2 cgroup, no '/' */
	const char *value;
};

/* One device of linux.resources.blockIO: a weight, leaf weight or rate */
struct urs_cg_blkio_dev {
	int64_t major;
	int64_t minor;
	uint64_t value;
};

/* blockIO throttle lists, in this order */
enum { URS_CG_THR_RBPS, URS_CG_THR_WBPS, URS_CG_THR_RIOPS, URS_CG_THR_WIOPS, URS_CG_THR__N };

struct urs_cg_hugepage {
	const char *page_size; /* "2MB", "1GB" (OCI pageSize, as in the file names) */
	uint64_t limit;	       /* bytes */
};

struct urs_cg_resources {
	int64_t mem_limit;	 /* bytes, -1 = unlimited */
	int64_t mem_reservation; /* soft limit (v1) / memory.low (v2) */
	int64_t mem_swap;	 /* memory+swap (OCI/v1 semantics), -1 = unlimited */
	int64_t mem_swappiness;	 /* 0..100; -1 = not set (0 is a value) */
	bool disable_oom_killer; /* v1 only */
	int64_t pids_limit;	 /* -1 (any negative) = max */
	uint64_t cpu_shares;	 /* v1 cpu.shares; v2 cpu.weight via runc's conversion */
	int64_t cpu_quota;	 /* us per period, -1 = no quota */
	uint64_t cpu_period;	 /* us */
	const char *cpus;	 /* cpuset, NULL = not set */
	const char *mems;
	const struct urs_cg_device *devices; /* v1 only; skipped on v2 (needs eBPF) */
	size_t n_devices;
	const struct urs_cg_kv *unified; /* v2 only (unified hosts), written last */
	size_t n_unified;
	/* Below: refused, naming the linux.resources field, where this host
	 * cannot apply them (no controller, no such file), never dropped. */
	int64_t mem_kernel;	/* memory.kmem (v1 only) if > 0; the kernel must keep it */
	int64_t mem_kernel_tcp; /* memory.kmem.tcp (v1 only), -1 = unlimited */
	bool has_cpu_burst, has_cpu_idle;
	uint64_t cpu_burst;	/* us */
	int64_t cpu_idle;	/* 0 or 1 */
	int64_t cpu_rt_runtime; /* us, v1 only */
	uint64_t cpu_rt_period; /* us, v1 only */
	uint16_t blkio_weight;	/* 10..1000 */
	uint16_t blkio_leaf_weight;
	const struct urs_cg_blkio_dev *blkio_weight_dev, *blkio_leaf_weight_dev;
	size_t n_blkio_weight_dev, n_blkio_leaf_weight_dev;
	const struct urs_cg_blkio_dev *blkio_throttle[URS_CG_THR__N];
	size_t n_blkio_throttle[URS_CG_THR__N];
	const struct urs_cg_hugepage *hugepages;
	size_t n_hugepages;
	bool has_net_classid; /* net_cls and net_prio: no hierarchy ursa uses */
	uint32_t net_classid;
	size_t n_net_prio;
	bool rdma; /* linux.resources.rdma (not supported) */
};

/* A struct urs_cg_resources with nothing set. */
#define URS_CG_RESOURCES_INIT        \
	{                            \
		.mem_swappiness = -1 \
	}

/* Write the limits. Also serves `ursa update`. */
int urs_cg_apply(struct urs_cgroup *cg, const struct urs_cg_resources *r, struct urs_err *err);
#define urs_cg_update urs_cg_apply

/* v2 cpu.weight for v1 cpu.shares (runc's linear map [2, 262144] → [1, 10000]). */
uint64_t urs_cg_shares_to_weight(uint64_t shares);

/**
 * urs_cg2_freeze_write() - write cgroup.freeze of a cgroup v2 directory
 * @dir: the cgroup's directory
 * @frozen: freeze (true) or thaw
 * @err: what failed
 *
 * Does not wait: urs_cg2_wait_frozen() does (a checkpoint does work between).
 *
 * Return: 0 or a negative errno.
 */
int urs_cg2_freeze_write(const char *dir, bool frozen, struct urs_err *err);

/**
 * urs_cg2_wait_frozen() - wait (≤ 10 s) until cgroup.events says frozen
 * @dir: the cgroup's directory
 * @err: what failed
 *
 * Woken by cgroup.events' POLLPRI, and by a short timeout growing from 50 us
 * to 1 ms (the kernel delays notifications of one file by up to 10 ms).
 *
 * Return: 0, -ETIMEDOUT, or another negative errno.
 */
int urs_cg2_wait_frozen(const char *dir, struct urs_err *err);

/**
 * urs_cg2_freeze() - freeze (and wait) or thaw a cgroup v2 directory
 * @dir: the cgroup's directory
 * @frozen: freeze or thaw (a thaw returns at once)
 * @err: what failed
 *
 * Return: 0 or a negative errno.
 */
int urs_cg2_freeze(const char *dir, bool frozen, struct urs_err *err);

/**
 * urs_cg2_frozen_already() - is @dir frozen or freezing (by its own
 *                            cgroup.freeze, or an ancestor's)?
 * @dir: the cgroup's directory (unreadable counts as frozen: not touched)
 */
bool urs_cg2_frozen_already(const char *dir);

/* Freeze or thaw, waiting (≤ 2 s) until the kernel reports the state.
 * v1 freezer when present, else cgroup2 cgroup.freeze (urs_cg2_freeze). */
int urs_cg_freeze(struct urs_cgroup *cg, bool frozen, struct urs_err *err);
/* 1 frozen, 0 not (thawed or still freezing), or negative errno. */
int urs_cg_is_frozen(struct urs_cgroup *cg, struct urs_err *err);

/* Every pid in the cgroup and its sub-cgroups; *pids is malloc'd (free it). */
int urs_cg_pids(struct urs_cgroup *cg, pid_t **pids, size_t *n, struct urs_err *err);

/* Signal every process. SIGKILL uses cgroup.kill where it exists (hybrid
 * and unified) and thaws a paused sandbox so the kill lands; otherwise
 * freeze, signal each pid, thaw (so nothing forks its way out). A paused
 * sandbox stays paused for other signals (delivered on resume). */
int urs_cg_kill_all(struct urs_cgroup *cg, int sig, struct urs_err *err);

/* Remove the directories urs_cg_create made (sub-cgroups first, leaf, then
 * the new parents still empty), retrying ≤ 1 s on EBUSY while processes
 * exit. Kills nothing. Idempotent. Closes cached fds. */
int urs_cg_destroy(struct urs_cgroup *cg, struct urs_err *err);
/* The same, one attempt per directory, no waiting: true if all are gone
 * (else what is left stays for urs_cg_destroy). */
bool urs_cg_destroy_now(struct urs_cgroup *cg);

/* Close cached fds, leave the cgroups alone. */
void urs_cg_close(struct urs_cgroup *cg);

/* Unavailable values read as 0; an unlimited limit as UINT64_MAX (v2 "max")
 * or the kernel's v1 number. */
struct urs_cg_stats {
	uint64_t mem_usage;
	uint64_t mem_max_usage;
	uint64_t mem_limit;
	uint64_t cpu_usage_ns;
	uint64_t pids_current;
};

int urs_cg_stats(struct urs_cgroup *cg, struct urs_cg_stats *st, struct urs_err *err);

/*
 * One line for the state file: "mode=hybrid;memory=2:/sys/fs/cgroup/...;..."
 * (name=created-levels:path per hierarchy in use). Returns its length or
 * -ENOSPC. from_string leaves fds closed.
 */
int urs_cg_to_string(const struct urs_cgroup *cg, char *buf, size_t len);
int urs_cg_from_string(struct urs_cgroup *cg, const char *s, struct urs_err *err);

#endif
