#!/usr/bin/env bash
# tests/store/lazy.sh — `ursa restore --lazy-pages --image-path s3://...`:
# the page data stays in the store until the pager asks for it, chunk by
# chunk, through an ursa-store that serves it (store/remote.h
# urs_remote_serve, ckpt/lazy.h). A real sandbox (tests/ckpt/hog.c, 64 MiB
# over two threads) and a real s3rver behind tests/store/s3proxy.py:
#   - restored lazily from s3://: running, the counter goes on, both
#     threads find every word of their memory as they left it, no stage is
#     left, and the ursa-store that served it ends once every page is in;
#   - the store killed while the pages come in (a ranged read of the page
#     data held after the restore returned, then the store SIGKILLed): the
#     sandbox is killed, `ursa state` says why, nothing hangs and no
#     ursa-store is left;
#   - the working set: the first restore records the pages it faulted on
#     in its first second, stored beside the image through ursa-store; the
#     second restore brings them in before the sandbox runs (ROOT/ID/paged
#     says how many); a new checkpoint to the same place drops it;
#   - what a restore reads before its tasks run, and the working set, are
#     fetched by ursa-store before the pager asks (ckpt_restore_first_chunks),
#     and answered only once asked for;
#   - a migration (`checkpoint --pre-copy`, the kill path) of the writing
#     workload: the pre-copied page data is committed as objects of its
#     own while it runs (ckpt_dump_opts.pages_cut), the freeze's in
#     another, with the hot set (ckpt/workingset.h) inline in its index;
#     restored lazily (the hot set in before it runs, the recording made
#     from it) and then eagerly from those objects, every page holds what
#     it last wrote.
# Needs root, node (s3rver), python3. Env: URSA (ursa-store beside it), HOG.
set -u
URSA=${URSA:?} HOG=${HOG:?}
. "$(dirname "$0")/s3env.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/hog.sh"
P=lzs$$-
work=$tmp/work
root=$work/root
u() { "$URSA" --root "$root" "$@"; }
cleanup() {
	for id in ${P}a ${P}b ${P}m; do u delete --force "$id" >/dev/null 2>&1; done
	s3env_cleanup
}
trap cleanup EXIT
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
export AWS_ENDPOINT_URL="http://127.0.0.1:$pport"
unset AWS_PROFILE AWS_SESSION_TOKEN

t=$work/rootfs/tmp
count() { tr -d ' \n' <"$t/tick-0" 2>/dev/null; }
counts_past() { local c; c=$(count); [ -n "$c" ] && [ "$c" -gt "$1" ]; }
status_of() { u state "$1" 2>/dev/null | jq -r .status; }
is_stopped() { [ "$(status_of "$1")" = stopped ]; }
proxy() { curl -fsS "http://127.0.0.1:$pport/$1"; }
servers() { pgrep -f "ursa-store get --key-file .* --serve .*$root" | wc -l; }
no_server() { [ "$(servers)" = 0 ]; }
checked() { # both threads check their memory: "ok"
	rm -f "$t"/check-*
	kill -USR1 "$(u state "$1" | jq -r .pid)" &&
		wait_for 60 test -s "$t/check-0" && wait_for 60 test -s "$t/check-1" &&
		[ "$(cat "$t/check-0")" = ok ] && [ "$(cat "$t/check-1")" = ok ]
}

hog_bundle "$work" 64 2 || exit 1
(cd "$work/b" && u run -d ${P}a >/dev/null 2>"$work/run.err") &&
	wait_for 60 test -s "$t/ready-0" && wait_for 30 test -s "$t/tick-0" ||
	bad "run ${P}a" "$(cat "$work/run.err")"
u checkpoint --image-path "s3://ursa-test/lz/a" ${P}a 2>"$work/ck.err" ||
	bad "checkpoint to s3://ursa-test/lz/a" "$(cat "$work/ck.err")"
saved=$(count)
restore() { # id
	(cd "$work/b" && u restore --lazy-pages --detach --image-path "s3://ursa-test/lz/a" "$1" \
		2>"$work/rs.err")
}

