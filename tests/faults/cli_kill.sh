#!/usr/bin/env bash
# tests/faults/cli_kill.sh — SIGKILL of the `ursa` command, and separately
# of the sandbox's supervisor, at random points of create, run -d, start,
# exec, pause, delete, checkpoint and restore (issue #18, "Faults"):
# after each, `ursa delete --force ID` exits 0 and the host is back where it
# was — no state directory, no `ursa list` entry, no process of the sandbox
# (its args carry a token), no cgroup named after it (so none left frozen),
# no mount naming it — and a sandbox that ran before a killed exec
# or checkpoint is never left frozen (it runs on, or is gone).
#
# The kill point is random (a delay drawn from 0..MAXUS microseconds after
# the command starts); what is asserted holds for every point. TRIALS per
# case (default 20). Everything is waited on: the killed command's exit, and
# "nothing left" polled with a 20 s deadline. Prints one line per trial that
# fails, one per case, and "N passed, N failed".
set -u
URSA=${URSA:?} TRIALS=${TRIALS:-20} MAXUS=${MAXUS:-40000}
[ "$(id -u)" = 0 ] && [ -x /bin/busybox ] || {
	echo "1..0 # SKIP needs root and /bin/busybox"
	exit 77
}
work=$(mktemp -d /tmp/ursa-faults.XXXXXX)
root=$work/root
tok=flt$$
passed=0 failed=0
u() { "$URSA" --root "$root" "$@"; }
cleanup() {
	local c
	for c in $(u list -q 2>/dev/null); do u delete --force "$c" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT

b=$work/bundle
mkdir -p "$b/rootfs/bin"
cp /bin/busybox "$b/rootfs/bin/busybox"
for a in sh sleep true; do ln -s busybox "$b/rootfs/bin/$a"; done
"$URSA" spec --bundle "$b" >/dev/null
jq --arg t "$tok" '.process.terminal = false | .process.args = ["sh", "-c", "sleep 100000; : " + $t]' \
	"$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"

# kill_at_random ID CMD...: start it, SIGKILL the victim ($victim: "cli",
# the command itself, or "sup", the sandbox's supervisor — from the record,
# or the command's child ursa-sup while it creates) after a random delay,
# wait for the command.
kill_at_random() {
	local id=$1 s
	shift
	"$@" </dev/null >/dev/null 2>&1 &
	local pid=$!
	local us=$(((RANDOM * 32768 + RANDOM) % (MAXUS + 1)))
	sleep "$(printf '0.%06d' "$us")" # the kill point, drawn at random: not a wait
	if [ "$victim" = cli ]; then
		kill -KILL "$pid" 2>/dev/null
	else
		s=$(jq -r '.sup_pid // empty' "$root/$id/state.json" 2>/dev/null)
		[ -n "$s" ] || s=$(pgrep -P "$pid" -x ursa-sup | head -1)
		[ -n "$s" ] && kill -KILL "$s" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
}

sandbox_procs() { pgrep -f -- "sleep 100000; : $tok-$1\$"; }
leftovers() { # ID: what is left of it, empty if nothing
	local id=$1
	[ -e "$root/$id" ] && echo "state dir"
	u list 2>/dev/null | grep -qw -- "$id" && echo "list entry"
	[ -n "$(sandbox_procs "$id")" ] && echo "processes $(sandbox_procs "$id" | tr '\n' ' ')"
	[ -n "$(find /sys/fs/cgroup -maxdepth 7 -type d -name "$id" 2>/dev/null | head -1)" ] &&
		echo "cgroups $(find /sys/fs/cgroup -maxdepth 7 -type d -name "$id" | head -3 | tr '\n' ' ')"
	grep -qF -- "$id" /proc/self/mountinfo && echo "mounts"
}
gone() { [ -z "$(leftovers "$1")" ]; }
# the workload runs (exec'd: before that the init is ursa's, which a
# checkpoint rightly refuses): polled, 20 s
workload() {
	local i
	for i in $(seq 2000); do [ -n "$(sandbox_procs "$1")" ] && return 0; sleep 0.01; done
	return 1
}
wait_gone() { # ID: poll up to 20 s
	local i
	for i in $(seq 2000); do gone "$1" && return 0; sleep 0.01; done
	gone "$1"
}
running() { [ "$(u state "$1" 2>/dev/null | jq -r .status)" = running ]; }
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" # frozen
bundle_for() { # ID: the bundle with the sandbox's token
	local d=$work/b-$1
	mkdir -p "$d"
	ln -sfn "$b/rootfs" "$d/rootfs"
	jq --arg t "$tok-$1" '.process.args = ["sh", "-c", "sleep 100000; : " + $t]' "$b/config.json" >"$d/config.json"
	echo "$d"
}

# trial CASE N: one kill during the command CASE is about; 0 if the host came back
trial() {
	local c=$1 id="$tok-$victim-$1-$2" bd why=""
	bd=$(bundle_for "$id")
	case $c in
	create) kill_at_random "$id" "$URSA" --root "$root" create --bundle "$bd" "$id" ;;
	run) kill_at_random "$id" "$URSA" --root "$root" run -d --bundle "$bd" "$id" ;;
	restore)
		u run -d --bundle "$bd" "$id" </dev/null >/dev/null 2>&1 || why="run failed"
		workload "$id" || why="the workload never ran"
		u checkpoint --image-path "$work/img-$id" "$id" >/dev/null 2>"$work/ck.err" ||
			why="checkpoint failed: $(cat "$work/ck.err")"
		kill_at_random "$id" "$URSA" --root "$root" restore -d --bundle "$bd" \
			--image-path "$work/img-$id" "$id"
		rm -rf "$work/img-$id"
		;;
	start | exec | pause | delete | checkpoint)
		u create --bundle "$bd" "$id" </dev/null >/dev/null 2>&1 || why="create failed"
		[ "$c" = start ] || u start "$id" >/dev/null 2>&1 || why="start failed"
		[ "$c" = start ] || workload "$id" || why="the workload never ran"
		case $c in
		start) kill_at_random "$id" "$URSA" --root "$root" start "$id" ;;
		exec) # `ursa exec` waits for its process: detached when the supervisor is the victim
			kill_at_random "$id" "$URSA" --root "$root" exec $([ $victim = sup ] && echo --detach) \
				"$id" /bin/sh -c "sleep 100000; : $tok-$id" ;;
		pause) kill_at_random "$id" "$URSA" --root "$root" pause "$id" ;;
		delete) kill_at_random "$id" "$URSA" --root "$root" delete --force "$id" ;;
		checkpoint)
			kill_at_random "$id" "$URSA" --root "$root" checkpoint --image-path "$work/img-$id" "$id" ;;
		esac
		case $c in
		exec | checkpoint) # the sandbox runs on, or is gone: never left frozen
			# (the supervisor thaws when the command's guard closes: polled)
			local i
			for i in $(seq 2000); do [ -e "$root/$id" ] && frozen "$id" || break; sleep 0.01; done
			if [ -e "$root/$id" ] && frozen "$id"; then
				local sp
				sp=$(jq -r '.sup_pid // empty' "$root/$id/state.json" 2>/dev/null)
				why="frozen after a killed $c (supervisor ${sp:-?} $([ -n "$sp" ] && [ -d "/proc/$sp" ] && echo alive || echo gone); $(frozen_where "$id"))"
			fi ;;
		esac
		rm -rf "$work/img-$id"
		;;
	esac
	u delete --force "$id" >"$work/del.err" 2>&1 || why="${why:+$why; }delete --force failed: $(cat "$work/del.err")"
	wait_gone "$id" || why="${why:+$why; }left: $(leftovers "$id" | tr '\n' ',')"
	[ -z "$why" ] && return 0
	echo "  $c trial $2: $why"
	return 1
}

