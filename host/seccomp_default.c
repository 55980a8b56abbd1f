/*
 * host/seccomp_default.c — the built-in seccomp profile: Docker's default
 * (moby profiles/seccomp/default.json), as static data so nothing is parsed
 * at run time. `ursa do` and configs without linux.seccomp get it.
 *
 * Docker's "includes"/"excludes" conditions are kept: the host architecture
 * is known at compile time, capabilities are the sandbox's (the caller's
 * caps mask). Its one kernel condition (ptrace & co. need Linux >= 4.8) is
 * always true where ursa runs (io_uring). Names this libseccomp does not
 * know are skipped by the builder, as runc and Docker do. Like Docker >= 25
 * and containerd, io_uring_setup/enter/register are NOT allowed: io_uring
 * has been a steady source of kernel privilege escalations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/seccomp.h"
#include "runtime/common.h"

/* Docker's "arches" conditions, as host-architecture bits. */
enum {
	A_X86 = 1 << 0,	  /* "x86" */
	A_AMD64 = 1 << 1, /* "amd64", "x32" */
	A_ARM = 1 << 2,	  /* "arm", "arm64" */
	A_S390 = 1 << 3,  /* "s390", "s390x" */
	A_PPC64LE = 1 << 4,
	A_RISCV64 = 1 << 5,
};

