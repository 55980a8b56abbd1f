# bench/remote/lib.sh — what the remote-image benchmarks share. Source it:
#   . "$here/lib.sh"
#
#   ms T0 T1       milliseconds between two $EPOCHREALTIME readings, 0.1 ms
#   median         of the numbers on stdin, one a line (of an even count,
#                  the mean of the middle two)
ms() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", (b-a)*1000}'; }
median() { sort -n | awk '{a[NR]=$1} END{if (NR%2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }
#   watch FILE     starts `appears FILE 300` as a coprocess and waits for
#                  its "ready" (its fd and pid copied to watch_fd and
#                  watch_pid: bash drops W's once it ends)
#   watched VAR    sets VAR to the time the watcher saw its file, or fails
#                  (not in a subshell: it waits for the watcher)
#   unwatch        kills a watcher still running (for an EXIT trap)
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
watch() {
	coproc W { appears "$1" 300; }
	exec {watch_fd}<&"${W[0]}"
	watch_pid=$W_PID
	read -r _ <&"$watch_fd"
}
watched() { # (its locals named apart: the caller's VAR may be any name)
	local watched_t watched_rc
	read -r watched_t <&"$watch_fd"
	watched_rc=$?
	exec {watch_fd}<&-
	wait "$watch_pid" && [ $watched_rc = 0 ] && printf -v "$1" '%s' "$watched_t"
}
unwatch() { [ -z "${watch_pid:-}" ] || kill "$watch_pid" 2>/dev/null; }
