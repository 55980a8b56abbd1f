#!/usr/bin/env bash
# tests/store/remote.sh — `ursa checkpoint|restore --image-path s3://...`
# end to end: a real sandbox (tests/ckpt/hog.c: 16 MiB of incompressible
# memory, a marker string in its heap, a tick file counting), a real s3rver behind
# tests/store/s3proxy.py (tests/store/s3env.sh):
#   - checkpoint to s3://: the container is gone, the image is two objects
#     under the prefix, the page data and the index with the small files
#     inside, no local copy is left (the stage
#     directory is gone), the pages went up as a multipart upload, and the
#     marker appears in no stored byte (a local checkpoint of the same
#     sandbox holds it: the check can fail)
#   - restore from s3://: running, the pid file names the init, the counter
#     goes on from where it was saved
#   - refused before anything is made, nothing left (no record, no cgroup,
#     no stage): a flipped byte in the pages object or in the index (which
#     holds the small files), a truncated object, another image's index
#     swapped in, another image copied whole under the prefix (it opens
#     only where it was put), a missing index (no image), and a host whose
#     checkpoint key is not the image's
#   - an image whose small files are objects of their own (`ursa-store put
#     --no-inline` of a local image): restored, the counter goes on
#   - URSA_S3_CHECKSUM=crc32: parts and index sent with x-amz-checksum-crc32,
#     which the proxy checks as S3 does, and no Content-MD5; restored
#   - --leave-running while tests/ckpt/hog.c writes (memory copied while it
#     runs, ckpt/precopy.h): it runs on, and restored from the store every
#     page holds what it last wrote
#   - a checkpoint whose second part fails (5xx past the retries): an
#     error naming the object, the sandbox runs on (not frozen), no index
#     and no object under the prefix
#   - the store killed mid-upload (a part held, then the store SIGKILLed):
#     the checkpoint fails naming the object and the multipart upload it
#     could not abort, the sandbox runs on, no object, no stage, the
#     upload's journal kept; `ursa-store gc` of it once a store is back
#   - ursa-store SIGKILLed with a multipart upload open (its journal names
#     it): under `ursa checkpoint`, which fails, the sandbox running on, and
#     starts the gc; and left by a maker that is gone, taken up by the next
#     command's sweep: either way no upload is left open (s3proxy.py
#     follows them), no journal, no stage
#   - wrong credentials (a wrong secret for checkpoint, an unknown access
#     key for restore): the store's 403 and its code in the error, the
#     sandbox runs on, nothing left in the store or on the host
#   - a stage directory whose maker is gone is swept by the next command,
#     a live one's is not
#   - ursa-store whose io_uring_enter fails (a seccomp filter): get and put
#     end at once with the reason; nothing fetched, no object
# Needs root (namespaces, cgroups, ptrace), node (s3rver), python3. Env:
# URSA (ursa-store beside it), HOG (tests/ckpt/hog.c), FAILSYS
# (tests/lib/failsys.c).
set -u
URSA=${URSA:?} HOG=${HOG:?} FAILSYS=${FAILSYS:?}
. "$(dirname "$0")/s3env.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/hog.sh" # hog_checked
. "$(dirname "$0")/sandbox.sh" # work, root, u, count, status_of, nothing_left...
P=rm$$-
data=$tmp/data/ursa-test
cleanup() {
	for id in ${P}a ${P}b ${P}c ${P}d ${P}k ${P}x; do u delete --force "$id" >/dev/null 2>&1; done
	s3env_cleanup
}
trap cleanup EXIT

# runs_on: ${P}c runs on, not frozen (its counter moves)
runs_on() {
	local c0
	c0=$(count)
	check "the sandbox runs on (not frozen)" \
		'[ "$(status_of ${P}c)" = running ] && wait_for 20 counts_past $((c0 + 3))' \
		"count $(count) after $c0"
}
objects() { find "$data/$1" -name '*._S3rver_object' 2>/dev/null | sort; }
proxy() { curl -fsS "http://127.0.0.1:$pport/$1"; }

mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/tmp" "$work/b"
cp /bin/busybox "$work/rootfs/bin/" && ln -s busybox "$work/rootfs/bin/sh"
(cd "$work/b" && "$URSA" spec) || exit 1
# tests/ckpt/hog.c, 16 MiB in one thread (over one 8 MiB part), keeping
# ursa-remote-marker-42 in its heap (built at run time: in no file)
cp "$HOG" "$work/rootfs/bin/hog"
jq --arg rootfs "$work/rootfs" '.root.path = $rootfs | .root.readonly = false
	| .process.terminal = false
	| .process.args = ["/bin/hog", "16", "1", "/tmp", "ursa-remote-marker"]
	| .annotations = {"run.ursa.network": "none"}' "$work/b/config.json" >"$work/b/c" &&
	mv "$work/b/c" "$work/b/config.json"
start_one() { # id
	rm -f "$work/rootfs/tmp/"*
	(cd "$work/b" && u run -d "$1" >/dev/null 2>"$work/run.err") &&
		wait_for 30 test -s "$work/rootfs/tmp/ready-0" && wait_for 30 test -s "$work/rootfs/tmp/tick-0"
}

# ---- checkpoint to s3:// ------------------------------------------------------
start_one ${P}a || bad "run ${P}a" "$(cat "$work/run.err")"
if u checkpoint --image-path "s3://ursa-test/img/a" ${P}a 2>"$work/ck.err"; then
	ok "checkpoint to s3://ursa-test/img/a"
else
	bad "checkpoint to s3://ursa-test/img/a" "$(cat "$work/ck.err")"
fi
saved=$(count)
check "the container is gone" '! u state ${P}a >/dev/null 2>&1'
check "the image is its page data and an index holding its small files" \
	'[ -s "$data/img/a/index._S3rver_object" ] && [ -s "$data/img/a/1.pages.img._S3rver_object" ] &&
	 [ "$(objects img/a | wc -l)" = 2 ]' "$(objects img/a)"
check "no local copy is left (stage directory gone)" '[ -z "$(ls -A "$root/.remote" 2>/dev/null)" ]' \
	"$(ls -laR "$root/.remote" 2>&1)"
pages=$(ls -S $(objects img/a) | head -1)
check "the pages object is sealed whole (over 16 MiB, not staged)" \
	'[ "$(stat -c %s "$pages")" -gt 16777216 ]' "$(ls -la $(objects img/a))"
check "the marker is in no stored byte" '! grep -rqa "ursa-remote-marker-42" "$tmp/data"'

ustore="$(dirname "$URSA")/ursa-store" key=${URSA_CKPT_KEY:-/var/lib/ursa/checkpoint.key}

# ---- restore from s3:// -------------------------------------------------------
if (cd "$work/b" && u restore --detach --image-path "s3://ursa-test/img/a" --pid-file "$work/pid" ${P}a \
	2>"$work/rs.err"); then
	ok "restore from s3://ursa-test/img/a"
else
	bad "restore from s3://ursa-test/img/a" "$(cat "$work/rs.err")"
fi
check "state says running, the pid file names the init" \
	'[ "$(status_of ${P}a)" = running ] && [ "$(cat "$work/pid" 2>/dev/null)" = "$(u state ${P}a | jq -r .pid)" ]'
check "the counter goes on from $saved" 'wait_for 20 counts_past $((saved + 5))' "count $(count)"
check "no stage left after the restore" '[ -z "$(ls -A "$root/.remote" 2>/dev/null)" ]'
# the control for the marker check: a local image of the same sandbox holds it
u checkpoint --leave-running --image-path "$work/local" ${P}a 2>"$work/ckl.err" || true
check "(control: a local image holds the marker)" 'grep -qa "ursa-remote-marker-42" "$work/local/pages.img"' \
	"$(cat "$work/ckl.err")"

