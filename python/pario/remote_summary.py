"""The summary of `pario bench remote`: its records, their median, min and max per system and
configuration, the targets' ratios (verdicts) and the text table.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .textout import text_table

EXPERIMENTS = ("seq", "req4k", "vec32", "btio", "scale")
SUMMARY_FILE = "remote-summary.json"


@dataclass
class Record:
    experiment: str
    system: str
    metric: str
    value: float
    unit: str
    run: int
    params: Dict[str, object] = field(default_factory=dict)


# ---- summary -------------------------------------------------------------------------------------

def summarize(records: Sequence[Record]) -> List[dict]:
    """One row per (experiment, system, params): median, min, max and the number of runs."""
    groups: Dict[Tuple[str, str, str], List[Record]] = {}
    for r in records:
        key = (r.experiment, r.system, json.dumps(r.params, sort_keys=True))
        groups.setdefault(key, []).append(r)
    rows = []
    for (exp, system, params), rs in groups.items():
        vals = [r.value for r in rs]
        rows.append({"experiment": exp, "system": system, "params": json.loads(params), "metric": rs[0].metric,
                     "unit": rs[0].unit, "median": statistics.median(vals), "min": min(vals), "max": max(vals),
                     "runs": len(vals)})
    return rows


def _median_of(rows: Sequence[dict], exp: str, system: str) -> Optional[float]:
    for r in rows:
        if r["experiment"] == exp and r["system"] == system and not r["params"].get("clients"):
            return r["median"]
    return None


def verdicts(rows: Sequence[dict]) -> List[Tuple[str, Optional[float], str]]:
    """The issue's targets, each as (what, measured ratio, target)."""
    out: List[Tuple[str, Optional[float], str]] = []
    tcp, disk = _median_of(rows, "seq", "tcp-copy"), _median_of(rows, "seq", "local-write")
    for op in ("write", "read"):
        p = _median_of(rows, "seq", f"pario-{op}")
        out.append((f"sequential {op} / TCP copy", p / tcp if p and tcp else None, ">= 0.80 (moonshot 0.95)"))
        if op == "write":  # the limit: the slower of the link and the server's own local write
            lim = min(v for v in (tcp, disk) if v) if tcp or disk else None
            out.append(("sequential write / min(TCP copy, server's local write)", p / lim if p and lim else None,
                        "the machine's limit (1.0)"))
        x = _median_of(rows, "seq", f"xrootd-{op}")
        out.append((f"sequential {op}: pario / XRootD", p / x if p and x else None, "> 1"))
    one, piped = _median_of(rows, "req4k", "pario-one-at-a-time"), _median_of(rows, "req4k", "pario-pipelined")
    out.append(("4 KiB reads: pipelined / one at a time", piped / one if piped and one else None, ">= 10"))
    xp = _median_of(rows, "req4k", "xrootd-pipelined")
    out.append(("4 KiB pipelined: pario / XRootD", piped / xp if piped and xp else None, "> 1"))
    pv, xv = _median_of(rows, "vec32", "pario"), _median_of(rows, "vec32", "xrootd-vector-read")
    out.append(("32 B segments/s: pario / XRootD vector read", pv / xv if pv and xv else None, "> 1"))
    for variant in ("original", "optimised", "aggregated"):
        st, nb = _median_of(rows, "btio", f"stage-{variant}"), _median_of(rows, "btio", f"nonblocking-{variant}")
        # the seed's "improvement" (Table 1): staging time / remote nonblocking time - 1
        out.append((f"BTIO {variant}: remote nonblocking faster than staging by",
                    st / nb - 1 if st and nb else None, ">= 0.20 (aim 0.40; the seed's best 0.21)"))
    coll = {r["system"]: r["median"] for r in rows
            if r["experiment"] == "scale" and r["system"].startswith("server-writes-collective-")}
    d, f = coll.get("server-writes-collective-direct"), coll.get("server-writes-collective-forwarder")
    out.append(("collective writes, 4 clients: WRITE requests at the server, direct / via a forwarder",
                d / f if d and f else None, "> 1 (at most 4: one merged request per call)"))
    return out


def summary_text(rows: Sequence[dict], skipped: Dict[str, str]) -> str:
    body = []
    for r in sorted(rows, key=lambda r: (EXPERIMENTS.index(r["experiment"]), r["system"], json.dumps(r["params"], sort_keys=True))):
        params = ",".join(f"{k}={v}" for k, v in sorted(r["params"].items()) if k in ("clients", "servers", "depth"))
        body.append([r["experiment"], r["system"], params, f"{r['median']:.1f}", f"{r['min']:.1f}", f"{r['max']:.1f}",
                     r["unit"], r["runs"]])
    targets = [[what, "n/a" if ratio is None else f"{ratio:.2f}", target]
               for what, ratio, target in verdicts(rows)]
    return "\n".join([text_table(["experiment", "system", "params", "median", "min", "max", "unit", "runs"], body,
                                 right=(3, 4, 5, 7)), "",
                      text_table(["ratio", "measured", "target"], targets, right=(1,))]
                     + [f"{exp}: skipped: {why}" for exp, why in skipped.items()])
