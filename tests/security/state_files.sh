#!/bin/bash
# State under --root: ids with path characters, a pre-created ROOT/ID symlink,
# a state.json naming another process (wrong start time), and an --root that
# an unprivileged user owns (swap ROOT/ID -> poststop hook as root).
. "$(dirname "$0")/lib.sh"
b=$WORK/b; mkbundle "$b"; fail=0; part=0
cd "$b"
for bad in ../escape a/b /abs .hidden '-x' "$(printf 'a\nb')"; do
	"$URSA" --root "$SECROOT" create "$bad" >/dev/null 2>&1 && { echo "  id '$bad' ACCEPTED"; fail=1; "$URSA" --root "$SECROOT" delete --force "$bad"; }
done
ls "$SECROOT/.." | grep -qx escape && { echo "  ../escape created outside root"; fail=1; }
# pre-created ROOT/ID symlink to a host dir
mkdir -p "$SECROOT" "$WORK/target"; ln -sfn "$WORK/target" "$SECROOT/symid"
"$URSA" --root "$SECROOT" create symid >/dev/null 2>&1 && { echo "  create through ROOT/ID symlink accepted"; fail=1; }
[ -n "$(ls -A "$WORK/target")" ] && { echo "  wrote into symlink target: $(ls "$WORK/target")"; fail=1; }
rm -f "$SECROOT/symid"
# state.json pointing at a host process with a wrong start time
sleep 300 & victim=$!; sleep 0.3   # a different start tick than the init
newid st; "$URSA" --root "$SECROOT" create "$id" >/dev/null 2>&1 || exit 2
# (a pid with its start time: once the container is gone, its pids may be
# anyone's, and a kill -9 of them hit the suite's runner once)
real=$(jq -r '"\(.pid):\(.pid_start)"' "$SECROOT/$id/state.json")
rs=$(jq -r '"\(.sup_pid):\(.sup_start)"' "$SECROOT/$id/state.json")
kill_same() { # PID:START...: SIGKILL each only while it is that process
	local t p
	for t in "$@"; do
		p=${t%%:*}
		[ -n "$p" ] && [ "$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f20)" = "${t#*:}" ] &&
			kill -9 "$p" 2>/dev/null
	done
}
jq --argjson v $victim '.pid=$v | .sup_pid=$v' "$SECROOT/$id/state.json" >"$WORK/s" && cp "$WORK/s" "$SECROOT/$id/state.json"
u kill "$id" KILL 2>/dev/null; u delete --force "$id" 2>/dev/null
kill -0 $victim 2>/dev/null || { echo "  forged pid (wrong start time) was killed"; fail=1; }
kill_same "$real" "$rs"; kill $victim 2>/dev/null
wait_for 20 gone "${real%%:*}" "${rs%%:*}" "$victim" # (their cgroups are emptied below)
echo "$(jq -r .cgroup "$SECROOT/$id/state.json" 2>/dev/null)" | tr ';' '\n' | sed -n 's/^[a-z_]*=1://p' | while read -r d; do rmdir "$d" 2>/dev/null; done
# --root owned by an unprivileged user
ER=/tmp/sec-userroot.$$; mkdir -m 0777 "$ER"; chown 65534:65534 "$ER"
if ! "$URSA" --root "$ER" create victimc >/dev/null 2>"$ER.err"; then
	# the defense since 2026-11-30: a --root others can write to is refused outright
	if grep -q "must belong to uid" "$ER.err"; then
		echo "  --root writable by uid 65534 refused: $(head -c 160 "$ER.err")"
		rm -rf "$ER" "$ER.err"
		[ "${part:-0}" = 1 ] && { echo "PARTIAL"; exit 3; }
		echo "HELD: ids, symlinked state dirs, forged pids and foreign --root refused"
		exit 0
	fi
	exit 2
fi
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "
  mv $ER/victimc $ER/victimc.old && mkdir $ER/victimc &&
  printf '%s' '{\"id\":\"victimc\",\"pid\":0,\"started\":true}' > $ER/victimc/state.json &&
  printf '%s' '{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"true\"],\"cwd\":\"/\"},\"root\":{\"path\":\"/\"},\"hooks\":{\"poststop\":[{\"path\":\"/bin/sh\",\"args\":[\"sh\",\"-c\",\"id -u > $ER/pwned\"]}]}}' > $ER/victimc/config.json" 2>&1 | sed 's/^/  swap: /'
"$URSA" --root "$ER" delete --force victimc >/dev/null 2>&1
if [ -s "$ER/pwned" ]; then echo "  poststop hook planted by uid 65534 ran as uid $(cat "$ER/pwned")"; part=1; fi
# clean the real one (its supervisor/init from victimc.old)
p=$(jq -r '"\(.sup_pid):\(.sup_start)"' "$ER/victimc.old/state.json" 2>/dev/null)
i=$(jq -r '"\(.pid):\(.pid_start)"' "$ER/victimc.old/state.json" 2>/dev/null)
cg=$(jq -r .cgroup "$ER/victimc.old/state.json" 2>/dev/null)
kill_same "$i" "$p"
wait_for 20 gone "${i%%:*}" "${p%%:*}"
echo "$cg" | tr ';' '\n' | sed -n 's/^[a-z_]*=1://p' | while read -r d; do rmdir "$d" 2>/dev/null; done
rm -rf "$ER"
[ $fail = 1 ] && broken "see above"
[ $part = 1 ] && partial "ursa trusts an --root that a non-root user can write (operator must choose a root-owned --root)"
held "ids validated, symlinked ROOT/ID refused, forged pids rejected"
