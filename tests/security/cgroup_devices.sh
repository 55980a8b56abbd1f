#!/bin/bash
# cgroups from inside: write to the container's cgroup files (ro bind), reach
# a parent's cgroup.procs or a v1 release_agent; the devices cgroup against
# mknod+open of a host block device when the container has CAP_MKNOD, with
# the default device rules and with no linux.resources at all.
. "$(dirname "$0")/lib.sh"
img=$WORK/disk.img; printf 'HOSTDATA' >"$img"; truncate -s 1M "$img"
loop=$(losetup --find --show "$img") || exit 2
trap 'losetup -d "$loop" 2>/dev/null; cleanup' EXIT
maj=$((16#$(stat -c %t "$loop"))); min=$((16#$(stat -c %T "$loop")))
b=$WORK/b; mkbundle "$b"; fail=0; part=0
probe='r=0
for f in /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/devices/devices.allow /sys/fs/cgroup/memory/cgroup.procs /sys/fs/cgroup/unified/cgroup.procs; do
  [ -e $f ] || continue; (echo a > $f) 2>/dev/null && { echo "WROTE $f"; r=1; }
done
find /sys/fs/cgroup -name release_agent 2>/dev/null | grep -q . && { echo "release_agent visible"; r=1; }
ls /sys/fs/cgroup/memory/.. | grep -q -v -e memory -e pids -e cpu -e cpuacct -e cpuset -e freezer -e devices -e blkio -e unified && { echo "parent cgroup visible"; }
mkdir -p /tmp/cg && mount -t cgroup -o memory cgroup /tmp/cg 2>/dev/null && { echo "MOUNTED cgroup v1"; r=1; }
mknod /tmp/victim b MAJ MIN 2>/dev/null || mknod /dev/victim b MAJ MIN 2>/dev/null
v=/tmp/victim; [ -e $v ] || v=/dev/victim
if [ -e $v ]; then printf PWNED | dd of=$v bs=5 count=1 conv=notrunc 2>/dev/null && { echo "WROTE host block device"; r=2; }; fi
exit $r'
probe=${probe//MAJ/$maj}; probe=${probe//MIN/$min}
jq --arg p "$probe" '.process.args=["sh","-c",$p] | .root.readonly=false | .process.capabilities |= with_entries(.value += ["CAP_MKNOD"])' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid cg; (cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id" 2>&1 | sed 's/^/  default rules + CAP_MKNOD: /'; exit ${PIPESTATUS[0]}); rc=$?
[ "$rc" != 0 ] && fail=1
jq 'del(.linux.resources)' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid cg2; (cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id" 2>&1 | sed 's/^/  no linux.resources + CAP_MKNOD: /'; exit ${PIPESTATUS[0]}); rc2=$?
[ "$rc2" = 2 ] && part=1
head -c 8 "$img" | grep -q PWNED && echo "  host image now: $(head -c 8 "$img")"
[ $fail = 1 ] && broken "default config + CAP_MKNOD reached cgroup files or devices"
[ $part = 1 ] && partial "without linux.resources.devices no device cgroup rules are applied: CAP_MKNOD reaches host block devices"
held "cgroup files read-only, devices cgroup enforced"
