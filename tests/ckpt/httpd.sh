#!/usr/bin/env bash
# tests/ckpt/httpd.sh — a sandbox WITH its NIC and a port forward
# (run.ursa.ports) checkpointed and restored: busybox httpd serves a file;
#   - a request through the forward works; checkpoint (the sandbox is gone,
#     the forward's host port is free); restore: a NEW request through the
#     forward returns the same file (sha256); the listening socket came back
#     by injected socket/bind/listen in the restored network namespace,
#     whose eth0 has the same addresses
#   - a connection open at checkpoint time (established TCP) is closed on
#     restore, and httpd goes on serving
#   - --leave-running: the original keeps serving on its forward while the
#     image restores under another id and bundle (another host port)
#   - busybox syslogd (a unix datagram socket bound to /dev/log, on its fd
#     0): checkpointed and restored, it logs a message sent after restore
#     and kept the file it wrote before
#   - busybox ping (an ICMP socket): the checkpoint is refused naming the
#     pid, the fd and why; it runs on
# Needs root and curl. Env: URSA.
set -u
P=ckh$$-
URSA=${URSA:?}
. "$(dirname "$0")/../lib/skip.sh"
need_root
need_cmd curl
work=$(mktemp -d /tmp/ursa-ckpt-httpd.XXXXXX)
root=$work/root
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for
u() { "$URSA" --root "$root" "$@"; }
cleanup() {
	[ -n "${hold:-}" ] && kill "$hold" 2>/dev/null
	for id in ${P}h1 ${P}h2 ${P}h3 ${P}h4; do u delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT
status_of() { u state "$1" 2>/dev/null | jq -r .status; }
get() { curl -s -m 5 -o "$2" -w '%{http_code}' "http://127.0.0.1:$1/file.bin" 2>/dev/null; }
serves() { [ "$(get "$1" "$work/got")" = 200 ] && [ "$(sha256sum <"$work/got" | cut -d' ' -f1)" = "$sum" ]; }

mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/tmp" "$work/rootfs/www" "$work/b" "$work/b2"
cp /bin/busybox "$work/rootfs/bin/" && ln -s busybox "$work/rootfs/bin/sh"
head -c 200000 /dev/urandom >"$work/rootfs/www/file.bin"
sum=$(sha256sum <"$work/rootfs/www/file.bin" | cut -d' ' -f1)
# two free ports below the ephemeral range (32768+), where nothing binds by chance
free_port() { # FROM
	local p
	for p in $(seq "$1" 32000); do
		ss -Hltn "sport = :$p" | grep -q . || { echo $p; return; }
	done
}
port1=$(free_port $((20000 + $$ % 6000)))
port2=$(free_port $((port1 + 1)))
(cd "$work/b" && "$URSA" spec) || exit 1
mk_bundle() { # DIR PORT
	jq --arg rootfs "$work/rootfs" --arg ports "127.0.0.1:$2:80" '.root.path = $rootfs | .root.readonly = false
		| .process.terminal = false | .process.args = ["/bin/busybox", "httpd", "-f", "-p", "80", "-h", "/www"]
		| .annotations = {"run.ursa.network": "sandbox", "run.ursa.ports": $ports}' "$work/b/config.json" >"$1/c" && mv "$1/c" "$1/config.json"
}
mk_bundle "$work/b2" $port2
mk_bundle "$work/b" $port1

(cd "$work/b" && u run -d ${P}h1 >/dev/null 2>"$work/run.err") || bad "run -d" "$(cat "$work/run.err")"
check "httpd serves through the port forward" 'wait_for 10 serves $port1' "$(cat "$work/run.err")"
# a connection left open across the checkpoint (httpd holds it established)
(exec 3<>/dev/tcp/127.0.0.1/$port1 && printf 'GET /file.bin HTTP/1.0\r\n' >&3 && sleep 30) &
hold=$!
# established (the request line sent), up to 10 s
wait_for 10 sh -c "ss -Htn state established '( dport = :$port1 )' | grep -q ." || true
if u checkpoint --image-path "$work/img" --work-path "$work/wp" ${P}h1 2>"$work/ck.err"; then
	ok "checkpoint of a sandbox with a NIC and a port forward"
else
	bad "checkpoint of a sandbox with a NIC and a port forward" "$(cat "$work/ck.err")"
fi
kill "$hold" 2>/dev/null
hold=
check "httpd and its child serving the open connection were dumped" \
	'grep -q "dumped 2 tasks" "$work/wp/dump.log"' "$(cat "$work/wp/dump.log" 2>/dev/null)"
check "the sandbox is gone" '! u state ${P}h1 >/dev/null 2>&1'
check "nothing serves on the forward any more" '! serves $port1'
t0=$(date +%s%N)
(cd "$work/b" && u restore --detach --image-path "$work/img" ${P}h1 >/dev/null 2>"$work/rs.err") ||
	bad "restore" "$(cat "$work/rs.err")"
check "a NEW request through the port forward returns the same file (sha256)" 'wait_for 10 serves $port1'
echo "      restore until the first good response: $((($(date +%s%N) - t0) / 1000000)) ms"
check "state says running" '[ "$(status_of ${P}h1)" = running ]'
pid=$(u state ${P}h1 | jq -r .pid)
check "eth0 has the same address in the restored sandbox" \
	'nsenter -t "$pid" -n ip -4 addr show eth0 2>/dev/null | grep -q "inet 10.0.2.2/"'
check "and again (httpd keeps serving)" 'serves $port1'
# the child's connection came back closed: its read fails, it exits
nprocs() { u ps ${P}h1 2>/dev/null | grep -c httpd; }
check "the connection open at checkpoint time was closed on restore (its httpd child exits)" \
	'wait_for 10 sh -c "[ \$(\"$URSA\" --root \"$root\" ps ${P}h1 2>/dev/null | grep -c httpd) = 1 ]"' \
	"$(u ps ${P}h1 2>&1)"

# ---- --leave-running: the original keeps serving ----------------------------------
check "checkpoint --leave-running" 'u checkpoint --leave-running --image-path "$work/img2" ${P}h1 2>"$work/ck2.err"' \
	"$(cat "$work/ck2.err" 2>/dev/null)"
check "the original keeps serving" 'serves $port1'
(cd "$work/b2" && u restore --detach --image-path "$work/img2" ${P}h2 >/dev/null 2>"$work/rs2.err")
rc=$?
check "restore under another id and bundle (another host port)" '[ $rc = 0 ]' "$(cat "$work/rs2.err" 2>/dev/null)"
check "the copy serves the same file on its forward" '[ "$port2" != "$port1" ] && wait_for 10 serves $port2'
check "and the original still does" 'serves $port1'
for id in ${P}h1 ${P}h2; do u kill $id KILL >/dev/null 2>&1; done
for id in ${P}h1 ${P}h2; do
	wait_for 10 sh -c "[ \"\$('$URSA' --root '$root' state $id 2>/dev/null | jq -r .status)\" = stopped ]" || true
	u delete --force $id >/dev/null 2>&1
done
check "nothing left" '! u state ${P}h1 >/dev/null 2>&1 && ! u state ${P}h2 >/dev/null 2>&1'

# ---- syslogd: a datagram socket bound to /dev/log comes back ---------------------------
# (no port forward: the host port is the httpd copies' business)
jq '.process.args = ["/bin/busybox", "syslogd", "-n", "-O", "/tmp/messages"]
	| del(.annotations["run.ursa.ports"])' "$work/b/config.json" >"$work/b2/config.json"
(cd "$work/b2" && u run -d ${P}h3 >/dev/null 2>"$work/run3.err") || bad "run -d syslogd" "$(cat "$work/run3.err")"
wait_for 10 sh -c "u() { '$URSA' --root '$root' \"\$@\"; }; u ps ${P}h3 2>/dev/null | grep -q syslogd" || true
# syslogd listens: its /dev/log exists (up to 10 s)
wait_for 10 sh -c "'$URSA' --root '$root' exec ${P}h3 /bin/busybox test -S /dev/log" || true
u exec ${P}h3 /bin/busybox logger before-ckpt >/dev/null 2>&1
check "syslogd logs before the checkpoint" \
	'wait_for 5 sh -c "u() { '"'$URSA'"' --root '"'$root'"' \"\$@\"; }; u exec ${P}h3 /bin/busybox cat /tmp/messages | grep -q before-ckpt"'
u checkpoint --image-path "$work/img3" ${P}h3 >/dev/null 2>"$work/ck3.err"
rc=$?
check "a unix datagram socket bound to /dev/log is checkpointed" '[ $rc = 0 ]' "$(cat "$work/ck3.err")"
u restore --detach --image-path "$work/img3" --bundle "$work/b2" ${P}h3 >/dev/null 2>"$work/rs3.err"
rc=$?
check "syslogd restored" '[ $rc = 0 ]' "$(cat "$work/rs3.err")"
u exec ${P}h3 /bin/busybox logger after-restore >/dev/null 2>&1
check "it receives on /dev/log after restore (and kept /tmp/messages)" \
	'wait_for 5 sh -c "u() { '"'$URSA'"' --root '"'$root'"' \"\$@\"; }; u exec ${P}h3 /bin/busybox cat /tmp/messages | grep -q after-restore" &&
	u exec ${P}h3 /bin/busybox cat /tmp/messages | grep -q before-ckpt'
u delete --force ${P}h3 >/dev/null 2>&1

# ---- a socket that cannot be saved: refused, naming it; the sandbox runs on ----------
# busybox ping holds a raw ICMP socket (neither unix, TCP nor UDP; the
# configuration gives it CAP_NET_RAW)
jq '.process.args = ["/bin/busybox", "ping", "-i", "0.2", "127.0.0.1"]
	| del(.annotations["run.ursa.ports"])
	| .process.capabilities |= with_entries(.value += ["CAP_NET_RAW"])' "$work/b/config.json" \
	>"$work/b2/config.json"
(cd "$work/b2" && u run -d ${P}h4 >/dev/null 2>"$work/run4.err") || bad "run -d ping" "$(cat "$work/run4.err")"
spid=$(u state ${P}h4 2>/dev/null | jq -r .pid)
# ping runs (exec'd) and holds its socket (up to 10 s)
wait_for 10 sh -c "readlink /proc/$spid/exe | grep -q busybox && ls -l /proc/$spid/fd 2>/dev/null | grep -q socket:" || true
u checkpoint --image-path "$work/img4" ${P}h4 >/dev/null 2>"$work/ck4.err"
rc=$?
check "an ICMP socket is refused, naming the pid, the fd and why" \
	'[ $rc != 0 ] && grep -q "pid [0-9]*: fd [0-9]*: socket:\[[0-9]*\] is not a unix, TCP or UDP socket" "$work/ck4.err"' \
	"rc $rc: $(cat "$work/ck4.err")"
check "no image is left" '[ ! -e "$work/img4/core.img" ]'
check "the sandbox keeps running (same init)" \
	'[ "$(status_of ${P}h4)" = running ] && [ "$(u state ${P}h4 | jq -r .pid)" = "$spid" ] && kill -0 "$spid"'
u delete --force ${P}h4 >/dev/null 2>&1
echo "passed $passed, failed $failed"
[ "$failed" = 0 ]
