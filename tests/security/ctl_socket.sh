#!/bin/bash
# Control socket ROOT/ID/ctl.sock: non-root host users must not reach it; a
# flood of idle connections, huge and malformed messages must not wedge the
# supervisor (root-only attacker: robustness, not a privilege boundary).
. "$(dirname "$0")/lib.sh"
b=$WORK/b; mkbundle "$b"; newid ctl
(cd "$b" && "$URSA" --root "$SECROOT" create "$id" >/dev/null 2>&1) || exit 2
sock=$SECROOT/$id/ctl.sock
stat -c '%A %U %n' "$SECROOT" "$SECROOT/$id" "$sock"
fail=0
# 1. an unprivileged user sends "start"
if setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c "
import socket,sys
s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET); s.connect('$sock'); s.send(b'start\0'); print('nobody got:',s.recv(100))" 2>&1 | tee "$WORK/nobody" | grep -q 'got:'; then fail=1; fi
sed 's/^/  nobody: /' "$WORK/nobody" | tail -1
[ "$(u state "$id" | jq -r .status)" = created ] || { echo "  container left created state!"; fail=1; }
# 2. root: 3000 idle connections, a 1 MiB message, garbage, then a real start
sup=$(jq .sup_pid "$SECROOT/$id/state.json")
echo "  supervisor RLIMIT_NOFILE soft=$(awk '/Max open files/{print $4}' /proc/$sup/limits) (lowered to 200 for the test)"
prlimit --pid "$sup" --nofile=200:200; lim=200
rm -f "$WORK/flooded" "$WORK/release"
python3 - "$sock" $((lim + 200)) "$WORK" <<'PY' &
import os,socket,sys,time,resource
n=int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE,(n+100,n+100))
conns=[]
for i in range(n):
    s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)
    try: s.connect(sys.argv[1]); conns.append(s)
    except OSError as e: print("  connect",i,e); break
for m in (b"x"*65000, b"\0\0\0", b"start-not", b"\xff"*255):
    s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET); s.settimeout(5)
    try: s.connect(sys.argv[1])
    except OSError as e: print("  connect for malformed:", e); continue
    try: s.settimeout(5); s.send(m); print("  reply to", m[:10], s.recv(300)[:60])
    except OSError as e: print("  malformed:", e)
print("  idle connections held:", len(conns)); sys.stdout.flush()
open(sys.argv[3] + "/flooded", "w").close()
# hold them until the shell is done with its checks and the start (60 s at most)
end = time.monotonic() + 60
while not os.path.exists(sys.argv[3] + "/release") and time.monotonic() < end:
    time.sleep(0.05)
PY
pyp=$!
# the flood is in place: every connection made and each malformed message answered or refused
i=0; while [ ! -e "$WORK/flooded" ] && kill -0 $pyp 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
[ -e "$WORK/flooded" ] || echo "  the flooding client did not get its connections in place"
sup=$(jq .sup_pid "$SECROOT/$id/state.json")
fds=$(ls /proc/$sup/fd | wc -l); cpu1=$(awk '{print $14+$15}' /proc/$sup/stat); sleep 2; cpu2=$(awk '{print $14+$15}' /proc/$sup/stat)
echo "  supervisor fds=$fds, cpu ticks in 2s while flooded: $((cpu2-cpu1))"
timeout 15 "$URSA" --root "$SECROOT" start "$id"; src=$?
echo "  start while flooded: rc=$src status=$(u state "$id" | jq -r .status)"
touch "$WORK/release"
wait $pyp
# the supervisor closes them as it sees the hangups: poll (20 s) for the count to come down
i=0; while fds2=$(ls /proc/$sup/fd | wc -l); [ "$fds2" -gt 64 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
echo "  supervisor fds after the clients left: $fds2"
[ $fail = 1 ] && broken "non-root user drove the control socket"
[ $src != 0 ] && partial "flood of idle connections blocks ursa start (root-only attacker)"
[ $((cpu2-cpu1)) -gt 100 ] && partial "supervisor spins under connection flood"
[ "$fds2" -gt 64 ] && partial "supervisor leaks connection fds"
held "socket root-only; supervisor survives flood and malformed messages"
