"""DIR/report.html: one section per suite (figures and a table), the native-vs-pario table.

The page is self-contained apart from the figures (PNG shown, SVG linked), which sit beside it
in DIR and are linked relatively, so the directory can be copied or served as it is. The
per-suite tables of every configuration are collapsed (<details>). DIR/summary.csv and
DIR/summary.json (summary.py) are written with it. Everything is rebuilt from
DIR/results.jsonl (plus runs.jsonl and meta.json when present).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from . import SUITES, __version__, pages
from .figures import suite_figures
from .pages import Table, cell, spread
from .summary import SUMMARY_CSV, SUMMARY_JSON, write_summary
from .results import REPORT_FILE, Measurement, RunRecord, load_meta, load_results, load_runs
from .headline import SUMMARY_HEADERS, SUMMARY_RIGHT, headlines, summary_rows
from .tables import (KEY_METRIC, LIMIT_METRIC, SHARE_METRIC, SUITE_TITLES, Comparison, Group, common_params, compare,
                     config_keys, fmt_num, fmt_param, fmt_ratio, group, label, varying_params)

METRIC_COLUMNS: Dict[str, Sequence[Tuple[str, str]]] = {
    "overlap": (("ratio", "nonblocking/blocking"), ("reduce_s_time", "blocking s"),
                ("reduce_p_time", "nonblocking s"), ("quality", "quality"), ("ideal_ratio", "ideal ratio"),
                ("share", "share of ideal")),
    "cfs": (("mb_per_s", "MB/s"), ("seconds", "s")),
    "noncontig": (("mb_per_s", "MB/s"), ("seconds", "s"), ("device_mb_per_s", "device MB/s"),
                  ("share", "share of device"), ("read_amplification", "file bytes read / requested"),
                  ("device_read_amplification", "storage bytes read / requested")),
    "sharedfp": (("mb_per_s", "MB/s"), ("records_per_s", "records/s"), ("records", "records"),
                 ("limit_records_per_s", "limit records/s"), ("share", "share of limit")),
    "btio": (("compute_s", "compute s"), ("io_s", "I/O s"), ("total_s", "total s"), ("mb_per_s", "MB/s")),
}

_SCRATCH_PATH = re.compile(r"/\S*/scratch/[^/\s]+/")


def _short_error(text: Optional[str]) -> str:
    """An error message without the run's scratch directory (same in every row)."""
    return _SCRATCH_PATH.sub("", text or "")


def _verified(v: Optional[bool]) -> str:
    return {True: "yes", False: "NO", None: "-"}[v]


def _ratio_cell(c: Comparison, higher_better: bool):
    ratio = c.ratio
    if ratio is None:
        return "-"
    good = ratio > 1.05 if higher_better else ratio < 0.95
    bad = ratio < 0.95 if higher_better else ratio > 1.05
    return cell(fmt_ratio(ratio), cls="better" if good else "worse" if bad else "",
                spread=(fmt_ratio(c.ratio_min), fmt_ratio(c.ratio_max)) if c.rounds > 1 else None)


def _versions(ms: Sequence[Measurement]) -> List[str]:
    seen: List[str] = []
    for m in ms:
        for v in (f"{m.mpi}: {m.mpi_version}" if m.mpi_version else None,
                  f"{m.impl} on {m.mpi}: {m.impl_version}" if m.impl_version else None):
            if v and v not in seen:
                seen.append(v)
    return seen


# -- sections: each a table (columns, rows[, row classes]) for templates/bench_report.html.j2 -----
def _header(ms: Sequence[Measurement], meta: dict, runs: Sequence[RunRecord]) -> Table:
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
    return [], rows


def _share(g: Optional[Group]):
    if not g or g.share is None:
        return "-"
    return spread(g.share, g.min(SHARE_METRIC), g.max(SHARE_METRIC), fmt_ratio)


def _limit(c: Comparison):
    """The machine's limit measured beside the figure: median (min-max) over every launch of the
    configuration, native and pario (each side's share is against its own launches' limit)."""
    if c.limit is None:
        return "-"
    return spread(c.limit, c.limit_min, c.limit_max, fmt_num, after=LIMIT_METRIC[c.suite][1])


def _side_by_side(comparisons: Sequence[Comparison]) -> Tuple[Table, bool]:
    with_limits = any(c.suite in LIMIT_METRIC for c in comparisons)
    by_suite: Dict[str, List[Comparison]] = {}
    for c in comparisons:
        by_suite.setdefault(c.suite, []).append(c)
    rows, classes = [], []
    for suite, cs in by_suite.items():
        metric, unit, higher = KEY_METRIC.get(suite, ("mb_per_s", "MB/s", True))
        keys = config_keys(suite, [g for c in cs for g in (c.native, c.pario) if g])
        for c in cs:
            any_g = c.native or c.pario
            cells = [suite, c.test, label(any_g, keys), c.mpi, c.ranks, c.regime, unit]
            for impl, g in (("native", c.native), ("pario", c.pario)):
                v = g.median(metric) if g else None
                cells.append(spread(v, g.min(metric), g.max(metric), fmt_num) if v is not None else c.status(impl))
            cells.append(_ratio_cell(c, higher))
            if with_limits:
                cells += [_limit(c), _share(c.native), _share(c.pario)]
            rows.append(cells)
            classes.append("bad" if any(c.status(i) == "failed" for i in ("native", "pario")) else "")
    headers = ["suite", "test", "configuration", "mpi", "ranks", "regime", "metric", "native", "pario",
               "pario/native"] + (["machine limit", "native share", "pario share"] if with_limits else [])
    return (headers, rows, classes), with_limits


