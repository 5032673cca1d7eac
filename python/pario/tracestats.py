"""`pario trace stats`: the seed's server statistics (PIOviz, seed 001, Table 2) and per-rank
I/O totals, over the whole trace or a time window (`--from/--to`).

What counts (docs/tracing.md, "What the totals count"):
- a rank's bytes are those of its data calls: a blocking or split call's own span (a split
  collective's `_end` carries them), and for a nonblocking call (`MPI_File_i*`) the background
  job that moved them (the call itself returns at once with 0 bytes);
- a rank's I/O time is the union, per thread, of its `MPI_File_*` calls and of the waits and
  tests (`MPI_Wait`, `MPI_Test`, ...) on pario's requests: the time the program spent in I/O;
- opens and closes are counted apart from data calls, and so are other calls (views, hints, ...);
- calls on a tool's own files (a PMPI tool above pario writing its log through it: Darshan's
  `*.darshan_partial`, marked `tool` in the trace's file lines) are counted apart and left out
  of the rank's bytes and times;
- a server's loads, rates and throughput are taken over its active interval (its first span
  to its last within the window), not over idle time before or after; storage `bytes/op`
  counts data operations (reads, writes, splice, sendfile), not opens, syncs or preallocations.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .tracefile import Proc, Trace, _bytes_of
from .tracestream import events
from .textout import text_table

# Categories of work inside a collective call: name -> bucket.
WAIT_SPANS = {"wait_allgather", "wait_ready", "wait_done", "ordered_wait"}
DATA_CALL = re.compile(r"^MPI_File_(i?)(read|write)(_at)?(_all)?(_shared|_ordered)?(_begin|_end)?(_c)?$")
OPEN_CLOSE = {"MPI_File_open", "MPI_File_close"}
REQUEST_CALLS = {"MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome",
                 "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"}
STORAGE_DATA = re.compile(r"read|write|splice|sendfile")

Window = Optional[Tuple[int, int]]  # [lo, hi) on rank 0's clock, ns


@dataclass
class ServerStats:
    name: str
    net_ops: int
    net_load: float        # mean number of network operations in progress
    net_rate: float        # network operations per second
    storage_ops: int       # data operations (read, write, splice, sendfile)
    storage_load: float
    storage_rate: float
    storage_kinds: str     # e.g. "pread, pwrite"
    bytes_per_op: float    # of the data operations
    cpu_pct: Optional[float]
    throughput: float      # storage MB/s over the active interval
    active: float = 0.0    # s: the interval the loads and rates are taken over
    meta_ops: int = 0      # storage operations that move no data: open, fsync, fallocate, ...


@dataclass
class RankStats:
    name: str
    io_time: float         # s in MPI_File calls and in waits/tests on pario requests (union)
    calls: int             # data calls (reads and writes of every kind)
    bytes_read: int
    bytes_written: int
    coll_time: float       # s in collective calls
    exchange: float        # s of it exchanging data between ranks
    file_access: float     # s of it in driver operations
    waiting: float         # s of it waiting for the other ranks
    other: float           # the rest: planning, packing, copying
    tool_calls: int = 0    # calls on a tool's own files (Darshan's log): not in the columns above
    open_close: int = 0    # MPI_File_open and MPI_File_close calls
    other_calls: int = 0   # every other MPI_File_* call (views, hints, sizes, seeks, ...)
    wait_time: float = 0.0 # s in MPI_Wait/MPI_Test & co. on pario requests


class Union:
    """The length of a union of intervals added one by one, in bounded memory: the disjoint
    pieces so far, sorted; beyond CAP pieces the oldest half is added up and forgotten (exact
    unless a later interval reaches back over CAP disjoint pieces of the same thread: one MPI
    call containing thousands of others)."""
    CAP = 4096
    __slots__ = ("starts", "ends", "done")

    def __init__(self) -> None:
        self.starts: List[int] = []
        self.ends: List[int] = []
        self.done = 0

    def add(self, a: int, b: int) -> None:
        if b <= a:
            return
        starts, ends = self.starts, self.ends
        if not ends or a > ends[-1]:  # the usual case: after everything so far
            starts.append(a)
            ends.append(b)
            if len(starts) > self.CAP:
                k = self.CAP // 2
                self.done += sum(ends[:k]) - sum(starts[:k])
                del starts[:k], ends[:k]
            return
        i = bisect_right(starts, a)
        lo = i - 1 if i > 0 and ends[i - 1] >= a else i
        j = bisect_right(starts, b)
        if lo < j:
            a, b = min(a, starts[lo]), max(b, ends[j - 1])
        starts[lo:j] = [a]
        ends[lo:j] = [b]

    def length(self) -> int:
        return self.done + sum(self.ends) - sum(self.starts)


# What a span is to a rank's statistics, by (cat, name): computed once per pair.
_EXCH, _FA, _WAITING = 0, 1, 2


def _kind(cat, name) -> Tuple[int, Optional[int], bool, bool]:
    """(call: 0 not an MPI_File call, 1 data read, 2 data write, 3 open/close, 4 other;
    the part of a collective it is (_EXCH, _FA, _WAITING or None); a wait or test on
    requests; a background job)."""
    call = 0
    if cat == "api" and isinstance(name, str) and name.startswith("MPI_File_"):
        call = (1 if _is_read(name) else 2) if DATA_CALL.match(name) else 3 if name in OPEN_CLOSE else 4
    part = (_EXCH if cat == "coll" and name == "exchange" else _FA if cat == "driver"
            else _WAITING if name in WAIT_SPANS else None)
    return call, part, cat == "api" and name in REQUEST_CALLS, cat == "async" and name == "job"


class _Thread:
    __slots__ = ("io", "wait", "coll", "pending")

    def __init__(self) -> None:
        self.io, self.wait, self.coll = Union(), Union(), Union()
        self.pending: List[Tuple[int, int, int]] = []  # parts of collectives not yet under one


class RankAcc:
    """A rank's statistics from its spans, fed in the writers' order (tracestream): each
    thread's spans by their end, children before parents. Parts of collective calls
    (exchange, driver operations, waits) wait in a bounded list until the collective call
    that contains them ends (the list keeps the newest PENDING: a collective call with more
    parts than that counts only the newest)."""
    PENDING = 65536

    def __init__(self, name: str, offset: int, window: Window, tool_files=frozenset()) -> None:
        self.name, self.off, self.win, self.tool_files = name, offset, window, tool_files
        self.threads: Dict[int, _Thread] = {}
        self.kinds: Dict[Tuple[str, str], tuple] = {}
        self.calls = self.open_close = self.other_calls = self.tool_calls = self.rd = self.wr = 0
        self.parts = [0, 0, 0]

    def span(self, e: dict) -> None:
        cat, name = e.get("cat"), e.get("name", "")
        k = self.kinds.get((cat, name))
        if k is None:
            k = self.kinds[(cat, name)] = _kind(cat, name)
        call, part, request_wait, job = k
        args = e.get("args") or {}
        a = e["t"] + self.off
        b = a + e["d"]
        win = self.win
        inside = win is None or win[0] <= a < win[1]
        if self.tool_files and args.get("file") in self.tool_files and (call or job):
            self.tool_calls += bool(call) and inside  # a tool's own call (Darshan's log): apart
            return
        if call and inside:
            if call <= 2:
                self.calls += 1
                if call == 1:
                    self.rd += _bytes_of(e)
                else:
                    self.wr += _bytes_of(e)
            elif call == 3:
                self.open_close += 1
            else:
                self.other_calls += 1
        request_wait = request_wait and "job" in args
        coll = args.get("coll") == 1 and (cat == "api" or job)
        if job and inside:
            op = str(args.get("op", ""))
            if op.startswith("MPI_File_i"):
                if _is_read(op):
                    self.rd += _bytes_of(e)
                else:
                    self.wr += _bytes_of(e)
        if not (call or request_wait or coll or part is not None):
            return
        tid = e.get("tid", 0)
        th = self.threads.get(tid)
        if th is None:
            th = self.threads[tid] = _Thread()
        ca, cb = (a, b) if win is None else (max(a, win[0]), min(b, win[1]))
        if call or request_wait:
            th.io.add(ca, cb)
        if request_wait:
            th.wait.add(ca, cb)
        if coll:
            th.coll.add(ca, cb)
            pend, parts = th.pending, self.parts
            while pend and pend[-1][0] >= a:  # the parts inside this call
                pa, pb, pk = pend.pop()
                parts[pk] += max(0, min(pb, cb) - max(pa, ca))
        if part is not None:
            th.pending.append((a, b, part))
            if len(th.pending) > self.PENDING:
                del th.pending[:self.PENDING // 2]

    def result(self) -> RankStats:
        io = sum(t.io.length() for t in self.threads.values())
        coll = sum(t.coll.length() for t in self.threads.values())
        exch, fa, waiting = self.parts
        return RankStats(name=self.name, io_time=io / 1e9, calls=self.calls, bytes_read=self.rd,
                         bytes_written=self.wr, coll_time=coll / 1e9, exchange=exch / 1e9, file_access=fa / 1e9,
                         waiting=waiting / 1e9, other=max(0, coll - exch - fa - waiting) / 1e9,
                         open_close=self.open_close, other_calls=self.other_calls, tool_calls=self.tool_calls,
                         wait_time=sum(t.wait.length() for t in self.threads.values()) / 1e9)


class ServerAcc:
    """A server's statistics from its spans and counters, in any order."""

    def __init__(self, name: str, offset: int, window: Window, duration_ns: Optional[int] = None) -> None:
        self.name, self.off, self.win, self.duration = name, offset, window, duration_ns
        self.lo = self.hi = None
        self.net = self.net_busy = self.sto = self.sto_busy = self.data = self.nbytes = 0
        self.kinds: Dict[str, bool] = {}  # storage operation name -> moves data
        self.data_names = set()
        self.cpu: List[float] = []

    def span(self, e: dict) -> None:
        a = e["t"] + self.off
        b = a + e["d"]
        if self.win is not None:
            a, b = max(a, self.win[0]), min(b, self.win[1])
        if b <= a:
            return
        self.lo = a if self.lo is None or a < self.lo else self.lo
        self.hi = b if self.hi is None or b > self.hi else self.hi
        cat = e.get("cat")
        if cat == "net":
            self.net += 1
            self.net_busy += b - a
        elif cat == "storage":
            self.sto += 1
            self.sto_busy += b - a
            name = e.get("name", "")
            data = self.kinds.get(name)
            if data is None:
                data = self.kinds[name] = bool(STORAGE_DATA.search(name))
            if data:
                self.data += 1
                self.nbytes += _bytes_of(e)
                self.data_names.add(e.get("name", "?"))

    def counter(self, c: dict) -> None:
        if c.get("name") == "cpu_pct" and (self.win is None or self.win[0] <= c["t"] + self.off < self.win[1]):
            self.cpu.append(c["value"])

    def result(self) -> ServerStats:
        lo, hi = (0, self.duration) if self.duration is not None else (self.lo or 0, self.hi or 0)
        secs = (hi - lo) / 1e9
        load = (lambda busy: busy / (hi - lo) if hi > lo else 0.0)
        n, cpu = self.data, self.cpu
        return ServerStats(
            name=self.name, net_ops=self.net, net_load=load(self.net_busy),
            net_rate=self.net / secs if secs > 0 else 0.0, storage_ops=n, storage_load=load(self.sto_busy),
            storage_rate=n / secs if secs > 0 else 0.0, storage_kinds=", ".join(sorted(self.data_names)),
            bytes_per_op=self.nbytes / n if n else 0.0, cpu_pct=sum(cpu) / len(cpu) if cpu else None,
            throughput=self.nbytes / 1e6 / secs if secs > 0 else 0.0, active=secs, meta_ops=self.sto - n)


