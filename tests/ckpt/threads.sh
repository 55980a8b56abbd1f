#!/usr/bin/env bash
# tests/ckpt/threads.sh — checkpoint/restore of a multi-threaded process
# (tests/ckpt/mthreads.c: main + three threads, one of which forked a child),
# pid 1 of its own pid namespace: first dumped while running (it must run
# on undisturbed), then stopped, dumped with ckpt_tool, killed,
# restored. The restored process must have the same thread ids (in its
# namespace) and names, thread w1's blocked mask and pending SIGUSR1, the
# child back, and its output must go on without a gap, every thread's
# counter rising and every thread's own checks passing (TLS/fs_base, xmm8,
# alternate stack, clear_child_tid, robust list, rseq, mask: a "FAIL:..."
# line otherwise). A second generation is dumped from a frozen cgroup v2
# (the supervisor's way; stopped with SIGSTOP when there is none). Then,
# when java and javac are installed, a JVM (OpenJDK: ~17 threads, a
# counter per application thread) goes through one generation. A restore
# that fails at a thread's clone3 (its id taken) leaves nothing. Then a
# process whose threads do not share their seccomp state (tests/ckpt/
# threads.c) is refused naming the pid and the thread, and runs on.
# Needs root. Env: CKPT_TOOL, MTHREADS, THREADS.
set -u
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
: "${CKPT_TOOL:?}" "${MTHREADS:?}" "${THREADS:?}"
W=$(mktemp -d /tmp/ursa-ckpt-threads.XXXXXX)
PIDS=
CG=
. "$(dirname "$0")/../lib/cg2.sh"
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	local left=0
	[ -z "$CG" ] || cg2_remove "$CG" || left=1
	rm -rf "$W"
	[ $left = 0 ] || exit 1 # (in the EXIT trap: the script's status)
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -3 "$W/out.txt" 2>/dev/null; exit 1; }
wait_for() { # SECONDS CMD...
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.02; done
}
lines() { [ -f "$W/out.txt" ] && [ "$(wc -l < "$W/out.txt")" -ge "$1" ]; }
stopped() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ "$s" = T ] || [ "$s" = t ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }
kids() { cat /proc/"$1"/task/*/children 2>/dev/null | xargs; }
# "nstid:name" of every thread, and w1's pending and blocked masks
threads_of() {
	for t in /proc/"$1"/task/*; do
		echo "$(awk '/^NSpid:/ {print $NF}' "$t/status"):$(cat "$t/comm")"
	done | sort -n | tr '\n' ' '
}
w1_field() { for t in /proc/"$1"/task/*; do [ "$(cat "$t/comm")" = w1 ] && awk -v k="$2:" '$1 == k {print $2}' "$t/status"; done; }

CGV2=/sys/fs/cgroup/unified
own=$(awk -F: '$1 == 0 { print $3 }' /proc/self/cgroup)
if [ -e "$CGV2$own/cgroup.freeze" ] || { [ "$own" = / ] && [ -e "$CGV2/cgroup.procs" ]; }; then
	CG="$CGV2${own%/}/ckpt-threads-$$"
	mkdir "$CG" || CG=
fi

generation() { # NAME PID [frozen]
	local name=$1 p=$2 how=${3:-} kid before c1 c2 c3 last
	kid=$(kids "$p")
	[ -n "$kid" ] || fail "$name: no child"
	before=$(threads_of "$p")
	[ "$(echo $before)" = "1:ckpt_mthreads 2:w1 3:w2 4:w3" ] || fail "$name: threads before: $before"
	if [ "$how" = frozen ]; then
		echo "$p" > "$CG/cgroup.procs" && echo "$kid" > "$CG/cgroup.procs" || fail "cgroup"
		echo 1 > "$CG/cgroup.freeze"
		wait_for 10 grep -q '^frozen 1' "$CG/cgroup.events" || fail "$name: did not freeze"
	else
		kill -STOP "$p" $kid
		wait_for 10 stopped "$p" && wait_for 10 stopped "$kid" || fail "$name: did not stop"
	fi
	mkdir "$W/img-$name"
	"$CKPT_TOOL" dump "$p" "$W/img-$name" ${how:+"$CG"} > "$W/dump-$name.log" 2> "$W/dump-$name.err" ||
		fail "$name: dump: $(cat "$W/dump-$name.err")"
	kill -9 "$p" $kid
	[ "$how" = frozen ] && echo 0 > "$CG/cgroup.freeze"
	wait_for 10 gone "$p" && wait_for 10 gone "$kid" || fail "$name: did not die"
	last=$(wc -l < "$W/out.txt")
	read -r _ c1 c2 c3 _ < <(tail -n 1 "$W/out.txt")
	"$CKPT_TOOL" restore "$W/img-$name" > "$W/restore-$name.log" 2> "$W/restore-$name.err" < /dev/null ||
		fail "$name: restore: $(cat "$W/restore-$name.err")"
	cat "$W/dump-$name.log" "$W/restore-$name.log"
	R=$(awk '/^pid/ {print $2}' "$W/restore-$name.log")
	PIDS="$PIDS $R $(kids "$R")"
	[ "$(threads_of "$R")" = "$before" ] || fail "$name: threads after: $(threads_of "$R"), before: $before"
	[ "$(w1_field "$R" SigPnd)" = 0000000000000200 ] || fail "$name: w1's pending SIGUSR1: $(w1_field "$R" SigPnd)"
	[ "$(w1_field "$R" SigBlk)" = 0000000000000200 ] || fail "$name: w1's blocked mask: $(w1_field "$R" SigBlk)"
	[ -n "$(kids "$R")" ] && [ "$(awk '/^NSpid:/ {print $NF}' "/proc/$(kids "$R")/status")" = 5 ] ||
		fail "$name: the child (pid 5) is not back: $(kids "$R")"
	wait_for 20 lines $((last + 40)) || fail "$name: the restored process does not write"
	awk -v last="$last" -v c1="$c1" -v c2="$c2" -v c3="$c3" '
		$1 != NR { printf "line %d: n=%s\n", NR, $1; bad = 1; exit }
		$5 != "OK" { printf "line %d: %s\n", NR, $5; bad = 1; exit }
		END {
			if (bad) exit 1
			if (!($2 > c1 + 20 && $3 > c2 + 20 && $4 > c3 + 20)) {
				printf "thread counters %s %s %s, were %s %s %s at the dump\n", $2, $3, $4, c1, c2, c3
				exit 1
			}
		}' "$W/out.txt" || fail "$name: after the restore"
	echo "ok $name: 4 threads (ids, names, mask, pending signal, child) restored at line $((last + 1)), every thread running and its own state intact"
}

unshare --pid --fork "$MTHREADS" "$W/out.txt" < /dev/null > /dev/null 2>&1 &
U=$!
PIDS="$U"
wait_for 10 sh -c "[ -n \"\$(cat /proc/$U/task/$U/children 2>/dev/null)\" ]" || fail "did not start"
P=$(kids "$U")
PIDS="$PIDS $P"
wait_for 10 lines 20 || fail "the workload does not write"
PIDS="$PIDS $(kids "$P")"
# a dump of the running process leaves every thread running undisturbed
mkdir "$W/img-live"
"$CKPT_TOOL" dump "$P" "$W/img-live" > /dev/null 2> "$W/live.err" || fail "live dump: $(cat "$W/live.err")"
n=$(wc -l < "$W/out.txt")
wait_for 20 lines $((n + 20)) || fail "stopped writing after a live dump"
awk '$1 != NR || $5 != "OK" { printf "line %d: %s\n", NR, $0; bad = 1; exit } END { exit bad }' "$W/out.txt" ||
	fail "disturbed by a live dump"
echo "ok a live dump leaves the threads running"
generation first "$P"
wait "$U" 2>/dev/null
if [ -n "$CG" ]; then
	generation frozen "$R" frozen
else
	generation second "$R"
fi

# ---- a JVM (optional: java and javac installed) -----------------------------------
if command -v java > /dev/null && command -v javac > /dev/null; then
	mkdir "$W/java"
	cat > "$W/java/Count.java" <<'JAVA'
import java.io.*;
public class Count {
    static volatile long[] c = new long[3];
    public static void main(String[] a) throws Exception {
        for (int i = 0; i < 3; i++) {
            final int k = i;
            Thread t = new Thread(() -> { for (;;) { c[k]++; try { Thread.sleep(2); } catch (Exception e) {} } });
            t.setDaemon(true);
            t.start();
        }
        PrintWriter w = new PrintWriter(new FileWriter(a[0], true), true);
        for (long n = 1;; n++) {
            w.println(n + " " + c[0] + " " + c[1] + " " + c[2]);
            Thread.sleep(10);
        }
    }
}
JAVA
	javac -d "$W/java" "$W/java/Count.java" || fail "javac"
	J=$W/java/out.txt
	unshare --pid --fork java -XX:-UsePerfData -Xmx64m -XX:+UseSerialGC -cp "$W/java" Count "$J" \
		< /dev/null > "$W/java/log" 2>&1 &
	U=$!
	PIDS="$PIDS $U"
	wait_for 20 sh -c "[ -s '$J' ] && [ \$(wc -l < '$J') -ge 20 ]" || fail "the JVM does not write"
	JP=$(kids "$U")
	PIDS="$PIDS $JP"
	nth=$(ls "/proc/$JP/task" | wc -l)
	kill -STOP "$JP"
	wait_for 10 stopped "$JP" || fail "the JVM did not stop"
	mkdir "$W/img-java"
	"$CKPT_TOOL" dump "$JP" "$W/img-java" > "$W/dump-java.log" 2> "$W/dump-java.err" ||
		fail "JVM dump: $(cat "$W/dump-java.err")"
	kill -9 "$JP"
	wait "$U" 2>/dev/null
	read -r last j1 j2 j3 < <(tail -n 1 "$J")
	"$CKPT_TOOL" restore "$W/img-java" > "$W/restore-java.log" 2> "$W/restore-java.err" < /dev/null ||
		fail "JVM restore: $(cat "$W/restore-java.err")"
	cat "$W/dump-java.log" "$W/restore-java.log"
	JR=$(awk '/^pid/ {print $2}' "$W/restore-java.log")
	PIDS="$PIDS $JR"
	[ "$(ls "/proc/$JR/task" | wc -l)" = "$nth" ] || fail "JVM: $(ls "/proc/$JR/task" | wc -l) threads, was $nth"
	wait_for 20 sh -c "[ \$(wc -l < '$J') -ge $((last + 30)) ]" || fail "the restored JVM does not write"
	awk -v c1="$j1" -v c2="$j2" -v c3="$j3" '$1 != NR { printf "line %d: %s\n", NR, $0; bad = 1; exit }
		END { if (!bad && !($2 > c1 + 20 && $3 > c2 + 20 && $4 > c3 + 20)) { print "JVM threads stalled"; bad = 1 } exit bad }' "$J" ||
		fail "JVM after the restore"
	echo "ok a JVM with $nth threads restored at line $((last + 1)), its threads counting"
	kill -9 "$JR"
else
	echo "skip JVM: no java/javac"
fi

# ---- a restore that fails half-way through the threads leaves nothing ---------------
# (in a pid namespace of its own whose init is a shell: the workload, the
# dump and the restore share it; a process made to hold the third thread's
# id makes that thread's clone3 fail after the first two exist)
cat > "$W/fail.sh" <<'SH'
mount -t proc proc /proc || exit 1
"$MTHREADS" "$W/fail.out" < /dev/null > /dev/null 2>&1 &
P=$!
i=0
while [ "$(wc -l < "$W/fail.out" 2>/dev/null || echo 0)" -lt 10 ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
K=$(cat /proc/$P/task/*/children)
T3=
for t in /proc/$P/task/*; do [ "$(cat $t/comm)" = w3 ] && T3=${t##*/}; done
kill -STOP $P $K
# all stopped (state T), up to 10 s
stopped() { for p in "$@"; do grep -q '^State:.*T' /proc/$p/status || return 1; done; }
i=0
while [ $i -lt 500 ] && ! stopped $P $K; do sleep 0.02; i=$((i + 1)); done
mkdir "$W/img-fail" && "$CKPT_TOOL" dump $P "$W/img-fail" > /dev/null || exit 2
kill -9 $P $K
wait $P
i=0
while [ -d /proc/$K ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i + 1)); done # reaped by us, pid 1
# the third thread's id for a process of ours: a dying thread group frees
# its ids a moment after its reap under load, so try a while (50 x)
for try in $(seq 50); do
	echo $((T3 - 1)) > /proc/sys/kernel/ns_last_pid
	sleep 100 &
	S=$!
	[ "$S" = "$T3" ] && break
	kill $S
	wait $S
	sleep 0.02
