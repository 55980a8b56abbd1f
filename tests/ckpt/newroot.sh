#!/usr/bin/env bash
# tests/ckpt/newroot.sh — a file the workload holds open, across a restore
# onto the root it was checkpointed on and onto a new root (what `podman
# container restore --import` does: a new container whose writable layer is
# unpacked anew, every file a new inode). ckpt/restore.c, reopen_by_path:
#   - same root, the held file replaced by another inode: refused ("is not
#     the file that was open"), nothing left;
#   - a new root (a copy of the rootfs): restored; fd 3 is the new root's
#     file at the same path, with its flags (O_APPEND) and position, and the
#     workload goes on writing through it;
#   - a new root where that path is now a root-only file: refused with
#     EACCES (the reopen runs as the task, uid 1000, not as the restorer);
#   - a new root where that path is a symlink to a root-only file: refused
#     (no symlink is followed, ELOOP);
#   - a new root where the file is shorter than the saved position: refused.
# Needs root. Env: URSA.
set -u
P=nr$$-
URSA=${URSA:?}
work=$(mktemp -d /tmp/ursa-ckpt-nr.XXXXXX)
root=$work/root
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for
u() { URSA_SECCOMP_COUNT=0 "$URSA" --root "$root" "$@"; }
cleanup() {
	u delete --force ${P}c >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
nothing_left() { ! u state ${P}c >/dev/null 2>&1 && [ ! -e "$root/${P}c" ]; }
# wait_for CMD...: retry for up to 20 s
wait_for() {
	local i=0
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 400 ] || return 1
		sleep 0.05
	done
}
init_pid() { jq -r .pid "$root/${P}c/state.json"; }

mkdir -p "$work"/a/{bin,proc,dev,sys,tmp,data}
cp /bin/busybox "$work/a/bin/" && ln -s busybox "$work/a/bin/sh"
printf 'first\n' >"$work/a/data/held"
chown -R 1000:1000 "$work/a/data"
# bundle NAME ROOTFS
bundle() {
	mkdir -p "$work/$1" && (cd "$work/$1" && "$URSA" spec) || exit 1
	jq --arg rootfs "$2" '.root.path = $rootfs | .root.readonly = false
		| .process.terminal = false | .process.user = {"uid": 1000, "gid": 1000}
		| .process.args = ["/bin/sh", "-c",
			"exec 3>>/data/held; while :; do echo tick >&3; /bin/busybox usleep 100000; done"]
		| .annotations = {"run.ursa.network": "none"}' "$work/$1/config.json" >"$work/$1/c" &&
		mv "$work/$1/c" "$work/$1/config.json"
}
bundle ba "$work/a"
lines() { [ "$(wc -l <"$1")" -ge "$2" ]; }

(cd "$work/ba" && u run -d ${P}c </dev/null >/dev/null 2>"$work/run.err") || {
	bad "run -d" "$(cat "$work/run.err")"
	exit 1
}
wait_for lines "$work/a/data/held" 3 || bad "the workload writes to its held file"
if u checkpoint --image-path "$work/img" ${P}c 2>"$work/ck.err"; then
	ok "checkpoint of a uid 1000 workload holding /data/held open (O_APPEND)"
else
	bad "checkpoint" "$(cat "$work/ck.err")"
	exit 1
fi
nothing_left || bad "the checkpoint ended the container"
saved=$(wc -c <"$work/a/data/held")

# restore_in BUNDLE: restore ${P}c from $work/img in BUNDLE; stderr in rs.err
restore_in() { (cd "$work/$1" && u restore --detach --image-path "$work/img" ${P}c </dev/null >/dev/null 2>"$work/rs.err"); }
# refused NAME BUNDLE PATTERN
refused() {
	if restore_in "$2"; then
		bad "$1: restored" "fd 3 -> $(readlink /proc/"$(init_pid)"/fd/3)"
		u delete --force ${P}c >/dev/null 2>&1
	elif ! grep -q "$3" "$work/rs.err"; then
		bad "$1: refused, but not for the reason expected ($3)" "$(cat "$work/rs.err")"
	elif ! nothing_left; then
		bad "$1: refused, but left state behind"
	else
		ok "$1: refused: $(cat "$work/rs.err")"
	fi
}

# newroot DIR: a new root as podman's import makes it: the image's files
# shared (hard links: the same inodes), the writable layer's files unpacked
# anew (/data: new inodes)
newroot() {
	cp -al "$work/a" "$1" && rm -rf "$1/data" && cp -a "$work/a/data" "$1/data"
}

# ---- a new root: the copy's file, reopened by path as the task --------------------
newroot "$work/b"
bundle bb "$work/b"
if restore_in bb; then
	pid=$(init_pid)
	fdinfo=$(cat /proc/"$pid"/fdinfo/3 2>/dev/null)
	flags=$(awk '$1 == "flags:" { print $2 }' <<<"$fdinfo")
	pos=$(awk '$1 == "pos:" { print $2 }' <<<"$fdinfo")
	ino=$(awk '$1 == "ino:" { print $2 }' <<<"$fdinfo")
	if [ "$ino" = "$(stat -c %i "$work/b/data/held")" ] && [ $((0$flags & 02000)) != 0 ] &&
		[ "$pos" -ge "$saved" ]; then
		ok "a new root: fd 3 is the copy's /data/held (inode $ino), O_APPEND, position $pos >= $saved"
	else
		bad "a new root: fd 3 is not the copy's file with its flags and position" \
			"$fdinfo; the copy's inode $(stat -c %i "$work/b/data/held"), saved size $saved"
	fi
	n=$(wc -l <"$work/b/data/held")
	if wait_for lines "$work/b/data/held" $((n + 2)); then
		ok "the restored workload writes on through it ($n lines, then more)"
	else
		bad "the restored workload does not write to the new root's file"
	fi
	u delete --force ${P}c >/dev/null 2>&1
else
	bad "a new root: restore refused" "$(cat "$work/rs.err")"
fi

# ---- a new root whose file the task may not open --------------------------------
newroot "$work/c" && bundle bc "$work/c"
chown 0:0 "$work/c/data/held" && chmod 600 "$work/c/data/held"
refused "a new root where /data/held is root's, mode 0600" bc "Permission denied"

newroot "$work/d" && bundle bd "$work/d"
printf 'secret %.0s' $(seq 64) >"$work/d/secret" && chmod 644 "$work/d/secret"
rm "$work/d/data/held" && ln -s /secret "$work/d/data/held"
refused "a new root where /data/held is a symlink" bd "Too many levels of symbolic links"

newroot "$work/e" && bundle be "$work/e"
: >"$work/e/data/held"
refused "a new root where /data/held is shorter than the saved position" be "Stale file handle"

# ---- the same root, the file replaced: not taken by path -----------------------------
cp "$work/a/data/held" "$work/held.new" && chown 1000:1000 "$work/held.new" &&
	mv "$work/held.new" "$work/a/data/held"
refused "the root it was checkpointed on, /data/held replaced" ba "is not the file that was open"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
