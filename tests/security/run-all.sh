#!/bin/bash
# Run every attack script; print one verdict line each. Needs root.
# Exit codes of the scripts: 0 HELD, 1 BROKEN, 3 PARTIAL, 2 could not run.
# Exits 1 unless every script HELD (meson test security runs it in the suite).
cd "$(dirname "$0")" || exit 2
worst=0
for s in rootfs_symlinks masked_paths fd_leaks "exe_race" "exe_race ptrace" nopidns_supervisor \
	ctl_socket state_files signals_cleanup do_mknod_blockdev do_seccomp caps_nnp_exec \
	cgroup_devices do_volume_overlay hooks_context; do
	set -- $s
	out=$(bash "$1.sh" ${2:-} 2>&1); rc=$?
	printf '%-28s rc=%d  %s\n' "$s" $rc "$(echo "$out" | grep -E '^(HELD|BROKEN|PARTIAL)' | tail -1)"
	[ $rc != 0 ] && worst=1
done
exit $worst
