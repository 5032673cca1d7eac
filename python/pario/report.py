"""DIR/report.html: one section per suite (figures and a table), the native-vs-pario table.

The page is self-contained apart from the figures (PNG shown, SVG linked), which sit beside it
in DIR and are linked relatively, so the directory can be copied or served as it is. The
per-suite tables of every configuration are collapsed (<details>). DIR/summary.csv and
DIR/summary.json (summary.py) are written with it. Everything is rebuilt from
DIR/results.jsonl (plus runs.jsonl and meta.json when present).
"""

from __future__ import annotations

import datetime as _dt
import html
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from . import SUITES, __version__
from .figures import suite_figures
from .summary import SUMMARY_CSV, SUMMARY_JSON, write_summary
from .results import REPORT_FILE, Measurement, RunRecord, load_meta, load_results, load_runs
from .tables import (KEY_METRIC, LIMIT_METRIC, SHARE_METRIC, SUITE_TITLES, SUMMARY_HEADERS, SUMMARY_RIGHT, Comparison, Group, common_params,
                     compare, config_keys, fmt_num, fmt_param, fmt_ratio, group, headlines, label, summary_rows,
                     varying_params)

METRIC_COLUMNS: Dict[str, Sequence[Tuple[str, str]]] = {
    "overlap": (("ratio", "nonblocking/blocking"), ("reduce_s_time", "blocking s"),
                ("reduce_p_time", "nonblocking s"), ("quality", "quality"), ("ideal_ratio", "ideal ratio"),
                ("share", "share of ideal")),
    "cfs": (("mb_per_s", "MB/s"), ("seconds", "s")),
    "noncontig": (("mb_per_s", "MB/s"), ("seconds", "s"), ("device_mb_per_s", "device MB/s"),
                  ("share", "share of device")),
    "sharedfp": (("mb_per_s", "MB/s"), ("records_per_s", "records/s"), ("records", "records"),
                 ("limit_records_per_s", "limit records/s"), ("share", "share of limit")),
    "btio": (("compute_s", "compute s"), ("io_s", "I/O s"), ("total_s", "total s"), ("mb_per_s", "MB/s")),
}

CSS = """
body{font-family:sans-serif;margin:2em;max-width:1400px;color:#222}
h1{margin-bottom:.2em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0;font-size:90%}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f2f2} td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.bad td{background:#fde8e8} tr.unsupported td{background:#f4f4f4;color:#777}
.better{color:#1a7f37;font-weight:bold} .worse{color:#b42318;font-weight:bold}
figure{margin:1em 0} figure img{max-width:100%;border:1px solid #ddd}
details{margin:1em 0} summary{cursor:pointer;font-weight:bold}
ul.headline li{margin:.2em 0} .spread{color:#777;font-size:85%;white-space:nowrap}
figcaption{font-size:90%;color:#555;max-width:1000px}
.meta td:first-child{font-weight:bold} .note{color:#555;font-size:90%}
"""


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


_SCRATCH_PATH = re.compile(r"/\S*/scratch/[^/\s]+/")


def _short_error(text: Optional[str]) -> str:
    """An error message without the run's scratch directory (same in every row)."""
    return _SCRATCH_PATH.sub("", text or "")


