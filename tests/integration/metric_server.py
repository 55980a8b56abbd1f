#!/usr/bin/python3
# tests/integration/metric_server.py — the client side of metric_server.sh:
# raw-socket HTTP requests (so malformed ones can be sent), the checks, and
# fake sandboxes (a control socket that hangs, closes, or answers garbage).
#
#   metric_server.py fake MODE SOCKET      hang | close | junk (runs until killed)
#   metric_server.py scrape ADDR ...       the checks of one phase (see main)
#
# ADDR is host:port or unix:PATH. Output: "ok/FAIL name" lines and a
# closing "N passed, N failed"; exit status 1 if anything failed.
import json
import os
import signal
import socket
import sys
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok    " + name, flush=True)
    else:
        failed += 1
        print("FAIL  " + name + ("\n      " + str(detail)[:600] if detail else ""), flush=True)


def connect(addr, timeout=10):
    if addr.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(addr[5:])
    else:
        host, port = addr.rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=timeout)
    return s


def read_all(s):
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def parse_response(data):
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ")[1])
    except (IndexError, ValueError):
        return None, {}, data
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        hdrs[k.strip().lower().decode()] = v.strip().decode()
    return status, hdrs, body


def request(addr, raw, timeout=10):
    """Send raw bytes, read to EOF: (status, headers, body, seconds)."""
    t0 = time.monotonic()
    s = connect(addr, timeout)
    try:
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer (and close) before reading it all
        data = read_all(s)
    finally:
        s.close()
    st, h, b = parse_response(data)
    return st, h, b, time.monotonic() - t0


GET = b"GET /metrics HTTP/1.1\r\nHost: test\r\nUser-Agent: t\r\n\r\n"


def scrape(addr, timeout=10):
    st, h, body, dt = request(addr, GET, timeout)
    return st, h, body.decode("utf-8", "replace"), dt


def families(text):
    return list(text_string_to_metric_families(text))


def sample(fams, name, **labels):
    for f in fams:
        for s in f.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None


def valid_exposition(tag, text):
    """Parses, and every family's HELP and TYPE appear once."""
    try:
        fams = families(text)
    except Exception as e:  # the parser's own error
        check(tag + ": parses with prometheus_client", False, repr(e) + "\n" + text[:400])
        return None
    check(tag + ": parses with prometheus_client", len(fams) >= 5, text[:300])
    types = [ln.split()[2] for ln in text.splitlines() if ln.startswith("# TYPE ")]
    helps = [ln.split()[2] for ln in text.splitlines() if ln.startswith("# HELP ")]
    dup = sorted({n for n in types if types.count(n) > 1} | {n for n in helps if helps.count(n) > 1})
    check(tag + ": HELP and TYPE once per family", not dup and len(types) == len(fams), dup)
    names = [f.name for f in fams]
    check(tag + ": each family parsed once", len(names) == len(set(names)), names)
    return fams


# ---- phases ------------------------------------------------------------------


def phase_sandboxes(addr, live, dead, scrape_timeout):
    """Live sandboxes appear; dead/hung/garbage ones are skipped without
    holding the scrape past one scrape timeout (they are queried in parallel)."""
    st, h, text, dt = scrape(addr)
    check("scrape: 200", st == 200, (st, text[:300]))
    check("scrape: Content-Type is text/plain version=0.0.4",
          "text/plain" in h.get("content-type", "") and "0.0.4" in h.get("content-type", ""), h)
    check("scrape: Content-Length matches", h.get("content-length") == str(len(text.encode())),
          (h.get("content-length"), len(text.encode())))
    fams = valid_exposition("scrape", text)
    if fams is None:
        return
    for sb in live:
        v = sample(fams, "ursa_supervisor_control_requests_total", sandbox=sb, request="metrics")
        check(f"scrape: live sandbox {sb} has its supervisor's samples", v is not None and v >= 1, v)
        check(f"scrape: ursa_sandbox_up{{sandbox={sb}}} == 1",
              sample(fams, "ursa_sandbox_up", sandbox=sb) == 1)
    for sb in dead:
        check(f"scrape: ursa_sandbox_up{{sandbox={sb}}} == 0",
              sample(fams, "ursa_sandbox_up", sandbox=sb) == 0,
              sample(fams, "ursa_sandbox_up", sandbox=sb))
        others = [s for f in fams for s in f.samples
                  if s.labels.get("sandbox") == sb and f.name != "ursa_sandbox_up"]
        check(f"scrape: nothing else from skipped sandbox {sb}", not others, others[:3])
        check(f"scrape: a comment says {sb} was skipped",
              f"# ursa metric-server: sandbox {sb} skipped" in text)
    errs = sum(s.value for f in fams for s in f.samples if s.name == "ursa_scrape_errors_total")
    check("scrape: ursa_scrape_errors_total counts the skipped sandboxes", errs >= len(dead), errs)
    # all hung sandboxes time out together: one scrape timeout, not one each
    check(f"scrape: done in < 2 x scrape timeout ({dt:.2f}s)", dt < 2 * scrape_timeout + 1.0, dt)
    n = sample(fams, "ursa_scrape_sandboxes")
    check("scrape: ursa_scrape_sandboxes counts every directory", n == len(live) + len(dead), n)
    return fams


