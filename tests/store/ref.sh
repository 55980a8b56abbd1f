#!/usr/bin/env bash
# tests/store/ref.sh — a container parked in object storage through a local
# image directory (ckpt/remote_ref.h): its config.json names
# run.ursa.checkpoint.location, so `ursa checkpoint --image-path DIR` puts
# the image in the store and leaves DIR holding only an authenticated
# reference, and `ursa restore --image-path DIR` restores from the store:
# what containerd's shims and podman, which know only directories, need.
# On a real sandbox (tests/ckpt/hog.c: 16 MiB, a marker in its heap, a
# tick file counting) and a real s3rver (tests/store/s3env.sh):
#   - checkpoint: DIR holds remote.ref alone, naming LOCATION/ID-RANDOM;
#     the image's objects are there; the marker in no byte of DIR or store
#   - restore from DIR: running, the counter goes on from where it was
#   - a second checkpoint (--leave-running) gets its own location
#   - a bundle annotated run.ursa.restore.lazy-pages=true restores it
#     lazily (the pager's record), one without eagerly; a value that is
#     not true or false is refused naming it, nothing left
#   - refused before anything is made, nothing left: a reference edited to
#     name the other image, a flipped MAC, a host with another key
#   - a location whose bucket does not exist: the checkpoint fails naming
#     it, the sandbox runs on, no reference left (and into a directory
#     holding an earlier one, that one is kept as it was); a location that
#     is not s3://: refused naming the annotation, the sandbox runs on
#   - a local image (a container not parked) into a directory that held a
#     reference: the reference is removed with the image in
# Needs root, node (s3rver), python3. Env: URSA (ursa-store beside it), HOG.
set -u
URSA=${URSA:?} HOG=${HOG:?}
. "$(dirname "$0")/s3env.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/sandbox.sh" # work, root, u, count, status_of, nothing_left...
P=rf$$-
data=$tmp/data/ursa-test
cleanup() {
	for id in ${P}a ${P}b ${P}c; do u delete --force "$id" >/dev/null 2>&1; done
	s3env_cleanup
}
trap cleanup EXIT

objects() { find "$data/$1" -name '*._S3rver_object' 2>/dev/null | sort; }
location() { sed -n 's/^location //p' "$1/remote.ref" 2>/dev/null; }

mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/tmp" "$work/b"
cp /bin/busybox "$work/rootfs/bin/" && ln -s busybox "$work/rootfs/bin/sh"
cp "$HOG" "$work/rootfs/bin/hog"
(cd "$work/b" && "$URSA" spec) || exit 1
# bundle NAME LOCATION [LAZY]: a bundle whose container is parked at
# LOCATION (and restored with run.ursa.restore.lazy-pages=LAZY)
bundle() {
	mkdir -p "$work/$1"
	jq --arg rootfs "$work/rootfs" --arg loc "$2" --arg lazy "${3:-}" '.root.path = $rootfs
		| .root.readonly = false | .process.terminal = false
		| .process.args = ["/bin/hog", "16", "1", "/tmp", "ursa-ref-marker"]
		| .annotations = {"run.ursa.network": "none"}
		| if $loc == "" then . else .annotations["run.ursa.checkpoint.location"] = $loc end
		| if $lazy == "" then . else .annotations["run.ursa.restore.lazy-pages"] = $lazy end' \
		"$work/b/config.json" >"$work/$1/config.json"
}
start_one() { # bundle id
	rm -f "$work/rootfs/tmp/"*
	(cd "$work/$1" && u run -d "$2" >/dev/null 2>"$work/run.err") &&
		wait_for 30 test -s "$work/rootfs/tmp/ready-0" && wait_for 30 test -s "$work/rootfs/tmp/tick-0"
}
bundle parked s3://ursa-test/parked
bundle nobucket s3://ursa-no-such-bucket/x
bundle notS3 /var/tmp/somewhere
bundle plain ""
bundle lazy s3://ursa-test/parked true
bundle lazybad s3://ursa-test/parked maybe
# ck DIR ID [options]: `ursa checkpoint` of ID into $work/DIR; its status in
# $rc, what it said in $work/DIR.err
ck() {
	local d=$1 id=$2
	shift 2
	u checkpoint "$@" --image-path "$work/$d" "$id" >/dev/null 2>"$work/$d.err"
	rc=$?
}

