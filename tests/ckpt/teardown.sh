#!/usr/bin/env bash
# tests/ckpt/teardown.sh — a checkpoint that kills its sandbox does not wait
# for its tasks' exit; its cgroups go once they have, or the next sandbox of
# its ID takes them over (host/teardown.h):
#   1. a predecessor still exiting, made by hand: its cgroups (busy with a
#      process of the test's) and ROOT/.teardown/ID naming them; `ursa run`
#      of that ID takes them over (without that it refuses: "already exists
#      and has processes"), the record goes, and `delete` removes them
#   2. the same with a pids limit in the config (the predecessor's tasks
#      would count against it): not taken over; the run fails naming them
#      while their task lives, the record is kept, nothing else is left;
#      once it is gone the next run removes them and makes its own
#   3. a real checkpoint of a 256 MiB workload then at once its restore:
#      the restore works, the workload's memory is right, the record is gone
#   4. a checkpoint with no restore after it: its cgroups, the record and
#      the reaper are gone soon after, by themselves
# Needs root (namespaces, cgroups). Env: URSA, HOG.
set -u
P=td$$-
URSA=${URSA:?} HOG=${HOG:?}
work=$(mktemp -d /tmp/ursa-ckpt-td.XXXXXX)
root=$work/root
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for
. "$(dirname "$0")/../lib/hog.sh"   # hog_bundle, hog_checked
u() { "$URSA" --root "$root" "$@"; }
holder=
made=() # directories made by hand, removed at the end whatever happened
cleanup() {
	[ -n "$holder" ] && kill -9 "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
	for id in ${P}a ${P}b ${P}h ${P}n; do u delete --force "$id" >/dev/null 2>&1; done
	for dir in "${made[@]}"; do rmdir "$dir" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

cg_dirs() { find /sys/fs/cgroup -maxdepth 7 -type d -name "$1" 2>/dev/null | wc -l; }
no_cg() { [ "$(cg_dirs "$1")" = 0 ]; }
record() { cat "$root/.teardown/$1" 2>/dev/null; }
no_record() { [ ! -e "$root/.teardown" ]; } # (it goes with its last record)
cg_of() { u state "$1" 2>/dev/null | jq -r .pid | xargs -I{} cat /proc/{}/cgroup 2>/dev/null; }

hog_bundle "$work" 256 1 || exit 1
t=$work/rootfs/tmp

# predecessor ID CGSTRING: its directories made again, a holder of ours in
# each (a task still exiting, as far as the cgroups can tell), the record left
predecessor() {
	local id=$1 cgs=$2 ent dir
	tail -f /dev/null &
	holder=$!
	IFS=';' read -ra ents <<<"$cgs"
	for ent in "${ents[@]:1}"; do
		dir=${ent#*:}
		mkdir -p "$dir" || return 1
		made+=("$dir")
		[ -e "$dir/cpuset.cpus" ] && cat "$dir/../cpuset.cpus" >"$dir/cpuset.cpus" &&
			cat "$dir/../cpuset.mems" >"$dir/cpuset.mems"
		echo "$holder" >"$dir/cgroup.procs" || return 1
	done
	mkdir -p "$root/.teardown" && printf '%s' "$cgs" >"$root/.teardown/$id"
}
# the cgroups a sandbox of ID gets here (made once, then removed)
cgroups_for() {
	local id=$1 cgs
	(cd "$work/b" && u run -d "$id" >/dev/null) || return 1
	cgs=$(jq -r .cgroup "$root/$id/state.json")
	u delete --force "$id" >/dev/null 2>&1
	wait_for 10 no_cg "$id" && echo "$cgs"
}
idle() { # the bundle runs `tail -f /dev/null` instead of the hog
	jq '.process.args = ["/bin/tail", "-f", "/dev/null"]' "$work/b/config.json" >"$work/b/c" &&
		mv "$work/b/c" "$work/b/config.json" && ln -sf busybox "$work/rootfs/bin/tail"
}
cp "$work/b/config.json" "$work/hog.json"
idle

# ---- 1. taken over ----------------------------------------------------------
cgs=$(cgroups_for ${P}a) || bad "a sandbox to learn its cgroups from" ""
predecessor ${P}a "$cgs" || bad "the predecessor's cgroups, made by hand" ""
if (cd "$work/b" && u run -d ${P}a >/dev/null 2>"$work/a.err"); then
	ok "run over a predecessor still exiting in its cgroups"
else
	bad "run over a predecessor still exiting in its cgroups" "$(cat "$work/a.err")"
fi
check "its record is taken" 'no_record' "$(ls -la "$root/.teardown")"
check "the sandbox's cgroups are the predecessor's" \
	'[ "$(jq -r .cgroup "$root/${P}a/state.json")" = "$cgs" ]' "$(jq -r .cgroup "$root/${P}a/state.json")"
check "the holder and the init share them" \
	'grep -q "/${P}a\$" /proc/$holder/cgroup && cg_of ${P}a | grep -q "/${P}a\$"'
kill -9 "$holder" && wait "$holder" 2>/dev/null
holder=
check "delete removes them (they are the sandbox's now)" \
	'u delete --force ${P}a && wait_for 10 no_cg ${P}a' "$(find /sys/fs/cgroup -maxdepth 7 -type d -name ${P}a)"

# ---- 2. a pids limit: not taken over -------------------------------------------
jq '.linux.resources.pids = {"limit": 64}' "$work/b/config.json" >"$work/b/c" &&
	mv "$work/b/c" "$work/b/config.json"
cgs=$(cgroups_for ${P}b) || bad "a sandbox to learn its cgroups from (pids limit)" ""
predecessor ${P}b "$cgs" || bad "the predecessor's cgroups, made by hand (pids limit)" ""
if (cd "$work/b" && u run -d ${P}b >/dev/null 2>"$work/b.err"); then
	bad "with a pids limit, run waits for the predecessor's tasks" "it ran over them"
else
	check "with a pids limit, run refuses while the predecessor's task lives, naming it" \
		'grep -q "killed by a checkpoint" "$work/b.err"' "$(cat "$work/b.err")"
fi
check "and leaves no record of its own, the predecessor's kept" \
	'! u state ${P}b >/dev/null 2>&1 && [ ! -e "$root/${P}b" ] && [ -n "$(record ${P}b)" ]' \
	"$(ls -la "$root" "$root/.teardown")"
kill -9 "$holder" && wait "$holder" 2>/dev/null
holder=
if (cd "$work/b" && u run -d ${P}b >/dev/null 2>"$work/b.err"); then
	ok "once it has exited, run removes them and makes its own"
else
	bad "once it has exited, run removes them and makes its own" "$(cat "$work/b.err")"
fi
check "the record is gone" 'no_record' "$(ls -la "$root/.teardown")"
check "the pids limit is set" \
	'[ "$(cat "$(sed -n "s/.*pids=[0-9]*:\([^;]*\).*/\1/p" "$root/${P}b/state.json" | head -1)/pids.max")" = 64 ]'
u delete --force ${P}b >/dev/null 2>&1
check "delete leaves nothing" 'wait_for 10 no_cg ${P}b'

# ---- 3. a checkpoint then at once its restore ------------------------------------
cp "$work/hog.json" "$work/b/config.json"
(cd "$work/b" && u run -d ${P}h >/dev/null) || bad "the 256 MiB workload runs" ""
wait_for 60 test -s "$t/ready-0" || bad "the 256 MiB workload is ready" ""
if u checkpoint --image-path "$work/img" ${P}h 2>"$work/ck.err" &&
	(cd "$work/b" && u restore --detach --image-path "$work/img" ${P}h 2>"$work/rs.err"); then
	ok "checkpoint, then at once restore"
else
	bad "checkpoint, then at once restore" "$(cat "$work/ck.err" "$work/rs.err" 2>/dev/null)"
fi
check "the restored workload's memory is right" 'hog_checked ${P}h "$t" 1' "$(cat "$t"/check-* 2>/dev/null)"
check "no record is left" 'wait_for 10 no_record' "$(ls -la "$root/.teardown")"
u delete --force ${P}h >/dev/null 2>&1
check "delete leaves nothing" 'wait_for 10 no_cg ${P}h'

# ---- 4. a checkpoint, nothing after it ------------------------------------------------
rm -rf "$work/img" "$t"/ready-0
(cd "$work/b" && u run -d ${P}n >/dev/null) || bad "the workload runs again" ""
wait_for 60 test -s "$t/ready-0" || bad "the workload is ready again" ""
u checkpoint --image-path "$work/img" ${P}n 2>"$work/ck.err" || bad "checkpoint" "$(cat "$work/ck.err")"
check "the container is gone at once" '! u state ${P}n >/dev/null 2>&1 && [ ! -e "$root/${P}n" ]'
check "its cgroups and the record go by themselves" 'wait_for 10 no_cg ${P}n && wait_for 10 no_record' \
	"$(find /sys/fs/cgroup -maxdepth 7 -type d -name ${P}n; ls -la "$root/.teardown")"
check "and the reaper with them" 'wait_for 10 eval "! pgrep -f \"ursa --root $root checkpoint\" >/dev/null"' \
	"$(pgrep -af "ursa --root $root")"
finish
