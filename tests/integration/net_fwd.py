#!/usr/bin/env python3
# tests/integration/net_fwd.py — the port-forward splice path (net.sh).
#   net_fwd.py serve DIR           inside the sandbox: servers on [::]:9000
#                                  (dual stack) and on eth0's IPv4 :9002
#   net_fwd.py client DIR SUP CAP  on the host side: checks, "ok"/"FAIL" lines
# Commands a client sends first: "UP" (the server answers the sha256 of
# everything until EOF: data after a half-close), "DOWN" (the server sends
# DIR/blob and closes), "HOLD" (the server says "hi PEERADDR", then echoes
# lines until EOF).
import hashlib, os, signal, socket, sys, threading, time


def serve(d):
    # pid 1 of the sandbox: SIGTERM has no effect without a handler
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    def handle(c, peer):
        f = c.makefile("rb")
        cmd = f.readline().split()
        if cmd and cmd[0] == b"UP":
            h = hashlib.sha256()
            while True:
                b = f.read1(1 << 16)
                if not b:
                    break
                h.update(b)
            c.sendall(h.hexdigest().encode() + b"\n")
        elif cmd and cmd[0] == b"DOWN":
            with open(os.path.join(d, "blob"), "rb") as b:
                while True:
                    chunk = b.read(1 << 20)
                    if not chunk:
                        break
                    c.sendall(chunk)
        elif cmd and cmd[0] == b"HOLD":
            c.sendall(("hi %s\n" % peer[0].replace("::ffff:", "")).encode())
            while True:
                line = f.readline()
                if not line:
                    break
                c.sendall(line)
        c.close()

    def loop(s):
        while True:
            c, peer = s.accept()
            threading.Thread(target=handle, args=(c, peer), daemon=True).start()

    s6 = socket.socket(socket.AF_INET6)
    s6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s6.bind(("::", 9000))
    s6.listen(128)
    me = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    me.connect(("192.0.2.2", 9))  # the route's source: eth0's address
    addr = me.getsockname()[0]
    s4 = socket.socket()
    s4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s4.bind((addr, 9002))
    s4.listen(128)
    threading.Thread(target=loop, args=(s4,), daemon=True).start()
    open(os.path.join(d, "ready"), "w").write(addr + "\n")
    loop(s6)


def ok(name, good, why=""):
    print(("ok    " if good else "FAIL  ") + name + ("" if good else ": " + str(why)), flush=True)


def conn(port, host="127.0.0.1"):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam)
    s.settimeout(30)
    s.connect((host, port))
    return s


def up(port, data, host="127.0.0.1"):
    s = conn(port, host)
    s.sendall(b"UP\n" + data)
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        got += b
    s.close()
    return got.strip().decode()


def fds(pid):
    return len(os.listdir("/proc/%s/fd" % pid))


def client(d, sup, cap):
    cap = int(cap)
    blob = open(os.path.join(d, "blob"), "rb").read()
    want = hashlib.sha256(blob).hexdigest()
    sbaddr = open(os.path.join(d, "ready")).read().strip()
    # host -> sandbox, then the answer after our half-close
    try:
        got = up(18081, blob)
        ok("forward (splice): %d MiB host->sandbox, sha256 answered after half-close" % (len(blob) >> 20), got == want, got)
    except Exception as e:
        ok("forward (splice): host->sandbox", False, e)
    # sandbox -> host until the server's close
    try:
        s = conn(18081)
        s.sendall(b"DOWN\n")
        h = hashlib.sha256()
        n = 0
        while True:
            b = s.recv(1 << 20)
            if not b:
                break
            h.update(b)
            n += len(b)
        s.close()
        ok("forward (splice): %d MiB sandbox->host by sha256" % (len(blob) >> 20), h.hexdigest() == want, n)
    except Exception as e:
        ok("forward (splice): sandbox->host", False, e)
    # a server bound to the sandbox's address (not 0.0.0.0), and IPv6
    try:
        got = up(18083, b"addr-bound")
        ok("forward (splice) to a server bound to the sandbox's address", got == hashlib.sha256(b"addr-bound").hexdigest(), got)
    except Exception as e:
        ok("forward (splice) to a server bound to the sandbox's address", False, e)
    try:
        got = up(18084, b"v6", "::1")
        ok("forward (splice) over IPv6 [::1]", got == hashlib.sha256(b"v6").hexdigest(), got)
    except Exception as e:
        ok("forward (splice) over IPv6 [::1]", False, e)
    # nothing listens on the sandbox side: the client is reset
    try:
        s = conn(18082)
        s.sendall(b"x")
        r = s.recv(10)
        ok("forward to a closed sandbox port: client reset", False, "read %r" % r)
    except ConnectionResetError:
        ok("forward to a closed sandbox port: client reset", True)
    except Exception as e:
        ok("forward to a closed sandbox port: client reset", False, e)
    # the client half-closes, then closes with data still arriving: its RST
    # hits a relay socket in CLOSE_WAIT, whose next splice fails with EPIPE
    # (splice cannot say MSG_NOSIGNAL: the supervisor must ignore SIGPIPE)
    try:
        for _ in range(5):
            s = conn(18081)
            s.sendall(b"DOWN\n")
            n, half = 0, False
            while n < (24 << 20):  # keep the relay pumping toward us
                b = s.recv(1 << 20)
                if not b:
                    break
                n += len(b)
                if n >= (8 << 20) and not half:
                    s.shutdown(socket.SHUT_WR)
                    half = True
            s.close()  # unread data: RST, mid-stream
            time.sleep(0.1)
        os.kill(int(sup), 0)
        got = up(18081, b"after-rst")
        ok("client reset after its half-close while the sandbox sends: supervisor alive, forward works",
           got == hashlib.sha256(b"after-rst").hexdigest(), got)
    except Exception as e:
        ok("client reset after its half-close while the sandbox sends: supervisor alive", False, e)
    time.sleep(0.3)  # the relays above wind down
    # more connections than the splice cap: the rest cross the tap; the
    # server sees spliced ones from its own address, the others from the
    # gateway
    try:
        held = []
        for i in range(cap + 12):
            s = conn(18081)
            s.sendall(b"HOLD\n")
            held.append(s)
        peers, files = [], []
        for s in held:
            files.append(s.makefile("rb"))
            peers.append(files[-1].readline().split()[1].decode())
        for i, s in enumerate(held):
            s.sendall(b"line %d\n" % i)
        good = all(f.readline() == b"line %d\n" % i for i, f in enumerate(files))
        spliced = peers.count(sbaddr)
        ok("%d connections, splice cap %d: %d spliced, %d through the tap, all echo" % (len(held), cap, spliced, len(held) - spliced),
           good and spliced == cap and len(held) - spliced == 12, peers)
        for f, s in zip(files, held):
            f.close()
            s.close()
    except Exception as e:
        ok("connections beyond the splice cap", False, e)
    time.sleep(0.5)
    # no fd left in the supervisor after 200 connections
    try:
        base = fds(sup)
        bad = 0
        for i in range(200):
            if up(18081, b"%d" % i) != hashlib.sha256(b"%d" % i).hexdigest():
                bad += 1
        for _ in range(50):
            if fds(sup) <= base:
                break
            time.sleep(0.1)
        ok("200 spliced connections, supervisor fds %d -> %d" % (base, fds(sup)), bad == 0 and fds(sup) <= base, bad)
    except Exception as e:
        ok("200 spliced connections", False, e)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        client(*sys.argv[2:5])
