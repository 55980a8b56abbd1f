#!/usr/bin/env bash
# tests/integration/net.sh — the netstack in real sandboxes.
#
# Nothing here touches the host's own network: the test makes two network
# namespaces, T ("the host" as the supervisor sees it) and S ("the
# outside": servers), joined by a veth pair (192.0.2.1 | 192.0.2.2 and
# 2001:db8:1::1 | ::2), and runs `ursa do` inside T with `ip netns exec`.
# T's resolv.conf (ip netns exec bind-mounts /etc/netns/T/resolv.conf)
# points at a DNS server in S.
# Checks: the sandbox's eth0 and its addresses; HTTP (busybox wget) to S;
# 256 MiB each way verified by sha256; half-close; 100 concurrent
# connections; RST; connection refused; UDP; DNS through the gateway; ping;
# IPv6; the policy (T's own addresses, metadata range, T's loopback via the
# gateway); an inbound forward from T's loopback to busybox httpd in the
# sandbox; the forward's splice path (net_fwd.py: both ways by sha256,
# half-close, refused port, beyond the splice cap, no fd leak); --network
# none; hostile frames from inside (malformed, truncated, oversized,
# random) leave the supervisor up and networking working.
set -u
URSA=${URSA:?}
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
T=ursa-t-$$
S=ursa-s-$$
work=$(mktemp -d /tmp/ursa-net.XXXXXX)
chmod 755 "$work"
pids=()
PASS=0
FAIL=0

ok() { echo "ok    $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL  $1${2:+: $2}"; FAIL=$((FAIL + 1)); }

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	# whatever still runs in the test's namespaces (servers, listeners)
	for ns in "$T" "$S"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
	done
	wait 2>/dev/null
	ip netns del "$T" 2>/dev/null
	ip netns del "$S" 2>/dev/null
	rm -rf "/etc/netns/$T" "$work"
}
trap cleanup EXIT

inT() { ip netns exec "$T" "$@"; }
inS() { ip netns exec "$S" "$@"; }

ip netns add "$T" && ip netns add "$S" || { echo "0 passed, 1 failed"; exit 1; }
ip link add vt netns "$T" type veth peer name vs netns "$S"
inT ip link set lo up
inS ip link set lo up
inT ip addr add 192.0.2.1/24 dev vt
inS ip addr add 192.0.2.2/24 dev vs
inT ip -6 addr add 2001:db8:1::1/64 dev vt nodad
inS ip -6 addr add 2001:db8:1::2/64 dev vs nodad
inT ip link set vt up mtu 65520
inS ip link set vs up mtu 65520
mkdir -p "/etc/netns/$T"
echo "nameserver 192.0.2.2" > "/etc/netns/$T/resolv.conf"

# the outside's servers
mkdir -p "$work/www"
head -c 100000 /dev/urandom > "$work/www/file"
cp "$here/net_peer.py" "$work/"
ip netns exec "$S" "$PY" "$work/net_peer.py" serve 192.0.2.2 2001:db8:1::2 > "$work/peer.log" 2>&1 &
pids+=($!)
ip netns exec "$S" busybox httpd -f -p 192.0.2.2:8080 -h "$work/www" &
pids+=($!)
# listeners on T's own address and loopback: the policy must keep them out
ip netns exec "$T" "$PY" -c '
import socket, threading, time
for a in ("192.0.2.1", "127.0.0.1"):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a, 9010)); s.listen(8)
    threading.Thread(target=lambda s=s: [s.accept()[0].sendall(b"HOST\n") for _ in iter(int, 1)], daemon=True).start()
time.sleep(3600)' &
pids+=($!)
for _ in $(seq 100); do grep -q ready "$work/peer.log" && break; sleep 0.1; done

sb() { inT timeout -k 10 300 "$URSA" do -v "$work:/t" "$@"; }

# ---- the device ---------------------------------------------------------------
out=$(sb -- busybox ip -o addr show dev eth0 2>&1)
if echo "$out" | grep -q "inet 10\." && echo "$out" | grep -q "inet6 fd"; then
	ok "eth0 has an IPv4 and an IPv6 address"
else
	fail "eth0 has an IPv4 and an IPv6 address" "$out"
fi
out=$(sb --network none -- busybox ls /sys/class/net 2>&1)
[ "$out" = "lo" ] && ok "--network none: lo only" || fail "--network none: lo only" "$out"

