"""`pario trace merge -o FILE`: the Chrome / Perfetto trace-event JSON, written as it is made.

Events go to the file in batches as each process's file is read (tracestream: pass 2), so
memory does not grow with the trace, except for one compact table: every span that carries
a request id (`flow`) leaves 32 bytes (id, time, process, thread) in arrays, from which the
arrows (flow events s / t / f) from a client's request to the server operations it caused
are drawn at the end (sorting them takes about as much again, briefly). Per process the writer keeps
one stack per thread (to clamp a span that outlives its parent, see `_Clamp`) and the
bytes/s bins (200 of them).
"""

from __future__ import annotations

import json
import os
from array import array
from typing import Callable, Dict, Iterable, Iterator, List, Tuple

from .tracefile import Proc, Trace, _bytes_of

try:
    from orjson import dumps as _dumps  # pinned in python/pyproject.toml
except ImportError:  # ctest's check scripts run Debian's python3, without the venv
    def _dumps(obj) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()

SERVER_BASE_PID = 100000  # Chrome process ids of servers (clients use their rank)


def _cpid(p: Proc, servers: List[Proc]) -> int:
    return p.rank if p.kind == "client" else SERVER_BASE_PID + servers.index(p)


class _Rates:
    """bytes/s of a process's storage traffic (client: driver spans; server: storage spans),
    in bins of 1/200 of the trace (at least 1 ms), each span's bytes spread over its time."""

    def __init__(self, p: Proc, lo: int, hi: int) -> None:
        self.cat = "driver" if p.kind == "client" else "storage"
        self.lo, self.hi = lo, hi
        self.width = max(1_000_000, (hi - lo) // 200)
        self.bins = [0.0] * ((hi - lo) // self.width + 1) if hi > lo else []
        self.any = False

    def add(self, a: int, b: int, n: int) -> None:
        if not self.bins or n <= 0:
            return
        self.any = True
        lo, width, bins = self.lo, self.width, self.bins
        nb = len(bins)
        if b <= a:
            bins[min(nb - 1, (a - lo) // width)] += n
            return
        for k in range((a - lo) // width, min(nb - 1, (b - lo) // width) + 1):
            s, t = lo + k * width, lo + (k + 1) * width
            bins[k] += n * max(0, min(b, t) - max(a, s)) / (b - a)

    def events(self, origin: int, pid: int) -> List[dict]:
        if not self.any:
            return []
        lo, width, nb = self.lo, self.width, len(self.bins)
        return [{"ph": "C", "name": "bytes/s", "pid": pid, "tid": 0, "ts": (lo + k * width - origin) / 1000.0,
                 "args": {"bytes/s": v * 1e9 / width}} for k, v in enumerate(self.bins)] + \
               [{"ph": "C", "name": "bytes/s", "pid": pid, "tid": 0, "ts": (lo + nb * width - origin) / 1000.0,
                 "args": {"bytes/s": 0}}]


class _Clamp:
    """Spans of one thread in the writers' order (by end, children first) made properly
    nested, as the trace viewers need: a span that starts inside an earlier one and ends
    after it (clock granularity) is cut at that one's end. The stack holds the spans not yet
    inside a later one: a parent's children until it ends, at most CAP (then the oldest are
    forgotten: a span that starts inside one of those is not cut)."""
    CAP = 4096
    __slots__ = ("stack",)

    def __init__(self) -> None:
        self.stack: List[Tuple[int, int]] = []

    def end(self, a: int, b: int) -> int:
        st = self.stack
        while st and st[-1][0] >= a:
            st.pop()
        if st and a < st[-1][1] < b:
            b = st[-1][1]
        st.append((a, b))
        if len(st) > self.CAP:
            del st[:self.CAP // 2]
        return b


class _Flows:
    """Every hop of a request (a span with a `flow` id), 32 bytes each."""

    def __init__(self) -> None:
        self.ids, self.t, self.where = array("Q"), array("q"), array("q")

    def add(self, fid: int, t: int, pid: int, tid: int, client: bool) -> None:
        self.ids.append(fid & 0xFFFFFFFFFFFFFFFF)
        self.t.append(t)
        self.where.append((pid << 33) | ((tid & 0xFFFFFFFF) << 1) | (1 if client else 0))

    def events(self, origin: int) -> Iterator[dict]:
        """Arrows from a client's driver operation to the server operations it caused (flow
        events s / t / f, bound to the enclosing slices): from the request's first client
        hop through its server hops in time order. Ids are renumbered: JSON readers keep only
        53 bits of an integer."""
        if not self.ids:
            return
        import numpy as np
        order = np.lexsort((np.frombuffer(self.t, np.int64), np.frombuffer(self.ids, np.uint64)))  # stable
        ids = np.frombuffer(self.ids, np.uint64)[order]
        new = np.empty(len(ids), bool)
        new[0] = True
        np.not_equal(ids[1:], ids[:-1], out=new[1:])
        del ids
        t = np.frombuffer(self.t, np.int64)[order]
        where = np.frombuffer(self.where, np.int64)[order]
        del order
        self.ids, self.t, self.where = array("Q"), array("q"), array("q")  # the table is sorted: free it
        g = np.cumsum(new) - 1                      # the request (group) of each hop
        starts = np.flatnonzero(new)
        del new
        client = (where & 1).astype(bool)
        nclient = np.add.reduceat(client.astype(np.int32), starts)
        ok = (nclient > 0) & (nclient < np.diff(np.r_[starts, len(g)]))  # both a client and a server hop
        del nclient, starts
        if not ok.any():  # no request reached a server of this trace (or no server)
            return
        seq = np.cumsum(ok)                         # arrows numbered in the order of the ids
        hop = ok[g]
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


def _args(e: dict, files: Dict[int, str]) -> dict:
    a = e.get("args") or {}
    f = a.get("file")
    if f in files or "flow" in e:
        a = dict(a)
        if f in files:
            a["file_name"] = files[f]
        if "flow" in e:
            a["request_id"] = str(e["flow"])
    return a


def _process(p: Proc, order: int, pid: int, lo: int, hi: int, flows: _Flows,
             events: Iterable[Tuple[str, dict]]) -> Iterator[dict]:
    """The Chrome events of one process (the hot loop: locals only, no call per span but
    the clamp's)."""
    origin, off, files = lo, p.offset, p.files
    label = p.name + (f" ({p.host})" if p.host else "")
    yield {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}}
    yield {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": order}}
    for tid, tname in sorted(p.threads.items()):
        yield {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": tname}}
    rates, clamps = _Rates(p, lo, hi), {}
    rate_cat, rate_add, flow_add = rates.cat, rates.add, flows.add
    client = p.kind == "client"
    shift = off - origin
    for typ, e in events:
        if typ == "span":
            tid = e.get("tid", 0)
            c = clamps.get(tid)
            if c is None:
                c = clamps[tid] = _Clamp().end
            a = e["t"]
            b = c(a, a + e["d"])
            cat = e.get("cat", "?")
            args = e.get("args") or {}
            fid = e.get("flow")
            f = args.get("file")
            if f in files or "flow" in e:
                args = _args(e, files)
            yield {"ph": "X", "name": e.get("name", "?"), "cat": cat, "pid": pid, "tid": tid,
                   "ts": (a + shift) / 1000.0, "dur": (b - a) / 1000.0, "args": args}
            if fid and fid.__class__ is int:
                flow_add(fid, a + off, pid, tid, client)
            if cat == rate_cat:
                rate_add(a + off, b + off, _bytes_of(e))
        elif typ == "instant":
            yield {"ph": "i", "s": "t", "name": e.get("name", "?"), "cat": e.get("cat", "?"), "pid": pid,
                   "tid": e.get("tid", 0), "ts": (e["t"] + shift) / 1000.0, "args": _args(e, files)}
        else:
            yield {"ph": "C", "name": e.get("name", "?"), "pid": pid, "tid": 0,
                   "ts": (e["t"] + shift) / 1000.0, "args": {e.get("name", "value"): e["value"]}}
    yield from rates.events(origin, pid)


def chrome_stream(trace: Trace, events_of: Callable[[Proc], Iterable[Tuple[str, dict]]]) -> Iterator[dict]:
    """Every Chrome event of the trace, process by process, then the request arrows."""
    lo, hi = trace.bounds()
    servers = trace.servers
    flows = _Flows()
    for order, p in enumerate(trace.procs):
        yield from _process(p, order, _cpid(p, servers), lo, hi, flows, events_of(p))
    yield from flows.events(lo)


def write_chrome(trace: Trace, events_of, out_path: str) -> int:
    """Write the trace-event JSON to out_path (through a temporary file next to it) as the
    events are made; the number of events."""
    tmp = out_path + ".tmp"
    n = 0
    with open(tmp, "wb") as fh:
        fh.write(b'{"traceEvents":[')
        write, dumps = fh.write, _dumps
        for ev in chrome_stream(trace, events_of):
            write(b"," + dumps(ev) if n else dumps(ev))
            n += 1
        other = {"format": "pario trace merge", "processes": len(trace.procs),
                 "clock": {p.name: {"offset_ns": p.offset, "err_ns": p.err} for p in trace.procs}}
        fh.write(b'],"displayTimeUnit":"ns","otherData":' + _dumps(other) + b"}")
    os.replace(tmp, out_path)
    return n
