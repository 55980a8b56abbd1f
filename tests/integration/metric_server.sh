#!/usr/bin/env bash
# tests/integration/metric_server.sh — `ursa metric-server` against live
# sandboxes (`ursa run -d` of a busybox sleep bundle) and fake ones (a
# control socket that never answers, one that closes, one that answers
# garbage), on 127.0.0.1:PORT and on unix:PATH. The checks themselves are
# in metric_server.py (raw-socket HTTP, Debian's python3-prometheus-client
# parser, hence /usr/bin/python3): valid scrapes, skipped sandboxes, a
# supervisor killed mid-scrape, malformed requests, slow clients, the client
# cap, fds after 1000 requests, and a clean exit on SIGTERM.
set -u
URSA=${URSA:?}
PY=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
client=$here/metric_server.py
work=$(mktemp -d /tmp/ursa-ms.XXXXXX)
root=$work/root
pids=()
stopped=()
ids=(ms1 ms2 ms3 ms4)
cleanup() {
	local p
	for p in "${stopped[@]}"; do kill -CONT "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${ids[@]}"; do
		timeout -k 2 20 "$URSA" --root "$root" delete --force "$p" >/dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT
PASS=0
FAIL=0
ok() {
	PASS=$((PASS + 1))
	echo "ok    $1"
}
fail() {
	FAIL=$((FAIL + 1))
	echo "FAIL  $1"
	[ $# -gt 1 ] && echo "      $2"
}
finish() {
	echo "$PASS passed, $FAIL failed"
	[ "$FAIL" = 0 ]
	exit $?
}
# tally the python phases' closing lines into ours
phase() {
	local out rc
	out=$("$PY" "$client" "$@" 2>&1)
	rc=$?
	echo "$out" | grep -v ' passed, .* failed$'
	local line
	line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
	if [ -z "$line" ]; then
		fail "phase $1 ran to its end" "rc=$rc"
		return
	fi
	PASS=$((PASS + ${line%% passed*}))
	local f=${line#*passed, }
	FAIL=$((FAIL + ${f%% failed}))
}
# wait_for SECONDS CMD...
wait_for() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -ge "$end" ] && return 1
		sleep 0.05
	done
}

# ---- sandboxes ----------------------------------------------------------------
mkdir -p "$work/rootfs/bin" "$work/b" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys"
cp /bin/busybox "$work/rootfs/bin/" && ln -s busybox "$work/rootfs/bin/sleep"
(cd "$work/b" && "$URSA" spec) || exit 1
jq --arg rootfs "$work/rootfs" '.root.path = $rootfs | .process.terminal = false
	| .process.args = ["sleep", "1000"]' "$work/b/config.json" >"$work/b/c" &&
	mv "$work/b/c" "$work/b/config.json"
for id in "${ids[@]}"; do
	if (cd "$work/b" && "$URSA" --root "$root" run -d "$id" </dev/null >/dev/null 2>"$work/$id.err"); then
		ok "run -d $id"
	else
		fail "run -d $id" "$(head -c 300 "$work/$id.err")"
		finish
	fi
done
sup_pid() { # the supervisor: in the record (the init is the CLI's child, beside it)
	jq -r .sup_pid "$root/$1/state.json"
}
# fakes: hang0 never accepts, close0 hangs up after the request, junk0 answers garbage
for f in hang:hang0 close:close0 junk:junk0; do
	mode=${f%%:*} id=${f#*:}
	mkdir -p "$root/$id"
	"$PY" "$client" fake "$mode" "$root/$id/ctl.sock" &
	pids+=($!)
	wait_for 10 test -S "$root/$id/ctl.sock" || fail "fake $id listening"
done
# a real supervisor that hangs: stopped
ms4=$(sup_pid ms4)
kill -STOP "$ms4" && stopped+=("$ms4")

# ---- servers ------------------------------------------------------------------
HT=1000 CT=3000 ST=500
start_server() { # NAME LISTEN [flags...]: sets SRV_PID, SRV_ADDR
	local name=$1 listen=$2
	shift 2
	"$URSA" --root "$root" metric-server --listen "$listen" --header-timeout-ms $HT \
		--client-timeout-ms $CT --scrape-timeout-ms $ST "$@" >"$work/$name.out" 2>"$work/$name.err" &
	SRV_PID=$!
	pids+=("$SRV_PID")
	if ! wait_for 10 grep -q '^listening on ' "$work/$name.out"; then
		fail "$name: listening" "$(cat "$work/$name.err")"
		finish
	fi
	SRV_ADDR=$(sed -n 's/^listening on //p' "$work/$name.out")
	ok "$name: listening on $SRV_ADDR"
}
start_server tcp 127.0.0.1:0 --max-clients 32
tcp_pid=$SRV_PID tcp_addr=$SRV_ADDR
start_server unix "unix:$work/ms.sock" --max-clients 8
unix_pid=$SRV_PID unix_addr=$SRV_ADDR
case "$tcp_addr" in 127.0.0.1:[0-9]*) ok "tcp: bound port reported" ;; *) fail "tcp: bound port reported" "$tcp_addr" ;; esac

