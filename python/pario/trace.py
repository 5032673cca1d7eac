"""`pario trace`: read a trace directory (docs/trace-format.md), merge it into one timeline
(Chrome/Perfetto trace-event JSON, or OTF2 for Vampir), compute the seed's server statistics
(PIOviz, seed 001, Tables 2-4) and per-rank I/O times (the HTML report: tracereport).

A trace directory holds one JSON Lines file per process: `client-<rank>-<pid>.jsonl` from
libpario (PARIO_TRACE=DIR) and `server-<port>-<pid>.jsonl` from pario-server. Times are each
process's CLOCK_MONOTONIC in ns; adding the process's clock offset maps them to rank 0's clock.
"""

from __future__ import annotations

import os
from typing import Dict, List, Tuple

from .tracefile import (Proc, Trace, TraceError, _bytes_of, by_thread, jobs_default, load, nest,  # noqa: F401
                        outermost, overlap, read_file)
from .tracechrome import SERVER_BASE_PID, chrome_stream, write_chrome  # noqa: F401
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


def _peers(trace: Trace) -> Tuple[Dict[int, str], Dict[int, str]]:
    """request id -> the server that served it, and -> the rank that sent it."""
    server_of = {e["flow"]: s.name for s in trace.servers for e in s.spans if isinstance(e.get("flow"), int)}
    client_of = {e["flow"]: c.name for c in trace.clients for e in c.spans
                 if isinstance(e.get("flow"), int) and e["flow"] in server_of}
    return server_of, client_of


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
        peer = peers[0 if p.kind == "client" else 1].get(flow)
        if peer:
            v["server" if p.kind == "client" else "client"] = peer
    return v


def merge_otf2(trace: Trace, out_dir: str) -> int:
    """An OTF2 archive (OUT/traces.otf2): a location group per rank and server, a location per
    thread, enter/leave per span (a region per name) with attributes (bytes, offset, file,
    request id, and the peer: the server a client request went to, the rank a server operation
    served), metrics for the counters. Timestamps are ns on rank 0's clock from the trace's
    first event."""
    otf2 = _import_otf2()
    if os.path.exists(os.path.join(out_dir, "traces.otf2")):
        raise TraceError(f"{out_dir}: an OTF2 archive is already there (remove it first)")
    lo, _ = trace.bounds()
    peers = _peers(trace)
    n = 0
    with otf2.writer.open(out_dir, timer_resolution=1_000_000_000) as w:
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
            threads = by_thread(p)
            tids = sorted(set(threads) | set(p.threads) | {0})
            locs = {tid: w.definitions.location(p.threads.get(tid, f"thread {tid}"), group=group) for tid in tids}
            for tid in tids:
                evs = []  # (time, order, kind, payload): leaves before enters at equal times
                for e, depth, a, b in nest(threads.get(tid, [])):
                    evs.append((a + p.offset - lo, 1, depth, "enter", e))
                    evs.append((b + p.offset - lo, 0, -depth, "leave", e))
                for c in p.counters:
                    if c.get("tid", 0) == tid:
                        evs.append((c["t"] + p.offset - lo, 2, 0, "metric", (c["name"], float(c["value"]))))
                if not evs:
                    continue
                ew = w.event_writer_from_location(locs[tid])
                for t, _, _, kind, what in sorted(evs, key=lambda x: (x[0], x[1], x[2])):
                    if kind == "enter":
                        values = _otf2_values(what, p, peers)
                        ew.enter(t, region(what["name"]), attributes={attrs[k]: v for k, v in values.items()} or None)
                    elif kind == "leave":
                        ew.leave(t, region(what["name"]))
                    else:
                        ew.metric(t, metric(what[0]), what[1])
                    n += 1
    return n
