#!/usr/bin/env python3
"""tests/ckpt/forge.py DIR core|pages OFFSET — what an attacker who can
write an image but has no key can do: flip one byte (at OFFSET of core.img's
body, or of pages.img's page data) and make every checksum right again
(CRC32C of the body, of the page data in both headers, of both headers), so
that only the authentication (ckpt/seal.h) can tell. Layouts: ckpt/image.c
(core_hdr: body_len @32, pages_len @40, body_crc @48, pages_crc @52,
hdr_crc @60; pages_hdr: pages_crc @40, hdr_crc @44)."""
import struct
import sys

TAB = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    TAB.append(c)


def crc32c(b, crc=0):
    crc ^= 0xFFFFFFFF
    for x in b:
        crc = TAB[(crc ^ x) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def main():
    d, what, off = sys.argv[1], sys.argv[2], int(sys.argv[3])
    core = bytearray(open(d + "/core.img", "rb").read())
    pages = bytearray(open(d + "/pages.img", "rb").read())
    body_len = struct.unpack_from("<Q", core, 32)[0]
    if what == "core":
        core[64 + off] ^= 0x01
    else:
        pages[4096 + off] ^= 0x01
        pcrc = crc32c(bytes(pages[4096:]))
        struct.pack_into("<I", pages, 40, pcrc)
        struct.pack_into("<I", core, 52, pcrc)
        h = bytearray(pages[:48])
        struct.pack_into("<I", h, 44, 0)
        struct.pack_into("<I", pages, 44, crc32c(bytes(h)))
    struct.pack_into("<I", core, 48, crc32c(bytes(core[64 : 64 + body_len])))
    h = bytearray(core[:64])
    struct.pack_into("<I", h, 60, 0)
    struct.pack_into("<I", core, 60, crc32c(bytes(h)))
    open(d + "/core.img", "wb").write(core)
    open(d + "/pages.img", "wb").write(pages)


if __name__ == "__main__":
    main()
