#!/usr/bin/env bash
# tests/ckpt/do.sh — checkpoint/restore of a registered `ursa do --id`
# sandbox running dynamic binaries from the host's root (ckpt/layer.c):
#   - bash + /bin/sleep children, and python3 if present, in `ursa do --id`;
#     they write counters into the overlay's writable layer (/root, /var/tmp)
#     and to stdout; one deletes a host file in its view (a whiteout)
#   - `ursa checkpoint` saves the layer (DIR/layer.img) and ends the sandbox:
#     `ursa do` exits, the layer's tmpfs is gone from the host
#   - `ursa restore` (no bundle) brings back the layer and the processes: the
#     counters in the files continue without a gap or repeat, stdout goes on
#     from the saved value, the deleted file stays deleted (and exists on the
#     host), a file written before the checkpoint is still there
#   - stdout goes through fd 7, a copy of the stdout `ursa do` was given,
#     while fd 1 is a file in the layer (as bash holds its saved stdout
#     while a builtin's output is redirected): saved as that stdio and
#     given the restore's stdout; python3, given one file as stdout and
#     stderr (2>&1), writes to its stderr through fd 3 while fd 2 is a file
#     of its own (fd 3 shares fd 1's open file): restored with stdout and
#     stderr apart, fd 1 is the stdout and fd 3 the stderr
#   - files on the sandbox's tmpfs mounts (/tmp, /dev/shm) come back
#     (ckpt/tmpfs.c): a counter on /tmp continues, a symlink stays one,
#     fds held open on /tmp and on the writable layer write on (new inodes);
#     an index naming a place that is no tmpfs in the new sandbox is refused
#   - a damaged layer.img: restore refuses with a clear error and leaves
#     nothing (no record, no layer mount, no process)
#   - `ursa do --id` with an id in use, or an invalid one: refused
#   - a shell given stdout and stderr as one file (2>&1), restored with
#     them apart: its stdout and stderr stay apart (fd 2 was a duplicate)
#   - bash on a terminal (fds 0-2 one pty, as `ursa do` from a shell), its
#     saved stdio on fds 10-12 inside `while ...; done </dev/null >/dev/null
#     2>&1`: restored on another terminal, it reads and writes that one
#   - python3 holds a 1 TiB MAP_NORESERVE reservation, a few pages touched:
#     checkpoint visits only those (host/pagemap.c), restore maps it again
# Needs root (namespaces, cgroups, ptrace). Env: URSA.
set -u
P=cd$$-
URSA=${URSA:?} CKPT_TOOL=${CKPT_TOOL:?}
work=$(mktemp -d /tmp/ursa-ckpt-do.XXXXXX)
root=$work/root
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for
u() { URSA_SECCOMP_COUNT=0 "$URSA" --root "$root" "$@"; }
BG=""
cleanup() {
	for id in ${P}a ${P}b ${P}c ${P}d; do u delete --force "$id" >/dev/null 2>&1; done
	for p in $BG; do kill -9 "$p" 2>/dev/null; done
	for m in $(findmnt -rn -o TARGET | grep "^$root/" | sort -r); do umount -l "$m"; done
	rm -rf "$work"
}
trap cleanup EXIT
layer_mounted() { findmnt -rn -o TARGET | grep -qx "$root/.do/$1"; }
nothing_left() { # id
	! u state "$1" >/dev/null 2>&1 && [ ! -e "$root/$1" ] && ! layer_mounted "$1" &&
		[ ! -e "$root/.do/$1" ] && ! grep -qs "/$1\$" /proc/[0-9]*/cgroup
}
# the file FILE in the sandbox has lines 1..N, N >= MIN
contiguous() { # id file min
	u exec "$1" /bin/cat "$2" 2>/dev/null |
		awk -v min="$3" 'NR != $1 { exit 1 } END { exit NR < min }'
}
last_line() { tail -n 1 "$1" 2>/dev/null; }
running() { [ "$(u state "$1" 2>/dev/null | jq -r .status)" = running ]; }
err_of() { cat "$1" 2>/dev/null; }

