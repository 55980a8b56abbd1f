/*
 * host/spec.h — the OCI runtime-spec (1.0–1.2) config.json as a plain C struct.
 *
 * urs_spec_parse()/urs_spec_load() validate a bundle's config.json and turn it
 * into struct urs_spec, which is all the rest of ursa looks at: no jansson
 * types leak out. Every string and array lives in one arena owned by the spec
 * (a handful of allocations in total) and urs_spec_free() releases it all.
 * String arrays (args, env, ...) are also NULL-terminated so they can go
 * straight to execve(). Optional scalars come with a has_* flag.
 * Errors name the JSON path of the offending field, e.g.
 *   config.json: linux.namespaces[2].type: unknown namespace type "foo" (...)
 */
#ifndef URSA_HOST_SPEC_H
#define URSA_HOST_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/err.h"

struct urs_kv {
	char *key;
	char *value;
};

/* ---- mounts ---- */

struct urs_idmap {
	uint32_t container_id;
	uint32_t host_id;
	uint32_t size;
};

/* "ursa-gofer" volumes a spec may have (docs/gofer.md) */
#define URS_GOFER_MAX 16

struct urs_mount {
	char *destination;
	char *type;	/* NULL if absent */
	char *source;	/* NULL if absent */
	char **options; /* raw options, NULL-terminated */
	size_t n_options;
	unsigned long flags;	   /* MS_* to set (MS_BIND, MS_REC, MS_RDONLY, MS_NOSUID, ...) */
	unsigned long clear_flags; /* MS_* explicitly cleared ("rw", "suid", "dev", ...) */
	unsigned long
		propagation;   /* MS_PRIVATE/MS_SHARED/MS_SLAVE/MS_UNBINDABLE [| MS_REC], or 0 */
	uint64_t rec_attr_set; /* MOUNT_ATTR_* from "rro", "rnosuid", ... (mount_setattr) */
	uint64_t rec_attr_clr; /* MOUNT_ATTR_* from "rrw", "rsuid", ... */
	char *data;	/* leftover options joined by ',' ("mode=755,size=65536k"), or NULL */
	bool tmpcopyup; /* "tmpcopyup" seen (crun extension; ursa ignores it) */
	/* "ursa-gofer" (bind mounts only): a mediated volume, a FUSE mount
	 * served by the supervisor's gofer instead of a bind (docs/gofer.md) */
	bool gofer;
	/* "ursa-gofer-quota=SIZE" / "ursa-gofer-inodes=N": the volume's quotas
	 * (docs/gofer.md "Quotas"), 0 = none */
	uint64_t gofer_quota_bytes, gofer_quota_inodes;
	struct urs_idmap *uid_mappings; /* idmapped mounts (runtime-spec 1.1) */
	size_t n_uid_mappings;
	struct urs_idmap *gid_mappings;
	size_t n_gid_mappings;
};

/* ---- process ---- */

struct urs_rlimit {
	int resource; /* RLIMIT_* */
	uint64_t hard;
	uint64_t soft;
};

struct urs_caps {
	uint64_t bounding;
	uint64_t effective;
	uint64_t inheritable;
	uint64_t permitted;
	uint64_t ambient;
	bool present; /* process.capabilities was given */
};

struct urs_user {
	uint32_t uid;
	uint32_t gid;
	bool has_umask;
	uint32_t umask;
	uint32_t *additional_gids;
	size_t n_additional_gids;
};

struct urs_process {
	bool terminal;
	bool has_console_size;
	uint32_t console_height;
	uint32_t console_width;
	struct urs_user user;
	char **args; /* non-empty, NULL-terminated */
	size_t n_args;
	char **env; /* NULL-terminated (an empty array if absent) */
	size_t n_env;
	char *cwd; /* absolute */
	struct urs_caps caps;
	struct urs_rlimit *rlimits;
	size_t n_rlimits;
	bool no_new_privileges;
	bool has_oom_score_adj;
	int32_t oom_score_adj;	/* -1000..1000 */
	char *apparmor_profile; /* refused where the host has no AppArmor */
	char *selinux_label;	/* refused where the host has no SELinux */
};

/* ---- hooks ---- */

enum urs_hook_kind {
	URS_HOOK_PRESTART,
	URS_HOOK_CREATE_RUNTIME,
	URS_HOOK_CREATE_CONTAINER,
	URS_HOOK_START_CONTAINER,
	URS_HOOK_POSTSTART,
	URS_HOOK_POSTSTOP,
	URS_HOOK__COUNT,
};

struct urs_hook {
	char *path;  /* absolute */
	char **args; /* NULL-terminated, may be empty */
	size_t n_args;
	char **env;
	size_t n_env;
	bool has_timeout;
	uint32_t timeout; /* seconds, > 0 */
};

struct urs_hook_list {
	struct urs_hook *v;
	size_t n;
};

/* ---- linux ---- */