def _is_read(name: str) -> bool:
    return "read" in name


def _feed(acc, p: Proc) -> None:
    for typ, e in events(p):
        if typ == "span":
            acc.span(e)
        elif typ == "counter" and isinstance(acc, ServerAcc):
            acc.counter(e)


def server_stats(trace: Trace, duration_ns: Optional[int] = None, window: Window = None) -> List[ServerStats]:
    """Per server: loads and rates over its active interval within the window (or over
    duration_ns when given: the time of the measured calls only, `pario trace experiment`).
    The trace's processes may hold their events (tracefile.load) or not (tracestream.scan:
    then their files are read again, one event at a time)."""
    out = []
    for s in trace.servers:
        acc = ServerAcc(s.name, s.offset, window, duration_ns)
        _feed(acc, s)
        out.append(acc.result())
    return out


def rank_stats(trace: Trace, window: Window = None) -> List[RankStats]:
    out = []
    for p in trace.clients:
        acc = RankAcc(p.name, p.offset, window, p.tool_files)
        _feed(acc, p)
        out.append(acc.result())
    return out


SERVER_COLUMNS = ["server", "active (s)", "network load (ops in progress)", "network ops/s",
                  "storage load (ops in progress)", "storage ops/s", "storage accesses (ops)", "other storage ops",
                  "storage bytes/op", "CPU usage (%)", "throughput (MB/s)"]
