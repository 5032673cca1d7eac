"""`pario trace report`: one self-contained HTML page (no network when viewed): an interactive
timeline (d3's zoom and scales, drawn on a canvas, static/report.js) and the tables
(tracetables, tracestats) rendered by Jinja2 templates (templates/).

The timeline's data is columnar (one array per field, names and files interned), so that a
page holds 10^6 spans in tens of MB. Rows: a row per client thread, then a row per server
thread (as PIOviz's Figure 2); a client's remote request spans, recorded on the rio receiver
thread, are on a row named "remote requests" in their rank's group.

The page is made in one more read of every file after tracestream's first pass (`build`):
each event goes to the tables (tracetables.Tables), the rank or server accumulator
(tracestats) and an on-disk sort of its process's spans (tracesort), from which the timeline
takes each thread in start order at the level of detail of `Timeline`: memory bounded by
BUDGET bars, whatever the trace's length.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Dict, List, Optional

from . import pages
from .tracefile import Proc, Trace, TraceError, _bytes_of, nest_iter
from .tracesort import ThreadSort
from .tracestats import RANK_COLUMNS, SERVER_COLUMNS, RankAcc, ServerAcc, Window, rank_rows, server_rows
from .tracestream import events
from .tracetables import Tables

D3_VERSION = "7.9.0"
D3_HINT = "make venv (it runs npm install d3@%s into build/js)" % D3_VERSION
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_JS = os.path.join(HERE, "..", "..", "build", "js")  # `make venv` in the source tree


def d3_path() -> str:
    """d3.min.js as `make venv` installs it: $PARIO_JS_DIR, else build/js beside the venv
    (sys.prefix is build/venv), else the source tree's build/js."""
    tail = os.path.join("node_modules", "d3", "dist", "d3.min.js")
    dirs = [os.environ.get("PARIO_JS_DIR", ""), os.path.join(os.path.dirname(sys.prefix), "js"),
            SOURCE_JS]
    for d in dirs:
        if d and os.path.isfile(os.path.join(d, tail)):
            return os.path.abspath(os.path.join(d, tail))
    raise TraceError(f"the report's JavaScript library d3 is not installed: run `{D3_HINT}`")


BUDGET = 10 ** 6  # bars on the page at most (about: see Timeline)
LANES = 2         # nesting depths per row assumed when the merge quantum is chosen


class _Intern:
    def __init__(self) -> None:
        self.items: List[str] = []
        self.index: Dict[str, int] = {}

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.items)
            self.items.append(s)
        return i