mkdir -p "$root"
# a host file the sandbox deletes in its view
victim=/var/tmp/ursa-ckpt-do-victim.$$
echo keep >"$victim"
trap 'cleanup; rm -f "$victim"' EXIT

script='i=0; echo before >/root/marker; rm -f '"$victim"'
echo tmpdata >/tmp/t.txt; mkdir /dev/shm/d; echo shm >/dev/shm/d/s; ln -s / /tmp/rootlink
exec 5>>/tmp/fd.cnt 6>>/root/fd.cnt 7>&1 >/root/stdout.away
while true; do i=$((i + 1)); echo $i >>/root/bash.cnt; echo $i >>/tmp/t.cnt; echo $i >&5; echo $i >&6
	echo $i >&7; /bin/sleep 0.02; done'
u do --id ${P}a -- /bin/bash -c "$script" >"$work/do.out" 2>"$work/do.err" &
BG="$BG $!"
do_pid=$!
check "ursa do --id registers the sandbox" 'wait_for 10 running ${P}a' \
	"$(err_of "$work/do.err")"
check "its writable layer is a tmpfs in the state root" 'layer_mounted ${P}a'
check "an id in use is refused" \
	'! u do --id ${P}a -- /bin/true 2>"$work/dup.err" && grep -q "exists already\|already exists" "$work/dup.err"' \
	"$(err_of "$work/dup.err")"
check "an invalid id is refused" '! u do --id "../x" -- /bin/true 2>/dev/null'
have_py=0
if [ -x /usr/bin/python3 ]; then
	have_py=1
	# a 1 TiB MAP_NORESERVE reservation with a few pages touched (as a
	# sanitizer's shadow or a runtime's heap): the dump visits only those
	# pages and the restore maps it again without the overcommit refusal;
	# the process exits if a byte it wrote there is not what it reads back
	# its stdout and stderr are one file (2>&1); it counts on its stdout
	# and writes e-lines through a copy of the stderr (fd 3, sharing fd 1's
	# open file) while fd 2 is a file of its own: restored with stdout and
	# stderr apart, the count goes on in the stdout, the e-lines in the
	# stderr (not where fd 1 is, nor where a writable copy would default to)
	u do --id ${P}b -- /usr/bin/python3 -c '
import mmap, os, time, sys
err = os.dup(2)
os.dup2(os.open("/var/tmp/py.away", os.O_WRONLY | os.O_CREAT, 0o600), 2)
m = mmap.mmap(-1, 1 << 40, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000)
offs = (0, 1 << 30, (1 << 40) - 4096)
i = 0
while True:
    for o in offs:
        if m[o] != i % 256:
            sys.exit("reservation at %#x lost: %d, not %d" % (o, m[o], i % 256))
    i += 1
    for o in offs:
        m[o] = i % 256
    with open("/var/tmp/py.cnt", "a") as f:
        f.write("%d\n" % i)
    os.write(1, b"%d\n" % i)
    os.write(err, b"e%d\n" % i)
    time.sleep(0.02)
' >"$work/py.out" 2>&1 &
	BG="$BG $!"
	py_pid=$!
fi
check "bash counts" 'wait_for 10 contiguous ${P}a /root/bash.cnt 20'
check "the host file is deleted in the sandbox's view only" \
	'! u exec ${P}a /bin/cat "$victim" >/dev/null 2>&1 && [ "$(cat "$victim")" = keep ]'
[ $have_py = 1 ] && check "python3 counts" 'wait_for 10 contiguous ${P}b /var/tmp/py.cnt 20' \
	"$(err_of "$work/py.out")"

# ---- checkpoint ------------------------------------------------------------------------
u checkpoint --image-path "$work/img" ${P}a 2>"$work/ck.err"
ck=$? # (the message is read after the command: a check's detail is expanded before it runs)
check "checkpoint" '[ $ck = 0 ]' "exit status $ck: $(err_of "$work/ck.err")"
check "the image has the writable layer" '[ -s "$work/img/layer.img" ] && [ "$(stat -c %a "$work/img/layer.img")" = 600 ]'
check "... and the tmpfs contents (/tmp, /dev/shm)" \
	'[ "$(cut -f 3 "$work/img/tmpfs.lst" | sort | tr "\n" " ")" = "/dev/shm /tmp " ]' "$(err_of "$work/img/tmpfs.lst")"