#if defined(__x86_64__)
#define HOST_ARCH (A_AMD64 | A_X86)
static const char *const arches[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
#elif defined(__i386__)
#define HOST_ARCH A_X86
static const char *const arches[] = {"SCMP_ARCH_X86"};
#elif defined(__aarch64__)
#define HOST_ARCH A_ARM
static const char *const arches[] = {"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"};
#elif defined(__arm__)
#define HOST_ARCH A_ARM
static const char *const arches[] = {"SCMP_ARCH_ARM"};
#elif defined(__s390x__)
#define HOST_ARCH A_S390
static const char *const arches[] = {"SCMP_ARCH_S390X", "SCMP_ARCH_S390"};
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ARCH A_PPC64LE
static const char *const arches[] = {"SCMP_ARCH_PPC64LE"};
#elif defined(__riscv) && __riscv_xlen == 64
#define HOST_ARCH A_RISCV64
static const char *const arches[] = {"SCMP_ARCH_RISCV64"};
#else
#define HOST_ARCH 0
static const char *const arches[] = {NULL}; /* native only */
#endif

struct entry {
	const char *const *names; /* NULL-terminated */
	uint8_t action;		  /* enum urs_scmp_action */
	uint8_t errno_ret;	  /* for SCMP_ACT_ERRNO */
	int8_t cap;		  /* >= 0: only if the sandbox has this capability */
	int8_t nocap;		  /* >= 0: only if it has not */
	uint8_t arch;		  /* != 0: only on these hosts */
	uint8_t noarch;		  /* not on these hosts */
	bool has_arg;
	struct urs_scmp_arg arg;
};

#define NAMES(...)   ((const char *const[]){__VA_ARGS__, NULL})
#define ALLOW	     .action = URS_SCMP_ACT_ALLOW
#define NOCOND	     .cap = -1, .nocap = -1
#define CAP(c)	     .cap = (c), .nocap = -1
#define ARG(i, v, o) .has_arg = true, .arg = {.index = (i), .value = (v), .op = URS_SCMP_CMP_##o}

/* clone flags a sandbox without CAP_SYS_ADMIN may not use: CLONE_NEWNS,
 * NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (Docker's 2114060288). */
#define CLONE_NS_MASK 0x7E020000ULL

static const struct entry table[] = {
	{ALLOW, NOCOND,
	 .names = NAMES(
		 "accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "capget",
		 "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime", "clock_adjtime64",
		 "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64",
		 "clock_nanosleep", "clock_nanosleep_time64", "close", "close_range", "connect",
		 "copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create", "epoll_create1",
		 "epoll_ctl", "epoll_ctl_old", "epoll_pwait", "epoll_pwait2", "epoll_wait",
		 "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat", "exit",
		 "exit_group", "faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate",
		 "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchown", "fchown32", "fchownat",
		 "fcntl", "fcntl64", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork",
		 "fremovexattr", "fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs",
		 "fstatfs64", "fsync", "ftruncate", "ftruncate64", "futex", "futex_time64",
		 "futex_waitv", "futimesat", "getcpu", "getcwd", "getdents", "getdents64",
		 "getegid", "getegid32", "geteuid", "geteuid32", "getgid", "getgid32", "getgroups",
		 "getgroups32", "getitimer", "getpeername", "getpgid", "getpgrp", "getpid",
		 "getppid", "getpriority", "getrandom", "getresgid", "getresgid32", "getresuid",
		 "getresuid32", "getrlimit", "get_robust_list", "getrusage", "getsid",
		 "getsockname", "getsockopt", "get_thread_area", "gettid", "gettimeofday", "getuid",
		 "getuid32", "getxattr", "inotify_add_watch", "inotify_init", "inotify_init1",
		 "inotify_rm_watch", "io_cancel", "ioctl", "io_destroy", "io_getevents",
		 "io_pgetevents", "io_pgetevents_time64", "ioprio_get", "ioprio_set", "io_setup",
		 "io_submit", "ipc", "kill", "landlock_add_rule", "landlock_create_ruleset",
		 "landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link", "linkat",
		 "listen", "listxattr", "llistxattr", "_llseek", "lremovexattr", "lseek",
		 "lsetxattr", "lstat", "lstat64", "madvise", "membarrier", "memfd_create",
		 "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock",
		 "mlock2", "mlockall", "mmap", "mmap2", "mprotect", "mq_getsetattr", "mq_notify",
		 "mq_open", "mq_timedreceive", "mq_timedreceive_time64", "mq_timedsend",
		 "mq_timedsend_time64", "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv",
		 "msgsnd", "msync", "munlock", "munlockall", "munmap", "name_to_handle_at",
		 "nanosleep", "newfstatat", "_newselect", "open", "openat", "openat2", "pause",
		 "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free",
		 "pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl", "pread64", "preadv",
		 "preadv2", "prlimit64", "process_mrelease", "pselect6", "pselect6_time64",
		 "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat",
		 "readv", "recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg",
		 "remap_file_pages", "removexattr", "rename", "renameat", "renameat2",
		 "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
		 "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend",
		 "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_tgsigqueueinfo",
		 "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_get_priority_max",
		 "sched_get_priority_min", "sched_getscheduler", "sched_rr_get_interval",
		 "sched_rr_get_interval_time64", "sched_setaffinity", "sched_setattr",
		 "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
		 "semctl", "semget", "semop", "semtimedop", "semtimedop_time64", "send", "sendfile",
		 "sendfile64", "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsgid32",
		 "setfsuid", "setfsuid32", "setgid", "setgid32", "setgroups", "setgroups32",
		 "setitimer", "setpgid", "setpriority", "setregid", "setregid32", "setresgid",
		 "setresgid32", "setresuid", "setresuid32", "setreuid", "setreuid32", "setrlimit",
		 "set_robust_list", "setsid", "setsockopt", "set_thread_area", "set_tid_address",
		 "setuid", "setuid32", "setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown",
		 "sigaltstack", "signalfd", "signalfd4", "sigprocmask", "sigreturn", "socketcall",
		 "socketpair", "splice", "stat", "stat64", "statfs", "statfs64", "statx", "symlink",
		 "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill",
		 "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
		 "timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create",
		 "timerfd_gettime", "timerfd_gettime64", "timerfd_settime", "timerfd_settime64",
		 "times", "tkill", "truncate", "truncate64", "ugetrlimit", "umask", "uname",
		 "unlink", "unlinkat", "utime", "utimensat", "utimensat_time64", "utimes", "vfork",
		 "vmsplice", "wait4", "waitid", "waitpid", "write", "writev",
		 /* in later moby profiles; unknown to libseccomp 2.5.4, so skipped there */
		 "cachestat", "fchmodat2", "futex_requeue", "futex_wait", "futex_wake",
		 "map_shadow_stack")},
	/* "minKernel": "4.8" */
	{ALLOW, NOCOND, .names = NAMES("process_vm_readv", "process_vm_writev", "ptrace")},
	{ALLOW, NOCOND, .names = NAMES("socket"), ARG(0, 40 /* AF_VSOCK */, NE)},
	{ALLOW, NOCOND, .names = NAMES("personality"), ARG(0, 0x0, EQ)},     /* PER_LINUX */
	{ALLOW, NOCOND, .names = NAMES("personality"), ARG(0, 0x8, EQ)},     /* PER_LINUX32 */
	{ALLOW, NOCOND, .names = NAMES("personality"), ARG(0, 0x20000, EQ)}, /* UNAME26 */
	{ALLOW, NOCOND, .names = NAMES("personality"), ARG(0, 0x20008, EQ)},
	{ALLOW, NOCOND, .names = NAMES("personality"), ARG(0, 0xffffffff, EQ)}, /* query */
	{ALLOW, NOCOND, .arch = A_PPC64LE, .names = NAMES("sync_file_range2", "swapcontext")},
	{ALLOW, NOCOND, .arch = A_ARM,
	 .names = NAMES("arm_fadvise64_64", "arm_sync_file_range", "sync_file_range2", "breakpoint",
			"cacheflush", "set_tls")},
	{ALLOW, NOCOND, .arch = A_AMD64, .names = NAMES("arch_prctl")},
	{ALLOW, NOCOND, .arch = A_AMD64 | A_X86, .names = NAMES("modify_ldt")},
	{ALLOW, NOCOND, .arch = A_S390,
	 .names = NAMES("s390_pci_mmio_read", "s390_pci_mmio_write", "s390_runtime_instr")},
	{ALLOW, NOCOND, .arch = A_RISCV64, .names = NAMES("riscv_flush_icache")},
	{ALLOW, CAP(CAP_DAC_READ_SEARCH), .names = NAMES("open_by_handle_at")},
	{ALLOW, CAP(CAP_SYS_ADMIN),
	 .names = NAMES("bpf", "clone", "clone3", "fanotify_init", "fsconfig", "fsmount", "fsopen",
			"fspick", "lookup_dcookie", "mount", "mount_setattr", "move_mount",
			"open_tree", "perf_event_open", "quotactl", "quotactl_fd", "setdomainname",
			"sethostname", "setns", "syslog", "umount", "umount2", "unshare")},
	{ALLOW, .cap = -1, .nocap = CAP_SYS_ADMIN, .noarch = A_S390, .names = NAMES("clone"),
	 ARG(0, CLONE_NS_MASK, MASKED_EQ)},
	/* s390 passes clone's flags second */
	{ALLOW, .cap = -1, .nocap = CAP_SYS_ADMIN, .arch = A_S390, .names = NAMES("clone"),
	 ARG(1, CLONE_NS_MASK, MASKED_EQ)},
	/* so that libcs fall back to clone, whose flags can be checked */
	{.action = URS_SCMP_ACT_ERRNO,
	 .errno_ret = ENOSYS,
	 .cap = -1,
	 .nocap = CAP_SYS_ADMIN,
	 .names = NAMES("clone3")},
	{ALLOW, CAP(CAP_SYS_BOOT), .names = NAMES("reboot")},
	{ALLOW, CAP(CAP_SYS_CHROOT), .names = NAMES("chroot")},
	{ALLOW, CAP(CAP_SYS_MODULE),
	 .names = NAMES("delete_module", "init_module", "finit_module")},
	{ALLOW, CAP(CAP_SYS_PACCT), .names = NAMES("acct")},
	{ALLOW, CAP(CAP_SYS_PTRACE),
	 .names = NAMES("kcmp", "pidfd_getfd", "process_madvise", "process_vm_readv",
			"process_vm_writev", "ptrace")},
	{ALLOW, CAP(CAP_SYS_RAWIO), .names = NAMES("iopl", "ioperm")},
	{ALLOW, CAP(CAP_SYS_TIME),
	 .names = NAMES("settimeofday", "stime", "clock_settime", "clock_settime64")},
	{ALLOW, CAP(CAP_SYS_TTY_CONFIG), .names = NAMES("vhangup")},
	{ALLOW, CAP(CAP_SYS_NICE),
	 .names = NAMES("get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node")},
	{ALLOW, CAP(CAP_SYSLOG), .names = NAMES("syslog")},
	{ALLOW, CAP(CAP_BPF), .names = NAMES("bpf")},
	{ALLOW, CAP(CAP_PERFMON), .names = NAMES("perf_event_open")},
};

static bool wanted(const struct entry *e, uint64_t caps)
{
	if (e->cap >= 0 && !(caps & URS_CAP(e->cap)))
		return false;
	if (e->nocap >= 0 && (caps & URS_CAP(e->nocap)))
		return false;
	if (e->arch && !(e->arch & HOST_ARCH))
		return false;
	if (e->noarch & HOST_ARCH)
		return false;
	return true;
}

int urs_seccomp_default_profile(uint64_t caps, struct urs_seccomp **out)
{
	struct urs_seccomp *p;
	struct urs_scmp_rule *r;

	*out = NULL;
	p = calloc(1, sizeof(*p) + URS_ARRAY_SIZE(table) * sizeof(*r));
	if (!p)
		return -ENOMEM;
	r = (struct urs_scmp_rule *) (p + 1);
	p->default_action = URS_SCMP_ACT_ERRNO;
	p->has_default_errno_ret = true;
	p->default_errno_ret = EPERM;
	/* the profile is read-only data; struct urs_seccomp is not const-qualified */
	p->architectures = (char **) arches;
	p->n_architectures = arches[0] ? URS_ARRAY_SIZE(arches) : 0;
	p->syscalls = r;
	for (size_t i = 0; i < URS_ARRAY_SIZE(table); i++) {
		const struct entry *e = &table[i];
		if (!wanted(e, caps))
			continue;
		*r = (struct urs_scmp_rule){
			.names = (char **) e->names,
			.action = (enum urs_scmp_action) e->action,
			.has_errno_ret = e->action == URS_SCMP_ACT_ERRNO,
			.errno_ret = e->errno_ret,
			.args = e->has_arg ? (struct urs_scmp_arg *) &e->arg : NULL,
			.n_args = e->has_arg,
		};
		while (e->names[r->n_names])
			r->n_names++;
		r++;
	}
	p->n_syscalls = (size_t) (r - p->syscalls);
	*out = p;
	return 0;
}

int urs_seccomp_build_default(uint64_t caps, scmp_filter_ctx *out, struct urs_err *err)
{
	_cleanup_free_ struct urs_seccomp *p = NULL;
	int rc = urs_seccomp_default_profile(caps, &p);

	if (rc < 0) {
		*out = NULL;
		return urs_err_set(err, rc, "seccomp: default profile: %s", strerror(-rc));
	}
	return urs_seccomp_build(p, out, err);
}