# ---- restored lazily ---------------------------------------------------------------
check "restore --lazy-pages from s3://ursa-test/lz/a" 'restore ${P}a' "$(cat "$work/rs.err")"
check "the counter goes on from $saved" 'wait_for 30 counts_past $((saved + 5))' "count $(count)"
check "every word of its memory is as it was" 'checked ${P}a' "$(cat "$t"/check-* 2>&1)"
check "no stage is left" '[ -z "$(ls -A "$root/.remote" 2>/dev/null)" ]' "$(ls -la "$root/.remote" 2>&1)"
check "the ursa-store that served the pages ends once they are in" 'wait_for 60 no_server' \
	"$(pgrep -af ursa-store)"
paged() { cat "$root/$1/paged" 2>/dev/null; }
field() { paged "$1" | sed -n "s/.* $2=\([-0-9]*\).*/\1/p"; }
check "its working set was recorded and stored" \
	'[ "$(field ${P}a rec)" = 1 ] && [ "$(field ${P}a rec_blocks)" -gt 0 ]' "$(paged ${P}a)"
blocks=$(field ${P}a rec_blocks)
u delete --force ${P}a >/dev/null 2>&1

# ---- the working set first ---------------------------------------------------------
check "restored again" 'restore ${P}a' "$(cat "$work/rs.err")"
check "the counter goes on" 'wait_for 30 counts_past $((saved + 5))' "count $(count)"
check "the ursa-store ends" 'wait_for 60 no_server' "$(pgrep -af ursa-store)"
check "its $blocks blocks of working set came in before it ran" \
	'[ "$(field ${P}a ws_blocks)" = "$blocks" ] && [ "$(field ${P}a ws_pages)" -gt 0 ] &&
	[ "$(field ${P}a rec)" = 0 ]' "$(paged ${P}a); $(cat "$work/rs.err")"
wsobj=$tmp/data/ursa-test/lz/a/workingset._S3rver_object
check "the working set is an object beside the image" 'test -f "$wsobj"' "$(ls "$(dirname "$wsobj")")"

# ---- what a restore asks for first is fetched before it asks ------------------------
# ursa-store serving the page data by hand, its socket held by the test with
# nothing asked on it: it reads page data at once (what the restore reads
# before its tasks run, and the working set: ckpt_restore_first_chunks),
# and answers nothing it was not asked for. Its first read of the page data
# is held by the proxy: that it happens at all is the check.
proxy __clear >/dev/null
proxy "__fault?mode=stall&n=1&match=1.pages.img" >/dev/null
mkfifo "$work/byhand.go"
python3 - "$(dirname "$URSA")/ursa-store" "${URSA_CKPT_KEY:-/var/lib/ursa/checkpoint.key}" \
	"$work/byhand" "$work/byhand.out" "$work/byhand.go" <<'PY' &
import fcntl, os, select, socket, subprocess, sys
store, key, d, out, go = sys.argv[1:6]
x, y = socket.socketpair()
a = socket.socket(fileno=fcntl.fcntl(x.fileno(), fcntl.F_DUPFD_CLOEXEC, 10))  # ours, off 3
x.close()
if y.fileno() != 3:  # its end as its fd 3
    os.dup2(y.fileno(), 3)
    y.close()
else:
    y.detach()
p = subprocess.Popen([store, "get", "--key-file", key, "--serve", "s3://ursa-test/lz/a", d],
                     stdout=subprocess.PIPE, pass_fds=(3,))
os.close(3)
with open(out, "w") as f:
    f.write(p.stdout.readline().decode())
    f.flush()
    open(go).read()  # the test has seen the read
    quiet = not select.select([a], [], [], 0)[0]
    f.write("quiet\n" if quiet else "answered: %r\n" % a.recv(256)[:64])
p.kill()
p.wait()
PY
byhand=$!
stalled() { proxy __stats | grep -q "injected=1"; }
check "ursa-store serving by hand says ok" 'wait_for 30 grep -qsx ok "$work/byhand.out"' \
	"$(cat "$work/byhand.out" 2>/dev/null)"
check "it reads the page data a restore asks for first before anything asks for it" \
	'wait_for 10 stalled' "$(proxy __stats)"
echo go >"$work/byhand.go"
wait "$byhand"
check "... and answers nothing it was not asked for" 'grep -qx quiet "$work/byhand.out"' \
	"$(cat "$work/byhand.out")"
proxy __clear >/dev/null
u checkpoint --image-path "s3://ursa-test/lz/a" ${P}a 2>"$work/ck.err" ||
	bad "checkpoint to s3://ursa-test/lz/a again" "$(cat "$work/ck.err")"
