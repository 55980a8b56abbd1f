#!/usr/bin/env bash
# tests/store/lazy.sh — `ursa restore --lazy-pages --image-path s3://...`:
# the page data stays in the store until the pager asks for it, chunk by
# chunk, through an ursa-store that serves it (store/remote.h
# urs_remote_serve, ckpt/lazy.h). A real sandbox (tests/ckpt/hog.c, 64 MiB
# over two threads) and a real s3rver behind tests/store/s3proxy.py:
#   - restored lazily from s3://: running, the counter goes on, both
#     threads find every word of their memory as they left it, no stage is
#     left, and the ursa-store that served it ends once every page is in;
#   - a ranged read of the page data cut half-way (reset after 5 MB): read
#     again, every page right;
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
#     and answered only when asked for, once (ursa-store driven by hand:
#     a chunk already in the file, then one not, asked; exactly those two
#     replies, in that order);
#   - a migration (`checkpoint --pre-copy`, the kill path) of the writing
#     workload: the pre-copied page data is committed as objects of its
#     own while it runs (ckpt_dump_opts.pages_cut), the freeze's in
#     another, with the hot set (ckpt/workingset.h) inline in its index;
#     restored lazily (the hot set in before it runs, the recording made
#     from it) and then eagerly from those objects, every page holds what
#     it last wrote;
#   - a forked tree (tests/ckpt/cow.c: 16 MiB, three children and a
#     grandchild sharing most of it): restored lazily from s3://, every
#     process finds its memory as it left it, and the tree shares it again
#     (the shared pages asked for and written before it runs,
#     ckpt/cowplan.h): its Pss_Anon below 1.5 × 16 MiB.
# Needs root, node (s3rver), python3. Env: URSA (ursa-store beside it), HOG, COW.
set -u
URSA=${URSA:?} HOG=${HOG:?} COW=${COW:?}
. "$(dirname "$0")/s3env.sh"
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/hog.sh"
. "$(dirname "$0")/sandbox.sh" # work, root, u, count, status_of...
P=lzs$$-
cleanup() {
	for id in ${P}a ${P}b ${P}m ${P}f; do u delete --force "$id" >/dev/null 2>&1; done
	s3env_cleanup
}
trap cleanup EXIT

t=$work/rootfs/tmp
is_stopped() { [ "$(status_of "$1")" = stopped ]; }
proxy() { curl -fsS "http://127.0.0.1:$pport/$1"; }
servers() { pgrep -f "ursa-store get --key-file .* --serve .*$root" | wc -l; }
no_server() { [ "$(servers)" = 0 ]; }
checked() { hog_checked "$1" "$t"; } # both threads check their memory: "ok"

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
pages() { echo $(($(field "$1" fault_pages) + $(field "$1" prefetch_pages) + $(field "$1" ws_pages))); }
# (at least half its chunks: one a read still in flight when the last page
# came in, after a fault had it alone, is left to ursa-store's end)
check "its page data left the memfd chunk by chunk once in ($(field ${P}a dropped) chunks dropped for $(pages ${P}a) pages)" \
	'[ "$(field ${P}a dropped)" -gt 0 ] && [ $(($(field ${P}a dropped) * 2)) -ge $(($(pages ${P}a) / 256)) ]' \
	"$(paged ${P}a)"
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
# ursa-store serving the page data by hand, its socket held by the test:
# its first message hands over pages.img, a sealed memfd (the stage's
# pages.img is the header page alone: no page data on disk); with nothing
# asked, page data appears in it (what the restore reads
# before its tasks run, and the working set: ckpt_restore_first_chunks).
# Then the test asks for one chunk already there and one not: the replies,
# in order, are exactly those two (a chunk fetched unasked is answered only
# when asked, once).
python3 - "$(dirname "$URSA")/ursa-store" "${URSA_CKPT_KEY:-/var/lib/ursa/checkpoint.key}" \
	"$work/byhand" >"$work/byhand.out" 2>&1 <<'PY'
import ctypes, fcntl, os, select, socket, struct, subprocess, sys, time
store, key, d = sys.argv[1:4]
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
def reply(got=b""):  # one reply of ursa-store's, (chunk, status); @got: its start
    a.settimeout(60)
    while len(got) < 256:
        more = a.recv(256 - len(got))
        if not more:
            sys.exit("ursa-store closed its socket")
        got += more
    return struct.unpack("<Ii", got[:8])