def _table(headers: Sequence[str], rows: Sequence[Tuple[Sequence[str], str]], numeric: Sequence[int] = ()) -> str:
    """rows: (cells already escaped/HTML, row class)."""
    out = ["<table>", "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) + "</tr>"]
    for cells, cls in rows:
        tds = "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                      for i, c in enumerate(cells))
        out.append(f'<tr class="{cls}">{tds}</tr>' if cls else f"<tr>{tds}</tr>")
    out.append("</table>")
    return "\n".join(out)


def _verified(v: Optional[bool]) -> str:
    return {True: "yes", False: "NO", None: "-"}[v]


def _ratio_cell(ratio: Optional[float], higher_better: bool) -> str:
    if ratio is None:
        return "-"
    good = ratio > 1.05 if higher_better else ratio < 0.95
    bad = ratio < 0.95 if higher_better else ratio > 1.05
    cls = "better" if good else "worse" if bad else ""
    return f'<span class="{cls}">{fmt_ratio(ratio)}</span>' if cls else fmt_ratio(ratio)


def _versions(ms: Sequence[Measurement]) -> List[str]:
    seen: List[str] = []
    for m in ms:
        for v in (f"{m.mpi}: {m.mpi_version}" if m.mpi_version else None,
                  f"{m.impl} on {m.mpi}: {m.impl_version}" if m.impl_version else None):
            if v and v not in seen:
                seen.append(v)
    return seen


# -- sections ----------------------------------------------------------------------------
def _header(directory: str, ms: Sequence[Measurement], meta: dict, runs: Sequence[RunRecord]) -> str:
    rows = [("results", f"{len(ms)} measurements in results.jsonl"
             + (f", {len(runs)} runs in runs.jsonl" if runs else ""))]
    if meta.get("started"):
        rows.append(("sweep", f"{meta.get('started')} to {meta.get('finished', '?')}"
                     + (f" ({meta['elapsed']})" if meta.get("elapsed") else "")))
    if meta.get("command"):
        rows.append(("command", meta["command"]))
    if meta.get("host"):
        rows.append(("machine", f"{meta['host']}, {meta.get('cpus', '?')} cores, {meta.get('system', '')}"))
    cpus = meta.get("cpus")
    over = sorted({m.ranks for m in ms if isinstance(cpus, int) and m.ranks > cpus})
    if over:
        rows.append(("oversubscribed", f"runs with {', '.join(map(str, over))} ranks had more ranks than the "
                     f"{cpus} cores: their times include waiting for a core."))
    if meta.get("storage"):
        rows.append(("storage", meta["storage"]))
    if meta.get("launcher"):
        rows.append(("launcher", meta["launcher"]))
    rows.append(("versions", "; ".join(_versions(ms)) or "-"))
    rows.append(("storage regime", "cached: writes end in the page cache; synced: MPI_File_sync "
                 "after each write, inside the timing (overlap --regime synced, noncontig --sync); "
                 "direct: hint pario_direct_io=true, the page cache bypassed (pario only). "
                 "Measurements whose parameters name no regime ran cached."))
    body = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows)
    return f'<table class="meta">{body}</table>'


def _summary(comparisons: Sequence[Comparison]) -> str:
    rows = summary_rows(comparisons)
    if not rows:
        return "<p>No measurements.</p>"
    heads = "".join(f"<li>{_e(h.text())}</li>" for h in headlines(comparisons))
    return ('<p>Headline, per suite: pario/native of the key metric, geometric mean over the '
            "configurations of the storage regime named (for overlap direct I/O where measured: with "
            "the page cache a write is a memory copy that needs the CPU the computation wants, so no "
            "implementation can overlap there).</p>"
            f'<ul class="headline">{heads}</ul>'
            + _table(SUMMARY_HEADERS, [([_e(c) for c in r], "") for r in rows], numeric=SUMMARY_RIGHT)
            + f'<p class="note">The native-vs-pario table for machines: <a href="{SUMMARY_CSV}">{SUMMARY_CSV}</a>, '
              f'<a href="{SUMMARY_JSON}">{SUMMARY_JSON}</a>.</p>')


def _spread(v: Optional[float], lo: Optional[float], hi: Optional[float], fmt=fmt_num) -> str:
    """"median (min-max)", the spread left out when there is one value."""
    if v is None:
        return "-"
    if lo is None or hi is None or lo == hi:
        return fmt(v)
    return f'{fmt(v)} <span class="spread">({fmt(lo)}&ndash;{fmt(hi)})</span>'


def _share(g: Optional[Group]) -> str:
    if not g or g.share is None:
        return "-"
    return _spread(g.share, g.min(SHARE_METRIC), g.max(SHARE_METRIC), fmt_ratio)


def _limit(c: Comparison) -> str:
    """The machine's limit measured beside the figure: median (min-max) over every launch of the
    configuration, native and pario (each side's share is against its own launches' limit)."""
    if c.limit is None:
        return "-"
    return _spread(c.limit, c.limit_min, c.limit_max) + " " + _e(LIMIT_METRIC[c.suite][1])