check "a new checkpoint there drops it" '! test -e "$wsobj"' "$(ls "$(dirname "$wsobj")")"

# ---- a migration: the pre-copy committed while it runs ------------------------------
u delete --force ${P}a >/dev/null 2>&1
# ${P}a's ready-0 would pass the wait before ${P}m has filled its memory;
# only it goes (the image of lz/a, restored below, holds the tick files open)
rm -f "$t/ready-0"
(cd "$work/b" && u run -d ${P}m >/dev/null 2>"$work/run.err") &&
	wait_for 60 test -s "$t/ready-0" || bad "run ${P}m" "$(cat "$work/run.err")"
mkdir -p "$work/wpm"
check "checkpoint --pre-copy to s3://ursa-test/lz/m" \
	'u checkpoint --pre-copy --work-path "$work/wpm" --image-path "s3://ursa-test/lz/m" ${P}m 2>"$work/ckm.err"' \
	"$(cat "$work/ckm.err")"
pobjs() { ls "$tmp/data/ursa-test/lz/m/" | grep -c '^[0-9]*\.pages\.img\._S3rver_object$'; }
check "its page data is in several objects (the pre-copy's first): $(pobjs)" \
	'[ "$(pobjs)" -ge 2 ]' "$(ls "$tmp/data/ursa-test/lz/m/")"
restore_m() { # id [--lazy-pages]
	(cd "$work/b" && u restore ${2:-} --detach --image-path "s3://ursa-test/lz/m" "$1" 2>"$work/rs.err")
}
check "the checkpoint wrote a hot set (what the freeze copied, and after it)" \
	'grep -q "hot set [1-9][0-9]* blocks" "$work/wpm/dump.log"' "$(cat "$work/wpm/dump.log")"
check "restored lazily from those objects" 'restore_m ${P}m --lazy-pages' "$(cat "$work/rs.err")"
check "its hot set was in before it ran, and the recording starts from it" \
	'wait_for 60 test -s "$root/${P}m/paged" && [ "$(field ${P}m hot_blocks)" -gt 0 ] &&
	[ "$(field ${P}m ws_blocks)" = 0 ] && [ "$(field ${P}m ws_pages)" -gt 0 ] &&
	[ "$(field ${P}m rec)" = 1 ] && test -s "$tmp/data/ursa-test/lz/m/workingset._S3rver_object"' \
	"$(paged ${P}m); $(ls "$tmp/data/ursa-test/lz/m/")"
check "every page holds what it last wrote" 'checked ${P}m' "$(cat "$t"/check-* 2>&1)"
check "the ursa-store that served it ends" 'wait_for 60 no_server' "$(pgrep -af ursa-store)"
u delete --force ${P}m >/dev/null 2>&1
check "restored eagerly from them" 'restore_m ${P}m' "$(cat "$work/rs.err")"
check "every page holds what it last wrote, again" 'checked ${P}m' "$(cat "$t"/check-* 2>&1)"
u delete --force ${P}m >/dev/null 2>&1

# ---- the store killed while the pages come in ---------------------------------------
# the first 3 ranged reads of the page data pass (the restore's own, of a
# chunk each, and the prefetch's first 16 MiB), the fourth (a later part
# of the prefetch) is held until the store is gone
proxy "__fault?mode=stall&n=1&skip=3&match=1.pages.img" >/dev/null
check "restore --lazy-pages returns before the held read" 'restore ${P}b' "$(cat "$work/rs.err")"
held() { proxy __stats | grep -q "injected=1"; }
check "a read of the page data is held" 'wait_for 60 held' "$(proxy __stats)"
kill -KILL "$s3proxy_pid"
check "the sandbox is killed" 'wait_for 120 is_stopped ${P}b' "status $(status_of ${P}b)"
u state ${P}b >/dev/null 2>"$work/st.err"
check "ursa state says why" \
	'grep -q "killed by ursa: lazy restore: page data from object storage: .*1.pages.img" "$work/st.err"' \
	"$(cat "$work/st.err")"
check "no ursa-store is left" 'wait_for 30 no_server' "$(pgrep -af ursa-store)"
u delete --force ${P}b >/dev/null 2>&1
finish
