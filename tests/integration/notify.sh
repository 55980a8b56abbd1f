#!/usr/bin/env bash
# tests/integration/notify.sh — SCMP_ACT_NOTIFY end to end: the listener fd
# reaches the agent at linux.seccomp.listenerPath with the container process
# state, and the agent's answer (EACCES) is what the container's mkdir sees.
set -u
URSA=${URSA:?}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/ursa-notify.XXXXXX)
root=$work/root
cleanup() {
	"$URSA" --root "$root" delete --force n1 >/dev/null 2>&1
	[ -n "${agent:-}" ] && kill "$agent" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/rootfs/bin" "$work/b" && cp /bin/busybox "$work/rootfs/bin/" &&
	ln -s busybox "$work/rootfs/bin/sh" && ln -s busybox "$work/rootfs/bin/mkdir" &&
	mkdir -p "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys"
(cd "$work/b" && "$URSA" spec) || exit 1
jq --arg sock "$work/agent.sock" --arg rootfs "$work/rootfs" '
	.root.path = $rootfs | .process.terminal = false
	| .process.args = ["sh", "-c", "mkdir /dev/shm/zz; echo mkdir=$?"]
	| .linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", listenerPath: $sock,
		listenerMetadata: "meta", syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_NOTIFY"}]}' \
	"$work/b/config.json" > "$work/b/c" && mv "$work/b/c" "$work/b/config.json"
python3 "$here/notify_agent.py" "$work/agent.sock" > "$work/agent.out" 2>&1 &
agent=$!
for _ in $(seq 50); do [ -S "$work/agent.sock" ] && break; sleep 0.05; done
out=$(cd "$work/b" && timeout 20 "$URSA" --root "$root" run n1 2>&1)
rc=$?
wait "$agent" 2>/dev/null
agent=
pass=0 fail=0
ok() { echo "ok    $1"; pass=$((pass + 1)); }
bad() { echo "FAIL  $1"; echo "      $2"; fail=$((fail + 1)); }
[ "$rc" = 0 ] && ok "run exits 0" || bad "run exits 0" "rc=$rc out=$out"
grep -q 'agent got 1 fd' "$work/agent.out" && ok "the agent got the listener fd" || bad "the agent got the listener fd" "$(cat "$work/agent.out")"
grep -q '"metadata":"meta"' "$work/agent.out" && ok "with listenerMetadata in the state" || bad "with listenerMetadata in the state" "$(cat "$work/agent.out")"
echo "$out" | grep -q 'mkdir=1' && echo "$out" | grep -q 'Permission denied' && ok "the agent's EACCES reached the container" || bad "the agent's EACCES reached the container" "$out"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
