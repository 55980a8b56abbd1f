#!/bin/sh
# tests/containerd/probe.sh — run inside a container by tests/containerd/run
# (bind-mounted read-only at /probe.sh) under runc and under ursa; each
# "## name" section is compared between the two. Normalised: pipe inode
# numbers; the order of mounts (sorted); tmpfs "size=0k" on masked paths (ursa
# passes size=0, runc no size: both read-only, no difference); /dev/core (a
# dangling symlink to /proc/kcore ursa makes even when the host has no
# /proc/kcore; runc makes it only when the host has one).
exec 2>&1
echo "## status"
grep -E '^(Cap|NoNewPrivs|Seccomp|Uid|Gid|Groups|Umask)' /proc/self/status
echo "## env"
env | sort
echo "## mounts"
awk '$2 == "/" { print $2, $3; next } { sub(/,size=0k/, "", $4); print $1, $2, $3, $4 }' /proc/self/mounts | sort
echo "## dev"
ls -ln /dev | awk 'NR > 1 && $NF != "/proc/kcore" { print $1, $3, $4, $5, $6, $NF }'
echo "## ulimit"
ulimit -a
echo "## cgroup"
cat /proc/self/cgroup
echo "## identity"
cat /proc/self/oom_score_adj
hostname
id
pwd
echo "## masked"
for p in /proc/kcore /proc/keys /proc/timer_list /proc/acpi /sys/firmware /proc/sysrq-trigger; do
	[ -e "$p" ] || { echo "$p absent"; continue; }
	ls -ld "$p" | awk '{ print $1, $NF }'
	if [ -d "$p" ]; then ls -A "$p" | wc -l; else head -c 16 "$p" 2>&1 | wc -c; fi
done
echo "## readonly"
for p in /proc/bus /proc/fs /proc/irq /proc/sys /proc/sysrq-trigger /sys; do
	touch "$p/x" 2>/dev/null && echo "$p writable" || echo "$p ro"
done
echo 1 2>/dev/null >/proc/sys/vm/drop_caches && echo "sysctl writable" || echo "sysctl ro"
echo "## fds"
# the fds a fresh child inherits (anything the runtime leaked into the
# container's init is still open here: the init exec'd this shell, which
# passes it on); not the shell's own table, which holds pipes and saved
# stdio copies while it runs a pipeline. ls's own directory fd is dropped.
ls -l /proc/self/fd 2>/dev/null | awk 'NR > 1 && NF >= 11 && $11 !~ /^\/proc\/[0-9]+\/fd$/ { sub(/\[[0-9]+\]/, "", $NF); print $9, $11 }'
echo "## ns"
for n in cgroup ipc mnt net pid user uts; do
	[ "$(readlink /proc/self/ns/$n)" = "$(readlink /proc/1/ns/$n)" ] && echo "$n same-as-1"
done
echo "## sched"
grep -E '^(Cpus_allowed_list|Mems_allowed_list)' /proc/self/status
echo "## end"
