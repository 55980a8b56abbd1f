# tests/faults/lib.sh — what the fault tests share (sourced).

# frozen ID: a cgroup named ID says FROZEN (v1 freezer) or cgroup.freeze 1 (v2)
frozen() {
	local f
	for f in $(find /sys/fs/cgroup -maxdepth 7 -path "*/$1/freezer.state" 2>/dev/null); do
		grep -q FROZEN "$f" && return 0
	done
	for f in $(find /sys/fs/cgroup -maxdepth 7 -path "*/$1/cgroup.freeze" 2>/dev/null); do
		[ "$(cat "$f")" = 1 ] && return 0
	done
	return 1
}
