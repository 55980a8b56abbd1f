# tests/integration/lib.sh — helpers for the integration runner (run):
# result accounting, the busybox rootfs, bundles generated from `ursa spec`
# plus jq edits, one wrapper per runtime (ursa, and runc as the oracle) on a
# private --root, polling with deadlines instead of sleeps, transcripts
# (key=value files, one per scenario and runtime) and their comparison, and
# the cleanup that runs on exit whatever happened.
#
# Sourced by run; expects URSA, INSIDE, RUNC (may be empty) and WORK set.

# ---- results ----------------------------------------------------------------

PASS=0
FAIL=0
SKIP=0
XFAIL=0
declare -A PASS_BY=() FAIL_BY=() SKIP_BY=()
FAILED_NAMES=()
XFAIL_NAMES=()

# Checks that fail because of a known product bug: still run and printed
# ("XFAIL"), counted as skipped, listed at the end. Keys are check names or
# glob patterns over them; filled in by run.
declare -A KNOWN_BUG=()

# known_bug NAME: print the bug a check is listed under, if any.
known_bug()
{
	local k
	for k in "${!KNOWN_BUG[@]}"; do
		# shellcheck disable=SC2053 # the key is a glob pattern
		if [[ $1 == $k ]]; then
			echo "${KNOWN_BUG[$k]}"
			return 0
		fi
	done
	return 1
}

# The runtime a check is about ("ursa", "runc" or "diff"), for the tallies.
check_kind()
{
	case "$1" in
	*/ursa:* | ursa:* | */ursa) echo ursa ;;
	*/runc:* | runc:* | */runc) echo runc ;;
	*) echo diff ;;
	esac
}

ok()
{
	local name=$1
	local k
	k=$(check_kind "$name")
	local bug
	if bug=$(known_bug "$name"); then
		printf 'XPASS %s (listed as a known bug: %s; remove it from the list)\n' "$name" "$bug"
	else
		printf 'ok    %s\n' "$name"
	fi
	PASS=$((PASS + 1))
	PASS_BY[$k]=$((${PASS_BY[$k]:-0} + 1))
}

fail()
{
	local name=$1
	shift
	local k
	k=$(check_kind "$name")
	local bug
	if bug=$(known_bug "$name"); then
		printf 'XFAIL %s — known bug: %s\n' "$name" "$bug"
		[ $# -gt 0 ] && printf '%s\n' "$@" | sed 's/^/        /' | head -n 20
		XFAIL=$((XFAIL + 1))
		SKIP=$((SKIP + 1))
		SKIP_BY[$k]=$((${SKIP_BY[$k]:-0} + 1))
		XFAIL_NAMES+=("$name")
		return
	fi
	printf 'FAIL  %s\n' "$name"
	[ $# -gt 0 ] && printf '%s\n' "$@" | sed 's/^/        /' | head -n 40
	FAIL=$((FAIL + 1))
	FAIL_BY[$k]=$((${FAIL_BY[$k]:-0} + 1))
	FAILED_NAMES+=("$name")
}

skip()
{
	local name=$1 why=$2
	local k
	k=$(check_kind "$name")
	printf 'skip  %s (%s)\n' "$name" "$why"
	SKIP=$((SKIP + 1))
	SKIP_BY[$k]=$((${SKIP_BY[$k]:-0} + 1))
}

# skip_dep NAME WHY: a check that cannot run because something scripts/setup
# provides (or this machine has: a root CI host can mount, has python3 and
# coreutils >= 8.31, and ursa has every command) is missing: a skip, but
# with CI=true a failure (issue #18: a green run ran everything).
skip_dep()
{
	if [ "${CI:-}" = true ]; then
		fail "$1" "CI=true: cannot run: $2"
	else
		skip "$1" "$2"
	fi
}

# check NAME CMD...: ok if CMD succeeds, FAIL (with CMD's output) if not.
check()
{
	local name=$1
	shift
	local out
	if out=$("$@" 2>&1); then
		ok "$name"
	else
		fail "$name" "$out"
	fi
}

# ---- small predicates ---------------------------------------------------------

# eq WHAT GOT WANT
eq()
{
	[ "$2" = "$3" ] && return 0
	echo "$1: got \"$2\", want \"$3\""
	return 1
}

# match WHAT GOT ERE
match()
{
	[[ $2 =~ $3 ]] && return 0
	echo "$1: \"$2\" does not match /$3/"
	return 1
}

# nonzero WHAT RC
nonzero()
{
	[ "$2" != 0 ] && return 0
	echo "$1: exit status 0, want non-zero"
	return 1
}

# poll SECONDS CMD...: retry CMD every 20 ms until it succeeds or time is up.
poll()
{
	local limit=$1
	shift
	local end=$(($(date +%s%N) + limit * 1000000000))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		[ "$(date +%s%N)" -ge "$end" ] && return 1
		sleep 0.02
	done
}

rfc3339nano()
{
	[[ $1 =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$ ]] &&
		date -d "$1" +%s >/dev/null 2>&1
}

pid_alive()
{
	[ -n "$1" ] && [ "$1" -gt 0 ] 2>/dev/null && kill -0 "$1" 2>/dev/null &&
		! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null
}

pid_gone()
{
	! pid_alive "$1"
}

# no_process PATTERN: no process has PATTERN in its command line (pgrep
# does not match itself; callers must not carry PATTERN in their own argv).
no_process()
{
	! pgrep -f -- "$1" >/dev/null
}

# ---- runtimes -----------------------------------------------------------------

RUNTIMES=(ursa)

# rt RUNTIME ARGS...: the runtime on its private state dir.
rt()
{
	local r=$1
	shift
	case "$r" in
	ursa) "$URSA" --root "$WORK/root-ursa" "$@" ;;
	runc) "$RUNC" --root "$WORK/root-runc" "$@" ;;
	*)
		echo "rt: unknown runtime $r" >&2
		return 2
		;;
	esac
}

