#!/usr/bin/env python3
"""tests/net/gen_corpus.py — writes the seed corpus for fuzz_frame.c:
one byte of flags (see fuzz_frame.c: bit 0 virtio-net header, bit 1 fix
checksums up, bit 2 fill in the TCP acknowledgment) followed by a frame. Frames
use the default configuration (sandbox 10.0.2.2, gateway 10.0.2.1,
fd00:7572:7361::2/::1, gateway MAC 02:75:72:73:61:01). Run it again after
changing the defaults; the outputs are committed."""
import os
import socket
import struct
import sys

GW_MAC = bytes.fromhex('027572736101')
SB_MAC = bytes.fromhex('020000000007')
SB4, GW4 = socket.inet_aton('10.0.2.2'), socket.inet_aton('10.0.2.1')
SB6 = socket.inet_pton(socket.AF_INET6, 'fd00:7572:7361::2')
GW6 = socket.inet_pton(socket.AF_INET6, 'fd00:7572:7361::1')


def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def eth(t, dst=GW_MAC):
    return dst + SB_MAC + struct.pack('!H', t)


def ip4(proto, l4, dst, csum_off):
    if csum_off is not None:
        ph = SB4 + dst + struct.pack('!BBH', 0, proto, len(l4)) if proto != 1 else b''
        l4 = l4[:csum_off] + struct.pack('!H', csum(ph + l4)) + l4[csum_off + 2:]
    h = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(l4), 1, 0x4000, 64, proto, 0, SB4, dst)
    h = h[:10] + struct.pack('!H', csum(h)) + h[12:]
    return eth(0x0800) + h + l4


def ip6(proto, l4, dst, csum_off, hop=64, mac=GW_MAC, src=SB6):
    ph = src + dst + struct.pack('!I3xB', len(l4), proto)
    l4 = l4[:csum_off] + struct.pack('!H', csum(ph + l4)) + l4[csum_off + 2:]
    h = struct.pack('!IHBB', 0x60000000, len(l4), proto, hop) + src + dst
    return eth(0x86dd, mac) + h + l4


