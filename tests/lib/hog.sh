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

#   hog_checked ID DIR [N]
#       the init of container ID (the caller's `u state`) told to check its
#       memory (SIGUSR1: tests/ckpt/hog.c, cow.c); 0 once DIR/check-0 ..
#       check-(N-1) (N = 2) all say "ok". A container without an init
#       fails at once (stopped, its pid is 0: `kill 0` would signal the
#       test's own process group)
hog_checked() {
	local id=$1 dir=$2 n=${3:-2} pid i
	pid=$(u state "$id" 2>/dev/null | jq -r .pid)
	[ "$pid" -gt 0 ] 2>/dev/null || return 1
	rm -f "$dir"/check-*
	kill -USR1 "$pid" || return 1
	for ((i = 0; i < n; i++)); do
		wait_for 60 test -s "$dir/check-$i" && [ "$(cat "$dir/check-$i")" = ok ] || return 1
	done
}
