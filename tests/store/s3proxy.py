#!/usr/bin/env python3
"""tests/store/s3proxy.py: a fault-injecting HTTP proxy in front of s3rver
for the store tests (python3 stdlib only).

Forwards every request to --upstream, except that:
  * faults armed through the control path fail the next N S3 requests:
      GET /__fault?mode=status&status=503&n=2   answer 503 with an S3 <Error>
      GET /__fault?mode=reset&n=1               read the request, then reset
                                                the connection (RST, no reply)
      GET /__fault?mode=stall&n=1               read the request and never
                                                answer (until the client hangs up)
      GET /__fault?mode=cut&bytes=B&n=1         forward it, answer the reply's
                                                status, headers and first B
                                                bytes of its body, then reset
                                                (a reply of B bytes or fewer
                                                passes, the fault still armed)
    A fault armed with &match=TEXT takes only requests whose path and query
    contain TEXT (e.g. match=partNumber%3D2: the second part of an upload);
    with &skip=K the first K of those pass untouched.
    GET /__stats returns "seen=N injected=N forwarded=N sig_bad=N
    mpu_open=N aborted=N crc32_ok=N md5_ok=N"; GET /__clear zeroes the counters and disarms
    faults (the open uploads are kept: they are the store's state).
  * multipart uploads are followed: one is open from its
    CreateMultipartUpload's reply until a CompleteMultipartUpload succeeds
    or an AbortMultipartUpload names it. s3rver 3.7.1 answers
    AbortMultipartUpload 405 (not implemented), so the proxy answers it
    itself, as S3 does: 204 for an open upload of that key, 404
    NoSuchUpload otherwise.
  * with --secret, every S3 request's AWS SigV4 Authorization header is
    checked (canonical request per the AWS SigV4 documentation, written
    here, not taken from any SDK), as are x-amz-content-sha256 against the
    body and Content-MD5 against the body: a mismatch is answered the way S3
    answers it (403 SignatureDoesNotMatch, 400 XAmzContentSHA256Mismatch,
    400 BadDigest) and not forwarded. s3rver 3.7.1 checks none of these
    (it only looks up the access key id), so this is where the tests see
    that the client signs and checksums correctly.
  * x-amz-checksum-crc32 is checked against the body (400 BadDigest), with
    or without --secret, and an upload created with
    x-amz-checksum-algorithm CRC32 is held to S3's rules: each part carries
    its CRC32 (400 InvalidRequest), CompleteMultipartUpload names each
    part's, the same (400 InvalidPart). s3rver ignores all of it.
Prints "s3proxy listening on 127.0.0.1:PORT" once it accepts connections.
"""
import argparse
import base64
import hashlib
import hmac
import re
import http.client
import http.server
import select
import socket
import struct
import sys
import threading
import urllib.parse
import zlib

HOP = {"connection", "keep-alive", "transfer-encoding", "expect", "proxy-connection"}
LOCK = threading.Lock()
STATE = {"mode": None, "n": 0, "status": 503, "match": "", "skip": 0, "bytes": 0}
STATS = {"seen": 0, "injected": 0, "forwarded": 0, "sig_bad": 0, "mpu_open": 0, "aborted": 0,
         "crc32_ok": 0, "md5_ok": 0}
OPEN = {}  # upload id -> the path (/bucket/key) it was created for
ALG = {}  # upload id -> its x-amz-checksum-algorithm, upper case
PART_CRC = {}  # (upload id, part number) -> the x-amz-checksum-crc32 it was sent with


def enc(s, safe):
    return urllib.parse.quote(s, safe=safe)


def canonical_query(q):
    pairs = []
    for item in q.split("&") if q else []:
        k, _, v = item.partition("=")
        k = urllib.parse.unquote(k)
        v = urllib.parse.unquote(v)
        pairs.append((enc(k, "-_.~"), enc(v, "-_.~")))
    return "&".join("%s=%s" % kv for kv in sorted(pairs))


