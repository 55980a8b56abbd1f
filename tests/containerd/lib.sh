# tests/containerd/lib.sh — shared by tests/containerd/run and
# bench/containerd/run: a private containerd and a local busybox image.
#
#   ctrd_start DIR [CRI]  start containerd (config, root, state, socket in
#                       DIR), waiting (30 s at most) until it answers; sets
#                       CTRD_PID and SOCK; logs to DIR/containerd.log. CRI:
#                       TOML for the CRI plugin, which is off without it
#   ctrd_stop           stop it by pid (TERM, then KILL after 10 s)
#   ctrd_image DIR NAME [NS [CMD]]  write an OCI layout tarball of Debian's
#                       busybox-static to DIR/image.tar named NAME (and import
#                       it into namespace NS); CMD: the image's Cmd as JSON
#                       (default ["/bin/sh"])

ctrd_install() {
	local p missing=()
	for p in containerd busybox-static; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "# installing ${missing[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
}

ctrd_start() {
	local dir=$1 cri=${2:-} i
	SOCK=$dir/containerd.sock
	cat >"$dir/config.toml" <<CFG
version = 2
root = "$dir/root"
state = "$dir/state"
$([ -n "$cri" ] || echo 'disabled_plugins = ["io.containerd.grpc.v1.cri"]')
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = "$dir/debug.sock"
[metrics]
  address = ""
$cri
CFG
	# containerd 1.6 unpacks a checkpoint to restore into a directory made
	# in $XDG_RUNTIME_DIR (else /tmp) that it never removes: DIR/xdg, then
	mkdir -p "$dir/xdg"
	XDG_RUNTIME_DIR=$dir/xdg setsid containerd --config "$dir/config.toml" </dev/null >"$dir/containerd.log" 2>&1 &
	CTRD_PID=$!
	for i in $(seq 300); do # polls its socket (a deadline of 30 s)
		ctr -a "$SOCK" version >/dev/null 2>&1 && return 0
		kill -0 "$CTRD_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "containerd did not start; log:" >&2
	tail -20 "$dir/containerd.log" >&2
	return 1
}

ctrd_stop() {
	local i
	[ -n "${CTRD_PID:-}" ] || return 0
	kill -TERM "$CTRD_PID" 2>/dev/null || { CTRD_PID=; return 0; }
	for i in $(seq 100); do
		kill -0 "$CTRD_PID" 2>/dev/null || { CTRD_PID=; return 0; }
		sleep 0.1
	done
	kill -KILL "$CTRD_PID" 2>/dev/null
	CTRD_PID=
}

# a reproducible single-layer OCI image: /bin/busybox, one symlink per applet
ctrd_image() {
	local dir=$1 name=$2 bb a
	local fs=$dir/imgfs oci=$dir/oci
	bb=$(command -v busybox) || bb=/bin/busybox
	rm -rf "$fs" "$oci"
	mkdir -p "$fs/bin" "$fs/proc" "$fs/sys" "$fs/dev" "$fs/tmp" "$fs/etc" "$fs/root" "$oci/blobs/sha256"
	chmod 1777 "$fs/tmp"
	cp "$bb" "$fs/bin/busybox"
	for a in $("$bb" --list); do
		[ "$a" = busybox ] || ln -sf busybox "$fs/bin/$a"
	done
	# for tests: executable files execve(2) refuses (ENOEXEC, ENOENT)
	printf '\177ELX not an executable\n' >"$fs/bin/badexec"
	printf '#!/nonexistent\n' >"$fs/bin/badinterp"
	chmod 755 "$fs/bin/badexec" "$fs/bin/badinterp"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$fs/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$fs/etc/group"
	tar -C "$fs" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$dir/layer.tar" .
	local diffid layer lsize cfg csize man msize
	diffid=$(sha256sum <"$dir/layer.tar" | cut -d' ' -f1)
	gzip -n -c "$dir/layer.tar" >"$dir/layer.tgz"
	layer=$(sha256sum <"$dir/layer.tgz" | cut -d' ' -f1)
	lsize=$(stat -c %s "$dir/layer.tgz")
	mv "$dir/layer.tgz" "$oci/blobs/sha256/$layer"
	rm -f "$dir/layer.tar"
	printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin"],"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"${4:-[\"/bin/sh\"]}" "$diffid" >"$dir/cfg.json"
	cfg=$(sha256sum <"$dir/cfg.json" | cut -d' ' -f1)
	csize=$(stat -c %s "$dir/cfg.json")
	mv "$dir/cfg.json" "$oci/blobs/sha256/$cfg"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
		"$cfg" "$csize" "$layer" "$lsize" >"$dir/man.json"
	man=$(sha256sum <"$dir/man.json" | cut -d' ' -f1)
	msize=$(stat -c %s "$dir/man.json")
	mv "$dir/man.json" "$oci/blobs/sha256/$man"
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"latest"},"platform":{"architecture":"amd64","os":"linux"}}]}' \
		"$man" "$msize" "$name" >"$oci/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$oci/oci-layout"
	tar -C "$oci" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$dir/image.tar" oci-layout index.json blobs
	rm -rf "$fs" "$oci"
	[ -z "${3:-}" ] || ctr -a "$SOCK" -n "$3" images import "$dir/image.tar" >/dev/null
}
