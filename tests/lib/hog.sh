# tests/lib/hog.sh — a bundle whose init is tests/ckpt/hog.c. Source it:
#   . "$(dirname "$0")/../lib/hog.sh"
#
#   hog_bundle WORK MIB THREADS
#       WORK/rootfs: busybox, $HOG as /bin/hog, its files in WORK/rootfs/tmp;
#       WORK/b/config.json (`$URSA spec`): `hog MIB THREADS /tmp`, no
#       terminal, no network, a writable root
hog_bundle() {
	local work=$1 mib=$2 threads=$3
	mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
		"$work/rootfs/tmp" "$work/b" || return 1
	cp /bin/busybox "$work/rootfs/bin/" && ln -sf busybox "$work/rootfs/bin/sh" &&
		cp "$HOG" "$work/rootfs/bin/hog" && (cd "$work/b" && "$URSA" spec) || return 1
	jq --arg rootfs "$work/rootfs" --arg mib "$mib" --arg th "$threads" \
		'.root.path = $rootfs | .root.readonly = false | .process.terminal = false
		| .process.args = ["/bin/hog", $mib, $th, "/tmp"]
		| .annotations = {"run.ursa.network": "none"}' "$work/b/config.json" >"$work/b/c" &&
		mv "$work/b/c" "$work/b/config.json"
}
