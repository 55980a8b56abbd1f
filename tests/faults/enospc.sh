#!/usr/bin/env bash
# tests/faults/enospc.sh — checkpoint and create on a file system that fills
# up (issue #18, "Faults"; gVisor had a checkpoint that truncated silently on
# a full disk and then loaded: gvisor#14228). On small tmpfs mounts:
#
#  1. `--image-path` on a 2 MiB tmpfs, a sandbox whose image is ~5 MiB (a
#     busybox sh holding a few MiB in a variable): checkpoint fails, with
#     and without --leave-running, pages through io_uring and through
#     pwrite(2) (URSA_CKPT_NO_URING=1); the error says "No space left" and names
#     the image directory; the sandbox keeps running, not frozen; what is
#     left in the directory is refused by `ursa restore`, which leaves
#     nothing behind.
#  2. The same with the tmpfs pre-filled so that the free space is a page
#     or a few short of the image, or just enough (a sweep of sizes around
#     the image's, so the writes stop at different points: pages.img, the
#     header page, core.img, the record, tmpfs.lst): a checkpoint either
#     succeeds and its image restores (and runs), or it fails as in 1 —
#     never a failed checkpoint whose image restores.
#  3. `create` and `run -d` with `--root` on a full tmpfs (no free block;
#     no free inode): a clear error, and no state directory, list entry,
#     process or cgroup left. A checkpoint whose key file cannot be made
#     (--key-file on a full file system) fails the same way and the
#     sandbox runs on.
#
# Every failure for want of space must say so ("No space left on device"):
# the state record, the config copy, the key and the supervisor's state
# once said EIO (fixed in session 24).
# Root and /bin/busybox. Every wait polls with a deadline. One line per
# check (and per sweep step, "#"), then "N passed, N failed".
set -u
. "$(dirname "$0")/../lib/skip.sh"
URSA=${URSA:?}
need_root
[ -x /bin/busybox ] || skip_or_fail "no /bin/busybox (busybox-static)"
need_cmd jq
work=$(mktemp -d /tmp/ursa-enospc.XXXXXX)
root=$work/root
tok=nsp$$
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for
mounts=()
u() { "$URSA" --root "$root" "$@"; }
no_space() { # FILE: says no space
	grep -q "No space left on device" "$1"
}
cleanup() {
	local c r m
	for r in "$root" "$work/fullroot" "$work/inoroot"; do
		for c in $("$URSA" --root "$r" list -q 2>/dev/null); do
			"$URSA" --root "$r" delete --force "$c" >/dev/null 2>&1
		done
	done
	for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
mnt() { # DIR OPTS: a tmpfs
	mkdir -p "$1" && mount -t tmpfs -o "$2" "ursa-enospc-$tok" "$1" && mounts+=("$1")
}

b=$work/bundle
mkdir -p "$b/rootfs/bin"
cp /bin/busybox "$b/rootfs/bin/busybox"
for a in sh sleep head base64 cat; do ln -s busybox "$b/rootfs/bin/$a"; done
"$URSA" spec --bundle "$b" >/dev/null
# ~5.5 MiB of text in a shell variable: ~5 MiB of pages. Its loop writes a
# counter into the rootfs, which shows it runs (and is not frozen).
# shellcheck disable=SC2016
jq --arg t "$tok" '.process.terminal = false | .root.readonly = false | .process.args = ["sh", "-c",
	"x=$(head -c 4000000 /dev/urandom | base64); i=0; while :; do i=$((i + 1)); echo $i >/tick.tmp; cat /tick.tmp >/tick; sleep 0.05; done; : " + $t]' \
	"$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"