class Timeline:
    """The timeline's columns, built a process at a time from each thread's spans in start
    order (tracesort), at a level of detail decided before the first span: a trace of at most
    BUDGET spans is shown span by span; a longer one has a quantum q (from its length, its
    rows and BUDGET) and a span shorter than q (too small to see at full zoom-out) is merged
    with its neighbours at the same depth into one bar of at least q, or until a gap of q,
    with their count (column `n`; the page says how many were merged). A lane of a row then
    holds at most about 3 x duration / q bars, so the page about BUDGET."""

    def __init__(self, trace: Trace, window: Window = None, budget: Optional[int] = None) -> None:
        budget = BUDGET if budget is None else budget
        self.lo, self.hi = trace.bounds() if window is None else window
        self.window = window
        self.names, self.cats, self.files, self.flows = _Intern(), _Intern(), _Intern(), _Intern()
        self.files("")
        self.flows("")
        self.cols = {k: [] for k in ("row", "depth", "t", "d", "name", "cat", "file", "bytes", "offset", "flow")}
        self.rows: List[dict] = []
        nrows = sum(max(1, len(p.threads)) for p in trace.procs)
        total = sum(p.events if not p.kept else len(p.spans) for p in trace.procs)
        self.q = 0 if total <= budget else max(1, -(-(self.hi - self.lo) * nrows * LANES * 3 // budget))
        if self.q:
            self.cols["n"] = []
        self.spans = 0  # spans shown (merged ones included)

    def _emit(self, r, dep, a, b, e, p, n=1, nbytes=None) -> None:
        c = self.cols
        args = e.get("args") or {}
        c["row"].append(r)
        c["depth"].append(dep)
        c["t"].append(a - self.lo)
        c["d"].append(b - a)
        c["name"].append(self.names(str(e.get("name", "?"))))
        c["cat"].append(self.cats(str(e.get("cat", "?"))))
        c["file"].append(self.files(p.files.get(args.get("file"), "")))
        c["bytes"].append(_bytes_of(e) if nbytes is None else nbytes)
        off = args.get("offset", args.get("pos"))
        c["offset"].append(off if isinstance(off, int) and n == 1 else -1)
        flow = e.get("flow")
        c["flow"].append(self.flows(str(flow)) if isinstance(flow, int) and flow and n == 1 else 0)
        if self.q:
            c["n"].append(n)

    def proc(self, p: Proc, srt: ThreadSort) -> None:
        """One process's rows, from its spans sorted per thread."""
        lo, hi, q, win = self.lo, self.hi, self.q, self.window
        for tid in srt.threads() or [0]:
            r = len(self.rows)
            depth, all_flow, any_span = 0, True, False
            bars: Dict[int, list] = {}  # depth -> [start, end, count, bytes, first span, proc] being merged
            for e, dep, a, b in nest_iter(srt.sorted(tid)):
                any_span = True
                all_flow = all_flow and bool(e.get("flow"))
                a, b = a + p.offset, b + p.offset
                if win is not None and (b < lo or a >= hi):
                    continue
                depth = max(depth, dep + 1)
                self.spans += 1
                if not q:
                    self._emit(r, dep, a, b, e, p)
                    continue
                bar = bars.get(dep)
                if bar is not None and (b - a >= q or a - bar[1] >= q or bar[1] - bar[0] >= q):
                    self._emit(r, dep, bar[0], bar[1], bar[4], p, bar[2], bar[3])
                    bar = bars[dep] = None
                if b - a >= q:
                    self._emit(r, dep, a, b, e, p)
                elif bar is None:
                    bars[dep] = [a, b, 1, _bytes_of(e), e]
                else:
                    bar[1], bar[2], bar[3] = max(bar[1], b), bar[2] + 1, bar[3] + _bytes_of(e)
            for dep, bar in bars.items():
                if bar is not None:
                    self._emit(r, dep, bar[0], bar[1], bar[4], p, bar[2], bar[3])
            name = p.threads.get(tid, f"thread-{tid}")
            if p.kind == "client" and tid != 0 and any_span and all_flow:
                name = f"remote requests ({name})"
            self.rows.append({"proc": p.name, "kind": p.kind, "thread": name, "lanes": max(1, depth)})

    def data(self) -> dict:
        return {"rows": self.rows, "spans": self.cols, "names": self.names.items, "cats": self.cats.items,
                "files": self.files.items, "flows": self.flows.items, "duration": self.hi - self.lo,
                "quantum": self.q}


def build(trace: Trace, window: Window = None, budget: Optional[int] = None):
    """One read of every file: (Timeline, Tables, rank stats, server stats)."""
    tl, tabs = Timeline(trace, window, budget), Tables(trace, window)
    ranks, servers = [], []
    for p in trace.procs:
        with ThreadSort() as srt:
            if p.kind == "client":
                acc = RankAcc(p.name, p.offset, window, p.tool_files)
                ranks.append(acc)
            else:
                acc = ServerAcc(p.name, p.offset, window)
                servers.append(acc)
            for typ, e in events(p):
                if typ == "span":
                    srt.add(e.get("tid", 0), e)
                    acc.span(e)
                    if p.kind == "client":
                        tabs.span(p, e)
                elif typ == "counter" and p.kind == "server":
                    acc.counter(e)
            tabs.end_proc()
            tl.proc(p, srt)
    return tl, tabs, [a.result() for a in ranks], [a.result() for a in servers]


def timeline_data(trace: Trace, window: Window = None, budget: Optional[int] = None) -> dict:
    """Rows and spans for report.js. Times in ns from the trace's (or window's) start."""
    tl = Timeline(trace, window, budget)
    for p in trace.procs:
        with ThreadSort() as srt:
            for typ, e in events(p):
                if typ == "span":
                    srt.add(e.get("tid", 0), e)
            tl.proc(p, srt)
    return tl.data()


def _script_json(obj) -> "markupsafe.Markup":
    """JSON that is safe inside a <script> element (no <, >, & to close it or start a comment),
    compact: a page of 10^6 spans is tens of MB."""
    import markupsafe
    text = json.dumps(obj, separators=(",", ":"))
    return markupsafe.Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _script_code(text: str) -> "markupsafe.Markup":
    """JavaScript to inline in a <script> element: a "</script" in it (only in strings, in
    d3) would end the element."""
    import markupsafe
    return markupsafe.Markup(text.replace("</script", "<\\/script"))


def report_html(trace: Trace, title: str, window: Window = None) -> str:
    """The page. The trace may hold its events (tracefile.load) or only its notes
    (tracestream.scan): then every file is read once more, one event at a time."""
    lo, hi = trace.bounds()
    with open(d3_path(), encoding="utf-8") as fh:
        d3 = fh.read()
    with open(os.path.join(HERE, "static", "report.js"), encoding="utf-8") as fh:
        js = fh.read()
    tl, tabs, ranks, servers = build(trace, window)
    data = tl.data()
    tables = tabs.result()
    tables["servers"] = (SERVER_COLUMNS, server_rows(servers))
    tables["ranks"] = (RANK_COLUMNS, rank_rows(ranks))
    w = None if window is None else ((window[0] - lo) / 1e9, (window[1] - lo) / 1e9)
    nbars = len(data["spans"]["t"])
    try:
        return pages.render("report.html.j2", title=title, trace=trace, seconds=(hi - lo) / 1e9, window=w,
                            data=_script_json(data), tables=tables, nspans=tl.spans, nbars=nbars,
                            quantum=tl.q / 1e3, coll_left=tabs.left_out(), d3=_script_code(d3), js=_script_code(js))
    except pages.PageError as e:
        raise TraceError(str(e)) from None


def write_report(trace: Trace, directory: str, out_path: Optional[str] = None, window: Window = None) -> str:
    out_path = out_path or os.path.join(directory, "report.html")
    text = report_html(trace, f"pario trace: {os.path.abspath(directory)}", window)
    with open(out_path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return out_path
