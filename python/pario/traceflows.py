"""The request arrows of `pario trace merge -o` (flow events s / t / f), in bounded memory.

Every span that carries a request id (`flow`: a client's driver operation served remotely,
and the server's receive, storage and send spans for it) leaves one hop of 24 bytes: id, time
on rank 0's clock, and where (Chrome pid, tid, client or server). The arrows are drawn from
the hops sorted by (id, time): per request, from its first client hop through its server
hops in time order.

Memory: the hops are kept in arrays up to LIMIT of them (262,144); past that they go to a temporary
file (a spill, LIMIT hops at a time). At the end, hops that never left memory are linked
there, as before. Spilled hops are partitioned by id range into buckets of about LIMIT/2
hops each (the ranges from a sample of the ids; at most BUCKETS of them), every bucket on a
file of its own, written unbuffered; each
bucket is then read, sorted and linked in turn. All hops of a request share its id, so they
land in one bucket, and the buckets come in id order: the output is the same as sorting the
whole table at once, in memory of a few times LIMIT hops whatever the trace's length. The
temporary files go in $TMPDIR and are removed when the arrows are written or the merge stops.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from array import array
from typing import Iterator, List, Optional

HOP = [("id", "<u8"), ("t", "<i8"), ("w", "<i8")]  # w: pid << 33 | tid << 1 | client


class Flows:
    """Every hop of a request, spilled to a temporary directory past LIMIT of them."""
    LIMIT = 1 << 18  # hops in memory (6 MiB of them; linking takes a few times that, briefly)
    BUCKETS = 512    # at most (open files at once); past 256 * LIMIT hops the buckets grow

    def __init__(self, tmp: Optional[str] = None, name: str = "hops") -> None:
        """tmp: a directory for the spill (default: one made when needed, removed at the
        end); name: the spill's file there."""
        self.ids, self.t, self.where = array("Q"), array("q"), array("q")
        self.tmp, self.own, self.name = tmp, tmp is None, name
        self.spilled = 0

    def add(self, fid: int, t: int, pid: int, tid: int, client: bool) -> None:
        self.ids.append(fid & 0xFFFFFFFFFFFFFFFF)
        self.t.append(t)
        self.where.append((pid << 33) | ((tid & 0xFFFFFFFF) << 1) | (1 if client else 0))
        if len(self.ids) >= self.LIMIT:
            self.spill()

    def hot(self):
        """The three arrays' appends, for a hot loop that does `add` inline (tracechrome:
        it calls spill() when the ids reach LIMIT); the arrays stay the same objects."""
        return self.ids.append, self.t.append, self.where.append

    def _table(self):
        import numpy as np
        rec = np.empty(len(self.ids), HOP)
        rec["id"] = np.frombuffer(self.ids, np.uint64)
        rec["t"] = np.frombuffer(self.t, np.int64)
        rec["w"] = np.frombuffer(self.where, np.int64)
        del self.ids[:], self.t[:], self.where[:]
        return rec

    def spill(self) -> None:
        if self.tmp is None:
            self.tmp = tempfile.mkdtemp(prefix="pario-merge-")
        with open(os.path.join(self.tmp, self.name), "ab") as fh:
            rec = self._table()
            rec.tofile(fh)
            self.spilled += len(rec)

    def flush(self) -> int:
        """Every hop to the spill file (a worker's part, for `take`); how many there are."""
        if self.ids:
            self.spill()
        return self.spilled

    def take(self, name: str, count: int) -> None:
        """Append a worker's spill file (in tmp) to this one's."""
        if count:
            src = os.path.join(self.tmp, name)
            with open(src, "rb") as fi, open(os.path.join(self.tmp, self.name), "ab") as fo:
                shutil.copyfileobj(fi, fo, 1 << 20)
            os.unlink(src)
            self.spilled += count

    def close(self) -> None:
        """Remove the temporary files (also when the merge stops half-way)."""
        if self.tmp is not None and self.own:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def events(self, origin: int) -> Iterator[dict]:
        """The arrows, request ids renumbered 1, 2, ... in the order of the ids (JSON readers
        keep only 53 bits of an integer)."""
        try:
            if not self.spilled:
                if self.ids:
                    yield from _link(self._table(), origin, 0)
                return
            self.flush()
            seq = 0
            for bucket in self._buckets():
                seq = yield from _link(bucket, origin, seq)
        finally:
            self.close()

    def _buckets(self) -> Iterator:
        """The spilled hops by id range, each range's in their order of arrival."""
        import numpy as np
        path = os.path.join(self.tmp, self.name)
        n, step = self.spilled, self.LIMIT
        k = min(self.BUCKETS, max(1, -(-2 * n // step)))  # buckets of about LIMIT/2 hops
        sample: List = []
        stride = max(1, n // (64 * k))
        for at in range(0, n, step):
            sample.append(np.fromfile(path, HOP, count=min(step, n - at), offset=at * 24)["id"][::stride].copy())
        s = np.sort(np.concatenate(sample))
        bounds = np.unique(s[np.arange(1, k) * len(s) // k])
        del sample, s
        k = len(bounds) + 1
        files = [open(os.path.join(self.tmp, f"b{i}"), "wb", buffering=0) for i in range(k)]
        try:
            for at in range(0, n, step):
                rec = np.fromfile(path, HOP, count=min(step, n - at), offset=at * 24)
                b = np.searchsorted(bounds, rec["id"], side="right")
                order = np.argsort(b, kind="stable")
                rec, b = rec[order], b[order]
                cut = np.searchsorted(b, np.arange(k + 1))
                for i in range(k):
                    if cut[i + 1] > cut[i]:
                        rec[cut[i]:cut[i + 1]].tofile(files[i])
                del rec, b, order
        finally:
            for f in files:
                f.close()
        os.unlink(path)
        for i in range(k):
            p = os.path.join(self.tmp, f"b{i}")
            rec = np.fromfile(p, HOP)
            os.unlink(p)
            if len(rec):
                yield rec


def _link(rec, origin: int, seq0: int):
    """The arrows of a table of hops (whole requests), numbered from seq0 + 1; returns the
    last number used."""
    import numpy as np
    order = np.lexsort((rec["t"], rec["id"]))  # stable: equal (id, time) keep their order
    ids = rec["id"][order]
    new = np.empty(len(ids), bool)
    new[0] = True
    np.not_equal(ids[1:], ids[:-1], out=new[1:])
    del ids
    t = rec["t"][order]
    where = rec["w"][order]
    del order, rec
    g = np.cumsum(new) - 1                      # the request (group) of each hop
    starts = np.flatnonzero(new)
    del new
    client = (where & 1).astype(bool)
    nclient = np.add.reduceat(client.astype(np.int32), starts)
    ok = (nclient > 0) & (nclient < np.diff(np.r_[starts, len(g)]))  # both a client and a server hop
    del nclient, starts
    if not ok.any():  # no request reached a server of this trace (or no server)
        return seq0
    seq = np.cumsum(ok) + seq0                  # arrows numbered in the order of the ids
    hop = ok[g]
    last_seq = int(seq[-1])
    del ok
    first = np.flatnonzero(client & hop)
    first = first[np.r_[True, g[first][1:] != g[first][:-1]]]  # each request's first client hop
    keep = ~client & hop
    del client, hop
    keep[first] = True
    pick = np.flatnonzero(keep)                 # per request: its first client hop and its server hops
    del keep
    src = np.zeros(len(pick), bool)
    src[np.searchsorted(pick, first)] = True
    head = np.r_[True, g[pick][1:] != g[pick][:-1]]
    if not np.array_equal(head, src):  # a server hop before the client's (clock error): client first
        order = np.lexsort((~src, g[pick]))
        pick, src = pick[order], src[order]
        del order
    last = np.r_[g[pick][1:] != g[pick][:-1], True]
    phase = np.where(src, 0, np.where(last, 2, 1))
    del head, last, src, first
    names = ("s", "t", "f")
    for k in range(0, len(pick), 65536):        # a slice at a time: no Python list of the table
        p = pick[k:k + 65536]
        for i, ph, ts, w in zip(seq[g[p]].tolist(), phase[k:k + 65536].tolist(), t[p].tolist(),
                                where[p].tolist()):
            # 1 ns into the slice, so that every hop lies inside the slice it belongs to
            yield {"ph": names[ph], "id": i, "name": "request", "cat": "flow", "pid": w >> 33,
                   "tid": (w >> 1) & 0xFFFFFFFF, "ts": (ts - origin) / 1000.0 + 0.001, "bp": "e"}
    return last_seq
