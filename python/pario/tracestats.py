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
from dataclasses import dataclass
from typing import List, Optional, Tuple

from .tracefile import Proc, Trace, _bytes_of, by_thread, outermost, overlap

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


def _in(e: dict, off: int, win: Window) -> bool:
    """Whether span e (of a process whose offset is off) starts within the window."""
    return win is None or win[0] <= e["t"] + off < win[1]


def _clip(e: dict, off: int, win: Window) -> Tuple[int, int]:
    a, b = e["t"] + off, e["t"] + e["d"] + off
    return (a, b) if win is None else (max(a, win[0]), min(b, win[1]))


def _union(ivs: List[Tuple[int, int]]) -> int:
    total, end = 0, None
    for a, b in sorted(ivs):
        if b <= a:
            continue
        if end is None or a >= end:
            total, end = total + b - a, b
        elif b > end:
            total, end = total + b - end, b
    return total


def _active(s: Proc, win: Window) -> Tuple[int, int]:
    ivs = [_clip(e, s.offset, win) for e in s.spans]
    ivs = [(a, b) for a, b in ivs if b > a]
    return (min(a for a, _ in ivs), max(b for _, b in ivs)) if ivs else (0, 0)


def server_stats(trace: Trace, duration_ns: Optional[int] = None, window: Window = None) -> List[ServerStats]:
    """Per server: loads and rates over its active interval within the window (or over
    duration_ns when given: the time of the measured calls only, `pario trace experiment`)."""
    out = []
    for s in trace.servers:
        spans = [e for e in s.spans if _clip(e, s.offset, window)[1] > _clip(e, s.offset, window)[0]]
        lo, hi = (0, duration_ns) if duration_ns is not None else _active(s, window)
        secs = (hi - lo) / 1e9
        net = [e for e in spans if e.get("cat") == "net"]
        sto = [e for e in spans if e.get("cat") == "storage"]
        data = [e for e in sto if STORAGE_DATA.search(e.get("name", ""))]
        nbytes = sum(_bytes_of(e) for e in data)
        cpu = [c["value"] for c in s.counters if c.get("name") == "cpu_pct"
               and (window is None or window[0] <= c["t"] + s.offset < window[1])]

        def load(es: List[dict]) -> float:
            busy = sum(b - a for a, b in (_clip(e, s.offset, window) for e in es))
            return busy / (hi - lo) if hi > lo else 0.0

        out.append(ServerStats(
            name=s.name, net_ops=len(net), net_load=load(net), net_rate=len(net) / secs if secs > 0 else 0.0,
            storage_ops=len(data), storage_load=load(sto), storage_rate=len(data) / secs if secs > 0 else 0.0,
            storage_kinds=", ".join(sorted({e.get("name", "?") for e in data})),
            bytes_per_op=nbytes / len(data) if data else 0.0, cpu_pct=sum(cpu) / len(cpu) if cpu else None,
            throughput=nbytes / 1e6 / secs if secs > 0 else 0.0, active=secs, meta_ops=len(sto) - len(data)))
    return out


def _is_read(name: str) -> bool:
    return "read" in name


def _job_bytes(p: Proc, win: Window) -> Tuple[int, int]:
    """Bytes (read, written) of nonblocking calls: their background jobs carry them."""
    rd = wr = 0
    for e in p.spans:
        op = str((e.get("args") or {}).get("op", ""))
        if (e.get("cat") == "async" and e.get("name") == "job" and op.startswith("MPI_File_i") and _in(e, p.offset, win)
                and (e.get("args") or {}).get("file") not in p.tool_files):
            if _is_read(op):
                rd += _bytes_of(e)
            else:
                wr += _bytes_of(e)
    return rd, wr