# ---- a second image, for swapping -----------------------------------------------
u checkpoint --leave-running --image-path "s3://ursa-test/img/b" ${P}a 2>"$work/ckb.err" ||
	bad "checkpoint to s3://ursa-test/img/b" "$(cat "$work/ckb.err")"
# and one made for a's own prefix, kept aside (img/a2), a's put back
mv "$data/img/a" "$tmp/a.first"
u checkpoint --leave-running --image-path "s3://ursa-test/img/a" ${P}a 2>"$work/cka2.err" ||
	bad "checkpoint to s3://ursa-test/img/a again" "$(cat "$work/cka2.err")"
mv "$data/img/a" "$data/img/a2" && mv "$tmp/a.first" "$data/img/a"
u delete --force ${P}a >/dev/null 2>&1

refused() { # name, what the error says, [restore's options]
	local name=$1 pat=$2
	shift 2
	if (cd "$work/b" && u restore "$@" --detach --image-path "s3://ursa-test/img/a" ${P}x 2>"$work/rf.err"); then
		bad "$name: restore refuses" "it restored"
	elif ! grep -q "$pat" "$work/rf.err"; then
		bad "$name: restore refuses" "$(cat "$work/rf.err")"
	else
		ok "$name: restore refuses ($(head -c 160 "$work/rf.err"))"
	fi
	check "$name: nothing left" 'nothing_left ${P}x' "$(ls -la "$root" "$root/.remote" 2>&1)"
}
cp "$pages" "$tmp/pages.orig"
printf '\x55' | dd of="$pages" bs=1 seek=9000000 conv=notrunc 2>/dev/null
refused "a flipped byte in the pages object" "fails authentication"
"$ustore" get --key-file "$key" s3://ursa-test/img/a "$work/tg" >"$work/tg.err" 2>&1
rc=$?
check "ursa-store get of it by hand: refused, no half-filled directory left" \
	'[ $rc != 0 ] && grep -q "fails authentication" "$work/tg.err" && [ ! -e "$work/tg" ]' \
	"rc=$rc: $(cat "$work/tg.err"); $(ls -A "$work/tg" 2>&1)"
cp "$tmp/pages.orig" "$pages"
truncate -s 5000000 "$pages"
refused "a truncated pages object" "truncated"
cp "$tmp/pages.orig" "$pages"
index=$data/img/a/index._S3rver_object
cp "$index" "$tmp/index.orig"
printf '\x55' | dd of="$index" bs=1 seek=$(($(stat -c %s "$index") - 100)) conv=notrunc 2>/dev/null
refused "a flipped byte in the index (among its small files)" "fails authentication"
cp "$data/img/a2/index._S3rver_object" "$index"
refused "another image's index (its page data is not this image's)" "not this image's\|was replaced"
cp "$tmp/index.orig" "$index"
# every object of image b (same host key, whole and authentic) put under
# a's prefix: another tenant's image in place of this one
mv "$data/img/a" "$tmp/a.orig" && cp -a "$data/img/b" "$data/img/a"
refused "another image copied whole under this prefix" "another place"
rm -rf "$data/img/a" && mv "$tmp/a.orig" "$data/img/a"
head -c 32 /dev/urandom >"$tmp/other.key"
chmod 600 "$tmp/other.key"
refused "another host's key" "another key" --key-file "$tmp/other.key"
mv "$data/img/a/index._S3rver_object" "$tmp/index.orig"
refused "no index" "no image at"
mv "$tmp/index.orig" "$data/img/a/index._S3rver_object"
if (cd "$work/b" && u restore --detach --image-path "s3://ursa-test/img/a" ${P}x 2>"$work/rs2.err"); then
	ok "(control: the image restores again once whole)"
else
	bad "(control: the image restores again once whole)" "$(cat "$work/rs2.err")"
fi
u delete --force ${P}x >/dev/null 2>&1

