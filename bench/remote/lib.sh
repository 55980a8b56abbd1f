# bench/remote/lib.sh — what the remote-image benchmarks share. Source it:
#   . "$here/lib.sh"
#
#   ms T0 T1       milliseconds between two $EPOCHREALTIME readings, 0.1 ms
#   median         of the numbers on stdin, one a line (of an even count,
#                  the mean of the middle two)
ms() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", (b-a)*1000}'; }
median() { sort -n | awk '{a[NR]=$1} END{if (NR%2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }
#   wait_file FILE until FILE is not empty (120 s at most), polled every
#                  $wait_step seconds (0.01)
#   notice FILE    starts `appears FILE 300` as a coprocess and waits for
#                  its "ready" (its fd and pid copied to notice_fd and
#                  notice_pid: bash drops W's once it ends)
#   noticed VAR    sets VAR to the time the watcher saw its file, or fails
#                  (not in a subshell: it waits for the watcher)
#   unnotice       kills a watcher still running (for an EXIT trap)
#   appears FILE SECONDS   (as a coprocess) says "ready", then, once FILE
#                  is not empty, the $EPOCHREALTIME of when it saw it: one
#                  process polling every millisecond with no fork (a
#                  `sleep 0.002` loop forks 500 processes a second, ~a fifth
#                  of a core here, taken from what it times)
appears() {
	python3 -c '
import os, sys, time
f, end = sys.argv[1], time.monotonic() + float(sys.argv[2])
print("ready", flush=True)
while time.monotonic() < end:
    try:
        if os.stat(f).st_size > 0:
            print("%.6f" % time.time(), flush=True)
            sys.exit(0)
    except FileNotFoundError:
        pass
    time.sleep(0.001)
sys.exit(1)' "$1" "$2"
}
notice() {
	coproc W { appears "$1" 300; }
	exec {notice_fd}<&"${W[0]}"
	notice_pid=$W_PID
	read -r _ <&"$notice_fd"
}
noticed() { # (its locals named apart: the caller's VAR may be any name)
	local noticed_t noticed_rc
	read -r noticed_t <&"$notice_fd"
	noticed_rc=$?
	exec {notice_fd}<&-
	wait "$notice_pid" && [ $noticed_rc = 0 ] && printf -v "$1" '%s' "$noticed_t"
}
unnotice() { [ -z "${notice_pid:-}" ] || kill "$notice_pid" 2>/dev/null; }
wait_file() {
	local end=$((SECONDS + 120))
	until [ -s "$1" ]; do [ $SECONDS -ge $end ] && return 1; sleep "${wait_step:-0.01}"; done
}
