#!/usr/bin/env bash
# tests/ckpt/sandbox_lazy.sh — `ursa restore --lazy-pages`: the sandbox's
# init (tests/ckpt/hog.c, 64 MiB over two threads) runs before its memory
# is in; its supervisor pages it in (ckpt/lazy.h).
#   - restored lazily, both threads find every word of their memory as
#     they left it (their own check);
#   - a checkpoint taken at once after the restore waits for the pages
#     ("exec-wait"), goes through, and restores (eagerly) with the memory
#     intact;
#   - from an image with one byte of page data changed, the lazy restore
#     itself succeeds (that chunk is not read yet: a sign the pages did
#     not come in before it returned); then the pager refuses the chunk,
#     the container is killed, and `ursa state` says why.
# Needs root. Env: URSA, HOG.
set -u
. "$(dirname "$0")/../lib/skip.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/hog.sh"
[ "$(id -u)" = 0 ] || skip_or_fail "needs root"
URSA=${URSA:?} HOG=${HOG:?}
P=lz$$-
work=$(mktemp -d /tmp/ursa-lazy.XXXXXX)
root=$work/root
u() { "$URSA" --root "$root" "$@"; }
cleanup() {
	u delete --force ${P}h >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
t=$work/rootfs/tmp
hog_bundle "$work" 64 2 || exit 1
checked() { hog_checked ${P}h "$t"; } # both threads check their memory: "ok"
status() { u state ${P}h 2>/dev/null | jq -r .status; }
is_stopped() { [ "$(status)" = stopped ]; }
restore() { # IMAGE [FLAGS...]
	local img=$1
	shift
	(cd "$work/b" && u restore --detach "$@" --image-path "$img" ${P}h >>"$work/out" 2>"$work/rs.err")
}

(cd "$work/b" && u run -d ${P}h >"$work/out" 2>&1) || bad "run" "$(cat "$work/out")"
wait_for 60 test -s "$t/ready-0" && wait_for 30 test -s "$t/tick-1" || bad "the workload starts"
u checkpoint --image-path "$work/img" ${P}h 2>"$work/ck.err" || bad "checkpoint" "$(cat "$work/ck.err")"
cp -a "$work/img" "$work/bad"
check "restore --lazy-pages" 'restore "$work/img" --lazy-pages' "$(cat "$work/rs.err")"
check "a checkpoint at once waits for the pages and goes through" \
	'u checkpoint --leave-running --image-path "$work/img2" ${P}h 2>"$work/ck2.err"' \
	"$(cat "$work/ck2.err")"
check "restored lazily, every word of its memory is as it was" checked "$(cat "$t"/check-* 2>&1)"
u delete --force ${P}h >/dev/null 2>&1
check "the image taken after the lazy restore restores" 'restore "$work/img2"' "$(cat "$work/rs.err")"
check "with its memory intact" checked "$(cat "$t"/check-* 2>&1)"
u delete --force ${P}h >/dev/null 2>&1

# one byte of page data changed, well inside the workload's 64 MiB
size=$(stat -c %s "$work/bad/pages.img")
at=$((size * 3 / 4))
b=$(od -An -tu1 -j "$at" -N1 "$work/bad/pages.img" | tr -d ' ')
printf "$(printf '\\%03o' $(((b + 1) % 256)))" |
	dd of="$work/bad/pages.img" bs=1 seek="$at" conv=notrunc status=none
check "a lazy restore returns before it reaches a changed chunk" \
	'restore "$work/bad" --lazy-pages' "$(cat "$work/rs.err")"
check "then the container is killed" 'wait_for 60 is_stopped' "status $(status)"
u state ${P}h >/dev/null 2>"$work/st.err"
check "and ursa state says why" \
	'grep -q "killed by ursa: lazy restore: pages.img chunk [0-9]* .* fails authentication" "$work/st.err"' \
	"$(cat "$work/st.err")"
finish
