"""The drawing primitives of the report's figures (figures.py draws each suite with them): the
styles of native and pario, log axes where values span decades (wants_log), curves with
whiskers from the lowest to the highest run, legends, titles that say what is missing, and
saving each figure as PNG and SVG.
"""

from __future__ import annotations

import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"     # text stays text in the SVG files (searchable)
matplotlib.rcParams["svg.hashsalt"] = "pario"    # stable ids: the same figure gives the same file
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from . import IMPLS, MPIS  # noqa: E402
from .tables import Group, fmt_param, params_key  # noqa: E402

Figure = Tuple[str, str]


IMPL_STYLE = {"native": {"linestyle": "-", "marker": "o"}, "pario": {"linestyle": "--", "marker": "s"}}
IMPL_HATCH = {"native": "", "pario": "//"}
IMPL_COLOR = {"native": "#4c72b0", "pario": "#dd8452"}
DPI = 100
LOG_RATIO = 100.0      # y values spanning more than this factor get a log axis
LOG_RATIO_X = 8.0      # x values (sizes, rank counts: doubling sweeps) from this factor on


def _mpis(groups: Sequence[Group]) -> List[str]:
    present = {g.mpi for g in groups}
    return [m for m in MPIS if m in present] + sorted(present - set(MPIS))


def _impls(groups: Sequence[Group]) -> List[str]:
    present = {g.impl for g in groups}
    return [i for i in IMPLS if i in present] + sorted(present - set(IMPLS))


def wants_log(values, ratio: float = LOG_RATIO) -> bool:
    """Whether an axis showing these values should be logarithmic: all of them positive and the
    largest more than `ratio` times the smallest (they span decades)."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v)]
    if len(vals) < 2 or min(vals) <= 0:
        return False
    return max(vals) / min(vals) > ratio


def _save(fig, out_dir: str, name: str) -> str:
    """Write the figure as NAME (PNG) and the same name with .svg; return NAME."""
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=DPI, bbox_inches="tight")
    fig.savefig(os.path.join(out_dir, os.path.splitext(name)[0] + ".svg"), bbox_inches="tight",
                metadata={"Date": None})
    plt.close(fig)
    return name


def _subplots(n: int, width: float = 5.5, height: float = 4.0, sharey: bool = True):
    fig, axes = plt.subplots(1, max(n, 1), figsize=(width * max(n, 1), height), squeeze=False, sharey=sharey)
    return fig, list(axes[0])


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(text).lower()).strip("-")


def _order(values: tuple) -> tuple:
    """Sort key for tuples mixing numbers, strings and None: numbers first, by value."""
    return tuple((0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0, str(v))
                 for v in values)


def _point(g: Group, metric: str) -> Optional[Tuple[float, float, float, int]]:
    """(median, min, max, runs) of a configuration's successful runs."""
    med = g.median(metric)
    if med is None:
        return None
    return med, g.min(metric), g.max(metric), len(g.values(metric))


def _plain(value):
    """A parameter as a curve key: hint dictionaries (-H) become 'key=value ...' text."""
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in sorted(value.items())) or "no hints"
    return value


def _curve_name(keys: Sequence[str], values: tuple, impl: str) -> str:
    parts = [fmt_param(k, v) if k in ("mode",) or k in SIZE_NAMES else f"{k}={fmt_param(k, v)}"
             for k, v in zip(keys, values) if v is not None]
    return ", ".join(parts + [impl])


SIZE_NAMES = ("block_size", "region_size", "data_size", "elements", "file_size")