# ---- an image whose small files are objects of their own (a file too large for
# the index takes that path): the local image put by `ursa-store --no-inline`
# (its stdin stays open until it exits: EOF there would cancel it)
commit_in='import subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE)
p.stdin.write(b"commit\n"); p.stdin.flush()
sys.exit(p.wait())'
if python3 -c "$commit_in" "$ustore" put --key-file "$key" \
	--no-inline s3://ursa-test/img/n "$work/local" >"$work/put.out" 2>&1; then
	ok "ursa-store put --no-inline of a local image ($(cat "$work/put.out"))"
else
	bad "ursa-store put --no-inline of a local image" "$(cat "$work/put.out")"
fi
check "its small files are objects (core.img, container/config.json among them)" \
	'objects img/n | grep -q "\.core\.img\." && objects img/n | grep -q "\.container/config\.json\." &&
	 [ "$(objects img/n | wc -l)" -ge 6 ]' "$(objects img/n)"
check "restored from it, the counter goes on" \
	'(cd "$work/b" && u restore --detach --image-path s3://ursa-test/img/n ${P}x 2>"$work/rsn.err") &&
	 wait_for 20 counts_past $((saved + 5))' "$(cat "$work/rsn.err")"
u delete --force ${P}x >/dev/null 2>&1

# ---- CRC32 instead of Content-MD5 (URSA_S3_CHECKSUM=crc32; a custom endpoint
# takes md5 unless told): every part and the index carry x-amz-checksum-crc32
# (the upload created with CRC32, its Complete naming each part's: the proxy
# holds them to S3's rules), no Content-MD5; the image restores
start_one ${P}k || bad "run ${P}k" "$(cat "$work/run.err")"
proxy __clear >/dev/null
check "checkpoint with URSA_S3_CHECKSUM=crc32" \
	'URSA_S3_CHECKSUM=crc32 u checkpoint --image-path "s3://ursa-test/img/r" ${P}k 2>"$work/ckk.err"' \
	"$(cat "$work/ckk.err")"
sums() { proxy __stats | sed -n "s/.*crc32_ok=\([0-9]*\) md5_ok=\([0-9]*\).*/\1 \2/p"; }
crc_only() { local s; read -ra s < <(sums); [ "${s[0]:-0}" -ge 3 ] && [ "${s[1]:-1}" = 0 ]; }
check "its parts and index went up with CRC32s the store checked, no MD5 (crc32, md5: $(sums))" \
	crc_only "$(proxy __stats)"
saved=$(count)
check "restored from it, the counter goes on" \
	'(cd "$work/b" && u restore --detach --image-path s3://ursa-test/img/r ${P}k 2>"$work/rsk.err") &&
	 wait_for 20 counts_past $((saved + 5))' "$(cat "$work/rsk.err")"
u delete --force ${P}k >/dev/null 2>&1

# ---- io_uring_enter failing under ursa-store (tests/lib/failsys.c): the loop
# is never turned again once it failed (store/remote.c), the command ends at
# once with the reason, nothing fetched, nothing stored
"$FAILSYS" io_uring_enter 5 "$ustore" get --key-file "$key" s3://ursa-test/img/n "$work/eio" \
	>"$work/eio-get.err" 2>&1
rc=$?
check "a get whose io_uring_enter fails: refused with the reason, nothing fetched" \
	'[ $rc != 0 ] && grep -q "the loop failed: Input/output error" "$work/eio-get.err" &&
	 [ ! -e "$work/eio" ]' "rc=$rc: $(cat "$work/eio-get.err")"
python3 -c "$commit_in" "$FAILSYS" io_uring_enter 5 "$ustore" put --key-file "$key" \
	--no-inline s3://ursa-test/img/eio "$work/local" >"$work/eio-put.err" 2>&1
