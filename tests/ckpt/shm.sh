#!/usr/bin/env bash
# tests/ckpt/shm.sh — checkpoint/restore of shared memory between processes
# and of clear_child_tid (tests/ckpt/shm.c): a parent and its child share a
# MAP_SHARED|MAP_ANONYMOUS object (two mappings of it), a shared /dev/zero
# mapping and a memfd; they are stopped, dumped with ckpt_tool, killed and
# restored. After the restore the parent must see the child's counters go on
# rising in all four mappings and the child must see the parent's sequence
# (a restore with private copies freezes them), the parent's sequence must
# go on without a gap, set_tid_address's address must be back, the memfd's
# seals (one added after its writable mapping) must be back, an fd kept open
# on another memfd must have its position, bytes and seals, and a child
# forked after the restore must still share the memory. Then the restored
# pair (whose objects are memfds now) goes through a second generation.
# Needs root. Env: CKPT_TOOL, SHM.
set -u
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
: "${CKPT_TOOL:?}" "${SHM:?}"
W=$(mktemp -d /tmp/ursa-ckpt-shm.XXXXXX)
PIDS=
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -5 "$W/out.txt" 2>/dev/null; exit 1; }
wait_for() { # SECONDS CMD...
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.02; done
}
lines() { [ -f "$W/out.txt" ] && [ "$(wc -l < "$W/out.txt")" -ge "$1" ]; }
stopped() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ "$s" = T ] || [ "$s" = t ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }
field() { sed -n "${1}p" "$W/out.txt" | awk -v f="$2" '{print $f}'; }
kids() { cat "/proc/$1/task/$1/children" 2>/dev/null | xargs; }

# one generation: stop the pair, dump, kill, restore; check that sharing goes on
generation() { # NAME PARENT-PID
	local name=$1 p=$2 kid
	kid=$(kids "$p")
	[ -n "$kid" ] || fail "$name: no child"
	kill -STOP "$p" $kid
	wait_for 10 stopped "$p" && wait_for 10 stopped "$kid" || fail "$name: did not stop"
	mkdir "$W/img-$name"
	"$CKPT_TOOL" dump "$p" "$W/img-$name" > "$W/dump-$name.log" 2> "$W/dump-$name.err" ||
		fail "$name: dump: $(cat "$W/dump-$name.err")"
	kill -9 "$p" $kid
	wait_for 10 gone "$p" && wait_for 10 gone "$kid" || fail "$name: did not die"
	wait "$p" 2>/dev/null
	local last c1 c2 c3 c4
	last=$(wc -l < "$W/out.txt")
	c1=$(field "$last" 2); c2=$(field "$last" 3); c3=$(field "$last" 4); c4=$(field "$last" 5)
	"$CKPT_TOOL" restore "$W/img-$name" > "$W/restore-$name.log" 2> "$W/restore-$name.err" < /dev/null ||
		fail "$name: restore: $(cat "$W/restore-$name.err")"
	cat "$W/dump-$name.log" "$W/restore-$name.log"
	R=$(awk '/^pid/ {print $2}' "$W/restore-$name.log")
	PIDS="$PIDS $R $(kids "$R")"
	[ "$R" = "$p" ] || fail "$name: restored as pid $R, not $p"
	[ "$(kids "$R")" = "$kid" ] || fail "$name: the child is not back as $kid"
	wait_for 20 lines $((last + 40)) || fail "$name: restored parent does not write"
	# every line is "N ...": N gapless; after the restore the child's counters
	# as the parent sees them keep rising, and the child echoes the parent
	awk -v last="$last" -v c1="$c1" -v c2="$c2" -v c3="$c3" -v c4="$c4" '
		$1 != NR { printf "line %d: n=%s\n", NR, $1; bad = 1; exit }
		NR > last && $7 != 1 { printf "line %d: clear_child_tid/page check %s\n", NR, $7; bad = 1; exit }
		$8 != 23 { printf "line %d: memfd seals %s, want 23 (0x17)\n", NR, $8; bad = 1; exit }
		$9 != 1 { printf "line %d: the kept memfd fd (position, size, bytes, seals) is wrong\n", NR; bad = 1; exit }
		END {
			if (bad) exit 1
			if (!($2 > c1 + 20)) { printf "anon: child counter %s, was %s at the dump\n", $2, c1; exit 1 }
			if (!($3 > c2 + 20)) { printf "anon (2nd mapping): %s, was %s\n", $3, c2; exit 1 }
			if (!($4 > c3 + 20)) { printf "/dev/zero: %s, was %s\n", $4, c3; exit 1 }
			if (!($5 > c4 + 20)) { printf "memfd: %s, was %s\n", $5, c4; exit 1 }
			if (!($6 > last + 5)) { printf "echo %s: the child does not see the parent (dumped at %d)\n", $6, last; exit 1 }
		}' "$W/out.txt" || fail "$name: shared memory after the restore"
	echo "ok $name: restored at line $((last + 1)); the pair still shares anon (2 mappings), /dev/zero and memfd memory; clear_child_tid kept"
}

"$SHM" "$W" < /dev/null > /dev/null 2>&1 &
P=$!
PIDS="$P"
wait_for 10 lines 20 || fail "workload does not write"
PIDS="$PIDS $(kids "$P")"
generation first "$P"
grep -q 'memfd:shared-anon' "/proc/$R/maps" || fail "anonymous shared memory is not a memfd after the restore"
grep -q 'memfd:ckpt-shm' "/proc/$R/maps" || fail "the memfd lost its name"
touch "$W/go"
wait_for 10 test -s "$W/late.txt" || fail "no late fork"
grep -q 'late OK' "$W/late.txt" || fail "a child forked after the restore does not share: $(cat "$W/late.txt")"
echo "ok late fork: a child forked after the restore shares the memory"
generation second "$R"
echo "all shared memory checks passed"