# ---- outbound -------------------------------------------------------------------
out=$(sb -- busybox wget -q -O /t/got http://192.0.2.2:8080/file 2>&1)
cmp -s "$work/got" "$work/www/file" && ok "http GET through the netstack (busybox wget)" ||
	fail "http GET through the netstack (busybox wget)" "$out"
out=$(sb -- busybox ping -c 2 -W 3 192.0.2.2 2>&1)
echo "$out" | grep -q "2 packets received" && ok "ping (ICMP echo)" || fail "ping (ICMP echo)" "$out"
gw=$(sb -- busybox ip -4 route show default 2>/dev/null | awk '{print $3}')
sb -- "$PY" /t/net_peer.py client 192.0.2.2 2001:db8:1::2 "${gw:-10.0.2.1}" 192.0.2.1 > "$work/client.log" 2>&1
while read -r line; do
	case "$line" in
	ok*) ok "${line#ok    }" ;;
	FAIL*) fail "${line#FAIL  }" ;;
	esac
done < "$work/client.log"
grep -q "^ok\|^FAIL" "$work/client.log" || fail "client ran" "$(tail -5 "$work/client.log")"
out=$(sb -- "$PY" -c '
import socket, sys
s = socket.socket(); s.settimeout(5)
try:
    s.connect((sys.argv[1], 9010)); print("reached:", s.recv(10))
except Exception as e:
    print("blocked", e)' "${gw:-10.0.2.1}" 2>&1)
echo "$out" | grep -q "^blocked" && ok "policy: the host's loopback is not reachable through the gateway" ||
	fail "policy: the host's loopback is not reachable through the gateway" "$out"
# ---- settings (--net KEY=VALUE; annotations run.ursa.network.KEY) -------------
out=$(sb --net ipv4=10.77.0.0/16 --net ipv6=fd00:77::/64 -- sh -c 'busybox ip -o addr show dev eth0
	busybox ip route show default; busybox wget -q -O /t/got4 http://192.0.2.2:8080/file && echo GOT' 2>&1)
echo "$out" | grep -q "inet 10.77.0.2/16" && echo "$out" | grep -q "inet6 fd00:77::2/64" &&
	echo "$out" | grep -q "default via 10.77.0.1" && echo "$out" | grep -q "^GOT" &&
	cmp -s "$work/got4" "$work/www/file" &&
	ok "--net ipv4=10.77.0.0/16 ipv6=fd00:77::/64: addresses, gateway, traffic" ||
	fail "--net ipv4=10.77.0.0/16 ipv6=fd00:77::/64: addresses, gateway, traffic" "$out"
out=$(sb --net allow=192.0.2.1/32 -- "$PY" -c '
import socket
s = socket.socket(); s.settimeout(5)
try:
    s.connect(("192.0.2.1", 9010)); print("reached:", s.recv(10))
except Exception as e:
    print("blocked", e)' 2>&1)
echo "$out" | grep -q "reached: b'HOST" && ok "--net allow=192.0.2.1/32 opens the host's own address" ||
	fail "--net allow=192.0.2.1/32 opens the host's own address" "$out"
out=$(sb --net max-flows=2 -- "$PY" -c '
import socket
held, n = [], 0
for i in range(3):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect(("192.0.2.2", 8080)); held.append(s); n += 1
    except Exception as e:
        print("refused", i, e)
print("connected", n)' 2>&1)
echo "$out" | grep -q "^connected 2" && echo "$out" | grep -q "^refused 2" &&
	ok "--net max-flows=2: a third connection is refused" ||
	fail "--net max-flows=2: a third connection is refused" "$out"
out=$(sb --net ipv4=10.77.0.1/16 -- true 2>&1)
[ $? = 125 ] && echo "$out" | grep -q "no host bits" && ok "--net with host bits: refused, clear error" ||
	fail "--net with host bits: refused, clear error" "$out"
out=$(sb -- busybox nslookup test.ursa.example 2>&1)
echo "$out" | grep -q "192.0.2.77" && ok "dns: nslookup through the sandbox's resolv.conf" ||
	fail "dns: nslookup through the sandbox's resolv.conf" "$out"

# ---- inbound forward --------------------------------------------------------------
# (a shell as the sandbox's pid 1, so that SIGTERM ends it: pid 1 ignores
# signals it has no handler for, busybox httpd has none)
ip netns exec "$T" timeout -k 5 60 "$URSA" do -v "$work:/t" -p 127.0.0.1:18080:8080 -- \
	sh -c 'trap "exit 0" TERM; busybox httpd -f -p 8080 -h /t/www & wait' > "$work/fwd.log" 2>&1 &
fwdpid=$!
pids+=($fwdpid)
got=no
for _ in $(seq 100); do
	if inT busybox wget -q -O "$work/got2" http://127.0.0.1:18080/file 2>/dev/null; then
		got=yes
		break
	fi
	sleep 0.1
done
[ $got = yes ] && cmp -s "$work/got2" "$work/www/file" && ok "inbound forward 127.0.0.1:18080 -> httpd:8080 in the sandbox" ||
	fail "inbound forward 127.0.0.1:18080 -> httpd:8080 in the sandbox" "$(cat "$work/fwd.log")"
# a second sandbox cannot take the same port: clear error, nothing left
out=$(inT "$URSA" do -p 127.0.0.1:18080:8080 -- true 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "18080.*in use" && ok "forward to a port in use: clear error" ||
	fail "forward to a port in use: clear error" "rc=$rc $out"
kill "$fwdpid" 2>/dev/null
wait "$fwdpid" 2>/dev/null

# ---- inbound forward: the splice path (actors/netsplice.c) -------------------------
# 64 MiB each way by sha256, half-close, a server bound to the sandbox's
# address, IPv6, a closed port (reset), more clients than the splice cap
# (8 here: the rest go through the tap), no fd left after 200 connections.
head -c $((64 << 20)) /dev/urandom > "$work/blob"
cp "$here/net_fwd.py" "$work/"
rm -f "$work/ready"
ip netns exec "$T" env URSA_NET_SPLICE_MAX=8 timeout -k 5 120 "$URSA" do -v "$work:/t" \
	-p 127.0.0.1:18081:9000 -p 127.0.0.1:18082:9001 -p 127.0.0.1:18083:9002 -p '[::1]:18084:9000' \
	-- "$PY" /t/net_fwd.py serve /t > "$work/splice.log" 2>&1 &
fwdpid=$!
pids+=($fwdpid)
for _ in $(seq 100); do [ -s "$work/ready" ] && break; sleep 0.1; done
sup=""
for p in $(ip netns pids "$T"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = ursa-sup ] && sup=$p; done
if [ -s "$work/ready" ] && [ -n "$sup" ]; then
	inT "$PY" "$work/net_fwd.py" client "$work" "$sup" 8 > "$work/splice-client.log" 2>&1
	while read -r line; do
		case "$line" in
		ok*) ok "${line#ok    }" ;;
		FAIL*) fail "${line#FAIL  }" ;;
		esac
	done < "$work/splice-client.log"
	grep -q "^ok\|^FAIL" "$work/splice-client.log" || fail "splice client ran" "$(tail -5 "$work/splice-client.log")"
else
	fail "splice forward sandbox started" "$(cat "$work/splice.log")"
fi
kill "$fwdpid" 2>/dev/null
wait "$fwdpid" 2>/dev/null
rm -f "$work/blob"

# ---- hostile frames -----------------------------------------------------------------
out=$(sb -- "$PY" -c '
import os, random, socket, struct
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
gw = bytes.fromhex("027572736101")
me = open("/sys/class/net/eth0/address").read().strip().replace(":", "")
me = bytes.fromhex(me)
random.seed(7)
sent = 0
def send(b):
    global sent
    try:
        s.send(b); sent += 1
    except OSError:
        pass
for i in range(3000):
    kind = i % 6
    eth = gw + me
    if kind == 0:   # random bytes
        send(os.urandom(random.randint(1, 1500)))
    elif kind == 1: # truncated IPv4 header
        send(eth + b"\x08\x00" + b"\x45\x00\x00\x28"[: random.randint(0, 4)])
    elif kind == 2: # IPv4 with a lying total length and bad checksum
        send(eth + b"\x08\x00" + struct.pack("!BBHHHBBH4s4s", 0x45, 0, 65535, 1, 0, 64, 6, 0, bytes(4), bytes([192,0,2,2])) + os.urandom(40))
    elif kind == 3: # fragments
        send(eth + b"\x08\x00" + struct.pack("!BBHHHBBH4s4s", 0x45, 0, 60, 1, 0x2001, 64, 17, 0, bytes([10,0,2,2]), bytes([192,0,2,2])) + os.urandom(40))
    elif kind == 4: # IPv6 with a bogus payload length / extension chain
        send(eth + b"\x86\xdd" + struct.pack("!IHBB", 0x60000000, 65000, 0, 64) + os.urandom(32) + os.urandom(random.randint(0, 200)))
    else:           # ARP garbage
        send(eth + b"\x08\x06" + os.urandom(random.randint(0, 60)))
print("sent", sent, flush=True)
# the same sandbox, so the same supervisor, must still serve it
import subprocess
print("wget", subprocess.call(["busybox", "wget", "-q", "-O", "/t/got3", "http://192.0.2.2:8080/file"]))' 2>&1)
echo "$out" | grep -q "^sent [1-9]" || fail "hostile frames were sent" "$out"
echo "$out" | grep -q "^wget 0" && cmp -s "$work/got3" "$work/www/file" &&
	ok "networking works after 3000 hostile frames (same supervisor)" ||
	fail "networking works after 3000 hostile frames (same supervisor)" "$out"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