sandbox_procs() { pgrep -f -- "; : $tok-$1\$"; }
status_of() { u state "$1" 2>/dev/null | jq -r .status; }
tick() { local n; n=$(cat "$work/b-${1%-r}/rootfs/tick" 2>/dev/null); echo "${n:-0}"; } # ID-r: ID's rootfs
ticks_past() { [ "$(tick "$1")" -gt "$2" ]; }
runs_on() { # ID: running, and its loop goes on (not frozen)
	local n
	[ "$(status_of "$1")" = running ] || return 1
	n=$(tick "$1")
	wait_for 10 ticks_past "$1" "$n"
}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # frozen
leftovers() { # ROOT ID: what is left of it, empty if nothing
	local r=$1 id=$2
	[ -e "$r/$id" ] && echo "state dir"
	"$URSA" --root "$r" list 2>/dev/null | grep -qw -- "$id" && echo "list entry"
	[ -n "$(sandbox_procs "$id")" ] && echo "processes $(sandbox_procs "$id" | tr '\n' ' ')"
	[ -n "$(find /sys/fs/cgroup -maxdepth 7 -type d -name "$id" 2>/dev/null | head -1)" ] &&
		echo "cgroups $(find /sys/fs/cgroup -maxdepth 7 -type d -name "$id" | head -3 | tr '\n' ' ')"
	grep -qF -- "$id" /proc/self/mountinfo && echo "mounts"
}
gone() { [ -z "$(leftovers "$1" "$2")" ]; }
nothing_left() { wait_for 20 gone "$1" "$2"; } # ROOT ID
bundle_for() { # ID: its own copy of the rootfs (the tick file) and token
	local d=$work/b-$1
	mkdir -p "$d"
	[ -d "$d/rootfs" ] || cp -a "$b/rootfs" "$d/rootfs"
	jq --arg t "$tok-$1" '.process.args[2] |= sub(": [a-z0-9-]+$"; ": " + $t)' \
		"$b/config.json" >"$d/config.json"
	echo "$d"
}
start() { # ID: run it, wait until its memory is filled and it ticks
	local d
	d=$(bundle_for "$1")
	rm -f "$d/rootfs/tick"
	u run -d --bundle "$d" "$1" </dev/null >/dev/null 2>"$work/run.err" || return 1
	wait_for 30 ticks_past "$1" 2
}
pages_of() { # FILE...: tmpfs pages they take
	local f n=0 s
	for f in "$@"; do
		s=$(stat -c %s "$f")
		n=$((n + (s + 4095) / 4096))
	done
	echo $n
}
# restore_refused DIR ID: restore of DIR fails with a message and leaves nothing
restore_refused() {
	local d=$1 id=$2
	if u restore -d --image-path "$d" --bundle "$work/b-$id" "$id-r" </dev/null >/dev/null \
		2>"$work/restore.err"; then
		echo "restored"
		u delete --force "$id-r" >/dev/null 2>&1
		return 1
	fi
	[ -s "$work/restore.err" ] || { echo "refused without a word"; return 1; }
	nothing_left "$root" "$id-r" || { echo "left: $(leftovers "$root" "$id-r")"; return 1; }
}

# ---- the image's size ------------------------------------------------------------
id=$tok-s
start "$id" || { bad "a sandbox holding ~5 MiB starts" "$(cat "$work/run.err")"; echo "$passed passed, $failed failed"; exit 1; }
# The smallest of three images, each page once (no copy while it runs:
# pages written meanwhile would be in the page data twice). The shell forks
# a `sleep` every 50 ms: a child caught between its fork and its exec holds
# all of the shell's memory, which an image held twice before such pages
# were stored once (docs/checkpoint.md, "Stored once, restored apart"):
# one CI run's reference was so, over 64 pages above every image after it.
# The pages it wrote since the fork (its stack, its copy of the
# environment) are still its own.
need=
for n in 1 2 3; do
	rm -rf "$work/ref"
	URSA_CKPT_NO_PRECOPY=1 u checkpoint --leave-running --image-path "$work/ref" "$id" 2>"$work/ck.err" ||
		bad "a checkpoint to a roomy directory works" "$(cat "$work/ck.err")"
	mapfile -t files < <(find "$work/ref" -type f)
	p=$(pages_of "${files[@]}")
	echo "# image $n: ${#files[@]} files, $p pages ($(du -sh "$work/ref" | cut -f1))"
	{ [ -z "$need" ] || [ "$p" -lt "$need" ]; } && need=$p
