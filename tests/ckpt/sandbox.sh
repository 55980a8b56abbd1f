#!/usr/bin/env bash
# tests/ckpt/sandbox.sh — `ursa checkpoint` / `ursa restore` end to end on a
# real sandbox (busybox rootfs + the static counter, tests/ckpt/counter.c):
#   - run -d with stdout to a host file; checkpoint; the container is gone
#     (state, list, process); restore --detach: state is running, its init is
#     the pid-file process (in the container's namespaces), the counter goes
#     on from the saved value in both its outputs (host stdout file, replaced
#     stdio; file in the rootfs, reopened at its offset) with no gap and no
#     duplicate, its xmm8-carried value intact; kill and delete work and
#     leave no cgroup
#   - a paused container: checkpoint --leave-running leaves it paused (it
#     counts nothing until resumed); checkpointed without it, it is killed
#     and its restore counts on
#   - --leave-running: the original keeps its pid and keeps counting; a
#     second checkpoint while one runs is refused
#   - stdout on a pipe: replaced by the restore's own pipe; the restored
#     sandbox is checkpointed and restored again (one gapless sequence)
#   - busybox sh looping over child sleeps (a process tree) goes on
#   - a shell pipeline with a slow reader: the pipe on the two halves' stdio
#     is the workload's own and is saved with its unread lines
#   - tests/ckpt/fds.c (pipes, FIFO, eventfds, epoll, socketpairs, a
#     listener, fds shared with a child) checks itself after the restore
#   - a pty on stdio (process.terminal, --console-socket): the restored
#     process writes to the new console's pty
#   - a corrupted or truncated image, or an image whose capabilities exceed
#     the bundle's config.json: restore refuses, naming why, and leaves
#     nothing (no record, no cgroup, no process)
#   - a multi-threaded workload: checkpoint fails naming the pid and the
#     threads, the sandbox keeps running, and no image is left
# Needs root (namespaces, cgroups, ptrace); python3 for the pty part (skipped
# without). Env: URSA, COUNTER, THREADS, FDS (optional: tests/ckpt/fds.c).
set -u
. "$(dirname "$0")/../lib/skip.sh"
# ids are unique per run: cgroup paths (ursa/ID) are shared by every --root
P=ck$$-
URSA=${URSA:?} COUNTER=${COUNTER:?} THREADS=${THREADS:?}
work=$(mktemp -d /tmp/ursa-ckpt-sb.XXXXXX)
root=$work/root
. "$(dirname "$0")/../lib/check.sh" # ok, bad, check, wait_for
u() { "$URSA" --root "$root" "$@"; }
cleanup() {
	for id in ${P}c1 ${P}c2 ${P}c3 ${P}c4 ${P}c5 ${P}c6 ${P}c7 ${P}c8 ${P}c9 ${P}bad1 ${P}bad2 ${P}bad3 ${P}t1; do u delete --force "$id" >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT

# wait_for SECONDS COMMAND...: poll (20 ms) until COMMAND succeeds
# no such process, or a zombie nobody has reaped yet (it runs nothing)
gone() { [ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ] ||
	[ ! -e "/proc/$1" ]; }
lines_at_least() { [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ]; }
last_n() { tail -n 1 "$1" | cut -d' ' -f1; }
# a counter log from 1 with no gap, no duplicate, and F == N/2 on every line
gapless() {
	awk 'BEGIN{p=0} NF!=2{next} {if ($1!=p+1 || $2+0!=$1/2) {print "line " NR ": " $0 " after " p; exit 1}; p=$1}' "$1"
}
# a one-column sequence from 1 with no gap and no duplicate
seq_gapless() {
	awk 'BEGIN{p=0} {if ($1!=p+1) {print "line " NR ": " $0 " after " p; exit 1}; p=$1}' "$1"
}
nothing_left() { # id
	! u state "$1" >/dev/null 2>&1 && [ ! -e "$root/$1" ] && [ "$(cg_dirs "$1")" = 0 ] &&
		! grep -qs "/$1\$" /proc/[0-9]*/cgroup
}
status_of() { u state "$1" 2>/dev/null | jq -r .status; }
pid_of() { u state "$1" 2>/dev/null | jq -r .pid; }
cg_dirs() { find /sys/fs/cgroup -maxdepth 6 -type d -name "$1" 2>/dev/null | wc -l; }
no_cg() { [ "$(cg_dirs "$1")" = 0 ]; }

mkdir -p "$work/rootfs/bin" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys" \
	"$work/rootfs/tmp" "$work/b" "$work/b2"
cp /bin/busybox "$work/rootfs/bin/" && ln -s busybox "$work/rootfs/bin/sh"
cp "$COUNTER" "$work/rootfs/bin/counter" && cp "$THREADS" "$work/rootfs/bin/threads"
(cd "$work/b" && "$URSA" spec) || exit 1
jq --arg rootfs "$work/rootfs" '.root.path = $rootfs | .root.readonly = false
	| .process.oomScoreAdj = 123
	| .process.terminal = false | .process.args = ["/bin/counter", "/tmp/count.txt"]
	| .annotations = {"run.ursa.network": "none"}' "$work/b/config.json" >"$work/b/c" &&
	mv "$work/b/c" "$work/b/config.json"

# ---- checkpoint, container gone ---------------------------------------------
out=$work/out.txt
(cd "$work/b" && u run -d ${P}c1 >"$out" 2>"$work/run.err") || bad "run -d ${P}c1" "$(cat "$work/run.err")"
wait_for 20 lines_at_least "$out" 20 || bad "the counter runs" "$(cat "$work/run.err")"
pid1=$(pid_of ${P}c1)
if u checkpoint --image-path "$work/img" --work-path "$work/wp" ${P}c1 2>"$work/ck.err"; then
	ok "checkpoint"
else
	bad "checkpoint" "$(cat "$work/ck.err")"
fi
check "the image is there (core.img, pages.img, the record)" \
	'[ -s "$work/img/core.img" ] && [ -s "$work/img/pages.img" ] && [ -s "$work/img/container/config.json" ] && [ -s "$work/img/container/state.json" ]'
check "dump.log in --work-path" 'grep -q "dumped 1 tasks" "$work/wp/dump.log"' "$(cat "$work/wp/dump.log" 2>/dev/null)"
check "the container is gone (state)" '! u state ${P}c1 >/dev/null 2>&1'
check "the container is gone (list)" '! u list | grep -qw ${P}c1'
check "its init is gone" 'wait_for 10 gone "$pid1"'
# (its cgroups go once its tasks have exited: ursa checkpoint does not wait
# for that, host/teardown.h)
check "its cgroup is gone" 'wait_for 10 no_cg ${P}c1'
saved=$(last_n "$out")
sleep 0.1
check "nothing counts any more" '[ "$(last_n "$out")" = "$saved" ]'

# ---- restore ------------------------------------------------------------------
# a config.json without a process (valid OCI): the image's policy comes
# from it, so restore refuses, naming why, and makes nothing
mkdir -p "$work/bnp" && jq 'del(.process)' "$work/b/config.json" >"$work/bnp/config.json"
check "restore with a config.json without a process is refused, nothing made" \
	'! u restore --detach --bundle "$work/bnp" --image-path "$work/img" ${P}c1 2>"$work/rsnp.err" &&
	 grep -q "config.json has no process" "$work/rsnp.err" && ! u state ${P}c1 >/dev/null 2>&1' \
	"$(cat "$work/rsnp.err" 2>/dev/null)"
for opt in "--lsm-mount-context x" "--lsm-profile x" "--manage-cgroups-mode bogus"; do
	# shellcheck disable=SC2086
	check "restore $opt is refused, nothing made" \
		'! (cd "$work/b" && u restore $opt --detach --image-path "$work/img" ${P}c1) 2>"$work/rsr.err" &&
		 grep -qE -- "${opt%% *}( [a-z]+)?: |${opt%% *} is not supported" "$work/rsr.err" &&
		 ! u state ${P}c1 >/dev/null 2>&1' "$(cat "$work/rsr.err" 2>/dev/null)"
done
if (cd "$work/b" && u restore --detach --image-path "$work/img" --pid-file "$work/pid" ${P}c1 \
	>>"$out" 2>"$work/rs.err"); then
	ok "restore --detach"
else
	bad "restore --detach" "$(cat "$work/rs.err")"
fi
check "state says running" '[ "$(status_of ${P}c1)" = running ]' "$(u state ${P}c1 2>&1)"
rpid=$(pid_of ${P}c1)
pf=$(cat "$work/pid" 2>/dev/null)
check "the pid file names the restored init (as runc's does)" \
	'[ -n "$pf" ] && [ "$pf" = "$rpid" ]' "init $rpid, pid file $pf"
check "its root and namespaces are the container's, not the host's" \
	'[ "$(readlink /proc/$pf/ns/pid)" != "$(readlink /proc/self/ns/pid)" ] &&
	 [ "$(readlink /proc/$pf/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ]' \
	"$(readlink /proc/$pf/ns/pid /proc/$pf/ns/mnt 2>&1)"
sup=$(jq -r .sup_pid "$root/${P}c1/state.json" 2>/dev/null)
check "oomScoreAdj applies to the restored init" '[ "$(cat /proc/$rpid/oom_score_adj 2>/dev/null)" = 123 ]'
check "the init is pid 1 of its own pid namespace" \
	'[ "$(awk "/^NSpid:/{print \$NF}" /proc/$rpid/status 2>/dev/null)" = 1 ]'
wait_for 20 lines_at_least "$out" $((saved + 30)) || true
check "the counter goes on from $saved in the stdout file, gapless, xmm8 intact" \
	'[ "$(last_n "$out")" -ge $((saved + 30)) ] && gapless "$out" >"$work/gap" 2>&1' \
	"$(cat "$work/gap" 2>/dev/null; tail -n 3 "$out")"
check "and in its file in the rootfs (offset kept)" 'gapless "$work/rootfs/tmp/count.txt" >"$work/gap2"' \
	"$(cat "$work/gap2" 2>/dev/null)"
check "kill works on the restored container" 'u kill ${P}c1 KILL'
wait_for 20 sh -c "[ \"\$('$URSA' --root '$root' state ${P}c1 2>/dev/null | jq -r .status)\" = stopped ]" ||
	true
check "then it is stopped" '[ "$(status_of ${P}c1)" = stopped ]'
check "delete works" 'u delete ${P}c1 && ! u state ${P}c1 >/dev/null 2>&1'
check "no cgroup left" '[ "$(cg_dirs ${P}c1)" = 0 ]'
check "no supervisor left" 'wait_for 10 gone "$sup"'

# ---- --leave-running ------------------------------------------------------------
out2=$work/out2.txt
rm -f "$work/rootfs/tmp/count.txt"
(cd "$work/b" && u run -d ${P}c2 >"$out2" 2>/dev/null)
wait_for 20 lines_at_least "$out2" 10 || true
pid2=$(pid_of ${P}c2)
check "a checkpoint while another one runs is refused" \
	'flock "$root/${P}c2" "$URSA" --root "$root" checkpoint --image-path "$work/imgx" ${P}c2 2>&1 | grep -q "a checkpoint is already running"'
# runc's options ursa cannot honour are refused by name, before anything is done
for opt in --lazy-pages --pre-dump "--page-server x:1" "--parent-path p" "--external x" \
	"--manage-cgroups-mode bogus"; do
	# shellcheck disable=SC2086
	check "checkpoint $opt is refused, the container runs on, no image" \
		'! u checkpoint $opt --image-path "$work/imgr" ${P}c2 2>"$work/ckr.err" &&
		 grep -qE -- "${opt%% *}( [a-z]+)?: |${opt%% *} is not supported" "$work/ckr.err" &&
		 [ ! -e "$work/imgr" ] && [ "$(status_of ${P}c2)" = running ]' "$(cat "$work/ckr.err" 2>/dev/null)"
done
check "checkpoint --leave-running (with --lazy-pages=false: not asked for)" 'u checkpoint --leave-running --lazy-pages=false --image-path "$work/img2" ${P}c2 2>"$work/ck2.err"' \
	"$(cat "$work/ck2.err" 2>/dev/null)"
n2=$(last_n "$out2")
wait_for 20 lines_at_least "$out2" $((n2 + 20)) || true
check "the original keeps running with the same pid" '[ "$(status_of ${P}c2)" = running ] && [ "$(pid_of ${P}c2)" = "$pid2" ]'
check "and keeps counting, gapless" '[ "$(last_n "$out2")" -ge $((n2 + 20)) ] && gapless "$out2"'

# ---- a paused container (containerd pauses before it checkpoints): it stays
# paused through --leave-running, and is dumped, killed and restored ----------
check "pause" 'u pause ${P}c2 && [ "$(status_of ${P}c2)" = paused ]' "$(u state ${P}c2 2>&1)"
n2=$(last_n "$out2")
check "checkpoint --leave-running of a paused container" \
	'u checkpoint --leave-running --image-path "$work/img2p" ${P}c2 2>"$work/ck2p.err"' \
	"$(cat "$work/ck2p.err" 2>/dev/null)"
check "it is still paused, and counted nothing" \
	'[ "$(status_of ${P}c2)" = paused ] && [ "$(last_n "$out2")" = "$n2" ]' \
	"status $(status_of ${P}c2), last $(last_n "$out2") (was $n2)"
check "resume: it counts on, gapless" \
	'u resume ${P}c2 && wait_for 20 lines_at_least "$out2" $((n2 + 20)) && gapless "$out2"' \
	"$(u state ${P}c2 2>&1; tail -n 2 "$out2")"
u pause ${P}c2
n2=$(last_n "$out2")
check "checkpoint of a paused container (killed after)" \
	'u checkpoint --image-path "$work/img2k" ${P}c2 2>"$work/ck2k.err" && ! u state ${P}c2 >/dev/null 2>&1 && wait_for 10 gone "$pid2"' \
	"$(cat "$work/ck2k.err" 2>/dev/null)"
check "its restore counts on from $n2, gapless" \
	'(cd "$work/b" && u restore --detach --image-path "$work/img2k" ${P}c2 >>"$out2" 2>"$work/rs2k.err") &&
	 [ "$(status_of ${P}c2)" = running ] && wait_for 20 lines_at_least "$out2" $((n2 + 20)) && gapless "$out2"' \
	"$(cat "$work/rs2k.err" 2>/dev/null; tail -n 2 "$out2")"
u delete --force ${P}c2 >/dev/null 2>&1

# ---- stdio pipes are replaced at restore; a restored sandbox checkpoints again ----
rm -f "$work/rootfs/tmp/count.txt"
p1=$work/p1.txt p2=$work/p2.txt p3=$work/p3.txt
(cd "$work/b" && u run -d ${P}c3 2>/dev/null | cat >"$p1") &
wait_for 20 lines_at_least "$p1" 10 || true
check "checkpoint with stdout on a pipe" 'u checkpoint --image-path "$work/img4" ${P}c3 2>"$work/c3.err"' \
	"$(cat "$work/c3.err" 2>/dev/null)"
wait # the reader saw EOF: nothing holds the old pipe any more
(cd "$work/b" && u restore --detach --image-path "$work/img4" ${P}c3 2>"$work/c3r.err" | cat >"$p2") &
wait_for 20 lines_at_least "$p2" 10 || true
check "restored onto the restore's own stdout pipe" \
	'[ "$(head -n 1 "$p2" | cut -d" " -f1)" = $(($(last_n "$p1") + 1)) ]' \
	"$(tail -n 1 "$p1"; head -n 1 "$p2"; cat "$work/c3r.err")"
u checkpoint --image-path "$work/img5" ${P}c3 2>"$work/c3b.err"
c3b=$?
check "the restored sandbox checkpoints again" '[ $c3b = 0 ]' "exit status $c3b: $(cat "$work/c3b.err" 2>/dev/null)"
wait
(cd "$work/b" && u restore --detach --image-path "$work/img5" ${P}c3 >"$p3" 2>"$work/c3s.err")
wait_for 20 lines_at_least "$p3" 10 || true
cat "$p1" "$p2" "$p3" >"$work/p123.txt"
check "and restores again: three outputs, one gapless sequence" \
	'[ -s "$p3" ] && gapless "$work/p123.txt" >"$work/gap3"' "$(cat "$work/gap3" "$work/c3s.err" 2>/dev/null)"
u delete --force ${P}c3 >/dev/null 2>&1

# ---- seccomp: the filter comes back, and must be the configuration's --------------
jq '.linux.seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
	"syscalls": [{"names": ["mknod", "ptrace"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}' \
	"$work/b/config.json" >"$work/b2/config.json"
# counted denials (the supervisor answers a notify filter, the default):
# the image gets the profile's plain filter, which the restored workload
# runs under (mknod: the profile's EPERM, not ENOSYS from an orphaned
# notify filter); and the same with counting off (annotation
# run.ursa.seccomp-count=false, as a client sets it)
jq '.linux.seccomp.syscalls[0].names += ["mknodat"] | .process.args = ["/bin/busybox", "sh", "-c",
	"i=0; while :; do i=$((i+1)); /bin/busybox mknod /tmp/p$i p 2>/tmp/mk.err; echo $i >/tmp/mk.n; /bin/busybox usleep 20000; done"]' \
	"$work/b2/config.json" >"$work/b2/c" && mv "$work/b2/c" "$work/b2/config.json"
mk_n() { local n; n=$(cat "$work/rootfs/tmp/mk.n" 2>/dev/null); echo "${n:-0}"; }
mk_past() { [ "$(mk_n)" -gt "$1" ]; }
for count in 1 0; do
	rm -f "$work/rootfs/tmp/mk.n" "$work/rootfs/tmp/mk.err"
	if [ $count = 0 ]; then
		jq '.annotations["run.ursa.seccomp-count"] = "false"' "$work/b2/config.json" >"$work/b2/c" &&
			mv "$work/b2/c" "$work/b2/config.json"
	fi
	(cd "$work/b2" && u run -d ${P}c7 >/dev/null 2>&1)
	wait_for 10 mk_past 2 || true
	denied=$(u metrics ${P}c7 2>/dev/null | awk '/^ursa_seccomp_denied_total\{.*syscall="mknodat"/ {print $2}')
	check "seccomp (counted: $count): the supervisor counted ${denied:-no} denials" \
		'if [ $count = 1 ]; then [ "${denied:-0}" -gt 0 ]; else [ -z "$denied" ]; fi'
	check "seccomp (counted: $count): checkpoint --leave-running, and it runs on" \
		'u checkpoint --leave-running --image-path "$work/img8-$count" ${P}c7 2>"$work/c7.err" &&
		 n=$(mk_n) && wait_for 10 mk_past "$n"' "$(cat "$work/c7.err")"
	u delete --force ${P}c7 >/dev/null 2>&1
	check "seccomp (counted: $count): restores with the profile's filter" \
		'(cd "$work/b2" && u restore -d --image-path "$work/img8-$count" ${P}c7 >/dev/null 2>"$work/c7r.err") &&
		 grep -q "^Seccomp:[[:space:]]*2" /proc/$(pid_of ${P}c7)/status' "$(cat "$work/c7r.err" 2>/dev/null)"
	# judged by what the restored workload writes itself: mk.err rewritten
	# after the restore (the original ran on past the image, and the files
	# must stay: the image may hold them open)
	m0=$(stat -c %y "$work/rootfs/tmp/mk.err" 2>/dev/null)
	check "seccomp (counted: $count): the restored workload is denied with the profile's errno" \
		'wait_for 20 sh -c "[ \"\$(stat -c %y $work/rootfs/tmp/mk.err)\" != \"$m0\" ]" &&
		 wait_for 20 grep -q "Operation not permitted" "$work/rootfs/tmp/mk.err"' \
		"$(cat "$work/rootfs/tmp/mk.err" 2>&1)"
	u delete --force ${P}c7 >/dev/null 2>&1
done
jq '.linux.seccomp.syscalls[0].names = ["mknod"]' "$work/b2/config.json" >"$work/b2/c" &&
	mv "$work/b2/c" "$work/b2/config.json"
(cd "$work/b2" && u restore -d --image-path "$work/img8-1" ${P}c7 >/dev/null 2>"$work/c7s.err")
rc=$?
check "restore under another seccomp profile is refused, leaving nothing" \
	'[ $rc != 0 ] && grep -q "seccomp filter is not the configuration" "$work/c7s.err" && nothing_left ${P}c7' \
	"rc $rc: $(cat "$work/c7s.err")"

# ---- a process tree: busybox sh looping over child sleeps ----------------------
jq '.process.args = ["sh", "-c", "i=0; while true; do i=$((i+1)); echo $i; sleep 0.02 & wait; done"]' \
	"$work/b/config.json" >"$work/b2/config.json"
ln -sf busybox "$work/rootfs/bin/sleep"
s1=$work/sh.txt
(cd "$work/b2" && u run -d ${P}c6 >"$s1" 2>/dev/null)
wait_for 20 lines_at_least "$s1" 10 || true
check "checkpoint of sh + child sleep" \
	'u checkpoint --work-path "$work/wp6" --image-path "$work/img7" ${P}c6 2>"$work/c6.err"' \
	"$(cat "$work/c6.err" 2>/dev/null)"
n6=$(last_n "$s1")
(cd "$work/b2" && u restore -d --image-path "$work/img7" ${P}c6 >>"$s1" 2>"$work/c6r.err")
wait_for 20 lines_at_least "$s1" $((n6 + 20)) || true
check "the shell loop goes on from $n6 (tree: $(grep -o 'dumped [0-9]* tasks' "$work/wp6/dump.log" 2>/dev/null))" \
	'[ "$(last_n "$s1")" -ge $((n6 + 20)) ] && seq_gapless "$s1"' \
	"$(cat "$work/c6r.err" 2>/dev/null; tail -n 2 "$s1")"
check "ps lists the restored shell" 'u ps ${P}c6 | grep -q "sh -c"'
u delete --force ${P}c6 >/dev/null 2>&1

# ---- a shell pipeline: the pipe between its two halves (on their stdio, both
# ends in the tree) is saved with the bytes the slow reader has not read yet ----
jq '.process.args = ["sh", "-c", "i=0; while true; do i=$((i+1)); echo $i; sleep 0.01; done | while read l; do echo r$l; sleep 0.04; done"]' \
	"$work/b/config.json" >"$work/b2/config.json"
s2=$work/pipe.txt
(cd "$work/b2" && u run -d ${P}c8 >"$s2" 2>/dev/null)
wait_for 20 lines_at_least "$s2" 10 || true
u checkpoint --image-path "$work/img9" ${P}c8 2>"$work/c8.err"
c8=$?
check "checkpoint of a pipeline" '[ $c8 = 0 ]' "exit status $c8: $(cat "$work/c8.err" 2>/dev/null)"
n8=$(wc -l <"$s2")
(cd "$work/b2" && u restore -d --image-path "$work/img9" ${P}c8 >>"$s2" 2>"$work/c8r.err")
wait_for 20 lines_at_least "$s2" $((n8 + 20)) || true
# every line went through the reader (r prefix: the writer's stdout is still the
# pipe, not the restore's stdout) and none of the buffered ones was lost
check "the pipeline goes on through its pipe, no line lost ($n8 before)" \
	'[ "$(wc -l <"$s2")" -ge $((n8 + 20)) ] && ! grep -qv "^r" "$s2" && sed "s/^r//" "$s2" | seq_gapless /dev/stdin' \
	"$(cat "$work/c8r.err" 2>/dev/null; sed -n "$((n8 - 1)),$((n8 + 2))p" "$s2")"
u delete --force ${P}c8 >/dev/null 2>&1

# ---- every fd kind (tests/ckpt/fds.c) inside a sandbox: restored by the
# adopted init, pidfd_getfd inside the sandbox's pid namespace, the listener
# re-created in the new network namespace ---------------------------------------------
if [ -n "${FDS:-}" ]; then
	cp "$FDS" "$work/rootfs/bin/fds"
	rm -f "$work/rootfs/tmp/fds.out" "$work/rootfs/tmp/go"
	jq '.process.args = ["/bin/fds", "/tmp/fds.out", "/tmp/fifo", "/tmp/go", "8080"]' \
		"$work/b/config.json" >"$work/b2/config.json"
	(cd "$work/b2" && u run -d ${P}c9 >/dev/null 2>"$work/c9.err")
	fo=$work/rootfs/tmp/fds.out
	wait_for 10 sh -c "[ \$(grep -c READY '$fo' 2>/dev/null) = 2 ]" || true
	u checkpoint --image-path "$work/img10" ${P}c9 2>"$work/c9c.err"
	c9=$?
	check "checkpoint of pipes, FIFO, eventfds, epoll, socketpairs, a listener" '[ $c9 = 0 ]' \
		"exit status $c9, $(grep -c READY "$fo" 2>/dev/null) READY lines: $(cat "$work/c9c.err" 2>/dev/null)"
	(cd "$work/b2" && u restore -d --image-path "$work/img10" ${P}c9 >/dev/null 2>"$work/c9r.err")
	touch "$work/rootfs/tmp/go"
	wait_for 10 sh -c "[ \$(grep -c DONE '$fo' 2>/dev/null) = 2 ]" || true
	check "restored in a sandbox, it checks all 15 of them (robust list included)" \
		'[ "$(grep -c "^OK" "$fo")" = 15 ] && ! grep -q "^FAIL" "$fo"' \
		"$(cat "$work/c9r.err" 2>/dev/null; cat "$fo" 2>/dev/null)"
	u delete --force ${P}c9 >/dev/null 2>&1
fi

# ---- a pty on stdio (process.terminal + --console-socket) is replaced by the
# restore's own console ----------------------------------------------------------
# console_recv SOCK OUT: receive the pty master on SOCK, copy what it reads to OUT
console_recv() {
	timeout 60 python3 - "$1" "$2" <<'PY' &
import array, os, socket, sys
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
# listening before the path appears (a connect between bind and listen is
# refused: seen under load)
s.bind(path + ".tmp")
s.listen(1)
os.rename(path + ".tmp", path)
c, _ = s.accept()
fds = array.array("i")
msg, anc, _, _ = c.recvmsg(4096, socket.CMSG_LEN(4 * fds.itemsize))
for level, kind, data in anc:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
with open(out, "wb", buffering=0) as f:
    while True:
        try:
            d = os.read(fds[0], 4096)
        except OSError:
            break
        if not d:
            break
        f.write(d.replace(b"\r", b""))
PY
}
if command -v python3 >/dev/null; then
	rm -f "$work/rootfs/tmp/count.txt"
	jq '.process.terminal = true' "$work/b/config.json" >"$work/b2/config.json"
	t1o=$work/tty1.txt t2o=$work/tty2.txt
	console_recv "$work/tty1.sock" "$t1o"
	wait_for 10 test -S "$work/tty1.sock" || true
	(cd "$work/b2" && u run -d --console-socket "$work/tty1.sock" ${P}c4 </dev/null >/dev/null 2>"$work/c4.err")
	wait_for 20 lines_at_least "$t1o" 10 || true
	u checkpoint --image-path "$work/img6" ${P}c4 2>"$work/c4c.err"
	c4=$?
	check "checkpoint with a pty on stdio" '[ $c4 = 0 ]' \
		"exit status $c4: $(cat "$work/c4.err" "$work/c4c.err" 2>/dev/null)"
	wait # the first console saw the pty close
	console_recv "$work/tty2.sock" "$t2o"
	wait_for 10 test -S "$work/tty2.sock" || true
	(cd "$work/b2" && u restore -d --console-socket "$work/tty2.sock" --image-path "$work/img6" ${P}c4 \
		</dev/null >/dev/null 2>"$work/c4r.err")
	wait_for 20 lines_at_least "$t2o" 10 || true
	cat "$t1o" "$t2o" >"$work/t12.txt"
	check "restored onto the new console: one gapless sequence" \
		'[ -s "$t2o" ] && gapless "$work/t12.txt" >"$work/gap4"' \
		"$(cat "$work/gap4" "$work/c4r.err" 2>/dev/null; tail -n 2 "$t1o"; head -n 2 "$t2o")"
	check "restore without --console-socket for a terminal bundle is refused" \
		'! (cd "$work/b2" && u restore -d --image-path "$work/img6" ${P}c5 </dev/null >/dev/null 2>&1)'
	u delete --force ${P}c4 >/dev/null 2>&1
	wait
else
	skip_part "pty stdio (no python3)" || failed=$((failed + 1))
fi

# ---- refusals leave nothing ---------------------------------------------------------
cp -r "$work/img2" "$work/tampered"
printf '\xff' | dd of="$work/tampered/pages.img" bs=1 seek=$((4096 + 100)) conv=notrunc 2>/dev/null
(cd "$work/b" && u restore --detach --image-path "$work/tampered" ${P}bad1 >/dev/null 2>"$work/bad1.err")
rc=$?
check "a corrupted image is refused with a clear error" \
	'[ $rc != 0 ] && grep -qi "checksum\|crc" "$work/bad1.err"' "rc $rc: $(cat "$work/bad1.err")"
check "and leaves nothing (record, cgroup, process)" 'nothing_left ${P}bad1'
cp -r "$work/img2" "$work/truncated"
truncate -s -100 "$work/truncated/core.img"
(cd "$work/b" && u restore --detach --image-path "$work/truncated" ${P}bad2 >/dev/null 2>"$work/bad2.err")
rc=$?
check "a truncated image is refused with a clear error" \
	'[ $rc != 0 ] && grep -qi "truncated\|length\|size" "$work/bad2.err"' "rc $rc: $(cat "$work/bad2.err")"
check "and leaves nothing" 'nothing_left ${P}bad2'
jq '.process.capabilities = {"bounding": [], "effective": [], "permitted": []}' \
	"$work/b/config.json" >"$work/b2/config.json"
(cd "$work/b2" && u restore --detach --image-path "$work/img2" ${P}bad3 >/dev/null 2>"$work/bad3.err")
rc=$?
check "an image with more capabilities than config.json allows is refused" \
	'[ $rc != 0 ] && grep -q "capabilities" "$work/bad3.err"' "rc $rc: $(cat "$work/bad3.err")"
check "and leaves nothing" 'nothing_left ${P}bad3'
cp -r "$work/img2" "$work/shared" && chmod g+w "$work/shared/core.img"
(cd "$work/b" && u restore --detach --image-path "$work/shared" ${P}bad2 >/dev/null 2>"$work/bad5.err")
rc=$?
check "an image others may write is refused" \
	'[ $rc != 0 ] && grep -q "writable by nobody else" "$work/bad5.err" && nothing_left ${P}bad2' \
	"rc $rc: $(cat "$work/bad5.err")"
u restore --detach --image-path "$work/nonexistent" ${P}bad3 >/dev/null 2>"$work/bad4.err"
rc=$?
check "a directory without an image is refused" \
	'[ $rc != 0 ] && grep -q "not a checkpoint image" "$work/bad4.err"' "$(cat "$work/bad4.err")"

# ---- an unsupported resource: the sandbox keeps running -------------------------------
jq '.process.args = ["/bin/threads"]' "$work/b/config.json" >"$work/b2/config.json"
out3=$work/out3.txt
(cd "$work/b2" && u run -d ${P}t1 >"$out3" 2>/dev/null)
wait_for 20 lines_at_least "$out3" 5 || true
tpid=$(pid_of ${P}t1)
u checkpoint --image-path "$work/img3" ${P}t1 >/dev/null 2>"$work/t1.err"
rc=$?
check "checkpoint of a multi-threaded process fails naming the pid and the threads" \
	'[ $rc != 0 ] && grep -q "pid $tpid" "$work/t1.err" && grep -qi "thread" "$work/t1.err"' \
	"rc $rc (init $tpid): $(cat "$work/t1.err")"
check "no image is left" '[ ! -e "$work/img3/core.img" ] && [ ! -e "$work/img3/pages.img" ]'
n3=$(wc -l <"$out3")
wait_for 20 lines_at_least "$out3" $((n3 + 10)) || true
check "the sandbox keeps running (same pid, still writing)" \
	'[ "$(status_of ${P}t1)" = running ] && [ "$(pid_of ${P}t1)" = "$tpid" ] && [ "$(wc -l <"$out3")" -ge $((n3 + 10)) ]'

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
