"""Each thread's events of one process in start order, in bounded memory (the report's
timeline and the OTF2 export need them so; the files hold spans in end order).

An external merge sort: the events of a process come in (tracestream.events), are kept per
thread up to CHUNK of them in all, and past that every thread's share is sorted and written
to a run file of its own in a temporary directory; at the end each thread's runs and what is
left in memory are merged (heapq.merge, stable: equal keys keep the files' order, as an
in-memory sort would). A long span that ends after many short ones costs nothing special.
"""

from __future__ import annotations

import heapq
import os
import shutil
import tempfile
from operator import itemgetter
from typing import Callable, Dict, Iterator, List

try:
    from orjson import dumps, loads
except ImportError:  # the standard library's, slower
    import json

    def dumps(obj) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()
    loads = json.loads


def span_key(e: dict):
    """Parents before children: by start, then the longest first (tracefile.by_thread)."""
    return (e["t"], -e["d"])


def time_key(e: dict):
    return e["t"]


class ThreadSort:
    """Events added one by one under their thread id; `threads()` the ids, `sorted(tid)` an
    iterator over that thread's events in key order. Use as a context manager: the run files
    are removed at the end."""
    CHUNK = 1 << 16  # events in memory before a spill (as JSON bytes: some 300 bytes a span)

    def __init__(self, key: Callable = span_key) -> None:
        self.key = key
        self.buf: Dict[int, List[dict]] = {}
        self.runs: Dict[int, List[str]] = {}
        self.n = 0
        self.tmp = None

    def __enter__(self) -> "ThreadSort":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def add(self, tid: int, e: dict) -> None:
        b = self.buf.get(tid)
        if b is None:
            b = self.buf[tid] = []
        # as bytes, copied: orjson's own keep the 4 KB buffer they were made in
        b.append((self.key(e), bytes(memoryview(dumps(e)))))
        self.n += 1
        if self.n >= self.CHUNK:
            self._spill()

    def _spill(self) -> None:
        if self.tmp is None:
            self.tmp = tempfile.mkdtemp(prefix="pario-sort-")
        for tid, b in self.buf.items():
            if not b:
                continue
            b.sort(key=itemgetter(0))  # stable: equal keys in the order they came
            runs = self.runs.setdefault(tid, [])
            path = os.path.join(self.tmp, f"{tid}-{len(runs)}")
            with open(path, "wb") as fh:
                fh.write(b"\n".join(x[1] for x in b) + b"\n")
            runs.append(path)
            b.clear()
        self.n = 0

    def threads(self) -> List[int]:
        return sorted(set(self.runs) | {t for t, b in self.buf.items() if b})

    @staticmethod
    def _read(path: str) -> Iterator[dict]:
        with open(path, "rb") as fh:
            for line in fh:
                yield loads(line)

    def sorted(self, tid: int) -> Iterator[dict]:
        mem = (loads(x[1]) for x in sorted(self.buf.get(tid, ()), key=itemgetter(0)))
        runs = self.runs.get(tid, [])
        if not runs:
            return mem
        return heapq.merge(*[self._read(r) for r in runs], mem, key=self.key)