# SOAK=N (bench/faults/run): N trials, each of a victim and a case drawn at
# random, then the matrix (victim x case: trials, left something)
if [ -n "${SOAK:-}" ]; then
	declare -A tot=() bad=()
	victims=(${VICTIMS:-cli sup}) cases=(${CASES:-create run start exec pause delete checkpoint restore})
	t0=$SECONDS
	for n in $(seq "$SOAK"); do
		victim=${victims[RANDOM % ${#victims[@]}]} c=${cases[RANDOM % ${#cases[@]}]}
		k="$victim $c"
		tot[$k]=$((${tot[$k]:-0} + 1))
		trial "$c" "s$n" || bad[$k]=$((${bad[$k]:-0} + 1))
	done
	echo "# $SOAK random trials in $((SECONDS - t0)) s (kill points 0..$MAXUS us)"
	echo "# victim      case        trials  left something"
	for k in $(printf '%s\n' "${!tot[@]}" | tr ' ' ':' | sort); do
		k=${k/:/ }
		printf '# %-11s %-11s %6d  %d\n' ${k% *} ${k#* } "${tot[$k]}" "${bad[$k]:-0}"
		if [ "${bad[$k]:-0}" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	done
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
	exit
fi

for victim in ${VICTIMS:-cli sup}; do
	for c in ${CASES:-create run start exec pause delete checkpoint restore}; do
		bad=0 t0=$SECONDS
		for n in $(seq "$TRIALS"); do trial "$c" "$n" || bad=$((bad + 1)); done
		what="SIGKILL of the $([ $victim = cli ] && echo "ursa command" || echo supervisor) during ursa $c"
		echo "# $victim $c: $TRIALS trials in $((SECONDS - t0)) s"
		if [ "$bad" = 0 ]; then
			passed=$((passed + 1))
			echo "ok    $what at random points: $TRIALS of $TRIALS left nothing behind"
		else
			failed=$((failed + 1))
			echo "FAIL  $what at random points: $bad of $TRIALS left something"
		fi
	done
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