def phase_reasons(addr, expect):
    """expect: {"timeout": 1, "closed": 1, ...} at least, in the counter."""
    st, h, text, dt = scrape(addr)
    fams = families(text) if st == 200 else []
    for reason, n in expect.items():
        v = sample(fams, "ursa_scrape_errors_total", reason=reason)
        check(f"errors counted: reason={reason} >= {n}", v is not None and v >= n, v)


def phase_kill_mid_scrape(addr, victim, pid, live):
    """The victim's supervisor is stopped (so its answer hangs); kill it
    while a scrape waits for it: the scrape completes, victim down."""
    out = {}

    def go():
        out["r"] = scrape(addr)
    t = threading.Thread(target=go)
    t.start()
    time.sleep(0.3)
    os.kill(pid, signal.SIGKILL)
    t.join(30)
    st, h, text, dt = out.get("r", (None, {}, "", 0))
    check("kill mid-scrape: 200", st == 200, (st, text[:200]))
    fams = valid_exposition("kill mid-scrape", text) if st == 200 else None
    if fams:
        check("kill mid-scrape: victim is down", sample(fams, "ursa_sandbox_up", sandbox=victim) == 0)
        check("kill mid-scrape: the others are up",
              all(sample(fams, "ursa_sandbox_up", sandbox=s) == 1 for s in live))


