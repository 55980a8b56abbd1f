# tests/lib/cg2.sh — removing a cgroup v2 directory a test made. Source it:
#   . "$(dirname "$0")/../lib/cg2.sh"
#
#   cg2_remove DIR
#       thaws DIR, SIGKILLs what is in it, waits (<= 10 s) until
#       cgroup.events says "populated 0" and removes it; 1 and a line on
#       stderr naming DIR if it is still there. cgroup.procs is not the
#       test: a killed task leaves it before it is reaped, and until it is
#       reaped the directory is populated (rmdir: EBUSY). The wait is woken
#       by the file's own change events (inotify IN_MODIFY, which the kernel
#       raises when cgroup.events changes), not by a timer.
cg2_remove() {
	local dir=$1 p
	[ -d "$dir" ] || return 0
	echo 0 >"$dir/cgroup.freeze" 2>/dev/null
	for p in $(cat "$dir/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	python3 - "$dir/cgroup.events" <<'PY'
import ctypes, os, select, sys, time
f = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
ino = libc.inotify_init1(os.O_CLOEXEC)
if ino < 0 or libc.inotify_add_watch(ino, f.encode(), 0x2) < 0:  # (0x2: IN_MODIFY)
    sys.exit("inotify on %s: %s" % (f, os.strerror(ctypes.get_errno())))
end = time.monotonic() + 10  # (the watch first: no change is missed)
while "populated 0" not in open(f).read():
    left = end - time.monotonic()
    if left <= 0 or not select.select([ino], [], [], left)[0]:
        sys.exit(1)
    os.read(ino, 4096)
PY
	rmdir "$dir" 2>/dev/null && return 0
	echo "left behind: cgroup $dir ($(tr '\n' ' ' <"$dir/cgroup.events" 2>/dev/null))" >&2
	return 1
}
