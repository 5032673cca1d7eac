"""From measurements to tables: grouping repeats, native-vs-pario comparison, text tables.

Measurements with the same suite, test, MPI, implementation, rank count and parameters
are repeats of one configuration; a Group gives the median of each metric over them, with
min and max. A Comparison pairs the native and pario groups of one configuration and gives
pario/native of the suite's key metric (bandwidth; for overlap, the nonblocking/blocking
ratio, so the ratio of ratios): the ratio of the medians, and the spread of the per-round
ratios (round k's pario over round k's native, the launches `pario bench run --repeat`
alternated). Where pario-bench measured the machine's limit (LIMIT_METRIC), a Group also
gives the limit and the share of it its key figure reached.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from . import IMPLS, MPIS, SUITES
from .results import Measurement

# Key metric per suite, its unit, and whether larger is better.
KEY_METRIC: Dict[str, Tuple[str, str, bool]] = {
    "overlap": ("ratio", "nonblocking/blocking", False),
    "cfs": ("mb_per_s", "MB/s", True),
    "noncontig": ("mb_per_s", "MB/s", True),
    "sharedfp": ("mb_per_s", "MB/s", True),
    "btio": ("mb_per_s", "MB/s", True),
}

# The machine's limit a suite measures in the same run, its unit, and the figure it bounds:
# the metric `share` of a measurement is that figure over the limit (overlap: ideal/ratio).
LIMIT_METRIC: Dict[str, Tuple[str, str]] = {
    "sharedfp": ("limit_records_per_s", "records/s"),
    "overlap": ("ideal_ratio", "ideal ratio"),
    "noncontig": ("device_mb_per_s", "device MB/s"),
}
SHARE_METRIC = "share"

SUITE_TITLES = {
    "overlap": "Overlap of computation and nonblocking I/O (Büttner)",
    "cfs": "Concurrent file system tests: broadcast, partitioned, interleaved (Nitzberg)",
    "noncontig": "Noncontiguous access, independent vs collective (HPIO / PIOviz)",
    "sharedfp": "Shared file pointers (Vanegas)",
    "btio": "BTIO-style solver output: compute and I/O time (RIO)",
}

SHAREDFP_MODES = {1: "write_shared", 2: "write_ordered", 3: "iwrite_shared", 4: "write_ordered_begin"}

# Parameters worth naming in a row label, in display order.
LABEL_PARAMS: Dict[str, Sequence[str]] = {
    "overlap": ("scenario", "api", "regime", "elements", "io_ratio", "iterations"),
    "cfs": ("block_size", "file_size", "groups", "api", "preallocate"),
    "noncontig": ("op", "access", "region_size", "region_count", "region_spacing", "mem", "file", "sync", "hints"),
    "sharedfp": ("mode", "data_size", "loops", "variability", "sizing"),
    "btio": ("mode", "n", "iterations", "write_every", "compute_cost"),
}

SIZE_PARAMS = {"elements", "fill_elements", "block_size", "file_size", "region_size", "region_spacing",
               "data_size"}

# Parameters the sub-test name already says (left out of table rows that show the test).
TEST_PARAMS: Dict[str, Tuple[str, ...]] = {
    "overlap": ("scenario",), "cfs": ("test",), "noncontig": ("op", "access"),
    "sharedfp": ("mode",), "btio": ("mode",),
}

# Parameters never shown as a configuration: overlap's `size` is the rank count (the
# thesis's field name).
HIDDEN_PARAMS: Dict[str, Tuple[str, ...]] = {"overlap": ("size",)}


# Parameters that report what the run found rather than what was asked for: they never tell
# configurations apart (native MPI-IO reports no shared-pointer component, pario its own, and
# the two runs of one configuration must still pair).
OUTCOME_PARAMS = ("sharedfp_component", "limit_reason")


def params_key(params: dict) -> str:
    asked = {k: v for k, v in params.items() if k not in OUTCOME_PARAMS}
    return json.dumps(asked, sort_keys=True, default=str)


def fmt_bytes(n) -> str:
    try:
        n = int(n)
    except (TypeError, ValueError):
        return str(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n} B"


def fmt_param(name: str, value) -> str:
    if value is None:  # labels leave such parameters out; this is the fallback
        return "not set"
    if name in SIZE_PARAMS:
        return fmt_bytes(value)
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items())) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if name == "mode" and isinstance(value, int) and value in SHAREDFP_MODES:
        return f"{value} ({SHAREDFP_MODES[value]})"
    return str(value)


def fmt_num(v: Optional[float], digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    a = abs(v)
    if a == 0:
        return "0"
    if float(v).is_integer() and a < 1e6:
        return f"{int(v):,}" if a >= 1000 else str(int(v))
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.{digits - 1}f}" if digits > 1 else f"{v:.0f}"
    return f"{v:.{digits}g}" if a < 0.001 else f"{v:.{digits}f}"


def fmt_ratio(v: Optional[float]) -> str:
    """A pario/native ratio: two decimals (1.00, 0.55), more digits only below 0.1."""
    if v is None or not math.isfinite(v):
        return "-"
    return f"{v:.2f}" if abs(v) >= 0.1 else f"{v:.2g}"


def regime_of(params: dict) -> str:
    """The storage regime a measurement ran under, as far as its parameters say."""
    if "regime" in params:
        return str(params["regime"])
    if params.get("cold"):  # noncontig --cold: reads from storage, the pages dropped first
        return "cold"
    if "sync" in params:
        return "synced" if params["sync"] else "cached"
    return "cached"


def median(values: Iterable[float]) -> Optional[float]:
    """Median (the mean of the two middle values for an even count); None when empty."""
    vals = list(values)
    return statistics.median(vals) if vals else None


@dataclass
class Group:
    suite: str
    test: str
    mpi: str
    impl: str
    ranks: int
    params: dict
    items: List[Measurement] = field(default_factory=list)

    @property
    def ok_items(self) -> List[Measurement]:
        return [m for m in self.items if m.ok]

    @property
    def status(self) -> str:
        if self.ok_items:
            return "ok"
        if self.items and all(m.status == "unsupported" for m in self.items):
            return "unsupported"
        return "failed"

    @property
    def verified(self) -> Optional[bool]:
        vals = [m.verified for m in self.items]
        if any(v is False for v in vals):
            return False
        if vals and all(v is True for v in vals):
            return True
        return None

    @property
    def error(self) -> str:
        for m in self.items:
            if m.error:
                return m.error
        return ""

    def values(self, metric: str) -> List[float]:
        return [v for v in (m.metric(metric) for m in self.ok_items) if v is not None]

    def mean(self, metric: str) -> Optional[float]:
        vals = self.values(metric)
        return statistics.fmean(vals) if vals else None

    def median(self, metric: str) -> Optional[float]:
        return median(self.values(metric))

    def by_round(self, metric: str) -> Dict[int, float]:
        """Round -> the median of the metric in that round. Measurements without a round tag
        (results of older sweeps) count in the order they were written: 1, 2, ..."""
        per: Dict[int, List[float]] = {}
        for i, m in enumerate(self.ok_items, 1):
            v = m.metric(metric)
            if v is not None:
                per.setdefault(m.round if m.round is not None else i, []).append(v)
        return {k: median(vs) for k, vs in sorted(per.items())}

    @property
    def limit_metric(self) -> Optional[str]:
        return LIMIT_METRIC.get(self.suite, (None, ""))[0]

    @property
    def limit(self) -> Optional[float]:
        """Median of the machine's limit measured beside this configuration's figure."""
        return self.median(self.limit_metric) if self.limit_metric else None

    @property
    def share(self) -> Optional[float]:
        """Median of the share of the limit the figure reached (None where not measured)."""
        return self.median(SHARE_METRIC) if self.limit_metric else None

    def min(self, metric: str) -> Optional[float]:
        vals = self.values(metric)
        return min(vals) if vals else None

    def max(self, metric: str) -> Optional[float]:
        vals = self.values(metric)
        return max(vals) if vals else None

    @property
    def regime(self) -> str:
        return regime_of(self.params)

    def param(self, name: str, default=None):
        return self.params.get(name, default)


CFS_ORDER = ("broadcast-read", "partitioned-write", "partitioned-read", "interleaved-write", "interleaved-read")
BTIO_ORDER = ("blocking", "nonblocking", "stage")
OVERLAP_ORDER = ("equal", "io-bound", "compute-bound")


def index_of(seq: Sequence, value, default: int = 99) -> int:
    return seq.index(value) if value in seq else default


def subtest_order(suite: str, test: str, params: dict) -> tuple:
    """Where a sub-test goes in tables: the seed papers' order, not the alphabet."""
    if suite == "cfs":
        return (index_of(CFS_ORDER, test), test)
    if suite == "sharedfp":
        mode = params.get("mode")
        return (mode if isinstance(mode, int) else 99, test)
    if suite == "btio":
        return (index_of(BTIO_ORDER, params.get("mode", test)), test)
    if suite == "noncontig":
        return (params.get("op") != "write", params.get("access") != "independent", test)
    if suite == "overlap":
        return (index_of(OVERLAP_ORDER, params.get("scenario", test)), test)
    return (0, test)


