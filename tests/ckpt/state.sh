#!/usr/bin/env bash
# tests/ckpt/state.sh — the supervisor's own state across `ursa checkpoint` /
# `ursa restore` (actors/checkpointer.c, DIR/supervisor.img):
#   - checkpoint writes supervisor.img (a statefile, mode 0600) beside the
#     process image, and the host has its key (/var/lib/ursa/checkpoint.key,
#     0600, in a directory only root writes; none in the state root, which
#     may be tmpfs)
#   - after restore, metric counters continue: the control socket's
#     "metrics" request counter is at least its value before the checkpoint
#     (a fresh supervisor would start from 1), also through a second
#     checkpoint/restore of the restored sandbox, and a third sealed under
#     --key-file (the supervisor's state too: restore verifies it), refused
#     without it; the "checkpoint" request counter counts the checkpoints
#   - a tampered (one flipped byte), truncated, or foreign (another key)
#     supervisor.img makes restore refuse with a clear error and leave
#     nothing (no record, no cgroup, no process); so do a forged core.img
#     or pages.img (a byte flipped, every checksum fixed: tests/ckpt/forge.py),
#     refused as failing authentication (ckpt/seal.h)
#   - the image's manifest (ckpt/manifest.h): an image without one, with a
#     file added, with its record altered, or with another image's manifest
#     is refused before anything is made
#   - a checkpoint that fails (multi-threaded workload) leaves no
#     supervisor.img
# Needs root (namespaces, cgroups, ptrace). Env: URSA, THREADS.
set -u
P=cs$$-
URSA=${URSA:?} THREADS=${THREADS:?}
work=$(mktemp -d /tmp/ursa-ckpt-st.XXXXXX)
root=$work/root
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for
u() { URSA_SECCOMP_COUNT=0 "$URSA" --root "$root" "$@"; }
cleanup() {
	for id in ${P}s1 ${P}s2 ${P}bad1 ${P}bad2 ${P}bad3 ${P}bad4 ${P}bad5 ${P}bad6 ${P}bad7 ${P}bad8 ${P}bad9 ${P}bad10 ${P}t1 ${P}j ${P}n ${P}f; do u delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT

cg_dirs() { find /sys/fs/cgroup -maxdepth 6 -type d -name "$1" 2>/dev/null | wc -l; }
nothing_left() { # id
	! u state "$1" >/dev/null 2>&1 && [ ! -e "$root/$1" ] && [ "$(cg_dirs "$1")" = 0 ] &&
		! grep -qs "/$1\$" /proc/[0-9]*/cgroup
}
status_of() { u state "$1" 2>/dev/null | jq -r .status; }
# metric VALUE of a series: metric ID NAME LABEL-SUBSTRING
metric() { u metrics "$1" 2>/dev/null | grep "^$2{" | grep -F "$3" | awk '{print $2}'; }

mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/tmp" "$work/b" "$work/b2"
cp /bin/busybox "$work/rootfs/bin/" && ln -s busybox "$work/rootfs/bin/sh" &&
	ln -s busybox "$work/rootfs/bin/sleep"
cp "$THREADS" "$work/rootfs/bin/threads"
(cd "$work/b" && "$URSA" spec) || exit 1
jq --arg rootfs "$work/rootfs" '.root.path = $rootfs | .root.readonly = false
	| .process.terminal = false | .process.args = ["/bin/sleep", "1000"]
	| .annotations = {"run.ursa.network": "none"}' "$work/b/config.json" >"$work/b/c" &&
	mv "$work/b/c" "$work/b/config.json"

REQ=ursa_supervisor_control_requests_total
# cgroup placement (host/cgroup.c, "moving a process in without the kernel's
# global migration lock"): the init in each of the sandbox's hierarchies,
# the supervisor in each v1 one (it moved itself in) but pids (it is none
# of the container's tasks: actors/sup_cgself.c, sup_pids_leave); on hybrid
# hosts the supervisor stays out of the v2 cgroup, whose freezer then stops
# only the workload (actors/sup_cgself.c, sup_join_v2_setup)
hybrid=false
[ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ] && hybrid=true
placed() { # id
	local pid sup v1i v1s v2i v2s
	pid=$(jq -r .pid "$root/$1/state.json") sup=$(jq -r .sup_pid "$root/$1/state.json")
	v1i=$(grep -v '^0::' "/proc/$pid/cgroup" | grep -v ':pids:' | sort)
	v1s=$(grep -v '^0::' "/proc/$sup/cgroup" | grep -v ':pids:' | sort)
	grep -q ":pids:.*/$1\$" "/proc/$pid/cgroup" || return 1
	grep -q ":pids:.*/$1\$" "/proc/$sup/cgroup" && return 1
	# a supervisor that could not lower its OOM score (no CAP_SYS_RESOURCE)
	# goes back to the caller's memory cgroup once running (docs/sandbox.md)
	if [ "$(cat "/proc/$sup/oom_score_adj")" != -999 ] && $hybrid; then
		grep -q ":memory:.*/$1\$" "/proc/$sup/cgroup" && return 1
		v1i=$(grep -v ':memory:' <<<"$v1i") v1s=$(grep -v ':memory:' <<<"$v1s")
	fi
	v2i=$(sed -n 's/^0:://p' "/proc/$pid/cgroup") v2s=$(sed -n 's/^0:://p' "/proc/$sup/cgroup")
	[[ $v2i == */$1 ]] || return 1
	$hybrid || return 0
	[ -n "$v1i" ] && [ "$v1i" = "$v1s" ] && ! grep -qv "/$1\$" <<<"$v1i" && [[ $v2s != */$1 ]]
}
# the supervisor moves on a thread once the sandbox runs: up to 20 s
placed_soon() {
	local i=0
	while ! placed "$1"; do
		i=$((i + 1))
		[ $i -lt 400 ] || return 1
		sleep 0.05
	done
}
# ---- checkpoint: supervisor.img and the key --------------------------------------
(cd "$work/b" && u run -d ${P}s1 >/dev/null 2>"$work/run.err") || bad "run -d ${P}s1" "$(cat "$work/run.err")"
check "cgroups: the init in all of the sandbox's, the supervisor in the v1 ones but pids (and memory without CAP_SYS_RESOURCE)" \
	'placed_soon ${P}s1' "$(cat /proc/$(jq -r .sup_pid "$root/${P}s1/state.json")/cgroup)"
for _ in 1 2 3 4 5 6 7 8; do u metrics ${P}s1 >/dev/null; done
before=$(metric ${P}s1 $REQ 'request="metrics"')
check "the metrics request counter counts ($before)" '[ "${before:-0}" -ge 9 ]'
if u checkpoint --image-path "$work/img" ${P}s1 2>"$work/ck.err"; then
	ok "checkpoint"
else
	bad "checkpoint" "$(cat "$work/ck.err")"
fi
check "supervisor.img is there, mode 0600, a statefile" \
	'[ "$(stat -c %a "$work/img/supervisor.img" 2>/dev/null)" = 600 ] && [ "$(head -c 8 "$work/img/supervisor.img")" = URSASTAT ]'
check "the host has its key (0600, 32 bytes, in a directory only root writes), the state root none" \
	'[ "$(stat -c %a:%s /var/lib/ursa/checkpoint.key 2>/dev/null)" = 600:32 ] &&
	 [ -z "$(find /var/lib/ursa -maxdepth 0 -perm /022)" ] && [ -z "$(ls -A "$root" | grep -i key)" ]'
cp -a "$work/img" "$work/img.orig"

# ---- restore: counters continue ---------------------------------------------------
if (cd "$work/b" && u restore --detach --image-path "$work/img" ${P}s1 >/dev/null 2>"$work/rs.err"); then
	ok "restore --detach"
else
	bad "restore --detach" "$(cat "$work/rs.err")"
fi
check "state says running" '[ "$(status_of ${P}s1)" = running ]'
check "cgroups after restore: the same placement" 'placed_soon ${P}s1'
after=$(metric ${P}s1 $REQ 'request="metrics"')
check "the metrics request counter continues ($before before, $after after restore)" \
	'[ -n "$after" ] && [ "$after" -ge "$before" ]'
ck=$(metric ${P}s1 $REQ 'request="checkpoint"')
check "the checkpoint request was counted and kept ($ck)" '[ "${ck:-0}" = 1 ]'

# a second generation: checkpoint the restored sandbox, restore again
u checkpoint --image-path "$work/img2" ${P}s1 2>"$work/ck2.err" || bad "second checkpoint" "$(cat "$work/ck2.err")"
(cd "$work/b" && u restore --detach --image-path "$work/img2" ${P}s1 >/dev/null 2>"$work/rs2.err") ||
	bad "second restore" "$(cat "$work/rs2.err")"
after2=$(metric ${P}s1 $REQ 'request="metrics"')
ck2=$(metric ${P}s1 $REQ 'request="checkpoint"')
check "after a second checkpoint/restore: metrics $after2 > $after, checkpoints $ck2 = 2" \
	'[ -n "$after2" ] && [ "$after2" -gt "$after" ] && [ "${ck2:-0}" = 2 ]'
# a third, under a key of its own (--key-file, made at first use): the
# supervisor seals its state with it too, and restore verifies that
u checkpoint --key-file "$work/keys/own.key" --image-path "$work/img3" ${P}s1 2>"$work/ck3.err" ||
	bad "checkpoint --key-file" "$(cat "$work/ck3.err")"
check "--key-file made its key (0600, 32 bytes)" \
	'[ "$(stat -c %a:%s "$work/keys/own.key" 2>/dev/null)" = 600:32 ]'
(cd "$work/b" && u restore --key-file "$work/keys/own.key" --detach --image-path "$work/img3" ${P}s1 \
	>/dev/null 2>"$work/rs3.err") || bad "restore --key-file" "$(cat "$work/rs3.err")"
ck3=$(metric ${P}s1 $REQ 'request="checkpoint"')
check "restored under --key-file, its state verified: checkpoints $ck3 = 3" '[ "${ck3:-0}" = 3 ]'
u delete --force ${P}s1 >/dev/null 2>&1

# ---- a character device of the host's (/dev/null, handed in as fd 3: what a
# shell's saved stdout looks like mid-redirection) is the same device as the
# sandbox's /dev/null: saved and restored as that (ckpt/dump.c,
# chr_in_task_root)
(cd "$work/b" && u run -d --preserve-fds 1 ${P}n </dev/null >/dev/null 2>"$work/n.err" 3>/dev/null) ||
	bad "run -d --preserve-fds 1" "$(cat "$work/n.err")"
u checkpoint --image-path "$work/imgn" ${P}n 2>"$work/ckn.err"
rc=$?
check "fd 3 = the host's /dev/null: checkpoint" '[ $rc = 0 ]' "$(cat "$work/ckn.err" 2>/dev/null)"
(cd "$work/b" && u restore --detach --image-path "$work/imgn" ${P}n </dev/null >/dev/null 2>"$work/rsn.err") ||
	bad "restore (fd 3 /dev/null)" "$(cat "$work/rsn.err")"
check "restored fd 3 is /dev/null (the sandbox's)" \
	'[ "$(readlink "/proc/$(jq -r .pid "$root/${P}n/state.json")/fd/3")" = /dev/null ]'
u delete --force ${P}n >/dev/null 2>&1

# ---- a workload forking short-lived children: every dump succeeds (the
# freezer first; seizing the running tree with ptrace lost races with
# children gone before their seize: 5 of 30 failed)
mkdir -p "$work/bf"
jq '.process.args = ["/bin/sh", "-c", "while :; do for i in 1 2 3 4; do true & done; wait; done"]' \
	"$work/b/config.json" >"$work/bf/config.json"
(cd "$work/bf" && u run -d ${P}f >/dev/null 2>"$work/f.err") || bad "run -d (forking)" "$(cat "$work/f.err")"
nfail=0
for _ in $(seq 20); do
	rm -rf "$work/imgf"
	u checkpoint --leave-running --image-path "$work/imgf" ${P}f 2>"$work/ckf.err" || nfail=$((nfail + 1))
done
check "20 dumps of a forking workload, none failed ($nfail)" '[ $nfail = 0 ]' "$(cat "$work/ckf.err")"
check "and it still runs" '[ "$(status_of ${P}f)" = running ]'
u delete --force ${P}f >/dev/null 2>&1

# ---- the unified hosts' way, on a hybrid one (URSA_CG_JOIN_V2=1): the supervisor
# joins the sandbox's v2 cgroup once it runs (actors/sup_cgself.c, sup_j2); checkpoint
# then gets its state before freezing it; a restore that writes tmpfs contents
# joins before writing them (they are charged to the writer)
sup_v2() { [[ $(sed -n 's/^0:://p' "/proc/$(jq -r .sup_pid "$root/$1/state.json")/cgroup") == */$1 ]]; }
if $hybrid; then
	(cd "$work/b" && URSA_CG_JOIN_V2=1 u run -d ${P}j >/dev/null 2>"$work/j.err") ||
		bad "run -d (URSA_CG_JOIN_V2=1)" "$(cat "$work/j.err")"
	for _ in $(seq 400); do sup_v2 ${P}j && break; sleep 0.05; done # up to 20 s
	check "URSA_CG_JOIN_V2=1: the supervisor joins the v2 cgroup once running" 'sup_v2 ${P}j'
	u exec ${P}j /bin/sh -c 'echo kept >/dev/shm/f' >/dev/null 2>&1
	u checkpoint --image-path "$work/imgj" ${P}j 2>"$work/ckj.err"
	rc=$?
	check "checkpoint with the supervisor in the frozen cgroup" '[ $rc = 0 ]' "$(cat "$work/ckj.err" 2>/dev/null)"
	(cd "$work/b" && URSA_CG_JOIN_V2=1 u restore --detach --image-path "$work/imgj" ${P}j \
		>/dev/null 2>"$work/rsj.err") || bad "restore (URSA_CG_JOIN_V2=1)" "$(cat "$work/rsj.err")"
	check "after a restore with tmpfs contents: in v2, contents back" \
		'sup_v2 ${P}j && [ "$(u exec ${P}j /bin/sh -c "cat /dev/shm/f" 2>&1)" = kept ]'
	u delete --force ${P}j >/dev/null 2>&1
	check "and deleted: nothing left" 'nothing_left ${P}j'
fi

# ---- refusals leave nothing --------------------------------------------------------
refused() { # NAME ID DIR PATTERN [ENV...]
	local name=$1 id=$2 dir=$3 pat=$4 rc
	shift 4
	(cd "$work/b" && env "$@" URSA_SECCOMP_COUNT=0 "$URSA" --root "$root" restore --detach \
		--image-path "$dir" "$id" >/dev/null 2>"$work/$id.err")
	rc=$?
	local names=${NAMES:-supervisor state} # what the message must name
	check "$name: restore refuses, naming the ${names%% *} file" \
		'[ $rc != 0 ] && grep -q "$names" "$work/$id.err" && grep -qi "$pat" "$work/$id.err"' \
		"rc $rc: $(cat "$work/$id.err")"
	check "$name: and leaves nothing" "nothing_left $id"
}
cp -a "$work/img.orig" "$work/tampered"
size=$(stat -c %s "$work/tampered/supervisor.img")
b=$(od -An -tu1 -j $((size / 2)) -N1 "$work/tampered/supervisor.img" | tr -d ' ')
printf "\\$(printf %o $(((b + 1) % 256)))" |
	dd of="$work/tampered/supervisor.img" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
# (the image's manifest, checked before anything is read, lists it with its
# hash: ckpt/manifest.h)
NAMES=supervisor.img refused "a flipped byte" ${P}bad1 "$work/tampered" "altered"
cp -a "$work/img.orig" "$work/truncated"
truncate -s -40 "$work/truncated/supervisor.img"
NAMES=supervisor.img refused "a truncated state file" ${P}bad2 "$work/truncated" "altered"
# the manifest (written last: the image's commit) and what it covers
cp -a "$work/img.orig" "$work/nomanifest" && rm "$work/nomanifest/manifest.img"
NAMES=manifest.img refused "no manifest (an incomplete checkpoint)" ${P}bad6 "$work/nomanifest" \
	"did not complete"
cp -a "$work/img.orig" "$work/extra" && echo x >"$work/extra/tmpfs-7.img" && chmod 600 "$work/extra/tmpfs-7.img"
NAMES=tmpfs-7.img refused "a file added to the image" ${P}bad7 "$work/extra" "not in the image's manifest"
cp -a "$work/img.orig" "$work/record" && sed -i 's/sleep/sleeq/' "$work/record/container/config.json"
NAMES=container/config.json refused "the image's config.json altered" ${P}bad8 "$work/record" "altered"
cp -a "$work/img.orig" "$work/swapped" && cp "$work/img2/manifest.img" "$work/swapped/"
NAMES=manifest.img refused "another image's manifest" ${P}bad9 "$work/swapped" "another core.img"
head -c 32 /dev/urandom >"$work/other.key" && chmod 600 "$work/other.key"
# (core.img, checked first since images are authenticated, says so before
# the state file is read)
NAMES=core.img refused "an image from another host (key)" ${P}bad3 "$work/img.orig" \
	"wrong key\|tampered\|fails authentication" URSA_CKPT_KEY="$work/other.key"
NAMES=core.img refused "an image sealed under --key-file, restored with the host's key" ${P}bad10 \
	"$work/img3" "wrong key\|tampered\|fails authentication"
# forged: one byte of the core (registers, fds: 512 bytes into the body) or
# of the page data flipped, every checksum made right again (forge.py): only
# the MACs can tell, and before anything is made (issue #19)
cp -a "$work/img.orig" "$work/forged-core"
python3 "$(dirname "$0")/forge.py" "$work/forged-core" core 512
NAMES=core.img refused "a forged core (checksums fixed)" ${P}bad4 "$work/forged-core" \
	"fails authentication"
cp -a "$work/img.orig" "$work/forged-pages"
python3 "$(dirname "$0")/forge.py" "$work/forged-pages" pages 4200
NAMES=core.img refused "forged page data (checksums fixed)" ${P}bad5 "$work/forged-pages" \
	"fails authentication"

# ---- a failed checkpoint leaves no supervisor.img ------------------------------------
jq '.process.args = ["/bin/threads"]' "$work/b/config.json" >"$work/b2/config.json"
(cd "$work/b2" && u run -d ${P}t1 >/dev/null 2>&1)
threaded() { [ "$(ls /proc/"$(jq -r .pid "$root/${P}t1/state.json")"/task 2>/dev/null | wc -l)" -gt 1 ]; }
for _ in $(seq 400); do threaded && break; sleep 0.05; done # its threads started (<= 20 s)
u checkpoint --image-path "$work/img3" ${P}t1 >/dev/null 2>"$work/t1.err"
rc=$?
check "a refused checkpoint leaves no supervisor.img" \
	'[ $rc != 0 ] && [ ! -e "$work/img3/supervisor.img" ] && [ ! -e "$work/img3/supervisor.img.tmp" ]' \
	"rc $rc: $(cat "$work/t1.err")"
u delete --force ${P}t1 >/dev/null 2>&1

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
