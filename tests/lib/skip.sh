# tests/lib/skip.sh — how a shell test skips (issue #18: a green run ran
# everything). Source it: . "$(dirname "$0")/../lib/skip.sh"
#
#   skip REASON          exit 77 (meson: SKIP) saying why — for what CI never
#                        lacks either way (not root: CI runs as root)
#   skip_or_fail REASON  a dependency scripts/setup installs, or a device or
#                        kernel feature this machine has (/dev/fuse,
#                        /dev/net/tun, enable_uring), is missing: exit 77
#                        saying why, or, with CI=true, exit 1 saying why
#   need_cmd CMD...      skip_or_fail "no CMD" for the first missing command
#   need_root            skip "needs root" unless uid 0
#   skip_part REASON     a part of a test that cannot run: prints "skip  REASON"
#                        and returns 0, or, with CI=true, prints "FAIL  REASON"
#                        and returns 1 (the caller counts it as a failure)
# The line is also TAP's ("1..0 # SKIP REASON"), which meson reads for
# protocol: tap tests and prints for exitcode ones.

skip() {
	echo "1..0 # SKIP $*"
	exit 77
}

skip_or_fail() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $* (CI=true: scripts/setup provides it, so a skip would hide a test)"
		exit 1
	fi
	echo "1..0 # SKIP $*"
	exit 77
}

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip_or_fail "no $c"
	done
}

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root"
}

skip_part() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL  $* (CI=true: scripts/setup provides it)"
		return 1
	fi
	echo "skip  $*"
	return 0
}
