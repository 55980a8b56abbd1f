# tests/store/sandbox.sh — sourced by the store tests after s3env.sh: where
# their hog sandboxes live and how they are looked at. Sets $work
# ($tmp/work) and $root ($work/root), and the S3 settings (s3env_export);
# defines:
#   u ARGS...          ursa with that --root
#   count              the hog's tick count ($work/rootfs/tmp/tick-0)
#   counts_past N      it is past N
#   status_of ID       `ursa state`'s status
#   cg_dirs ID         cgroup directories named ID
#   nothing_left ID    no record, no state directory, no cgroup, no stage
work=$tmp/work
root=$work/root
u() { "$URSA" --root "$root" "$@"; }
s3env_export
count() { tr -d ' \n' <"$work/rootfs/tmp/tick-0" 2>/dev/null; }
counts_past() { local c; c=$(count); [ -n "$c" ] && [ "$c" -gt "$1" ]; }
status_of() { u state "$1" 2>/dev/null | jq -r .status; }
cg_dirs() { find /sys/fs/cgroup -maxdepth 6 -type d -name "$1" 2>/dev/null | wc -l; }
nothing_left() {
	! u state "$1" >/dev/null 2>&1 && [ ! -e "$root/$1" ] && [ "$(cg_dirs "$1")" = 0 ] &&
		[ -z "$(ls -A "$root/.remote" 2>/dev/null)" ]
}
