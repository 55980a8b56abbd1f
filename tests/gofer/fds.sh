#!/usr/bin/env bash
# tests/gofer/fds.sh — the supervisor's fd table stays small whatever a
# sandbox does on its gofer volumes (issue #8, design rule "the supervisor's
# fd table is kept <= 256 entries"; docs/gofer.md "Inodes"), and the metrics
# of many gofer volumes fit the control reply (docs/gofer.md "Metrics"):
#  1. a sandbox with a 30 000-file gofer volume stats every file
#     (ls -l + find -exec stat; the kernel keeps them referenced: the gofer's
#     inode table has them all) and keeps 150 of them open (passthrough:
#     past the 96 open files that keep an fd), then, while it waits, the
#     supervisor holds <= 256 fds, nothing failed (no EMFILE/ENFILE), and
#     `ursa metrics` shows >= 30 000 inodes, >= 150 open files and no ENFILE
#     refusals;
#  2. a sandbox with 16 (URS_GOFER_MAX) gofer volumes, each used: the
#     exposition is > 64 KiB (the old fixed reply); `ursa metrics` and
#     `ursa metric-server` (HTTP) expositions parse with the Prometheus
#     client's parser, every volume has its series, each family once.
# Sandboxes are busybox bundles under `ursa run -d` (an `ursa do` sandbox has
# no state directory, so no `ursa metrics`). Root only (exit 77 otherwise).
# N (30000) files.
set -u
URSA=${URSA:?}
. "$(dirname "$0")/../lib/skip.sh"
need_root
[ -c /dev/fuse ] || skip_or_fail "no /dev/fuse"
N=${N:-30000}
work=$(mktemp -d /tmp/ursa-gofer-fds.XXXXXX)
root=$work/state
mkdir -p "$root"
ms=
cleanup() {
	rm -f "$work"/vol*/.hold
	[ -n "$ms" ] && kill "$ms" 2>/dev/null && wait "$ms" 2>/dev/null
	"$URSA" --root "$root" delete --force gf1 >/dev/null 2>&1
	"$URSA" --root "$root" delete --force gf2 >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
check() { # NAME CONDITION-EXIT-STATUS [DETAIL]
	if [ "$2" = 0 ]; then
		passed=$((passed + 1))
		echo "ok    $1"
	else
		failed=$((failed + 1))
		echo "FAIL  $1"
		[ -n "${3:-}" ] && printf '      %s\n' "$3"
	fi
}
T="timeout -k 5 120"

# the supervisor of the `ursa do` whose pid is $1: its child holding /dev/fuse
supervisor() {
	local p f
	for p in $(pgrep -P "$1"); do
		for f in "/proc/$p/fd/"*; do readlink "$f"; done 2>/dev/null | grep -qx /dev/fuse &&
			echo "$p" && return
	done
}
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

# a busybox bundle (`ursa do` sandboxes have no state directory, so no
# `ursa metrics`): run -d, its gofer mounts given as "SRC:DEST ..."
mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/etc" "$work/rootfs/tmp" "$work/spec"
cp /bin/busybox "$work/rootfs/bin/"
for a in sh cat ls find stat wc echo seq sleep rm; do ln -s busybox "$work/rootfs/bin/$a"; done
(cd "$work/spec" && "$URSA" spec) || exit 1
bundle() { # DIR SCRIPT SRC:DEST...
	local dir=$1 script=$2 m mounts='[]'
	shift 2
	for m in "$@"; do
		mounts=$(jq -c --arg s "${m%%:*}" --arg d "${m#*:}" '. + [{"destination": $d,
			"type": "bind", "source": $s, "options": ["rbind", "rw", "ursa-gofer"]}]' \
			<<<"$mounts")
	done
	mkdir -p "$dir"
	jq --arg rootfs "$work/rootfs" --arg script "$script" --argjson m "$mounts" \
		'.root.path = $rootfs | .process.terminal = false
		| .annotations["run.ursa.network"] = "none" | .mounts += $m
		| .process.args = ["sh", "-c", $script]' \
		"$work/spec/config.json" > "$dir/config.json"
}
# the supervisor of sandbox $1: the process of its record holding /dev/fuse
# (beside the init, which is the CLI's child)
supervisor() {
	local p f
	p=$(jq -r .sup_pid "$root/$1/state.json" 2>/dev/null)
	[ -n "$p" ] && [ -d "/proc/$p" ] || return
	for f in "/proc/$p/fd/"*; do readlink "$f"; done 2>/dev/null | grep -qx /dev/fuse && echo "$p"
}
wait_file() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

# ---- 1. 30 000 files stat'ed, the supervisor's fds bounded ----
vol=$work/vol
mkdir -p "$vol"
(cd "$vol" && seq -f 'f%05g' "$N" | xargs touch)
touch "$vol/.hold"
bundle "$work/b1" 'ls -l /vol > /dev/null 2> /vol/.err; echo "ls $?" > /vol/.rc
	find /vol -name "f*" -exec stat -c %i {} + 2>> /vol/.err | wc -l > /vol/.count
	for i in $(seq 10001 10150); do sleep 1000 < /vol/f$i 2>> /vol/.err & done
	echo up > /vol/.ready
	for i in $(seq 900); do [ -e /vol/.hold ] || break; sleep 0.1; done' "$vol:/vol"
(cd "$work/b1" && $T "$URSA" --root "$root" run -d gf1 </dev/null >"$work/run1.out" 2>&1)
rc=$?
wait_file "$vol/.ready"
check "sandbox listed and stat'ed the volume (rc $rc)" $? "$(cat "$work/run1.out")"
sup=$(supervisor gf1)
nfd=$(ls "/proc/${sup:-0}/fd" 2>/dev/null | wc -l)
[ -n "$sup" ] && [ "$nfd" -gt 0 ] && [ "$nfd" -le 256 ]
check "supervisor ${sup:-?} holds $nfd fds (<= 256) with $N files looked up" $? \
	"$(ls -l "/proc/${sup:-0}/fd" 2>&1 | awk '{print $NF}' | sort | uniq -c | sort -rn | head)"