check "ursa do ended with the sandbox" 'wait_for 10 bash -c "! kill -0 $do_pid 2>/dev/null"'
check "the layer is gone from the host" 'wait_for 5 nothing_left ${P}a'
saved=$(last_line "$work/do.out")
if [ $have_py = 1 ]; then
	check "checkpoint python3" 'u checkpoint --image-path "$work/img-py" ${P}b 2>"$work/ckp.err"' \
		"$(err_of "$work/ckp.err")"
	wait_for 10 bash -c "! kill -0 $py_pid 2>/dev/null"
	py_saved=$(grep -v '^e' "$work/py.out" | tail -n 1)
fi

# ---- a damaged layer: refused, nothing left -------------------------------------------------
cp -a "$work/img" "$work/img-bad"
sz=$(stat -c %s "$work/img-bad/layer.img")
printf '\x5a' | dd of="$work/img-bad/layer.img" bs=1 seek=$((sz / 2)) conv=notrunc status=none
check "a damaged layer.img is refused" \
	'! u restore --image-path "$work/img-bad" ${P}a >/dev/null 2>"$work/bad.err" && grep -q "layer" "$work/bad.err"' \
	"$(err_of "$work/bad.err")"
check "... and leaves nothing" 'nothing_left ${P}a'

cp -a "$work/img" "$work/img-moved"
sed -i 's|\t/tmp$|\t/etc|' "$work/img-moved/tmpfs.lst"
check "an altered tmpfs.lst is refused by the image's manifest" \
	'! u restore --image-path "$work/img-moved" ${P}a >/dev/null 2>"$work/mv.err" && grep -q "tmpfs.lst was altered" "$work/mv.err"' \
	"$(err_of "$work/mv.err")"
# sealed again with the key: what the restore checks behind the manifest
"$CKPT_TOOL" seal "$work/img-moved"
check "tmpfs contents for a place that is no tmpfs are refused" \
	'! u restore --image-path "$work/img-moved" ${P}a >/dev/null 2>"$work/mv.err" && grep -q "no empty tmpfs" "$work/mv.err"' \
	"$(err_of "$work/mv.err")"
check "... and leave nothing" 'wait_for 5 nothing_left ${P}a'

# ---- restore ---------------------------------------------------------------------------------
u restore --image-path "$work/img" ${P}a >"$work/rs.out" 2>"$work/rs.err" &
BG="$BG $!"
check "restore (no bundle: the image's layer)" 'wait_for 10 running ${P}a'
running ${P}a || echo "      restore said: $(err_of "$work/rs.err")" # (after the wait)
check "stdout continues from the saved value" \
	'wait_for 10 bash -c "[ \"\$(head -n 1 $work/rs.out)\" = $((saved + 1)) ]"' \
	"saved $saved, restored output starts with: $(head -n 2 "$work/rs.out" | tr '\n' ' ')"
n0=$(u exec ${P}a /bin/cat /root/bash.cnt | wc -l)
check "the counter file continues without a gap or a repeat" \
	'wait_for 10 contiguous ${P}a /root/bash.cnt $((n0 + 10))'
check "a file written before the checkpoint is there" '[ "$(u exec ${P}a /bin/cat /root/marker)" = before ]'
check "files on /tmp and /dev/shm are back" \
	'[ "$(u exec ${P}a /bin/cat /tmp/t.txt /dev/shm/d/s | tr "\n" " ")" = "tmpdata shm " ]'
check "a symlink on /tmp is still one" '[ "$(u exec ${P}a /bin/readlink /tmp/rootlink)" = / ]'
check "the counter on /tmp continues" 'wait_for 10 contiguous ${P}a /tmp/t.cnt $((n0 + 10))'
check "fds kept open on /tmp and on the writable layer write on" \
	'wait_for 10 contiguous ${P}a /tmp/fd.cnt $((n0 + 10)) && contiguous ${P}a /root/fd.cnt $((n0 + 10))'
