# tests/security/lib.sh — shared helpers for the security attack scripts.
# Each script: exit 0 = defense HELD, 1 = BROKEN, 2 = could not run (setup).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
URSA=${URSA:-$HERE/../../build/ursa}
SECROOT=${SECROOT:-/tmp/sec-root}
WORK=$(mktemp -d /tmp/sec-work.XXXXXX)
IDS=()

u() { "$URSA" --root "$SECROOT" "$@"; }

# wait_for SECONDS CMD... (a polled condition with a deadline)
. "$HERE/../lib/check.sh"
# gone PID...: none of them is a live (non-zombie) process
gone() {
	local p
	for p in "$@"; do grep -qs '^State:.*[^Z] (' "/proc/$p/status" && return 1; done
	return 0
}

# mkbundle DIR: busybox rootfs + default config.json running `sleep 1000`
mkbundle()
{
	local b=$1
	mkdir -p "$b/rootfs/bin" "$b/rootfs/proc" "$b/rootfs/dev" "$b/rootfs/sys" \
		"$b/rootfs/tmp" "$b/rootfs/etc"
	cp /bin/busybox "$b/rootfs/bin/busybox"
	for a in sh ls cat echo sleep mount umount ln mkdir stat readlink kill ps id \
		touch rm dd grep head wc mknod chmod test true false nc find cut tr sed; do
		ln -sf busybox "$b/rootfs/bin/$a"
	done
	"$URSA" spec --bundle "$b" >/dev/null
	jq '.process.terminal=false | .process.args=["sleep","1000"]' "$b/config.json" >"$b/c.tmp" &&
		mv "$b/c.tmp" "$b/config.json"
}

# jqedit BUNDLE FILTER
jqedit() { jq "$2" "$1/config.json" >"$1/c.tmp" && mv "$1/c.tmp" "$1/config.json"; }

# newid PREFIX: sets $id (not in a subshell, so cleanup knows it)
newid() { id="sec-$1-$$-$RANDOM"; IDS+=("$id"); }

cleanup()
{
	local id
	for id in "${IDS[@]}"; do u delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$WORK"
}
trap cleanup EXIT

held() { echo "HELD: $*"; exit 0; }
broken() { echo "BROKEN: $*"; exit 1; }
partial() { echo "PARTIAL: $*"; exit 3; }