enum urs_ns_type {
	URS_NS_PID,
	URS_NS_NETWORK,
	URS_NS_MOUNT,
	URS_NS_IPC,
	URS_NS_UTS,
	URS_NS_USER,
	URS_NS_CGROUP,
	URS_NS_TIME,
	URS_NS__COUNT,
};

struct urs_namespace {
	enum urs_ns_type type;
	char *path; /* join this namespace; NULL = create a new one */
};

struct urs_device {
	char type; /* 'c', 'b', 'u' or 'p' */
	char *path;
	int64_t major; /* -1 for 'p' */
	int64_t minor;
	bool has_file_mode;
	uint32_t file_mode;
	bool has_uid;
	uint32_t uid;
	bool has_gid;
	uint32_t gid;
};

struct urs_dev_rule {
	bool allow;
	char type;	/* 'a', 'c' or 'b' ('a' if absent) */
	int64_t major;	/* -1 = wildcard */
	int64_t minor;	/* -1 = wildcard */
	char access[4]; /* subset of "rwm", NUL-terminated ("rwm" if absent) */
};

struct urs_hugepage_limit {
	char *page_size;
	uint64_t limit;
};

/* linux.resources.blockIO weightDevice (weight, leafWeight) and the
 * throttle*Device lists (rate) */
struct urs_blkio_device {
	int64_t major;
	int64_t minor;
	bool has_weight, has_leaf_weight;
	uint16_t weight, leaf_weight;
	uint64_t rate;
};

enum urs_blkio_throttle {
	URS_THROTTLE_READ_BPS,
	URS_THROTTLE_WRITE_BPS,
	URS_THROTTLE_READ_IOPS,
	URS_THROTTLE_WRITE_IOPS,
	URS_THROTTLE__COUNT,
};

struct urs_net_prio {
	char *name;
	uint32_t priority;
};

struct urs_resources {
	struct {
		bool has_limit, has_reservation, has_swap, has_kernel, has_kernel_tcp,
			has_swappiness;
		int64_t limit, reservation, swap, kernel, kernel_tcp;
		uint64_t swappiness; /* 0..100 */
		bool disable_oom_killer;
	} memory;
	struct {
		bool has_shares, has_quota, has_burst, has_period, has_rt_runtime, has_rt_period,
			has_idle;
		uint64_t shares, burst, period, rt_period;
		int64_t quota, rt_runtime, idle;
		char *cpus; /* NULL if absent */
		char *mems;
	} cpu;
	struct {
		bool has_limit;
		int64_t limit;
	} pids;
	struct urs_dev_rule *devices;
	size_t n_devices;
	struct {
		bool has_weight, has_leaf_weight;
		uint16_t weight, leaf_weight;
		struct urs_blkio_device *weight_devices;
		size_t n_weight_devices;
		struct urs_blkio_device *throttle[URS_THROTTLE__COUNT];
		size_t n_throttle[URS_THROTTLE__COUNT];
	} block_io;
	struct urs_hugepage_limit *hugepage_limits;
	size_t n_hugepage_limits;
	struct {
		bool has_class_id;
		uint32_t class_id;
		struct urs_net_prio *priorities;
		size_t n_priorities;
	} network;
	bool has_rdma; /* linux.resources.rdma given, not empty */
	struct urs_kv *unified;
	size_t n_unified;
};

enum urs_scmp_action {
	URS_SCMP_ACT_KILL,
	URS_SCMP_ACT_KILL_PROCESS,
	URS_SCMP_ACT_KILL_THREAD,
	URS_SCMP_ACT_TRAP,
	URS_SCMP_ACT_ERRNO,
	URS_SCMP_ACT_TRACE,
	URS_SCMP_ACT_ALLOW,
	URS_SCMP_ACT_LOG,
	URS_SCMP_ACT_NOTIFY,
};

enum urs_scmp_op {
	URS_SCMP_CMP_NE,
	URS_SCMP_CMP_LT,
	URS_SCMP_CMP_LE,
	URS_SCMP_CMP_EQ,
	URS_SCMP_CMP_GE,
	URS_SCMP_CMP_GT,
	URS_SCMP_CMP_MASKED_EQ,
};

struct urs_scmp_arg {
	uint32_t index; /* 0..5 */
	uint64_t value;
	uint64_t value_two;
	enum urs_scmp_op op;
};

struct urs_scmp_rule {
	char **names; /* NULL-terminated, non-empty */
	size_t n_names;
	enum urs_scmp_action action;
	bool has_errno_ret;
	uint32_t errno_ret;
	struct urs_scmp_arg *args;
	size_t n_args;
};

struct urs_seccomp {
	enum urs_scmp_action default_action;
	bool has_default_errno_ret;
	uint32_t default_errno_ret;
	char **architectures; /* "SCMP_ARCH_*", validated, NULL-terminated */
	size_t n_architectures;
	char **flags; /* "SECCOMP_FILTER_FLAG_*", validated */
	size_t n_flags;
	char *listener_path; /* required when SCMP_ACT_NOTIFY is used */
	char *listener_metadata;
	struct urs_scmp_rule *syscalls;
	size_t n_syscalls;
};