MALFORMED = [
    ("garbage", b"garbage\r\n\r\n", 400),
    ("binary", bytes(range(0, 32)) + b"\r\n\r\n", 400),
    ("missing CR (bare LF)", b"GET /metrics HTTP/1.1\nHost: x\n\n", 400),
    ("bare CR", b"GET /metrics HTTP/1.1\rHost: x\r\n\r\n", 400),
    ("no Host in HTTP/1.1", b"GET /metrics HTTP/1.1\r\n\r\n", 400),
    ("two Hosts", b"GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ("space before colon", b"GET /metrics HTTP/1.1\r\nHost : a\r\n\r\n", 400),
    ("obs-fold", b"GET /metrics HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),
    ("bad version", b"GET /metrics HTTX/1.1\r\nHost: a\r\n\r\n", 400),
    ("POST", b"POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc", 405),
    ("lowercase get", b"get /metrics HTTP/1.1\r\nHost: a\r\n\r\n", 405),
    ("DELETE", b"DELETE /metrics HTTP/1.0\r\n\r\n", 405),
    ("other path", b"GET /metricsx HTTP/1.1\r\nHost: a\r\n\r\n", 404),
    ("root path", b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 404),
    ("oversized head", b"GET /metrics HTTP/1.1\r\nHost: a\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", 431),
    ("oversized, never ends", b"GET /metrics HTTP/1.1\r\nX: " + b"b" * 9000, 431),
    ("HTTP/2.0", b"GET /metrics HTTP/2.0\r\nHost: a\r\n\r\n", 505),
]


def phase_malformed(addr, pid):
    for name, raw, want in MALFORMED:
        try:
            st, h, body, dt = request(addr, raw)
        except OSError as e:
            st, dt = repr(e), 0
        check(f"malformed {name}: {want}", st == want, st)
        st2, _, text, _ = scrape(addr)
        check(f"malformed {name}: still serving", st2 == 200 and "ursa_sandbox_up" in text, st2)
    # the head as a valid GET plus absolute-form and query string
    st, _, _, _ = request(addr, b"GET http://x/metrics?a=b HTTP/1.1\r\nHost: x\r\n\r\n")
    check("absolute-form and query: 200", st == 200, st)
    st, _, _, _ = request(addr, b"GET /metrics HTTP/1.0\r\n\r\n")
    check("HTTP/1.0 without Host: 200", st == 200, st)
    check("server alive after malformed requests", os.path.exists(f"/proc/{pid}"))


def phase_slow(addr, header_timeout, client_timeout):
    silent = [connect(addr) for _ in range(4)]
    trickler = connect(addr)
    stop = threading.Event()
    trickle_sent = []

    def trickle():
        msg = b"GET /metrics HTTP/1.1\r\nHost: slow\r\nX-Slow: " + b"z" * 200
        for b in msg:
            if stop.is_set():
                return
            try:
                trickler.send(bytes([b]))
                trickle_sent.append(b)
            except OSError:
                return
            time.sleep(0.1)
    tt = threading.Thread(target=trickle)
    tt.start()
    # others are served promptly meanwhile
    lat = []
    for _ in range(5):
        st, _, _, dt = scrape(addr)
        lat.append((st, dt))
        time.sleep(0.05)
    check("slow clients: others served (200) promptly (< 1 s each)",
          all(st == 200 and dt < 1.0 for st, dt in lat), lat)
    t0 = time.monotonic()
    results = []
    for s in silent:
        s.settimeout(client_timeout + 5)
        data = read_all(s)
        results.append((parse_response(data)[0], time.monotonic() - t0))
        s.close()
    check("silent clients: 408", all(r[0] == 408 for r in results), results)
    check(f"silent clients: closed within header timeout + 2 s",
          all(r[1] < header_timeout + 2 for r in results), results)
    trickler.settimeout(client_timeout + 5)
    data = read_all(trickler)
    stop.set()
    tt.join()
    st = parse_response(data)[0]
    check("trickling client: 408 before its head was complete", st == 408 and len(trickle_sent) < 230,
          (st, len(trickle_sent)))
    trickler.close()


def phase_max_clients(addr, max_clients, header_timeout):
    held = [connect(addr) for _ in range(max_clients)]
    # The server accepts them in its own time (a fixed wait failed on a
    # loaded host): probe until the one past the limit is refused. A probe
    # it took as a client is held like the others and says nothing; the
    # next finds the limit reached.
    data, deadline = b"", time.monotonic() + header_timeout
    while parse_response(data)[0] != 503 and time.monotonic() < deadline:
        s = connect(addr)
        s.settimeout(0.1)  # (a refusal is sent at once; a poll, not a wait for a state)
        try:
            data = read_all(s)
        except socket.timeout:
            held.append(s)
            continue
        s.close()
    check("max clients: the next one gets 503", parse_response(data)[0] == 503, data[:100])
    for h in held:
        h.close()
    deadline = time.monotonic() + header_timeout + 5
    st = None
    while time.monotonic() < deadline:
        st, _, _, _ = scrape(addr)
        if st == 200:
            break
        time.sleep(0.1)
    check("max clients: served again once they are gone", st == 200, st)


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def phase_fds(addr, pid, n=1000):
    # warm up (first scrape allocates what it keeps), then count
    scrape(addr)
    time.sleep(0.2)
    base = fd_count(pid)
    kinds = [
        lambda: request(addr, GET),
        lambda: request(addr, b"nonsense\r\n\r\n"),
        lambda: request(addr, b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n"),
        lambda: request(addr, b"GET /metrics HTTP/1.1\r\nX: " + b"q" * 9000),
        lambda: connect(addr).close(),  # connect and go away
        lambda: half(addr),              # half a request, then go away
    ]
    errors = []
    lock = threading.Lock()
    counter = iter(range(n))

    def worker():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            try:
                kinds[i % len(kinds)]()
            except OSError as e:
                with lock:
                    errors.append(repr(e))
    ts = [threading.Thread(target=worker) for _ in range(8)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.monotonic() - t0
    check(f"{n} requests (8 at a time) without client errors ({dt:.1f}s)", not errors, errors[:5])
    # clients that left half a request are closed at their header timeout
    deadline = time.monotonic() + 10
    now = fd_count(pid)
    while now > base and time.monotonic() < deadline:
        time.sleep(0.2)
        now = fd_count(pid)
    check(f"no fd leak after {n} requests (fds {base} -> {now})", now <= base, (base, now))
    st, _, text, _ = scrape(addr)
    fams = families(text) if st == 200 else []
    total = sum(s.value for f in fams for s in f.samples
                if s.name == "ursa_metric_server_responses_total")
    check("responses counted", total >= n * 4 / 6, total)


def half(addr):
    s = connect(addr)
    s.sendall(b"GET /met")
    s.close()


def fake(mode, path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(path)
    s.listen(16)
    if mode == "hang":
        while True:
            time.sleep(3600)
    while True:
        c, _ = s.accept()
        try:
            c.recv(256)
            if mode == "junk":
                c.send(b"this is not\nprometheus text {\n\0")
        finally:
            c.close()


def main():
    if sys.argv[1] == "fake":
        fake(sys.argv[2], sys.argv[3])
        return
    phase, cfg = sys.argv[1], json.loads(sys.argv[2])
    addr = cfg["addr"]
    if phase == "sandboxes":
        phase_sandboxes(addr, cfg["live"], cfg["dead"], cfg["scrape_timeout"])
        phase_reasons(addr, cfg["reasons"])
    elif phase == "kill":
        phase_kill_mid_scrape(addr, cfg["victim"], cfg["pid"], cfg["live"])
    elif phase == "serve":
        fams = phase_sandboxes(addr, cfg["live"], cfg["dead"], cfg["scrape_timeout"])
        phase_malformed(addr, cfg["pid"])
        phase_slow(addr, cfg["header_timeout"], cfg["client_timeout"])
        if cfg.get("max_clients"):
            phase_max_clients(addr, cfg["max_clients"], cfg["header_timeout"])
        if cfg.get("fds"):
            phase_fds(addr, cfg["pid"], cfg["fds"])
        del fams
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
