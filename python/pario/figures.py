"""Figures of a report (PNG and SVG), one function per suite, each redrawing a seed paper's figure.

  overlap    Büttner Fig. 7.1/7.2: average nonblocking/blocking ratio per configuration
  cfs        Nitzberg Fig. 5-9: MB/s against rank count, one curve per block size
  noncontig  PIOviz/HPIO: independent against collective bandwidth over region size
  sharedfp   Vanegas ch. 5: shared-pointer bandwidth against rank count, one curve per mode
  btio       RIO/BTIO: compute and I/O time breakdown per configuration
  metascale  issue 34: bytes received per collective write and per set_view, peak memory, against ranks

Every function takes the Groups of its suite and an output directory, writes each figure
there as PNG and SVG and returns (PNG file name, caption) pairs. Native is drawn solid, pario
dashed. Every panel has a legend; a point is the median of its configuration's runs, with
whiskers from the lowest to the highest when the configuration ran more than once; an axis
whose values span more than two decades is logarithmic (wants_log).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from matplotlib.patches import Patch

from .figbase import (  # noqa: F401  (wants_log: the tests and other modules use it from here)
    Figure,
    plt,
    IMPL_HATCH,
    IMPL_COLOR,
    _mpis,
    _impls,
    wants_log,
    _save,
    _subplots,
    _slug,
    _order,
    _point,
    _curves,
    _log_y,
    _legend,
    _repeat_note,
    _title,
    _empty,
)
from .tables import CFS_ORDER, SHAREDFP_MODES, Group, fmt_param, params_key, varying_params

OVERLAP_HIDDEN = ("iterations", "elements", "fill_elements", "fill_iterations", "margin", "min_tries",
                  "max_tries")


def _bar_configs(groups: Sequence[Group], keys: Sequence[str]) -> List[tuple]:
    """Distinct (test, ranks, key values) of these groups, sorted."""
    configs = {(g.test, g.ranks) + tuple(g.params.get(k) for k in keys) for g in groups}
    return sorted(configs, key=_order)


def _config_of(g: Group, keys: Sequence[str]) -> tuple:
    return (g.test, g.ranks) + tuple(g.params.get(k) for k in keys)


def _needs_test(configs: Sequence[tuple]) -> bool:
    """Whether the test name is needed to tell configurations apart."""
    return len({c[1:] for c in configs}) < len(configs)


def _config_label(c: tuple, keys: Sequence[str], show_test: bool) -> str:
    """Bar label: rank count, then each parameter; a word (cached, direct, thread) speaks for
    itself, a number is named (margin=0.005). Parameters a run does not report are left out."""
    lines = ([str(c[0])] if show_test else []) + [f"np={c[1]}"]
    lines += [fmt_param(k, v) if isinstance(v, str) else f"{k}={fmt_param(k, v)}"
              for k, v in zip(keys, c[2:]) if v is not None]
    return "\n".join(lines)


def _distinct_keys(groups: Sequence[Group], hidden: Sequence[str]) -> List[str]:
    """The varying parameters less `hidden` ones, unless leaving those out would put two
    configurations of one MPI and implementation on the same bar."""
    every = varying_params(groups)
    keys = [k for k in every if k not in hidden]
    seen: Dict[tuple, str] = {}
    for g in groups:
        slot = (g.mpi, g.impl) + _config_of(g, keys)
        if seen.setdefault(slot, params_key(g.params)) != params_key(g.params):
            return every
    return keys


def _bar_panels(groups: Sequence[Group], keys: Sequence[str], per_config: float):
    """Bar charts, one panel per MPI flavour stacked, as wide as the most configurations need
    (per_config inches each): the figure and, per panel, (axes, flavour, its groups, its
    configurations, its implementations, the width of one bar)."""
    mpis = _mpis(groups)
    n_cfg = max(len(_bar_configs([g for g in groups if g.mpi == m], keys)) for m in mpis)
    fig, axes = plt.subplots(len(mpis), 1, figsize=(max(6.0, per_config * n_cfg + 2), 3.6 * len(mpis)),
                             squeeze=False, sharey=True)
    panels = []
    for row, mpi in zip(axes, mpis):
        gs = [g for g in groups if g.mpi == mpi]
        impls = _impls(gs)
        panels.append((row[0], mpi, gs, _bar_configs(gs, keys), impls, 0.8 / max(len(impls), 1)))
    return fig, panels


def overlap_figures(groups: Sequence[Group], out_dir: str) -> List[Figure]:
    groups = [g for g in groups if g.suite == "overlap"]
    if not groups:
        return []
    keys = _distinct_keys(groups, OVERLAP_HIDDEN)
    fig, panels = _bar_panels(groups, keys, 0.9)
    axes = [p[0] for p in panels]
    repeated = any(len(g.values("ratio")) > 1 for g in groups)
    drawn: List[float] = []
    for ax, mpi, gs, configs, impls, width in panels:
        for j, impl in enumerate(impls):
            xs, ys, lo, hi = [], [], [], []
            for g in gs:
                pt = _point(g, "ratio")
                if g.impl != impl or pt is None:
                    continue
                med, low, high, _ = pt
                xs.append(configs.index(_config_of(g, keys)) + (j - (len(impls) - 1) / 2) * width)
                ys.append(med)
                lo.append(med - low)
                hi.append(high - med)
                drawn += [low, high]
            if xs:
                ax.bar(xs, ys, width, yerr=[lo, hi] if repeated else None, capsize=3, label=impl,
                       color=IMPL_COLOR.get(impl), hatch=IMPL_HATCH.get(impl, ""), edgecolor="black",
                       linewidth=0.5)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle=":", label="no gain (1.0)")
        ax.axhline(0.5, color="green", linewidth=0.8, linestyle="--", label="ideal overlap (0.5)")
        show_test = _needs_test(configs)
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels([_config_label(c, keys, show_test) for c in configs], fontsize="small")
        ax.set_xlim(-0.6, max(len(configs), 1) - 0.4)
        _title(ax, f"{mpi}: nonblocking / blocking run time", gs, "ratio")
        ax.set_ylabel(("median ratio" if repeated else "ratio") + "\n(smaller is better)")
        ax.grid(True, axis="y", alpha=0.3)
        if not configs:
            _empty(ax)
        _legend(ax, outside=True)
    if wants_log(drawn + [0.5, 1.0]):
        for ax in axes:
            _log_y(ax)
    name = _save(fig, out_dir, "overlap-ratios.png")
    caption = ("Ratio of nonblocking to blocking run time per configuration, bars for native and pario "
               + ("(median of the runs, whiskers from best to worst run) " if repeated else "")
               + "as Büttner's Figures 7.1/7.2. 1.0 means no gain, 0.5 perfect overlap of equal "
               "computation and I/O.")
    if keys:
        caption += " Configurations differ in rank count and " + ", ".join(keys) + "."
    if "regime" in keys:
        caption += (" Regime cached: writes end in the page cache, a memory copy that needs the CPU the "
                    "computation wants, so no implementation can overlap much; direct: "
                    "pario_direct_io=true (pario only: the native MPI-IO ignores the hint and writes "
                    "through the cache), the data moves by DMA while the computation runs.")
    return [(name, caption)]


# -- cfs ---------------------------------------------------------------------------------

def _scale_y(axes, values: Sequence[float]) -> None:
    """Log y on every panel when the values span decades, else linear from 0."""
    log = wants_log(values)
    for ax in axes:
        if log:
            _log_y(ax)
        else:
            ax.set_ylim(bottom=0)


def _line_panels(groups: Sequence[Group], out_dir: str, name: str, x_param: str, keys: Sequence[str],
                 title: str, xlabel: str, metric: str = "mb_per_s", ylabel: str = "MB/s") -> Optional[str]:
    """One panel per MPI flavour of metric (mb_per_s) against x_param, each with its legend."""
    mpis = _mpis(groups)
    if not mpis:
        return None
    fig, axes = _subplots(len(mpis), width=6.4, height=3.8)
    values: List[float] = []
    for ax, mpi in zip(axes, mpis):
        sel = [g for g in groups if g.mpi == mpi]
        drawn = _curves(ax, sel, x_param, metric, keys)
        if not drawn:
            _empty(ax)
        values += drawn
        _title(ax, f"{title} ({mpi})", sel, metric)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        _legend(ax)
    _scale_y(axes, values)
    return _save(fig, out_dir, name)


def cfs_figures(groups: Sequence[Group], out_dir: str) -> List[Figure]:
    groups = [g for g in groups if g.suite == "cfs"]
    tests = sorted({g.test for g in groups}, key=lambda t: (CFS_ORDER.index(t) if t in CFS_ORDER else 99, t))
    figs: List[Figure] = []
    for test in tests:
        gs = [g for g in groups if g.test == test]
        keys = [k for k in varying_params(gs) if k not in ("groups", "test")]
        if "block_size" not in keys and any("block_size" in g.params for g in gs):
            keys.insert(0, "block_size")
        name = _line_panels(gs, out_dir, f"cfs-{_slug(test)}.png", "ranks", keys, test, "ranks")
        if name:
            figs.append((name, f"{test}: bandwidth against rank count, one curve per block size and "
                               f"implementation (as Nitzberg's Figures 5-9)." + _repeat_note(gs, "mb_per_s")))
    return figs


# -- noncontig ---------------------------------------------------------------------------
def noncontig_figures(groups: Sequence[Group], out_dir: str) -> List[Figure]:
    groups = [g for g in groups if g.suite == "noncontig"]
    if not groups:
        return []
    figs: List[Figure] = []
    layout = lambda g: (str(g.params.get("mem", "-")), str(g.params.get("file", "-")))  # noqa: E731
    op_of = lambda g: str(g.params.get("op", g.test))  # noqa: E731
    for mem, file in sorted({layout(g) for g in groups}):
        gs = [g for g in groups if layout(g) == (mem, file)]
        ranks = max(g.ranks for g in gs)
        gs = [g for g in gs if g.ranks == ranks]
        keys = ["access"] + [k for k in varying_params(gs)
                             if k not in ("region_size", "op", "mem", "file", "access")]
        mpis = _mpis(gs)
        ops = sorted({op_of(g) for g in gs}, key=lambda o: (o != "write", o))
        fig, axes = plt.subplots(len(mpis), len(ops), figsize=(6.6 * len(ops), 3.6 * len(mpis)), squeeze=False,
                                 sharey=True)
        values: List[float] = []
        for r, mpi in enumerate(mpis):
            for c, op in enumerate(ops):
                ax = axes[r][c]
                sel = [g for g in gs if g.mpi == mpi and op_of(g) == op]
                drawn = _curves(ax, sel, "region_size", "mb_per_s", keys)
                if not drawn:
                    _empty(ax)
                values += drawn
                _title(ax, f"{op}, {mpi}, {ranks} ranks", sel, "mb_per_s")
                ax.set_xlabel("region size")
                ax.set_ylabel("MB/s")
                _legend(ax)
        _scale_y([a for row in axes for a in row], values)
        name = _save(fig, out_dir, f"noncontig-mem-{_slug(mem)}-file-{_slug(file)}.png")
        figs.append((name, f"Independent against collective bandwidth over region size, memory {mem}, "
                           f"file {file}, {ranks} ranks (the HPIO pattern of the PIOviz paper)."
                     + _repeat_note(gs, "mb_per_s")))
    return figs


# -- sharedfp ----------------------------------------------------------------------------
def sharedfp_figures(groups: Sequence[Group], out_dir: str) -> List[Figure]:
    groups = [g for g in groups if g.suite == "sharedfp"]
    if not groups:
        return []
    keys = ["mode"] + [k for k in varying_params(groups) if k != "mode"]
    name = _line_panels(groups, out_dir, "sharedfp-bandwidth.png", "ranks", keys,
                        "shared file pointer writes", "ranks")
    modes = ", ".join(f"{k} {v}" for k, v in SHAREDFP_MODES.items())
    return [(name, f"Shared-pointer write bandwidth against rank count per mode ({modes}), "
                   "as in Vanegas' chapter 5. Failed or unsupported points are left out."
                   + _repeat_note(groups, "mb_per_s"))]


# -- btio --------------------------------------------------------------------------------
def btio_figures(groups: Sequence[Group], out_dir: str) -> List[Figure]:
    every = [g for g in groups if g.suite == "btio"]
    groups = [g for g in every if g.mean("total_s") is not None]
    if not groups:
        return []
    keys = [k for k in varying_params(groups) if k != "test"]
    fig, panels = _bar_panels(groups, keys, 1.0)
    parts = (("compute_s", "compute", "#8c8c8c"), ("io_s", "I/O", "#c44e52"), (None, "other", "#dddddd"))
    repeated = any(len(g.values("total_s")) > 1 for g in groups)
    for ax, mpi, gs, configs, impls, width in panels:
        for j, impl in enumerate(impls):
            sel = [g for g in gs if g.impl == impl]
            xs = [configs.index(_config_of(g, keys)) + (j - (len(impls) - 1) / 2) * width for g in sel]
            bottom = [0.0] * len(sel)
            for metric, lab, color in parts:
                if metric:
                    h = [g.median(metric) or 0.0 for g in sel]
                else:
                    h = [max((g.median("total_s") or 0.0) - b, 0.0) for g, b in zip(sel, bottom)]
                ax.bar(xs, h, width, bottom=bottom, color=color, hatch=IMPL_HATCH.get(impl, ""),
                       edgecolor="black", linewidth=0.5)
                bottom = [b + v for b, v in zip(bottom, h)]
            if repeated and sel:   # whiskers: the total's range over the runs
                ax.errorbar(xs, bottom, yerr=[[b - (g.min("total_s") or b) for g, b in zip(sel, bottom)],
                                              [(g.max("total_s") or b) - b for g, b in zip(sel, bottom)]],
                            fmt="none", ecolor="black", capsize=3, linewidth=0.8)
        show_test = _needs_test(configs)
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels([_config_label(c, keys, show_test) for c in configs], fontsize="small")
        ax.set_xlim(-0.6, max(len(configs), 1) - 0.4)
        _title(ax, f"BTIO time breakdown ({mpi}): left bar native, right bar pario (hatched)"
               if len(impls) > 1 else f"BTIO time breakdown ({mpi}, {impls[0]})",
               [g for g in every if g.mpi == mpi], "total_s")
        ax.set_ylabel("seconds")
        ax.grid(True, axis="y", alpha=0.3)
        handles = [Patch(facecolor=color, edgecolor="black", linewidth=0.5, label=lab) for _, lab, color in parts]
        handles += [Patch(facecolor="white", edgecolor="black", linewidth=0.5, hatch=IMPL_HATCH.get(i, ""),
                          label=i) for i in impls]
        ax.legend(handles=handles, fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    name = _save(fig, out_dir, "btio-breakdown.png")
    return [(name, "BTIO-style run: compute, I/O and remaining time per rank count and I/O mode, native "
                   "and pario side by side (pario hatched), as in the RIO paper's BTIO comparison"
                   + (" (medians of the runs; whiskers: range of the total time)." if repeated else "."))]


# -- metascale ---------------------------------------------------------------------------
METASCALE = (("recv_per_call_max", "bytes", "bytes received per collective write, busiest rank"),
             ("recv_per_view_max", "bytes", "bytes received per set_view, busiest rank"),
             ("peak_rss_kib_max", "KiB", "peak RSS, largest rank"))


def metascale_figures(groups: Sequence[Group], out_dir: str) -> List[Figure]:
    groups = [g for g in groups if g.suite == "metascale"]
    keys = ["mode"] + [k for k in varying_params(groups) if k not in ("mode", "ranks", "iterations")]
    figs: List[Figure] = []
    for metric, unit, what in METASCALE:
        gs = [g for g in groups if g.median(metric) is not None]
        name = _line_panels(gs, out_dir, f"metascale-{_slug(metric)}.png", "ranks", keys, what, "ranks",
                            metric, unit) if gs else None
        if name:
            figs.append((name, f"Metadata against rank count (issue 34): {what}, one curve per mode "
                               "('fresh': a new filetype at every write, 'once': one view) and implementation; "
                               "bytes as the PMPI tool below the MPI-IO counted them (OMPIO's calls pass "
                               "below PMPI: 0)." + _repeat_note(gs, metric)))
    return figs


FIGURES = {
    "overlap": overlap_figures,
    "cfs": cfs_figures,
    "noncontig": noncontig_figures,
    "sharedfp": sharedfp_figures,
    "btio": btio_figures,
    "metascale": metascale_figures,
}


def suite_figures(suite: str, groups: Sequence[Group], out_dir: str) -> List[Figure]:
    fn = FIGURES.get(suite)
    return fn(groups, out_dir) if fn else []