struct urs_linux {
	struct urs_namespace *namespaces;
	size_t n_namespaces;
	uint32_t ns_mask; /* 1u << enum urs_ns_type for each namespace listed */
	struct urs_idmap *uid_mappings;
	size_t n_uid_mappings;
	struct urs_idmap *gid_mappings;
	size_t n_gid_mappings;
	struct urs_device *devices;
	size_t n_devices;
	char *cgroups_path;
	bool has_resources;
	struct urs_resources resources;
	struct urs_kv *sysctl;
	size_t n_sysctl;
	struct urs_seccomp *seccomp;	  /* NULL if absent */
	unsigned long rootfs_propagation; /* MS_* | maybe MS_REC, 0 if absent */
	char **masked_paths;
	size_t n_masked_paths;
	char **readonly_paths;
	size_t n_readonly_paths;
	char *mount_label;
	bool has_intel_rdt;	  /* linux.intelRdt given, not empty (not supported) */
	char *personality_domain; /* "LINUX" / "LINUX32" if given */
};

struct urs_spec {
	char *oci_version;
	struct {
		char *path; /* may be relative to the bundle */
		bool readonly;
	} root;
	struct urs_mount *mounts;
	size_t n_mounts;
	struct urs_process *process; /* NULL if absent */
	char *hostname;
	char *domainname;
	struct urs_hook_list hooks[URS_HOOK__COUNT];
	struct urs_kv *annotations;
	size_t n_annotations;
	struct urs_linux *lnx; /* NULL if absent */
	void *arena_;	       /* owns everything above */
};

/* Parse len bytes of JSON. 0 or -EINVAL (message in err), -ENOMEM. */
int urs_spec_parse(const char *json, size_t len, struct urs_spec **out, struct urs_err *err);
/* Read and parse a file (a bundle's config.json): also -ENOENT, -EACCES, ...
 * from opening/reading it, and -EOPNOTSUPP from urs_spec_check_host(). */
int urs_spec_load(const char *path, struct urs_spec **out, struct urs_err *err);
/* What this host cannot apply, refused naming the field, before anything is
 * created: process.apparmorProfile without AppArmor, process.selinuxLabel
 * and linux.mountLabel without SELinux. 0 or -EOPNOTSUPP. */
int urs_spec_check_host(const struct urs_spec *spec, struct urs_err *err);
bool urs_host_has_apparmor(void);
bool urs_host_has_selinux(void);
/* The init, right before execve: the AppArmor profile / SELinux label of
 * process for the next exec (/proc/thread-self/attr/...). 0 or -errno. */
int urs_lsm_set_exec(const struct urs_process *p, struct urs_err *err);
void urs_spec_free(struct urs_spec *spec);

/**
 * urs_spec_ann_bool() - an annotation that is a yes or a no
 * @spec: the spec
 * @key: the annotation's name ("run.ursa.seccomp-count", ...)
 * @out: set if @spec has it; unchanged if not
 * @err: what is wrong
 *
 * Return: 0, or -EINVAL naming the annotation when its value is not "true",
 * "1", "false" or "0".
 */
int urs_spec_ann_bool(const struct urs_spec *spec, const char *key, bool *out, struct urs_err *err);

/* What `runc spec` writes (and so `ursa spec`): a static NUL-terminated string. */
const char *urs_spec_default_json(void);
/* urs_spec_default_json(), parsed. */
int urs_spec_default(struct urs_spec **out, struct urs_err *err);

/* Lookups for the modules that consume the struct. */
/* "throttleReadBpsDevice", ... (the JSON member of linux.resources.blockIO) */
const char *urs_blkio_throttle_name(enum urs_blkio_throttle t);
const char *urs_ns_name(enum urs_ns_type t);	 /* "pid", "network", ... */
int urs_ns_clone_flag(enum urs_ns_type t);	 /* CLONE_NEWPID, ... */
const char *urs_cap_name(unsigned int cap);	 /* "CAP_CHOWN", NULL if unknown */
int urs_cap_from_name(const char *name);	 /* -1 if unknown */
const char *urs_hook_name(enum urs_hook_kind k); /* "prestart", ... */
const char *urs_scmp_action_name(enum urs_scmp_action a);
const char *urs_scmp_op_name(enum urs_scmp_op op);
bool urs_spec_has_ns(const struct urs_spec *spec, enum urs_ns_type t);
const struct urs_namespace *urs_spec_ns(const struct urs_spec *spec, enum urs_ns_type t);

static inline void urs_spec_freep(struct urs_spec **p)
{
	urs_spec_free(*p);
}
#define _cleanup_spec_ __attribute__((cleanup(urs_spec_freep)))

#endif
