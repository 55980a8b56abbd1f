#!/usr/bin/env bash
# tests/ckpt/precopy.sh — `ursa checkpoint --leave-running` copies memory
# while the sandbox runs (ckpt/precopy.h, ckpt/wptrack.h) and freezes it
# only for what was written meanwhile. tests/ckpt/hog.c (64 MiB, two
# threads each rewriting a page and a file every millisecond) as the
# sandbox's init:
#   - the checkpoint succeeds and dump.log says it paused, with the memory
#     copied before the pause and most of it taken as it was;
#   - the workload runs on (its tick files move) with no userfaultfd left
#     among its fds, and its memory is what it wrote (its own check);
#   - restored from that image, each thread's memory is the pattern with
#     the last count it wrote in each page: no page of the image is stale
#     (a page written during the copy and not copied again would show);
#   - the image holds a hot set (ckpt/workingset.h) that a lazy restore
#     of this local image does not use (hot_blocks=0), and restored
#     lazily nothing is stale either.
# Needs root; skips saying why where the kernel cannot track writes.
# Env: URSA, HOG.
set -u
. "$(dirname "$0")/../lib/skip.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/hog.sh"
[ "$(id -u)" = 0 ] || skip_or_fail "needs root"
URSA=${URSA:?} HOG=${HOG:?}
P=pc$$-
work=$(mktemp -d /tmp/ursa-precopy.XXXXXX)
root=$work/root
u() { "$URSA" --root "$root" "$@"; }
cleanup() {
	u delete --force ${P}h >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
t=$work/rootfs/tmp
hog_bundle "$work" 64 2 || exit 1
tick() { tr -d ' \n' <"$t/tick-$1" 2>/dev/null; }
moved() { local n; n=$(tick "$1"); [ -n "$n" ] && [ "$n" -gt "$2" ]; }
checked() { hog_checked ${P}h "$t"; } # both threads check their memory: "ok"

(cd "$work/b" && u run -d ${P}h >"$work/out" 2>&1) || bad "run" "$(cat "$work/out")"
wait_for 60 test -s "$t/ready-0" && wait_for 30 test -s "$t/tick-1" || bad "the workload starts"
if u checkpoint --leave-running --image-path "$work/img" --work-path "$work/wp" ${P}h 2>"$work/ck.err"; then
	ok "checkpoint --leave-running"
else
	bad "checkpoint --leave-running" "$(cat "$work/ck.err")"
fi
line=$(grep '^paused' "$work/wp/dump.log")
if [ -z "$line" ]; then
	skip_or_fail "the checkpoint did not copy before freezing (kernel without userfaultfd WP_ASYNC?): $(cat "$work/wp/dump.log")"
fi
pre=$(echo "$line" | sed -n 's/.*; \([0-9]*\) pages copied before.*/\1/p')
reused=$(echo "$line" | sed -n 's/.*ms, \([0-9]*\) of them unwritten since.*/\1/p')
check "most of the 64 MiB was copied before the pause ($line)" '[ "${pre:-0}" -ge 15000 ]'
check "and most of it was taken as it was" '[ "${reused:-0}" -ge 12000 ]'
check "a hot set was written with the image (what the freeze copied)" \
	'[ "$(echo "$line" | sed -n "s/.*hot set \([0-9]*\) blocks.*/\1/p")" -gt 0 ] &&
	test -s "$work/img/hotset"' "$line; $(ls "$work/img")"
pid=$(u state ${P}h | jq -r .pid)
n0=$(tick 0) n1=$(tick 1)
check "the workload runs on" 'wait_for 30 moved 0 "$n0" && wait_for 30 moved 1 "$n1"' "ticks $(tick 0) $(tick 1)"
check "no userfaultfd is left among its fds" \
	'! ls -l /proc/$pid/fd /proc/$pid/task/*/fd 2>/dev/null | grep -q userfaultfd'
check "its memory is what it wrote" checked "$(cat "$t"/check-* 2>&1)"
u delete --force ${P}h >/dev/null 2>&1
if (cd "$work/b" && u restore --detach --image-path "$work/img" ${P}h >>"$work/out" 2>"$work/rs.err"); then
	ok "restore"
else
	bad "restore" "$(cat "$work/rs.err")"
fi
check "restored, each page holds the last count written to it: nothing stale" checked \
	"$(cat "$t"/check-* 2>&1)"
u delete --force ${P}h >/dev/null 2>&1
# a local image's hot set is not used (its faults cost no round trip)
check "restored lazily" \
	'(cd "$work/b" && u restore --lazy-pages --detach --image-path "$work/img" ${P}h >>"$work/out" 2>"$work/rs.err")' \
	"$(cat "$work/rs.err")"
check "its pages all came (the hot set of a local image not brought in first)" \
	'wait_for 60 grep -q "^done .* hot_blocks=0 " "$root/${P}h/paged"' "$(cat "$root/${P}h/paged" 2>&1)"
check "restored lazily, nothing stale" checked "$(cat "$t"/check-* 2>&1)"
finish
