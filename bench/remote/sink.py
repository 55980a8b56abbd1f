#!/usr/bin/env python3
"""bench/remote/sink.py — an S3 endpoint that reads every body and keeps
nothing, for bench/remote/put-sink: what a checkpoint's upload costs on
the client's side when the server costs ~nothing (s3rver, the suite's
store, copies every part again at CompleteMultipartUpload, in node).

Answers PutObject, CreateMultipartUpload, UploadPart, CompleteMultipart-
Upload, AbortMultipartUpload and DeleteObject as S3 does (the XML and
headers ursa-store and curl read); authorization is not checked. GET is
404 (nothing is kept). Prints "listening on 127.0.0.1:PORT" once bound.
Threads: one per connection (ursa-store keeps several parts in flight).
"""
import http.server
import socketserver
import sys
import uuid

XML = 'application/xml'


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def drain(self):
        n = int(self.headers.get('Content-Length') or 0)
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        while n > 0:
            got = self.rfile.readinto(view[:min(n, len(buf))])
            if not got:
                break
            n -= got

    def answer(self, code, body=b'', ctype=None, etag=None):
        self.send_response(code)
        if ctype:
            self.send_header('Content-Type', ctype)
        if etag:
            self.send_header('ETag', '"%s"' % etag)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_PUT(self):
        self.drain()
        self.answer(200, etag=uuid.uuid4().hex)

    def do_POST(self):
        self.drain()
        path, _, query = self.path.partition('?')
        _, bucket, key = path.split('/', 2)
        if query.startswith('uploads'):
            body = ('<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult>'
                    '<Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId>'
                    '</InitiateMultipartUploadResult>' % (bucket, key, uuid.uuid4().hex))
        else:
            body = ('<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult>'
                    '<Bucket>%s</Bucket><Key>%s</Key><ETag>"%s-1"</ETag>'
                    '</CompleteMultipartUploadResult>' % (bucket, key, uuid.uuid4().hex))
        self.answer(200, body.encode(), XML)

    def do_DELETE(self):
        self.drain()
        self.answer(204)

    def do_GET(self):
        body = b'<?xml version="1.0"?><Error><Code>NoSuchKey</Code></Error>'
        self.answer(404, body, XML)

    do_HEAD = do_GET


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


if __name__ == '__main__':
    srv = Server(('127.0.0.1', 0), Sink)
    print('listening on 127.0.0.1:%d' % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
