#!/usr/bin/env python3
"""Seed inputs for fuzz_rio: one well-formed session per file (first byte: bit 0, the
connection starts authenticated; bits 1-2, the mode: 0 the server, 1 the forwarder, 2 the
--emulate parser), covering every request type, collective groups at the forwarder and
emulation specs, so the fuzzer starts from valid input.
usage: make-seeds.py DIR"""
import os
import struct
import sys

MAGIC = 0x4F495250


def frame(t, body, i):
    return struct.pack("<IHHIIQ", MAGIC, 1, t, 0, len(body), i) + body


def path(p):
    b = p.encode()
    return struct.pack("<I", len(b)) + b


def io(h, segs, data=b"", coll=(0, 0)):
    b = struct.pack("<QQII", h, coll[0], coll[1], len(segs))
    for o, n in segs:
        b += struct.pack("<QQ", o, n)
    return b + data


H = (1 << 32) | 1  # the first handle of a connection: slot 0, generation 1 (odd)
sessions = {
    "open-write-read": [
        (4, struct.pack("<II", 6, 0o644) + path("a")),
        (12, io(H, [(10, 4), (0, 3)], b"abcdefg")),
        (11, io(H, [(0, 3), (10, 4), (100, 5)])),
        (5, struct.pack("<Q", H)),
    ],
    "meta": [
        (4, struct.pack("<II", 6, 0o600) + path("d/../b")),
        (7, struct.pack("<Q", H)),
        (8, struct.pack("<QQ", H, 100)),
        (9, struct.pack("<QQQ", H, 0, 4096)),
        (10, struct.pack("<Q", H)),
        (6, path("b")),
        (3, struct.pack("<Q", 7)),
    ],
    "lock-counter": [
        (4, struct.pack("<II", 2 | 4, 0o644) + path("c")),
        (13, struct.pack("<QIIQQ", H, 2, 0, 0, 10)),
        (13, struct.pack("<QIIQQ", H, 3, 0, 0, 10)),
        (14, struct.pack("<QQIIq", H, 5, 1, 0, 3)),
        (14, struct.pack("<QQIIq", H, 5, 3, 0, 0)),
    ],
    "checksum": [  # CHECKSUM (16): adler32 of a range, crc32c to the end, an unknown algo, a bad handle
        (4, struct.pack("<II", 6, 0o644) + path("k")),
        (12, io(H, [(0, 9)], b"123456789")),
        (16, struct.pack("<QIIQQ", H, 1, 1, 2, 5)),
        (16, struct.pack("<QIIQQ", H, 2, 0, 0, 0)),
        (16, struct.pack("<QIIQQ", H, 9, 0, 0, 0)),
        (16, struct.pack("<QIIQQ", H + 2, 2, 0, 1 << 62, 1 << 62)),
    ],
    "escape": [
        (4, struct.pack("<II", 0, 0) + path("../../etc/passwd")),
        (4, struct.pack("<II", 0, 0) + path("/proc/self/status")),
        (6, path("..")),
    ],
}
C = 7 << 16  # a collective access's tag (low 16 bits: the request's number)
forwarder = {  # the stand-in upstream answers every OPEN with handle 1
    "fwd-merge-write-read": [
        (4, struct.pack("<II", 6, 0o644) + path("f")),
        (12, io(1, [(0, 4), (8, 4)], b"aaaabbbb", (C, 2))),
        (12, io(1, [(4, 4), (12, 4)], b"ccccdddd", (C, 2))),
        (11, io(1, [(4, 4), (12, 4)], coll=(C + 1, 2))),
        (11, io(1, [(0, 4), (262140, 8)], coll=(C + 1, 2))),
        (10, struct.pack("<Q", 1)),
        (5, struct.pack("<Q", 1)),
    ],
    "fwd-incomplete-overlap": [
        (4, struct.pack("<II", 6, 0o644) + path("g")),
        (12, io(1, [(0, 8)], b"12345678", (C, 3))),
        (12, io(1, [(4, 8)], b"abcdefgh", (C, 3))),
        (12, io(1, [(100, 1)], b"x", (C, 2))),
        (11, io(1, [(0, 2), (2, 2)], coll=(C + 2, 2))),
        (7, struct.pack("<Q", 1)),
        (13, struct.pack("<QIIQQ", 1, 2, 0, 0, 10)),
        (14, struct.pack("<QQIIq", 1, 5, 1, 0, 3)),
        (16, struct.pack("<QIIQQ", 1, 2, 0, 0, 0)),
        (6, path("g")),
    ],
}
emulate = ["net_latency=100ms,net_bw=20MB/s", "disk_bw=50MiB/s,cache=none", "net_latency=500us,cache=os",
           "net_bw=1e3GB/s,net_latency=2s", "net_bw=1e30GB/s", "net_latency=nans"]  # the last two: past findings
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, reqs in sessions.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(b"\x01" + b"".join(frame(t, b, i + 1) for i, (t, b) in enumerate(reqs)))
for name, reqs in forwarder.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(b"\x03" + b"".join(frame(t, b, i + 1) for i, (t, b) in enumerate(reqs)))
for i, spec in enumerate(emulate):
    with open(os.path.join(out, "emulate-%d" % i), "wb") as f:
        f.write(b"\x04" + spec.encode())
hello = struct.pack("<HHI", 1, 1, 0) + bytes(32)
with open(os.path.join(out, "hello-auth"), "wb") as f:
    f.write(b"\x00" + frame(1, hello, 1) + frame(2, bytes(32), 2))
# Version 2: HELLO asking for records with a MAC (RIO_HELLO_MAC), then AUTH (wrong MAC: the
# fuzzer explores the refusal and, where it mutates its way in, the record reader).
hello2 = struct.pack("<HHI", 1, 2, 1) + bytes(32)
with open(os.path.join(out, "hello2-mac-auth"), "wb") as f:
    f.write(b"\x00" + frame(1, hello2, 1) + frame(2, bytes(32), 2) + struct.pack("<I", 24) + bytes(24 + 32))
# A credential name in HELLO (version 2): "fuzz-ro", then AUTH; and requests as the read-only
# credential (first byte 0x07: authenticated, mode 3) that it must refuse.
hello_named = struct.pack("<HHI", 2, 2, 0) + bytes(32) + bytes([7]) + b"fuzz-ro"
with open(os.path.join(out, "hello2-named-auth"), "wb") as f:
    f.write(b"\x00" + frame(1, hello_named, 1) + frame(2, bytes(32), 2))
with open(os.path.join(out, "ro-refusals"), "wb") as f:
    f.write(b"\x07" + frame(4, struct.pack("<II", 2, 0o644) + path("ro.dat"), 1) + frame(6, path("ro.dat"), 2))
