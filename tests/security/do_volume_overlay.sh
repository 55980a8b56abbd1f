#!/bin/bash
# `ursa do`: writes to the host root stay in the overlay; --volume parsing
# (relative paths, symlinks, extra ':'), DEST with '..'; informational:
# what an operator-granted -v /proc exposes.
. "$(dirname "$0")/lib.sh"
fail=0
mark=/etc/ursa-sec-$$
cd /
timeout 20 "$URSA" do -- /bin/busybox sh -c "echo x > $mark; rm -f /etc/hostname; echo pwn >> /etc/passwd" 2>&1 | sed 's/^/  /'
[ -e "$mark" ] && { echo "  overlay write reached the host"; rm -f "$mark"; fail=1; }
[ -e /etc/hostname ] || [ ! -e /etc/hostname.orig-absent ] || true
tail -1 /etc/passwd | grep -q '^pwn$' && { echo "  host /etc/passwd modified"; fail=1; }
# volume parsing
mkdir -p "$WORK/vol/real"; echo in-vol >"$WORK/vol/real/f"; ln -s real "$WORK/vol/link"
chmod 755 "$WORK"
(cd "$WORK/vol" && timeout 20 "$URSA" do --cwd / -v link:/mnt/v:ro -- /bin/busybox sh -c 'cat /mnt/v/f; echo z > /mnt/v/g 2>/dev/null && echo RO-VIOLATED') | sed 's/^/  relative+symlink ro: /'
[ -e "$WORK/vol/real/g" ] && { echo "  :ro volume was writable"; fail=1; }
for v in "$WORK/vol/real:/a:ro:extra" "$WORK/vol/real:relative" ":/x" "$WORK/vol/real:/b:rx"; do
	timeout 20 "$URSA" do -v "$v" -- /bin/true >/dev/null 2>&1 && { echo "  accepted malformed --volume '$v'"; fail=1; }
done
timeout 20 "$URSA" do -v "$WORK/vol/real:/../../../../tmp/dotdot-$$" -- /bin/busybox sh -c "ls /tmp/dotdot-$$ >/dev/null" 2>&1 | sed 's/^/  dotdot: /'
[ -e "/tmp/dotdot-$$" ] && { echo "  DEST with .. landed on the host"; rmdir "/tmp/dotdot-$$" 2>/dev/null; fail=1; }
grep -q "dotdot-$$" /proc/self/mountinfo && { echo "  mount leaked to host"; fail=1; }
# informational: -v /proc (operator-granted) exposes the host pid namespace
out=$(timeout 20 "$URSA" do -v /proc:/hp -- /bin/busybox sh -c 'ls /hp/1/root/ >/dev/null 2>&1 && echo "host root reachable via -v /proc"; cat /hp/1/comm 2>/dev/null')
echo "  informational (-v /proc:/hp): $(echo $out)"
[ $fail = 1 ] && broken "see above"
held "overlay contains writes; --volume parsing strict; DEST stays in the sandbox"
