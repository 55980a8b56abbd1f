#!/bin/bash
# fd leaks: any fd of the runtime/supervisor visible in the container's init or
# in an exec'd process (create+start, run, exec, do, --preserve-fds)?
. "$(dirname "$0")/lib.sh"
b=$WORK/b; mkbundle "$b"
# ls's own directory fd (-> /proc/N/fd) is the only fd >2 it may add
list='ls -l /proc/self/fd/ | sed -n "s/.* \\([0-9][0-9]*\\) -> \\(.*\\)/fd \\1 -> \\2/p" | grep -v "^fd [012] " | grep -v -- "-> /proc/[0-9]*/fd\$"'
jq --arg p "$list; sleep 30" '.process.args=["sh","-c",$p]' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
bad=0
chk() { # label, output
	local extra; extra=$(echo "$2" | grep '^fd ' | grep -v "${3:-^$}")
	if [ -n "$extra" ]; then echo "LEAK [$1]:"; echo "$extra" | sed 's/^/   /'; bad=1; else echo "clean [$1]"; fi
}
# create+start (init output to a file)
newid fdcs
(cd "$b" && "$URSA" --root "$SECROOT" create "$id" >"$WORK/cs.out" 2>&1 9>/dev/null) && u start "$id"
sleep 1; chk create+start "$(cat "$WORK/cs.out")"
# exec into it (with an extra fd 7 open in the caller: must not pass)
out=$(u exec "$id" sh -c "$list" 7</etc/hostname); chk exec "$out"
out=$(u exec --preserve-fds 1 "$id" sh -c "$list" 3</etc/hostname 7</etc/hostname)
chk "exec --preserve-fds 1" "$out" "^fd 3 -> /etc/hostname"
# ps of the init's fds from the host, as a cross-check
ip=$(u state "$id" | jq .pid); ls -l /proc/$ip/fd | sed 's/^/   host view of init fds: /'
u delete --force "$id" >/dev/null
# run
newid fdrun
jq --arg p "$list" '.process.args=["sh","-c",$p]' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
out=$(cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id" 8</etc/hostname); chk run "$out"
newid fdrunp
out=$(cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run --preserve-fds 1 "$id" 3</etc/hostname 8</etc/hostname)
chk "run --preserve-fds 1" "$out" "^fd 3 -> /etc/hostname"
# do
out=$(cd / && timeout 20 "$URSA" do -- /bin/busybox sh -c "$list" 8</etc/hostname); chk do "$out"
[ $bad = 0 ] && held "no runtime fds reach the container" || broken "fd leak(s) above"
