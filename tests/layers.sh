#!/usr/bin/env bash
# tests/layers.sh — the layering check (issue #19): dependencies point one
# way, runtime <- net, state, store, host <- ckpt <- actors <- cmd, shim.
# Fails on any #include "LAYER/..." (or "../LAYER/...") in a C file of a
# layer that may not see LAYER:
#   runtime/  nothing but itself
#   net/      runtime/ only (knows nothing of OCI, state or processes)
#   state/    runtime/ only (the wire format knows nothing of processes)
#   store/    runtime/, state/ (where image bytes live; no processes)
#   host/     runtime/ only (host primitives; never calls up)
#   ckpt/     runtime/, state/, store/, host/ (never actors/ or cmd/)
#   actors/   everything below, never cmd/ or shim/
#   cmd/, shim/  everything below, not each other
# It first proves it can fail: a scratch tree with one wrong arrow per rule
# must be refused line by line. Prints one line per violation, then
# "N passed, N failed".
set -u
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
layers="runtime net state store host ckpt actors cmd shim"
allowed() { # LAYER: the layers it may include
	case $1 in
	runtime) echo "runtime" ;;
	net) echo "runtime net" ;;
	state) echo "runtime state" ;;
	store) echo "runtime state store" ;;
	host) echo "runtime host" ;;
	ckpt) echo "runtime state store host ckpt" ;;
	actors) echo "runtime net state store host ckpt actors" ;;
	cmd) echo "runtime net state store host ckpt actors cmd" ;;
	shim) echo "runtime net state store host ckpt actors shim" ;;
	esac
}
# violations ROOT: print "FILE:LINE: LAYER includes TARGET" for each wrong arrow
violations() {
	local root=$1 l f
	for l in $layers; do
		[ -d "$root/$l" ] || continue
		local ok=" $(allowed "$l") "
		while IFS=: read -r f n line; do
			local t
			t=$(sed -E 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"(\.\./)*([a-z_]+)/.*|\2|' <<<"$line")
			case " $layers " in *" $t "*) ;; *) continue ;; esac
			case $ok in *" $t "*) ;; *) echo "${f#$root/}:$n: $l/ includes $t/: $(sed 's/^[[:space:]]*//' <<<"$line")" ;; esac
		done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' --include='*.c' --include='*.h' "$root/$l")
	done
}
passed=0 failed=0
# the check can fail: one wrong arrow per layer in a scratch tree
scratch=$(mktemp -d /tmp/ursa-layers.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
planted=0
for pair in runtime:net net:host state:host store:ckpt host:ckpt host:state ckpt:actors actors:cmd cmd:shim shim:cmd; do
	l=${pair%%:*} t=${pair#*:}
	mkdir -p "$scratch/$l"
	# both spellings: "LAYER/x.h" and "../LAYER/x.h"
	rel=$([ $((planted % 2)) = 0 ] && echo "../")
	printf '#include "runtime/common.h"\n#include "%s%s/x.h"\n' "$rel" "$t" >"$scratch/$l/bad_$t.c"
	planted=$((planted + 1))
done
found=$(violations "$scratch" | wc -l)
if [ "$found" = "$planted" ]; then
	passed=$((passed + 1)) && echo "ok    the check refuses each of $planted planted wrong arrows"
else
	failed=$((failed + 1)) && echo "FAIL  the check found $found of $planted planted wrong arrows"
	violations "$scratch" | sed 's/^/      /'
fi
v=$(violations "$src")
if [ -z "$v" ]; then
	passed=$((passed + 1)) && echo "ok    every #include of $(for l in $layers; do [ -d "$src/$l" ] && printf '%s/ ' "$l"; done)points down"
else
	failed=$((failed + 1)) && echo "FAIL  includes against the layering:" && sed 's/^/      /' <<<"$v"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
