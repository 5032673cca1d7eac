"""Reading a pario trace directory (docs/trace-format.md): one JSON Lines file per process,
`client-<rank>-<pid>.jsonl` from libpario and `server-<port>-<pid>.jsonl` from pario-server.

A trace is read as far as it is usable: a file that is empty or has no valid header is left out,
a line that is not a complete JSON object is skipped, and each loss becomes one warning that
names the process and says why (a full file system, a process that ended while writing, the
writer's own `dropped` marker). Only a directory with no usable file at all is an error.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re

try:
    from orjson import loads  # pinned in python/pyproject.toml; about 3x the standard library's speed
except ImportError:  # a Python without the venv (ctest's check scripts use Debian's python3)
    from json import loads
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from .schema import parts, problem

_SPAN = b'{"type":"span"'
VERSION = 1


class TraceError(Exception):
    """A trace directory or file that cannot be used: one line, exit status 2."""


@dataclass
class Proc:
    """One process's file: its header, its threads and its events (times in its own clock)."""
    path: str
    kind: str
    name: str
    pid: int
    rank: int = -1
    host: str = ""
    offset: int = 0
    err: int = -1
    offset_given: bool = False
    threads: Dict[int, str] = field(default_factory=dict)
    files: Dict[int, str] = field(default_factory=dict)
    tool_files: set = field(default_factory=set)  # ids of files a tool above pario wrote (Darshan's log)
    spans: List[dict] = field(default_factory=list)
    instants: List[dict] = field(default_factory=list)
    counters: List[dict] = field(default_factory=list)
    server_clocks: List[dict] = field(default_factory=list)
    dropped: int = 0          # events the writer could not write (its `dropped` markers)
    drop_reason: str = ""
    bad_lines: int = 0        # lines skipped here: not JSON, or not a valid event
    filter_spec: str = ""     # the record-time filter (PARIO_TRACE_FILTER), "" when none
    filtered_calls: int = 0   # calls it left out
    events: int = 0           # spans, instants and counters read
    lo: Optional[int] = None  # first and last instant of its events, on its own clock
    hi: Optional[int] = None
    ordered: bool = True      # every thread's spans in the writers' order (at their end)
    kept: bool = True         # its events are in spans/instants/counters (False: read_file(keep=False))
    last_end: Dict[int, Tuple[int, int]] = field(default_factory=dict, repr=False)

    @property
    def sort_key(self) -> Tuple[int, int, str]:
        return (0 if self.kind == "client" else 1, self.rank, self.name)


@dataclass
class Trace:
    procs: List[Proc]
    warnings: List[str] = field(default_factory=list)

    @property
    def clients(self) -> List[Proc]:
        return [p for p in self.procs if p.kind == "client"]

    @property
    def servers(self) -> List[Proc]:
        return [p for p in self.procs if p.kind == "server"]

    def bounds(self) -> Tuple[int, int]:
        """First and last instant of the whole trace on rank 0's clock (ns)."""
        lo, hi = None, None
        for p in self.procs:
            if not p.kept and p.lo is not None:  # a first pass's: its bounds, not its events
                a, b = p.lo + p.offset, p.hi + p.offset
                lo = a if lo is None or a < lo else lo
                hi = b if hi is None or b > hi else hi
                continue
            for e in p.spans:
                a, b = e["t"] + p.offset, e["t"] + e["d"] + p.offset
                lo = a if lo is None or a < lo else lo
                hi = b if hi is None or b > hi else hi
            for e in p.instants + p.counters:
                a = e["t"] + p.offset
                lo = a if lo is None or a < lo else lo
                hi = a if hi is None or a > hi else hi
        return (lo or 0, hi or 0)


_NAME = re.compile(r"^(client|server)-[^/]+\.jsonl$")


def _header(obj: dict, path: str) -> Proc:
    bad = problem("trace-header", obj)
    if bad:
        raise TraceError(f"{path}:1: not a pario trace (the first line must be a pario-trace header, "
                         f"version {VERSION}): {bad}")
    kind = obj["kind"]
    p = Proc(path=path, kind=kind, name=str(obj.get("name") or os.path.basename(path)),
             pid=obj["pid"], host=str(obj.get("host") or ""))
    p.rank = obj["rank"] if kind == "client" else -1
    p.offset = obj.get("clock_offset_ns") or 0
    p.err = obj.get("clock_err_ns", -1) if obj.get("clock_err_ns") is not None else -1
    p.offset_given = "clock_offset_ns" in obj and (p.err >= 0 or p.offset != 0)
    return p


_EVENT_TYPES = parts("trace-event")


def valid(obj) -> str:
    """The line's type after checking it against schemas/trace-event.schema.json (what the
    readers rely on); otherwise TraceError with the reason (the caller adds where)."""
    typ = obj.get("type") if isinstance(obj, dict) else None
    bad = problem("trace-event", obj, typ if typ in _EVENT_TYPES else "other")
    if bad:
        raise TraceError(bad)
    return typ