done
rm -rf "$work/ref"
[ "$need" -gt 1024 ] || bad "the image is bigger than the small tmpfs (2 MiB)" "$need pages"

# ckpt_fails DIR ID LEAVE: checkpoint into DIR fails for want of space, the
# sandbox runs on, whatever is left is refused; prints what went wrong
ckpt_fails() {
	local d=$1 id=$2 leave=$3 rc
	u checkpoint ${leave:+--leave-running} --image-path "$d" "$id" 2>"$work/ck.err"
	rc=$?
	[ $rc != 0 ] || { echo "checkpoint exit 0"; return; }
	judge_failure "$d" "$id"
}
# judge_failure DIR ID: the checkpoint into DIR that just failed (its
# stderr in $work/ck.err) said why and where, the sandbox runs on, not
# frozen, and what it left in DIR is refused; prints what went wrong
judge_failure() {
	local d=$1 id=$2 why=""
	no_space "$work/ck.err" || why="${why:+$why; }no \"No space left\": $(cat "$work/ck.err")"
	grep -qF "$d" "$work/ck.err" || why="${why:+$why; }the error does not name $d: $(cat "$work/ck.err")"
	frozen "$id" && why="${why:+$why; }frozen"
	runs_on "$id" || why="${why:+$why; }not running on (status $(status_of "$id"))"
	local r
	r=$(restore_refused "$d" "$id") || why="${why:+$why; }the leftovers ($(ls "$d" 2>/dev/null | tr '\n' ' ')): $r"
	echo "$why"
}

# ---- 1. a tmpfs half the image's size --------------------------------------------
mnt "$work/small" size=2m,mode=0700
for sink in uring pwrite; do # the pages sink's two ways (URSA_CKPT_NO_URING)
	[ $sink = pwrite ] && export URSA_CKPT_NO_URING=1
	for leave in 1 ""; do
		why=$(ckpt_fails "$work/small/img" "$id" "$leave")
		check "2 MiB --image-path, ~5 MiB image, pages through $sink${leave:+, --leave-running}: refused for want of space, runs on, not frozen, leftovers refused" \
			'[ -z "$why" ]' "$why"
		rm -rf "$work/small/img"
	done
done
unset URSA_CKPT_NO_URING

# ---- 2. just short of the image, and just enough -----------------------------------
# the free space, in pages, from STEPS short of the image's pages to 64
# over: images of one sandbox differ by ~25 pages here (whether an exec'd
# `sleep` is in it), and the ends, 256 short and 64 over, make the sweep
# straddle the image's size all the same
mnt "$work/fit" size=$(((need + 128) * 4096)),mode=0700
short=0 fit=0 bugs=0
for k in ${STEPS:-256 64 24 16 12 9 7 5 4 3 2 1 0 -2 -8 -64}; do
	for leave in 1 ""; do
		[ "$(status_of "$id")" = running ] || start "$id" ||
			{ bad "restart the sandbox" "$(cat "$work/run.err")"; break 2; }
		rm -rf "$work/fit/img" "$work/fit/filler"
		free=$(stat -f -c %a "$work/fit")
		want=$((need - k))
		[ $free -gt $want ] && head -c $(((free - want) * 4096)) /dev/zero >"$work/fit/filler"
		u checkpoint ${leave:+--leave-running} --image-path "$work/fit/img" "$id" 2>"$work/ck.err"
		rc=$?
		name="free space $k pages short of the image${leave:+, --leave-running}"
		if [ $rc = 0 ]; then
			fit=$((fit + 1))
			[ -n "$leave" ] || nothing_left "$root" "$id" || bad "$name: checkpointed, the sandbox is gone" "$(leftovers "$root" "$id")"
			if u restore -d --image-path "$work/fit/img" --bundle "$work/b-$id" "$id-r" </dev/null \
				>/dev/null 2>"$work/restore.err" && runs_on "$id-r"; then
				echo "# $name: fitted, restored"
			else
				bugs=$((bugs + 1))
				bad "$name: a complete checkpoint restores" "$(cat "$work/restore.err")"
			fi
			u delete --force "$id-r" >/dev/null 2>&1
			nothing_left "$root" "$id-r"
		else
			short=$((short + 1))
			why=$(judge_failure "$work/fit/img" "$id")
			if [ -n "$why" ]; then
				bugs=$((bugs + 1))
				bad "$name: refused, runs on, leftovers refused" "$why"
			else
				echo "# $name: refused: $(sed 's/^ursa: checkpoint [^:]*: //' "$work/ck.err" | head -1)"
			fi
		fi
	done