rc=$?
check "a put whose io_uring_enter fails: refused with the reason, no object" \
	'[ $rc != 0 ] && grep -q "the loop failed: Input/output error" "$work/eio-put.err" &&
	 [ -z "$(objects img/eio)" ]' "rc=$rc: $(cat "$work/eio-put.err")"

# ---- a failed upload ----------------------------------------------------------------
start_one ${P}c || bad "run ${P}c" "$(cat "$work/run.err")"
proxy "__fault?mode=status&status=500&n=100&match=partNumber%3D2" >/dev/null
if u checkpoint --image-path "s3://ursa-test/img/c" ${P}c 2>"$work/ckc.err"; then
	bad "a checkpoint whose second part fails: refused" "it succeeded"
else
	ok "a checkpoint whose second part fails: refused ($(head -c 200 "$work/ckc.err"))"
fi
proxy "__clear" >/dev/null
check "the error names the object" 'grep -q "img/c/1.pages.img" "$work/ckc.err"' "$(cat "$work/ckc.err")"
runs_on
check "no object under the prefix, no stage" \
	'[ -z "$(objects img/c)" ] && [ -z "$(ls -A "$root/.remote" 2>/dev/null)" ]' "$(objects img/c)"

# ---- the store killed mid-upload --------------------------------------------------
# The second part's request is held (stall), then the store ursa talks to
# (the proxy) is SIGKILLed: the held connection breaks and every retry finds
# nobody listening. The checkpoint fails, the sandbox runs on, no object is
# left, and the error names the multipart upload nobody could abort.
proxy "__fault?mode=stall&n=1&match=partNumber%3D2" >/dev/null
u checkpoint --image-path "s3://ursa-test/img/k" ${P}c 2>"$work/ckk.err" &
ck=$!
part2_held() { proxy __stats | grep -qw "injected=1"; }
wait_for 60 part2_held || bad "the second part reaches the store" "$(proxy __stats)"
kill -KILL "$s3proxy_pid"
if wait $ck; then
	bad "a checkpoint whose store is killed mid-upload: fails" "it succeeded"
else
	ok "a checkpoint whose store is killed mid-upload: fails ($(head -c 300 "$work/ckk.err"))"
fi
check "the error names the object and the upload left unaborted" \
	'grep -q "img/k/1.pages.img" "$work/ckk.err" && grep -q "multipart upload .* was not aborted (.*onnect" "$work/ckk.err"' \
	"$(cat "$work/ckk.err")"
runs_on
check "no object under the prefix, no stage; the open upload's journal kept for gc" \
	'[ -z "$(objects img/k)" ] && [ -z "$(ls -A "$root/.remote" | grep -v "\.mpu$")" ] &&
	 grep -q "^upload " "$root"/.remote/put.*.mpu' "$(objects img/k); $(ls -A "$root/.remote")"
s3proxy_start 2 "$pport" || exit 1 # back where it was: the journal names that endpoint
# the new proxy never saw that upload (s3rver cannot abort one): gone, for
# gc — the one the failed command started (retrying, it may reach the store
# back first) or one run here; either way the journal goes
journal_gone() {
	local j
	for j in "$root"/.remote/put.*.mpu; do
		[ -e "$j" ] && "$ustore" gc "$j" 2>>"$work/gc.err" # (0, silent, while the other holds it)
	done
	[ -z "$(ls -A "$root/.remote")" ]
}
check "gc of that journal once the store is back: removed (the upload is unknown there)" \
	'wait_for 30 journal_gone' "$(ls -A "$root/.remote"); $(cat "$work/gc.err" 2>/dev/null)"