try:
    print(p.stdout.readline().decode().strip(), flush=True)
    # first on the socket: pages.img in a memfd, sealed at its size; the
    # directory's pages.img holds the header page alone
    a.settimeout(60)  # (recv_fds before reply sets it)
    msg, fds, _, _ = socket.recv_fds(a, 256, 1)
    chunk, status = reply(msg)
    seals = fcntl.fcntl(fds[0], 1034) if fds else 0  # F_GET_SEALS: SEAL 1 SHRINK 2 GROW 4
    head = os.stat(os.path.join(d, "pages.img")).st_size
    print("first: chunk %#x status %d, %d fd, seals %#x; pages.img in the directory: %d bytes"
          % (chunk, status, len(fds), seals, head), flush=True)
    if (chunk, status, len(fds), seals & 7, head) != (0xFFFFFFFD, 0, 1, 7, 4096):
        sys.exit(1)
    pages = fds[0]
    total = (os.fstat(pages).st_size - 4096 + (1 << 20) - 1) >> 20
    def written():  # chunks with data in the file (SEEK_DATA/SEEK_HOLE)
        got, off = set(), 4096
        while True:
            try:
                off = os.lseek(pages, off, os.SEEK_DATA)
            except OSError:
                return got
            end = os.lseek(pages, off, os.SEEK_HOLE)
            got.update(range((off - 4096) >> 20, ((end - 4097) >> 20) + 1))
            off = end
    libc = ctypes.CDLL(None, use_errno=True)  # inotify: woken by its writes
    ino = libc.inotify_init1(os.O_CLOEXEC)
    if ino < 0 or libc.inotify_add_watch(ino, b"/proc/self/fd/%d" % pages, 0x2) < 0:
        sys.exit("inotify: %s" % os.strerror(ctypes.get_errno()))  # (0x2: IN_MODIFY)
    end = time.monotonic() + 30
    while not written() and select.select([ino], [], [], max(0, end - time.monotonic()))[0]:
        os.read(ino, 4096)
    got = written()
    print("unasked, in the file: %d of %d chunks" % (len(got), total), flush=True)
    hole = [k for k in range(total) if k not in got]
    if not got or not hole:
        sys.exit(1)
    asked = [min(got), hole[-1]]
    for k in asked:
        a.sendall(struct.pack("<II", k, 1))
    replies = []
    while len(replies) < 2:
        replies.append(reply())
    print("asked %s, answered %s" % (asked, replies), flush=True)
    if replies != [(asked[0], 0), (asked[1], 0)]:
        sys.exit(1)
    # the pager punches out a chunk no page still to come needs; asked
    # again with URS_REMOTE_SERVE_AGAIN, it is fetched again (never
    # answered as the hole it is now)
    k = asked[0]
    if libc.fallocate(pages, 3, ctypes.c_long(4096 + (k << 20)), ctypes.c_long(1 << 20)) < 0:
        sys.exit("fallocate: %s" % os.strerror(ctypes.get_errno()))  # (3: PUNCH_HOLE|KEEP_SIZE)
    holed = k not in written()
    a.sendall(struct.pack("<II", k, 1 | 0x80000000))
    again = reply()
    print("chunk %d punched (a hole: %s), asked again: answered %s, in the memfd again: %s"
          % (k, holed, again, k in written()), flush=True)
    sys.exit(0 if holed and again == (k, 0) and k in written() else 1)
finally:
    p.kill()
    p.wait()
PY
rc=$?
check "ursa-store serving by hand: pages.img in memory, sealed ($(sed -n 2p "$work/byhand.out")); what a restore asks for first comes in unasked ($(sed -n 3p "$work/byhand.out")), is answered when asked, once; $(sed -n 5p "$work/byhand.out")" \
	'[ $rc = 0 ]' "$(cat "$work/byhand.out")"
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

# ---- a forked tree, lazily from s3:// -----------------------------------------------
cw=$work/cw ct=$work/cw/rootfs/tmp
HOG=$COW hog_bundle "$cw" 16 3 &&
	jq '.process.args = ["/bin/hog", "16", "3", "/tmp", "grand"]' "$cw/b/config.json" >"$cw/b/c" &&
	mv "$cw/b/c" "$cw/b/config.json" || exit 1
