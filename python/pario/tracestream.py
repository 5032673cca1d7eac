"""Reading a trace directory in two passes, in memory independent of its length.

Pass 1 (`scan`, tracefile.read_file with keep=False) reads every line once and keeps only the
notes: headers, files, clocks (a `clock` line may come last), the servers' offsets measured
by the clients, thread names, losses, each process's first and last instant and whether each
of its threads is in the writers' order. Pass 2 (`events`) reads each file again and yields
its events one by one; the consumers (tracestats' accumulators, tracechrome's writer) keep
bounded state per thread.

The writers' order: libpario and pario-server write a span when it ends, so within a thread
the spans come sorted by their end (a child before its parent; at equal ends, the later
start first). The consumers rely on it. A file whose threads are not in that order (a
hand-written trace, another writer) is read into memory and sorted instead: correct, at the
old cost for that file only.
"""

from __future__ import annotations

from typing import Iterator, List, Tuple

from .tracefile import _SPAN, Proc, Trace, TraceError, load, loads, parse, read_file, valid


def scan(directory: str, jobs: int = 1) -> Trace:
    """Pass 1: the processes of a trace directory with their notes, not their events (by
    `jobs` worker processes, a file each at a time, where jobs > 1)."""
    return load(directory, keep=False, jobs=jobs)


def post_order(spans: List[dict]) -> List[dict]:
    """Spans in the writers' order: by end, and at equal ends the later start first."""
    return sorted(spans, key=lambda e: (e["t"] + e["d"], -e["t"]))


def _from_memory(p: Proc) -> Iterator[Tuple[str, dict]]:
    for e in post_order(p.spans):
        yield "span", e
    for e in p.instants:
        yield "instant", e
    for e in p.counters:
        yield "counter", e


def _from_file(p: Proc) -> Iterator[Tuple[str, dict]]:
    """The events of a file in its order; the lines pass 1 counted as unusable are skipped
    (the same checks: tracefile.valid), a cut last line too. The hot path: one orjson.loads
    per line and, for a span as the C writers write it, two type checks."""
    with open(p.path, "rb") as fh:
        fh.readline()  # the header
        for line in fh:
            if not line.endswith(b"\n"):  # cut: the process ended while writing
                break
            try:
                obj = loads(line)
            except ValueError:
                try:
                    obj = parse(line)
                except ValueError:
                    continue
            try:
                if line.startswith(_SPAN):
                    t, d = obj["t"], obj["d"]
                    if t.__class__ is int and d.__class__ is int and d >= 0:
                        yield "span", obj
                        continue
                typ = valid(obj)
                if typ in ("span", "instant", "counter"):
                    yield typ, obj
            except (TraceError, KeyError):
                continue


def events(p: Proc) -> Iterator[Tuple[str, dict]]:
    """Pass 2: ("span" | "instant" | "counter", event) of one process; the spans of each
    thread in the writers' order (see the module's note)."""
    if p.kept:
        return _from_memory(p)
    if p.ordered:
        return _from_file(p)
    q = read_file(p.path, [], keep=True)  # out of order: this file in memory, sorted
    return _from_memory(q) if q is not None else iter(())
