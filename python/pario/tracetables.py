"""The trace report's tables (`pario trace report`): per call type, per file, the access-size
histogram, the slowest operations and the breakdown of every collective call. Each table is
(columns, rows of strings); the server and rank tables come from tracestats.

What counts: the `MPI_File_*` calls (cat `api`) that start within the window; a call's bytes are
those its span carries (a nonblocking call's bytes are on its background job, docs/tracing.md);
the histogram counts data calls and, apart, the driver's operations, by size in powers of two.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .tracefile import Proc, Trace, _bytes_of, by_thread, overlap
from .tracestats import DATA_CALL, WAIT_SPANS, Window

Table = Tuple[List[str], List[List[str]]]
SLOWEST = 20


def _in(e: dict, p: Proc, win: Window) -> bool:
    return win is None or win[0] <= e["t"] + p.offset < win[1]


def api_calls(trace: Trace, win: Window = None) -> List[Tuple[Proc, dict]]:
    return [(p, e) for p in trace.clients for e in p.spans
            if e.get("cat") == "api" and str(e.get("name", "")).startswith("MPI_File_") and _in(e, p, win)]


def file_of(p: Proc, e: dict) -> str:
    f = (e.get("args") or {}).get("file")
    return p.files.get(f, "") if f is not None else ""


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.4f}"


def by_call(trace: Trace, win: Window = None) -> Table:
    """Per call name: count, bytes, total and mean time (ms)."""
    acc: Dict[str, List[int]] = {}
    for p, e in api_calls(trace, win):
        a = acc.setdefault(e["name"], [0, 0, 0])
        a[0], a[1], a[2] = a[0] + 1, a[1] + _bytes_of(e), a[2] + e["d"]
    rows = [[k, str(n), str(b), _ms(t), _ms(t / n)] for k, (n, b, t) in sorted(acc.items(), key=lambda kv: -kv[1][2])]
    return ["call", "count", "bytes", "time (ms)", "mean (ms)"], rows


def by_file(trace: Trace, win: Window = None) -> Table:
    """Per file (its name): calls naming it, their bytes and time (ms)."""
    acc: Dict[str, List[int]] = {}
    for p, e in api_calls(trace, win):
        name = file_of(p, e)
        if not name:
            continue
        a = acc.setdefault(name, [0, 0, 0])
        a[0], a[1], a[2] = a[0] + 1, a[1] + _bytes_of(e), a[2] + e["d"]
    rows = [[k, str(n), str(b), _ms(t)] for k, (n, b, t) in sorted(acc.items(), key=lambda kv: -kv[1][2])]
    return ["file", "calls", "bytes", "time (ms)"], rows


def size_label(k: int) -> str:
    """Bucket k holds sizes in [2^(k-1), 2^k); bucket 0 holds 0."""
    def h(n: int) -> str:
        for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if n >= f:
                return f"{n // f} {unit}"
        return f"{n} B"
    return "0 B" if k == 0 else f"{h(1 << (k - 1))} .. {h(1 << k)}"


def _is_driver_read(e: dict) -> bool:
    return "read" in str(e.get("name", ""))


def size_histogram(trace: Trace, win: Window = None) -> Table:
    """Access sizes in powers of two: MPI-IO data calls and driver operations, reads and
    writes apart (as Darshan's, binary)."""
    counts: Dict[int, List[int]] = {}

    def add(n: int, col: int) -> None:
        counts.setdefault(n.bit_length(), [0, 0, 0, 0])[col] += 1

    for p, e in api_calls(trace, win):
        if DATA_CALL.match(e["name"]) and not e["name"].startswith("MPI_File_i"):
            add(_bytes_of(e), 0 if "read" in e["name"] else 1)
    for p in trace.clients:
        for e in p.spans:
            if e.get("cat") == "driver" and _in(e, p, win) and ("read" in e["name"] or "write" in e["name"]):
                add(_bytes_of(e), 2 if _is_driver_read(e) else 3)
    rows = [[size_label(k)] + [str(c) for c in counts[k]] for k in sorted(counts)]
    return ["size", "MPI-IO reads", "MPI-IO writes", "driver reads", "driver writes"], rows


def slowest(trace: Trace, win: Window = None, n: int = SLOWEST) -> Table:
    lo = trace.bounds()[0]
    calls = sorted(api_calls(trace, win), key=lambda pe: -pe[1]["d"])[:n]
    rows = [[e["name"], p.name, file_of(p, e), str(_bytes_of(e)), _ms(e["d"]), f"{(e['t'] + p.offset - lo) / 1e9:.6f}"]
            for p, e in calls]
    return ["call", "rank", "file", "bytes", "duration (ms)", "start (s)"], rows


def collective_parts(spans: List[dict], call: dict) -> Tuple[int, int, int, int]:
    """(exchange, file access, waiting, other) ns of one collective call, from the spans of its
    thread inside it, as tracestats splits the totals."""
    a, b = call["t"], call["t"] + call["d"]
    iv = [(a, b)]
    exch = fa = wait = 0
    for e in spans:
        if e is call or e["t"] >= b or e["t"] + e["d"] <= a:
            continue
        part = overlap(e["t"], e["t"] + e["d"], iv)
        if e.get("cat") == "coll" and e.get("name") == "exchange":
            exch += part
        elif e.get("cat") == "driver":
            fa += part
        elif e.get("name") in WAIT_SPANS:
            wait += part
    return exch, fa, wait, max(0, (b - a) - exch - fa - wait)


def _counted(e: dict) -> bool:
    """A span that collective_parts counts (exchange, file access, waiting)."""
    return (e.get("cat") == "coll" and e.get("name") == "exchange") or e.get("cat") == "driver" or \
        e.get("name") in WAIT_SPANS


def collectives(trace: Trace, win: Window = None) -> Table:
    """Every collective call (args coll = 1), in time order, split as the rank totals are. Per
    call only the counted spans that can overlap it are looked at (those starting in [start
    of the call - the longest counted span, end of the call)): the same sums, without a pass
    over the whole thread per call."""
    from bisect import bisect_left
    lo = trace.bounds()[0]
    rows: List[Tuple[int, List[str]]] = []
    for p in trace.clients:
        for spans in by_thread(p).values():
            counted = [e for e in spans if _counted(e)]  # sorted by start, as spans
            starts = [e["t"] for e in counted]
            longest = max((e["d"] for e in counted), default=0)
            for e in spans:
                if e.get("cat") == "api" and (e.get("args") or {}).get("coll") == 1 and _in(e, p, win):
                    near = counted[bisect_left(starts, e["t"] - longest):bisect_left(starts, e["t"] + e["d"])]
                    parts = collective_parts(near, e)
                    rows.append((e["t"] + p.offset, [e["name"], p.name, f"{(e['t'] + p.offset - lo) / 1e9:.6f}",
                                                     _ms(e["d"])] + [_ms(x) for x in parts]))
    rows.sort(key=lambda r: r[0])
    return (["call", "rank", "start (s)", "duration (ms)", "exchange (ms)", "file access (ms)", "waiting (ms)",
             "other (ms)"], [r for _, r in rows])


def all_tables(trace: Trace, win: Window = None) -> Dict[str, Table]:
    return {"calls": by_call(trace, win), "files": by_file(trace, win), "sizes": size_histogram(trace, win),
            "slowest": slowest(trace, win), "collectives": collectives(trace, win)}