done
check "sweep around the image's size: $short refused, $fit fitted, every refusal clean and every fit restorable" \
	'[ $bugs = 0 ] && [ $short -gt 0 ] && [ $fit -gt 0 ]' "$bugs bad; $short refused, $fit fitted"
u delete --force "$id" >/dev/null 2>&1
nothing_left "$root" "$id"

# ---- 3. a full --root --------------------------------------------------------------
# no free block (the record cannot be written), then no free inode (no
# state directory): create and run -d refuse, nothing is left
mnt "$work/fullroot" size=64k,mode=0700
head -c 1048576 /dev/zero >"$work/fullroot/filler" 2>/dev/null
mnt "$work/inoroot" size=1m,nr_inodes=4,mode=0700
{ for i in 1 2 3 4 5; do : >"$work/inoroot/f$i"; done; } 2>/dev/null
for r in fullroot inoroot; do
	for c in create run; do
		cid=$tok-$r-$c
		d=$(bundle_for "$cid")
		if [ $c = create ]; then
			"$URSA" --root "$work/$r" create --bundle "$d" "$cid" </dev/null >/dev/null 2>"$work/cr.err"
		else
			"$URSA" --root "$work/$r" run -d --bundle "$d" "$cid" </dev/null >/dev/null 2>"$work/cr.err"
		fi
		rc=$?
		why=""
		[ $rc != 0 ] || why="exit 0"
		no_space "$work/cr.err" || why="${why:+$why; }no \"No space left\": $(cat "$work/cr.err")"
		nothing_left "$work/$r" "$cid" || why="${why:+$why; }left: $(leftovers "$work/$r" "$cid" | tr '\n' ',')"
		check "$c on a --root with no free $([ $r = fullroot ] && echo block || echo inode): refused naming the cause, nothing left" \
			'[ -z "$why" ]' "$why"
		"$URSA" --root "$work/$r" delete --force "$cid" >/dev/null 2>&1
	done
done
# the checkpoint key: its first use, on a full file system (--key-file)
mnt "$work/keyfs" size=256k,mode=0700
head -c 1048576 /dev/zero >"$work/keyfs/filler" 2>/dev/null
cid=$tok-key
d=$(bundle_for "$cid")
rm -f "$d/rootfs/tick"
u run -d --bundle "$d" "$cid" </dev/null >/dev/null 2>"$work/run.err" &&
	wait_for 30 ticks_past "$cid" 2
u checkpoint --key-file "$work/keyfs/checkpoint.key" --image-path "$work/keyimg" "$cid" 2>"$work/ck.err"
rc=$?
n=$(tick "$cid")
check "checkpoint whose key cannot be made (a full file system): refused naming the cause, runs on, no image" \
	'[ $rc != 0 ] && no_space "$work/ck.err" && grep -q "checkpoint key" "$work/ck.err" &&
	 [ "$(u state "$cid" | jq -r .status)" = running ] &&
	 wait_for 10 ticks_past "$cid" "$n" && ! frozen "$cid" && [ ! -e "$work/keyimg/core.img" ]' \
	"rc $rc: $(cat "$work/ck.err")"
u delete --force "$cid" >/dev/null 2>&1
nothing_left "$root" "$cid"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
