#!/bin/bash
# Hooks and bundle contents: a startContainer hook path is resolved in the
# container (the image controls that binary): it must run inside, with the
# container's capabilities, never on the host.
. "$(dirname "$0")/lib.sh"
b=$WORK/b; mkbundle "$b"
mk=/tmp/ursa-hookmark-$$
printf '#!/bin/sh\n{ id -u; grep CapEff /proc/self/status; } > %s\n' "$mk" >"$b/rootfs/bin/hook"; chmod 755 "$b/rootfs/bin/hook"
jq --arg m "$mk" '.root.readonly=false | .process.args=["true"] | .hooks={"startContainer":[{"path":"/bin/hook"}]}' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid hook; (cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id") 2>&1 | sed 's/^/  /'
[ -e "$mk" ] && { rm -f "$mk"; broken "startContainer hook from the image ran on the host"; }
[ -e "$b/rootfs$mk" ] || exit 2
echo "  hook ran inside: $(tr '\n' ' ' <"$b/rootfs$mk")"
grep -q 0000000020000420 "$b/rootfs$mk" || broken "hook ran with more than the container's caps"
held "startContainer hook confined to the container with its caps"
