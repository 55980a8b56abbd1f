#!/usr/bin/env bash
# tests/gofer/wiring.sh — gofer volumes wired into real sandboxes (issue #8,
# docs/gofer.md "Wiring"): `ursa do -v HOST:DEST[:ro]:gofer` and a bundle
# bind mount with the "ursa-gofer" option under `ursa run`. Checks that the
# volume works both ways (sandbox <-> host), that :ro:gofer refuses writes
# with EROFS, that the mount is fuse nosuid,nodev, that /dev/fuse never
# reaches the workload, that a symlink planted on the host resolves in the
# sandbox's root (never the host's), that specs the init could not serve
# before READY are refused instead of hanging, and that nothing (mount,
# connection, process) is left behind. Root only (exit 77 otherwise).
set -u
URSA=${URSA:?}
. "$(dirname "$0")/../lib/skip.sh"
need_root
[ -c /dev/fuse ] || skip_or_fail "no /dev/fuse"
work=$(mktemp -d /tmp/ursa-gofer-wiring.XXXXXX)
root=$work/state
cleanup() {
	"$URSA" --root "$root" delete --force gw1 >/dev/null 2>&1
	"$URSA" --root "$root" delete --force gw2 >/dev/null 2>&1
	"$URSA" --root "$root" delete --force gm1 >/dev/null 2>&1
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
udo() { $T "$URSA" "do" "$@"; } # ursa do, bounded

# ---- ursa do, read-write ----
vol=$work/vol
mkdir -p "$vol/sub"
echo "from the host" > "$vol/hostfile"
echo "host secret" > "$work/secret"       # outside the volume, in /tmp (absent inside)
ln -s /etc/shadow "$vol/shadow-link"       # absolute, to a host file
ln -s "$work/secret" "$vol/secret-link"    # absolute, to a file only the host has
ln -s ../../../../../../etc/shadow "$vol/rel-link"
out=$(udo --network none -v "$vol:/vol:gofer" -- sh -c '
	set -e
	cat /vol/hostfile
	echo created > /vol/new
	printf "%s" "written twice" > /vol/w; printf " more" >> /vol/w
	cat /vol/w; echo
	mkdir /vol/d; echo inner > /vol/d/f
	mv /vol/new /vol/renamed
	ls /vol | tr "\n" " "; echo
	rm /vol/sub -r; echo gone > /vol/del; rm /vol/del
	echo "ENTRIES $(ls -a /vol | wc -l)"
' 2>&1)
rc=$?
check "do: volume read/write/list/rename/delete (rc $rc)" $rc "$out"
grep -q "from the host" <<<"$out"
check "do: a host file is read through the volume" $? "$out"
grep -q "written twice more" <<<"$out"
check "do: write + append read back inside" $? "$out"
[ "$(cat "$vol/renamed" 2>/dev/null)" = created ] && [ ! -e "$vol/new" ]
check "do: create + rename show on the host" $?
[ "$(cat "$vol/w" 2>/dev/null)" = "written twice more" ]
check "do: written data is on the host" $?
[ "$(cat "$vol/d/f" 2>/dev/null)" = inner ] && [ ! -e "$vol/sub" ] && [ ! -e "$vol/del" ]
check "do: mkdir/rmdir/unlink show on the host" $?
grep -q "d hostfile.*renamed.*w" <<<"$out"
check "do: listing inside matches" $? "$out"

# ---- the mount itself, fds, devices ----
out=$(udo --network none -v "$vol:/vol:gofer" -- sh -c '
	grep " /vol " /proc/mounts
	for d in /proc/[0-9]*/fd/*; do readlink "$d"; done 2>/dev/null | grep -c fuse
	ls -l /proc/self/fd
	test -e /dev/fuse && echo DEVFUSE-PRESENT
	true
' 2>&1)
line=$(grep " /vol " <<<"$out")
grep -q "^ursa-gofer /vol fuse.ursa-gofer rw,nosuid,nodev" <<<"$line"
check "do: /vol is a fuse.ursa-gofer mount, nosuid,nodev" $? "$out"
grep -qx 0 <<<"$out"
check "do: no process in the sandbox holds a fuse fd" $? "$out"
! grep -q "fuse" <<<"$(grep -- '->' <<<"$out")"
check "do: /proc/self/fd of the workload shows no /dev/fuse" $? "$out"
! grep -q DEVFUSE-PRESENT <<<"$out"
check "do: no /dev/fuse node in the sandbox" $? "$out"

# ---- symlinks planted on the host resolve in the sandbox's root ----
out=$(udo --network none -v "$vol:/vol:gofer" -- sh -c '
	echo "L1 $(readlink /vol/shadow-link)"
	echo "sandbox-shadow" > /etc/shadow   # the overlay root: a sandbox-own copy
	echo "C1 $(cat /vol/shadow-link 2>&1)"
	echo "C2 $(cat /vol/rel-link 2>&1)"
	echo "C3 $(cat /vol/secret-link 2>&1)"
	echo "P1 $(cd /vol/.. && pwd) $(ls /vol/.. | grep -c bin)"
' 2>&1)
grep -qx "L1 /etc/shadow" <<<"$out"
check "do: a planted symlink is served as a symlink (readlink)" $? "$out"
grep -qx "C1 sandbox-shadow" <<<"$out" && grep -qx "C2 sandbox-shadow" <<<"$out"
check "do: following it reads the sandbox's /etc/shadow, not the host's" $? "$out"
grep -q "^C3 .*No such file" <<<"$out" && ! grep -q "host secret" <<<"$out"
check "do: a link to a host-only file is absent inside" $? "$out"
[ "$(head -c 14 /etc/shadow)" != "sandbox-shadow" ]
check "do: the host's /etc/shadow is untouched" $?

# ---- read-only ----
ro=$work/ro
mkdir -p "$ro"
echo "read me" > "$ro/f"
out=$(udo --network none -v "$ro:/vol:ro:gofer" -- sh -c '
	cat /vol/f
	busybox touch /vol/x 2>&1; echo "touch=$?"
	echo y 2>&1 > /vol/f; echo "write=$?"
	mkdir /vol/dd 2>&1; echo "mkdir=$?"
	grep " /vol " /proc/mounts
' 2>&1)
grep -q "read me" <<<"$out"
check "do: :ro:gofer reads" $? "$out"
grep -q "Read-only file system" <<<"$out" && grep -q "touch=1" <<<"$out" &&
	! grep -q "write=0" <<<"$out" && grep -q "mkdir=1" <<<"$out"
check "do: :ro:gofer refuses writes with EROFS" $? "$out"
[ ! -e "$ro/x" ] && [ ! -e "$ro/dd" ] && [ "$(cat "$ro/f")" = "read me" ]
check "do: the read-only host directory is unchanged" $?
grep -q "fuse.ursa-gofer ro,nosuid,nodev" <<<"$out"
check "do: the read-only volume is mounted ro" $? "$out"

# ---- refused instead of hanging (the init cannot enter a volume before READY) ----
out=$(udo --network none --cwd /vol/d -v "$vol:/vol:gofer" -- true 2>&1)
rc=$?
[ $rc = 125 ] && grep -q "inside the \"ursa-gofer\" volume" <<<"$out"
check "do: --cwd inside a gofer volume is refused (rc $rc)" $? "$out"
out=$(udo --network none -v "$vol:/vol:gofer" -v "$ro:/vol/x" -- true 2>&1)
rc=$?
[ $rc = 125 ] && grep -q "beneath the \"ursa-gofer\" volume" <<<"$out"
check "do: a mount beneath a gofer volume is refused (rc $rc)" $? "$out"
out=$(udo --network none -v "$vol:/vol:gofer" -- /tmp/../vol/./d/f 2>&1)
rc=$?
[ $rc = 125 ] && grep -q "args\[0\] .* is inside the \"ursa-gofer\" volume" <<<"$out"
check "do: an absolute args[0] inside the volume is refused (rc $rc)" $? "$out"
out=$(udo --network none --cwd /tmp -v "$vol:/vol:gofer" -- ../vol/d/f 2>&1)
rc=$?
[ $rc = 125 ] && grep -q "args\[0\] .* is inside the \"ursa-gofer\" volume" <<<"$out"
check "do: a relative args[0] reaching the volume is refused (rc $rc)" $? "$out"
out=$(udo --network none -e PATH=/vol/bin:/bin -v "$vol:/vol:gofer" -- true 2>&1)
rc=$?
[ $rc = 125 ] && grep -q "PATH entry /vol/bin is inside" <<<"$out"
check "do: a PATH entry inside the volume is refused (rc $rc)" $? "$out"
out=$(udo --network none -v "$vol:/:gofer" -- true 2>&1)
rc=$?
[ $rc = 125 ] && grep -q "ursa-gofer" <<<"$out"
check "do: a gofer volume on / is refused (rc $rc)" $? "$out"
out=$(udo --network none -v "$vol:/vol:bogus" -- true 2>&1)
[ $? = 125 ] && grep -q "unknown mode" <<<"$out"
check "do: unknown volume modes are refused" $? "$out"
out=$(cd "$vol/d" && udo --network none -v "$vol:$vol:gofer" -- sh -c 'pwd; cat '"$vol"'/d/f' 2>&1)
rc=$?
grep -qx / <<<"$(head -1 <<<"$out")" && grep -q inner <<<"$out"
check "do: a default cwd inside the volume falls back to / (rc $rc)" $? "$out"

# ---- quotas: -v HOST:DEST:gofer:quota=SIZE:inodes=N ----
qvol=$work/qvol
mkdir -p "$qvol"
out=$(udo --network none -v "$qvol:/vol:gofer:quota=1M:inodes=8" -- sh -c '
	df -k /vol | tail -1
	head -c 3145728 /dev/zero > /vol/big; echo "big rc $?"
	for i in 1 2 3 4 5 6 7 8 9; do touch /vol/n$i 2>/dev/null || { echo "touch $i failed"; break; }; done
' 2>&1)
rc=$?
bsz=$(stat -c %s "$qvol/big" 2>/dev/null || echo none)
grep -Eq "^ursa-gofer +1024 " <<<"$out" && grep -q "big rc 1" <<<"$out" &&
	grep -q "Disk quota exceeded" <<<"$out" && [ "$bsz" != none ] && [ "$bsz" -le 1048576 ] &&
	grep -q "touch 8 failed" <<<"$out" && [ "$(ls "$qvol" | wc -l)" = 8 ]
check "do: quota=1M:inodes=8 (df shows 1024 KiB; a 3 MiB write fails with EDQUOT, $bsz bytes on the host; the 9th inode fails) (rc $rc)" $? "$out"
out=$(udo --network none -v "$qvol:/vol:quota=1M" -- true 2>&1)
[ $? = 125 ] && grep -q "unknown mode" <<<"$out"
check "do: quota= without gofer is refused" $? "$out"

# ---- nothing left behind ----
touch "$vol/.hold" # the sandbox stays up until the host removes it (60 s at most)
$T "$URSA" "do" --network none -v "$vol:/vol:gofer" -- sh -c \
	'stat -c %d /vol > /vol/.dev; echo up > /vol/.ready
	for i in $(seq 600); do [ -e /vol/.hold ] || break; sleep 0.1; done' &
do_pid=$!
for _ in $(seq 300); do [ -e "$vol/.ready" ] && break; sleep 0.1; done
cli=$(pgrep -P $do_pid | head -1) # timeout -> ursa do -> supervisor, init
# the supervisor: the child of `ursa do` holding /dev/fuse (not "the first child":
# under load the CLI may still have a short-lived helper child)
sup=
for p in ${cli:+$(pgrep -P "$cli")}; do
	for f in "/proc/$p/fd/"*; do readlink "$f"; done 2>/dev/null | grep -qx /dev/fuse && sup=$p
done
# the init: the CLI's other child (the supervisor clones it with CLONE_PARENT)
init=
for p in ${sup:+$(pgrep -P "$cli")}; do [ "$p" != "$sup" ] && init=$p; done
dev=$(cat "$vol/.dev" 2>/dev/null)
# FUSE connections, seen through a fusectl mounted in a private namespace
conns() { unshare -m sh -c 'mount -t fusectl fusectl /sys/fs/fuse/connections &&
	ls /sys/fs/fuse/connections'; }
[ -n "$sup" ] && [ -n "$init" ] && [ -n "$dev" ] && conns | grep -qx "$dev"
check "do: while running: supervisor $sup (holds /dev/fuse), init $init, connection $dev" $? \
	"$(ps -o pid,ppid,args --ppid "${cli:-1}" 2>&1; conns 2>&1)"
rm -f "$vol/.hold"
wait $do_pid
rc=$?
check "do: the sandbox exits cleanly (rc $rc)" $rc
gone=0
for p in $sup $init; do kill -0 "$p" 2>/dev/null && gone=1; done
check "do: supervisor and init are gone" $gone
[ -n "$dev" ] && ! conns | grep -qx "$dev"
check "do: the fuse connection is gone" $?
! grep -q "fuse.ursa-gofer" /proc/self/mountinfo
check "do: no gofer mount on the host" $?

# ---- a bundle with an "ursa-gofer" bind mount under ursa run ----
bvol=$work/bvol
mkdir -p "$bvol" "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/etc" "$work/b"
echo "bundle host file" > "$bvol/f"
ln -s /etc/shadow "$bvol/shadow-link"
cp /bin/busybox "$work/rootfs/bin/"
for a in sh cat ls mv rm echo touch grep readlink mkdir wc tr; do
	ln -s busybox "$work/rootfs/bin/$a"
done
(cd "$work/b" && "$URSA" spec) || exit 1
jq --arg rootfs "$work/rootfs" --arg src "$bvol" '.root.path = $rootfs | .process.terminal = false
	| .annotations["run.ursa.network"] = "none"
	| .mounts += [{"destination": "/vol", "type": "bind", "source": $src,
	               "options": ["rbind", "rw", "ursa-gofer"]}]
	| .process.args = ["sh", "-c", "cat /vol/f; echo in-bundle > /vol/new; mv /vol/new /vol/moved; ls /vol | tr \"\\n\" \" \"; echo; readlink /vol/shadow-link; cat /vol/shadow-link 2>&1; grep \" /vol \" /proc/mounts; ls -l /proc/self/fd"]' \
	"$work/b/config.json" > "$work/b/c" && mv "$work/b/c" "$work/b/config.json"
out=$(cd "$work/b" && $T "$URSA" --root "$root" run gw1 2>&1)
rc=$?
check "run: bundle with an ursa-gofer mount runs (rc $rc)" $rc "$out"
grep -q "bundle host file" <<<"$out" && [ "$(cat "$bvol/moved" 2>/dev/null)" = in-bundle ] &&
	[ ! -e "$bvol/new" ]
check "run: read, create and rename through the volume" $? "$out"
grep -q "^ursa-gofer /vol fuse.ursa-gofer rw,nosuid,nodev" <<<"$out"
check "run: /vol is a fuse.ursa-gofer mount, nosuid,nodev" $? "$out"
grep -qx "/etc/shadow" <<<"$out" && grep -q "cat: can't open '/vol/shadow-link': No such file" <<<"$out"
check "run: a symlink to /etc/shadow is a link, absent in the bundle's root" $? "$out"
! grep -- '->' <<<"$out" | grep -q fuse
check "run: no /dev/fuse fd in the workload" $? "$out"
"$URSA" --root "$root" delete --force gw1 >/dev/null 2>&1
# create, then start later: the volume is served from READY on
jq '.process.args = ["sh", "-c", "cat /vol/f > /vol/copy; echo done > /vol/started"]' \
	"$work/b/config.json" > "$work/b/c2"
mkdir -p "$work/b2" && mv "$work/b/c2" "$work/b2/config.json"
(cd "$work/b2" && $T "$URSA" --root "$root" create gw2 </dev/null >/dev/null 2>&1)
rc=$?
# a created sandbox waits for start: its init has not exec'd the workload
# (busybox's sh)
st=$($T "$URSA" --root "$root" state gw2 2>/dev/null | jq -r '.status + " " + (.pid | tostring)')
exe=$(readlink "/proc/${st#* }/exe" 2>&1)
st="${st% *}, init: $exe"
[ $rc = 0 ] && [[ $st == "created, init: "* ]] && [[ $exe != *busybox* ]] && [ ! -e "$bvol/started" ] &&
	$T "$URSA" --root "$root" start gw2
rc2=$?
for _ in $(seq 300); do [ -e "$bvol/started" ] && break; sleep 0.1; done
[ $rc = 0 ] && [ $rc2 = 0 ] && [ "$(cat "$bvol/copy" 2>/dev/null)" = "bundle host file" ]
check "create + start: the volume works after a separate start (rc $rc/$rc2, $st)" $?
"$URSA" --root "$root" delete --force gw2 >/dev/null 2>&1
# per-volume metrics: after some use, `ursa metrics` has ursa_gofer_* series
# for volume="/vol" with non-zero op counts (parsed with the Prometheus
# client's parser, as tests/integration/metrics.sh)
jq '.process.args = ["sh", "-c", "for i in 1 2 3; do echo x$i > /vol/m$i; cat /vol/m$i; done; rm /vol/m1; ls /vol > /dev/null; echo up > /vol/metrics-ready; exec busybox sleep 1000"]' \
	"$work/b/config.json" > "$work/b/c3"
mkdir -p "$work/b3" && mv "$work/b/c3" "$work/b3/config.json"
(cd "$work/b3" && $T "$URSA" --root "$root" run -d gm1 </dev/null >/dev/null 2>&1)
rc=$?
for _ in $(seq 300); do [ -e "$bvol/metrics-ready" ] && break; sleep 0.1; done
"$URSA" --root "$root" metrics gm1 > "$work/metrics" 2>&1
"$URSA" --root "$root" delete --force gm1 >/dev/null 2>&1
out=$(/usr/bin/python3 - "$work/metrics" 2>&1 <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
def samples(name, suffix=""):
    fam = fams.get(name) or fams.get(name[:-len("_total")] if name.endswith("_total") else "")
    return [s for s in fam.samples if s.name == name + suffix] if fam else []
ops = {s.labels["op"]: s.value for s in samples("ursa_gofer_ops_total")
       if s.labels.get("volume") == "/vol" and s.labels.get("sandbox") == "gm1"}
assert ops, "no ursa_gofer_ops_total for volume /vol: %s" % sorted(fams)
for op in ("init", "lookup", "create", "unlink"):
    assert ops.get(op, 0) > 0, "op %s: %s" % (op, ops)
n = [s.value for s in samples("ursa_gofer_request_duration_nanoseconds", "_count")]
assert n and n[0] >= sum(ops.values()) - ops.get("forget", 0) - ops.get("interrupt", 0), (n, ops)
inf = [s.value for s in samples("ursa_gofer_request_duration_nanoseconds", "_bucket")
       if s.labels.get("le") == "+Inf"]
assert inf == n, (inf, n)
assert len(samples("ursa_gofer_bytes_total")) == 2 and samples("ursa_gofer_errors_total")
assert fams["ursa_gofer_passthrough"].samples, "no passthrough gauge"
print("ops", {k: int(v) for k, v in ops.items() if v})
PY
)
[ $rc = 0 ] && [ -e "$bvol/metrics-ready" ] && grep -q "^ops " <<<"$out"
check "metrics: ursa_gofer_* series for volume /vol with op counts (rc $rc)" $? "$out"
jq '(.mounts[] | select(.destination == "/vol")) |= (.type = "tmpfs" | .options = ["ursa-gofer"])' \
	"$work/b/config.json" > "$work/b/c" && mv "$work/b/c" "$work/b/config.json"
out=$(cd "$work/b" && $T "$URSA" --root "$root" run gw1 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "only valid on a bind mount" <<<"$out"
check "run: ursa-gofer on a non-bind mount is refused (rc $rc)" $? "$out"
jq '.linux.namespaces += [{"type": "user"}]
	| .linux.uidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]
	| .linux.gidMappings = [{"containerID": 0, "hostID": 0, "size": 65536}]
	| (.mounts[] | select(.destination == "/vol")) |= (.type = "bind" | .options = ["ursa-gofer"])' \
	"$work/b/config.json" > "$work/b/c" && mv "$work/b/c" "$work/b/config.json"
out=$(cd "$work/b" && $T "$URSA" --root "$root" run gw1 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "in a user namespace are not supported" <<<"$out"
check "run: ursa-gofer with a user namespace is refused, not half-mounted (rc $rc)" $? "$out"
! grep -q "fuse.ursa-gofer" /proc/self/mountinfo
check "run: no gofer mount left on the host" $?

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