check "the deleted host file stays deleted (a whiteout)" \
	'! u exec ${P}a /bin/cat "$victim" >/dev/null 2>&1 && [ "$(cat "$victim")" = keep ]'
check "the layer is a tmpfs again" 'layer_mounted ${P}a'
if [ $have_py = 1 ]; then
	u restore --image-path "$work/img-py" ${P}b >"$work/rspy.out" 2>"$work/rspy.err" &
	BG="$BG $!"
	check "restore python3" 'wait_for 10 bash -c "[ \"\$(head -n 1 $work/rspy.out)\" = $((py_saved + 1)) ]"' \
		"saved $py_saved: $(head -n 2 "$work/rspy.out" 2>/dev/null | tr '\n' ' ') $(head -c 300 "$work/rspy.err")"
	check "... its copy of the stderr it was given (one file with the stdout) is the restore's stderr" \
		'wait_for 10 grep -q "^e" "$work/rspy.err" && ! grep -q "^e" "$work/rspy.out"' \
		"$(head -c 200 "$work/rspy.err")"
	running ${P}b || echo "      restore said: $(err_of "$work/rspy.err")"
	n1=$(u exec ${P}b /bin/cat /var/tmp/py.cnt | wc -l)
	check "python3's file continues" 'wait_for 10 contiguous ${P}b /var/tmp/py.cnt $((n1 + 10))'
	u delete --force ${P}b >/dev/null 2>&1
fi
check "delete removes the record and the layer" 'u delete --force ${P}a && wait_for 5 nothing_left ${P}a'

# ---- stdout and stderr given as one file, both left in place: fd 2 is a
# duplicate of fd 1 and is stderr of its own: restored with them apart, the
# e-lines are in the stderr alone. The shell answers each line the test
# writes to its stdin (a FIFO): a line and an e-line, then it reads again.
mkfifo "$work/c.in" "$work/rc.in"
exec {cin}<>"$work/c.in" {rin}<>"$work/rc.in" # (read-write: opening never blocks)
u do --id ${P}c -- /bin/sh -c 'while read x; do echo $x; echo e$x >&2; done' \
	<"$work/c.in" >"$work/c.out" 2>&1 &
BG="$BG $!"
c_pid=$!
echo 1 >&$cin
wait_for 10 grep -qx e1 "$work/c.out"
u checkpoint --image-path "$work/img-c" ${P}c 2>"$work/ckc.err"
ck=$?
check "checkpoint of a shell given 2>&1" '[ $ck = 0 ] && wait_for 10 bash -c "! kill -0 $c_pid 2>/dev/null"' \
	"$(err_of "$work/ckc.err")"
u restore --image-path "$work/img-c" ${P}c <"$work/rc.in" >"$work/rc.out" 2>"$work/rc.err" &
BG="$BG $!"
echo 2 >&$rin
check "restored with stdout and stderr apart, they stay apart" \
	'wait_for 10 grep -qx e2 "$work/rc.err" && wait_for 10 grep -qx 2 "$work/rc.out" &&
	 ! grep -q "^e" "$work/rc.out" && ! grep -q "^[0-9]" "$work/rc.err"' \
	"out: $(head -c 100 "$work/rc.out" | tr '\n' ' ') err: $(head -c 100 "$work/rc.err" | tr '\n' ' ')"
u delete --force ${P}c >/dev/null 2>&1
exec {cin}>&- {rin}>&-

