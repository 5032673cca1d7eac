"""`pario trace merge -o FILE`: the Chrome / Perfetto trace-event JSON, written as it is made.

Events go to the file in batches as each process's file is read (tracestream: pass 2), so
memory does not grow with the trace: per process the writer keeps one stack per thread (to
clamp a span that outlives its parent, see CLAMP_CAP) and the bytes/s bins (200 of them); the
hops of the requests (spans with a `flow` id), from which the arrows from a client's request
to the server operations it caused are drawn at the end, go to a temporary file past a
bounded number (traceflows.py).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Callable, Dict, Iterable, Iterator, List, Tuple

from .traceflows import Flows
from .tracefile import Proc, Trace, _bytes_of, workers

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
        k = (a - lo) // width
        if k == (b - lo) // width and k < nb:  # within one bin (most spans): the same sum, fewer steps
            bins[k] += n * (b - a) / (b - a)
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


# Spans of one thread come in the writers' order (by end, children first); they are made
# properly nested, as the trace viewers need: a span that starts inside an earlier one and
# ends after it (clock granularity) is cut at that one's end. Per thread, a stack holds the
# spans not yet inside a later one: a parent's children until it ends, at most CLAMP_CAP (then
# the oldest half is forgotten: a span that starts inside one of those is not cut).
CLAMP_CAP = 4096


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


def _process(p: Proc, order: int, pid: int, lo: int, hi: int, flows: Flows,
             events: Iterable[Tuple[str, dict]]) -> Iterator[dict]:
    """The Chrome events of one process (the hot loop: locals only, no call per span; the
    clamp (see CLAMP_CAP) and the hop table's appends inline)."""
    origin, off, files = lo, p.offset, p.files
    label = p.name + (f" ({p.host})" if p.host else "")
    yield {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}}
    yield {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": order}}
    for tid, tname in sorted(p.threads.items()):
        yield {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": tname}}
    rates, stacks = _Rates(p, lo, hi), {}
    rate_cat, rate_add = rates.cat, rates.add
    hop_ids, hop_add, limit = flows.ids, flows.hot(), flows.LIMIT
    ids_add, t_add, w_add = hop_add
    where = (pid << 33) | (1 if p.kind == "client" else 0)
    shift, cap = off - origin, CLAMP_CAP
    for typ, e in events:
        if typ == "span":
            tid = e.get("tid", 0)
            st = stacks.get(tid)
            if st is None:
                st = stacks[tid] = []
            a = e["t"]
            b = a + e["d"]
            while st and st[-1][0] >= a:
                st.pop()
            if st:
                pb = st[-1][1]
                if a < pb < b:
                    b = pb
            st.append((a, b))
            if len(st) > cap:
                del st[:cap // 2]
            cat = e.get("cat", "?")
            args = e.get("args") or {}
            fid = e.get("flow")
            if fid is not None or "flow" in e:
                args = dict(args)
                if args.get("file") in files:
                    args["file_name"] = files[args["file"]]
                args["request_id"] = str(fid)
                if fid and fid.__class__ is int:
                    ids_add(fid & 0xFFFFFFFFFFFFFFFF)
                    t_add(a + off)
                    w_add(where | ((tid & 0xFFFFFFFF) << 1))
                    if len(hop_ids) >= limit:
                        flows.spill()
            elif args.get("file") in files:
                args = dict(args)
                args["file_name"] = files[args["file"]]
            yield {"ph": "X", "name": e.get("name", "?"), "cat": cat, "pid": pid, "tid": tid,
                   "ts": (a + shift) / 1000.0, "dur": (b - a) / 1000.0, "args": args}
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
    flows = Flows()
    try:
        for order, p in enumerate(trace.procs):
            yield from _process(p, order, _cpid(p, servers), lo, hi, flows, events_of(p))
        yield from flows.events(lo)
    finally:
        flows.close()


def _write_events(fh, evs: Iterable[dict], n: int) -> int:
    """Write events to fh, comma-separated (a leading comma when n, the count so far, is not
    0), in batches; the new count."""
    write, dumps, batch = fh.write, _dumps, []
    add = batch.append
    for ev in evs:
        add(dumps(ev))
        if len(batch) == 4096:
            write(b"," if n else b"")
            write(b",".join(batch))
            n += len(batch)
            batch.clear()
    if batch:
        write(b"," if n else b"")
        write(b",".join(batch))
        n += len(batch)
    return n


_JOB: tuple = ()  # what a worker of write_chrome needs (inherited through fork)


def _part(i: int) -> Tuple[int, int]:
    """A worker: the events of process i to part file i, its hops to hops file i; the counts."""
    trace, events_of, lo, hi, tmp = _JOB
    p = trace.procs[i]
    flows = Flows(tmp, f"hops{i}")
    with open(os.path.join(tmp, f"part{i}"), "wb") as fh:
        n = _write_events(fh, _process(p, i, _cpid(p, trace.servers), lo, hi, flows, events_of(p)), 0)
    return n, flows.flush()


def _parallel(trace: Trace, events_of, fh, tmp: str, jobs: int) -> int:
    """The processes' events by `jobs` worker processes (each process's file to a part file),
    copied to fh in order, then the arrows; the number of events. Same bytes as the serial way."""
    global _JOB
    lo, hi = trace.bounds()
    _JOB = (trace, events_of, lo, hi, tmp)
    try:
        # the largest files first, so that one big file does not come last
        largest_first = sorted(range(len(trace.procs)), key=lambda i: -trace.procs[i].events)
        with workers(min(jobs, len(largest_first))) as pool:
            futs = {i: pool.submit(_part, i) for i in largest_first}
            counts = [futs[i].result() for i in range(len(trace.procs))]
    finally:
        _JOB = ()
    flows, n = Flows(tmp), 0
    for i, (m, hops) in enumerate(counts):
        part = os.path.join(tmp, f"part{i}")
        if m:
            if n:
                fh.write(b",")
            with open(part, "rb") as src:
                shutil.copyfileobj(src, fh, 1 << 22)
            n += m
        os.unlink(part)
        flows.take(f"hops{i}", hops)
    return _write_events(fh, flows.events(lo), n)


def write_chrome(trace: Trace, events_of, out_path: str, jobs: int = 1) -> int:
    """Write the trace-event JSON to out_path (through a temporary file next to it) as the
    events are made; the number of events. jobs > 1: that many worker processes, one
    process's file each at a time (for a trace from `scan`, of more than one process)."""
    tmp = out_path + ".tmp"
    work = None
    try:
        with open(tmp, "wb") as fh:
            fh.write(b'{"traceEvents":[')
            if jobs > 1 and len(trace.procs) > 1 and not any(p.kept for p in trace.procs):
                work = tempfile.mkdtemp(prefix="pario-merge-")
                n = _parallel(trace, events_of, fh, work, jobs)
            else:
                n = _write_events(fh, chrome_stream(trace, events_of), 0)
            other = {"format": "pario trace merge", "processes": len(trace.procs),
                     "clock": {p.name: {"offset_ns": p.offset, "err_ns": p.err} for p in trace.procs}}
            fh.write(b'],"displayTimeUnit":"ns","otherData":' + _dumps(other) + b"}")
        os.replace(tmp, out_path)
    finally:
        if work:
            shutil.rmtree(work, ignore_errors=True)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return n
