#!/usr/bin/env bash
# tests/integration/seccomp_count.sh — counted seccomp denials end to end:
# a sandbox calls denied syscalls a known number of times (the static probe
# tests/integration/seccomp_probe.c) and `ursa metrics ID` shows exactly that
# many per syscall, the workload sees the profile's errno (EPERM by default,
# a rule's errnoRet otherwise), allowed syscalls are untouched; with
# URSA_SECCOMP_COUNT=0 the same profile denies the same way and nothing is
# counted; `ursa do`'s build-time counting program answers like the plain
# one. Also `ursa --profile`: the ursa_profile_* families exist with it
# and not without. Metrics are read with python3-prometheus-client's parser.
set -u
URSA=${URSA:?}
PROBE=${PROBE:?}
work=$(mktemp -d /tmp/ursa-sccount.XXXXXX)
root=$work/root
ids="c1 c2 c3 c4"
cleanup() {
	for id in $ids; do "$URSA" --root "$root" delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT
pass=0 fail=0
ok() { echo "ok    $1"; pass=$((pass + 1)); }
bad() { echo "FAIL  $1"; echo "      $2"; fail=$((fail + 1)); }
check() { # name, condition result (0 = ok), detail
	if [ "$2" = 0 ]; then ok "$1"; else bad "$1" "$3"; fi
}

mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" "$work/b"
cp /bin/busybox "$work/rootfs/bin/" && for x in sh sleep; do ln -s busybox "$work/rootfs/bin/$x"; done
cp "$PROBE" "$work/rootfs/probe"
(cd "$work/b" && "$URSA" spec) || exit 1

# every native syscall name libseccomp knows, but the ones we want denied
/usr/bin/python3 - > "$work/allow.json" <<'PY'
import ctypes, json
lib = ctypes.CDLL("libseccomp.so.2")
f = lib.seccomp_syscall_resolve_num_arch
f.restype = ctypes.c_void_p
f.argtypes = [ctypes.c_uint32, ctypes.c_int]
names = [ctypes.string_at(p).decode() for p in (f(0, nr) for nr in range(512)) if p]
print(json.dumps([n for n in names if n not in ("sysfs", "ustat", "acct")]))
PY

# nr: sysfs 139 (denied by the default, EPERM), ustat 136 (errnoRet ENOTTY),
# getppid 110 (allowed). N differ so a mix-up shows.
N1=37 N2=23 N3=11
script="/probe call 139 $N1; /probe call 136 $N2; /probe call 110 $N3; echo done; exec sleep 1000"
bundle() { # profile-json
	jq --arg rootfs "$work/rootfs" --arg script "$script" --argjson sc "$1" '
		.root.path = $rootfs | .process.terminal = false
		| .process.args = ["sh", "-c", $script] | .linux.seccomp = $sc' \
		"$work/b/config.json" > "$work/b/c" && mv "$work/b/c" "$work/b/config.json"
}
deny_default=$(jq -n --slurpfile allow "$work/allow.json" '{defaultAction: "SCMP_ACT_ERRNO",
	architectures: ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
	syscalls: [{names: $allow[0], action: "SCMP_ACT_ALLOW"},
		{names: ["ustat"], action: "SCMP_ACT_ERRNO", errnoRet: 25}]}')
allow_default='{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
	{"names": ["sysfs"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13},
	{"names": ["ustat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 25}]}'

start() { # id, extra ursa args...
	local id=$1
	shift
	(cd "$work/b" && timeout 30 "$URSA" --root "$root" "$@" run -d "$id" > "$work/$id.out" 2>&1) ||
		{ bad "$id: run" "$(cat "$work/$id.out")"; return 1; }
	for _ in $(seq 200); do grep -q '^done' "$work/$id.out" && return 0; sleep 0.05; done
	bad "$id: the probe finished" "$(cat "$work/$id.out")"
	return 1
}
metric() { # file, name, labels (k=v,...) -> value or "absent"
	/usr/bin/python3 - "$@" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
path, name, want = sys.argv[1], sys.argv[2], dict(kv.split("=", 1) for kv in sys.argv[3].split(",") if kv)
for fam in text_string_to_metric_families(open(path).read()):
    for s in fam.samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in want.items()):
            print(int(s.value)); sys.exit(0)
print("absent")
PY
}
family() { # file, family name -> yes/no
	/usr/bin/python3 - "$@" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name for f in text_string_to_metric_families(open(sys.argv[1]).read())}
name = sys.argv[2]
print("yes" if name in fams or name.removesuffix("_total") in fams else "no")
PY
}

# 1. default ERRNO (EPERM), an errnoRet rule, an allowed syscall; --profile
bundle "$deny_default"
if start c1 --profile; then
	out=$(cat "$work/c1.out")
	echo "$out" | grep -q "^nr=139 calls=$N1 ok=0 errno=1:$N1\$"
	check "c1: the default's EPERM reached the workload ($N1 times)" $? "$out"
	echo "$out" | grep -q "^nr=136 calls=$N2 ok=0 errno=25:$N2\$"
	check "c1: the rule's errnoRet ENOTTY reached the workload" $? "$out"
	echo "$out" | grep -q "^nr=110 calls=$N3 ok=$N3\$"
	check "c1: allowed getppid works" $? "$out"
	"$URSA" --root "$root" metrics c1 > "$work/m1" 2>&1
	v=$(metric "$work/m1" ursa_seccomp_denied_total "syscall=sysfs,sandbox=c1")
	check "c1: ursa_seccomp_denied_total{syscall=sysfs} = $N1" "$([ "$v" = "$N1" ]; echo $?)" "got $v"
	v=$(metric "$work/m1" ursa_seccomp_denied_total "syscall=ustat")
	check "c1: ursa_seccomp_denied_total{syscall=ustat} = $N2" "$([ "$v" = "$N2" ]; echo $?)" "got $v"
	v=$(metric "$work/m1" ursa_seccomp_denied_total "syscall=getppid")
	check "c1: getppid is not counted" "$([ "$v" = absent ]; echo $?)" "got $v"
	v=$(metric "$work/m1" ursa_seccomp_notify_errors_total "")
	check "c1: no notification errors" "$([ "$v" = 0 ]; echo $?)" "got $v"
	# the workload again, in the running sandbox: counts add up
	"$URSA" --root "$root" exec c1 /probe call 139 5 > "$work/c1.exec" 2>&1
	"$URSA" --root "$root" metrics c1 > "$work/m1b" 2>&1
	v=$(metric "$work/m1b" ursa_seccomp_denied_total "syscall=sysfs")
	# `ursa exec` processes get their own (ERRNO) filter: denied, not counted
	grep -q "errno=1:5" "$work/c1.exec" && [ "$v" = "$N1" ]
	check "c1: exec'd processes are denied by their own filter, not counted" $? \
		"exec: $(cat "$work/c1.exec"), count $v"
	for f in calls_total nanoseconds_total max_nanoseconds heap_growths_total heap_grown_bytes_total; do
		[ "$(family "$work/m1" "ursa_profile_handler_$f")" = yes ] ||
			{ bad "c1: --profile exposes ursa_profile_handler_$f" "$(grep profile "$work/m1" | head)"; continue; }
	done
	v=$(metric "$work/m1" ursa_profile_handler_calls_total "handler=control")
	check "c1: --profile has a \"control\" handler series" "$([ "$v" != absent ]; echo $?)" "got $v"
	# op callbacks are measured: the loop dispatches through urs_op_dispatch()
	v=$(metric "$work/m1b" ursa_profile_handler_calls_total "handler=seccomp")
	check "c1: --profile counted the seccomp handler (>= $N1 + $N2 calls)" \
		"$([ "$v" != absent ] && [ "$v" -ge $((N1 + N2)) ]; echo $?)" "got $v"
fi

# 2. default ALLOW, errnoRet rules; no --profile
bundle "$allow_default"
if start c2; then
	out=$(cat "$work/c2.out")
	echo "$out" | grep -q "^nr=139 calls=$N1 ok=0 errno=13:$N1\$" &&
		echo "$out" | grep -q "^nr=136 calls=$N2 ok=0 errno=25:$N2\$" &&
		echo "$out" | grep -q "^nr=110 calls=$N3 ok=$N3\$"
	check "c2: errnoRet EACCES / ENOTTY reached the workload, getppid works" $? "$out"
	"$URSA" --root "$root" metrics c2 > "$work/m2" 2>&1
	v=$(metric "$work/m2" ursa_seccomp_denied_total "syscall=sysfs"):$(metric "$work/m2" ursa_seccomp_denied_total "syscall=ustat")
	check "c2: counted $N1 sysfs, $N2 ustat" "$([ "$v" = "$N1:$N2" ]; echo $?)" "got $v"
	v=$(family "$work/m2" ursa_profile_handler_calls_total)
	check "c2: no ursa_profile_* without --profile" "$([ "$v" = no ]; echo $?)" "$(grep profile "$work/m2" | head -3)"
fi

# 3. counting off: the same denials, nothing counted
bundle "$deny_default"
if URSA_SECCOMP_COUNT=0 start c3; then
	out=$(cat "$work/c3.out")
	echo "$out" | grep -q "^nr=139 calls=$N1 ok=0 errno=1:$N1\$" &&
		echo "$out" | grep -q "^nr=136 calls=$N2 ok=0 errno=25:$N2\$" &&
		echo "$out" | grep -q "^nr=110 calls=$N3 ok=$N3\$"
	check "c3: URSA_SECCOMP_COUNT=0: the same errnos" $? "$out"
	"$URSA" --root "$root" metrics c3 > "$work/m3" 2>&1
	v=$(family "$work/m3" ursa_seccomp_denied_total)
	check "c3: URSA_SECCOMP_COUNT=0: no ursa_seccomp_denied_total" "$([ "$v" = no ]; echo $?)" "$(head -c 300 "$work/m3")"
fi

# 4. a workload walking the syscall table cannot grow the scrape without
# bound: at most 64 syscalls get a series of their own, the rest is "other"
# (all counted). ~70 rarely used syscalls, denied (so never executed).
walk="134 136 139 153 154 156 163 167 168 169 170 171 172 173 174 175 176 177 178 179 180 181
	182 183 184 185 212 214 215 236 237 238 239 240 241 242 243 244 245 246 248 249 250 251 252
	253 254 255 256 272 275 276 277 278 279 298 300 301 303 304 305 306 308 310 311 312 313"
walk_names=$(/usr/bin/python3 - $walk <<'PY'
import ctypes, json, sys
lib = ctypes.CDLL("libseccomp.so.2")
f = lib.seccomp_syscall_resolve_num_arch
f.restype = ctypes.c_void_p
f.argtypes = [ctypes.c_uint32, ctypes.c_int]
print(json.dumps([ctypes.string_at(f(0, int(n))).decode() for n in sys.argv[1:] if f(0, int(n))]))
PY
)
nwalk=$(echo "$walk_names" | jq length)
script="for n in $(echo $walk); do /probe call \$n 1; done; echo done; exec sleep 1000"
bundle "$(jq -n --argjson names "$walk_names" '{defaultAction: "SCMP_ACT_ALLOW",
	syscalls: [{names: $names, action: "SCMP_ACT_ERRNO"}]}')"
if start c4; then
	"$URSA" --root "$root" metrics c4 > "$work/m4" 2>&1
	v=$(/usr/bin/python3 - "$work/m4" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
s = [x for f in text_string_to_metric_families(open(sys.argv[1]).read())
     for x in f.samples if x.name == "ursa_seccomp_denied_total"]
print(len([x for x in s if x.labels["syscall"] != "other"]), int(sum(x.value for x in s)))
PY
)
	check "c4: $nwalk denied syscalls: 64 series + other, all $nwalk counted" \
		"$([ "$v" = "64 $nwalk" ] && [ "$nwalk" -gt 64 ]; echo $?)" "got series/total: $v"
fi

# 5. `ursa do` (Docker's default profile compiled at build time): the
# counting program (URSA_SECCOMP_COUNT=1) answers with the same errnos as the
# plain one: acct → EPERM (default), clone3 → ENOSYS (its own rule)
for c in 0 1; do
	# the probe through a volume: the build tree may sit where the sandbox
	# sees a fresh mount (/tmp) instead of the host's files
	P=/probe/$(basename "$PROBE")
	out=$(URSA_SECCOMP_COUNT=$c timeout 30 "$URSA" do --network none -v "$(dirname "$PROBE"):/probe:ro" -- \
		/bin/sh -c "$P call 163 4; $P call 435 3; $P call 110 2" 2>&1)
	echo "$out" | grep -q "^nr=163 calls=4 ok=0 errno=1:4\$" &&
		echo "$out" | grep -q "^nr=435 calls=3 ok=0 errno=38:3\$" &&
		echo "$out" | grep -q "^nr=110 calls=2 ok=2\$"
	check "do (URSA_SECCOMP_COUNT=$c): EPERM for acct, ENOSYS for clone3, getppid works" $? "$out"
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
