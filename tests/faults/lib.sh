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

# frozen_where ID: which freezer files say so, and cgroup.events (diagnostics)
frozen_where() {
	local f
	for f in $(find /sys/fs/cgroup -maxdepth 7 \( -path "*/$1/freezer.state" -o -path "*/$1/cgroup.freeze" \) 2>/dev/null); do
		printf '%s=%s ' "${f#/sys/fs/cgroup/}" "$(cat "$f")"
		[ -f "${f%/*}/cgroup.events" ] && printf '[%s] ' "$(tr '\n' ' ' <"${f%/*}/cgroup.events")"
	done
}
