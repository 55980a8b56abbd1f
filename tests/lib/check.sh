# tests/lib/check.sh — the checks of a shell test. Source it:
#   . "$(dirname "$0")/../lib/check.sh"
#
#   ok WHAT              count a pass, print "ok    WHAT"
#   bad WHAT [DETAIL]    count a failure, print "FAIL  WHAT" and DETAIL
#   check WHAT CODE [DETAIL]   eval CODE: ok or bad
#   wait_for SECONDS CMD...    poll CMD every 20 ms until it succeeds, at
#                        most SECONDS (a deadline far above the expected
#                        time: the test waits on a condition, never a sleep)
#   finish               print the counts; exit 0 only if nothing failed
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok    $1"; }
bad() {
	failed=$((failed + 1))
	echo "FAIL  $1${2:+
      $2}"
}
check() { if eval "$2"; then ok "$1"; else bad "$1" "${3:-}"; fi; }
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.02
	done
}
finish() {
	echo "# $passed passed, $failed failed"
	[ "$failed" = 0 ]
	exit
}
