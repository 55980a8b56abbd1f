#!/bin/bash
# Malicious rootfs / bundle: symlinks and `..` at mount destinations and device
# paths. Nothing may be mounted or created on the host outside the rootfs.
. "$(dirname "$0")/lib.sh"
CAN=$WORK/canary            # a host directory the attacker aims at
mkdir -p "$CAN"
before=$(grep -c . /proc/self/mountinfo)
snap() { find "$CAN" /etc -maxdepth 1 -newer "$WORK/stamp" 2>/dev/null | sort; }
touch "$WORK/stamp"; sleep 1
fails=()
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
after=$(grep -c . /proc/self/mountinfo)
leaked=$(ls -A "$CAN"; find /etc -maxdepth 1 -newer "$WORK/stamp" 2>/dev/null)
echo "host mounts before=$before after=$after; canary contents / new files in /etc: ${leaked:-none}"
grep -E "$CAN|/etc " /proc/self/mountinfo && broken "a mount landed on the host"
[ "$after" -gt "$before" ] && broken "host mount table grew"
[ -n "$leaked" ] && broken "files created on the host: $leaked"
held "all destinations resolved inside the rootfs"