def _side_by_side(comparisons: Sequence[Comparison]) -> str:
    if not comparisons:
        return "<p>No measurements.</p>"
    by_suite: Dict[str, List[Comparison]] = {}
    for c in comparisons:
        by_suite.setdefault(c.suite, []).append(c)
    rows = []
    with_limits = any(c.suite in LIMIT_METRIC for c in comparisons)
    for suite, cs in by_suite.items():
        metric, unit, higher = KEY_METRIC.get(suite, ("mb_per_s", "MB/s", True))
        keys = config_keys(suite, [g for c in cs for g in (c.native, c.pario) if g])
        for c in cs:
            any_g = c.native or c.pario
            cells = [_e(suite), _e(c.test), _e(label(any_g, keys)), _e(c.mpi), str(c.ranks), _e(c.regime),
                     _e(unit)]
            for impl, g in (("native", c.native), ("pario", c.pario)):
                st = c.status(impl)
                v = g.median(metric) if g else None
                cells.append(_spread(v, g.min(metric), g.max(metric)) if v is not None else _e(st))
            ratio = _ratio_cell(c.ratio, higher)
            if c.rounds > 1:
                ratio += f' <span class="spread">({fmt_ratio(c.ratio_min)}&ndash;{fmt_ratio(c.ratio_max)})</span>'
            cells.append(ratio)
            if with_limits:
                cells += [_limit(c), _share(c.native), _share(c.pario)]
            bad = any(c.status(i) == "failed" for i in ("native", "pario"))
            rows.append((cells, "bad" if bad else ""))
    headers = ["suite", "test", "configuration", "mpi", "ranks", "regime", "metric", "native", "pario",
               "pario/native"] + (["machine limit", "native share", "pario share"] if with_limits else [])
    note = ('<p class="note">Key metric per suite: bandwidth (MB/s, 1 MB = 10<sup>6</sup> B; '
            'pario/native above 1 means pario is faster) and, for overlap, the nonblocking/blocking '
            'time ratio (the ratio of ratios below 1 means pario overlaps better). Every figure is the '
            'median of the runs of its configuration, with (min&ndash;max); pario/native is the ratio '
            'of the medians, with (min&ndash;max) of the per-round ratios (round k: the native and the '
            'pario launch that `pario bench run --repeat` alternated). Green: pario better '
            'by more than 5%, red: worse by more than 5%. A cell naming a status instead of a number '
            'means no successful measurement.'
            + (' Machine limit: measured by pario-bench in the same launch &mdash; sharedfp write_shared '
               'and iwrite_shared: plain processes sharing one atomic counter, one pwrite per record '
               '(records/s); noncontig collective: the same bytes as contiguous pwrite/pread of large '
               'blocks (MB/s); overlap: the ideal ratio max(I/O, compute) / (I/O + compute) from the '
               'blocking phase. Share: the figure over the limit (overlap: ideal / measured ratio), '
               '1.00 = as fast as the machine allows.' if with_limits else '') + '</p>')
    numeric = (4, 7, 8, 9) + ((10, 11, 12) if with_limits else ())
    return note + _table(headers, rows, numeric=numeric)


def _group_table(suite: str, groups: Sequence[Group]) -> str:
    keys = config_keys(suite, groups)
    cols = METRIC_COLUMNS.get(suite) or tuple((k, k) for k in sorted({k for g in groups for m in g.items
                                                                      for k in m.metrics}))
    headers = ["test", "mpi", "impl", "ranks", "configuration", "regime"] + [c[1] for c in cols] + \
              ["runs", "status", "verified", "error"]
    rows = []
    for g in groups:
        cells = [_e(g.test), _e(g.mpi), _e(g.impl), str(g.ranks), _e(label(g, keys)), _e(g.regime)]
        cells += [_spread(g.median(m), g.min(m), g.max(m)) for m, _ in cols]
        cells += [str(len(g.items)), _e(g.status), _verified(g.verified), _e(_short_error(g.error))]
        cls = "bad" if g.status == "failed" or g.verified is False else \
              "unsupported" if g.status == "unsupported" else ""
        rows.append((cells, cls))
    n = len(cols)
    return (f"<details><summary>Measurements: {len(groups)} configurations (median over repeats, (min&ndash;max); "
            "click to show)</summary>\n"
            + _table(headers, rows, numeric=tuple(range(6, 6 + n + 1)) + (3,)) + "\n</details>")


def _overlap_ranking(groups: Sequence[Group]) -> str:
    """Büttner's Table 8.2: configurations ranked by their average ratio, plus his table fields."""
    gs = [g for g in groups if g.mean("ratio") is not None]
    if not gs:
        return ""
    keys = [k for k in varying_params(groups) if k != "test"]
    gs.sort(key=lambda g: g.mean("ratio"))
    rows = []
    for rank, g in enumerate(gs, 1):
        calc = _div(g.mean("p_avg_calc"), g.mean("s_avg_calc"))
        io = _div(g.mean("p_avg_io"), g.mean("s_avg_io"))
        rows.append(([str(rank), _e(g.mpi), _e(g.impl), str(g.ranks), _e(label(g, keys)),
                      fmt_num(g.mean("ratio"), 4), fmt_num(g.min("ratio"), 4), fmt_num(g.max("ratio"), 4),
                      fmt_num(g.mean("quality"), 3), fmt_num(calc, 4), fmt_num(io, 4)], ""))
    headers = ["#", "mpi", "impl", "ranks", "configuration", "average ratio", "best", "worst",
               "quality", "calc time ratio", "I/O time ratio"]
    return ("<h3>Ranking (as Büttner's Table 8.2)</h3>"
            '<p class="note">Average nonblocking/blocking ratio over the runs of each configuration, '
            "smaller is better; quality = average difference between I/O and computation time per "
            "iteration over the I/O time, nonblocking phase (Büttner judges only runs below 0.11); "
            "calc/I/O time ratio = nonblocking phase over blocking phase.</p>"
            + _table(headers, rows, numeric=tuple(range(5, 11)) + (0, 3)))


