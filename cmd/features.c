/*
 * cmd/features.c — `ursa features`: what this runtime implements, in the
 * runtime-spec "features" JSON shape runc prints.
 */
#include <stdio.h>

#include "cmd/cli.h"
#include "cmd/cmd.h"

int cmd_features(int argc, char **argv)
{
	int i = urs_parse("features", "", argc, argv, NULL);
	if (i < 0)
		return i == -2 ? 0 : 1;
	printf("{\n"
	       "  \"ociVersionMin\": \"1.0.0\",\n"
	       "  \"ociVersionMax\": \"1.2.0\",\n"
	       "  \"hooks\": [\"prestart\", \"createRuntime\", \"createContainer\", "
	       "\"startContainer\", \"poststart\", \"poststop\"],\n"
	       "  \"mountOptions\": [\"async\", \"atime\", \"bind\", \"defaults\", \"dev\", "
	       "\"diratime\", \"dirsync\", \"exec\", \"iversion\", \"lazytime\", \"loud\", "
	       "\"mand\", \"noatime\", \"nodev\", \"nodiratime\", \"noexec\", \"noiversion\", "
	       "\"nolazytime\", \"nomand\", \"norelatime\", \"nostrictatime\", \"nosuid\", "
	       "\"private\", \"rbind\", \"relatime\", \"remount\", \"ro\", \"rprivate\", "
	       "\"rshared\", \"rslave\", \"runbindable\", \"rw\", \"shared\", \"silent\", "
	       "\"slave\", \"strictatime\", \"suid\", \"sync\", \"unbindable\"],\n"
	       "  \"linux\": {\n"
	       "    \"namespaces\": [\"cgroup\", \"ipc\", \"mount\", \"network\", \"pid\", "
	       "\"user\", \"uts\"],\n"
	       "    \"seccomp\": {\"enabled\": true, \"actions\": [\"SCMP_ACT_ALLOW\", "
	       "\"SCMP_ACT_ERRNO\", \"SCMP_ACT_KILL\", \"SCMP_ACT_KILL_PROCESS\", "
	       "\"SCMP_ACT_KILL_THREAD\", \"SCMP_ACT_LOG\", \"SCMP_ACT_NOTIFY\", "
	       "\"SCMP_ACT_TRACE\", \"SCMP_ACT_TRAP\"], \"operators\": [\"SCMP_CMP_EQ\", "
	       "\"SCMP_CMP_GE\", \"SCMP_CMP_GT\", \"SCMP_CMP_LE\", \"SCMP_CMP_LT\", "
	       "\"SCMP_CMP_MASKED_EQ\", \"SCMP_CMP_NE\"]},\n"
	       "    \"cgroup\": {\"v1\": true, \"v2\": true, \"systemd\": false}\n"
	       "  },\n"
	       "  \"annotations\": {\"org.opencontainers.runtime-spec.features.ursa\": \"1\"}\n"
	       "}\n");
	return 0;
}
