"""`pario trace`: read a trace directory (docs/trace-format.md), merge it into one timeline
(Chrome/Perfetto trace-event JSON, or OTF2 for Vampir), compute the seed's server statistics
(PIOviz, seed 001, Tables 2-4) and per-rank I/O times (the HTML report: tracereport).

A trace directory holds one JSON Lines file per process: `client-<rank>-<pid>.jsonl` from
libpario (PARIO_TRACE=DIR) and `server-<port>-<pid>.jsonl` from pario-server. Times are each
process's CLOCK_MONOTONIC in ns; adding the process's clock offset maps them to rank 0's clock.
"""

from __future__ import annotations

import contextlib
import heapq
import os
from typing import Dict, List

from .tracefile import (Proc, Trace, TraceError, _bytes_of, by_thread, jobs_default, load, nest,  # noqa: F401
                        outermost, overlap, read_file)
from .tracechrome import SERVER_BASE_PID, chrome_stream, write_chrome  # noqa: F401
from .tracesort import ThreadSort, time_key
from .tracestream import events, scan  # noqa: F401
from .tracestats import (RANK_COLUMNS, SERVER_COLUMNS, RankStats, ServerStats, rank_rows,  # noqa: F401
                         rank_stats, server_rows, server_stats, stats_text, window_of)



# ---- Chrome / Perfetto trace-event JSON (python/pario/tracechrome.py) -----------------------

def chrome_events(trace: Trace) -> List[dict]:
    """Every event of the merged timeline, as a list (small traces; merge_json streams)."""
    return list(chrome_stream(trace, events))


def merge_json(trace: Trace, out_path: str, jobs: int = 1) -> int:
    """Write the merged timeline to out_path as it is made; the number of events. With a
    trace from `scan` (its events not in memory) the files are read again one line at a time,
    by `jobs` worker processes (a file each at a time) where jobs > 1."""
    return write_chrome(trace, events, out_path, jobs)


# ---- OTF2 ----------------------------------------------------------------------------------

def _import_otf2():
    try:
        import otf2  # Debian's python3-otf2 (the venv uses --system-site-packages)
        return otf2
    except ImportError:
        raise TraceError("OTF2 output needs the otf2 Python module (Debian: apt-get install python3-otf2)") from None


# OTF2 attributes of an enter event: name -> (description, OTF2 type name, how to get it).
OTF2_ATTRIBUTES = (
    ("bytes", "bytes moved by the operation", "UINT64"),
    ("offset", "file offset (bytes) of the operation", "INT64"),
    ("file", "the file's name", "STRING"),
    ("request id", "request id of a remote operation, the same on the client and the server", "UINT64"),
    ("server", "the pario-server that served this client request", "STRING"),
    ("client", "the rank whose request this server operation served", "STRING"),
)


class _Peers:
    """request id -> the server that served it, and -> the rank that sent it (the last
    process in the trace's order to name an id, as the dicts this replaced), from one more
    pass over the spans, kept in a temporary SQLite database: memory bounded by its page cache
    whatever the number of requests. Use as a context manager."""

    def __init__(self, trace: Trace) -> None:
        import sqlite3
        import tempfile
        self.names = [p.name for p in trace.procs]
        self.dir = tempfile.mkdtemp(prefix="pario-otf2-")
        self.db = sqlite3.connect(os.path.join(self.dir, "peers.db"))
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-4096;"
                              "CREATE TABLE p (side INTEGER, id INTEGER, who INTEGER, PRIMARY KEY (side, id))"
                              " WITHOUT ROWID;")
        self.last = (None, None, None)
        try:
            for side, procs in ((0, trace.servers), (1, trace.clients)):
                for p in procs:
                    self.db.executemany("INSERT OR REPLACE INTO p VALUES (?, ?, ?)",
                                        self._flows(side, trace.procs.index(p), p))
            self.db.commit()
        except BaseException:  # Ctrl-C, SIGTERM, a full disk: the database goes too
            self.__exit__()
            raise

    @staticmethod
    def _flows(side: int, k: int, p: Proc):
        for typ, e in events(p):
            f = e.get("flow") if typ == "span" else None
            if isinstance(f, int) and f:
                yield side, _signed(f), k

    def __enter__(self) -> "_Peers":
        return self

    def __exit__(self, *exc) -> None:
        import shutil
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def get(self, which: int, flow: int):
        """The server (which 0) or the rank (1) of a request, or None."""
        if self.last[:2] != (which, flow):  # a request's spans come together: one query for them
            row = self.db.execute("SELECT who FROM p WHERE side = ? AND id = ?", (which, _signed(flow))).fetchone()
            self.last = (which, flow, None if row is None else self.names[row[0]])
        return self.last[2]


def _signed(f: int) -> int:
    """A request id as SQLite's signed 64-bit integer."""
    f &= 2 ** 64 - 1
    return f - 2 ** 64 if f >= 2 ** 63 else f


