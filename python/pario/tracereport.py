"""`pario trace report`: one self-contained HTML page (no network when viewed): an interactive
timeline (d3's zoom and scales, drawn on a canvas, static/report.js) and the tables
(tracetables, tracestats) rendered by Jinja2 templates (templates/).

The timeline's data is columnar (one array per field, names and files interned), so that a
page holds 10^6 spans in tens of MB. Rows: a row per client thread, then a row per server
thread (as PIOviz's Figure 2); a client's remote request spans, recorded on the rio receiver
thread, are on a row named "remote requests" in their rank's group.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Dict, List, Optional

from . import pages
from .tracefile import Proc, Trace, TraceError, _bytes_of, by_thread, nest
from .tracestats import (RANK_COLUMNS, SERVER_COLUMNS, Window, rank_rows, rank_stats, server_rows,
                         server_stats)
from .tracetables import all_tables

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


def _row_label(p: Proc, tid: int, spans: List[dict]) -> str:
    name = p.threads.get(tid, f"thread-{tid}")
    if p.kind == "client" and tid != 0 and spans and all(e.get("flow") for e in spans):
        return f"remote requests ({name})"
    return name


class _Intern:
    def __init__(self) -> None:
        self.items: List[str] = []
        self.index: Dict[str, int] = {}

    def __call__(self, s: str) -> int:
        if s not in self.index:
            self.index[s] = len(self.items)
            self.items.append(s)
        return self.index[s]


def timeline_data(trace: Trace, window: Window = None) -> dict:
    """Rows and spans for report.js. Times in ns from the trace's (or window's) start."""
    lo, hi = trace.bounds() if window is None else window
    names, cats, files, flows = _Intern(), _Intern(), _Intern(), _Intern()
    files("")
    flows("")
    cols = {k: [] for k in ("row", "depth", "t", "d", "name", "cat", "file", "bytes", "offset", "flow")}
    rows = []
    for p in trace.procs:
        threads = by_thread(p) or {0: []}
        for tid in sorted(threads):
            r = len(rows)
            depth = 0
            for e, dep, a, b in nest(threads[tid]):
                a, b = a + p.offset, b + p.offset
                if window is not None and (b < lo or a >= hi):
                    continue
                depth = max(depth, dep + 1)
                args = e.get("args") or {}
                cols["row"].append(r)
                cols["depth"].append(dep)
                cols["t"].append(a - lo)
                cols["d"].append(b - a)
                cols["name"].append(names(str(e.get("name", "?"))))
                cols["cat"].append(cats(str(e.get("cat", "?"))))
                cols["file"].append(files(p.files.get(args.get("file"), "")))
                cols["bytes"].append(_bytes_of(e))
                off = args.get("offset", args.get("pos"))
                cols["offset"].append(off if isinstance(off, int) else -1)
                flow = e.get("flow")
                cols["flow"].append(flows(str(flow)) if isinstance(flow, int) and flow else 0)
            rows.append({"proc": p.name, "kind": p.kind, "thread": _row_label(p, tid, threads[tid]),
                         "lanes": max(1, depth)})
    return {"rows": rows, "spans": cols, "names": names.items, "cats": cats.items, "files": files.items,
            "flows": flows.items, "duration": hi - lo}


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
    lo, hi = trace.bounds()
    with open(d3_path(), encoding="utf-8") as fh:
        d3 = fh.read()
    with open(os.path.join(HERE, "static", "report.js"), encoding="utf-8") as fh:
        js = fh.read()
    data = timeline_data(trace, window)
    tables = all_tables(trace, window)
    tables["servers"] = (SERVER_COLUMNS, server_rows(server_stats(trace, window=window)))
    tables["ranks"] = (RANK_COLUMNS, rank_rows(rank_stats(trace, window)))
    w = None if window is None else ((window[0] - lo) / 1e9, (window[1] - lo) / 1e9)
    try:
        return pages.render("report.html.j2", title=title, trace=trace, seconds=(hi - lo) / 1e9, window=w,
                            data=_script_json(data), tables=tables, nspans=len(data["spans"]["t"]),
                            d3=_script_code(d3), js=_script_code(js))
    except pages.PageError as e:
        raise TraceError(str(e)) from None


def write_report(trace: Trace, directory: str, out_path: Optional[str] = None, window: Window = None) -> str:
    out_path = out_path or os.path.join(directory, "report.html")
    text = report_html(trace, f"pario trace: {os.path.abspath(directory)}", window)
    with open(out_path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return out_path
