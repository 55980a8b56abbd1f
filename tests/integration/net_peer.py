#!/usr/bin/python3
"""tests/integration/net_peer.py — both ends of the network integration test.

`serve ADDR4 ADDR6` runs in the "outside" namespace the test creates: TCP
sink (9000: sha256 of everything received, sent back after EOF), source
(9001: N bytes of a deterministic stream, N read from the first line), echo
(9002: echo until EOF, then close), reset (9003: accept, then RST), UDP echo
(9004), a tiny DNS server (53/udp: A test.ursa.example = 192.0.2.77, AAAA =
2001:db8:1::77, anything else NXDOMAIN) and a TCP listener on 9010 that only
the policy test targets.

`client OUT4 OUT6 GW4` runs inside the sandbox and prints one "ok NAME" or
"FAIL NAME: why" line per check.
"""
import hashlib
import os
import socket
import struct
import sys
import threading
import time

BIG = 256 << 20


def stream(n):
    """n bytes of a deterministic, incompressible-enough stream"""
    block = hashlib.sha256(b"ursa").digest() * 2048  # 64 KiB
    sent = 0
    i = 0
    while sent < n:
        b = bytes([i & 0xFF]) + block[1:]
        b = b[: n - sent]
        yield b
        sent += len(b)
        i += 1


def stream_sha(n):
    h = hashlib.sha256()
    for b in stream(n):
        h.update(b)
    return h.hexdigest()


# ---- server side ------------------------------------------------------------


def tcp_server(addr, port, handler, family):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(256)

    def loop():
        while True:
            c, _ = s.accept()
            threading.Thread(target=handler, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def h_sink(c):
    h = hashlib.sha256()
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        h.update(b)
    c.sendall(h.hexdigest().encode() + b"\n")
    c.close()


def h_source(c):
    line = b""
    while not line.endswith(b"\n"):
        b = c.recv(64)
        if not b:
            c.close()
            return
        line += b
    for b in stream(int(line)):
        c.sendall(b)
    c.close()


def h_echo(c):
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        c.sendall(b)
    c.close()


def h_reset(c):
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    time.sleep(0.2)
    c.close()


def dns_answer(q):
    qid, flags, qd = struct.unpack("!HHH", q[:6])
    i = 12
    labels = []
    while q[i]:
        labels.append(q[i + 1 : i + 1 + q[i]].decode())
        i += q[i] + 1
    qtype = struct.unpack("!H", q[i + 1 : i + 3])[0]
    question = q[12 : i + 5]
    name = ".".join(labels).lower()
    rdata = None
    if name == "test.ursa.example" and qtype == 1:
        rdata = socket.inet_pton(socket.AF_INET, "192.0.2.77")
    elif name == "test.ursa.example" and qtype == 28:
        rdata = socket.inet_pton(socket.AF_INET6, "2001:db8:1::77")
    known = name == "test.ursa.example"
    hdr = struct.pack("!HHHHHH", qid, 0x8180 if known else 0x8183, 1, 1 if rdata else 0, 0, 0)
    ans = b""
    if rdata:
        ans = b"\xc0\x0c" + struct.pack("!HHIH", qtype, 1, 60, len(rdata)) + rdata
    return hdr + question + ans


def serve(a4, a6):
    for fam, a in ((socket.AF_INET, a4), (socket.AF_INET6, a6)):
        tcp_server(a, 9000, h_sink, fam)
        tcp_server(a, 9001, h_source, fam)
        tcp_server(a, 9002, h_echo, fam)
        tcp_server(a, 9003, h_reset, fam)
        tcp_server(a, 9010, h_echo, fam)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((a4, 9004))
    d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    d.bind((a4, 53))

    def udp_loop(sock, fn):
        while True:
            b, peer = sock.recvfrom(65535)
            try:
                sock.sendto(fn(b), peer)
            except Exception:
                pass

    threading.Thread(target=udp_loop, args=(u, lambda b: b), daemon=True).start()
    threading.Thread(target=udp_loop, args=(d, dns_answer), daemon=True).start()
    print("ready", flush=True)
    while True:
        time.sleep(3600)


# ---- client side ------------------------------------------------------------

results = []


def check(name, fn):
    t0 = time.time()
    try:
        r = fn()
        if r is True or r is None:
            print("ok    %s (%.2f s)" % (name, time.time() - t0), flush=True)
            results.append(True)
        else:
            print("FAIL  %s: %s" % (name, r), flush=True)
            results.append(False)
    except Exception as e:
        print("FAIL  %s: %r" % (name, e), flush=True)
        results.append(False)


def conn(host, port, timeout=20):
    return socket.create_connection((host, port), timeout=timeout)


def c_upload(host):
    s = conn(host, 9000, 120)
    for b in stream(BIG):
        s.sendall(b)
    s.shutdown(socket.SHUT_WR)
    got = s.makefile().readline().strip()
    s.close()
    want = stream_sha(BIG)
    return True if got == want else "sha %s != %s" % (got, want)


def c_download(host):
    s = conn(host, 9001, 120)
    s.sendall(b"%d\n" % BIG)
    h = hashlib.sha256()
    n = 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        h.update(b)
        n += len(b)
    s.close()
    if n != BIG:
        return "got %d bytes of %d" % (n, BIG)
    want = stream_sha(BIG)
    return True if h.hexdigest() == want else "sha mismatch"


def c_echo(host, size=100000):
    s = conn(host, 9002)
    data = os.urandom(size)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)  # half-close: the echo must still come back
    got = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        got += b
    s.close()
    return True if got == data else "echo: %d bytes back of %d" % (len(got), len(data))


