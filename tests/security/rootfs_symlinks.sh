#!/bin/bash
# Malicious rootfs / bundle: symlinks and `..` at mount destinations and device
# paths. Nothing may be mounted or created on the host outside the rootfs.
# What is looked for is only what the sandbox could have made, so that the
# rest of the host (a package install touching /etc, other tests mounting)
# cannot make it fail: anything in the private canary directory; in /etc
# (dev_etc aims /dev there) the names the runtime makes under /dev that
# were not there before; new mounts (by mount id) on /, under /etc or
# under the canary.
. "$(dirname "$0")/lib.sh"
CAN=$WORK/canary            # a host directory the attacker aims at
mkdir -p "$CAN"
DEVNAMES="null zero full random urandom tty ptmx console fd stdin stdout stderr core pts shm mqueue"
etc_devnames() { local n; for n in $DEVNAMES; do [ -e "/etc/$n" ] || [ -L "/etc/$n" ] && echo "/etc/$n"; done; }
mount_ids() { awk '{ print $1 }' /proc/self/mountinfo | sort; }
etc_before=$(etc_devnames)
ids_before=$(mount_ids)

variant()
{ # name, shell snippet run in $b (the bundle dir) to poison it
	local name=$1 b=$WORK/$1; shift
	mkbundle "$b"
	jqedit "$b" '.process.args=["true"]'
	(cd "$b" && eval "$*")
	local id; newid "$name"
	(cd "$b" && timeout 20 "$URSA" --root "$SECROOT" run "$id" >"$WORK/$name.out" 2>&1)
	echo "  $name: rc=$? $(head -c 200 "$WORK/$name.out" | tr '\n' ' ')"
	u delete --force "$id" >/dev/null 2>&1
}
variant proc_root    'rm -rf rootfs/proc; ln -s / rootfs/proc'
variant proc_abs     "rm -rf rootfs/proc; ln -s $CAN rootfs/proc"
variant dev_etc      'rm -rf rootfs/dev; ln -s /etc rootfs/dev'
variant dev_rel      "rm -rf rootfs/dev; ln -s ../../../../../../..$CAN rootfs/dev"
variant cgroup_rel   "mkdir -p rootfs/sys/fs; ln -s ../../../../../../../..$CAN rootfs/sys/fs/cgroup"
variant bind_symlink "ln -s $CAN rootfs/mnt; jqedit . '.mounts += [{\"destination\":\"/mnt\",\"type\":\"bind\",\"source\":\"/usr/share\",\"options\":[\"rbind\",\"ro\"]}]'"
variant bind_file_symlink "ln -s $CAN/newfile rootfs/mntf; jqedit . '.mounts += [{\"destination\":\"/mntf\",\"type\":\"bind\",\"source\":\"/etc/hostname\",\"options\":[\"bind\"]}]'"
variant dotdot_dest  "jqedit . '.mounts += [{\"destination\":\"/../../../../..$CAN/x\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"}]'"
variant procfd_dest  "jqedit . '.mounts += [{\"destination\":\"/proc/self/fd/3\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"}]'"
variant proccwd_dest "jqedit . '.mounts += [{\"destination\":\"/proc/self/cwd/x\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"}]'"
variant proc1root    "jqedit . '.mounts += [{\"destination\":\"/proc/1/root$CAN\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"}]'"
variant dev_symlink_parent "ln -s $CAN rootfs/devlink; jqedit . '.linux.devices=[{\"path\":\"/devlink/evil\",\"type\":\"c\",\"major\":1,\"minor\":3}]'"
variant dev_symlink_node   "mkdir -p rootfs/dev; ln -s $CAN/evilnode rootfs/dev/evil; jqedit . '.mounts=[.mounts[]|select(.destination!=\"/dev\")] | .linux.devices=[{\"path\":\"/dev/evil\",\"type\":\"c\",\"major\":1,\"minor\":3}]'"
variant dev_dotdot   "jqedit . '.linux.devices=[{\"path\":\"/dev/../../../../..$CAN/evil2\",\"type\":\"c\",\"major\":1,\"minor\":3}]'"
variant null_symlink "mkdir -p rootfs/dev; ln -s $CAN/nullnode rootfs/dev/null; jqedit . '.mounts=[.mounts[]|select(.destination!=\"/dev\")]'"
variant ptmx_symlink "mkdir -p rootfs/dev; ln -s $CAN/ptmxnode rootfs/dev/ptmx; jqedit . '.mounts=[.mounts[]|select(.destination!=\"/dev\")]'"
leaked=$(ls -A "$CAN"; comm -13 <(echo "$etc_before") <(etc_devnames) | grep .)
new_ids=$(comm -13 <(echo "$ids_before") <(mount_ids) | paste -sd' ' -)
# new mounts on the attack's targets (mount point: field 5)
landed=$(awk -v ids=" $new_ids " -v can="$CAN" 'index(ids, " " $1 " ") &&
	($5 == "/" || $5 == "/etc" || index($5, "/etc/") == 1 || $5 == can || index($5, can "/") == 1)' \
	/proc/self/mountinfo)
echo "new host mounts (any origin): ${new_ids:-none}; on /, /etc or the canary: ${landed:-none}"
echo "canary contents / new /dev names in /etc: ${leaked:-none}"
grep -F "$CAN" /proc/self/mountinfo && broken "a mount landed on the host"
[ -n "$landed" ] && broken "a mount landed on the host: $landed"
[ -n "$leaked" ] && broken "files created on the host: $leaked"
held "all destinations resolved inside the rootfs"
