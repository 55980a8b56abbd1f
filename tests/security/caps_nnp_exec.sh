#!/bin/bash
# Capabilities / no_new_privs: a setuid-root binary in the rootfs run by a
# non-root container user with NNP; ambient caps; does exec get the
# container's caps and seccomp; what does a process without a
# "capabilities" object get (runc: none / the container's)?
. "$(dirname "$0")/lib.sh"
b=$WORK/b; mkbundle "$b"; fail=0; part=0
mkdir -p "$b/rootfs/suid"; gcc -static -O2 -o "$b/rootfs/suid/probe" "$HERE/suid_probe.c" || exit 2
chown 0:0 "$b/rootfs/suid/probe"; chmod 4755 "$b/rootfs/suid/probe"
capeff() { grep CapEff | awk '{print $2}'; }
# 1. uid 1000, NNP, setuid-root busybox: euid must stay 1000
jq '.process.user={"uid":1000,"gid":1000} | .process.args=["/suid/probe"]' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid nnp; out=$(cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id" 2>&1); echo "$out" | sed 's/^/  nnp: /'
[ "$(echo "$out" | head -1)" = "euid 1000" ] || { echo "  setuid escalated under NNP"; fail=1; }
# 2. same without NNP: setuid works (expected), but caps bounded to the spec's
jq '.process.noNewPrivileges=false' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid nonnp; out=$(cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id" 2>&1); echo "$out" | sed 's/^/  no-nnp: /'
[ "$(echo "$out" | capeff)" = 0000000020000420 ] || { echo "  setuid gained caps beyond the bounding set"; fail=1; }
# 3. exec honors the container's caps and seccomp
jq '.process.user={"uid":0,"gid":0} | .process.noNewPrivileges=true | .process.args=["sleep","100"] | .linux.seccomp={"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid ex; (cd "$b" && "$URSA" --root "$SECROOT" create "$id" >/dev/null 2>&1) && u start "$id"
out=$(u exec "$id" sh -c 'grep -E "CapEff|CapBnd|Seccomp:|NoNewPrivs" /proc/self/status; mkdir /tmp/x 2>&1 && echo MKDIR-OK')
echo "$out" | sed 's/^/  exec: /'
echo "$out" | grep -q MKDIR-OK && { echo "  exec escaped the container's seccomp"; fail=1; }
[ "$(echo "$out" | capeff)" = 0000000020000420 ] || { echo "  exec caps differ from the container's"; fail=1; }
# 4. exec --process without a capabilities object
echo '{"args":["sh","-c","grep CapEff /proc/self/status"],"cwd":"/","user":{"uid":0,"gid":0},"env":["PATH=/bin"]}' >"$WORK/p.json"
out=$(u exec -p "$WORK/p.json" "$id" 2>&1); echo "$out" | sed 's/^/  exec -p (no caps object): /'
case "$(echo "$out" | capeff)" in 0000000020000420|0000000000000000|"") ;; *) echo "  exec -p without capabilities got extra caps"; part=1;; esac
u delete --force "$id" >/dev/null
# 5. config.json without process.capabilities (runc: no capabilities at all)
jq 'del(.process.capabilities) | del(.linux.seccomp) | .process.args=["sh","-c","grep CapEff /proc/self/status"]' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid nocap; out=$(cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id" 2>&1); echo "$out" | sed 's/^/  init (no caps object): /'
case "$(echo "$out" | capeff)" in 0000000000000000|"") ;; *) false;; esac || { echo "  init without a capabilities object is fully privileged (runc: none)"; part=1; }
[ $fail = 1 ] && broken "see above"
[ $part = 1 ] && partial "missing capabilities object => all capabilities"
held "NNP, bounding set, exec caps and seccomp all held"
