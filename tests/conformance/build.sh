#!/usr/bin/env bash
# tests/conformance/build.sh — build the OCI runtime-tools validation suite
# (runtime-tools commit 0105384, from shared/conformance/ beside the repo)
# and the busybox rootfs its programs run in, offline, into a build dir:
#
#   tests/conformance/build.sh [DIR]
#
# DIR (default $CONF_BUILD, else ~/.cache/ursa-conformance) gets:
#   src/runtime-tools/     the unpacked source (never the repo's tree)
#   bin/NAME.t             one program per validation/NAME/NAME.go
#   run/runtimetest        the static helper the programs copy into bundles
#   run/rootfs-amd64.tar.gz  bin/busybox + applet links, etc/, dev/ proc/ sys/
#   stamp                  what it was built from; a rebuild only on change
#
# Needs Debian's golang-go and busybox-static (scripts/setup installs both).
# Exit 0 built (or up to date), 2 something needed is missing (the message
# says what), 1 the build failed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
B=${1:-${CONF_BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/ursa-conformance}}
mkdir -p "$B"
B=$(cd "$B" && pwd)

missing() { echo "conformance: $*" >&2; exit 2; }

# The tarball: shared/ lies beside the repo (../shared), read-only.
TARBALL=${RUNTIME_TOOLS_TARBALL:-$REPO/../shared/conformance/runtime-tools-0105384.tar.gz}
[ -r "$TARBALL" ] || missing "no runtime-tools source at $TARBALL (shared/conformance/ beside the repo)"
command -v go >/dev/null || missing "no go (Debian's golang-go; scripts/setup installs it)"
BUSYBOX=$(dpkg -L busybox-static 2>/dev/null | grep -m1 '/bin/busybox$' || true)
[ -n "$BUSYBOX" ] && [ -x "$BUSYBOX" ] || missing "no static busybox (Debian's busybox-static; scripts/setup installs it)"
"$BUSYBOX" true 2>/dev/null || missing "$BUSYBOX does not run"
if readelf -l "$BUSYBOX" 2>/dev/null | grep -q 'Requesting program interpreter'; then
	missing "$BUSYBOX is not static"
fi

want=$(printf '%s\n' "tarball $(sha256sum <"$TARBALL" | cut -d' ' -f1)" \
	"busybox $(sha256sum <"$BUSYBOX" | cut -d' ' -f1)" \
	"go $(go version)" "build.sh $(sha256sum <"$0" | cut -d' ' -f1)")
if [ -f "$B/stamp" ] && [ "$(cat "$B/stamp")" = "$want" ] &&
	[ -x "$B/run/runtimetest" ] && [ -f "$B/run/rootfs-amd64.tar.gz" ]; then
	exit 0
fi
rm -f "$B/stamp"

# 1. the source, fresh each build (it is small; the Go cache keeps builds quick)
rm -rf "$B/src" "$B/bin" "$B/run"
mkdir -p "$B/src" "$B/bin" "$B/run"
tar -xzf "$TARBALL" -C "$B/src"
SRC=$B/src/runtime-tools
[ -d "$SRC/validation" ] && [ -f "$SRC/vendor/modules.txt" ] || {
	echo "conformance: $TARBALL has no validation/ or vendor/" >&2; exit 1; }

# 2. the programs, offline: vendor/ only, no proxy, the caches under $B.
# Upstream's Makefile builds each validation/*/*.go (not util) to NAME.t and
# cmd/runtimetest statically; one go build of ./validation/... does the
# former (main packages land in bin/ by directory name, util is only built).
export GOFLAGS=-mod=vendor GOPROXY=off GOSUMDB=off GO111MODULE=on \
	GOTOOLCHAIN=local GOCACHE=$B/gocache GOPATH=$B/gopath GOENV=off CGO_ENABLED=0
log=$B/build.log
(
	cd "$SRC"
	go build -o "$B/bin/" ./validation/... &&
		go build -tags "netgo osusergo" -o "$B/run/runtimetest" ./cmd/runtimetest
) >"$log" 2>&1 || {
	tail -n 30 "$log" >&2; echo "conformance: go build failed (log: $log)" >&2; exit 1; }
for p in "$B"/bin/*; do
	case $p in *.t) ;; *) mv "$p" "$p.t" ;; esac
done
n=$(find "$B/bin" -name '*.t' | wc -l)
nsrc=$(find "$SRC/validation" -mindepth 2 -maxdepth 2 -name '*.go' -not -path '*/util/*' | wc -l)
[ "$n" -eq "$nsrc" ] || { echo "conformance: built $n programs of $nsrc" >&2; exit 1; }

# 3. the rootfs, as upstream's rootfs-amd64.tar.gz has it: bin/busybox and a
# link per applet in bin/, etc/passwd and etc/group, empty dev/ proc/ sys/.
R=$B/rootfs
rm -rf "$R"
mkdir -p "$R/bin" "$R/etc" "$R/dev" "$R/proc" "$R/sys"
install -m 0755 "$BUSYBOX" "$R/bin/busybox"
for a in $("$BUSYBOX" --list); do
	[ "$a" = busybox ] || ln -s busybox "$R/bin/$a"
done
cat >"$R/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
bin:x:1:1:bin:/bin:/bin/false
daemon:x:2:2:daemon:/sbin:/bin/false
nobody:x:65534:65534:nobody:/var/empty:/bin/false
EOF
cat >"$R/etc/group" <<'EOF'
root:x:0:root
bin:x:1:root,bin,daemon
daemon:x:2:root,bin,daemon
sys:x:3:root,bin
adm:x:4:root,daemon
tty:x:5:
disk:x:6:root
wheel:x:10:root
users:x:100:
nogroup:x:65533:
nobody:x:65534:
EOF
chmod 0644 "$R/etc/passwd" "$R/etc/group"
tar -C "$R" --numeric-owner --owner=0 --group=0 -czf "$B/run/rootfs-amd64.tar.gz" .

echo "$want" >"$B/stamp"
echo "conformance: built $n validation programs, runtimetest and the rootfs in $B" >&2
