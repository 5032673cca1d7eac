"""The per-suite summary and the headline of a native-vs-pario comparison (tables.compare):
per suite, MPI and storage regime how many configurations ran and failed and pario/native of
the key metric (geometric mean, min, max), as records (summary.py writes them), text cells and
the text the CLI prints; the headline picks one regime per suite.
"""

from __future__ import annotations

import math
import statistics
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from . import IMPLS, MPIS, SUITES
from .tables import KEY_METRIC, Comparison, fmt_num, fmt_ratio, index_of
from .textout import text_table


def geomean(values: Iterable[float]) -> Optional[float]:
    """Geometric mean of the positive, finite values; None when there is none."""
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return statistics.geometric_mean(vals) if vals else None


def _suite_order(suite: str) -> int:
    return SUITES.index(suite) if suite in SUITES else len(SUITES)


def _mpi_order(mpi: str) -> int:
    return MPIS.index(mpi) if mpi in MPIS else len(MPIS)


REGIME_ORDER = ("cached", "synced", "direct", "cold")


def summary_records(comparisons: Sequence[Comparison]) -> List[dict]:
    """Per suite, MPI and storage regime: how many configurations ran, how many failed, and
    pario/native of the key metric (geometric mean, min, max over configurations)."""
    buckets: "OrderedDict[tuple, List[Comparison]]" = OrderedDict()
    for c in sorted(comparisons, key=lambda c: (_suite_order(c.suite), _mpi_order(c.mpi),
                                                  index_of(REGIME_ORDER, c.regime), c.regime)):
        buckets.setdefault((c.suite, c.mpi, c.regime), []).append(c)
    # implementations of this sweep: one with no result at all in a suite is a failure there
    present = [i for i in IMPLS if any(c.status(i) != "missing" for c in comparisons)]
    out = []
    for (suite, mpi, regime), cs in buckets.items():
        ratios = [c.ratio for c in cs if c.ratio is not None]
        metric, unit, higher = KEY_METRIC.get(suite, ("mb_per_s", "MB/s", True))
        out.append({
            "suite": suite, "mpi": mpi, "regime": regime, "configurations": len(cs),
            "native_ok": sum(1 for c in cs if c.status("native") == "ok"),
            "pario_ok": sum(1 for c in cs if c.status("pario") == "ok"),
            "failed_or_missing": sum(1 for c in cs for impl in present if c.status(impl) in ("failed", "missing")),
            "unsupported": sum(1 for c in cs for impl in IMPLS if c.status(impl) == "unsupported"),
            "metric": metric, "unit": unit, "higher_is_better": higher,
            "pario_over_native": geomean(ratios),
            "min": min(ratios) if ratios else None, "max": max(ratios) if ratios else None,
        })
    return out


def summary_rows(comparisons: Sequence[Comparison]) -> List[List[str]]:
    """summary_records as text cells (SUMMARY_HEADERS)."""
    return [[r["suite"], r["mpi"], r["regime"], str(r["configurations"]), str(r["native_ok"]),
             str(r["pario_ok"]), str(r["failed_or_missing"]), str(r["unsupported"]),
             r["unit"] if r["higher_is_better"] else f"{r['metric']} (lower is better)",
             fmt_ratio(r["pario_over_native"]), fmt_ratio(r["min"]), fmt_ratio(r["max"])]
            for r in summary_records(comparisons)]


SUMMARY_HEADERS = ["suite", "mpi", "regime", "configs", "native ok", "pario ok", "failed/missing", "unsupported",
                   "metric", "pario/native", "min", "max"]
SUMMARY_RIGHT = (3, 4, 5, 6, 7, 9, 10, 11)

# The storage regime a suite's headline is about, in order of preference (the first one with a
# pario/native ratio). Overlap: direct I/O, where the data moves by DMA and a nonblocking write
# can overlap the computation; with the page cache a write is a memory copy that needs the CPU.
HEADLINE_REGIMES: Dict[str, Tuple[str, ...]] = {"overlap": ("direct", "synced", "cached")}
DEFAULT_HEADLINE_REGIMES = ("cached", "synced", "direct", "cold")


