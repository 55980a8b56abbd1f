#!/usr/bin/env bash
# tests/ckpt/sigstate.sh — a dump (`ckpt_tool dump`: the task runs on, as
# with `checkpoint --leave-running`) leaves the signal state of every thread
# as it was: SIGTRAP caught / ignored / blocked / caught+blocked+pending /
# default (tests/ckpt/sigstate.c), with other signals caught, ignored,
# blocked and pending. Per mode: the SigPnd, ShdPnd, SigBlk, SigIgn and
# SigCgt lines of /proc/PID/task/*/status before and after two dumps must
# be equal, the process must still run, its SIGTRAP handler must not have
# run, and a SIGUSR1 afterwards must reach its handler. Needs root.
# Env: CKPT_TOOL, SIGSTATE.
set -u
: "${CKPT_TOOL:?}" "${SIGSTATE:?}"
W=$(mktemp -d /tmp/ursa-ckpt-sigstate.XXXXXX)
P=
cleanup() {
	[ -n "$P" ] && kill -9 "$P" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
wait_for() { # SECONDS CMD...
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.02; done
}
sigstate() { # the signal lines of every thread, thread by thread
	local t
	for t in "/proc/$P/task/"*; do
		echo "${t##*/}"
		grep -E '^(SigPnd|ShdPnd|SigBlk|SigIgn|SigCgt):' "$t/status"
	done
}
for mode in handler ignore block pending default; do
	"$SIGSTATE" $mode >"$W/out" 2>&1 </dev/null &
	P=$!
	wait_for 10 grep -q READY "$W/out" || fail "$mode: workload not ready"
	wait_for 10 sh -c "[ \$(ls /proc/$P/task | wc -l) = 2 ]" || fail "$mode: no second thread"
	sigstate >"$W/before"
	grep -q . "$W/before" || fail "$mode: no state read"
	for _ in 1 2; do
		rm -rf "$W/img"
		mkdir -p "$W/img"
		"$CKPT_TOOL" dump $P "$W/img" >"$W/dump.log" 2>"$W/dump.err" ||
			fail "$mode: dump: $(cat "$W/dump.err")"
	done
	kill -0 $P 2>/dev/null || fail "$mode: the process died in the dump"
	sigstate >"$W/after"
	diff -u "$W/before" "$W/after" || fail "$mode: signal state changed across the dump"
	grep -q TRAPPED "$W/out" && fail "$mode: a SIGTRAP reached the handler"
	kill -USR1 $P
	wait_for 10 grep -q USR1 "$W/out" || fail "$mode: SIGUSR1 did not reach its handler"
	kill -0 $P 2>/dev/null || fail "$mode: the process died"
	echo "ok $mode: $(cat "$W/dump.log")"
	kill -9 $P
	wait $P 2>/dev/null
	P=
done
echo PASS
