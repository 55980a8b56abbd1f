#!/bin/bash
# Masked / read-only paths: can the container (default caps) unmask them or
# remount them read-write? Also reported (not failed): with CAP_SYS_ADMIN.
. "$(dirname "$0")/lib.sh"
b=$WORK/b; mkbundle "$b"
probe='
r=0
for p in /proc/keys /proc/timer_list /proc/acpi /sys/firmware /proc/sys /proc/bus /proc/fs /proc/irq; do
  umount "$p" 2>/dev/null && { echo "UMOUNTED $p"; r=1; }
  umount -l "$p" 2>/dev/null && { echo "LAZY-UMOUNTED $p"; r=1; }
done
mount -o remount,rw /proc/sys 2>/dev/null && { echo "REMOUNTED /proc/sys rw"; r=1; }
mount -o remount,bind,rw /proc/sys 2>/dev/null && { echo "REMOUNTED(bind) /proc/sys rw"; r=1; }
echo 1 > /proc/sys/kernel/ns_last_pid 2>/dev/null && { echo "WROTE /proc/sys"; r=1; }
mount -o remount,rw / 2>/dev/null && { echo "REMOUNTED / rw"; r=1; }
mount -t proc proc /tmp 2>/dev/null && { echo "MOUNTED fresh proc"; r=1; }
cat /proc/keys 2>/dev/null | head -c 80; test -s /proc/timer_list && { echo "timer_list readable"; r=1; }
exit $r'
jqedit "$b" --arg p "$probe" '.process.args=["sh","-c",$p]' 2>/dev/null ||
	jq --arg p "$probe" '.process.args=["sh","-c",$p]' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid mask
(cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id"); rc=$?
echo "default caps: rc=$rc"
# informational: with CAP_SYS_ADMIN (expected to be able to unmask, as runc)
jq '.process.capabilities |= with_entries(.value += ["CAP_SYS_ADMIN"])' "$b/config.json" >"$b/c" && mv "$b/c" "$b/config.json"
newid mask2; id2=$id
(cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id2" | sed 's/^/  [CAP_SYS_ADMIN, informational] /')
# ursa do
( cd / && timeout 20 "$URSA" do -- /bin/busybox sh -c "$(echo "$probe" | sed 's/\bumount\b/busybox umount/g; s/\bmount\b/busybox mount/g')" ); rc2=$?
echo "ursa do: rc=$rc2"
[ $rc -ne 0 ] && broken "default-caps container unmasked/remounted (rc=$rc)"
[ $rc2 -ne 0 ] && broken "ursa do unmasked/remounted (rc=$rc2)"
held "masked and read-only paths stayed in place with default caps and in ursa do"