def tcp(sport, dport, seq, ack, flags, opts=b'', data=b''):
    return struct.pack('!HHIIBBHHH', sport, dport, seq, ack, (5 + len(opts) // 4) << 4, flags,
                       65535, 0, 0) + opts + data


def udp(sport, dport, data):
    return struct.pack('!HHHH', sport, dport, 8 + len(data), 0) + data


def main(out):
    os.makedirs(out, exist_ok=True)
    syn_opts = bytes([2, 4, 5, 0xb4, 1, 3, 3, 7])
    seeds = {
        'arp-gw': eth(0x0806, b'\xff' * 6) + struct.pack('!HHBBH', 1, 0x0800, 6, 4, 1) + SB_MAC +
        SB4 + b'\0' * 6 + GW4 + b'\0' * 18,
        'tcp-syn': ip4(6, tcp(40000, 80, 1, 0, 0x02, syn_opts), socket.inet_aton('192.0.2.1'), 16),
        'tcp-ack-data': ip4(6, tcp(40000, 80, 2, 1, 0x18, b'', b'GET / HTTP/1.0\r\n\r\n'),
                            socket.inet_aton('192.0.2.1'), 16),
        'tcp-syn-gw-dns': ip4(6, tcp(40001, 53, 7, 0, 0x02, syn_opts), GW4, 16),
        'tcp-syn-lo': ip4(6, tcp(40002, 22, 7, 0, 0x02, syn_opts), socket.inet_aton('127.0.0.1'), 16),
        'udp-dns': ip4(17, udp(5353, 53, b'\x12\x34\x01\x00\x00\x01' + b'\0' * 6), GW4, 6),
        'udp-out': ip4(17, udp(5000, 9999, b'hello'), socket.inet_aton('192.0.2.7'), 6),
        'icmp-gw': ip4(1, struct.pack('!BBHHH', 8, 0, 0, 0x1234, 1) + b'ping', GW4, 2),
        'icmp-out': ip4(1, struct.pack('!BBHHH', 8, 0, 0, 0x1234, 1) + b'ping',
                        socket.inet_aton('192.0.2.9'), 2),
        'ip4-frag': ip4(17, udp(1, 2, b'x'), socket.inet_aton('192.0.2.7'), 6),
        'ndp-ns': ip6(58, bytes([135, 0, 0, 0, 0, 0, 0, 0]) + GW6 + bytes([1, 1]) + SB_MAC,
                      socket.inet_pton(socket.AF_INET6, 'ff02::1:ff00:1'), 2, hop=255,
                      mac=bytes.fromhex('3333ff000001')),
        'tcp6-syn': ip6(6, tcp(40003, 443, 9, 0, 0x02, syn_opts),
                        socket.inet_pton(socket.AF_INET6, '2001:db8::1'), 16),
        'icmp6-gw': ip6(58, struct.pack('!BBHHH', 128, 0, 0, 7, 1) + b'ping6', GW6, 2),
    }
    # a connection to the target's listener on 127.0.0.1:80: with flag bit 2
    # the target fills in the acknowledgment number, so these complete the
    # handshake and move data both ways
    lo = socket.inet_aton('127.0.0.1')
    for name, frame in (
            ('lo-1-syn', ip4(6, tcp(41000, 80, 1, 0, 0x02, syn_opts), lo, 16)),
            ('lo-2-ack', ip4(6, tcp(41000, 80, 2, 0, 0x10), lo, 16)),
            ('lo-3-data', ip4(6, tcp(41000, 80, 2, 0, 0x18, b'', b'GET / HTTP/1.0\r\n\r\n'), lo, 16)),
            ('lo-4-fin', ip4(6, tcp(41000, 80, 20, 0, 0x11), lo, 16)),
            ('lo-5-rst', ip4(6, tcp(41000, 80, 21, 0, 0x14), lo, 16))):
        with open(os.path.join(out, name), 'wb') as fh:
            fh.write(b'\6' + frame)
    # a fragment: set MF on the udp-out frame (checksum fixed up)
    f = bytearray(seeds['ip4-frag'])
    f[14 + 6] = 0x20
    f[14 + 10:14 + 12] = b'\0\0'
    f[14 + 10:14 + 12] = struct.pack('!H', csum(bytes(f[14:34])))
    seeds['ip4-frag'] = bytes(f)
    for name, frame in seeds.items():
        with open(os.path.join(out, name), 'wb') as fh:
            fh.write(b'\0' + frame)
    # the same SYN behind a virtio-net header, and a GSO TCP frame
    vh = struct.pack('<BBHHHH', 0, 0, 0, 0, 0, 0)
    with open(os.path.join(out, 'vnet-tcp-syn'), 'wb') as fh:
        fh.write(b'\1' + vh + seeds['tcp-syn'])
    big = ip4(6, tcp(40000, 80, 2, 1, 0x10, b'', b'z' * 4000), socket.inet_aton('192.0.2.1'), 16)
    vh = struct.pack('<BBHHHH', 1, 1, 54, 1448, 34, 16)
    with open(os.path.join(out, 'vnet-gso-tcp'), 'wb') as fh:
        fh.write(b'\1' + vh + big)
    with open(os.path.join(out, 'truncated'), 'wb') as fh:
        fh.write(b'\0' + seeds['tcp-syn'][:30])
    # every seed again with bit 1 set: the target fixes checksums up
    for name in sorted(os.listdir(out)):
        if name.startswith('fix-') or name.startswith('lo-'):
            continue
        with open(os.path.join(out, name), 'rb') as fh:
            b = bytearray(fh.read())
        b[0] |= 2
        with open(os.path.join(out, 'fix-' + name), 'wb') as fh:
            fh.write(bytes(b))


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus'))