RANK_COLUMNS = ["rank", "time in I/O (s)", "of it waiting on requests (s)", "data calls", "open/close", "other calls",
                "tools' calls",
                "bytes read", "bytes written", "collective calls (s)", "exchange (s)", "file access (s)",
                "waiting (s)", "other (s)"]


def server_rows(stats: List[ServerStats]) -> List[List[str]]:
    return [[s.name, f"{s.active:.6f}", f"{s.net_load:.3f}", f"{s.net_rate:.1f}", f"{s.storage_load:.3f}",
             f"{s.storage_rate:.1f}", f"{s.storage_ops}" + (f" ({s.storage_kinds})" if s.storage_kinds else ""),
             str(s.meta_ops), f"{s.bytes_per_op:.1f}", "-" if s.cpu_pct is None else f"{s.cpu_pct:.2f}",
             f"{s.throughput:.3f}"] for s in stats]


def rank_rows(stats: List[RankStats]) -> List[List[str]]:
    return [[r.name, f"{r.io_time:.6f}", f"{r.wait_time:.6f}", str(r.calls), str(r.open_close), str(r.other_calls),
             str(r.tool_calls),
             str(r.bytes_read), str(r.bytes_written), f"{r.coll_time:.6f}", f"{r.exchange:.6f}",
             f"{r.file_access:.6f}", f"{r.waiting:.6f}", f"{r.other:.6f}"] for r in stats]