def _event(p: Proc, obj: dict, typ: str, keep: bool) -> None:
    if typ in ("span", "instant", "counter"):
        tid = obj.get("tid", 0)
        tid = tid if isinstance(tid, int) else 0
        if tid not in p.threads:
            p.threads[tid] = str(obj.get("thread", f"thread {tid}"))
        t = obj["t"]
        b = t + obj["d"] if typ == "span" else t
        if p.lo is None or t < p.lo:
            p.lo = t
        if p.hi is None or b > p.hi:
            p.hi = b
        if typ == "span":
            key = (b, -t)  # a thread's spans at their end: children before parents
            if key < p.last_end.get(tid, key):
                p.ordered = False
            p.last_end[tid] = key
        p.events += 1
        if keep:
            (p.spans if typ == "span" else p.instants if typ == "instant" else p.counters).append(obj)
    elif typ == "file":
        p.files[obj.get("id")] = str(obj.get("name", ""))
        if obj.get("tool"):
            p.tool_files.add(obj.get("id"))
    elif typ == "clock":
        p.offset = int(obj.get("clock_offset_ns", p.offset))
        p.err = int(obj.get("clock_err_ns", p.err))
        p.offset_given = True
    elif typ == "server_clock":
        p.server_clocks.append(obj)
    elif typ == "filter":
        p.filter_spec = str(obj.get("spec", ""))
        p.filtered_calls += obj["calls"]
    elif typ == "dropped":
        p.dropped += obj["events"]
        p.drop_reason = p.drop_reason or str(obj.get("reason", ""))
    # other types: a newer writer's additions, ignored


def parse(line: bytes):
    """One line as a JSON value (ValueError when it is not JSON): orjson where installed
    (`make venv` does), else the standard library; bytes that are not UTF-8 are replaced,
    as a text reader would."""
    try:
        return loads(line)
    except ValueError:
        return json.loads(line.decode("utf-8", errors="replace"))


def lines(path: str):
    """(line number, bytes) of every complete line after the header; a cut last line (no
    newline) is left out. Opens the file: OSError when it cannot."""
    with open(path, "rb") as fh:
        for i, line in enumerate(fh, start=1):
            if line.endswith(b"\n"):
                yield i, line
            else:
                yield i, None


def read_file(path: str, warnings: List[str], keep: bool = True) -> Optional[Proc]:
    """The process in one trace file, or None (with a warning) when the file has nothing
    usable: empty, unreadable, or without a valid header. keep=False reads the notes (files,
    clocks, threads, losses) and each thread's order, and counts the events without keeping
    them: the first pass of the streaming readers (python/pario/tracestream.py)."""
    p, first_bad = None, ""
    try:
        for i, line in lines(path):
            if line is None:  # the process died while writing: its last line is cut
                warnings.append(f"{path}: last line incomplete (the process ended while writing), skipped")
                break
            if p is None:
                try:
                    p = _header(parse(line), path)
                    threads, last_end = p.threads, p.last_end
                except ValueError as e:
                    warnings.append(f"{path}:1: not JSON ({getattr(e, 'msg', e)}), file left out")
                    return None
                except TraceError as e:
                    warnings.append(f"{e}, file left out")
                    return None
                continue
            if line.startswith(_SPAN):  # the hot path: a span as the C writers write it
                try:
                    obj = loads(line)
                    t, d, tid = obj["t"], obj["d"], obj.get("tid", 0)
                except (ValueError, KeyError):
                    t = d = tid = None
                if t.__class__ is int and d.__class__ is int and d >= 0 and tid.__class__ is int:
                    if tid not in threads:
                        threads[tid] = str(obj.get("thread", f"thread {tid}"))
                    b = t + d
                    if p.lo is None or t < p.lo:
                        p.lo = t
                    if p.hi is None or b > p.hi:
                        p.hi = b
                    key = (b, -t)  # a thread's spans at their end: children before parents
                    if key < last_end.get(tid, key):
                        p.ordered = False
                    last_end[tid] = key
                    p.events += 1
                    if keep:
                        p.spans.append(obj)
                    continue
            if not line.strip():
                continue
            try:
                obj = parse(line)
                _event(p, obj, valid(obj), keep)
            except (ValueError, TraceError) as e:
                p.bad_lines += 1
                first_bad = first_bad or (f"{path}:{i}: not JSON ({getattr(e, 'msg', e)})"
                                          if isinstance(e, ValueError) else f"{path}:{i}: {e}")
    except OSError as e:
        warnings.append(f"{path}: cannot read ({e.strerror}), left out")
        return None
    if p is None:
        warnings.append(f"{path}: empty (the process wrote nothing: its stderr says why, e.g. a full "
                        "file system or an unwritable directory), left out")
        return None
    if p.bad_lines:
        warnings.append(f"{p.name}: {p.bad_lines} line(s) skipped, the first: {first_bad}")
    if p.dropped:
        warnings.append(f"{p.name}: lost {p.dropped} event(s) while tracing ({p.drop_reason or 'no reason given'})")
    if p.filtered_calls:
        warnings.append(f"{p.name}: traced with the filter '{p.filter_spec}': {p.filtered_calls} call(s) not recorded")
    p.kept = keep
    return p