# sandboxes live, hung, gone, garbage: all in one scrape, on both transports
cfg() { # ADDR LIVE DEAD [extra json]
	jq -cn --arg addr "$1" --argjson live "$2" --argjson dead "$3" --argjson st "$ST" \
		--argjson extra "${4:-{\}}" \
		'{addr: $addr, live: $live, dead: $dead, scrape_timeout: ($st / 1000)} + $extra'
}
phase sandboxes "$(cfg "$tcp_addr" '["ms1","ms2","ms3"]' '["close0","hang0","junk0","ms4"]' \
	'{"reasons": {"timeout": 2, "closed": 1, "format": 1}}')"
phase sandboxes "$(cfg "$unix_addr" '["ms1","ms2","ms3"]' '["close0","hang0","junk0","ms4"]' \
	'{"reasons": {"timeout": 2}}')"

# a supervisor killed while a scrape waits for it
phase kill "$(jq -cn --arg addr "$tcp_addr" --argjson pid "$ms4" \
	'{addr: $addr, victim: "ms4", pid: $pid, live: ["ms1","ms2","ms3"]}')"

# without the fakes: malformed requests, slow clients, the client cap, fds
for p in "${pids[@]}"; do
	[ "$p" = "$tcp_pid" ] || [ "$p" = "$unix_pid" ] || { kill -KILL "$p" && wait "$p"; } 2>/dev/null
done
rm -rf "$root/hang0" "$root/close0" "$root/junk0"
extra=$(jq -cn --argjson pid "$tcp_pid" --argjson ht "$HT" --argjson ct "$CT" \
	'{pid: $pid, header_timeout: ($ht / 1000), client_timeout: ($ct / 1000), fds: 1000}')
phase serve "$(cfg "$tcp_addr" '["ms1","ms2","ms3"]' '["ms4"]' "$extra")"
extra=$(jq -cn --argjson pid "$unix_pid" --argjson ht "$HT" --argjson ct "$CT" \
	'{pid: $pid, header_timeout: ($ht / 1000), client_timeout: ($ct / 1000), max_clients: 8}')
phase serve "$(cfg "$unix_addr" '["ms1","ms2","ms3"]' '["ms4"]' "$extra")"

# SIGKILL, then a new server on the same port at once: the port is free (the
# listener is polled through epoll, so no io_uring request keeps it bound)
start_server kill1 127.0.0.1:0
port=${SRV_ADDR##*:}
kill -KILL "$SRV_PID" && wait "$SRV_PID" 2>/dev/null
start_server kill2 "127.0.0.1:$port"
[ "$SRV_ADDR" = "127.0.0.1:$port" ] && ok "restarted on port $port right after SIGKILL" ||
	fail "restarted on port $port right after SIGKILL" "$SRV_ADDR"
kill -KILL "$SRV_PID" && wait "$SRV_PID" 2>/dev/null

# clean shutdown: SIGTERM with a client connected, exit 0, socket removed
exec 7<>/dev/tcp/127.0.0.1/"${tcp_addr##*:}"
exited() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
for s in TERM INT; do
	[ $s = TERM ] && pid=$tcp_pid || pid=$unix_pid
	kill -$s "$pid"
	if wait_for 5 exited "$pid"; then
		wait "$pid"
		rc=$?
		[ "$rc" = 0 ] && ok "SIG$s: exit status 0" || fail "SIG$s: exit status 0" "rc=$rc $(cat "$work"/*.err)"
	else
		fail "SIG$s: exits within 5 s"
	fi
done
exec 7>&-
[ ! -e "$work/ms.sock" ] && ok "unix socket removed at exit" || fail "unix socket removed at exit"
"$URSA" metric-server --listen nonsense >/dev/null 2>&1 && fail "bad --listen refused" || ok "bad --listen refused"
"$URSA" metric-server >/dev/null 2>&1 && fail "missing --listen refused" || ok "missing --listen refused"
finish
