#!/bin/bash
# A container WITHOUT a pid namespace (default caps otherwise): can it reach
# its supervisor (ursa-sup): /proc/PID/exe, root, fd, environ, ptrace, the
# control socket? Signalling it is possible by design for uid 0 sharing the
# host pid namespace (reported, not failed); after killing it, does
# `delete --force` still clean up?
. "$(dirname "$0")/lib.sh"
b=$WORK/b; mkbundle "$b"
cp /bin/busybox "$b/rootfs/bin/"; 
probe='
sup=$(awk "/^PPid/{print \$2}" /proc/$$/status)   # the init'"'"'s parent: its supervisor
grep -q "^ursa-sup" /proc/$sup/comm || sup=
[ -n "$sup" ] || { echo "no supervisor visible"; exit 0; }
echo "supervisor pid $sup visible"
r=0
readlink /proc/$sup/exe >/dev/null 2>&1 && { echo "exe link readable: $(readlink /proc/$sup/exe)"; r=1; }
cat /proc/$sup/exe >/dev/null 2>&1 && { echo "exe OPENED"; r=1; }
ls /proc/$sup/root/ >/dev/null 2>&1 && { echo "root REACHABLE: $(ls /proc/$sup/root | head -3 | tr "\n" " ")"; r=1; }
n=0; for f in /proc/$sup/fd/*; do readlink $f >/dev/null 2>&1 && n=$((n+1)); done; [ $n -gt 0 ] && { echo "fd links READABLE: $n"; r=1; }; ls /proc/$sup/fd >/dev/null 2>&1 && echo "note: fd numbers listable (no targets)"
cat /proc/$sup/environ >/dev/null 2>&1 && { echo "environ READABLE"; r=1; }
for s in $(find / -xdev -name ctl.sock 2>/dev/null); do echo "found ctl.sock at $s"; r=1; done
kill -0 $sup 2>/dev/null && echo "note: can signal supervisor (uid 0, shared pid ns)"
exit $r'
jq --arg p "$probe" '.process.args=["sh","-c",$p] | .linux.namespaces |= map(select(.type!="pid"))' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid nopid
(cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id"); rc=$?
# kill the supervisor from inside (its pid, from the record, left in the
# rootfs between create and start: the init's parent is not it), then check
# delete --force cleans up; only if it is ursa-sup: a pid gone stale must not
# take down whatever has it now (the suite's runner, once)
jq '.process.args=["sh","-c","trap \"\" TERM; sup=$(cat /sup.pid); grep -q ^ursa-sup /proc/$sup/comm && kill -9 $sup; sleep 1000"]' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid nopidk; id2=$id
(cd "$b" && "$URSA" --root "$SECROOT" create "$id2" >/dev/null 2>&1) &&
	jq .sup_pid "$SECROOT/$id2/state.json" >"$b/rootfs/sup.pid" && u start "$id2"
sp=$(cat "$b/rootfs/sup.pid" 2>/dev/null)
wait_for 20 gone "$sp" || echo "note: the supervisor $sp was not killed from inside"
st=$(u state "$id2"); ipid=$(echo "$st" | jq .pid); echo "after killing its supervisor: $(echo "$st" | jq -c '{status,pid}')"
cg=$(jq -r .cgroup "$SECROOT/$id2/state.json")
u delete --force "$id2"
wait_for 20 gone "$ipid"
left=0
grep -s "^State" /proc/$ipid/status | grep -qv zombie && { echo "init $ipid still alive after delete --force"; left=1; }
ls -d /sys/fs/cgroup/*/ursa/"$id2" 2>/dev/null && { echo "cgroup left behind"; left=1; }
[ $rc -ne 0 ] && broken "container reached its supervisor (see above)"
[ $left -ne 0 ] && partial "supervisor killable from the container and delete --force leaves residue"
held "supervisor's exe/root/fd/socket unreachable; delete --force cleans up after a killed supervisor"
