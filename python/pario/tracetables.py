"""The trace report's tables (`pario trace report`): per call type, per file, the access-size
histogram, the slowest operations and the breakdown of every collective call. Each table is
(columns, rows of strings); the server and rank tables come from tracestats.

What counts: the `MPI_File_*` calls (cat `api`) that start within the window; a call's bytes are
those its span carries (a nonblocking call's bytes are on its background job, docs/tracing.md);
the histogram counts data calls and, apart, the driver's operations, by size in powers of two.

All tables come from one streaming pass (Tables, fed each process's events in the writers'
order by tracestream.events): memory bounded whatever the trace's length. The slowest calls
are a heap of SLOWEST; a collective call's parts (exchange, driver operations, waits) wait per
thread until the call that contains them ends (they end first), and the page keeps the
COLLECTIVES longest collective calls, in time order, with the count and totals of the others.
"""

from __future__ import annotations

import heapq
from typing import Dict, List, Optional, Tuple

from .tracefile import Proc, Trace, _bytes_of, overlap
from .tracestats import DATA_CALL, WAIT_SPANS, Window
from .tracestream import events

Table = Tuple[List[str], List[List[str]]]
SLOWEST = 20
COLLECTIVES = 1000  # collective calls listed on the page (the longest); the others are summed
PENDING = 65536     # parts of collective calls kept per thread until their call ends

CALL_COLUMNS = ["call", "count", "bytes", "time (ms)", "mean (ms)"]
FILE_COLUMNS = ["file", "calls", "bytes", "time (ms)"]
SIZE_COLUMNS = ["size", "MPI-IO reads", "MPI-IO writes", "driver reads", "driver writes"]
SLOW_COLUMNS = ["call", "rank", "file", "bytes", "duration (ms)", "start (s)"]
COLL_COLUMNS = ["call", "rank", "start (s)", "duration (ms)", "exchange (ms)", "file access (ms)", "waiting (ms)",
                "other (ms)"]


def _in(e: dict, p: Proc, win: Window) -> bool:
    return win is None or win[0] <= e["t"] + p.offset < win[1]


def file_of(p: Proc, e: dict) -> str:
    f = (e.get("args") or {}).get("file")
    return p.files.get(f, "") if f is not None else ""


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.4f}"


def size_label(k: int) -> str:
    """Bucket k holds sizes in [2^(k-1), 2^k); bucket 0 holds 0."""
    def h(n: int) -> str:
        for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if n >= f:
                return f"{n // f} {unit}"
        return f"{n} B"
    return "0 B" if k == 0 else f"{h(1 << (k - 1))} .. {h(1 << k)}"


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


def _counted(e: dict) -> Optional[int]:
    """The part of a collective call a span is (0 exchange, 1 file access, 2 waiting), or None."""
    if e.get("cat") == "coll" and e.get("name") == "exchange":
        return 0
    if e.get("cat") == "driver":
        return 1
    return 2 if e.get("name") in WAIT_SPANS else None