# rt_argv RUNTIME: RT_ARGV=(the runtime's command line up to the command).
rt_argv()
{
	case "$1" in
	ursa) RT_ARGV=("$URSA" --root "$WORK/root-ursa") ;;
	runc) RT_ARGV=("$RUNC" --root "$WORK/root-runc") ;;
	esac
}

rt_root()
{
	echo "$WORK/root-$1"
}

# rt_status RUNTIME ID: the status field of `state`, or "absent".
rt_status()
{
	local s
	s=$(rt "$1" state "$2" 2>/dev/null) || {
		echo absent
		return
	}
	jq -r '.status // "none"' <<<"$s" 2>/dev/null || echo badjson
}

# not_live RUNTIME ID: stopped, or no state at all
not_live()
{
	case $(rt_status "$1" "$2") in
	created | running | paused) return 1 ;;
	esac
}

status_is()
{
	[ "$(rt_status "$1" "$2")" = "$3" ]
}

# A fresh, unique container id; the token makes leftovers easy to find.
SEQ=0
new_id()
{
	SEQ=$((SEQ + 1))
	echo "$TOKEN-$1-$SEQ"
}

# ---- rootfs and bundles ---------------------------------------------------------

build_rootfs()
{
	local r=$WORK/rootfs a
	mkdir -p "$r"/{bin,sbin,etc,proc,sys,dev,tmp,root,data,mnt,scratch,home/user}
	chmod 1777 "$r/tmp"
	cp /bin/busybox "$r/bin/busybox"
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
	done
	cp "$INSIDE" "$r/bin/ursa-inside"
	chmod 0755 "$r/bin/ursa-inside" "$r/bin/busybox"
	printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n' >"$r/etc/passwd"
	printf 'root:x:0:\nuser:x:1000:\n' >"$r/etc/group"
	ROOTFS=$r
}

# mkbundle NAME JQ-FILTER [jq options...]: $WORK/bundles/NAME/config.json =
# `ursa spec` + our rootfs + the filter. Sets BUNDLE. The filter sees $rootfs,
# $work and $token as variables.
mkbundle()
{
	local name=$1 filter=$2
	shift 2
	BUNDLE=$WORK/bundles/$name
	mkdir -p "$BUNDLE"
	jq --arg rootfs "$ROOTFS" --arg work "$WORK" --arg token "$TOKEN" "$@" \
		".root.path = \$rootfs | .process.terminal = false | ($filter)" \
		"$WORK/spec.json" >"$BUNDLE/config.json" || {
		echo "mkbundle $name: jq failed" >&2
		return 1
	}
}

# jargs A B C -> ["A","B","C"]
jargs()
{
	jq -cn '$ARGS.positional' --args "$@"
}

# inside_args ARGS... -> the JSON args of a container running ursa-inside.
inside_args()
{
	jargs /bin/ursa-inside "$@"
}

