#!/usr/bin/env bash
# tests/ckpt/cow.sh — a page frame that several processes of the sandbox
# map (shared copy-on-write since a fork) goes into pages.img once, not
# once per process. tests/ckpt/cow.c as the sandbox's init: 64 MiB
# filled, then three children forked and a grandchild (child 1's), so
# nearly every page is one frame of five processes; each process rewrites
# page 5 (one address, five contents) and each child a page of its own,
# and each counts in its page
# 5 at every wake-up (its signals; no clock):
#   - checkpointed, the five processes' pages.img is below 1.5 × 64 MiB
#     (once per process it would be about 320 MiB);
#   - restored, then restored with --lazy-pages, every process finds its
#     memory as it left it: the shared pages, its own page 5 and page
#     100 + i, its count (its own check: a dedupe that gave one process
#     another's page 5 shows);
#   - the same through --leave-running (a pre-copy, the tree running):
#     the image as small, the workload intact as it runs on, and
#     restored from that image;
#   - child 2 unmapped a hole, child 3 dropped pages and made some
#     read-only (cow.c): restored, each still has them so;
#   - restored, eagerly or lazily, the tree shares its memory again: the
#     five processes' anonymous memory, counted proportionally (Pss_Anon),
#     is below 1.5 × 64 MiB, not one copy each; with --lazy-unshared it is
#     one copy each (above that), its memory as intact.
# Needs root; the pre-copy part skips saying why where the kernel cannot
# track writes. Env: URSA, COW.
set -u
. "$(dirname "$0")/../lib/skip.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/hog.sh" # hog_checked
[ "$(id -u)" = 0 ] || skip_or_fail "needs root"
URSA=${URSA:?} COW=${COW:?}
P=cw$$-
work=$(mktemp -d /tmp/ursa-cow.XXXXXX)
root=$work/root
u() { "$URSA" --root "$root" "$@"; }
cleanup() {
	u delete --force ${P}c >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
t=$work/rootfs/tmp
# the memory once, with room for what is not shared (page 5, the
# children's own pages, stacks): five copies are far above
limit=$((64 * 1024 * 1024 * 3 / 2))

# WORK/rootfs: busybox, $COW as /bin/cow; WORK/b/config.json: `cow 64 3
# /tmp grand` (three children, a grandchild), no terminal, no network, a writable root
# (tests/lib/hog.sh's hog_bundle, for another binary and its arguments)
cow_bundle() {
	local work=$1
	mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
		"$work/rootfs/tmp" "$work/b" || return 1
	cp /bin/busybox "$work/rootfs/bin/" && ln -sf busybox "$work/rootfs/bin/sh" &&
		cp "$COW" "$work/rootfs/bin/cow" && (cd "$work/b" && "$URSA" spec) || return 1
	jq --arg rootfs "$work/rootfs" \
		'.root.path = $rootfs | .root.readonly = false | .process.terminal = false
		| .process.args = ["/bin/cow", "64", "3", "/tmp", "grand"]
		| .annotations = {"run.ursa.network": "none"}' "$work/b/config.json" >"$work/b/c" &&
		mv "$work/b/c" "$work/b/config.json"
}
cow_bundle "$work" || exit 1

all() { # NAME: DIR/NAME-0..4 all written
	local i
	for i in 0 1 2 3 4; do test -s "$t/$1-$i" || return 1; done
}
# the init passes SIGUSR1 to its children, child 1 to its own; all five check: "ok"
checked() { hog_checked ${P}c "$t" 5; }
checks() {
	local i
	for i in 0 1 2 3 4; do echo "check-$i: $(cat "$t/check-$i" 2>&1)"; done
}
# check, with DETAIL run only when CODE failed (what it left: a file it wrote)
check_why() { if eval "$2"; then ok "$1"; else bad "$1" "$(eval "$3")"; fi; }
size() { stat -c %s "$1/pages.img" 2>/dev/null; }
descendants() { # PID: it and every process below it
	local c
	echo "$1"
	for c in $(cat "/proc/$1/task/"*/children 2>/dev/null); do descendants "$c"; done
}
tree_pids() { # the init's host pid and its descendants'
	local p
	p=$(u state ${P}c | jq -r .pid) && [ -n "$p" ] && descendants "$p"
}
pss_anon() { # bytes of anonymous memory the tree's processes use, shares counted once
	local p kb s=0 n=0
	for p in $(tree_pids); do
		kb=$(awk '/^Pss_Anon:/ { print $2 }' "/proc/$p/smaps_rollup") || return 1
		s=$((s + kb)) n=$((n + 1))
	done
	[ "$n" = 5 ] && echo $((s * 1024))
}
shared_again() { # LABEL: after a restore, the memory shared as it was
	local m
	m=$(pss_anon)
	check "$1: the five processes share their memory again: Pss_Anon ${m:-?} bytes, below 1.5 × 64 MiB ($limit)" \
		'small "$m"' "$(for p in $(tree_pids); do grep -H Anon "/proc/$p/smaps_rollup"; done 2>&1)"
}
small() { [ -n "$1" ] && [ "$1" -lt "$limit" ]; }
start() {
	rm -f "$t"/ready-* "$t"/check-*
	(cd "$work/b" && u run -d ${P}c >>"$work/out" 2>&1) || return 1
	wait_for 60 all ready
}
restore() { # IMAGE [FLAGS...]
	local img=$1
	shift
	(cd "$work/b" && u restore --detach "$@" --image-path "$img" ${P}c >>"$work/out" 2>"$work/rs.err")
}

# a. the tree runs: five processes, each ready
if start; then
	ok "the workload runs: the init, its three children and a grandchild ready"
else
	bad "the workload runs: the init, its three children and a grandchild ready" \
		"$(cat "$work/out"; ls "$t")"
	finish
fi

# b. the shared frames stored once
if u checkpoint --image-path "$work/img1" --work-path "$work/wp1" ${P}c 2>"$work/ck.err"; then
	ok "checkpoint"
else
	bad "checkpoint" "$(cat "$work/ck.err")"
fi
line=$(grep '^dumped' "$work/wp1/dump.log" 2>/dev/null)
check "the five processes dumped ($line)" '[[ "$line" == "dumped 5 tasks,"* ]]' \
	"$(cat "$work/wp1/dump.log" 2>&1)"
s=$(size "$work/img1")
check "pages.img holds the shared 64 MiB once: ${s:-no} bytes, below 1.5 × 64 MiB ($limit) ($line)" \
	'small "$s"' "$(ls -l "$work/img1" 2>&1)"

# c. restored, each process has its own page 5 and page 100 + i
check_why "restore" 'restore "$work/img1"' 'cat "$work/rs.err"'
check_why "restored, every process's memory is as it left it (the shared pages, its own)" \
	checked checks
shared_again "restored"
u delete --force ${P}c >/dev/null 2>&1

# d. the same, paged in lazily
check_why "restore --lazy-pages" 'restore "$work/img1" --lazy-pages' 'cat "$work/rs.err"'
check_why "restored lazily, every process's memory is as it left it" checked checks
shared_again "restored lazily"
u delete --force ${P}c >/dev/null 2>&1

# d2. --lazy-unshared: a copy each, paged in after the tree runs
check_why "restore --lazy-pages --lazy-unshared" 'restore "$work/img1" --lazy-pages --lazy-unshared' \
	'cat "$work/rs.err"'
check_why "restored lazily, unshared, every process's memory is as it left it" checked checks
m=$(pss_anon)
check "unshared, each process has its own copy: Pss_Anon ${m:-?} bytes, above 1.5 × 64 MiB" \
	'[ -n "$m" ] && ! small "$m"' "$(for p in $(tree_pids); do grep -H Anon "/proc/$p/smaps_rollup"; done 2>&1)"
u delete --force ${P}c >/dev/null 2>&1

# e. through a pre-copy, the tree running
check_why "the workload runs again" start 'cat "$work/out"; ls "$t"'
check_why "checkpoint --leave-running" \
	'u checkpoint --leave-running --image-path "$work/img2" --work-path "$work/wp2" ${P}c 2>"$work/ck.err"' \
	'cat "$work/ck.err"'
line=$(grep '^paused' "$work/wp2/dump.log" 2>/dev/null)
if [ -z "$line" ]; then
	skip_part "the checkpoint did not copy before freezing (kernel cannot track writes: no userfaultfd WP_ASYNC?): $(cat "$work/wp2/dump.log" 2>&1)" ||
		failed=$((failed + 1))
fi
dumped=$(grep '^dumped' "$work/wp2/dump.log" 2>/dev/null)
s=$(size "$work/img2")
check "with --leave-running too, pages.img holds them once: ${s:-no} bytes, below 1.5 × 64 MiB ($dumped${line:+; $line})" \
	'small "$s"' "$(ls -l "$work/img2" 2>&1)"
check_why "the workload runs on, its memory as it left it" checked checks
u delete --force ${P}c >/dev/null 2>&1
check_why "restore of the --leave-running image" 'restore "$work/img2"' 'cat "$work/rs.err"'
check_why "restored from it, every process's memory is as it left it" checked checks
shared_again "restored from the --leave-running image"
finish
