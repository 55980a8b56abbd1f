#!/bin/bash
# `ursa do`'s default seccomp profile: namespaces, mount, keyctl, io_uring
# (blocked by Docker/containerd since 2023), personality, userfaultfd, bpf,
# perf_event_open, clone3, x32 and i386 entry points.
. "$(dirname "$0")/lib.sh"
gcc -static -O2 -o "$WORK/seccomp_probe" "$HERE/seccomp_probe.c" || exit 2
chmod 755 "$WORK" "$WORK/seccomp_probe"
(cd / && timeout 30 "$URSA" do -v "$WORK:/probe:ro" -- /probe/seccomp_probe) | tee "$WORK/out"; rc=${PIPESTATUS[0]}
[ $rc -eq 0 ] && held "every dangerous syscall refused"
allowed=$(grep -c 'should be blocked' "$WORK/out")
[ "$allowed" = 1 ] && grep -q '^io_uring_setup .*should be blocked' "$WORK/out" &&
	partial "io_uring_setup allowed (Docker >= 25 and containerd block io_uring by default); nothing else"
broken "$rc dangerous syscall(s) allowed in ursa do"
