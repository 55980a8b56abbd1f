#!/usr/bin/env bash
# tests/ckpt/sandbox_mt.sh — shared memory and threads through the real
# commands: `ursa checkpoint` (frozen cgroup, the dump in the CLI) and
# `ursa restore` (the supervisor's adopted init as the root puppet, clone3 and
# pidfd_getfd inside the sandbox's pid namespace):
#   - tests/ckpt/shm.c as the sandbox's init: after the restore the parent
#     and its child still share their anonymous, /dev/zero and memfd memory
#     (counters rising, the child echoing the parent), clear_child_tid is
#     back, and a child forked afterwards shares it;
#   - tests/ckpt/mthreads.c as the init: same thread ids and names, every
#     thread counting with its own state intact (no FAIL line).
# Needs root. Env: URSA, SHM, MTHREADS.
set -u
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
URSA=${URSA:?} SHM=${SHM:?} MTHREADS=${MTHREADS:?}
P=ckmt$$-
work=$(mktemp -d /tmp/ursa-ckpt-mt.XXXXXX)
root=$work/root
u() { "$URSA" --root "$root" "$@"; }
cleanup() {
	for id in ${P}shm ${P}thr; do u delete --force "$id" > /dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
wait_for() { # SECONDS CMD...
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.02; done
}
lines() { [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }
pid_of() { u state "$1" 2> /dev/null | jq -r .pid; }

mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/tmp" "$work/b"
cp "$SHM" "$work/rootfs/bin/shm" && cp "$MTHREADS" "$work/rootfs/bin/mthreads" || exit 1
(cd "$work/b" && "$URSA" spec) || exit 1
bundle() { # ARGS-JSON: config.json in $work/b with these process args
	jq --arg rootfs "$work/rootfs" --argjson args "$1" '.root.path = $rootfs
		| .root.readonly = false | .process.terminal = false | .process.args = $args
		| .annotations = {"run.ursa.network": "none"}' "$work/b/config.json" > "$work/b/c" &&
		mv "$work/b/c" "$work/b/config.json"
}
# cycle ID OUT: checkpoint the running sandbox, restore it; $last is the
# number of lines OUT had when it was gone
cycle() {
	u checkpoint --image-path "$work/img-$1" "$1" 2> "$work/ck-$1.err" ||
		fail "$1: checkpoint: $(cat "$work/ck-$1.err")"
	last=$(wc -l < "$2")
	(cd "$work/b" && u restore -d --image-path "$work/img-$1" "$1" > /dev/null 2> "$work/rs-$1.err") ||
		fail "$1: restore: $(cat "$work/rs-$1.err")"
	wait_for 20 lines "$2" $((last + 40)) || fail "$1: the restored sandbox does not write"
}

# ---- shared memory ------------------------------------------------------------------
bundle '["/bin/shm", "/tmp"]'
out=$work/rootfs/tmp/out.txt
(cd "$work/b" && u run -d ${P}shm > /dev/null 2> "$work/run.err") || fail "run: $(cat "$work/run.err")"
wait_for 20 lines "$out" 20 || fail "shm does not write"
cycle ${P}shm "$out"
# (seals: -1 when the sandbox may not open /proc/self/map_files; as before)
read -r _ c1 _ _ c4 _ _ seals _ < <(sed -n "${last}p" "$out")
awk -v last="$last" -v c1="$c1" -v c4="$c4" -v seals="$seals" '
	$1 != NR { printf "line %d: n=%s\n", NR, $1; bad = 1; exit }
	NR > last && ($7 != 1 || $8 != seals || $9 != 1) { printf "line %d: tid %s seals %s kept fd %s\n", NR, $7, $8, $9; bad = 1; exit }
	END { if (!bad && !($2 > c1 + 20 && $5 > c4 + 20 && $6 > last + 5)) { print "not shared: " $0; bad = 1 } exit bad }' \
	"$out" || fail "shared memory after the restore in a sandbox"
touch "$work/rootfs/tmp/go"
wait_for 10 test -s "$work/rootfs/tmp/late.txt" || fail "no late fork"
grep -q 'late OK' "$work/rootfs/tmp/late.txt" || fail "a child forked after the restore does not share"
echo "ok shm sandbox restored at line $((last + 1)): still shared (anon, /dev/zero, memfd), clear_child_tid, late fork"
u delete --force ${P}shm > /dev/null 2>&1

# ---- threads ------------------------------------------------------------------------
bundle '["/bin/mthreads", "/tmp/mt.txt"]'
out=$work/rootfs/tmp/mt.txt
(cd "$work/b" && u run -d ${P}thr > /dev/null 2> "$work/run.err") || fail "run: $(cat "$work/run.err")"
wait_for 20 lines "$out" 20 || fail "mthreads does not write"
names() { for t in /proc/"$1"/task/*; do cat "$t/comm"; done | sort | tr '\n' ' '; }
before=$(names "$(pid_of ${P}thr)")
cycle ${P}thr "$out"
after=$(names "$(pid_of ${P}thr)")
[ "$after" = "$before" ] && [ "$after" = "mthreads w1 w2 w3 " ] || fail "threads: '$after', before '$before'"
read -r _ c1 c2 c3 _ < <(sed -n "${last}p" "$out")
awk -v c1="$c1" -v c2="$c2" -v c3="$c3" '$1 != NR || $5 != "OK" { printf "line %d: %s\n", NR, $0; bad = 1; exit }
	END { if (!bad && !($2 > c1 + 20 && $3 > c2 + 20 && $4 > c3 + 20)) { print "stalled: " $0; bad = 1 } exit bad }' \
	"$out" || fail "threads after the restore in a sandbox"
echo "ok threads sandbox restored at line $((last + 1)): 4 threads, each counting with its own state"
echo "all sandbox shared memory / thread checks passed"
