#!/usr/bin/env bash
# tests/ckpt/fds.sh — checkpoint/restore of the fd kinds beyond files
# (tests/ckpt/fds.c: pipes, a FIFO, eventfds, an epoll set, socketpairs,
# a listening TCP socket, fds shared by a parent and its child): dump with
# ckpt_tool (the original runs on), let the original check itself (the dump
# must consume nothing), let it exit, restore, let the copy check itself;
# every "OK" line must be there both times and no "FAIL". UDP sockets (python3):
# a bound echo server answers after restore, a connected one keeps its peer.
# A signalfd with a pending signal and timerfds (periodic, expired with an
# unread expiration, disarmed) work after restore (TIMERS: tests/ckpt/timers.c).
# Then the refusal: a netlink socket is refused naming its pid and fd, and
# the process keeps running. Needs root. Env: CKPT_TOOL, FDS, TIMERS.
set -u
: "${CKPT_TOOL:?}" "${FDS:?}"
W=$(mktemp -d /tmp/ursa-ckpt-fds.XXXXXX)
P=
cleanup() {
	[ -n "$P" ] && kill -9 $P ${kids:-} 2>/dev/null
	[ -n "${R:-}" ] && kill -9 "$R" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$W/out" ] && cat "$W/out"; exit 1; }
wait_for() { # SECONDS CMD...
	local end=$((SECONDS + $1)); shift
	until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.02; done
}
port=$((20000 + $$ % 12000)) # below the ephemeral range
while ss -Hltn "sport = :$port" | grep -q .; do port=$((port + 1)); done
"$FDS" "$W/out" "$W/fifo" "$W/go" $port </dev/null >/dev/null 2>&1 &
P=$!
wait_for 10 sh -c "[ \$(grep -c READY '$W/out' 2>/dev/null) = 2 ]" || fail "workload not ready"
mkdir -p "$W/img" "$W/img3"
"$CKPT_TOOL" dump $P "$W/img" >"$W/dump.log" 2>"$W/dump.err" || fail "dump: $(cat "$W/dump.err")"
cat "$W/dump.log"
# the dump consumed nothing: the original, left running, finds everything
kids=$(cat /proc/$P/task/$P/children)
touch "$W/go"
wait_for 10 sh -c "[ \$(grep -c DONE '$W/out' 2>/dev/null) = 2 ]" || fail "the original did not finish"
grep '^FAIL' "$W/out" && fail "a check of the original failed after the dump"
[ "$(grep -c '^OK' "$W/out")" = 15 ] || fail "the original: expected 15 OK lines"
echo "ok 1 the dump left every queue, counter and socket of the original intact (15 checks, robust list included)"
wait $P 2>/dev/null
wait_for 5 sh -c "! kill -0 $P $kids 2>/dev/null" || fail "the original did not exit"
P=
# the restored tree finds the same (GO exists: it checks at once)
"$CKPT_TOOL" restore "$W/img" >"$W/restore.log" 2>"$W/restore.err" </dev/null ||
	fail "restore: $(cat "$W/restore.err")"
cat "$W/restore.log"
R=$(awk '/^pid/ {print $2}' "$W/restore.log")
wait_for 10 sh -c "[ \$(grep -c DONE '$W/out' 2>/dev/null) = 4 ]" || fail "no DONE after restore"
oks=$(grep -c '^OK' "$W/out")
grep '^FAIL' "$W/out" && fail "a check failed after restore"
[ "$oks" = 30 ] || fail "expected 15 more OK lines after the restore, got $((oks - 15))"
echo "ok 2 restored: pipes, FIFO, eventfds, epoll, socketpairs, listening socket, shared fds, robust list (15 checks)"
wait_for 5 sh -c "! kill -0 $R 2>/dev/null" || true
R=

# ---- UDP sockets: a bound echo server and a connected client socket ----------------
# (datagrams queued at the checkpoint are dropped: none are in flight here)
if [ -x /usr/bin/python3 ]; then
	uport=$((port + 1))
	while ss -Hlun "sport = :$uport" | grep -q .; do uport=$((uport + 1)); done
	/usr/bin/python3 -c '
import socket, sys, os, time
srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
cli = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
cli.connect(("::1", 9))
open(sys.argv[2], "w").write("%d %d\n" % (cli.getsockname()[1], os.getpid()))
while True:
    data, peer = srv.recvfrom(2048)
    srv.sendto(b"echo " + data + b" " + str(cli.getpeername()[1]).encode(), peer)
' $uport "$W/udp.info" </dev/null >/dev/null 2>&1 &
	P=$!
	wait_for 5 test -s "$W/udp.info" || fail "UDP workload not ready"
	udp_ask() { # the echo for one datagram, or nothing after 2 s
		/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
s.sendto(sys.argv[2].encode(), ("127.0.0.1", int(sys.argv[1])))
try: print(s.recvfrom(2048)[0].decode())
except OSError: pass
' $uport "$1"
	}
	[ "$(udp_ask one)" = "echo one 9" ] || fail "UDP echo before the checkpoint"
	mkdir -p "$W/imgu"
	"$CKPT_TOOL" dump $P "$W/imgu" >"$W/dumpu.log" 2>"$W/dumpu.err" || fail "UDP dump: $(cat "$W/dumpu.err")"
	kill -9 $P
	wait $P 2>/dev/null
	P=
	"$CKPT_TOOL" restore "$W/imgu" >"$W/restoreu.log" 2>"$W/restoreu.err" </dev/null ||
		fail "UDP restore: $(cat "$W/restoreu.err")"
	R=$(awk '/^pid/ {print $2}' "$W/restoreu.log")
	[ "$(udp_ask two)" = "echo two 9" ] || fail "UDP echo after restore"
	ss -Hun "dport = :9" | grep -q "\[::1\]:9" || fail "the connected UDP socket is not connected after restore"
	echo "ok 3 UDP: a bound server answers after restore, a connected socket keeps its peer"
	kill -9 "$R"
	R=
fi

# ---- a unix socket listening on a path, with an accepted connection ---------------
if [ -x /usr/bin/python3 ]; then
	/usr/bin/python3 -c '
import socket, sys, os, time
path, info, go = sys.argv[1:4]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(7)
cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
cli.connect(path)
acc, _ = srv.accept()
cli.send(b"queued")
open(info, "w").write("ready\n")
while not os.path.exists(go):
    time.sleep(0.01)
out = open(info, "a")
out.write("OK accepted end has the queued bytes\n" if acc.recv(100) == b"queued" else "FAIL queue\n")
acc.send(b"back")
out.write("OK client end still connected\n" if cli.recv(100) == b"back" else "FAIL client\n")
out.flush()
while True:
    c, _ = srv.accept()
    c.send(b"echo " + c.recv(100))
    c.close()
' "$W/u.sock" "$W/u.info" "$W/ugo" </dev/null >/dev/null 2>&1 &
	P=$!
	wait_for 5 grep -q ready "$W/u.info" || fail "unix listener workload not ready"
	mkdir -p "$W/imgl"
	"$CKPT_TOOL" dump $P "$W/imgl" >"$W/dumpl.log" 2>"$W/dumpl.err" || fail "unix listener dump: $(cat "$W/dumpl.err")"
	kill -9 $P
	wait $P 2>/dev/null
	P=
	[ -S "$W/u.sock" ] || fail "the socket file should still be there (the restore replaces it)"
	"$CKPT_TOOL" restore "$W/imgl" >"$W/restorel.log" 2>"$W/restorel.err" </dev/null ||
		fail "unix listener restore: $(cat "$W/restorel.err")"
	R=$(awk '/^pid/ {print $2}' "$W/restorel.log")
	touch "$W/ugo"
	wait_for 5 sh -c "[ \$(grep -c '^OK' '$W/u.info') = 2 ]" || fail "unix listener after restore: $(cat "$W/u.info")"
	got=$(/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(2)
s.connect(sys.argv[1]); s.send(b"hi"); print(s.recv(100).decode())
' "$W/u.sock" 2>&1)
	[ "$got" = "echo hi" ] || fail "a new connection to the restored listener: $got"
	echo "ok 4 a unix socket listening on a path: its accepted connection and queue, new connections"
	kill -9 "$R"
	R=
fi

# ---- signalfd and timerfds (tests/ckpt/timers.c) -----------------------------------
if [ -n "${TIMERS:-}" ]; then
	"$TIMERS" "$W/tout" "$W/tgo" </dev/null >/dev/null 2>&1 &
	P=$!
	wait_for 5 grep -q READY "$W/tout" || fail "timers workload not ready"
	mkdir -p "$W/imgt"
	"$CKPT_TOOL" dump $P "$W/imgt" >"$W/dumpt.log" 2>"$W/dumpt.err" || fail "timers dump: $(cat "$W/dumpt.err")"
	kill -9 $P
	wait $P 2>/dev/null
	P=
	"$CKPT_TOOL" restore "$W/imgt" >"$W/restoret.log" 2>"$W/restoret.err" </dev/null ||
		fail "timers restore: $(cat "$W/restoret.err")"
	R=$(awk '/^pid/ {print $2}' "$W/restoret.log")
	touch "$W/tgo"
	wait_for 5 grep -q DONE "$W/tout" || fail "timers: no DONE after restore: $(cat "$W/tout")"
	grep '^FAIL' "$W/tout" && fail "timers: a check failed after restore"
	[ "$(grep -c '^OK' "$W/tout")" = 8 ] || fail "timers: expected 8 OK lines: $(cat "$W/tout")"
	echo "ok 5 signalfd with a pending signal, periodic/expired/disarmed timerfds restored (8 checks)"
	R=
fi

# ---- refusal: a netlink socket ----------------------------------------------------
if [ -x /usr/bin/python3 ]; then
	/usr/bin/python3 -c 'import socket,time; s=socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); time.sleep(60)' &
	P=$!
	# its socket made (a socket fd among its fds), up to 20 s
	for _ in $(seq 400); do ls -l /proc/$P/fd 2>/dev/null | grep -q 'socket:' && break; sleep 0.05; done
	if "$CKPT_TOOL" dump $P "$W/img3" 2>"$W/nl.err" >/dev/null; then fail "netlink socket: dump succeeded"; fi
	grep -q "pid $P: fd [0-9]*: socket:\[[0-9]*\] is not a unix, TCP or UDP socket" "$W/nl.err" ||
		fail "netlink refusal message: $(cat "$W/nl.err")"
	kill -0 $P || fail "the process died after the refused dump"
	[ ! -e "$W/img3/core.img" ] || fail "an image was left"
	echo "ok 6 a netlink socket is refused naming pid and fd; the process runs on"
	kill -9 $P
	wait $P 2>/dev/null
	P=
	# a datagram client connected to a bound socket: refused, not re-made wrongly
	/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1])
c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); c.connect(sys.argv[1])
time.sleep(60)' "$W/log.sock" &
	P=$!
	wait_for 5 test -S "$W/log.sock" || fail "dgram workload not ready"
	mkdir -p "$W/img5"
	if "$CKPT_TOOL" dump $P "$W/img5" 2>"$W/dg.err" >/dev/null; then fail "dgram client: dump succeeded"; fi
	grep -q "pid $P: fd [0-9]*: a unix datagram socket connected to a bound one" "$W/dg.err" ||
		fail "dgram client refusal message: $(cat "$W/dg.err")"
	echo "ok 7 a datagram client connected to a bound socket is refused"
	kill -9 $P
	wait $P 2>/dev/null
	P=
fi
echo "all fd checks passed"