[ "$(cat "$vol/.count" 2>/dev/null)" = "$N" ] && [ "$(cat "$vol/.rc")" = "ls 0" ] &&
	[ ! -s "$vol/.err" ]
check "all $N stat'ed, ls -l succeeded, no errors ($(cat "$vol/.count" "$vol/.rc" 2>&1 | tr '\n' ' '))" \
	$? "$(head -3 "$vol/.err" 2>&1)"
! grep -qiE "too many open files|EMFILE|ENFILE" "$vol/.err"
check "no EMFILE/ENFILE" $? "$(grep -iE 'too many' "$vol/.err" | head -3)"
"$URSA" --root "$root" metrics gf1 > "$work/m1" 2>&1
out=$(/usr/bin/python3 - "$work/m1" "$N" 2>&1 <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
n = int(sys.argv[2])
v = {}
for f in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in f.samples:
        if s.labels.get("volume") == "/vol":
            v[(s.name, s.labels.get("reason"))] = s.value
ino = v.get(("ursa_gofer_inodes", None), 0)
opn = v.get(("ursa_gofer_open_files", None), 0)
assert opn >= 150, "open files %d, not >= 150" % opn
fds = v.get(("ursa_gofer_fds", None), 1e9)
ref = v.get(("ursa_gofer_refused_total", "pinned"), -1) + v.get(("ursa_gofer_refused_total", "open"), -1)
assert ino >= n, "the kernel holds %d inodes, not >= %d" % (ino, n)
assert fds <= 64 + 3, "the inode table holds %d fds" % fds
assert ref == 0, "refused %d" % ref
print("inodes %d open %d fds %d reopens %d" % (ino, opn, fds, v.get(("ursa_gofer_fd_reopens_total", None), -1)))
PY
)
check "metrics: the kernel holds >= $N inodes, 150 files open, the table few fds, no refusals ($out)" $? "$out"
rm -f "$vol/.hold"
"$URSA" --root "$root" delete --force gf1 >/dev/null 2>&1
for _ in $(seq 100); do kill -0 "${sup:-0}" 2>/dev/null || break; sleep 0.1; done
! kill -0 "${sup:-0}" 2>/dev/null
check "supervisor gone after delete" $?

# ---- 2. 16 (URS_GOFER_MAX) gofer volumes: the exposition (> 64 KiB) has them all ----
vols=()
for i in $(seq 0 15); do
	mkdir -p "$work/vol$i"
	vols+=("$work/vol$i:/v$i")
done
touch "$work/vol0/.hold"
bundle "$work/b2" 'for i in $(seq 0 15); do echo x > /v$i/f; cat /v$i/f > /dev/null; ls /v$i > /dev/null; done
	echo up > /v0/.ready
	for i in $(seq 900); do [ -e /v0/.hold ] || break; sleep 0.1; done' "${vols[@]}"
(cd "$work/b2" && $T "$URSA" --root "$root" run -d gf2 </dev/null >"$work/run2.out" 2>&1)
wait_file "$work/vol0/.ready"
check "16-volume sandbox runs" $? "$(cat "$work/run2.out")"
"$URSA" --root "$root" metrics gf2 > "$work/m2" 2> "$work/m2.err"
rc=$?
port=$((20000 + RANDOM % 20000))
"$URSA" --root "$root" metric-server --listen "127.0.0.1:$port" > /dev/null 2>&1 &
ms=$!
for _ in $(seq 50); do
	curl -sf "http://127.0.0.1:$port/metrics" -o "$work/m3" 2>/dev/null && break
	sleep 0.1
done
kill "$ms" 2>/dev/null
wait "$ms" 2>/dev/null
ms=
parse() { # FILE SANDBOX
	/usr/bin/python3 - "$1" "$2" 2>&1 <<'PY'
import collections, sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
helps = collections.Counter(l.split()[2] for l in text.splitlines() if l.startswith("# HELP "))
dup = [k for k, c in helps.items() if c > 1]
assert not dup, "families declared twice: %s" % dup
seen = collections.defaultdict(dict)
for f in text_string_to_metric_families(text):
    for s in f.samples:
        if f.name.startswith("ursa_gofer") and s.labels.get("sandbox") == sys.argv[2]:
            seen[s.labels["volume"]][(s.name, s.labels.get("op"))] = s.value
want = sorted("/v%d" % i for i in range(16))
assert sorted(seen) == want, "volumes: %s" % sorted(seen)
for v in want:
    for op in ("lookup", "create"):
        assert seen[v].get(("ursa_gofer_ops_total", op), 0) > 0, (v, op)
    assert ("ursa_gofer_fds", None) in seen[v], v
assert len(text) > 65536, "only %d bytes: the 64 KiB reply is not exercised" % len(text)
print("%d volumes, %d bytes" % (len(seen), len(text)))
PY
}
out=$(parse "$work/m2" gf2)
[ $rc = 0 ] && grep -q "^16 volumes" <<<"$out"
check "ursa metrics: 16 gofer volumes, well-formed (rc $rc; $out)" $? \
	"$out $(head -c 300 "$work/m2.err")"
out=$(parse "$work/m3" gf2)
grep -q "^16 volumes" <<<"$out"
check "metric-server: 16 gofer volumes, well-formed ($out)" $? "$out"
rm -f "$work/vol0/.hold"
"$URSA" --root "$root" delete --force gf2 >/dev/null 2>&1

echo "passed $passed, failed $failed"
[ "$failed" = 0 ]