def _curves(ax, groups: Sequence[Group], x_param: str, metric: str, curve_keys: Sequence[str],
            log_x: bool = True) -> List[float]:
    """One line per (curve key values, impl): median of metric against x_param (or 'ranks'),
    whiskers min-max where a configuration ran more than once. Returns the values drawn."""
    curves: Dict[tuple, List[Group]] = {}
    for g in groups:
        if g.median(metric) is None:
            continue
        key = tuple(_plain(g.params.get(k)) if k != "ranks" else g.ranks for k in curve_keys)
        curves.setdefault((key, g.impl), []).append(g)
    keys = sorted({k for k, _ in curves}, key=_order)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    drawn: List[float] = []
    for i, key in enumerate(keys):
        for impl in IMPLS:
            gs = curves.get((key, impl))
            if not gs:
                continue
            pts = sorted(((g.ranks if x_param == "ranks" else g.params.get(x_param),) + _point(g, metric)
                          for g in gs), key=_order)
            xs = [p[0] for p in pts]
            med = [p[1] for p in pts]
            style = dict(color=colors[i % len(colors)], label=_curve_name(curve_keys, key, impl),
                         **IMPL_STYLE.get(impl, {}))
            if any(p[4] > 1 for p in pts):
                ax.errorbar(xs, med, yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                            capsize=3, **style)
                drawn += [p[2] for p in pts] + [p[3] for p in pts]
            else:
                ax.plot(xs, med, **style)
            drawn += med
    xs = sorted({g.ranks if x_param == "ranks" else g.params.get(x_param) for g in groups
                 if isinstance(g.ranks if x_param == "ranks" else g.params.get(x_param), (int, float))})
    if log_x and wants_log(xs, LOG_RATIO_X):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_formatter(NullFormatter())
    if xs:
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) if x_param == "ranks" else fmt_param(x_param, x) for x in xs])
    ax.grid(True, alpha=0.3)
    return drawn


def _log_y(ax) -> None:
    """Logarithmic y axis with plain numbers (10, 100, 1000) and unlabelled minor ticks."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _impl_handles(impls: Sequence[str] = IMPLS) -> list:
    return [Line2D([], [], color="grey", label=impl, **IMPL_STYLE.get(impl, {})) for impl in impls]


def _legend(ax, outside: bool = True, handles: Optional[list] = None) -> None:
    """A legend on this panel (right of it when `outside`). A panel without data gets the key of
    the line styles, so that every panel has one."""
    if handles is None:
        handles, _ = ax.get_legend_handles_labels()
    if not handles:
        handles = _impl_handles()
    kw = dict(fontsize="small", handles=handles)
    if outside:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, **kw)
    else:
        ax.legend(ncol=2 if len(handles) > 6 else 1, **kw)


def _missing(groups: Sequence[Group], metric: str) -> str:
    """Which points are absent because they failed, were unsupported or left no result."""
    def key(g: Group) -> tuple:
        return (g.test, g.ranks, params_key(g.params))

    configs = {key(g) for g in groups}
    notes = []
    for impl in _impls(groups):
        mine = {key(g): g for g in groups if g.impl == impl}
        bad = [mine[c].status for c in configs if c in mine and mine[c].mean(metric) is None]
        bad += ["no result"] * sum(1 for c in configs if c not in mine)
        if not bad:
            continue
        what = "all" if len(bad) == len(configs) else f"{len(bad)} of {len(configs)}"
        notes.append(f"{impl}: {what} {'/'.join(sorted(set(bad)))}")
    return ("no data: " + "; ".join(notes)) if notes else ""


def _repeat_note(groups: Sequence[Group], metric: str) -> str:
    if any(len(g.values(metric)) > 1 for g in groups):
        return " Points: median of the runs of a configuration, whiskers from the lowest to the highest."
    return ""


def _title(ax, title: str, groups: Sequence[Group], metric: str) -> None:
    """Panel title, with a second line naming missing points."""
    note = _missing(groups, metric)
    ax.set_title(title + (f"\n({note})" if note else ""), fontsize="medium")


def _empty(ax, text: str = "no successful measurement") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")


# -- overlap -----------------------------------------------------------------------------
# Sizes and calibration settings: left out of the bar labels unless they tell bars apart.
