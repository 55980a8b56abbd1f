# tests/lib/cg2.sh — removing a cgroup v2 directory a test made. Source it:
#   . "$(dirname "$0")/../lib/cg2.sh"
#
#   cg2_remove DIR
#       thaws DIR, SIGKILLs what is in it, waits (<= 10 s) until
#       cgroup.events says "populated 0" and removes it; 1 and a line on
#       stderr naming DIR if it is still there. cgroup.procs is not the
#       test: a killed task leaves it before it is reaped, and until it is
#       reaped the directory is populated (rmdir: EBUSY).
cg2_remove() {
	local dir=$1 p end=$((SECONDS + 10))
	[ -d "$dir" ] || return 0
	echo 0 >"$dir/cgroup.freeze" 2>/dev/null
	for p in $(cat "$dir/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	until grep -q '^populated 0' "$dir/cgroup.events" 2>/dev/null || [ $SECONDS -ge $end ]; do
		sleep 0.02
	done
	rmdir "$dir" 2>/dev/null && return 0
	echo "left behind: cgroup $dir ($(tr '\n' ' ' <"$dir/cgroup.events" 2>/dev/null))" >&2
	return 1
}
