#!/usr/bin/env bash
# tests/net/iperf_repeat.sh — issue #18: `ursa do -- iperf3 -c SERVER` run
# several times in a row over the tap path, each time with a fresh pair of
# network namespaces: T (where `ursa do` runs: "the host" as the supervisor
# sees it) and S (the iperf3 server), joined by a veth pair
# (10.200.18.1/30 | 10.200.18.2/30) with the default 1500-byte MTU. Every
# run must complete (iperf3 exits 0 within its timeout) and move bytes both
# in the sender's and the receiver's report; one run goes the other way
# (-R). Throughput is not checked.
#
# The bug: toward a 1500-byte path the supervisor's host socket starts with
# SO_SNDBUF ~69 KiB, 3/4 of which is less than the sandbox's MSS (65480);
# the engine closed its window after the client's first bytes (iperf3's
# cookie) and never opened it again, while POLLOUT completed in a busy loop
# sending zero-window ACKs: iperf3 hung until killed (net/tcp.c,
# update_wnd). curl worked: its request fits in the first window.
#
# Needs root and iperf3: without iperf3 the test is skipped (exit 77), or
# fails when CI=true. Env: URSA, RUNS (default 4).
set -u
URSA=${URSA:?}
RUNS=${RUNS:-4}
IPERF=$(command -v iperf3 || true)
. "$(dirname "$0")/../lib/skip.sh"
need_root
[ -n "$IPERF" ] || skip_or_fail "no iperf3 (scripts/setup installs it)"
PY=/usr/bin/python3
T=ursa-ipt-$$
S=ursa-ips-$$
work=$(mktemp -d /tmp/ursa-iperf-repeat.XXXXXX)
chmod 755 "$work"
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for

teardown() {
	for ns in "$T" "$S"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
	done
	wait 2>/dev/null
	ip netns del "$T" 2>/dev/null
	ip netns del "$S" 2>/dev/null
}
cleanup() {
	teardown
	rm -rf "$work"
}
trap cleanup EXIT

setup() {
	ip netns add "$T" && ip netns add "$S" &&
		ip link add vt netns "$T" type veth peer name vs netns "$S" &&
		ip -n "$T" link set lo up && ip -n "$S" link set lo up &&
		ip -n "$T" addr add 10.200.18.1/30 dev vt &&
		ip -n "$S" addr add 10.200.18.2/30 dev vs &&
		ip -n "$T" link set vt up && ip -n "$S" link set vs up
}

listening() { ip netns exec "$S" ss -Hltn 'sport = :5301' | grep -q .; }

# bytes of the "sum_sent" and "sum_received" reports of iperf3's JSON
bytes() {
	"$PY" -c 'import json,sys
try:
    e = json.load(open(sys.argv[1]))["end"]
    print(int(e["sum_sent"]["bytes"]), int(e["sum_received"]["bytes"]))
except Exception as x:
    print(0, 0)' "$1"
}

for i in $(seq 1 "$RUNS"); do
	dir=
	[ "$i" = "$RUNS" ] && dir=-R
	name="run $i${dir:+ (reverse)}"
	if ! setup; then
		bad "$name" "could not make the namespaces"
		teardown
		continue
	fi
	ip netns exec "$S" "$IPERF" -s -1 -p 5301 >"$work/srv$i.log" 2>&1 &
	if ! wait_for 10 listening; then
		bad "$name" "iperf3 server did not listen: $(cat "$work/srv$i.log")"
		teardown
		continue
	fi
	timeout -k 5 30 ip netns exec "$T" "$URSA" do -- "$IPERF" -c 10.200.18.2 -p 5301 -t 1 \
		$dir -J >"$work/cli$i.json" 2>"$work/cli$i.err"
	rc=$?
	read -r sent recvd < <(bytes "$work/cli$i.json")
	if [ $rc -ne 0 ]; then
		bad "$name" "iperf3 exit $rc$([ $rc = 124 ] && echo ' (hung: killed by timeout)'): $(head -c 300 "$work/cli$i.err")"
	elif [ "$sent" -gt 0 ] && [ "$recvd" -gt 0 ]; then
		ok "$name: $sent bytes sent, $recvd received"
	else
		bad "$name" "no bytes transferred (sent $sent, received $recvd)"
	fi
	teardown
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