class Tables:
    """The report's tables from every client's events, one process after another, each
    thread's spans in the writers' order (by end: a call's parts before the call)."""

    def __init__(self, trace: Trace, win: Window = None) -> None:
        self.lo, self.win = trace.bounds()[0], win
        self.calls: Dict[str, List[int]] = {}
        self.files: Dict[str, List[int]] = {}
        self.sizes: Dict[int, List[int]] = {}
        self.slow: List[tuple] = []  # heap of (duration, -seq, row)
        self.coll: List[tuple] = []  # heap of (duration, -seq, start, row)
        self.coll_out = [0, 0, 0, 0, 0, 0]  # left out: calls, duration, exchange, file access, waiting, other
        self.seq = 0
        self.pending: Dict[int, List[tuple]] = {}  # tid -> (start, end, part) by end, this process's

    def proc(self, p: Proc, evs) -> None:
        for typ, e in evs:
            if typ == "span":
                self.span(p, e)
        self.end_proc()

    def end_proc(self) -> None:
        self.pending.clear()

    def span(self, p: Proc, e: dict) -> None:
        part = _counted(e)
        if part is not None:
            pend = self.pending.get(e.get("tid", 0))
            if pend is None:
                pend = self.pending[e.get("tid", 0)] = []
            pend.append((e["t"], e["t"] + e["d"], part))
            if len(pend) > PENDING:
                del pend[:PENDING // 2]
        cat, name = e.get("cat"), str(e.get("name", ""))
        if not _in(e, p, self.win):
            return
        if cat == "driver" and ("read" in name or "write" in name):
            self._size(_bytes_of(e), 2 if "read" in name else 3)
        if cat == "api" and name.startswith("MPI_File_"):
            self._call(p, e, name, self.pending.get(e.get("tid", 0)))

    def _size(self, n: int, col: int) -> None:
        c = self.sizes.get(n.bit_length())
        if c is None:
            c = self.sizes[n.bit_length()] = [0, 0, 0, 0]
        c[col] += 1

    def _call(self, p: Proc, e: dict, name: str, pend: Optional[List[tuple]]) -> None:
        nbytes, d, fname = _bytes_of(e), e["d"], file_of(p, e)
        self.seq += 1
        for acc, key in ((self.calls, name), (self.files, fname)):
            if key:
                a = acc.get(key)
                if a is None:
                    a = acc[key] = [0, 0, 0]
                a[0], a[1], a[2] = a[0] + 1, a[1] + nbytes, a[2] + d
        if DATA_CALL.match(name) and not name.startswith("MPI_File_i"):
            self._size(nbytes, 0 if "read" in name else 1)
        start = e["t"] + p.offset
        if len(self.slow) < SLOWEST or (d, -self.seq) > self.slow[0][:2]:
            row = [name, p.name, fname, str(nbytes), _ms(d), f"{(start - self.lo) / 1e9:.6f}"]
            (heapq.heappush if len(self.slow) < SLOWEST else heapq.heapreplace)(self.slow, (d, -self.seq, row))
        if (e.get("args") or {}).get("coll") == 1:
            self._collective(p, e, start, pend or [])

    def _collective(self, p: Proc, e: dict, start: int, pend: List[tuple]) -> None:
        a, b = e["t"], e["t"] + e["d"]
        parts, i = [0, 0, 0], len(pend)
        while i > 0 and pend[i - 1][1] > a:  # the parts that end inside the call (they come by end)
            i -= 1
            pa, pb, k = pend[i]
            parts[k] += max(0, min(b, pb) - max(a, pa))
        pend[i:] = [x for x in pend[i:] if x[0] < a]  # those inside it belong to no later call
        parts.append(max(0, (b - a) - sum(parts)))
        item = (e["d"], -self.seq, start, e["name"], p.name, parts)
        if len(self.coll) >= COLLECTIVES:
            if item[:2] < self.coll[0][:2]:
                self._left_out(item)
                return
            self._left_out(heapq.heapreplace(self.coll, item))
        else:
            heapq.heappush(self.coll, item)

    def _left_out(self, item: tuple) -> None:
        out = self.coll_out
        out[0] += 1
        out[1] += item[0]
        for j, x in enumerate(item[5]):
            out[2 + j] += x

    def result(self) -> Dict[str, Table]:
        calls = [[k, str(n), str(b), _ms(t), _ms(t / n)] for k, (n, b, t) in
                 sorted(self.calls.items(), key=lambda kv: -kv[1][2])]
        files = [[k, str(n), str(b), _ms(t)] for k, (n, b, t) in sorted(self.files.items(), key=lambda kv: -kv[1][2])]
        sizes = [[size_label(k)] + [str(c) for c in self.sizes[k]] for k in sorted(self.sizes)]
        slow = [r for _, _, r in sorted(self.slow, key=lambda x: (-x[0], -x[1]))]
        coll = [[name, proc, f"{(start - self.lo) / 1e9:.6f}", _ms(d)] + [_ms(x) for x in parts]
                for d, _, start, name, proc, parts in sorted(self.coll, key=lambda x: (x[2], -x[1]))]
        return {"calls": (CALL_COLUMNS, calls), "files": (FILE_COLUMNS, files), "sizes": (SIZE_COLUMNS, sizes),
                "slowest": (SLOW_COLUMNS, slow), "collectives": (COLL_COLUMNS, coll)}

    def left_out(self) -> Optional[List[str]]:
        """The collective calls not listed: [count, duration, exchange, file access, waiting,
        other] (ms), or None when every one is."""
        n, *ns = self.coll_out
        return [str(n)] + [_ms(x) for x in ns] if n else None


def tables(trace: Trace, win: Window = None, feed=None) -> Tables:
    """The tables of a trace (its processes' events in memory or read again from the files:
    tracestream.events); feed(p, events) may see each process's events on the way."""
    t = Tables(trace, win)
    for p in trace.clients:
        t.proc(p, events(p) if feed is None else feed(p, events(p)))
    return t


def all_tables(trace: Trace, win: Window = None) -> Dict[str, Table]:
    return tables(trace, win).result()


def by_call(trace: Trace, win: Window = None) -> Table:
    """Per call name: count, bytes, total and mean time (ms)."""
    return all_tables(trace, win)["calls"]


def by_file(trace: Trace, win: Window = None) -> Table:
    """Per file (its name): calls naming it, their bytes and time (ms)."""
    return all_tables(trace, win)["files"]


def size_histogram(trace: Trace, win: Window = None) -> Table:
    """Access sizes in powers of two: MPI-IO data calls and driver operations, reads and
    writes apart (as Darshan's, binary)."""
    return all_tables(trace, win)["sizes"]


def slowest(trace: Trace, win: Window = None) -> Table:
    return all_tables(trace, win)["slowest"]


def collectives(trace: Trace, win: Window = None) -> Table:
    """The collective calls (args coll = 1), the COLLECTIVES longest in time order, split as
    the rank totals are."""
    return all_tables(trace, win)["collectives"]
