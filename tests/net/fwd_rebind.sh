#!/usr/bin/env bash
# tests/net/fwd_rebind.sh — a port forward's host port is free the moment
# the sandbox is gone, so the next sandbox can bind it at once:
#   - `ursa delete --force` then at once `ursa run` forwarding the same host
#     port, 20 times: no listener is left when delete returns, and every run
#     binds (no EADDRINUSE)
#   - the supervisor SIGKILLed (as by cgroup.kill): its listener is gone by
#     the time it is a zombie (no deferred close by the ring's teardown)
#   - `ursa checkpoint` then at once `ursa restore` (same host port), 3 times
# Before the fix the listener outlived the supervisor by ~10 ms: an io_uring
# request held the socket file, and the ring's teardown in a kernel worker
# deferred its last fput (net/internal.h, struct urs_net_fwd).
# Needs root and curl. Env: URSA.
set -u
P=fwr$$-
URSA=${URSA:?}
. "$(dirname "$0")/../lib/skip.sh"
need_root
need_cmd curl
work=$(mktemp -d /tmp/ursa-fwd-rebind.XXXXXX)
root=$work/root
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for
u() { "$URSA" --root "$root" "$@"; }
ids=
cleanup() {
	for id in $ids; do u delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT
serves() { [ "$(curl -s -m 5 "http://127.0.0.1:$port/index.html" 2>/dev/null)" = "$sum" ]; }
listening() { ss -Hltn "sport = :$port" | grep -q .; }

mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/tmp" "$work/rootfs/www" "$work/b"
cp /bin/busybox "$work/rootfs/bin/" && ln -s busybox "$work/rootfs/bin/sh"
sum=fwd-rebind-$$
echo "$sum" >"$work/rootfs/www/index.html"
# below the ephemeral range (32768+), where nothing binds by chance
port=
for p in $(seq $((22000 + $$ % 6000)) 32000); do
	ss -Hltn "sport = :$p" | grep -q . || { port=$p; break; }
done
(cd "$work/b" && "$URSA" spec) || exit 1
jq --arg rootfs "$work/rootfs" --arg ports "127.0.0.1:$port:80" '.root.path = $rootfs
	| .root.readonly = false | .process.terminal = false
	| .process.args = ["/bin/busybox", "httpd", "-f", "-p", "80", "-h", "/www"]
	| .annotations = {"run.ursa.network": "sandbox", "run.ursa.ports": $ports}' "$work/b/config.json" >"$work/c" &&
	mv "$work/c" "$work/b/config.json"
run() { # ID
	ids="$ids $1"
	(cd "$work/b" && u run -d "$1" >/dev/null 2>"$work/run.err")
}

# ---- delete --force, then run at once ----------------------------------------------
run ${P}0 || bad "run -d" "$(cat "$work/run.err")"
check "httpd serves through the port forward" 'wait_for 10 serves'
left=0 refused=0 err=
for i in $(seq 1 20); do
	u delete --force ${P}$((i - 1)) >/dev/null 2>&1
	listening && left=$((left + 1))
	if ! run ${P}$i; then
		refused=$((refused + 1))
		err=$(cat "$work/run.err")
		sleep 0.1
		run ${P}$i || break
	fi
done
check "no listener left on the host port when delete returns (20 times)" '[ $left = 0 ]' \
	"$left of 20 deletes returned with the port still listening"
check "every immediate run binds the same host port (20 times)" '[ $refused = 0 ]' \
	"$refused of 20 runs failed: $err"
check "the last one serves" 'wait_for 10 serves'
last=${P}$i

# ---- the supervisor SIGKILLed ------------------------------------------------------------
# a zombie whose threads (io_uring workers share its files) are gone too
# has closed its files: what a pidfd reports, and what the CLI waits for
gone_or_zombie() {
	local st
	st=$(cut -d' ' -f3 /proc/$1/stat 2>/dev/null) || return 0
	[ "$st" = Z ] && [ "$(ls /proc/$1/task 2>/dev/null | wc -l)" -le 1 ]
}
left=0
for i in 1 2 3 4 5; do
	pid=$(u state $last 2>/dev/null | jq -r .pid)
	sup=$(jq -r .sup_pid "$root/$last/state.json" 2>/dev/null) # beside the init
	[ -n "$sup" ] && [ "$sup" -gt 1 ] && [ -d "/proc/$sup" ] ||
		{ bad "the supervisor of $last" "init $pid"; break; }
	kill -KILL "$sup"
	wait_for 5 gone_or_zombie "$sup"
	listening && left=$((left + 1))
	u delete --force $last >/dev/null 2>&1
	last=${P}k$i
	run $last || { bad "run after the supervisor was killed" "$(cat "$work/run.err")"; break; }
done
check "a SIGKILLed supervisor's listener is gone when it is (5 times)" '[ $left = 0 ]' \
	"$left of 5 times the port was still listening"
check "and the next sandbox serves" 'wait_for 10 serves'

# ---- checkpoint, then restore at once -------------------------------------------------
left=0 refused=0 err=
for i in 1 2 3; do
	rm -rf "$work/img"
	if ! u checkpoint --image-path "$work/img" $last 2>"$work/ck.err"; then
		bad "checkpoint" "$(cat "$work/ck.err")"
		break
	fi
	listening && left=$((left + 1))
	if ! (cd "$work/b" && u restore -d --image-path "$work/img" $last >/dev/null 2>"$work/rs.err"); then
		refused=$((refused + 1))
		err=$(cat "$work/rs.err")
		sleep 0.1
		(cd "$work/b" && u restore -d --image-path "$work/img" $last >/dev/null 2>&1) || break
	fi
done
check "no listener left on the host port when checkpoint returns (3 times)" '[ $left = 0 ]' \
	"$left of 3 checkpoints returned with the port still listening"
check "every immediate restore binds the same host port (3 times)" '[ $refused = 0 ]' \
	"$refused of 3 restores failed: $err"
check "the restored httpd serves" 'wait_for 10 serves'
u delete --force $last >/dev/null 2>&1
check "nothing listens after the last delete" '! listening'
echo "passed $passed, failed $failed"
[ "$failed" = 0 ]