# ---- ursa-store SIGKILLed with a multipart upload open -----------------------------
# (1) under `ursa checkpoint`: the checkpoint fails, the sandbox runs on, and
# the upload ursa-store's journal names is aborted (by `ursa-store gc`,
# which the command starts detached): none left open in the store.
proxy "__clear" >/dev/null
proxy "__fault?mode=stall&n=1&match=partNumber%3D2" >/dev/null
u checkpoint --image-path "s3://ursa-test/img/s" ${P}c 2>"$work/cks.err" &
ck=$!
wait_for 60 part2_held || bad "the second part reaches the store" "$(proxy __stats)"
check "while the upload is open, its journal names it" \
	'grep -q "^key img/s/1.pages.img$" "$root"/.remote/put.*.mpu &&
	 grep -q "^upload ." "$root"/.remote/put.*.mpu' "$(cat "$root"/.remote/put.*.mpu 2>&1)"
pkill -KILL -f -- "ursa-store put .*s3://ursa-test/img/s "
if wait $ck; then
	bad "a checkpoint whose ursa-store is SIGKILLed: fails" "it succeeded"
else
	ok "a checkpoint whose ursa-store is SIGKILLed: fails ($(head -c 200 "$work/cks.err"))"
fi
check "the error says ursa-store was killed" \
	'grep -q "ursa-store was killed by signal 9" "$work/cks.err"' "$(cat "$work/cks.err")"
runs_on
mpu_done() { proxy __stats | grep -q "mpu_open=0 aborted=1"; }
remote_empty() { [ -z "$(ls -A "$root/.remote")" ]; }
check "the upload is aborted (none open), no journal, no stage, no object" \
	'wait_for 20 mpu_done && wait_for 20 remote_empty && [ -z "$(objects img/s)" ]' \
	"$(proxy __stats); $(ls -A "$root/.remote"); $(objects img/s)"
check "the detached gc says so in ROOT/store-gc.log" \
	'grep -Eq "^[0-9TZ:-]+ ursa-store: multipart upload .+ of s3://ursa-test/img/s/1.pages.img aborted$" "$root/store-gc.log"' \
	"$(cat "$root/store-gc.log" 2>&1)"
# (2) a journal whose maker is gone (here: ursa-store put run by hand with a
# stage named after pid 1 at another start time, SIGKILLed mid-upload) is
# taken up by the next command that makes a stage under the same root
proxy "__clear" >/dev/null
proxy "__fault?mode=stall&n=1&match=partNumber%3D2" >/dev/null
st=$root/.remote/put.1.12345.abcdef
mkdir -p "$st"
head -c $((20 << 20)) /dev/urandom >"$st/big.img"
mkfifo "$work/ctl"
"$ustore" put --key-file "$key" --no-inline \
	s3://ursa-test/img/g "$st" <"$work/ctl" >/dev/null 2>"$work/putg.err" &
sp=$!
exec 9>"$work/ctl"
echo commit >&9
wait_for 60 part2_held || bad "the second part reaches the store" "$(proxy __stats)"
check "its journal names the upload" 'grep -q "^upload ." "$st.mpu"' "$(cat "$st.mpu" 2>&1)"
kill -KILL $sp
wait $sp 2>/dev/null
exec 9>&-
(cd "$work/b" && u restore --detach --image-path "s3://ursa-test/img/none" ${P}x 2>/dev/null)
check "the next command's sweep aborts it: none open, no journal, no stage" \
	'wait_for 20 mpu_done && wait_for 20 remote_empty' \
	"$(proxy __stats); $(ls -A "$root/.remote")"
check "and logs it" 'grep -q "of s3://ursa-test/img/g/.* aborted$" "$root/store-gc.log"' \
	"$(cat "$root/store-gc.log" 2>&1)"
proxy "__clear" >/dev/null

# ---- wrong credentials: the store's refusal, named; nothing left ---------------------
if AWS_SECRET_ACCESS_KEY=not-the-secret u checkpoint --image-path "s3://ursa-test/img/e" ${P}c \
	2>"$work/cke.err"; then
	bad "a checkpoint with the wrong secret key: refused" "it succeeded"
else
	ok "a checkpoint with the wrong secret key: refused ($(head -c 200 "$work/cke.err"))"
