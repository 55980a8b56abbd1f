#!/usr/bin/env bash
# tests/ckpt/gofer.sh — gofer volumes (mediated FUSE mounts) through
# `ursa checkpoint` / `ursa restore` (docs/gofer.md "Checkpoint and restore"):
#   - a busybox workload with its cwd in /data (a gofer volume), an O_APPEND
#     fd on /data/log, a read-write fd on /data/pos (its offset tracked) and
#     a directory fd on /data/sub, writing an incrementing counter to both
#     files (its sleep children share them)
#   - checkpoint (the container is gone), restore: the workload continues
#     appending: both host files hold one gapless sequence 0..N (no
#     overwrite, no gap), the cwd and fds are on /data again (fd 3 still
#     O_APPEND), st_ino seen inside equals the one before (and the host's)
#   - a quota volume (/q, 64 KiB): 40 KiB written before the checkpoint; after
#     restore a 40 KiB write fails with EDQUOT while a 16 KiB one fits, so the
#     usage counted after restore includes what was written before
#   - a second checkpoint of the restored sandbox; its host directory is
#     replaced (same contents, another directory): restore is refused naming
#     the volume and leaves nothing (record, cgroup, process, mount); with
#     the directory put back the same image restores, lazily
#     (--lazy-pages: the restore runs late, on a thread, once the volumes
#     serve; its pager hands over to the supervisor and finishes)
#   - an open file replaced on the host (another inode): restore refused by
#     the restorer (after the volumes serve), leaving nothing
#   - a file unlinked while open on a gofer volume: checkpoint refused naming
#     the pid, the fd and the path; the sandbox keeps running
# No fixed sleeps: every wait polls its condition (lines written, an fd
# open) for up to WAIT=30 s, far above the milliseconds it takes.
# Needs root (namespaces, cgroups, ptrace, FUSE). Env: URSA.
set -u
P=cg$$-
URSA=${URSA:?}
. "$(dirname "$0")/../lib/skip.sh"
need_root
[ -c /dev/fuse ] || skip_or_fail "no /dev/fuse"
work=$(mktemp -d /tmp/ursa-ckpt-gofer.XXXXXX)
root=$work/root
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for
u() { URSA_SECCOMP_COUNT=0 timeout 30 "$URSA" --root "$root" "$@"; }
cleanup() {
	for id in ${P}a ${P}b ${P}u; do u delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT

cg_dirs() { find /sys/fs/cgroup -maxdepth 6 -type d -name "$1" 2>/dev/null | wc -l; }
nothing_left() { # id
	! u state "$1" >/dev/null 2>&1 && [ ! -e "$root/$1" ] && [ "$(cg_dirs "$1")" = 0 ] &&
		! grep -qs "/$1\$" /proc/[0-9]*/cgroup
}
status_of() { u state "$1" 2>/dev/null | jq -r .status; }
# one gapless sequence 0..N, N >= $2
gapless() { awk -v min="$2" 'BEGIN { n = 0 } $0 != n { exit 1 } { n++ } END { exit !(n > min) }' "$1"; }
inside() { u exec "$1" /bin/sh -c "$2" 2>&1; }
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# poll COND (eval'd) every 50 ms until true; false after $WAIT s
WAIT=30
poll() {
	local end=$((SECONDS + WAIT))
	until eval "$1"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.05
	done
}

mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/tmp" "$work/rootfs/data" "$work/rootfs/q" "$work/b" "$work/b2" \
	"$work/vol/sub" "$work/qvol"
cp /bin/busybox "$work/rootfs/bin/" &&
	for x in sh sleep stat dd readlink cat rm ls; do ln -s busybox "$work/rootfs/bin/$x"; done
(cd "$work/b" && "$URSA" spec) || exit 1
WL='cd /data || exit 1; exec 3>>log 4<>pos 5<sub; i=0
while :; do echo $i >&3; echo $i >&4; i=$((i + 1)); sleep 0.05; done'
jq --arg rootfs "$work/rootfs" --arg vol "$work/vol" --arg q "$work/qvol" --arg wl "$WL" '
	.root.path = $rootfs | .root.readonly = false | .process.terminal = false
	| .process.args = ["/bin/sh", "-c", $wl]
	| .annotations = {"run.ursa.network": "none"}
	| .mounts += [{"destination": "/data", "type": "bind", "source": $vol,
	               "options": ["rbind", "rw", "ursa-gofer"]},
	              {"destination": "/q", "type": "bind", "source": $q,
	               "options": ["rbind", "rw", "ursa-gofer", "ursa-gofer-quota=64K"]}]' \
	"$work/b/config.json" >"$work/b/c" && mv "$work/b/c" "$work/b/config.json"

# ---- run, state before ---------------------------------------------------------------
(cd "$work/b" && u run -d ${P}a >/dev/null 2>"$work/run.err") || bad "run -d" "$(cat "$work/run.err")"
check "the workload writes /data/log" 'poll "[ \$(lines \"\$work/vol/log\") -ge 2 ]"'
ino_before=$(inside ${P}a 'stat -c %i /data/log')
host_ino=$(stat -c %i "$work/vol/log" 2>/dev/null)
check "st_ino inside is the host's ($ino_before, host $host_ino)" \
	'[ -n "$ino_before" ] && [ "$ino_before" = "$host_ino" ]'
out=$(inside ${P}a 'dd if=/dev/zero of=/q/a bs=1024 count=40 2>&1 && echo wrote')
check "40 KiB written on the 64 KiB quota volume" 'grep -q wrote <<<"$out"' "$out"

# ---- checkpoint, restore --------------------------------------------------------------
if u checkpoint --image-path "$work/img" ${P}a 2>"$work/ck.err"; then ok "checkpoint"; else
	bad "checkpoint" "$(cat "$work/ck.err")"; fi
check "the container is gone" '! u state ${P}a >/dev/null 2>&1'
n_ck=$(wc -l <"$work/vol/log")
# no writer is left: no process in the sandbox's cgroups (nor any cgroup dir;
# they go once its killed tasks have exited: ursa checkpoint does not wait)
check "no process of the sandbox left after the checkpoint: nothing can write" \
	"wait_for 10 nothing_left ${P}a"
check "nothing written between the checkpoint and the restore ($n_ck lines)" \
	'[ "$(lines "$work/vol/log")" = "$n_ck" ]'
if (cd "$work/b" && u restore --detach --image-path "$work/img" ${P}a >/dev/null 2>"$work/rs.err"); then
	ok "restore --detach"
else
	bad "restore --detach" "$(cat "$work/rs.err")"
fi
check "state says running" '[ "$(status_of ${P}a)" = running ]'
poll '[ "$(lines "$work/vol/log")" -gt $((n_ck + 3)) ] && [ "$(lines "$work/vol/pos")" -gt $((n_ck + 3)) ]'
check "log: one gapless sequence past the checkpoint ($n_ck -> $(wc -l <"$work/vol/log") lines)" \
	'gapless "$work/vol/log" $((n_ck + 3))' "$(head -c 300 "$work/vol/log" | tr '\n' ' ')"
check "pos (tracked offset): the same gapless sequence, nothing overwritten" \
	'gapless "$work/vol/pos" $((n_ck + 3))' "$(head -c 300 "$work/vol/pos" | tr '\n' ' ')"
out=$(inside ${P}a 'for f in cwd fd/3 fd/4 fd/5; do readlink /proc/1/$f; done; grep ^flags /proc/1/fdinfo/3')
fl=$(awk '/^flags/ {print $2}' <<<"$out")
check "cwd and fds on the volume again, fd 3 O_APPEND (flags $fl)" \
	'[ "$(head -4 <<<"$out" | tr "\n" " ")" = "/data /data/log /data/pos /data/sub " ] &&
	 [ $(( 0$fl & 02000 )) != 0 ]' "$out"
ino_after=$(inside ${P}a 'stat -c %i /data/log')
check "st_ino inside unchanged ($ino_before -> $ino_after)" '[ -n "$ino_after" ] && [ "$ino_after" = "$ino_before" ]'
out=$(inside ${P}a 'dd if=/dev/zero of=/q/b bs=1024 count=40 2>&1; echo rc $?')
check "quota: 40 KiB more fails with EDQUOT after restore (40 + 40 > 64)" \
	'grep -q "Disk quota exceeded" <<<"$out"' "$out"
out=$(inside ${P}a 'rm -f /q/b; dd if=/dev/zero of=/q/c bs=1024 count=16 2>&1 && echo wrote')
check "quota: 16 KiB fits (40 + 16 <= 64)" 'grep -q wrote <<<"$out"' "$out"

# ---- a replaced host directory is refused, leaving nothing ---------------------------
if u checkpoint --image-path "$work/img2" ${P}a 2>"$work/ck2.err"; then ok "second checkpoint"; else
	bad "second checkpoint" "$(cat "$work/ck2.err")"; fi
n_ck2=$(wc -l <"$work/vol/log")
mv "$work/vol" "$work/vol.orig" && cp -a "$work/vol.orig" "$work/vol"
(cd "$work/b" && u restore --detach --image-path "$work/img2" ${P}a >/dev/null 2>"$work/rs2.err")
rc=$?
check "restore onto a replaced host directory is refused, naming the volume" \
	'[ $rc != 0 ] && grep -q "gofer volume /data" "$work/rs2.err" && grep -q "not the one checkpointed" "$work/rs2.err"' \
	"rc $rc: $(cat "$work/rs2.err")"
check "and leaves nothing (record, cgroup, process)" "nothing_left ${P}a"
check "and the copy was not written to" '[ "$(wc -l <"$work/vol/log")" = "$n_ck2" ]'
rm -rf "$work/vol" && mv "$work/vol.orig" "$work/vol"
# a file open at the checkpoint replaced on the host (another inode): refused
# by the restore itself (after the volumes serve), leaving nothing
mv "$work/vol/pos" "$work/pos.keep" && cp "$work/pos.keep" "$work/vol/pos"
(cd "$work/b" && u restore --detach --image-path "$work/img2" ${P}a >/dev/null 2>"$work/rs4.err")
rc=$?
check "an open file replaced on the host: restore refused, naming it" \
	'[ $rc != 0 ] && grep -q "/data/pos" "$work/rs4.err"' "rc $rc: $(cat "$work/rs4.err")"
check "and leaves nothing" "nothing_left ${P}a"
mv "$work/pos.keep" "$work/vol/pos"
if (cd "$work/b" && u restore --lazy-pages --detach --image-path "$work/img2" ${P}a >/dev/null \
	2>"$work/rs3.err"); then
	ok "with the directory back, the same image restores lazily"
else
	bad "with the directory back, the same image restores lazily" "$(cat "$work/rs3.err")"
fi
poll '[ "$(lines "$work/vol/log")" -gt $((n_ck2 + 2)) ]'
check "log still one gapless sequence ($n_ck2 -> $(wc -l <"$work/vol/log") lines)" \
	'gapless "$work/vol/log" $((n_ck2 + 2))'
check "its memory came in through the pager, to the end" \
	'poll "grep -q \"^done .* spaces=[1-9]\" \"$root/${P}a/paged\" 2>/dev/null"' \
	"$(cat "$root/${P}a/paged" 2>&1)"
u delete --force ${P}a >/dev/null 2>&1

# ---- a file unlinked while open: refused, naming pid, fd and path --------------------
jq '.process.args = ["/bin/sh", "-c", "cd /data && exec 7>gone && rm gone && while :; do sleep 1; done"]' \
	"$work/b/config.json" >"$work/b2/config.json"
(cd "$work/b2" && u run -d ${P}u >/dev/null 2>"$work/u.err") || bad "run -d ${P}u" "$(cat "$work/u.err")"
check "the workload holds fd 7 on the unlinked /data/gone" \
	'poll "inside ${P}u \"readlink /proc/1/fd/7\" | grep -q \"/data/gone (deleted)\""'
u checkpoint --image-path "$work/img3" ${P}u >/dev/null 2>"$work/u.err"
rc=$?
check "checkpoint refuses a file unlinked while open, naming pid, fd and path" \
	'[ $rc != 0 ] && grep -q "pid [0-9]*: fd 7" "$work/u.err" && grep -q "/data/gone" "$work/u.err" &&
	 grep -q "unlinked while open" "$work/u.err"' \
	"rc $rc: $(cat "$work/u.err")"
check "and the sandbox keeps running" '[ "$(status_of ${P}u)" = running ]'
u delete --force ${P}u >/dev/null 2>&1

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