def _table(columns: List[str], rows: List[List[str]]) -> str:
    """The name left, the figures right."""
    return text_table(columns, rows, right=range(1, len(columns)))


def window_of(trace: Trace, start: Optional[float], end: Optional[float]) -> Window:
    """--from/--to (seconds since the trace's first event) as a window on rank 0's clock."""
    if start is None and end is None:
        return None
    lo, hi = trace.bounds()
    a = lo + int((start or 0.0) * 1e9)
    b = hi + 1 if end is None else lo + int(end * 1e9)
    return (a, b)


def stats_text(trace: Trace, window: Window = None, servers: Optional[List[ServerStats]] = None,
               ranks: Optional[List[RankStats]] = None) -> str:
    lo, hi = trace.bounds() if window is None else window
    parts = [f"trace: {len(trace.clients)} rank(s), {len(trace.servers)} server(s), "
             f"{(hi - lo) / 1e9:.6f} s" + ("" if window is None else
                                           f" (window {(window[0] - trace.bounds()[0]) / 1e9:.6f} s .. "
                                           f"{(window[1] - trace.bounds()[0]) / 1e9:.6f} s)")]
    for p in trace.procs:
        if p.err >= 0:
            parts.append(f"  clock of {p.name}: offset {p.offset} ns, error <= {p.err} ns")
    if trace.servers:
        parts += ["", "servers (PIOviz, seed 001, Table 2; over each server's active interval):",
                  _table(SERVER_COLUMNS, server_rows(servers if servers is not None
                                                       else server_stats(trace, window=window)))]
    else:
        parts += ["", "servers: none in this trace"]
    parts += ["", "ranks:", _table(RANK_COLUMNS, rank_rows(ranks if ranks is not None else rank_stats(trace, window)))]
    losses = [f"  {p.name}: " + ", ".join(x for x in (
        f"lost {p.dropped} events while tracing ({p.drop_reason or 'no reason given'})" if p.dropped else "",
        f"{p.bad_lines} unreadable line(s) skipped" if p.bad_lines else "",
        f"{p.filtered_calls} call(s) left out by the filter '{p.filter_spec}'" if p.filtered_calls else "") if x)
        for p in trace.procs if p.dropped or p.bad_lines or p.filtered_calls]
    if losses:
        parts += ["", "incomplete (the totals above miss these):"] + losses
    return "\n".join(parts)