fi
check "the error says what the store said (403 SignatureDoesNotMatch)" \
	'grep -q "SignatureDoesNotMatch" "$work/cke.err" && grep -q "403" "$work/cke.err"' "$(cat "$work/cke.err")"
c0=$(count)
check "the sandbox runs on (not frozen), no object, no stage" \
	'[ "$(status_of ${P}c)" = running ] && wait_for 20 counts_past $((c0 + 3)) &&
	 [ -z "$(objects img/e)" ] && [ -z "$(ls -A "$root/.remote" 2>/dev/null)" ]' \
	"status $(status_of ${P}c), count $(count) after $c0, objects: $(objects img/e)"
u delete --force ${P}c >/dev/null 2>&1
if (cd "$work/b" && AWS_ACCESS_KEY_ID=NOBODY u restore --detach --image-path "s3://ursa-test/img/a" ${P}x \
	2>"$work/rse.err"); then
	bad "a restore with an unknown access key: refused" "it restored"
else
	ok "a restore with an unknown access key: refused ($(head -c 200 "$work/rse.err"))"
fi
check "the error says what the store said (403), nothing left" \
	'grep -q "403" "$work/rse.err" && nothing_left ${P}x' "$(cat "$work/rse.err")"

# ---- --leave-running while the workload writes ------------------------------------
# tests/ckpt/hog.c, 32 MiB in two threads each rewriting a page every
# millisecond; its memory copied while it runs, then restored from the store
# and checked page by page (pattern, and the last count written to each)
jq '.process.args = ["/bin/hog", "32", "2", "/tmp"]' "$work/b/config.json" >"$work/b/c" &&
	mv "$work/b/c" "$work/b/config.json"
t=$work/rootfs/tmp
rm -f "$t"/*
checked() { hog_checked ${P}d "$t"; } # both threads check their memory: "ok"
(cd "$work/b" && u run -d ${P}d >/dev/null 2>"$work/run.err") && wait_for 60 test -s "$t/ready-0" ||
	bad "run the writer" "$(cat "$work/run.err")"
if u checkpoint --leave-running --work-path "$work/wpd" --image-path "s3://ursa-test/img/d" ${P}d \
	2>"$work/ckd.err"; then
	ok "checkpoint --leave-running to s3:// while it writes ($(grep '^paused' "$work/wpd/dump.log"))"
else
	bad "checkpoint --leave-running to s3:// while it writes" "$(cat "$work/ckd.err")"
fi
check "it runs on" '[ "$(status_of ${P}d)" = running ] && checked' "$(cat "$t"/check-* 2>&1)"
u delete --force ${P}d >/dev/null 2>&1
if (cd "$work/b" && u restore --detach --image-path "s3://ursa-test/img/d" ${P}d 2>"$work/rsd.err"); then
	ok "restore it from s3://"
else
	bad "restore it from s3://" "$(cat "$work/rsd.err")"
fi
check "every page of it is what was written last: nothing stale" checked "$(cat "$t"/check-* 2>&1)"
u delete --force ${P}d >/dev/null 2>&1

# ---- stage directories left by a killed command are swept ----------------------------
# named after their maker (pid, start time): one whose maker is gone goes
# at the next stage made under the root, a live one's stays
sh -c 'exit 0' &
dead=$!
wait $dead
self_start=$(awk '{print $22}' /proc/$$/stat)
mkdir -p "$root/.remote/put.$dead.1.AbCdEf/container" "$root/.remote/get.$$.$self_start.GhIjKl"
(cd "$work/b" && u restore --detach --image-path "s3://ursa-test/img/none" ${P}x 2>/dev/null)
check "a dead command's stage is swept, a live one's stays" \
	'[ ! -e "$root/.remote/put.$dead.1.AbCdEf" ] && [ -d "$root/.remote/get.$$.$self_start.GhIjKl" ]' \
	"$(ls -la "$root/.remote")"
rm -rf "$root/.remote/get.$$.$self_start.GhIjKl"

finish