def _otf2_values(e: dict, p: Proc, peers) -> Dict[str, object]:
    a = e.get("args") or {}
    v: Dict[str, object] = {}
    n = _bytes_of(e)
    if n or "bytes" in a or "done" in a:
        v["bytes"] = n
    if isinstance(a.get("offset"), int):
        v["offset"] = a["offset"]
    if a.get("file") in p.files:
        v["file"] = p.files[a["file"]]
    flow = e.get("flow")
    if isinstance(flow, int) and flow:
        v["request id"] = flow & (2 ** 64 - 1)
        peer = peers.get(0 if p.kind == "client" else 1, flow)
        if peer:
            v["server" if p.kind == "client" else "client"] = peer
    return v


def _location_events(p: Proc, spans, counters, lo: int):
    """(time, kind, payload) of one location in time order: enter/leave of its spans (given in
    start order, nested as tracefile.nest clamps them; at equal times leaves first, deepest
    first, then enters, outermost first) and its counters (after both at equal times)."""
    def regions():
        stack = []  # (end, span) of the open spans
        for e in spans:
            a, b = e["t"], e["t"] + e["d"]
            while stack and stack[-1][0] <= a:
                end, x = stack.pop()
                yield end + p.offset - lo, 0, "leave", x
            if stack and b > stack[-1][0]:
                b = stack[-1][0]
            yield a + p.offset - lo, 1, "enter", e
            stack.append((b, e))
        while stack:
            end, x = stack.pop()
            yield end + p.offset - lo, 0, "leave", x

    metrics = ((c["t"] + p.offset - lo, 2, "metric", c) for c in counters)
    return heapq.merge(regions(), metrics, key=lambda x: (x[0], x[1]))


def merge_otf2(trace: Trace, out_dir: str) -> int:
    """An OTF2 archive (OUT/traces.otf2): a location group per rank and server, a location per
    thread, enter/leave per span (a region per name) with attributes (bytes, offset, file,
    request id, and the peer: the server a client request went to, the rank a server operation
    served), metrics for the counters. Timestamps are ns on rank 0's clock from the trace's
    first event. The trace may hold its events or only its notes (tracestream.scan): each
    file is then read again, one event at a time, and every thread's events put in time order
    by an external sort (tracesort) in bounded memory."""
    otf2 = _import_otf2()
    if os.path.exists(os.path.join(out_dir, "traces.otf2")):
        raise TraceError(f"{out_dir}: an OTF2 archive is already there (remove it first)")
    lo, _ = trace.bounds()
    created = not os.path.exists(out_dir)
    try:
        return _write_otf2(otf2, trace, out_dir, lo)
    except BaseException:  # Ctrl-C, SIGTERM, an error: no half-written archive is left
        import shutil
        if created:
            shutil.rmtree(out_dir, ignore_errors=True)
        else:
            shutil.rmtree(os.path.join(out_dir, "traces"), ignore_errors=True)
            for f in ("traces.otf2", "traces.def"):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(out_dir, f))
        raise


def _write_otf2(otf2, trace: Trace, out_dir: str, lo: int) -> int:
    n = 0
    with _Peers(trace) as peers, otf2.writer.open(out_dir, timer_resolution=1_000_000_000) as w:
        root = w.definitions.system_tree_node("pario job")
        regions, metrics = {}, {}
        attrs = {name: w.definitions.attribute(name, desc, getattr(otf2.Type, typ))
                 for name, desc, typ in OTF2_ATTRIBUTES}

        def region(name):
            if name not in regions:
                regions[name] = w.definitions.region(name)
            return regions[name]

        def metric(name):
            if name not in metrics:
                metrics[name] = w.definitions.metric(name, unit="B/s" if name == "bytes/s" else "1")
            return metrics[name]

        for p in trace.procs:
            node = w.definitions.system_tree_node(p.host or "host", parent=root)
            group = w.definitions.location_group(p.name, system_tree_parent=node)
            with ThreadSort() as spans, ThreadSort(time_key) as counters:
                for typ, e in events(p):
                    if typ == "span":
                        spans.add(e.get("tid", 0), e)
                    elif typ == "counter":
                        counters.add(e.get("tid", 0), e)
                tids = sorted(set(spans.threads()) | set(p.threads) | {0})
                locs = {tid: w.definitions.location(p.threads.get(tid, f"thread {tid}"), group=group) for tid in tids}
                for tid in tids:
                    ew = None
                    for t, _, kind, what in _location_events(p, spans.sorted(tid), counters.sorted(tid), lo):
                        if ew is None:
                            ew = w.event_writer_from_location(locs[tid])
                        if kind == "enter":
                            values = _otf2_values(what, p, peers)
                            ew.enter(t, region(what["name"]),
                                     attributes={attrs[k]: v for k, v in values.items()} or None)
                        elif kind == "leave":
                            ew.leave(t, region(what["name"]))
                        else:
                            ew.metric(t, metric(what["name"]), float(what["value"]))
                        n += 1
    return n