def _params_order(params: dict) -> tuple:
    """Parameters in key order, numbers compared as numbers."""
    return tuple((k, 0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool)
                 else (k, 1, 0, json.dumps(v, sort_keys=True, default=str)) for k, v in sorted(params.items()))


def _sort_key(g: Group):
    return (SUITES.index(g.suite) if g.suite in SUITES else len(SUITES), g.suite,
            subtest_order(g.suite, g.test, g.params),
            MPIS.index(g.mpi) if g.mpi in MPIS else len(MPIS), g.mpi, _params_order(g.params), g.ranks,
            IMPLS.index(g.impl) if g.impl in IMPLS else len(IMPLS), g.impl)


def group(measurements: Iterable[Measurement]) -> List[Group]:
    groups: "OrderedDict[tuple, Group]" = OrderedDict()
    for m in measurements:
        key = (m.suite, m.test, m.mpi, m.impl, m.ranks, params_key(m.params))
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(m.suite, m.test, m.mpi, m.impl, m.ranks, m.params)
        g.items.append(m)
    return sorted(groups.values(), key=_sort_key)


def varying_params(groups: Sequence[Group]) -> List[str]:
    """Parameters that take more than one value across these groups (label order first)."""
    seen: Dict[str, set] = {}
    suite = groups[0].suite if groups else ""
    hidden = HIDDEN_PARAMS.get(suite, ())
    for g in groups:
        for k, v in g.params.items():
            if k not in hidden:
                seen.setdefault(k, set()).add(json.dumps(v, sort_keys=True, default=str))
    order = list(LABEL_PARAMS.get(suite, ())) + sorted(seen)
    out: List[str] = []
    for k in order:
        if k in seen and len(seen[k]) > 1 and k not in out:
            out.append(k)
    return out


