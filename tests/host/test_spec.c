/*
 * tests/host/test_spec.c — the config.json parser (host/spec.c): a realistic
 * config lands in the right struct values, bad configs fail with messages
 * that name the field, the `runc spec` default parses back, and truncated
 * input never crashes or leaks.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/spec.h"

#ifndef URS_TEST_DATA
#error "URS_TEST_DATA must point at tests/data"
#endif

#define CAP(x) (UINT64_C(1) << (x))

/* Tests write JSON with single quotes; turn them into double quotes. */
static int parse_q(const char *q, struct urs_spec **out, struct urs_err *err)
{
	size_t n = strlen(q);
	char *s = strdup(q);
	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\'')
			s[i] = '"';
	int r = urs_spec_parse(s, n, out, err);
	free(s);
	return r;
}

/* A file parsed as urs_spec_load() does, without its host checks (the full
 * config asks for AppArmor and SELinux labels, which few hosts have both). */
static int parse_file(const char *path, struct urs_spec **out, struct urs_err *err)
{
	FILE *f = fopen(path, "re");
	assert_non_null(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return urs_spec_parse(buf, n, out, err);
}

static void test_full_config(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	_cleanup_spec_ struct urs_spec *s = NULL;
	int r = parse_file(URS_TEST_DATA "/spec_full.json", &s, &err);
	if (r)
		fail_msg("%s", err.msg);
	assert_non_null(s);
	assert_string_equal(s->oci_version, "1.2.0");
	assert_string_equal(s->root.path, "rootfs");
	assert_true(s->root.readonly);
	assert_string_equal(s->hostname, "web-1");
	assert_string_equal(s->domainname, "example.org");

	/* process */
	struct urs_process *p = s->process;
	assert_non_null(p);
	assert_false(p->terminal);
	assert_true(p->has_console_size);
	assert_int_equal(p->console_height, 25);
	assert_int_equal(p->console_width, 80);
	assert_int_equal(p->user.uid, 1000);
	assert_int_equal(p->user.gid, 1000);
	assert_true(p->user.has_umask);
	assert_int_equal(p->user.umask, 022);
	assert_int_equal(p->user.n_additional_gids, 2);
	assert_int_equal(p->user.additional_gids[0], 5);
	assert_int_equal(p->user.additional_gids[1], UINT32_MAX);
	assert_int_equal(p->n_args, 3);
	assert_string_equal(p->args[0], "/bin/server");
	assert_string_equal(p->args[2], "8080");
	assert_null(p->args[3]);
	assert_int_equal(p->n_env, 2);
	assert_string_equal(p->env[1], "HOME=/home/app");
	assert_null(p->env[2]);
	assert_string_equal(p->cwd, "/srv");
	assert_true(p->caps.present);
	assert_int_equal(p->caps.bounding, CAP(0) | CAP(10) | CAP(21) | CAP(40));
	assert_int_equal(p->caps.effective, CAP(10));
	assert_int_equal(p->caps.inheritable, 0);
	assert_int_equal(p->caps.permitted, CAP(10) | CAP(5));
	assert_int_equal(p->caps.ambient, CAP(10));
	assert_int_equal(p->n_rlimits, 2);
	assert_int_equal(p->rlimits[0].resource, RLIMIT_NOFILE);
	assert_int_equal(p->rlimits[0].hard, 4096);
	assert_int_equal(p->rlimits[0].soft, 1024);
	assert_int_equal(p->rlimits[1].resource, RLIMIT_CORE);
	assert_true(p->rlimits[1].hard == UINT64_MAX);
	assert_int_equal(p->rlimits[1].soft, 0);
	assert_true(p->no_new_privileges);
	assert_true(p->has_oom_score_adj);
	assert_int_equal(p->oom_score_adj, -500);
	assert_string_equal(p->apparmor_profile, "docker-default");

	/* mounts */
	assert_int_equal(s->n_mounts, 5);
	struct urs_mount *m = &s->mounts[1];
	assert_string_equal(m->destination, "/dev");
	assert_string_equal(m->type, "tmpfs");
	assert_int_equal(m->flags, MS_NOSUID | MS_STRICTATIME);
	assert_string_equal(m->data, "mode=755,size=65536k");
	assert_int_equal(m->n_options, 4);
	m = &s->mounts[0];
	assert_null(m->data);
	assert_int_equal(m->flags, 0);
	assert_int_equal(m->n_options, 0);
	assert_non_null(m->options);
	assert_null(m->options[0]);
	m = &s->mounts[2];
	assert_int_equal(m->flags, MS_BIND | MS_REC | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
	assert_int_equal(m->propagation, MS_SLAVE | MS_REC);
	assert_true(m->tmpcopyup);
	assert_null(m->data);
	m = &s->mounts[3];
	assert_null(m->type);
	assert_int_equal(m->flags, MS_BIND | MS_RELATIME);
	assert_int_equal(m->clear_flags, MS_RDONLY);
	assert_int_equal(m->propagation, MS_PRIVATE);
	assert_int_equal(m->rec_attr_set, MOUNT_ATTR_RDONLY);
	m = &s->mounts[4];
	assert_int_equal(m->n_uid_mappings, 1);
	assert_int_equal(m->uid_mappings[0].host_id, 100000);
	assert_int_equal(m->gid_mappings[0].size, 65536);

	/* hooks */
	assert_int_equal(s->hooks[URS_HOOK_PRESTART].n, 1);
	struct urs_hook *h = &s->hooks[URS_HOOK_PRESTART].v[0];
	assert_string_equal(h->path, "/usr/bin/fix-mounts");
	assert_int_equal(h->n_args, 2);
	assert_string_equal(h->env[0], "KEY=value");
	assert_true(h->has_timeout);
	assert_int_equal(h->timeout, 5);
	assert_int_equal(s->hooks[URS_HOOK_CREATE_RUNTIME].n, 1);
	assert_false(s->hooks[URS_HOOK_CREATE_RUNTIME].v[0].has_timeout);
	assert_int_equal(s->hooks[URS_HOOK_CREATE_CONTAINER].n, 0);
	assert_int_equal(s->hooks[URS_HOOK_POSTSTOP].n, 1);

	assert_int_equal(s->n_annotations, 2);
	assert_string_equal(s->annotations[0].key, "com.example.key1");
	assert_string_equal(s->annotations[0].value, "value1");

	/* linux */
	struct urs_linux *l = s->lnx;
	assert_non_null(l);
	assert_int_equal(l->n_namespaces, 7);
	assert_true(urs_spec_has_ns(s, URS_NS_USER));
	assert_false(urs_spec_has_ns(s, URS_NS_TIME));
	const struct urs_namespace *ns = urs_spec_ns(s, URS_NS_NETWORK);
	assert_non_null(ns);
	assert_string_equal(ns->path, "/var/run/netns/web");
	assert_null(urs_spec_ns(s, URS_NS_PID)->path);
	assert_int_equal(l->n_uid_mappings, 1);
	assert_int_equal(l->uid_mappings[0].container_id, 0);
	assert_int_equal(l->uid_mappings[0].host_id, 1000);
	assert_int_equal(l->uid_mappings[0].size, 32000);
	assert_int_equal(l->gid_mappings[0].size, 32000);
	assert_int_equal(l->n_devices, 3);
	assert_int_equal(l->devices[0].type, 'c');
	assert_int_equal(l->devices[0].major, 10);
	assert_int_equal(l->devices[0].minor, 229);
	assert_true(l->devices[0].has_file_mode);
	assert_int_equal(l->devices[0].file_mode, 0666);
	assert_int_equal(l->devices[1].type, 'b');
	assert_false(l->devices[1].has_uid);
	assert_int_equal(l->devices[2].type, 'p');
	assert_string_equal(l->cgroups_path, "/myRuntime/myContainer");

	struct urs_resources *res = &l->resources;
	assert_true(l->has_resources);
	assert_true(res->memory.has_limit);
	assert_int_equal(res->memory.limit, 536870912);
	assert_int_equal(res->memory.swap, -1);
	assert_true(res->memory.has_swappiness);
	assert_int_equal(res->memory.swappiness, 0);
	assert_int_equal(res->cpu.shares, 1024);
	assert_int_equal(res->cpu.quota, 1000000);
	assert_int_equal(res->cpu.period, 500000);
	assert_int_equal(res->cpu.rt_runtime, 950000);
	assert_string_equal(res->cpu.cpus, "2-3");
	assert_string_equal(res->cpu.mems, "0-7");
	assert_true(res->pids.has_limit);
	assert_int_equal(res->pids.limit, 32771);
	assert_int_equal(res->n_devices, 3);
	assert_false(res->devices[0].allow);
	assert_int_equal(res->devices[0].type, 'a');
	assert_int_equal(res->devices[0].major, -1);
	assert_string_equal(res->devices[0].access, "rwm");
	assert_true(res->devices[1].allow);
	assert_int_equal(res->devices[1].type, 'c');
	assert_string_equal(res->devices[1].access, "rw");
	assert_true(res->block_io.has_weight);
	assert_int_equal(res->block_io.weight, 10);
	assert_int_equal(res->block_io.n_weight_devices, 1);
	assert_int_equal(res->block_io.weight_devices[0].major, 8);
	assert_int_equal(res->block_io.weight_devices[0].minor, 0);
	assert_true(res->block_io.weight_devices[0].has_weight);
	assert_int_equal(res->block_io.weight_devices[0].weight, 500);
	assert_false(res->block_io.weight_devices[0].has_leaf_weight);
	assert_int_equal(res->block_io.n_throttle[URS_THROTTLE_READ_BPS], 0);
	assert_true(res->network.has_class_id);
	assert_int_equal(res->network.class_id, 1048577);
	assert_true(s->lnx->has_intel_rdt);
	assert_int_equal(res->n_hugepage_limits, 1);
	assert_string_equal(res->hugepage_limits[0].page_size, "2MB");
	assert_int_equal(res->n_unified, 2);
	assert_string_equal(res->unified[0].key, "io.max");
	assert_int_equal(l->n_sysctl, 2);
	assert_string_equal(l->sysctl[0].key, "net.ipv4.ip_forward");
	assert_string_equal(l->sysctl[0].value, "1");

	struct urs_seccomp *sc = l->seccomp;
	assert_non_null(sc);
	assert_int_equal(sc->default_action, URS_SCMP_ACT_ERRNO);
	assert_true(sc->has_default_errno_ret);
	assert_int_equal(sc->default_errno_ret, 1);
	assert_int_equal(sc->n_architectures, 3);
	assert_string_equal(sc->architectures[2], "SCMP_ARCH_X32");
	assert_int_equal(sc->n_flags, 1);
	assert_string_equal(sc->listener_path, "/run/seccomp-agent.sock");
	assert_int_equal(sc->n_syscalls, 5);
	assert_int_equal(sc->syscalls[0].n_names, 3);
	assert_string_equal(sc->syscalls[0].names[2], "exit_group");
	assert_int_equal(sc->syscalls[0].action, URS_SCMP_ACT_ALLOW);
	assert_int_equal(sc->syscalls[1].n_args, 1);
	assert_int_equal(sc->syscalls[1].args[0].value, 131080);
	assert_int_equal(sc->syscalls[1].args[0].op, URS_SCMP_CMP_EQ);
	assert_int_equal(sc->syscalls[2].args[0].op, URS_SCMP_CMP_MASKED_EQ);
	assert_int_equal(sc->syscalls[2].args[0].value, 2114060288);
	assert_int_equal(sc->syscalls[3].action, URS_SCMP_ACT_ERRNO);
	assert_true(sc->syscalls[3].has_errno_ret);
	assert_int_equal(sc->syscalls[3].errno_ret, 25);
	assert_int_equal(sc->syscalls[3].args[0].index, 1);
	assert_true(sc->syscalls[3].args[0].value == UINT64_MAX);
	assert_int_equal(sc->syscalls[4].action, URS_SCMP_ACT_NOTIFY);

	assert_int_equal(l->rootfs_propagation, MS_SLAVE | MS_REC);
	assert_int_equal(l->n_masked_paths, 2);
	assert_string_equal(l->readonly_paths[1], "/proc/sysrq-trigger");
	assert_string_equal(l->mount_label, "system_u:object_r:svirt_sandbox_file_t:s0:c715,c811");
	assert_string_equal(l->personality_domain, "LINUX");
}

static void test_default_spec(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	_cleanup_spec_ struct urs_spec *s = NULL;
	int r = urs_spec_default(&s, &err);
	if (r)
		fail_msg("%s", err.msg);
	assert_string_equal(s->root.path, "rootfs");
	assert_true(s->root.readonly);
	assert_string_equal(s->hostname, "runc");
	assert_true(s->process->terminal);
	assert_int_equal(s->process->n_args, 1);
	assert_string_equal(s->process->args[0], "sh");
	uint64_t caps = CAP(29) | CAP(5) | CAP(10); /* AUDIT_WRITE, KILL, NET_BIND_SERVICE */
	assert_int_equal(s->process->caps.bounding, caps);
	assert_int_equal(s->process->caps.effective, caps);
	assert_int_equal(s->process->caps.permitted, caps);
	assert_int_equal(s->process->caps.ambient, caps);
	assert_int_equal(s->process->caps.inheritable, 0);
	assert_int_equal(s->process->n_rlimits, 1);
	assert_int_equal(s->process->rlimits[0].resource, RLIMIT_NOFILE);
	assert_int_equal(s->process->rlimits[0].soft, 1024);
	assert_true(s->process->no_new_privileges);
	assert_int_equal(s->n_mounts, 7);
	const char *dests[] = {"/proc",	      "/dev", "/dev/pts",      "/dev/shm",
			       "/dev/mqueue", "/sys", "/sys/fs/cgroup"};
	for (size_t i = 0; i < 7; i++)
		assert_string_equal(s->mounts[i].destination, dests[i]);
	assert_int_equal(s->mounts[2].flags, MS_NOSUID | MS_NOEXEC);
	assert_string_equal(s->mounts[2].data, "newinstance,ptmxmode=0666,mode=0620,gid=5");
	assert_int_equal(s->mounts[5].flags, MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY);
	assert_int_equal(s->mounts[6].flags,
			 MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RELATIME | MS_RDONLY);
	assert_int_equal(s->lnx->ns_mask, (1u << URS_NS_PID) | (1u << URS_NS_NETWORK) |
						  (1u << URS_NS_IPC) | (1u << URS_NS_UTS) |
						  (1u << URS_NS_MOUNT));
	assert_int_equal(s->lnx->n_masked_paths, 10);
	assert_int_equal(s->lnx->n_readonly_paths, 5);
	assert_int_equal(s->lnx->resources.n_devices, 1);
	assert_false(s->lnx->resources.devices[0].allow);
	assert_null(s->lnx->seccomp);
	/* The text itself is what runc writes: tab-indented, ends in a newline. */
	const char *j = urs_spec_default_json();
	assert_non_null(strstr(j, "\t\"ociVersion\": \"1.0.2-dev\",\n"));
	assert_int_equal(j[strlen(j) - 1], '\n');
}

static void test_minimal_and_extensions(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	struct urs_spec *s = NULL;
	/* null = absent; unknown fields anywhere are fine; no process, no linux */
	int r = parse_q("{'ociVersion':'1.0.0','root':{'path':'/r'},'process':null,"
			"'hostname':null,'x-vendor':{'a':[1]},'mounts':[]}",
			&s, &err);
	if (r)
		fail_msg("%s", err.msg);
	assert_null(s->process);
	assert_null(s->lnx);
	assert_null(s->hostname);
	assert_false(s->root.readonly);
	assert_false(urs_spec_has_ns(s, URS_NS_PID));
	urs_spec_free(s);
	urs_spec_free(NULL);
}

static void test_names(void **state)
{
	(void) state;
	assert_string_equal(urs_ns_name(URS_NS_NETWORK), "network");
	assert_int_equal(urs_ns_clone_flag(URS_NS_MOUNT), CLONE_NEWNS);
	assert_string_equal(urs_cap_name(21), "CAP_SYS_ADMIN");
	assert_null(urs_cap_name(64));
	assert_int_equal(urs_cap_from_name("CAP_BPF"), 39);
	assert_int_equal(urs_cap_from_name("cap_bpf"), -1);
	assert_string_equal(urs_hook_name(URS_HOOK_START_CONTAINER), "startContainer");
	assert_string_equal(urs_scmp_action_name(URS_SCMP_ACT_KILL_THREAD), "SCMP_ACT_KILL_THREAD");
	assert_string_equal(urs_scmp_op_name(URS_SCMP_CMP_MASKED_EQ), "SCMP_CMP_MASKED_EQ");
}

#define HEAD "{'ociVersion':'1.0.2','root':{'path':'rootfs'},"

/* a yes-or-no annotation: set when present, left when absent, refused
 * naming it when neither */
static void test_ann_bool(void **state)
{
	(void) state;
	struct urs_spec *s = NULL;
	struct urs_err err = {{0}};
	assert_int_equal(parse_q(HEAD "'annotations':{'a':'true','b':'0','c':'yes'}}", &s, &err),
			 0);
	bool v = false;
	assert_int_equal(urs_spec_ann_bool(s, "a", &v, &err), 0);
	assert_true(v);
	assert_int_equal(urs_spec_ann_bool(s, "b", &v, &err), 0);
	assert_false(v);
	v = true;
	assert_int_equal(urs_spec_ann_bool(s, "absent", &v, &err), 0);
	assert_true(v);
	assert_int_equal(urs_spec_ann_bool(s, "c", &v, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "config.json: annotations[\"c\"]: \"yes\" is not true or false");
	urs_spec_free(s);
}
#define PROC(x) HEAD "'process':{'args':['sh'],'cwd':'/'," x "}}"
#define LNX(x)	HEAD "'linux':{" x "}}"

static const struct bad {
	const char *json;
	const char *msg; /* exact, or a prefix when it ends in '*' */
} bad[] = {
	{HEAD "'process':{'cwd':'/'}}",
	 "config.json: process.args: missing (required when process is present)"},
	{HEAD "'process':{'args':[],'cwd':'/'}}", "config.json: process.args: must not be empty"},
	{HEAD "'process':{'args':['sh',1],'cwd':'/'}}",
	 "config.json: process.args[1]: expected a string, got integer"},
	{HEAD "'process':{'args':['sh']}}",
	 "config.json: process.cwd: missing (required when process is present)"},
	{HEAD "'process':{'args':['sh'],'cwd':'srv'}}",
	 "config.json: process.cwd: must be an absolute path, got \"srv\""},
	{PROC("'user':{'uid':'0','gid':0}"),
	 "config.json: process.user.uid: expected an integer, got string"},
	{PROC("'user':{'uid':-1,'gid':0}"),
	 "config.json: process.user.uid: expected a non-negative integer, got -1"},
	{PROC("'user':{'uid':4294967296,'gid':0}"),
	 "config.json: process.user.uid: 4294967296 is out of range (max 4294967295)"},
	{PROC("'user':{'uid':1.5,'gid':0}"),
	 "config.json: process.user.uid: expected an integer, got number with a fraction"},
	{PROC("'user':{'uid':0}"), "config.json: process.user.gid: missing (required)"},
	{PROC("'user':{'uid':0,'gid':0,'additionalGids':[1,'x']}"),
	 "config.json: process.user.additionalGids[1]: expected an integer, got string"},
	{PROC("'terminal':'yes'"), "config.json: process.terminal: expected a boolean, got string"},
	{PROC("'capabilities':{'bounding':['CAP_KILL','CAP_FOO']}"),
	 "config.json: process.capabilities.bounding[1]: unknown capability \"CAP_FOO\""},
	{PROC("'capabilities':{'ambient':'CAP_KILL'}"),
	 "config.json: process.capabilities.ambient: expected an array of strings, got string"},
	{PROC("'rlimits':[{'type':'RLIMIT_NOFILE','hard':1024,'soft':2048}]"),
	 "config.json: process.rlimits[0]: soft limit 2048 exceeds hard limit 1024"},
	{PROC("'rlimits':[{'type':'RLIMIT_FOO','hard':1,'soft':1}]"),
	 "config.json: process.rlimits[0].type: unknown rlimit type \"RLIMIT_FOO\"*"},
	{PROC("'rlimits':[{'type':'RLIMIT_NOFILE','hard':1}]"),
	 "config.json: process.rlimits[0].soft: missing (required)"},
	{PROC("'rlimits':[{'type':'RLIMIT_CORE','hard':1,'soft':1},"
	      "{'type':'RLIMIT_CORE','hard':2,'soft':2}]"),
	 "config.json: process.rlimits[1]: duplicate rlimit type \"RLIMIT_CORE\" (also at [0])"},
	{PROC("'oomScoreAdj':2000"),
	 "config.json: process.oomScoreAdj: 2000 is out of range (-1000..1000)"},
	{PROC("'consoleSize':{'height':10}"),
	 "config.json: process.consoleSize.width: missing (required)"},
	{LNX("'namespaces':[{'type':'pid'},{'type':'mount'},{'type':'foo'}]"),
	 "config.json: linux.namespaces[2].type: unknown namespace type \"foo\" (expected one of: "
	 "pid, network, mount, ipc, uts, user, cgroup, time)"},
	{LNX("'namespaces':[{'type':'pid'},{'type':'pid'}]"),
	 "config.json: linux.namespaces[1].type: duplicate namespace type \"pid\" (already at "
	 "[0])"},
	{LNX("'namespaces':[{'path':'/proc/1/ns/pid'}]"),
	 "config.json: linux.namespaces[0].type: missing (required)"},
	{LNX("'namespaces':{'type':'pid'}"),
	 "config.json: linux.namespaces: expected an array, got object"},
	{LNX("'namespaces':['pid']"),
	 "config.json: linux.namespaces[0]: expected an object, got string"},
	{LNX("'seccomp':{'defaultAction':'SCMP_ACT_ALLOW','syscalls':[{'names':['read'],"
	     "'action':'SCMP_ACT_FOO'}]}"),
	 "config.json: linux.seccomp.syscalls[0].action: unknown seccomp action \"SCMP_ACT_FOO\" "
	 "(expected one of: SCMP_ACT_KILL, SCMP_ACT_KILL_PROCESS, *"},
	{LNX("'seccomp':{'defaultAction':'SCMP_ACT_ALLOW','syscalls':[{'names':['read'],"
	     "'action':'SCMP_ACT_ALLOW','args':[{'index':0,'value':1,'op':'SCMP_CMP_XX'}]}]}"),
	 "config.json: linux.seccomp.syscalls[0].args[0].op: unknown seccomp operator "
	 "\"SCMP_CMP_XX\"*"},
	{LNX("'seccomp':{'defaultAction':'SCMP_ACT_ALLOW','syscalls':[{'names':['read'],"
	     "'action':'SCMP_ACT_ALLOW','args':[{'index':6,'value':1,'op':'SCMP_CMP_EQ'}]}]}"),
	 "config.json: linux.seccomp.syscalls[0].args[0].index: 6 is out of range (max 5)"},
	{LNX("'seccomp':{'syscalls':[]}"),
	 "config.json: linux.seccomp.defaultAction: missing (required)"},
	{LNX("'seccomp':{'defaultAction':'SCMP_ACT_ALLOW','architectures':['SCMP_ARCH_Z80']}"),
	 "config.json: linux.seccomp.architectures[0]: unknown architecture \"SCMP_ARCH_Z80\"*"},
	{LNX("'seccomp':{'defaultAction':'SCMP_ACT_ALLOW','syscalls':[{'names':['mount'],"
	     "'action':'SCMP_ACT_NOTIFY'}]}"),
	 "config.json: linux.seccomp.listenerPath: missing (required when SCMP_ACT_NOTIFY is "
	 "used)"},
	{LNX("'devices':[{'type':'x','path':'/dev/x','major':1,'minor':1}]"),
	 "config.json: linux.devices[0].type: unknown device type \"x\" (expected one of: c, b, u, "
	 "p)"},
	{LNX("'devices':[{'type':'c','path':'/dev/x','major':1}]"),
	 "config.json: linux.devices[0].minor: missing (required for char and block devices)"},
	{LNX("'resources':{'devices':[{'allow':true,'access':'rwx'}]}"),
	 "config.json: linux.resources.devices[0].access: invalid access \"rwx\"*"},
	{LNX("'resources':{'memory':{'swappiness':200}}"),
	 "config.json: linux.resources.memory.swappiness: 200 is out of range (max 100)"},
	{LNX("'resources':{'memory':{'limit':'1G'}}"),
	 "config.json: linux.resources.memory.limit: expected an integer, got string"},
	{LNX("'resources':{'blockIO':{'throttleReadBpsDevice':[{'major':8,'minor':0}]}}"),
	 "config.json: linux.resources.blockIO.throttleReadBpsDevice[0].rate: missing (required)"},
	{LNX("'resources':{'blockIO':{'weightDevice':[{'minor':0,'weight':10}]}}"),
	 "config.json: linux.resources.blockIO.weightDevice[0].major: missing (required)"},
	{LNX("'resources':{'blockIO':{'throttleWriteIOPSDevice':[{'major':-1,'minor':0,'rate':1}]}"
	     "}"),
	 "config.json: linux.resources.blockIO.throttleWriteIOPSDevice[0].major: -1 is out of "
	 "range*"},
	{LNX("'resources':{'network':{'classID':-1}}"),
	 "config.json: linux.resources.network.classID: expected a non-negative integer, got -1"},
	{LNX("'resources':{'network':{'priorities':[{'priority':1}]}}"),
	 "config.json: linux.resources.network.priorities[0].name: missing (required)"},
	{LNX("'resources':{'pids':{}}"),
	 "config.json: linux.resources.pids.limit: missing (required)"},
	{LNX("'uidMappings':[{'containerID':0,'hostID':1000,'size':1}]"),
	 "config.json: linux.uidMappings: set, but linux.namespaces has no user namespace"},
	{LNX("'namespaces':[{'type':'user'}],'uidMappings':[{'containerID':0,'size':1}]"),
	 "config.json: linux.uidMappings[0].hostID: missing (required)"},
	{LNX("'sysctl':{'net.ipv4.ip_forward':1}"),
	 "config.json: linux.sysctl[\"net.ipv4.ip_forward\"]: expected a string, got integer"},
	{LNX("'rootfsPropagation':'bogus'"),
	 "config.json: linux.rootfsPropagation: unknown propagation \"bogus\"*"},
	{HEAD "'hostname':'h','linux':{'namespaces':[{'type':'pid'}]}}",
	 "config.json: hostname: set, but linux.namespaces has no uts namespace"},
	{HEAD "'hooks':{'prestart':[{'path':'bin/hook'}]}}",
	 "config.json: hooks.prestart[0].path: must be an absolute path, got \"bin/hook\""},
	{HEAD "'hooks':{'poststop':[{'path':'/bin/hook','timeout':0}]}}",
	 "config.json: hooks.poststop[0].timeout: must be a positive number of seconds, got 0"},
	{HEAD "'annotations':{'a':'b','c':true}}",
	 "config.json: annotations[\"c\"]: expected a string, got boolean"},
	{HEAD "'mounts':[{'destination':'/x','options':'ro'}]}",
	 "config.json: mounts[0].options: expected an array of strings, got string"},
	{HEAD "'mounts':[{'type':'tmpfs'}]}",
	 "config.json: mounts[0].destination: missing (required)"},
	/* #17.5: the spec's MUSTs runc 1.1 lets through or finds late */
	{HEAD "'mounts':[{'destination':'/a'},{'destination':'x','type':'tmpfs'}]}",
	 "config.json: mounts[1].destination: \"x\" is not an absolute path"},
	{HEAD "'mounts':[{'destination':'','type':'tmpfs'}]}",
	 "config.json: mounts[0].destination: \"\" is not an absolute path"},
	{LNX("'maskedPaths':['/proc/kcore','proc/keys']"),
	 "config.json: linux.maskedPaths[1]: \"proc/keys\" is not an absolute path"},
	{LNX("'readonlyPaths':['sys']"),
	 "config.json: linux.readonlyPaths[0]: \"sys\" is not an absolute path"},
	{LNX("'namespaces':[{'type':'user'}]"),
	 "config.json: linux.uidMappings: missing (required with a new user namespace)"},
	/* no mount namespace: the host's is shared; what would change it is refused */
	{LNX("'namespaces':[{'type':'pid'}],'maskedPaths':['/proc/kcore']"),
	 "config.json: linux.maskedPaths: needs a mount namespace of its own (linux.namespaces has "
	 "no \"mount\")"},
	{LNX("'readonlyPaths':['/proc/sys']"),
	 "config.json: linux.readonlyPaths: needs a mount namespace of its own*"},
	{LNX("'namespaces':[{'type':'uts'}],'rootfsPropagation':'shared'"),
	 "config.json: linux.rootfsPropagation: needs a mount namespace of its own*"},
	{HEAD
	 "'mounts':[{'destination':'/v','type':'bind','source':'/tmp','options':['ursa-gofer']}]}",
	 "config.json: mounts: needs a mount namespace of its own*"},
	{LNX("'namespaces':[{'type':'user'}],'uidMappings':[{'containerID':0,'hostID':1,"
	     "'size':1}]"),
	 "config.json: linux.gidMappings: missing (required with a new user namespace)"},
	{PROC("'rlimits':[{'type':'RLIMIT_NOFILES','hard':1,'soft':1}]"),
	 "config.json: process.rlimits[0].type: unknown rlimit type \"RLIMIT_NOFILES\"*"},
	{HEAD "'process':{'args':['sh'],'cwd':''}}",
	 "config.json: process.cwd: must be an absolute path, got \"\""},
	{LNX("'namespaces':[{'type':'net'}]"),
	 "config.json: linux.namespaces[0].type: unknown namespace type \"net\"*"},
	{LNX("'seccomp':{'defaultAction':'SCMP_ACT_KILL_ALL'}"),
	 "config.json: linux.seccomp.defaultAction: unknown seccomp action \"SCMP_ACT_KILL_ALL\"*"},
	{LNX("'seccomp':{'defaultAction':'SCMP_ACT_ALLOW','flags':['SECCOMP_FILTER_FLAG_X']}"),
	 "config.json: linux.seccomp.flags[0]: unknown seccomp flag \"SECCOMP_FILTER_FLAG_X\"*"},
	{"{'ociVersion':'1.0.2','root':{'path':''}}", "config.json: root.path: must not be empty"},
	{"{'ociVersion':'1.0.2','root':{}}", "config.json: root.path: missing (required)"},
	{"{'ociVersion':'1.0.2'}", "config.json: root: missing (required on Linux)"},
	{"{'root':{'path':'r'}}", "config.json: ociVersion: missing (required)"},
	{"{'ociVersion':'2.0.0','root':{'path':'r'}}",
	 "config.json: ociVersion: unsupported version \"2.0.0\" (expected 1.x)"},
	{"{'ociVersion':1,'root':{'path':'r'}}",
	 "config.json: ociVersion: expected a string, got integer"},
	{"[1,2]", "config.json: expected a JSON object at the top level, got array"},
	{"{\n  'ociVersion': '1.0.0',\n  'root': }\n",
	 "config.json: line 3 column 11: invalid JSON: *"},
	{"{'ociVersion':'1.0.0','root':{'path':'r'},'x':99999999999999999999}",
	 "config.json: line 1 column 66: invalid JSON: too big integer*"},
	{PROC("'rlimits':[{'type':'RLIMIT_NOFILE','hard':18446744073709551615,"
	      "'soft':18446744073709551616}]"),
	 "config.json: line 1 column *"},
	{PROC("'oomScoreAdj':18446744073709551615"),
	 "config.json: process.oomScoreAdj: 18446744073709551615 is out of range (max 1000)"},
	{PROC("'args':18446744073709551615"),
	 "config.json: process.args: expected an array of strings, got integer"},
};

static void test_bad_configs(void **state)
{
	(void) state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct urs_err err = {{0}};
		struct urs_spec *s = (struct urs_spec *) 1;
		int r = parse_q(bad[i].json, &s, &err);
		if (r != -EINVAL)
			fail_msg("case %zu: expected -EINVAL, got %d (%s)", i, r, err.msg);
		assert_null(s);
		size_t n = strlen(bad[i].msg);
		bool prefix = bad[i].msg[n - 1] == '*';
		bool ok = prefix ? !strncmp(err.msg, bad[i].msg, n - 1)
				 : !strcmp(err.msg, bad[i].msg);
		if (!ok)
			fail_msg("case %zu:\n  want: %s\n  got:  %s", i, bad[i].msg, err.msg);
	}
	print_message("%zu bad configs checked\n", sizeof(bad) / sizeof(bad[0]));
	/* and without them, no mount namespace is fine */
	struct urs_err err = {{0}};
	_cleanup_spec_ struct urs_spec *s = NULL;
	if (parse_q(LNX("'namespaces':[{'type':'pid'}]"), &s, &err))
		fail_msg("%s", err.msg);
}

static void test_load_errors(void **state)
{
	(void) state;
	struct urs_err err = {{0}};
	struct urs_spec *s = NULL;
	assert_int_equal(urs_spec_load(URS_TEST_DATA "/no-such-config.json", &s, &err), -ENOENT);
	assert_null(s);
	assert_non_null(strstr(err.msg, "no-such-config.json: cannot open"));
	assert_int_equal(urs_spec_load(URS_TEST_DATA, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a regular file"));
}

/* Every truncation of the full config fails cleanly (and leaks nothing). */
/* #17.5.6: LSM labels are refused where the host has not the LSM */
static void test_host_support(void **state)
{
	(void) state;
	static const struct {
		const char *json, *field;
		bool (*has)(void);
	} cases[] = {
		{PROC("'apparmorProfile':'docker-default'"), "process.apparmorProfile",
		 urs_host_has_apparmor},
		{PROC("'selinuxLabel':'system_u:system_r:container_t:s0'"), "process.selinuxLabel",
		 urs_host_has_selinux},
		{LNX("'mountLabel':'system_u:object_r:container_file_t:s0'"), "linux.mountLabel",
		 urs_host_has_selinux},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct urs_err err = {{0}};
		_cleanup_spec_ struct urs_spec *s = NULL;
		assert_int_equal(parse_q(cases[i].json, &s, &err), 0);
		int r = urs_spec_check_host(s, &err);
		if (cases[i].has())
			continue; /* applied there (or refused as not applied yet) */
		assert_int_equal(r, -EOPNOTSUPP);
		char want[128];
		snprintf(want, sizeof(want), "config.json: %s: ", cases[i].field);
		if (strncmp(err.msg, want, strlen(want)) ||
		    !strstr(err.msg, "not enabled on this host"))
			fail_msg("case %zu: %s", i, err.msg);
	}
	/* urs_spec_load() checks; an empty label asks for nothing */
	char path[] = "/tmp/ursa-test-spec-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *j = "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\"},\"process\":{"
			"\"args\":[\"sh\"],\"cwd\":\"/\",\"apparmorProfile\":\"x\"},"
			"\"linux\":{\"mountLabel\":\"\"}}";
	assert_int_equal(write(fd, j, strlen(j)), (ssize_t) strlen(j));
	close(fd);
	struct urs_err err = {{0}};
	struct urs_spec *s = NULL;
	int r = urs_spec_load(path, &s, &err);
	unlink(path);
	assert_int_equal(r, -EOPNOTSUPP);
	assert_null(s);
	assert_non_null(strstr(err.msg, "process.apparmorProfile"));
}

static void test_truncations(void **state)
{
	(void) state;
	struct urs_err err;
	_cleanup_spec_ struct urs_spec *full = NULL;
	FILE *f = fopen(URS_TEST_DATA "/spec_full.json", "r");
	assert_non_null(f);
	char buf[16384];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_true(n > 100 && n < sizeof(buf));
	assert_int_equal(urs_spec_parse(buf, n, &full, &err), 0);
	for (size_t len = 0; len < n - 2; len++) {
		struct urs_spec *s = NULL;
		int r = urs_spec_parse(buf, len, &s, &err);
		assert_int_equal(r, -EINVAL);
		assert_null(s);
		assert_non_null(strstr(err.msg, "invalid JSON"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_default_spec),
		cmocka_unit_test(test_minimal_and_extensions),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_ann_bool),
		cmocka_unit_test(test_bad_configs),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_host_support),
		cmocka_unit_test(test_truncations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
