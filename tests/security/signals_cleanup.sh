#!/bin/bash
# An init that ignores SIGTERM and leaves daemonized children and a fork bomb
# under a pids limit: the host keeps spare pids, and `delete --force` leaves no
# process, zombie or cgroup behind.
. "$(dirname "$0")/lib.sh"
b=$WORK/b; mkbundle "$b"
bomb='trap "" TERM HUP INT; (setsid sh -c "trap \"\" TERM; sleep 999" &) ; (while :; do sleep 999 & done) 2>/dev/null & sleep 999'
jq --arg p "$bomb" '.process.args=["sh","-c",$p] | .linux.resources.pids={"limit":40}' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid bomb
(cd "$b" && "$URSA" --root "$SECROOT" create "$id" >/dev/null 2>&1) || exit 2
u start "$id"; sleep 3
pcg=$(jq -r .cgroup "$SECROOT/$id/state.json" | tr ';' '\n' | sed -n 's/^pids=1://p')
n=$(wc -l <"$pcg/cgroup.procs"); echo "pids in the container's pids cgroup: $n (limit 40), pids.max=$(cat "$pcg/pids.max")"
u kill "$id" TERM; sleep 1
echo "status after SIGTERM: $(u state "$id" | jq -r .status)"
sup=$(jq .sup_pid "$SECROOT/$id/state.json")
u delete --force "$id"; rc=$?
for i in $(seq 1 50); do
	left=$(grep -l "ursa/$id\b" /proc/[0-9]*/cgroup 2>/dev/null | wc -l)
	[ "$left" = 0 ] && ! grep -qs '^State:.*[^Z] ' /proc/$sup/status && break; sleep 0.1
done
left=$(grep -l "ursa/$id\b" /proc/[0-9]*/cgroup 2>/dev/null | wc -l)
zomb=$(ps -eo stat,ppid,comm | awk '$1 ~ /^Z/' | wc -l)
cgs=$(ls -d /sys/fs/cgroup/*/ursa/"$id" /sys/fs/cgroup/memory/*/*/ursa/"$id" 2>/dev/null)
grep -s '^State' /proc/$sup/status | grep -qv zombie && echo "supervisor $sup still alive"
echo "delete rc=$rc; processes left in its cgroups: $left; cgroup dirs left: ${cgs:-none}"
[ "$n" -gt 41 ] && broken "pids limit not enforced ($n)"
[ "$left" -gt 0 ] || [ -n "$cgs" ] || grep -s '^State' /proc/$sup/status | grep -qv zombie && broken "residue after delete --force"
held "pids limit held, delete --force removed everything"
