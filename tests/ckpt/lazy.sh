#!/usr/bin/env bash
# tests/ckpt/lazy.sh — lazy restore (ckpt/lazy.h) with ckpt_tool, each
# workload pid 1 of its own pid namespace, dumped stopped and killed:
#  1. tests/ckpt/hog.c, 64 MiB over 4 threads, restored lazily with the
#     prefetch held: its threads check every word of their memory
#     (SIGUSR1), all of it brought in by their faults; released, the pager
#     finishes (done=1, faults counted). Its faults while held are its
#     working set (ckpt/workingset.h): recorded into the image (rec=1);
#  1b. restored again: that working set is in before it runs (ws_pages),
#     its check takes a tenth of the faults or fewer, and nothing is
#     recorded again; a working set of another image is ignored and
#     recorded anew; an altered one is refused, naming it;
#  2. tests/ckpt/lazyops.c, restored with the prefetch held (faults only):
#     a dump is refused while its memory is still to come; then it forks
#     (the child checks the memory as it was), drops a region
#     (MADV_DONTNEED: zeros), unmaps and maps one again (zeros), moves one
#     (mremap: its pattern at the new place): no wrong page anywhere, with
#     pages still missing at the fork; released, the pager serves both
#     address spaces to the end, and then a dump goes through;
#  3. one byte of the page data changed: the restore itself goes through
#     (the chunk is not read yet), then the pager refuses the chunk, the
#     task is killed, the reason names the chunk.
# Needs root. Env: CKPT_TOOL, HOG, LAZYOPS.
set -u
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
: "${CKPT_TOOL:?}" "${HOG:?}" "${LAZYOPS:?}"
W=$(mktemp -d /tmp/ursa-ckpt-lazy.XXXXXX)
PIDS=
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
wait_for() { # SECONDS CMD...
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.02; done
}
gone() { ! kill -0 "$1" 2>/dev/null; }
has() { [ -f "$1" ] && grep -q "$2" "$1"; }
nfiles() { [ "$(ls "$W/$1"/$2 2>/dev/null | wc -l)" -ge "$3" ]; }

# start NAME CMD...: pid 1 of a new pid namespace; dump it stopped; kill it
dumped() {
	local name=$1 marker=$2 p; shift 2
	mkdir -p "$W/$name" "$W/img-$name"
	unshare --pid --fork "$@" < /dev/null > /dev/null 2>&1 &
	local u=$!
	PIDS="$PIDS $u"
	wait_for 20 test -f "$W/$name/$marker" || fail "$name: never ready"
	p=$(cat /proc/$u/task/*/children | awk '{print $1}')
	[ -n "$p" ] || fail "$name: no pid"
	PIDS="$PIDS $p"
	kill -STOP "$p"
	"$CKPT_TOOL" dump "$p" "$W/img-$name" > "$W/dump-$name.log" 2>&1 ||
		fail "$name: dump: $(cat "$W/dump-$name.log")"
	kill -9 "$p" "$u"
	wait_for 10 gone "$p" || fail "$name: not killed"
}

# lazy NAME [--lazy-hold]: restore lazily in the background; $LP gets the
# pid, $LT the tool's
lazy() {
	# a log left by an earlier restore of the same image would pass the
	# wait below before this one's shell has truncated it (then $LP read
	# empty: seen under load)
	rm -f "$W/lazy-$1.log"
	"$CKPT_TOOL" restore "${2:---lazy}" "$W/img-$1" > "$W/lazy-$1.log" 2>&1 < /dev/null &
	LT=$!
	PIDS="$PIDS $LT"
	wait_for 20 has "$W/lazy-$1.log" '^pid ' || fail "$1: lazy restore: $(cat "$W/lazy-$1.log")"
	LP=$(awk '$1 == "pid" {print $2}' "$W/lazy-$1.log")
	[ -n "$LP" ] || fail "$1: lazy restore: no pid in $(cat "$W/lazy-$1.log")"
	PIDS="$PIDS $LP"
}

# where the restored task's threads and the pager's are, for a failure:
# each thread's state and kernel wait channel, the checks written so far
stuck() {
	local p t
	for p in "$LP" "$LT"; do
		echo -n "pid $p:"
		for t in /proc/"$p"/task/*; do
			[ -e "$t/stat" ] || continue
			echo -n " ${t##*/}=$(awk '{ print $3 }' "$t/stat" 2>/dev/null)/$(cat "$t/wchan" 2>/dev/null)"
		done
		echo -n "; "
	done
	echo "checks: $(ls "$W/hog" 2>/dev/null | grep -c '^check-')"
}

# 1. threads checking their memory, brought in by their faults
# held_check WHAT: the hog restored with the prefetch held, its threads
# check every word (their faults bring it in), released, paged to the end
held_check() {
	lazy hog --lazy-hold
	rm -f "$W"/hog/check-*
	kill -USR1 "$LP"
	wait_for 60 nfiles hog 'check-*' 4 ||
		fail "$1: the threads did not check ($(cat "$W/lazy-hog.log")); $(stuck)"
	for f in "$W"/hog/check-*; do
		grep -qx ok "$f" || fail "$1: $(basename "$f"): $(cat "$f")"
	done
	kill -USR2 "$LT"
	wait "$LT" || fail "$1: the pager failed: $(cat "$W/lazy-hog.log")"
}
dumped hog ready-0 "$HOG" 64 4 "$W/hog"
held_check hog
grep -Eq '^lazy done=1 faults=[1-9]' "$W/lazy-hog.log" ||
	fail "hog: not paged lazily: $(cat "$W/lazy-hog.log")"