# ---- running containers ----------------------------------------------------------

# run_fg RUNTIME BUNDLE ID OUT: `run` in the foreground, 30 s at most;
# stdout -> OUT, stderr -> OUT.err, exit status -> OUT.rc and returned.
run_fg()
{
	local r=$1 b=$2 id=$3 out=$4 rc
	rt_argv "$r"
	timeout -k 5 30 "${RT_ARGV[@]}" run --bundle "$b" "$id" </dev/null >"$out" 2>"$out.err"
	rc=$?
	echo "$rc" >"$out.rc"
	return "$rc"
}

# inside RUNTIME NAME JQ-FILTER ARGS...: a bundle NAME whose process is
# `ursa-inside ARGS...`, run in the foreground; the output lands in
# $WORK/out/NAME.RUNTIME (see run_fg). Sets OUT.
inside()
{
	local r=$1 name=$2 filter=$3
	shift 3
	local args
	args=$(inside_args "$@")
	mkbundle "$name.$r" "$filter | .process.args = \$args" --argjson args "$args" || return 1
	OUT=$WORK/out/$name.$r
	run_fg "$r" "$BUNDLE" "$(new_id "$name")" "$OUT"
}

# keys FILE REGEX: the key=value lines of FILE whose key matches REGEX, sorted.
keys()
{
	grep -E "^($2)=" "$1" 2>/dev/null | LC_ALL=C sort
}

# val FILE KEY: the value of KEY in FILE (first occurrence).
val()
{
	awk -v k="$2" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }' "$1" 2>/dev/null
}

# expect_val NAME FILE KEY WANT: a check that KEY in FILE is WANT.
expect_val()
{
	check "$1" eq "$3" "$(val "$2" "$3")" "$4"
}

# same NAME REGEX [FILTER...]: ursa and runc outputs of scenario NAME agree
# on the keys matching REGEX (both piped through the FILTER shell snippets,
# which drop or normalize known, harmless differences).
same()
{
	local name=$1 re=$2
	shift 2
	local filt="cat" f
	for f in "$@"; do filt="$filt | $f"; done
	[ -n "$RUNC" ] || return 0
	local a=$WORK/out/$name.ursa b=$WORK/out/$name.runc d
	if [ ! -s "$b" ]; then
		fail "$name: ursa == runc [$re]" "runc produced no output: $(head -c 500 "$b.err" 2>/dev/null)"
		return
	fi
	d=$(diff <(keys "$a" "$re" | eval "$filt") <(keys "$b" "$re" | eval "$filt"))
	if [ -z "$d" ] && [ -n "$(keys "$b" "$re")" ]; then
		ok "$name: ursa == runc [$re]"
	elif [ -z "$d" ]; then
		fail "$name: ursa == runc [$re]" "no such keys in either output"
	else
		fail "$name: ursa == runc [$re]" "< ursa   > runc" "$d"
	fi
}

# ---- cleanup ----------------------------------------------------------------------

# Everything carrying the token: containers of both runtimes, processes,
# mounts, cgroups; then the work directory.
cleanup()
{
	local r id
	trap - EXIT INT TERM
	for r in "${RUNTIMES[@]}"; do
		[ -d "$(rt_root "$r")" ] || continue
		for id in $(ls "$(rt_root "$r")" 2>/dev/null); do
			rt_argv "$r"
			timeout -k 2 10 "${RT_ARGV[@]}" delete --force "$id" >/dev/null 2>&1 || {
				timeout -k 2 10 "${RT_ARGV[@]}" kill "$id" KILL >/dev/null 2>&1
				poll 5 not_live "$r" "$id"
				timeout -k 2 10 "${RT_ARGV[@]}" delete --force "$id" >/dev/null 2>&1
			}
		done
	done
	pkill -KILL -f "$TOKEN" 2>/dev/null
	# mounts under the work dir, deepest first
	awk -v w="$WORK" '$5 ~ "^" w {print $5}' /proc/self/mountinfo | sort -r |
		while read -r m; do umount -l "$m" 2>/dev/null; done
	find /sys/fs/cgroup -maxdepth 4 -type d -name "*$TOKEN*" 2>/dev/null | sort -r |
		while read -r d; do rmdir "$d" 2>/dev/null; done
	rm -rf "/var/tmp/$TOKEN" "/etc/$TOKEN" 2>/dev/null
	if [ -n "${KEEP_WORK:-}" ]; then
		echo "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
