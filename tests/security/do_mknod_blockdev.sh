#!/bin/bash
# `ursa do` (default flags) gives CAP_MKNOD, no device cgroup and a /dev (and
# overlay /) without nodev: can the sandbox mknod a host block device and write
# through it, bypassing "host root read-only under an overlay"?
# Uses a loop device over a scratch file as a stand-in for a host disk.
. "$(dirname "$0")/lib.sh"
img=$WORK/disk.img
printf 'HOSTDATA' >"$img"; truncate -s 1M "$img"
loop=$(losetup --find --show "$img") || exit 2
trap 'losetup -d "$loop"; cleanup' EXIT
min=$(stat -c %T "$loop"); min=$((16#$min)); maj=$(stat -c %t "$loop"); maj=$((16#$maj))
cd /
timeout 30 "$URSA" do -- /bin/busybox sh -c "
  mknod /dev/victim b $maj $min || exit 10
  printf PWNED | dd of=/dev/victim bs=5 count=1 conv=notrunc 2>/dev/null || exit 11
  sync" ; rc=$?
sync; losetup -d "$loop"; trap cleanup EXIT
head -c 8 "$img" | grep -q PWNED && broken "ursa do wrote host block device $loop (maj $maj min $min) via mknod (rc=$rc): $(head -c 8 "$img")"
held "mknod/write of host block device refused (rc=$rc)"