def sigv4_check(secret, method, raw_path, headers, body):
    """None if the request is correctly signed, else S3's (status, code, message)."""
    auth = headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return (403, "AccessDenied", "not signed with AWS4-HMAC-SHA256")
    parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    cred = parts["Credential"].split("/")
    signed = parts["SignedHeaders"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return (403, "AccessDenied", "host and x-amz-date must be signed")
    path, _, query = raw_path.partition("?")
    curi = enc(urllib.parse.unquote(path), "/-_.~")
    chdrs = ""
    for h in signed:
        vals = headers.get_all(h)
        if not vals:  # S3 refuses a signature over a header it did not get
            return (403, "SignatureDoesNotMatch", "signed header %s is not in the request" % h)
        chdrs += "%s:%s\n" % (h, ",".join(" ".join(v.split()) for v in vals))
    payload = headers.get("x-amz-content-sha256")
    if payload is None:
        return (400, "InvalidRequest", "Missing required header x-amz-content-sha256")
    if payload != "UNSIGNED-PAYLOAD" and payload != hashlib.sha256(body).hexdigest():
        return (400, "XAmzContentSHA256Mismatch",
                "The provided 'x-amz-content-sha256' header does not match what was computed.")
    creq = "\n".join([method, curi, canonical_query(query), chdrs, ";".join(signed), payload])
    date = headers["x-amz-date"]
    scope = "/".join(cred[1:])
    sts = "\n".join(["AWS4-HMAC-SHA256", date, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for m in cred[1:]:
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    want = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, parts["Signature"]):
        return (403, "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided.")
    md5 = headers.get("Content-MD5")
    if md5 is not None and base64.b64decode(md5) != hashlib.md5(body).digest():
        return (400, "BadDigest", "The Content-MD5 you specified did not match what we received.")
    if md5 is not None:
        with LOCK:
            STATS["md5_ok"] += 1
    return None


def crc32_check(method, raw_path, headers, body):
    """None if the request's CRC32s hold as S3 checks them, else (status, code, message)"""
    path, _, query = raw_path.partition("?")
    q = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    crc = headers.get("x-amz-checksum-crc32")
    if crc is not None:
        if crc != base64.b64encode(struct.pack(">I", zlib.crc32(body))).decode():
            return (400, "BadDigest",
                    "The CRC32 you specified did not match the calculated checksum.")
        with LOCK:
            STATS["crc32_ok"] += 1
    upload = q.get("uploadId")
    with LOCK:
        alg = ALG.get(upload)
    if alg != "CRC32":
        return None
    if method == "PUT" and "partNumber" in q:
        if crc is None:
            return (400, "InvalidRequest", "The upload was created using a crc32 checksum. "
                    "The part must carry its x-amz-checksum-crc32.")
        with LOCK:
            PART_CRC[(upload, q["partNumber"])] = crc
    elif method == "POST":
        for part in re.findall(rb"<Part>(.*?)</Part>", body, re.S):
            num = re.search(rb"<PartNumber>\s*(\d+)\s*</PartNumber>", part)
            got = re.search(rb"<ChecksumCRC32>([^<]*)</ChecksumCRC32>", part)
            n = num.group(1).decode() if num else "?"
            with LOCK:
                want = PART_CRC.get((upload, n))
            if got is None or got.group(1).decode() != want:
                return (400, "InvalidPart", "The upload was created using a crc32 checksum. "
                        "Part %s's ChecksumCRC32 is %s, it was uploaded with %s."
                        % (n, "missing" if got is None else got.group(1).decode(), want))
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = None
    secret = None

    def log_message(self, *a):
        pass

    def reply(self, status, body=b"", ctype="application/xml", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def s3_error(self, status, code, message):
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
                "<Message>%s</Message><RequestId>s3proxy</RequestId></Error>"
                % (code, message)).encode()
        self.reply(status, body)

    def control(self):
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        with LOCK:
            if u.path == "/__fault":
                STATE.update(mode=q.get("mode", "status"), n=int(q.get("n", "1")),
                             status=int(q.get("status", "503")), match=q.get("match", ""),
                             skip=int(q.get("skip", "0")), bytes=int(q.get("bytes", "0")))
            elif u.path == "/__clear":
                STATE.update(mode=None, n=0, match="", skip=0)
                for k in STATS:
                    STATS[k] = 0
            STATS["mpu_open"] = len(OPEN)
            text = " ".join("%s=%d" % kv for kv in STATS.items())
        self.reply(200, text.encode(), "text/plain")

    def take_fault(self, size=None):
        """the fault armed for this request, if any: (mode, status); a cut
        is taken only with the reply's @size, and only if it is longer"""
        with LOCK:
            if size is None:
                STATS["seen"] += 1
            if (STATE["mode"] == "cut") != (size is not None) or \
                    (size is not None and size <= STATE["bytes"]):
                return None, None
            if STATE["n"] > 0 and STATE["match"] in self.path and STATE["skip"] > 0:
                STATE["skip"] -= 1  # &skip=K: the first K matching requests pass
            elif STATE["n"] > 0 and STATE["match"] in self.path:
                STATE["n"] -= 1
                STATS["injected"] += 1
                return STATE["mode"], STATE["status"]
        return None, None

    def inject(self, mode, status):
        if mode == "status":
            code = "ServiceUnavailable" if status == 503 else "InternalError"
            self.s3_error(status, code, "injected by s3proxy")
        elif mode == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
        elif mode == "stall":  # until the client gives up and closes
            while True:
                r, _, _ = select.select([self.connection], [], [], 60)
                if not r or not self.connection.recv(65536, socket.MSG_PEEK):
                    break
                self.connection.recv(65536)
            self.close_connection = True

    def forward(self, body):
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        conn.request(self.command, self.path, body=body if body or self.command in
                     ("PUT", "POST") else None, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        with LOCK:  # counted before the client has the reply: it may ask __stats next
            STATS["forwarded"] += 1
            self.follow_upload(resp.status, data)
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        length = resp.getheader("Content-Length") if self.command == "HEAD" else None
        self.send_header("Content-Length", length if length is not None else str(len(data)))
        self.end_headers()
        cut, _ = self.take_fault(len(data)) if self.command == "GET" else (None, None)
        if cut:  # the reply's first bytes, then a reset
            self.wfile.write(data[:STATE["bytes"]])
            self.wfile.flush()
            self.inject("reset", 0)
        elif self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    def follow_upload(self, status, data):
        path, _, query = self.path.partition("?")
        q = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        if self.command == "POST" and "uploads" in q and status == 200:
            m = re.search(rb"<UploadId>([^<]+)</UploadId>", data)
            if m:
                OPEN[m.group(1).decode()] = path
                ALG[m.group(1).decode()] = self.headers.get("x-amz-checksum-algorithm", "").upper()
        elif self.command == "POST" and "uploadId" in q and status == 200 \
                and b"<Error>" not in data:
            OPEN.pop(q["uploadId"], None)

    def abort_upload(self):
        path, _, query = self.path.partition("?")
        upload = dict(urllib.parse.parse_qsl(query)).get("uploadId")
        with LOCK:
            if OPEN.get(upload) == path:
                del OPEN[upload]
                STATS["aborted"] += 1
                ok = True
            else:
                ok = False
        if ok:
            self.reply(204)
        else:
            self.s3_error(404, "NoSuchUpload", "The specified upload does not exist.")

    def handle_any(self):
        if self.path.startswith("/__"):
            return self.control()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        mode, status = self.take_fault()
        if mode:
            return self.inject(mode, status)
        if self.secret is not None:
            bad = sigv4_check(self.secret, self.command, self.path, self.headers, body)
            if bad:
                with LOCK:
                    STATS["sig_bad"] += 1
                return self.s3_error(*bad)
        bad = crc32_check(self.command, self.path, self.headers, body)
        if bad:
            return self.s3_error(*bad)
        if self.command == "DELETE" and "uploadId=" in self.path:
            return self.abort_upload()
        self.forward(body)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = handle_any


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True, help="HOST:PORT of s3rver")
    ap.add_argument("--secret", help="verify SigV4 with this secret access key")
    ap.add_argument("--port", type=int, default=0,
                    help="listen on this port (default: any free one)")
    a = ap.parse_args()
    host, port = a.upstream.rsplit(":", 1)
    Handler.upstream = (host, int(port))
    Handler.secret = a.secret
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    print("s3proxy listening on 127.0.0.1:%d" % srv.server_port, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