done
[ "$S" = "$T3" ] || exit 3
echo 1000 > /proc/sys/kernel/ns_last_pid # what runs now must not take the child's pid
if timeout 10 "$CKPT_TOOL" restore "$W/img-fail" < /dev/null > /dev/null 2> "$W/fail.err"; then exit 4; fi
grep -q "clone3 of thread $T3: File exists" "$W/fail.err" || exit 5
sleep 0.1
kill $S
wait $S
for d in /proc/[0-9]*; do # nothing but this shell (pid 1): no fork to look
	[ "$d" = /proc/1 ] || { ps -eo pid,stat,comm; exit 6; }
done
SH
env W="$W" MTHREADS="$MTHREADS" CKPT_TOOL="$CKPT_TOOL" unshare --pid --fork --mount bash "$W/fail.sh"
rc=$?
[ $rc = 0 ] || fail "failed restore with threads: step $rc: $(cat "$W/fail.err" 2>/dev/null)"
echo "ok a restore failing at a thread's clone3 ($(cat "$W/fail.err")) leaves nothing"

# ---- refused: threads that do not share their seccomp state ---------------------
"$THREADS" < /dev/null > "$W/t.out" 2>&1 &
T=$!
PIDS="$PIDS $T"
wait_for 10 sh -c "[ \$(wc -l < '$W/t.out') -ge 5 ]" || fail "threads.c does not run"
mkdir "$W/img-refused"
if "$CKPT_TOOL" dump "$T" "$W/img-refused" 2> "$W/refused.err"; then fail "threads.c: dump succeeded"; fi
grep -q "pid $T: thread [0-9]* has other credentials or seccomp state" "$W/refused.err" ||
	fail "refusal message: $(cat "$W/refused.err")"
[ -z "$(ls "$W/img-refused")" ] || fail "files left in the image directory"
n=$(wc -l < "$W/t.out")
wait_for 10 sh -c "[ \$(wc -l < '$W/t.out') -ge $((n + 10)) ]" || fail "threads.c stopped after the refusal"
echo "ok refused: $(cat "$W/refused.err")"
echo "all thread checks passed"
