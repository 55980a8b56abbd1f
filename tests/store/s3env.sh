# tests/store/s3env.sh — sourced by the store tests: a real s3rver (the
# pinned copy scripts/setup installs in .deps/s3rver, or $S3RVER) started on
# a loopback port it picks itself (-p 0; the port is read from its
# "listening" line), in a temporary directory ($tmp), with the bucket
# ursa-test created at startup (--configure-bucket); and
# tests/store/s3proxy.py in front of it (SigV4/Content-MD5 checks and fault
# injection). Sets $port (s3rver), $pport and $s3proxy_pid (the proxy), $tmp; waits on their
# output, never sleeps; stops both and removes $tmp on exit (the caller's
# EXIT trap may call s3env_cleanup itself; with S3ENV_KEEP_TRAP set it must).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/../lib/skip.sh"
need_cmd node python3
s3rver=${S3RVER:-$root/.deps/s3rver/node_modules/s3rver/bin/s3rver.js}
[ -f "$s3rver" ] || skip_or_fail "no s3rver at $s3rver (scripts/setup installs it into .deps/s3rver)"

tmp=$(mktemp -d /tmp/ursa-s3.XXXXXX)
pids=()
s3env_cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ ${#pids[@]} = 0 ] || wait "${pids[@]}" 2>/dev/null # (ours only: a caller has its own)
	rm -rf "$tmp"
}
[ -n "${S3ENV_KEEP_TRAP:-}" ] || trap s3env_cleanup EXIT # (else the caller calls it)

# start NAME REGEX CMD...: run CMD with its output on a fifo, wait (at most
# 60 s) for the line matching REGEX, set $got to the port it names, keep
# draining the output into $tmp/NAME.log
start() {
	local name=$1 re=$2 line
	shift 2
	mkfifo "$tmp/$name.out"
	"$@" >"$tmp/$name.out" 2>&1 &
	pids+=($!)
	exec {fd}<"$tmp/$name.out"
	while IFS= read -r -t 60 -u "$fd" line; do
		echo "$line" >>"$tmp/$name.log"
		if [[ $line =~ $re ]]; then
			cat <&"$fd" >>"$tmp/$name.log" &
			pids+=($!)
			got=${BASH_REMATCH[1]}
			return 0
		fi
	done
	echo "FAIL: $name did not say it was listening; its output:" >&2
	cat "$tmp/$name.log" >&2
	return 1
}

# --openssl-legacy-provider: s3rver 3.7.1 encrypts ListObjectsV2 continuation
# tokens with DES, which node 20's OpenSSL 3 only has in its legacy provider
# (without it every truncated listing is a 500 ERR_OSSL_EVP_UNSUPPORTED)
mkdir "$tmp/data"
start s3rver 'listening on 127\.0\.0\.1:([0-9]+)' \
	node --openssl-legacy-provider "$s3rver" -d "$tmp/data" -a 127.0.0.1 -p 0 -s --configure-bucket ursa-test || exit 1
port=$got
# s3proxy_start [N [PORT]]: a proxy in front of s3rver (again, after a test
# killed the first: N names its log; PORT: on the same port, the store back
# where it was); sets $pport and $s3proxy_pid
s3proxy_start() {
	start "proxy${1:-}" 'listening on 127\.0\.0\.1:([0-9]+)' \
		python3 -u "$here/s3proxy.py" --upstream "127.0.0.1:$port" --secret S3RVER \
		--port "${2:-0}" || return 1
	pport=$got
	s3proxy_pid=${pids[-2]} # start added the command, then its drain
}
# s3env_export [PORT]: the S3 settings of s3rver's test bucket in the
# environment (ursa and ursa-store read them), through the proxy, or
# straight to PORT
s3env_export() {
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
	export AWS_ENDPOINT_URL="http://127.0.0.1:${1:-$pport}"
	unset AWS_PROFILE AWS_SESSION_TOKEN
}
s3proxy_start || exit 1
echo "# s3rver $(node "$s3rver" --version) on 127.0.0.1:$port, s3proxy on 127.0.0.1:$pport"

