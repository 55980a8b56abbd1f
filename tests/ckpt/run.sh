#!/bin/sh
# tests/ckpt/run.sh — end-to-end checkpoint/restore of real processes with
# ckpt/ (through tests/ckpt/ckpt_tool):
#  1. the static counter, pid 1 of its own pid namespace, is stopped, dumped,
#     killed and restored into a new pid namespace: it must continue with the
#     next value (no reset, no gap, no duplicate) in the same stdout file and
#     the same output file (same inode), with its SSE register intact, and
#     with its seccomp filter (which kills on a syscall the dumper injects)
#     and no_new_privs back in force;
#  2. the restored counter is dumped and restored a second time;
#  3. a multi-threaded process, an io_uring holder and a holder of a file
#     lock (flock, POSIX, OFD) are refused with a
#     message naming the pid and the resource, and keep running unstopped;
#  4. corrupted, truncated and foreign images are refused and nothing starts;
#  5. a parent with two children and a zombie (tests/ckpt/tree.c) comes back with the same
#     pids, parent, process groups, cwd, umask, rlimits, blocked mask, a
#     pending (blocked) signal, uids/gids/groups/capabilities and a working
#     SIGUSR1 handler, a running interval timer, and all three continue
#     their sequences;
#  6. dumping a running (not stopped) counter leaves it running undisturbed;
#     once its binary is modified, restoring that image is refused;
#  7. a counter in a frozen cgroup v2 (the supervisor's way) is dumped, stays
#     frozen (writes nothing), continues without a gap when thawed, and an
#     image taken while frozen restores and continues (skipped without a
#     writable cgroup2 hierarchy);
#  8. dynamic binaries: a bash loop running /bin/sleep children is restored
#     (with whatever child is alive) and keeps counting;
#  9. a counter that is not a namespace init comes back with the same pid in
#     our own pid namespace (clone3 set_tid).
# Env: CKPT_TOOL COUNTER THREADS URING (set by meson). Prints timings.
set -eu
. "$(dirname "$0")/../lib/skip.sh"
[ "$(id -u)" = 0 ] || skip "needs root (ptrace, namespaces)"
: "${CKPT_TOOL:?}" "${COUNTER:?}" "${THREADS:?}" "${URING:?}" "${TREE:?}"
W=$(mktemp -d /tmp/ckpt-test.XXXXXX)
PIDS=""
CG=""
. "$(dirname "$0")/../lib/cg2.sh"
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
	local left=0
	[ -z "$CG" ] || cg2_remove "$CG" || left=1
	rm -rf "$W"
	[ $left = 0 ] || exit 1 # (in the EXIT trap: the script's status)
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# wait_for CMD...: retry up to ~20 s
wait_for() {
	i=0
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 400 ] || return 1
		sleep 0.05
	done
}
lines() { [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }
child_of() { cat "/proc/$1/task/$1/children" 2>/dev/null | awk '{print $1}'; }
state_of() { awk '{print $3}' "/proc/$1/stat"; }
is_stopped() { [ "$(state_of "$1")" = T ] || [ "$(state_of "$1")" = t ]; }
stopped_or_zombie() { is_stopped "$1" || [ "$(state_of "$1")" = Z ]; }
has_child() { [ -n "$(child_of "$1")" ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }
nsfield() { awk -v k="$2:" '$1 == k { print $NF }' "/proc/$1/status"; }

# check FILE FIRST LAST: lines are exactly "n n/2" for n = FIRST..LAST (a prefix
# of at least LAST lines), nothing missing, repeated or reset
check_seq() {
	awk -v last="$2" 'NR <= last {
		if ($1 != NR) { printf "line %d has n=%s\n", NR, $1; bad = 1; exit }
		if ($2 != sprintf("%.1f", NR / 2)) { printf "line %d: xmm value %s, want %.1f\n", NR, $2, NR / 2; bad = 1; exit }
	} END { if (!bad && NR < last) { printf "only %d lines\n", NR; bad = 1 } exit bad }' "$1"
}

# ---- 1. counter: dump, kill, restore -------------------------------------------
cd "$W"
unshare --pid --fork "$COUNTER" "$W/out.txt" seccomp < /dev/null > "$W/stdout.txt" 2>&1 &
U=$!
PIDS="$U"
wait_for has_child "$U" || fail "counter did not start"
C=$(child_of "$U")
PIDS="$PIDS $C"
wait_for lines "$W/out.txt" 30 || fail "counter does not write"
ino_before=$(stat -c %i "$W/out.txt")
kill -STOP "$C"
wait_for is_stopped "$C" || fail "counter did not stop"
mkdir "$W/img"
"$CKPT_TOOL" dump "$C" "$W/img" > "$W/dump.log" || fail "dump failed"
cat "$W/dump.log"
is_stopped "$C" || fail "counter not left stopped after dump"
last=$(wc -l < "$W/out.txt")
# (stdout is written first: a SIGSTOP that lands between the two writes
# leaves it one line ahead, and the restore then writes that line to the
# file; seen once in CI)
sout=$(wc -l < "$W/stdout.txt")
[ "$sout" -eq "$last" ] || [ "$sout" -eq $((last + 1)) ] ||
	fail "stdout ($sout lines) and file ($last) differ before restore"
kill -9 "$C"
wait "$U" 2>/dev/null || true
check_seq "$W/out.txt" "$last" || fail "sequence before dump"
"$CKPT_TOOL" restore "$W/img" > "$W/restore.log" 2> "$W/restore.err" ||
	{ cat "$W/restore.err" >&2; fail "restore failed"; }
cat "$W/restore.log"
R=$(awk '/^pid/ {print $2}' "$W/restore.log")
PIDS="$PIDS $R"
want=$((last + 30))
wait_for lines "$W/out.txt" "$want" || fail "restored counter does not write (pid $R)"
check_seq "$W/out.txt" "$want" || fail "output file sequence after restore"
check_seq "$W/stdout.txt" "$want" || fail "stdout sequence after restore"
[ "$(stat -c %i "$W/out.txt")" = "$ino_before" ] || fail "output file was replaced"
grep -q '^NSpid:.*[[:space:]]1$' "/proc/$R/status" || fail "restored task is not pid 1 in its namespace"
[ "$(nsfield "$R" Seccomp)" = 2 ] && [ "$(nsfield "$R" Seccomp_filters)" = 1 ] ||
	fail "seccomp filter not restored: $(grep Seccomp "/proc/$R/status")"
[ "$(nsfield "$R" NoNewPrivs)" = 1 ] || fail "no_new_privs not restored"
[ "$(cat "/proc/$R/comm")" = ckpt_counter ] || fail "task name not restored: $(cat "/proc/$R/comm")"
# (the counter turned huge pages off; the restorer, this shell's child, has
# this shell's setting: only if that is "on" can the check fail)
if [ "$(nsfield $$ THP_enabled)" = 1 ]; then
	[ "$(nsfield "$R" THP_enabled)" = 0 ] ||
		fail "PR_SET_THP_DISABLE not restored: $(grep THP "/proc/$R/status")"
else
	echo "# not checked: PR_SET_THP_DISABLE given back (this test runs with huge pages off itself)"
fi
echo "ok 1 counter restored: continued at $((last + 1)) in the same files"

# ---- 2. restore the restored one again -------------------------------------------
kill -STOP "$R"
wait_for is_stopped "$R" || fail "restored counter did not stop"
mkdir "$W/img2"
"$CKPT_TOOL" dump "$R" "$W/img2" > "$W/dump2.log" || fail "second dump failed"
last=$(wc -l < "$W/out.txt")
kill -9 "$R"
wait_for gone "$R" || fail "restored counter did not die"
"$CKPT_TOOL" restore "$W/img2" > "$W/restore2.log" || fail "second restore failed"
R2=$(awk '/^pid/ {print $2}' "$W/restore2.log")
PIDS="$PIDS $R2"
want=$((last + 30))
wait_for lines "$W/out.txt" "$want" || fail "twice-restored counter does not write"
check_seq "$W/out.txt" "$want" || fail "sequence after second restore"
cat "$W/dump2.log" "$W/restore2.log"
echo "ok 2 second checkpoint/restore continued at $((last + 1))"
kill -9 "$R2"
wait_for gone "$R2" || true

# ---- 3. refusals: threads, io_uring, file locks ---------------------------------------------
refuse() { # refuse NAME BINARY PATTERN [ARG]
	"$2" ${4:-} < /dev/null > "$W/$1.out" 2>&1 &
	P=$!
	PIDS="$PIDS $P"
	wait_for lines "$W/$1.out" 5 || fail "$1 workload does not run"
	mkdir "$W/img-$1"
	if "$CKPT_TOOL" dump "$P" "$W/img-$1" 2> "$W/$1.err"; then fail "$1: dump succeeded"; fi
	grep -q "pid $P" "$W/$1.err" || fail "$1: error does not name pid $P: $(cat "$W/$1.err")"
	grep -q "$3" "$W/$1.err" || fail "$1: error does not name '$3': $(cat "$W/$1.err")"
	[ -z "$(ls "$W/img-$1")" ] || fail "$1: files left in the image directory"
	is_stopped "$P" && fail "$1: left stopped"
	n=$(wc -l < "$W/$1.out")
	wait_for lines "$W/$1.out" $((n + 10)) || fail "$1: stopped running after refusal"
	kill -9 "$P"
	echo "ok 3 $1 refused: $(cat "$W/$1.err")"
}
refuse threads "$THREADS" "multi-threaded"
refuse uring "$URING" "io_uring instance"
refuse uring-mapping "$URING" "io_uring instance (mapping" maponly
# a lock holder: refused naming the pid and the lock, let go (it answers
# SIGUSR1 with a line, which a stopped process could not)
refuse_lock() { # KIND
	"$LOCKS" "$1" < /dev/null > "$W/lock-$1.out" 2>&1 &
	P=$!
	PIDS="$PIDS $P"
	wait_for lines "$W/lock-$1.out" 1 || fail "lock-$1: the workload does not take its lock"
	mkdir "$W/img-lock-$1"
	if "$CKPT_TOOL" dump "$P" "$W/img-lock-$1" 2> "$W/lock-$1.err"; then fail "lock-$1: dump succeeded"; fi
	grep -q "pid $P.*holds a file lock" "$W/lock-$1.err" ||
		fail "lock-$1: error does not name pid $P and the lock: $(cat "$W/lock-$1.err")"
	[ -z "$(ls "$W/img-lock-$1")" ] || fail "lock-$1: files left in the image directory"
	kill -USR1 "$P"
	wait_for lines "$W/lock-$1.out" 2 || fail "lock-$1: left stopped after the refusal ($(state_of "$P"))"
	kill -9 "$P"
	echo "ok 3 lock-$1 refused: $(cat "$W/lock-$1.err")"
}
for k in flock posix ofd; do refuse_lock "$k"; done

# ---- 4. corrupted / truncated / foreign images ------------------------------------
bad() { # bad NAME PATTERN: restore of $W/bad must fail with PATTERN, start nothing
	before=$(pgrep -c -x ckpt_counter || true)
	if "$CKPT_TOOL" restore "$W/bad" > /dev/null 2> "$W/bad.err"; then fail "$1: restore succeeded"; fi
	grep -q "$2" "$W/bad.err" || fail "$1: unexpected error: $(cat "$W/bad.err")"
	after=$(pgrep -c -x ckpt_counter || true)
	[ "$before" = "$after" ] || fail "$1: a process was started"
	echo "ok 4 $1 refused: $(cat "$W/bad.err")"
}
fresh() { rm -rf "$W/bad"; cp -r "$W/img" "$W/bad"; }
flip() { # flip FILE OFFSET
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $(((b + 1) % 256)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
fresh; flip "$W/bad/core.img" 200; bad "core body byte" "checksum mismatch"
fresh; flip "$W/bad/core.img" 20; bad "core header byte" "checksum mismatch"
fresh; flip "$W/bad/pages.img" 5000; bad "page data byte" "checksum mismatch"
fresh; truncate -s -4096 "$W/bad/pages.img"; bad "truncated pages" "truncated"
fresh; truncate -s -8 "$W/bad/core.img"; bad "truncated core" "truncated"
fresh; cp "$W/img2/pages.img" "$W/bad/pages.img"
if [ "$(stat -c %s "$W/img2/pages.img")" = "$(stat -c %s "$W/img/pages.img")" ]; then
	bad "foreign pages" "another image"
else
	bad "foreign pages" "another image\|truncated"
fi
fresh; rm "$W/bad/pages.img"; bad "missing pages" "pages.img"

# ---- 5. process tree ------------------------------------------------------------
plain_seq() { awk -v last="$2" 'NR <= last && $1 != NR { printf "line %d has %s\n", NR, $1; bad = 1; exit }
	END { if (!bad && NR < last) { printf "only %d lines\n", NR; bad = 1 } exit bad }' "$1"; }
mkdir "$W/tree"
unshare --pid --fork "$TREE" "$W/tree" < /dev/null > /dev/null 2>&1 &
U=$!
PIDS="$PIDS $U"
wait_for has_child "$U" || fail "tree did not start"
T=$(child_of "$U")
PIDS="$PIDS $T"
for f in p c1 c2; do wait_for lines "$W/tree/$f.txt" 20 || fail "tree: $f does not write"; done
wait_for [ "$(cat "/proc/$T/task/$T/children" | wc -w)" -eq 3 ] || fail "tree: expected 3 children"
KIDS=$(cat "/proc/$T/task/$T/children")
PIDS="$PIDS $KIDS"
kids_ns=""
for k in $KIDS; do kids_ns="$kids_ns $(nsfield "$k" NSpid)/$(nsfield "$k" NSpgid)"; done
kill -USR2 "$T" # blocked in the parent: stays pending across the checkpoint
wait_for grep -q '^ShdPnd:.*0000000000000800$' "/proc/$T/status" || fail "tree: SIGUSR2 not pending"
for p in $T $KIDS; do kill -STOP "$p"; done
for p in $T $KIDS; do wait_for stopped_or_zombie "$p" || fail "tree: $p did not stop"; done
# the 50 ms interval timer fires while stopped: SIGALRM pending, timer not queued
# (the kernel re-arms it only when the signal is taken) — the tricky case
wait_for grep -q '^ShdPnd:.*0000000000002800$' "/proc/$T/status" || fail "tree: SIGALRM not pending"
mkdir "$W/imgt"
"$CKPT_TOOL" dump "$T" "$W/imgt" > "$W/dumpt.log" || fail "tree dump failed"
for p in $KIDS $T; do kill -9 "$p" 2>/dev/null || true; done
for p in $KIDS $T; do wait_for gone "$p" || fail "tree: $p did not die"; done
wait "$U" 2>/dev/null || true
lp=$(wc -l < "$W/tree/p.txt"); l1=$(wc -l < "$W/tree/c1.txt"); l2=$(wc -l < "$W/tree/c2.txt")
"$CKPT_TOOL" restore "$W/imgt" > "$W/restoret.log" 2> "$W/restoret.err" ||
	{ cat "$W/restoret.err" >&2; fail "tree restore failed"; }
cat "$W/dumpt.log" "$W/restoret.log"
RT=$(awk '/^pid/ {print $2}' "$W/restoret.log")
PIDS="$PIDS $RT"
RKIDS=$(cat "/proc/$RT/task/$RT/children")
PIDS="$PIDS $RKIDS"
rkids_ns=""
for k in $RKIDS; do rkids_ns="$rkids_ns $(nsfield "$k" NSpid)/$(nsfield "$k" NSpgid)"; done
[ "$kids_ns" = "$rkids_ns" ] || fail "tree: children pid/pgid '$rkids_ns', want '$kids_ns'"
wait_for lines "$W/tree/p.txt" $((lp + 20)) || fail "tree: parent does not write after restore"
wait_for lines "$W/tree/c1.txt" $((l1 + 20)) || fail "tree: child 1 does not write after restore"
wait_for lines "$W/tree/c2.txt" $((l2 + 20)) || fail "tree: child 2 does not write after restore"
plain_seq "$W/tree/p.txt" $((lp + 20)) || fail "tree: parent sequence"
plain_seq "$W/tree/c1.txt" $((l1 + 20)) || fail "tree: child 1 sequence"
plain_seq "$W/tree/c2.txt" $((l2 + 20)) || fail "tree: child 2 sequence"
[ "$(nsfield "$RT" Umask)" = 0027 ] || fail "tree: umask $(nsfield "$RT" Umask)"
grep -q '^Max open files *200 *300 ' "/proc/$RT/limits" || fail "tree: RLIMIT_NOFILE not restored"
[ "$(readlink "/proc/$RT/cwd")" = "$W/tree" ] || fail "tree: cwd $(readlink "/proc/$RT/cwd")"
[ "$(nsfield "$RT" SigBlk)" = 0000000000000800 ] || fail "tree: blocked mask $(nsfield "$RT" SigBlk)"
[ "$(nsfield "$RT" SigCgt)" = 0000000000002200 ] || fail "tree: caught mask $(nsfield "$RT" SigCgt)"
na=$(wc -l < "$W/tree/alarm.txt")
wait_for lines "$W/tree/alarm.txt" $((na + 3)) || fail "tree: interval timer not restored"
# SIGUSR2 (0x800) still pending; SIGALRM (0x2000) may be too for an instant,
# between the timer's expiry and its delivery (it is caught)
pnd=$(nsfield "$RT" ShdPnd)
[ $((0x$pnd & ~0x2000)) = $((0x800)) ] || fail "tree: pending SIGUSR2 lost: $pnd"
[ "$(readlink "/proc/$RT/exe")" = "$TREE" ] || fail "tree: exe link $(readlink "/proc/$RT/exe")"
for k in $RKIDS; do
	[ "$(nsfield "$k" NSpid)" = 3 ] || continue
	grep -q '^Uid:.65534.65534.65534.65534$' "/proc/$k/status" || fail "tree: child 3 uids: $(grep Uid "/proc/$k/status")"
	grep -q '^Gid:.65534.65534.65534.65534$' "/proc/$k/status" || fail "tree: child 3 gids"
	grep -q '^Groups:.65534 *$' "/proc/$k/status" || fail "tree: child 3 groups: $(grep Groups "/proc/$k/status")"
	[ "$(nsfield "$k" CapEff)" = 0000000000000000 ] || fail "tree: child 3 has capabilities"
	[ "$(nsfield "$k" CapPrm)" = 0000000000000000 ] || fail "tree: child 3 has permitted capabilities"
done
[ "$(state_of "$(echo $RKIDS | awk '{print $3}')")" = Z ] || fail "tree: third child is not a zombie"
kill -USR1 "$RT"
wait_for lines "$W/tree/usr1.txt" 1 || fail "tree: SIGUSR1 handler did not run after restore"
grep -q 'reaped=4 status=7$' "$W/tree/usr1.txt" || fail "tree: zombie not reaped with its status: $(cat "$W/tree/usr1.txt")"
echo "ok 5 tree restored: pids/pgids$rkids_ns, zombie, handlers, itimer, mask, pending signal, limits, umask, cwd, uids, caps"
for p in $RT $RKIDS; do kill -9 "$p" 2>/dev/null || true; done

# ---- 6. dump of a running counter (leave running) ----------------------------------
cp "$COUNTER" "$W/ckpt_counter"
unshare --pid --fork "$W/ckpt_counter" "$W/run.txt" seccomp < /dev/null > /dev/null 2>&1 &
U=$!
PIDS="$PIDS $U"
wait_for has_child "$U" || fail "counter did not start"
C=$(child_of "$U")
PIDS="$PIDS $C"
wait_for lines "$W/run.txt" 20 || fail "counter does not write"
mkdir "$W/imgr"
"$CKPT_TOOL" dump "$C" "$W/imgr" > "$W/dumpr.log" || fail "dump of a running counter failed"
cat "$W/dumpr.log"
is_stopped "$C" && fail "running counter left stopped"
n=$(wc -l < "$W/run.txt")
wait_for lines "$W/run.txt" $((n + 30)) || fail "counter stopped running after dump"
check_seq "$W/run.txt" $((n + 30)) || fail "running counter disturbed by the dump"
echo "ok 6 running counter dumped and undisturbed"
kill -9 "$C"
wait "$U" 2>/dev/null || true
rm -rf "$W/bad"; cp -r "$W/imgr" "$W/bad"
echo >> "$W/ckpt_counter"
bad "modified binary" "changed since the checkpoint"

# ---- 7. frozen cgroup -------------------------------------------------------------
U2=/sys/fs/cgroup/unified
own=$(awk -F: '$1 == 0 { print $3 }' /proc/self/cgroup)
if [ -e "$U2$own/cgroup.freeze" ] || { [ "$own" = / ] && [ -d "$U2" ] && [ -e "$U2/cgroup.procs" ]; }; then
	CG="$U2${own%/}/ckpt-test-$$"
	mkdir "$CG"
	unshare --pid --fork "$COUNTER" "$W/frz.txt" < /dev/null > /dev/null 2>&1 &
	U=$!
	PIDS="$PIDS $U"
	wait_for has_child "$U" || fail "counter did not start"
	C=$(child_of "$U")
	PIDS="$PIDS $C"
	echo "$C" > "$CG/cgroup.procs"
	wait_for lines "$W/frz.txt" 20 || fail "counter does not write"
	frozen() { grep -q '^frozen 1' "$CG/cgroup.events"; }
	echo 1 > "$CG/cgroup.freeze"
	wait_for frozen || fail "cgroup did not freeze"
	n=$(wc -l < "$W/frz.txt")
	mkdir "$W/imgf"
	"$CKPT_TOOL" dump "$C" "$W/imgf" "$CG" > "$W/dumpf.log" || fail "dump of a frozen counter failed"
	cat "$W/dumpf.log"
	frozen || fail "cgroup not frozen after the dump"
	[ "$(wc -l < "$W/frz.txt")" -eq "$n" ] || fail "frozen counter wrote during the dump"
	echo 0 > "$CG/cgroup.freeze"
	wait_for lines "$W/frz.txt" $((n + 20)) || fail "thawed counter does not write"
	check_seq "$W/frz.txt" $((n + 20)) || fail "thawed counter sequence"
	echo "ok 7 frozen counter dumped, stayed frozen, thawed without a gap"
	echo 1 > "$CG/cgroup.freeze"
	wait_for frozen || fail "cgroup did not freeze again"
	rm -rf "$W/imgf"; mkdir "$W/imgf"
	"$CKPT_TOOL" dump "$C" "$W/imgf" "$CG" > "$W/dumpf.log" || fail "second frozen dump failed"
	n=$(wc -l < "$W/frz.txt")
	kill -9 "$C"
	wait "$U" 2>/dev/null || true
	"$CKPT_TOOL" restore "$W/imgf" > "$W/restoref.log" || fail "restore of a frozen dump failed"
	R=$(awk '/^pid/ {print $2}' "$W/restoref.log")
	PIDS="$PIDS $R"
	wait_for lines "$W/frz.txt" $((n + 20)) || fail "restored counter does not write"
	check_seq "$W/frz.txt" $((n + 20)) || fail "restored counter sequence"
	echo "ok 7 image taken frozen restored, continued at $((n + 1))"
	kill -9 "$R"
else
	skip_part "7: no writable cgroup v2 hierarchy" || fail "7 could not run (CI=true)"
fi

# ---- 8. dynamic binaries: bash + /bin/sleep ------------------------------------------
if [ -x /bin/bash ] && [ -x /bin/sleep ]; then
	# shellcheck disable=SC2016
	unshare --pid --fork /bin/bash -c '
		for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done
		i=0; while true; do i=$((i + 1)); echo $i; /bin/sleep 0.02; done' \
		< /dev/null > "$W/sh.txt" 2> "$W/sh.err" &
	U=$!
	PIDS="$PIDS $U"
	wait_for has_child "$U" || fail "bash did not start"
	S=$(child_of "$U")
	PIDS="$PIDS $S"
	wait_for lines "$W/sh.txt" 10 || fail "bash loop does not write"
	kill -STOP "$S"
	wait_for is_stopped "$S" || fail "bash did not stop"
	# the current sleep child (if any) is stopped too
	for k in $(cat "/proc/$S/task/$S/children"); do kill -STOP "$k"; wait_for stopped_or_zombie "$k" || true; done
	mkdir "$W/imgs"
	"$CKPT_TOOL" dump "$S" "$W/imgs" > "$W/dumps.log" || fail "dump of bash failed"
	for k in $(cat "/proc/$S/task/$S/children"); do kill -9 "$k"; done
	kill -9 "$S"
	wait "$U" 2>/dev/null || true
	n=$(wc -l < "$W/sh.txt")
	"$CKPT_TOOL" restore "$W/imgs" > "$W/restores.log" || fail "restore of bash failed"
	cat "$W/dumps.log" "$W/restores.log"
	R=$(awk '/^pid/ {print $2}' "$W/restores.log")
	PIDS="$PIDS $R"
	wait_for lines "$W/sh.txt" $((n + 10)) || fail "restored bash does not count"
	awk -v last=$((n + 10)) 'NR <= last && $1 != NR { printf "line %d: %s\n", NR, $0; bad = 1; exit } END { exit bad }' "$W/sh.txt" ||
		fail "bash sequence after restore"
	echo "ok 8 bash + /bin/sleep restored, continued at $((n + 1))"
	kill -9 "$R"
else
	skip_part "8: no /bin/bash or /bin/sleep" || fail "8 could not run (CI=true)"
fi

# ---- 9. same pid, no new pid namespace --------------------------------------------
"$COUNTER" "$W/own.txt" < /dev/null > /dev/null 2>&1 &
C=$!
PIDS="$PIDS $C"
wait_for lines "$W/own.txt" 10 || fail "counter does not write"
kill -STOP "$C"
wait_for is_stopped "$C" || fail "counter did not stop"
mkdir "$W/imgo"
"$CKPT_TOOL" dump "$C" "$W/imgo" > /dev/null || fail "dump failed"
kill -9 "$C"
wait "$C" 2>/dev/null || true
n=$(wc -l < "$W/own.txt")
"$CKPT_TOOL" restore "$W/imgo" > "$W/restoreo.log" || fail "restore with set_tid failed"
[ "$(awk '/^pid/ {print $2}' "$W/restoreo.log")" = "$C" ] || fail "restored with another pid"
wait_for lines "$W/own.txt" $((n + 10)) || fail "restored counter does not write"
check_seq "$W/own.txt" $((n + 10)) || fail "sequence after same-pid restore"
echo "ok 9 restored as pid $C in our own namespace"
kill -9 "$C"
echo "ALL OK"