def _rank(p: Proc, win: Window) -> RankStats:
    def tool(e: dict) -> bool:
        return (e.get("args") or {}).get("file") in p.tool_files

    def api(e: dict) -> bool:
        return e.get("cat") == "api" and e.get("name", "").startswith("MPI_File_") and not tool(e)

    def request_wait(e: dict) -> bool:  # a wait or test that involved pario's requests
        return e.get("cat") == "api" and e.get("name") in REQUEST_CALLS and "job" in (e.get("args") or {})

    calls = [e for e in p.spans if api(e) and _in(e, p.offset, win)]
    data = [e for e in calls if DATA_CALL.match(e["name"])]
    tools = sum(1 for e in p.spans if e.get("cat") == "api" and tool(e) and _in(e, p.offset, win)
                and e.get("name", "").startswith("MPI_File_"))
    rd, wr = _job_bytes(p, win)
    rd += sum(_bytes_of(e) for e in data if _is_read(e["name"]))
    wr += sum(_bytes_of(e) for e in data if not _is_read(e["name"]))
    io = wait = coll = exch = fa = waiting = 0
    o = p.offset

    def clipped(ivs: List[Tuple[int, int]]) -> List[Tuple[int, int]]:  # on rank 0's clock, in the window
        return [(a + o, b + o) if win is None else (max(a + o, win[0]), min(b + o, win[1])) for a, b in ivs]

    for spans in by_thread(p).values():
        io += _union(clipped(outermost(spans, lambda e: api(e) or request_wait(e))))
        wait += _union(clipped(outermost(spans, request_wait)))
        ivs = clipped(outermost(spans, lambda e: (e.get("args") or {}).get("coll") == 1
                                and (e.get("cat") == "api" or (e.get("cat") == "async" and e.get("name") == "job"))))
        coll += _union(ivs)

        def within(pred) -> int:
            return sum(overlap(e["t"] + o, e["t"] + e["d"] + o, ivs) for e in spans if pred(e))
        exch += within(lambda e: e.get("cat") == "coll" and e.get("name") == "exchange")
        fa += within(lambda e: e.get("cat") == "driver")
        waiting += within(lambda e: e.get("name") in WAIT_SPANS)
    return RankStats(name=p.name, io_time=io / 1e9, calls=len(data), bytes_read=rd, bytes_written=wr,
                     coll_time=coll / 1e9, exchange=exch / 1e9, file_access=fa / 1e9, waiting=waiting / 1e9,
                     other=max(0, coll - exch - fa - waiting) / 1e9,
                     tool_calls=tools, open_close=sum(1 for e in calls if e["name"] in OPEN_CLOSE),
                     other_calls=sum(1 for e in calls if e["name"] not in OPEN_CLOSE and not DATA_CALL.match(e["name"])),
                     wait_time=wait / 1e9)


def rank_stats(trace: Trace, window: Window = None) -> List[RankStats]:
    return [_rank(p, window) for p in trace.clients]


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


def text_table(columns: List[str], rows: List[List[str]]) -> str:
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    line = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(columns)] + [line(r) for r in rows])


def window_of(trace: Trace, start: Optional[float], end: Optional[float]) -> Window:
    """--from/--to (seconds since the trace's first event) as a window on rank 0's clock."""
    if start is None and end is None:
        return None
    lo, hi = trace.bounds()
    a = lo + int((start or 0.0) * 1e9)
    b = hi + 1 if end is None else lo + int(end * 1e9)
    return (a, b)


def stats_text(trace: Trace, window: Window = None) -> str:
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
                  text_table(SERVER_COLUMNS, server_rows(server_stats(trace, window=window)))]
    else:
        parts += ["", "servers: none in this trace"]
    parts += ["", "ranks:", text_table(RANK_COLUMNS, rank_rows(rank_stats(trace, window)))]
    losses = [f"  {p.name}: " + ", ".join(x for x in (
        f"lost {p.dropped} events while tracing ({p.drop_reason or 'no reason given'})" if p.dropped else "",
        f"{p.bad_lines} unreadable line(s) skipped" if p.bad_lines else "",
        f"{p.filtered_calls} call(s) left out by the filter '{p.filter_spec}'" if p.filtered_calls else "") if x)
        for p in trace.procs if p.dropped or p.bad_lines or p.filtered_calls]
    if losses:
        parts += ["", "incomplete (the totals above miss these):"] + losses
    return "\n".join(parts)