def common_params(groups: Sequence[Group]) -> Dict[str, object]:
    """Parameters with one value across all these groups."""
    if not groups:
        return {}
    vary = set(varying_params(groups))
    hidden = HIDDEN_PARAMS.get(groups[0].suite, ())
    out: Dict[str, object] = {}
    for g in groups:
        for k, v in g.params.items():
            if k not in vary and k not in hidden and k not in out and v is not None:
                out[k] = v
    return out


def label(g: Group, keys: Sequence[str]) -> str:
    parts = [f"{k}={fmt_param(k, g.params[k])}" for k in keys if g.params.get(k) is not None]
    return " ".join(parts)


@dataclass
class Comparison:
    suite: str
    test: str
    mpi: str
    ranks: int
    params: dict
    native: Optional[Group]
    pario: Optional[Group]

    @property
    def metric(self) -> str:
        return KEY_METRIC.get(self.suite, ("mb_per_s", "", True))[0]

    @property
    def native_value(self) -> Optional[float]:
        """Median of the key metric over the native runs."""
        return self.native.median(self.metric) if self.native else None

    @property
    def pario_value(self) -> Optional[float]:
        return self.pario.median(self.metric) if self.pario else None

    @property
    def ratio(self) -> Optional[float]:
        """pario/native: the ratio of the medians."""
        n, p = self.native_value, self.pario_value
        if n is None or p is None or n == 0:
            return None
        return p / n

    @property
    def round_ratios(self) -> List[float]:
        """pario/native of each round both implementations measured (in round order)."""
        if not self.native or not self.pario:
            return []
        n, p = self.native.by_round(self.metric), self.pario.by_round(self.metric)
        return [p[k] / n[k] for k in sorted(set(n) & set(p)) if n[k] != 0]

    @property
    def ratio_min(self) -> Optional[float]:
        rs = self.round_ratios
        return min(rs) if rs else None

    @property
    def ratio_max(self) -> Optional[float]:
        rs = self.round_ratios
        return max(rs) if rs else None

    @property
    def rounds(self) -> int:
        return len(self.round_ratios)

    @property
    def limit_metric(self) -> Optional[str]:
        return LIMIT_METRIC.get(self.suite, (None, ""))[0]

    def limit_values(self) -> List[float]:
        """The machine's limit as every launch of this configuration measured it (both sides:
        each launch measures its own, and each side's share is against its own)."""
        name = self.limit_metric
        return [v for g in (self.native, self.pario) if g and name for v in g.values(name)]

    @property
    def limit(self) -> Optional[float]:
        return median(self.limit_values())

    @property
    def limit_min(self) -> Optional[float]:
        vals = self.limit_values()
        return min(vals) if vals else None

    @property
    def limit_max(self) -> Optional[float]:
        vals = self.limit_values()
        return max(vals) if vals else None

    @property
    def regime(self) -> str:
        return regime_of(self.params)

    def status(self, impl: str) -> str:
        g = self.native if impl == "native" else self.pario
        return g.status if g else "missing"


def compare(groups: Iterable[Group]) -> List[Comparison]:
    pairs: "OrderedDict[tuple, Dict[str, Group]]" = OrderedDict()
    for g in groups:
        key = (g.suite, g.test, g.mpi, g.ranks, params_key(g.params))
        pairs.setdefault(key, {})[g.impl] = g
    out = []
    for (suite, test, mpi, ranks, _), d in pairs.items():
        any_g = d.get("native") or d.get("pario") or next(iter(d.values()))
        out.append(Comparison(suite, test, mpi, ranks, any_g.params, d.get("native"), d.get("pario")))
    return out


def config_keys(suite: str, groups: Sequence[Group]) -> List[str]:
    """Parameters that tell this suite's configurations apart in a table row (the test name,
    the regime and the rank count have columns of their own)."""
    return [k for k in varying_params(groups) if k not in ("test", "regime", "sync") + TEST_PARAMS.get(suite, ())]
