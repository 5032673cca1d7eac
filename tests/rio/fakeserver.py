#!/usr/bin/env python3
"""A small stand-in for pario-server, for the client driver's fault tests: it speaks protocol
version 1 (src/rio/PROTOCOL.md) over files below a root directory and can misbehave on
purpose (--stall-after N: stop answering after N requests, as a stopped server does;
--drop-after N: close every connection after N requests). Not a server to use: no path
checks beyond refusing '..' and absolute paths, one thread per connection."""
import argparse, hashlib, hmac, os, socket, struct, sys, threading, time

MAGIC, VERSION, REPLY = 0x4F495250, 1, 0x8000
HELLO, AUTH, PING, OPEN, CLOSE, DELETE, STAT, SET_SIZE, PREALLOC, SYNC, READ, WRITE, LOCK, COUNTER, ERROR = range(1, 16)
ST = {2: 1, 13: 2, 17: 3, 21: 4, 20: 5, 28: 6, 5: 7, 22: 8, 9: 9, 27: 10, 30: 11, 36: 12}  # errno -> status

counters, opens, clock = {}, {}, threading.Lock()  # per (inode, key); handles per inode
nreq = [0]


def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def reply(s, typ, rid, status=0, body=b""):
    data = struct.pack("<iI", status, 0) + body
    s.sendall(struct.pack("<IHHIIQ", MAGIC, VERSION, typ | REPLY, 0, len(data), rid) + data)


def serve(conn, args, secret):
    handles, nh = {}, [1]
    try:
        hdr = recvn(conn, 24)
        _, _, typ, _, ln, rid = struct.unpack("<IHHIIQ", hdr)
        body = recvn(conn, ln)
        nonce = body[8:40]
        chal = os.urandom(32)
        reply(conn, HELLO, rid, 0, struct.pack("<HHI", 1, 0, 0) + chal)
        hdr = recvn(conn, 24)
        _, _, typ, _, ln, rid = struct.unpack("<IHHIIQ", hdr)
        mac = recvn(conn, ln)
        want = hmac.new(secret, b"pario-rio-v1 client" + chal + nonce, hashlib.sha256).digest()
        if typ != AUTH or not hmac.compare_digest(mac, want):
            reply(conn, ERROR, rid, 16, struct.pack("<I", 0))
            return
        smac = hmac.new(secret, b"pario-rio-v1 server" + nonce + chal, hashlib.sha256).digest()
        reply(conn, AUTH, rid, 0, smac + struct.pack("<QIIQ", args.max_request, args.max_segments, 0, 7))
        while True:
            hdr = recvn(conn, 24)
            _, _, typ, _, ln, rid = struct.unpack("<IHHIIQ", hdr)
            body = recvn(conn, ln)
            nreq[0] += 1
            if args.log:
                print("req", typ, ln, flush=True, file=args.log)
            if args.drop_after and nreq[0] > args.drop_after:
                return
            if args.stall_after and nreq[0] > args.stall_after:
                time.sleep(3600)
            try:
                out = handle(typ, body, handles, nh, args)
                reply(conn, typ, rid, 0, out)
            except OSError as e:
                reply(conn, typ, rid, ST.get(e.errno, 20))
    except (EOFError, ConnectionError):
        pass
    finally:
        for fd in handles.values():
            close_fd(fd)
        conn.close()


def close_fd(fd):
    """A file's counters go when its last handle closes (PROTOCOL.md, COUNTER)."""
    with clock:
        ino = os.fstat(fd).st_ino
        opens[ino] -= 1
        if not opens[ino]:
            for k in [k for k in counters if k[0] == ino]:
                del counters[k]
    os.close(fd)


def path_of(body, args):
    n = struct.unpack_from("<I", body)[0]
    p = body[4:4 + n].decode()
    if p.startswith("/") or ".." in p.split("/"):
        raise OSError(13, "leaves the root")
    return os.path.join(args.root, p)


def handle(typ, body, handles, nh, args):
    if typ == OPEN:
        fl, perm = struct.unpack_from("<II", body)
        o = [os.O_RDONLY, os.O_WRONLY, os.O_RDWR][fl & 3]
        for bit, f in ((4, os.O_CREAT), (8, os.O_EXCL), (16, os.O_TRUNC), (32, os.O_APPEND)):
            if fl & bit:
                o |= f
        fd = os.open(path_of(body[8:], args), o, perm)
        with clock:
            ino = os.fstat(fd).st_ino
            opens[ino] = opens.get(ino, 0) + 1
        h = nh[0]
        nh[0] += 1
        handles[h] = fd
        return struct.pack("<QQ", h, os.fstat(fd).st_size)
    if typ == DELETE:
        os.unlink(path_of(body, args))
        return b""
    h = struct.unpack_from("<Q", body)[0]
    if h not in handles:
        raise OSError(9, "bad handle")
    fd = handles[h]
    if typ == CLOSE:
        close_fd(handles.pop(h))
        return b""
    if typ == STAT:
        return struct.pack("<Q", os.fstat(fd).st_size)
    if typ == SET_SIZE:
        os.ftruncate(fd, struct.unpack_from("<Q", body, 8)[0])
        return b""
    if typ == PREALLOC:
        off, ln = struct.unpack_from("<QQ", body, 8)
        os.posix_fallocate(fd, off, ln)
        return b""
    if typ == SYNC:
        os.fsync(fd)
        return b""
    if typ == LOCK:
        return b""  # one client process in the tests: nothing to exclude
    if typ == COUNTER:
        key, op, _, val = struct.unpack_from("<QIIq", body, 8)
        key = (os.fstat(fd).st_ino, key)
        with clock:
            old = counters.get(key, 0)
            counters[key] = old + val if op == 1 else val if op == 2 else old
        return struct.pack("<q", old)
    if typ in (READ, WRITE):
        _, _, _, nseg = struct.unpack_from("<QQII", body)
        segs = [struct.unpack_from("<QQ", body, 24 + 16 * i) for i in range(nseg)]
        if typ == WRITE:
            at, done = 24 + 16 * nseg, 0
            for off, ln in segs:
                os.pwrite(fd, body[at:at + ln], off)
                at += ln
                done += ln
            return struct.pack("<Q", done)
        data = b""
        for off, ln in segs:
            d = os.pread(fd, ln, off)
            data += d
            if len(d) < ln:
                break
        return struct.pack("<Q", len(data)) + data
    raise OSError(22, "unknown request")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--secret-file", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--max-request", type=int, default=64 << 20)
    ap.add_argument("--max-segments", type=int, default=65536)
    ap.add_argument("--stall-after", type=int, default=0)
    ap.add_argument("--drop-after", type=int, default=0)
    ap.add_argument("--log", type=argparse.FileType("w"))
    args = ap.parse_args()
    secret = open(args.secret_file, "rb").read().rstrip(b"\r\n")
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", args.port))
    ls.listen(64)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(ls.getsockname()[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c, args, secret), daemon=True).start()


if __name__ == "__main__":
    main()