@dataclass
class Headline:
    suite: str
    regime: str
    ratio: Optional[float]          # geometric mean of pario/native over configurations
    per_mpi: Dict[str, float]
    configs: int
    native: Optional[float]         # geometric means of the key metric itself
    pario: Optional[float]
    other_regimes: List[str] = field(default_factory=list)
    native_share: Optional[float] = None   # geometric means of each side's share of the limit
    pario_share: Optional[float] = None

    @property
    def metric(self) -> str:
        return KEY_METRIC.get(self.suite, ("mb_per_s", "MB/s", True))[0]

    @property
    def unit(self) -> str:
        return KEY_METRIC.get(self.suite, ("mb_per_s", "MB/s", True))[1]

    @property
    def higher_is_better(self) -> bool:
        return KEY_METRIC.get(self.suite, ("mb_per_s", "MB/s", True))[2]

    @property
    def verdict(self) -> str:
        r = self.ratio
        if r is None:
            return "no pario/native pair measured"
        if self.suite == "overlap":
            return ("pario overlaps better" if r < 0.95 else "pario overlaps worse" if r > 1.05
                    else "no difference in overlap")
        if self.higher_is_better:
            return "pario faster" if r > 1.05 else "pario slower" if r < 0.95 else "about equal"
        return "pario better" if r < 0.95 else "pario worse" if r > 1.05 else "about equal"

    def text(self) -> str:
        if self.ratio is None:
            return f"{self.suite}, {self.regime} regime: {self.verdict}"
        out = f"{self.suite}, {self.regime} regime: pario/native {fmt_ratio(self.ratio)}, {self.verdict}"
        details = []
        if self.native is not None and self.pario is not None:
            if self.unit == "MB/s":
                details.append(f"{fmt_num(self.pario)} MB/s pario, {fmt_num(self.native)} MB/s native")
            else:
                details.append(f"{self.unit} {fmt_num(self.pario)} pario, {fmt_num(self.native)} native")
        if len(self.per_mpi) > 1:
            details.append(", ".join(f"{m} {fmt_ratio(v)}" for m, v in self.per_mpi.items()))
        details.append(f"{self.configs} configuration{'s' if self.configs != 1 else ''}")
        if self.pario_share is not None:
            details.append(f"share of the machine's limit: pario {fmt_ratio(self.pario_share)}"
                           + (f", native {fmt_ratio(self.native_share)}" if self.native_share is not None else ""))
        if self.other_regimes:
            details.append("also measured: " + ", ".join(self.other_regimes) + " (see the table)")
        return out + " (" + "; ".join(details) + ")"

    def to_dict(self) -> dict:
        return {"suite": self.suite, "regime": self.regime, "metric": self.metric, "unit": self.unit,
                "higher_is_better": self.higher_is_better, "pario_over_native": self.ratio,
                "per_mpi": self.per_mpi, "configurations": self.configs, "native": self.native,
                "pario": self.pario, "native_share": self.native_share, "pario_share": self.pario_share,
                "verdict": self.verdict, "text": self.text()}


def headlines(comparisons: Sequence[Comparison]) -> List[Headline]:
    """One line per suite: pario/native of the key metric in the suite's headline regime."""
    out: List[Headline] = []
    for suite in sorted({c.suite for c in comparisons}, key=lambda s: (_suite_order(s), s)):
        cs = [c for c in comparisons if c.suite == suite]
        regimes = sorted({c.regime for c in cs}, key=lambda r: (index_of(REGIME_ORDER, r), r))
        prefer = HEADLINE_REGIMES.get(suite, DEFAULT_HEADLINE_REGIMES)
        order = [r for r in prefer if r in regimes] + [r for r in regimes if r not in prefer]
        with_ratio = [r for r in order if any(c.ratio is not None for c in cs if c.regime == r)]
        regime = (with_ratio or order)[0]
        sel = [c for c in cs if c.regime == regime and c.ratio is not None]
        per_mpi: Dict[str, float] = {}
        for mpi in sorted({c.mpi for c in sel}, key=lambda m: (_mpi_order(m), m)):
            gm = geomean(c.ratio for c in sel if c.mpi == mpi)
            if gm is not None:
                per_mpi[mpi] = gm
        out.append(Headline(suite, regime, geomean(c.ratio for c in sel), per_mpi, len(sel),
                            geomean(c.native_value for c in sel), geomean(c.pario_value for c in sel),
                            [r for r in regimes if r != regime],
                            geomean(c.native.share for c in sel if c.native),
                            geomean(c.pario.share for c in sel if c.pario)))
    return out


def headline_text(comparisons: Sequence[Comparison]) -> str:
    return "\n".join("  " + h.text() for h in headlines(comparisons))


def summary_text(comparisons: Sequence[Comparison]) -> str:
    rows = summary_rows(comparisons)
    if not rows:
        return "(no measurements)"
    return text_table(SUMMARY_HEADERS, rows, SUMMARY_RIGHT)
