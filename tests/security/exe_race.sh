#!/bin/bash
# CVE-2019-5736 class: while `ursa exec` runs repeatedly, a process in the
# container races to open /proc/PID/exe of ursa's helpers (host binary), then
# tries to reopen it for writing. Runs against a COPY of the ursa binary.
# Arg: "ptrace" adds CAP_SYS_PTRACE to the container (not default).
. "$(dirname "$0")/lib.sh"
mode=${1:-default}
cp "$URSA" "$WORK/ursa-copy"; URSA=$WORK/ursa-copy
b=$WORK/b; mkbundle "$b"
gcc -static -O2 -o "$b/rootfs/bin/exe_racer" "$HERE/exe_racer.c" || exit 2
dev=$(stat -c %d "$URSA"); ino=$(stat -c %i "$URSA")
# st_dev as the kernel reports it in fstat: major/minor encoded like glibc makedev
devhex=$(python3 -c "import os;print(os.stat('$URSA').st_dev)")
jq --arg d "$devhex" --arg i "$ino" '.process.args=["exe_racer",$d,$i,"12"]' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
[ "$mode" = ptrace ] && jq '.process.capabilities |= with_entries(.value += ["CAP_SYS_PTRACE"])' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid exe
(cd "$b" && "$URSA" --root "$SECROOT" create "$id" >"$WORK/out" 2>&1) || exit 2
u start "$id"
for i in $(seq 1 60); do "$URSA" --root "$SECROOT" exec "$id" /bin/true 2>/dev/null; done
# wait for the racer to finish
for i in $(seq 1 40); do [ "$(u state "$id" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 1; done
cat "$WORK/out" | sed 's/^/  /'
grep -q "RESULT WROTE-OPEN" "$WORK/out" && broken "container reopened the host ursa binary for writing ($mode caps)"
grep -q "RESULT handle" "$WORK/out" && partial "container got a handle to the host ursa binary ($mode caps), write refused"
grep -q "RESULT no handle" "$WORK/out" || exit 2
held "no handle to the ursa binary ($mode caps)"