# ---- checkpoint: the image in the store, DIR holds its reference ------------------
start_one parked ${P}a || bad "run ${P}a" "$(cat "$work/run.err")"
if u checkpoint --image-path "$work/d1" ${P}a 2>"$work/ck.err"; then
	ok "checkpoint --image-path DIR of a parked container"
else
	bad "checkpoint --image-path DIR of a parked container" "$(cat "$work/ck.err")"
fi
saved=$(count)
loc1=$(location "$work/d1")
check "DIR holds remote.ref alone, naming s3://ursa-test/parked/${P}a-RANDOM" \
	'[ "$(ls -A "$work/d1")" = remote.ref ] && [[ $loc1 =~ ^s3://ursa-test/parked/${P}a-[0-9a-f]{16}$ ]]' \
	"$(ls -A "$work/d1"); location '$loc1'"
key1=${loc1#s3://ursa-test/}
check "the image's objects are at that location" \
	'[ -s "$data/$key1/index._S3rver_object" ] && [ "$(objects "$key1" | wc -l)" = 2 ]' "$(objects parked)"
check "the marker is in no byte of DIR or the store" \
	'! grep -rqa "ursa-ref-marker-42" "$work/d1" "$tmp/data"'
check "the container is gone" '! u state ${P}a >/dev/null 2>&1'

# ---- restore from DIR -----------------------------------------------------------
if (cd "$work/parked" && u restore --detach --image-path "$work/d1" ${P}a 2>"$work/rs.err"); then
	ok "restore --image-path DIR: from the store"
else
	bad "restore --image-path DIR: from the store" "$(cat "$work/rs.err")"
fi
check "running, the counter goes on from $saved" \
	'[ "$(status_of ${P}a)" = running ] && wait_for 20 counts_past $((saved + 5))' "count $(count)"

# ---- a second checkpoint: its own location -----------------------------------------
u checkpoint --leave-running --image-path "$work/d2" ${P}a 2>"$work/ck2.err" ||
	bad "checkpoint --leave-running to a second DIR" "$(cat "$work/ck2.err")"
loc2=$(location "$work/d2")
check "a second checkpoint has its own location, the container runs on" \
	'[ -n "$loc2" ] && [ "$loc2" != "$loc1" ] && [ "$(status_of ${P}a)" = running ]' "'$loc1' '$loc2'"
u delete --force ${P}a >/dev/null 2>&1

# ---- restored lazily, as the bundle's annotation asks ------------------------------
(cd "$work/lazybad" && u restore --lazy-pages --detach --image-path "$work/d2" ${P}a >/dev/null 2>"$work/rl.err")
rc=$?
check "run.ursa.restore.lazy-pages=maybe (with --lazy-pages too): refused naming it, nothing left" \
	'[ $rc != 0 ] && grep -q "run.ursa.restore.lazy-pages" "$work/rl.err" && nothing_left ${P}a' \
	"rc=$rc $(cat "$work/rl.err")"
c2=$(count)
# (--lazy-unshared, which needs a lazy restore, takes the annotation's)
(cd "$work/lazy" && u restore --lazy-unshared --detach --image-path "$work/d2" ${P}a >/dev/null 2>"$work/rl.err")
rc=$?
check "run.ursa.restore.lazy-pages=true: restored lazily from the store (the pager's record)" \
	'[ $rc = 0 ] && wait_for 30 grep -q "^done" "$root/${P}a/paged"' "rc=$rc $(cat "$work/rl.err")"
check "and the counter goes on" \
	'[ "$(status_of ${P}a)" = running ] && wait_for 20 counts_past $((c2 + 3))' "count $(count)"
(cd "$work/parked" && u restore --detach --image-path "$work/d2" ${P}b >/dev/null 2>"$work/rl.err")
rc=$?
check "(control: without it, the same image restores eagerly: no pager)" \
	'[ $rc = 0 ] && [ "$(status_of ${P}b)" = running ] && [ ! -e "$root/${P}b/paged" ]' \
	"rc=$rc $(cat "$work/rl.err") $(ls "$root/${P}b" 2>&1)"
u delete --force ${P}a >/dev/null 2>&1
u delete --force ${P}b >/dev/null 2>&1

# ---- refused before anything is made -------------------------------------------------
refused() { # name, what the error says, the directory, [env...]
	local rc want=$2
	(cd "$work/parked" && env "${@:4}" "$URSA" --root "$root" restore --detach --image-path "$3" ${P}b \
		>/dev/null 2>"$work/ref.err")
	rc=$?
	check "$1: refused, nothing left" '[ $rc != 0 ] && grep -q "$want" "$work/ref.err" && nothing_left ${P}b' \
		"rc=$rc $(cat "$work/ref.err")"
}
cp -r "$work/d1" "$work/edit"
sed -i "s|^location .*|location $loc2|" "$work/edit/remote.ref"
refused "a reference edited to name the other image" "MAC is not this host's" "$work/edit"
cp -r "$work/d1" "$work/flip"
sed -i 's/^mac \(.\)/mac f\1/; s/^mac \(.\{64\}\)./mac \1/' "$work/flip/remote.ref"
refused "a flipped MAC" "MAC is not this host's" "$work/flip"
head -c 32 /dev/urandom >"$tmp/other.key" && chmod 600 "$tmp/other.key"
refused "a host with another key" "MAC is not this host's" "$work/d1" URSA_CKPT_KEY="$tmp/other.key"

# ---- a checkpoint that cannot be parked ------------------------------------------
start_one nobucket ${P}c || bad "run ${P}c" "$(cat "$work/run.err")"
c0=$(count)
ck d3 ${P}c
check "a bucket that does not exist: fails naming it, runs on, no reference left" \
	'[ $rc != 0 ] && grep -q "ursa-no-such-bucket" "$work/d3.err" && [ ! -e "$work/d3/remote.ref" ] &&
	 [ "$(status_of ${P}c)" = running ] && wait_for 20 counts_past $((c0 + 3))' "rc=$rc $(cat "$work/d3.err")"
cp -r "$work/d1" "$work/d5"
ck d5 ${P}c --leave-running
check "into a directory holding an earlier reference: fails, that reference kept as it was" \
	'[ $rc != 0 ] && cmp -s "$work/d5/remote.ref" "$work/d1/remote.ref" && [ "$(ls -A "$work/d5")" = remote.ref ]' \
	"rc=$rc $(ls -A "$work/d5") $(cat "$work/d5.err")"
u delete --force ${P}c >/dev/null 2>&1
start_one notS3 ${P}c || bad "run ${P}c" "$(cat "$work/run.err")"
ck d4 ${P}c
check "a location that is not s3://: refused naming the annotation, runs on" \
	'[ $rc != 0 ] && grep -q "run.ursa.checkpoint.location" "$work/d4.err" && [ ! -e "$work/d4/remote.ref" ] &&
	 [ "$(status_of ${P}c)" = running ]' "rc=$rc $(cat "$work/d4.err")"
u delete --force ${P}c >/dev/null 2>&1

# ---- a local image into a directory that held a reference ---------------------
start_one plain ${P}c || bad "run ${P}c" "$(cat "$work/run.err")"
cp -r "$work/d1" "$work/d6"
ck d6 ${P}c --leave-running
check "a local image into a directory holding a reference: the reference goes with it" \
	'[ $rc = 0 ] && [ ! -e "$work/d6/remote.ref" ] && [ -s "$work/d6/core.img" ]' \
	"rc=$rc $(ls -A "$work/d6") $(cat "$work/d6.err")"
u delete --force ${P}c >/dev/null 2>&1

finish