def _align_servers(trace: Trace) -> None:
    """Servers whose header has no offset take the one a client measured through the
    protocol's ping (server time + offset = that client's time), plus the client's own."""
    measured: Dict[str, Tuple[int, int]] = {}
    for c in trace.clients:
        for sc in c.server_clocks:
            off = int(sc.get("offset_ns", 0)) + c.offset
            err = int(sc.get("err_ns", -1))
            name = str(sc.get("name", ""))
            best = measured.get(name)
            if best is None or (0 <= err < best[1]) or best[1] < 0:
                measured[name] = (off, err if err < 0 or c.err < 0 else err + c.err)
    for s in trace.servers:
        if not s.offset_given and s.name in measured:
            s.offset, s.err = measured[s.name]
            s.offset_given = True


def _read_notes(path: str) -> Tuple[Optional[Proc], List[str]]:
    warnings: List[str] = []
    return read_file(path, warnings, keep=False), warnings


def jobs_default() -> int:
    """Worker processes by default: the CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@contextlib.contextmanager
def workers(n: int):
    """A pool of n forked worker processes (they inherit what the caller set up); when the
    caller stops (Ctrl-C, SIGTERM, an error) the workers are killed and the pending work
    dropped, instead of waiting for it."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"))
    try:
        yield pool
    except BaseException:
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def _read_all(paths: List[str], keep: bool, jobs: int, warnings: List[str]) -> List[Optional[Proc]]:
    """read_file of every path, in order; keep=False with jobs > 1: by that many worker
    processes (what they return is small: the notes, not the events)."""
    if keep or jobs < 2 or len(paths) < 2:
        return [read_file(path, warnings, keep) for path in paths]
    big_first = sorted(paths, key=lambda x: -os.path.getsize(x))  # so that a big file does not come last
    with workers(min(jobs, len(paths))) as pool:
        got = dict(zip(big_first, pool.map(_read_notes, big_first)))
    out = []
    for path in paths:
        p, w = got[path]
        warnings.extend(w)
        out.append(p)
    return out


def load(directory: str, keep: bool = True, jobs: int = 1) -> Trace:
    """Every usable file of a trace directory; TraceError only when none is. keep=False:
    the processes without their events (read_file's first pass), for the streaming readers,
    read by `jobs` worker processes where jobs > 1."""
    if not os.path.isdir(directory):
        raise TraceError(f"{directory}: no such trace directory")
    paths = sorted(p for p in glob.glob(os.path.join(directory, "*.jsonl")) if _NAME.match(os.path.basename(p)))
    if not paths:
        raise TraceError(f"{directory}: no trace files (client-*.jsonl, server-*.jsonl); was the program run "
                         "with PARIO_TRACE set and libpario preloaded?")
    warnings: List[str] = []
    procs = [p for p in _read_all(paths, keep, jobs, warnings) if p is not None]
    if not procs:
        raise TraceError(f"{directory}: no usable trace file ({len(paths)} found): " + "; ".join(warnings))
    procs.sort(key=lambda p: p.sort_key)
    trace = Trace(procs, warnings)
    _align_servers(trace)
    return trace


# ---- nesting -------------------------------------------------------------------------------

def by_thread(p: Proc) -> Dict[int, List[dict]]:
    """Spans of each thread, sorted by start and, at equal starts, longest first (parents
    before children)."""
    out: Dict[int, List[dict]] = {}
    for e in p.spans:
        out.setdefault(e.get("tid", 0), []).append(e)
    for v in out.values():
        v.sort(key=lambda e: (e["t"], -e["d"]))
    return out


def nest(spans: List[dict]) -> List[Tuple[dict, int, int, int]]:
    """(span, depth, start, end) in enter order, each span clamped into its parent so that
    the result is properly nested (a span that outlives its parent, which only happens
    through clock granularity, is cut at the parent's end)."""
    return list(nest_iter(spans))


def nest_iter(spans: Iterable[dict]) -> Iterator[Tuple[dict, int, int, int]]:
    """nest, one span at a time, of spans in start order (parents first): the memory of the
    deepest nesting only."""
    stack: List[int] = []  # end times
    for e in spans:
        a, b = e["t"], e["t"] + e["d"]
        while stack and stack[-1] <= a:
            stack.pop()
        if stack and b > stack[-1]:
            b = stack[-1]
        yield e, len(stack), a, b
        stack.append(b)


def outermost(spans: List[dict], pred) -> List[Tuple[int, int]]:
    """Intervals of the spans matching pred that no other matching span contains."""
    out: List[Tuple[int, int]] = []
    for e in sorted((e for e in spans if pred(e)), key=lambda e: (e["t"], -e["d"])):
        a, b = e["t"], e["t"] + e["d"]
        if out and a < out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
            continue
        out.append((a, b))
    return out


def overlap(a: int, b: int, ivs: List[Tuple[int, int]]) -> int:
    return sum(max(0, min(b, y) - max(a, x)) for x, y in ivs)


# ---- what a span moved ---------------------------------------------------------------------

def _bytes_of(e: dict) -> int:
    a = e.get("args") or {}
    for k in ("done", "bytes", "len"):
        if isinstance(a.get(k), int) and a[k] >= 0:
            return a[k]
    return 0