echo "hog: $(grep '^lazy' "$W/lazy-hog.log")"
kill -9 "$LP"
stat_of() { sed -n "s/^lazy .* $2=\([-0-9]*\) .*/\1/p" "$W/lazy-$1.log"; }
[ "$(stat_of hog rec)" = 1 ] && [ "$(stat_of hog rec_blocks)" -gt 0 ] &&
	[ -f "$W/img-hog/workingset" ] || fail "hog: no working set recorded: $(cat "$W/lazy-hog.log")"
faults1=$(stat_of hog faults)

# 1b. the recorded working set first
cp "$W/lazy-hog.log" "$W/lazy-hog1.log"
held_check "hog 2"
[ "$(stat_of hog ws_pages)" -gt 0 ] && [ "$(stat_of hog rec)" = 0 ] &&
	[ $(($(stat_of hog faults) * 10)) -le "$faults1" ] ||
	fail "hog 2: the working set did not come first (first: $(grep '^lazy' "$W/lazy-hog1.log")): $(grep '^lazy' "$W/lazy-hog.log")"
echo "hog 2: $(grep '^lazy' "$W/lazy-hog.log")"
kill -9 "$LP"

# 2. a dump refused half-way; fork, DONTNEED, munmap, mremap while it comes in
dumped ops ready "$LAZYOPS" 128 "$W/ops"
lazy ops --lazy-hold
mkdir "$W/img-half"
kill -STOP "$LP"
if "$CKPT_TOOL" dump "$LP" "$W/img-half" > "$W/half.log" 2>&1; then
	fail "ops: dumped while its memory was still coming in"
fi
grep -q 'supplied by a userfaultfd' "$W/half.log" || fail "ops: half-way dump: $(cat "$W/half.log")"
kill -CONT "$LP"
kill -USR1 "$LP"
wait_for 60 test -f "$W/ops/result" || fail "ops: no result"
grep -q '^ok missing=[1-9]' "$W/ops/result" || fail "ops: $(cat "$W/ops/result")"
kill -USR2 "$LT"
wait "$LT" || fail "ops: the pager failed: $(cat "$W/lazy-ops.log")"
grep -q '^lazy done=1 .* spaces=2 ' "$W/lazy-ops.log" ||
	fail "ops: the fork's address space was not served: $(cat "$W/lazy-ops.log")"
echo "ops: $(cat "$W/ops/result"); $(grep '^lazy' "$W/lazy-ops.log")"
kill -STOP "$LP"
rm -rf "$W/img-half" && mkdir "$W/img-half"
"$CKPT_TOOL" dump "$LP" "$W/img-half" > "$W/half.log" 2>&1 ||
	fail "ops: dump once complete: $(cat "$W/half.log")"
kill -9 "$LP"

# 1c. a working set of another image: ignored, recorded again; one
# altered: refused before anything runs
cp "$W/img-hog/workingset" "$W/ws-hog"
cp "$W/img-hog/workingset" "$W/img-ops/workingset"
lazy ops
wait "$LT" || fail "ops ws: $(cat "$W/lazy-ops.log")"
[ "$(stat_of ops ws_blocks)" = 0 ] && [ "$(stat_of ops rec)" = 1 ] ||
	fail "ops ws: another image's working set used: $(grep '^lazy' "$W/lazy-ops.log")"
kill -9 "$LP"
cmp -s "$W/ws-hog" "$W/img-ops/workingset" && fail "ops ws: not recorded again"
flip() { # FILE OFFSET: one bit of one byte changed
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
flip "$W/img-hog/workingset" 45
if "$CKPT_TOOL" restore --lazy "$W/img-hog" > "$W/ws-bad.log" 2>&1; then
	kill -9 "$(awk '$1 == "pid" {print $2}' "$W/ws-bad.log")" 2>/dev/null
	fail "altered working set: restored: $(cat "$W/ws-bad.log")"
fi
grep -q 'workingset fails authentication' "$W/ws-bad.log" ||
	fail "altered working set: $(cat "$W/ws-bad.log")"
echo "altered working set: $(cat "$W/ws-bad.log")"
rm "$W/img-hog/workingset" # (case 3 wants the chunk read late)

# 3. a changed chunk: refused when the pager reaches it, the task killed
size=$(stat -c %s "$W/img-hog/pages.img")
at=$((size * 3 / 4))
b=$(od -An -tu1 -j "$at" -N1 "$W/img-hog/pages.img" | tr -d ' ')
printf "$(printf '\\%03o' $(((b + 1) % 256)))" |
	dd of="$W/img-hog/pages.img" bs=1 seek="$at" conv=notrunc status=none
lazy hog
if wait "$LT"; then fail "tampered: the pager finished: $(cat "$W/lazy-hog.log")"; fi
grep -q 'fails authentication' "$W/lazy-hog.log" ||
	fail "tampered: no reason: $(cat "$W/lazy-hog.log")"
wait_for 10 gone "$LP" || fail "tampered: pid $LP still runs"
echo "tampered: $(grep 'authentication' "$W/lazy-hog.log")"
echo "ok"
