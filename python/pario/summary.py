"""The native-vs-pario table for machines: DIR/summary.csv and DIR/summary.json.

summary.csv has one row per configuration (suite, test, configuration, MPI, rank count,
storage regime): the key metric of native and pario (median over the runs, with min and max),
pario/native (the ratio of the medians, with min and max of the per-round ratios), the status
of each side, and where pario-bench measured the machine's limit, the limit and each side's
share of it (medians); empty cells where there is no value. summary.json holds
the same rows (with the parameters as an object and null for no value) under
"configurations", plus "summary" (per suite, MPI and regime, as the text summary) and
"headline" (one entry per suite, as printed at the end of `pario bench run`).
Both are rewritten with report.html, by `pario bench run` and `pario bench report`.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

from . import __version__
from .headline import headlines, summary_records
from .tables import KEY_METRIC, SHARE_METRIC, Comparison, Group, config_keys, label

SUMMARY_CSV = "summary.csv"
SUMMARY_JSON = "summary.json"

CSV_COLUMNS = ("suite", "test", "configuration", "mpi", "ranks", "regime", "metric", "unit",
               "higher_is_better", "native", "pario", "pario_over_native", "native_status", "pario_status",
               "native_runs", "pario_runs", "native_min", "native_max", "pario_min", "pario_max", "params",
               "ratio_min", "ratio_max", "rounds", "limit_metric", "limit", "limit_min", "limit_max",
               "native_share", "native_share_min", "native_share_max",
               "pario_share", "pario_share_min", "pario_share_max")


def _side(g: Optional[Group], metric: str, impl: str, c: Comparison) -> Dict[str, object]:
    has_share = g is not None and g.share is not None
    return {impl: g.median(metric) if g else None,
            f"{impl}_status": c.status(impl),
            f"{impl}_runs": len(g.items) if g else 0,
            f"{impl}_min": g.min(metric) if g else None,
            f"{impl}_max": g.max(metric) if g else None,
            f"{impl}_share": g.share if has_share else None,
            f"{impl}_share_min": g.min(SHARE_METRIC) if has_share else None,
            f"{impl}_share_max": g.max(SHARE_METRIC) if has_share else None}


def _limit(c: Comparison) -> Dict[str, object]:
    """The machine's limit beside the figure: median and range over every launch of both sides."""
    has = c.limit is not None
    return {"limit_metric": c.limit_metric if has else None, "limit": c.limit,
            "limit_min": c.limit_min, "limit_max": c.limit_max}


def comparison_records(comparisons: Sequence[Comparison]) -> List[dict]:
    """One dict per configuration, keys CSV_COLUMNS (params as a dict)."""
    keys_of: Dict[str, List[str]] = {}
    for suite in {c.suite for c in comparisons}:
        keys_of[suite] = config_keys(suite, [g for c in comparisons if c.suite == suite
                                             for g in (c.native, c.pario) if g])
    out = []
    for c in comparisons:
        metric, unit, higher = KEY_METRIC.get(c.suite, ("mb_per_s", "MB/s", True))
        any_g = c.native or c.pario
        rec = {"suite": c.suite, "test": c.test, "configuration": label(any_g, keys_of[c.suite]) if any_g else "",
               "mpi": c.mpi, "ranks": c.ranks, "regime": c.regime, "metric": metric, "unit": unit,
               "higher_is_better": higher}
        rec.update(_side(c.native, metric, "native", c))
        rec.update(_side(c.pario, metric, "pario", c))
        rec["pario_over_native"] = c.ratio
        rec.update({"ratio_min": c.ratio_min, "ratio_max": c.ratio_max, "rounds": c.rounds})
        rec.update(_limit(c))
        rec["params"] = {k: v for k, v in c.params.items() if v is not None}
        out.append({k: rec[k] for k in CSV_COLUMNS})
    return out


def _csv_cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def summary_document(comparisons: Sequence[Comparison]) -> dict:
    return {
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "pario_version": __version__,
        "note": "pario_over_native: the key metric of pario over that of the native MPI-IO; "
                "MB/s (above 1: pario faster), for overlap the nonblocking/blocking time ratio "
                "(below 1: pario overlaps better). Values are medians over the runs of a configuration "
                "with min and max; pario_over_native is the ratio of the medians, ratio_min/ratio_max "
                "the range of the per-round ratios (rounds alternate native and pario launches); "
                "limit: the machine's limit pario-bench measured beside the figure, share: the figure "
                "over the limit (overlap: ideal ratio / measured ratio). Geometric means "
                "over configurations in summary and headline.",
        "headline": [h.to_dict() for h in headlines(comparisons)],
        "summary": summary_records(comparisons),
        "configurations": comparison_records(comparisons),
    }


def write_summary(directory: str, comparisons: Sequence[Comparison]) -> Tuple[str, str]:
    """Write DIR/summary.csv and DIR/summary.json; return their paths."""
    doc = summary_document(comparisons)
    csv_path = os.path.join(directory, SUMMARY_CSV)
    with open(csv_path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for rec in doc["configurations"]:
            w.writerow([_csv_cell(rec[k]) for k in CSV_COLUMNS])
    json_path = os.path.join(directory, SUMMARY_JSON)
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=False, allow_nan=False)
        f.write("\n")
    return csv_path, json_path