# ---- a terminal given as fds 0-2 (`ursa do` from an interactive shell): bash
# inside `while ...; done </dev/null >/dev/null 2>&1` keeps its saved stdio,
# the terminal, on fds 10-12 (none of 0-2 holds it any more), reads it on
# fd 10 and writes it on fd 11. The checkpoint saves them as the stdio
# given; the restore, run on another terminal, puts that terminal there:
# bash reads and writes the new terminal on fds 10-11, and after the loop
# on fds 0-1.
# ptyio OUT CTL CMD...: CMD on a new pty (no echo); what the pty prints goes
# to OUT, lines written to the FIFO CTL are typed on it
ptyio() {
	local out=$1 ctl=$2
	shift 2
	timeout 120 python3 - "$out" "$ctl" "$@" <<'PY' &
import os, select, subprocess, sys, termios
out, ctl, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
m, s = os.openpty()
a = termios.tcgetattr(s)
a[3] &= ~termios.ECHO
termios.tcsetattr(s, termios.TCSANOW, a)
p = subprocess.Popen(cmd, stdin=s, stdout=s, stderr=s, start_new_session=True)
os.close(s)
c = os.open(ctl, os.O_RDWR)
with open(out, "wb", buffering=0) as f:
    while True:
        r, _, _ = select.select([m, c], [], [])
        if c in r:
            os.write(m, os.read(c, 4096))
        if m in r:
            try:
                d = os.read(m, 4096)
            except OSError:  # EIO: the pty's last other end closed
                break
            if not d:
                break
            f.write(d.replace(b"\r", b""))
sys.exit(p.wait())
PY
	BG="$BG $!"
	pty_pid=$!
}
mkfifo "$work/d1.in" "$work/d2.in"
exec {d1}<>"$work/d1.in" {d2}<>"$work/d2.in"
ptyio "$work/d1.out" "$work/d1.in" "$URSA" --root "$root" do --id ${P}d -- /bin/bash -c \
	'while read -r -u 10 l; do echo "got $l" >&11; [ "$l" = out ] && break; done </dev/null >/dev/null 2>&1
	 echo left; read -r x; echo "stdin $x"; read -r x'
echo a >&$d1
check "bash on a terminal, inside a loop on its saved stdio (fds 10-12)" \
	'wait_for 10 grep -qsx "got a" "$work/d1.out"' "$(cat "$work/d1.out" 2>/dev/null)"
# bash is the child of the sandbox's minimal init (run.ursa.init)
dpid=$(pgrep -P "$(u state ${P}d 2>/dev/null | jq -r .pid)" -x bash)
check "(control: fds 10-12 are the terminal, fds 0-2 /dev/null)" \
	'[ "$(readlink /proc/$dpid/fd/10)" = "$(readlink /proc/$dpid/fd/12)" ] &&
	 [ "$(readlink /proc/$dpid/fd/11)" != /dev/null ] &&
	 [ "$(readlink /proc/$dpid/fd/0)$(readlink /proc/$dpid/fd/2)" = /dev/null/dev/null ]' \
	"$(ls -l /proc/$dpid/fd 2>&1)"
pty1=$pty_pid
u checkpoint --image-path "$work/img-d" ${P}d 2>"$work/ckd.err"
ck=$?
check "checkpoint of it: fds 10-12 are saved as the stdio it was given" \
	'[ $ck = 0 ] && wait_for 10 bash -c "! kill -0 $pty1 2>/dev/null"' "$(err_of "$work/ckd.err")"
ptyio "$work/d2.out" "$work/d2.in" "$URSA" --root "$root" restore --image-path "$work/img-d" ${P}d
echo b >&$d2
check "restored on another terminal, fds 10-11 read and write that terminal" \
	'wait_for 10 grep -qsx "got b" "$work/d2.out"' "$(cat "$work/d2.out" 2>/dev/null)"
echo out >&$d2
wait_for 10 grep -qsx left "$work/d2.out"
echo c >&$d2
check "after the loop, its stdin and stdout are that terminal" \
	'wait_for 10 grep -qsx "stdin c" "$work/d2.out"' "$(cat "$work/d2.out" 2>/dev/null)"
u delete --force ${P}d >/dev/null 2>&1
wait_for 10 bash -c "! kill -0 $pty_pid 2>/dev/null" # (the restore ended with it)
exec {d1}>&- {d2}>&-

echo "passed $passed, failed $failed"
[ $failed = 0 ]