def _group_table(suite: str, groups: Sequence[Group]) -> Table:
    keys = config_keys(suite, groups)
    cols = METRIC_COLUMNS.get(suite) or tuple((k, k) for k in sorted({k for g in groups for m in g.items
                                                                      for k in m.metrics}))
    headers = ["test", "mpi", "impl", "ranks", "configuration", "regime"] + [c[1] for c in cols] + \
              ["runs", "status", "verified", "error"]
    rows, classes = [], []
    for g in groups:
        cells = [g.test, g.mpi, g.impl, g.ranks, label(g, keys), g.regime]
        cells += [spread(g.median(m), g.min(m), g.max(m), fmt_num) for m, _ in cols]
        cells += [len(g.items), g.status, _verified(g.verified), _short_error(g.error)]
        rows.append(cells)
        classes.append("bad" if g.status == "failed" or g.verified is False else
                       "unsupported" if g.status == "unsupported" else "")
    return headers, rows, classes


def _overlap_ranking(groups: Sequence[Group]) -> Optional[Table]:
    """Büttner's Table 8.2: configurations ranked by their average ratio, plus his table fields."""
    gs = [g for g in groups if g.mean("ratio") is not None]
    if not gs:
        return None
    keys = [k for k in varying_params(groups) if k != "test"]
    gs.sort(key=lambda g: g.mean("ratio"))
    rows = []
    for rank, g in enumerate(gs, 1):
        calc = _div(g.mean("p_avg_calc"), g.mean("s_avg_calc"))
        io = _div(g.mean("p_avg_io"), g.mean("s_avg_io"))
        rows.append([rank, g.mpi, g.impl, g.ranks, label(g, keys),
                     fmt_num(g.mean("ratio"), 4), fmt_num(g.min("ratio"), 4), fmt_num(g.max("ratio"), 4),
                     fmt_num(g.mean("quality"), 3), fmt_num(calc, 4), fmt_num(io, 4)])
    return ["#", "mpi", "impl", "ranks", "configuration", "average ratio", "best", "worst",
            "quality", "calc time ratio", "I/O time ratio"], rows


def _div(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def _suite_section(suite: str, groups: Sequence[Group], directory: str) -> dict:
    sec = {"suite": suite, "title": SUITE_TITLES.get(suite, ""), "groups": None}
    if not groups:
        return sec
    common = common_params(groups)
    figures = []
    for name, caption in suite_figures(suite, groups, directory):
        svg = os.path.splitext(name)[0] + ".svg"
        figures.append({"png": name, "caption": caption,
                        "svg": svg if os.path.exists(os.path.join(directory, svg)) else ""})
    n = len(METRIC_COLUMNS.get(suite) or {k for g in groups for m in g.items for k in m.metrics})
    sec.update(common=", ".join(f"{k}={fmt_param(k, v)}" for k, v in common.items()), figures=figures,
               ranking=_overlap_ranking(groups) if suite == "overlap" else None,
               ranking_numeric=tuple(range(5, 11)) + (0, 3), groups=_group_table(suite, groups),
               groups_numeric=tuple(range(6, 6 + n + 1)) + (3,))
    return sec


def _verification(ms: Sequence[Measurement]) -> Table:
    bad = [m for m in ms if m.verified is False]
    rows = [[m.suite, m.test, m.mpi, m.impl, m.ranks, _short_error(m.error)] for m in bad]
    return ["suite", "test", "mpi", "impl", "ranks", "error"], rows, ["bad"] * len(rows)


def _runs_bad(runs: Sequence[RunRecord]) -> Table:
    rows = [[r.index, r.suite, r.mpi, r.impl, r.ranks, r.status, r.message, cell(r.log, href=r.log) if r.log else "-"]
            for r in runs if r.status != "ok"]
    return ["#", "suite", "mpi", "impl", "ranks", "status", "reason", "log"], rows, ["bad"] * len(rows)


def build_report(directory: str, measurements: Optional[List[Measurement]] = None,
                 problems: Optional[List[str]] = None) -> str:
    """Write DIR/report.html and its figures; return the report's path."""
    if measurements is None:
        measurements, problems = load_results(directory)
    meta = load_meta(directory)
    runs = load_runs(directory)
    groups = group(measurements)
    comparisons = compare(groups)
    suites = list(SUITES) + sorted({g.suite for g in groups} - set(SUITES))
    side, with_limits = _side_by_side(comparisons)
    write_summary(directory, comparisons)
    return pages.write(
        os.path.join(directory, REPORT_FILE), "bench_report.html.j2",
        now=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), version=__version__,
        header=_header(measurements, meta, runs), summary=(SUMMARY_HEADERS, summary_rows(comparisons)),
        summary_right=SUMMARY_RIGHT, headlines=[h.text() for h in headlines(comparisons)],
        summary_csv=SUMMARY_CSV, summary_json=SUMMARY_JSON, runs_total=len(runs), runs_bad=_runs_bad(runs),
        verification=_verification(measurements),
        sections=[_suite_section(s, [g for g in groups if g.suite == s], directory) for s in suites],
        side=side, side_numeric=(4, 7, 8, 9) + ((10, 11, 12) if with_limits else ()), with_limits=with_limits,
        problems=problems or [])