def c_concurrent(host, n=100):
    socks = [conn(host, 9002) for _ in range(n)]
    datas = [os.urandom(1024) for _ in range(n)]
    for s, d in zip(socks, datas):
        s.sendall(d)
        s.shutdown(socket.SHUT_WR)
    bad = 0
    for s, d in zip(socks, datas):
        got = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
        bad += got != d
        s.close()
    return True if not bad else "%d of %d connections echoed wrong data" % (bad, n)


def c_reset(host):
    s = conn(host, 9003)
    try:
        b = s.recv(10)
        return "expected a reset, got %r" % b
    except ConnectionResetError:
        return True
    finally:
        s.close()


def c_refused(host):
    t0 = time.time()
    try:
        conn(host, 9999, 10).close()
        return "connected to a closed port"
    except ConnectionRefusedError:
        return True if time.time() - t0 < 5 else "refusal took %.1f s" % (time.time() - t0)


def c_udp(host):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(2)
    for _ in range(5):
        u.sendto(b"ursa-udp", (host, 9004))
        try:
            b, _ = u.recvfrom(100)
            return True if b == b"ursa-udp" else "got %r" % b
        except socket.timeout:
            continue
    return "no UDP echo"


def c_dns(gw):
    q = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    for l in b"test.ursa.example".split(b"."):
        q += bytes([len(l)]) + l
    q += b"\x00" + struct.pack("!HH", 1, 1)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(3)
    for _ in range(3):
        u.sendto(q, (gw, 53))
        try:
            a, _ = u.recvfrom(512)
        except socket.timeout:
            continue
        if a[:2] != b"\x12\x34":
            return "wrong id"
        if socket.inet_ntop(socket.AF_INET, a[-4:]) != "192.0.2.77":
            return "wrong answer %r" % a
        return True
    return "no DNS answer through the gateway"


def c_policy(own, port=9010):
    """the supervisor host's own address must be refused"""
    try:
        s = conn(own, port, 5)
        s.close()
        return "reached the host's own address %s:%d" % (own, port)
    except (ConnectionRefusedError, ConnectionResetError, socket.timeout, OSError):
        return True


def client(out4, out6, gw4, own4):
    check("tcp upload 256 MiB, sha256", lambda: c_upload(out4))
    check("tcp download 256 MiB, sha256", lambda: c_download(out4))
    check("tcp echo with half-close", lambda: c_echo(out4))
    check("tcp 100 concurrent connections", lambda: c_concurrent(out4))
    check("tcp reset from the server", lambda: c_reset(out4))
    check("tcp connect to a closed port is refused", lambda: c_refused(out4))
    check("udp echo", lambda: c_udp(out4))
    check("dns through the gateway", lambda: c_dns(gw4))
    check("ipv6 tcp echo", lambda: c_echo(out6, 20000))
    check("policy: the host's own address is refused", lambda: c_policy(own4))
    check("policy: link-local metadata address is refused", lambda: c_policy("169.254.169.254", 80))
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "client":
        client(*sys.argv[2:6])