def _div(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def _suite_section(suite: str, groups: Sequence[Group], directory: str) -> Tuple[str, List[str]]:
    title = SUITE_TITLES.get(suite, suite)
    parts = [f'<h2 id="{_e(suite)}">{_e(suite)}: {_e(title)}</h2>']
    if not groups:
        parts.append("<p>No measurements for this suite.</p>")
        return "\n".join(parts), []
    common = common_params(groups)
    if common:
        parts.append('<p class="note">Common parameters: ' +
                     _e(", ".join(f"{k}={fmt_param(k, v)}" for k, v in common.items())) + "</p>")
    figs = suite_figures(suite, groups, directory)
    for name, caption in figs:
        svg = os.path.splitext(name)[0] + ".svg"
        vector = f' <a href="{_e(svg)}">SVG</a>' if os.path.exists(os.path.join(directory, svg)) else ""
        parts.append(f'<figure><img src="{_e(name)}" alt="{_e(suite)} figure {_e(name)}">'
                     f"<figcaption>{_e(caption)}{vector}</figcaption></figure>")
    if suite == "overlap":
        parts.append(_overlap_ranking(groups))
    parts.append(_group_table(suite, groups))
    return "\n".join(parts), [f for f, _ in figs]


def _verification_section(ms: Sequence[Measurement]) -> str:
    bad = [m for m in ms if m.verified is False]
    if not bad:
        return ""
    rows = [([_e(m.suite), _e(m.test), _e(m.mpi), _e(m.impl), str(m.ranks), _e(_short_error(m.error))], "bad")
            for m in bad]
    return ('<h3 id="verification">Data verification failures</h3>'
            '<p class="note">The bytes in the file (or read into memory) were wrong. For the native '
            "MPI-IO this is a finding about the MPI library; for pario, a bug.</p>"
            + _table(["suite", "test", "mpi", "impl", "ranks", "error"], rows, numeric=(4,)))


def _runs_section(runs: Sequence[RunRecord]) -> str:
    bad = [r for r in runs if r.status != "ok"]
    if not runs:
        return ""
    if not bad:
        return f"<p>All {len(runs)} runs completed.</p>"
    rows = []
    for r in bad:
        log = f'<a href="{_e(r.log)}">{_e(r.log)}</a>' if r.log else "-"
        rows.append(([str(r.index), _e(r.suite), _e(r.mpi), _e(r.impl), str(r.ranks), _e(r.status),
                      _e(r.message), log], "bad"))
    return (f"<p>{len(runs) - len(bad)} of {len(runs)} runs completed; these did not:</p>"
            + _table(["#", "suite", "mpi", "impl", "ranks", "status", "reason", "log"], rows))


def build_report(directory: str, measurements: Optional[List[Measurement]] = None,
                 problems: Optional[List[str]] = None) -> str:
    """Write DIR/report.html and its figures; return the report's path."""
    if measurements is None:
        measurements, problems = load_results(directory)
    problems = problems or []
    meta = load_meta(directory)
    runs = load_runs(directory)
    groups = group(measurements)
    comparisons = compare(groups)
    suites = list(SUITES) + sorted({g.suite for g in groups} - set(SUITES))
    sections, toc = [], []
    for suite in suites:
        sec, _ = _suite_section(suite, [g for g in groups if g.suite == suite], directory)
        sections.append(sec)
        toc.append(f'<li><a href="#{_e(suite)}">{_e(suite)}</a>: {_e(SUITE_TITLES.get(suite, ""))}</li>')
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>pario benchmark report</title>", f"<style>{CSS}</style></head><body>",
        "<h1>pario benchmark report</h1>",
        f'<p class="note">Native MPI-IO against pario. Generated {now} by pario {__version__}.</p>',
        _header(directory, measurements, meta, runs),
        "<h2 id=\"summary\">Summary</h2>", _summary(comparisons), _runs_section(runs),
        _verification_section(measurements),
        "<ul>" + "".join(toc) + '<li><a href="#side-by-side">native against pario</a></li></ul>',
        *sections,
        '<h2 id="side-by-side">Native MPI-IO against pario, side by side</h2>', _side_by_side(comparisons),
    ]
    if problems:
        page.append(f"<h2>Unreadable result lines</h2><details><summary>{len(problems)} line(s) skipped"
                    "</summary><ul>" + "".join(f"<li>{_e(p)}</li>" for p in problems[:50]) + "</ul></details>")
    page.append("</body></html>")
    write_summary(directory, comparisons)
    path = os.path.join(directory, REPORT_FILE)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(page) + "\n")
    return path