all5() { local i; for i in 0 1 2 3 4; do test -s "$ct/$1-$i" || return 1; done; }
cow_ok() { hog_checked ${P}f "$ct" 5; } # every process checks its memory: "ok"
tree_kb() { # Pss_Anon of the init and every process below it (five), kB
	local todo p s=0 n=0
	todo=$(u state ${P}f | jq -r .pid)
	while [ -n "$todo" ]; do
		set -- $todo
		p=$1
		shift
		todo="$* $(cat "/proc/$p/task/"*/children 2>/dev/null)"
		todo=${todo# }
		s=$((s + $(awk '/^Pss_Anon:/ { print $2 }' "/proc/$p/smaps_rollup"))) n=$((n + 1))
	done
	[ "$n" = 5 ] && echo "$s"
}
(cd "$cw/b" && u run -d ${P}f >/dev/null 2>"$work/run.err") && wait_for 60 all5 ready ||
	bad "run the forked tree" "$(cat "$work/run.err"; ls "$ct")"
check "checkpoint the forked tree to s3://ursa-test/lz/f" \
	'u checkpoint --image-path "s3://ursa-test/lz/f" ${P}f 2>"$work/ck.err"' "$(cat "$work/ck.err")"
check "restored lazily from s3://ursa-test/lz/f" \
	'(cd "$cw/b" && u restore --lazy-pages --detach --image-path "s3://ursa-test/lz/f" ${P}f 2>"$work/rs.err")' \
	"$(cat "$work/rs.err")"
check "every process of the tree finds its memory as it left it" cow_ok \
	"$(for i in 0 1 2 3 4; do echo "check-$i: $(cat "$ct/check-$i" 2>&1)"; done)"
kb=$(tree_kb)
check "the tree shares its memory again: Pss_Anon $kb kB, below 1.5 × 16 MiB" \
	'[ -n "$kb" ] && [ "$kb" -lt $((16 * 1024 * 3 / 2)) ]' "$(u state ${P}f 2>&1)"
check "the ursa-store that served it ends" 'wait_for 60 no_server' "$(pgrep -af ursa-store)"
check "every page of the five came in, their chunks dropped once none of them lacked any ($(field ${P}f dropped))" \
	'grep -q "^done" "$root/${P}f/paged" && [ "$(field ${P}f dropped)" -gt 0 ] && cow_ok' \
	"$(paged ${P}f)"
u delete --force ${P}f >/dev/null 2>&1

# ---- a read of the page data cut half-way ------------------------------------------
# the first reply of the page data longer than 5 MB (a range of the
# prefetch's) is cut after 5 MB and the connection reset: the chunks in by
# then were used as they came, the read is tried again, and every page is
# right (a chunk used twice, or bytes of the failed reply read as the new
# one's, would fail the check or kill the sandbox)
proxy "__fault?mode=cut&bytes=5000000&n=1&match=1.pages.img" >/dev/null
check "restore --lazy-pages with a read of its page data to be cut" 'restore ${P}a' \
	"$(cat "$work/rs.err")"
check "every page came in (the cut read again)" 'wait_for 60 test -s "$root/${P}a/paged" &&
	grep -q "^done" "$root/${P}a/paged"' "$(paged ${P}a); $(proxy __stats)"
check "a read was cut" 'proxy __stats | grep -qw "injected=1"' "$(proxy __stats)"
check "every word of its memory is as it was, after the cut" 'checked ${P}a' \
	"$(cat "$t"/check-* 2>&1)"
u delete --force ${P}a >/dev/null 2>&1
proxy __clear >/dev/null

# ---- the store killed while the pages come in ---------------------------------------
# the first 3 ranged reads of the page data pass (the restore's own, of a
# chunk each, and the prefetch's first range), the fourth (a later part
# of the prefetch) is held until the store is gone
proxy "__fault?mode=stall&n=1&skip=3&match=1.pages.img" >/dev/null
check "restore --lazy-pages returns before the held read" 'restore ${P}b' "$(cat "$work/rs.err")"
held() { proxy __stats | grep -qw "injected=1"; }
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
