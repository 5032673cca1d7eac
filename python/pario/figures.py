"""PNG figures of a report, one function per suite, each redrawing a seed paper's figure.

  overlap    Büttner Fig. 7.1/7.2: average nonblocking/blocking ratio per configuration
  cfs        Nitzberg Fig. 5-9: MB/s against rank count, one curve per block size
  noncontig  PIOviz/HPIO: independent against collective bandwidth over region size
  sharedfp   Vanegas ch. 5: shared-pointer bandwidth against rank count, one curve per mode
  btio       RIO/BTIO: compute and I/O time breakdown per configuration

Every function takes the Groups of its suite and an output directory, writes PNGs there and
returns (file name, caption) pairs. Native is drawn solid, pario dashed.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from . import IMPLS, MPIS  # noqa: E402
from .tables import CFS_ORDER, SHAREDFP_MODES, Group, fmt_param, params_key, varying_params  # noqa: E402

Figure = Tuple[str, str]

IMPL_STYLE = {"native": {"linestyle": "-", "marker": "o"}, "pario": {"linestyle": "--", "marker": "s"}}
IMPL_HATCH = {"native": "", "pario": "//"}
IMPL_COLOR = {"native": "#4c72b0", "pario": "#dd8452"}
DPI = 100


def _mpis(groups: Sequence[Group]) -> List[str]:
    present = {g.mpi for g in groups}
    return [m for m in MPIS if m in present] + sorted(present - set(MPIS))


def _impls(groups: Sequence[Group]) -> List[str]:
    present = {g.impl for g in groups}
    return [i for i in IMPLS if i in present] + sorted(present - set(IMPLS))


def _save(fig, out_dir: str, name: str) -> str:
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=DPI, bbox_inches="tight")
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


def _curves(ax, groups: Sequence[Group], x_param: str, metric: str, curve_keys: Sequence[str],
            log_x: bool = True) -> int:
    """One line per (curve key values, impl): metric mean against x_param (or 'ranks')."""
    curves: Dict[tuple, List[Group]] = {}
    for g in groups:
        if g.mean(metric) is None:
            continue
        key = tuple(g.params.get(k) if k != "ranks" else g.ranks for k in curve_keys)
        curves.setdefault((key, g.impl), []).append(g)
    keys = sorted({k for k, _ in curves}, key=_order)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    drawn = 0
    for i, key in enumerate(keys):
        for impl in IMPLS:
            gs = curves.get((key, impl))
            if not gs:
                continue
            pts = sorted((g.ranks if x_param == "ranks" else g.params.get(x_param), g.mean(metric)) for g in gs)
            name = ", ".join(fmt_param(k, v) for k, v in zip(curve_keys, key)) if curve_keys else ""
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colors[i % len(colors)],
                    label=f"{name} {impl}".strip(), **IMPL_STYLE.get(impl, {}))
            drawn += 1
    if log_x:
        ax.set_xscale("log", base=2)
        xs = sorted({g.ranks if x_param == "ranks" else g.params.get(x_param) for g in groups
                     if isinstance(g.ranks if x_param == "ranks" else g.params.get(x_param), (int, float))})
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


def _legend(ax, outside: bool = False) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if outside:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    else:
        ax.legend(fontsize="small", ncol=2 if len(handles) > 6 else 1)


def _legend_once(axes) -> None:
    """One legend, right of the last axes, for curves that are the same in every panel."""
    seen: Dict[str, object] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if seen:
        axes[-1].legend(list(seen.values()), list(seen.keys()), fontsize="small", loc="upper left",
                        bbox_to_anchor=(1.02, 1.0), borderaxespad=0)


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


def _title(ax, title: str, groups: Sequence[Group], metric: str) -> None:
    """Panel title, with a second line naming missing points."""
    note = _missing(groups, metric)
    ax.set_title(title + (f"\n({note})" if note else ""), fontsize="medium")


def _empty(ax, text: str = "no successful measurement") -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")


# -- overlap -----------------------------------------------------------------------------
OVERLAP_HIDDEN = ("iterations", "elements", "fill_elements", "fill_iterations")


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
    lines = ([str(c[0])] if show_test else []) + [f"n={c[1]}"]
    lines += [fmt_param(k, v) for k, v in zip(keys, c[2:]) if v is not None]
    return "\n".join(lines)


def overlap_figures(groups: Sequence[Group], out_dir: str) -> List[Figure]:
    groups = [g for g in groups if g.suite == "overlap"]
    if not groups:
        return []
    keys = [k for k in varying_params(groups) if k not in OVERLAP_HIDDEN]
    mpis = _mpis(groups)
    n_cfg = max(len(_bar_configs([g for g in groups if g.mpi == m], keys)) for m in mpis)
    fig, axes = plt.subplots(len(mpis), 1, figsize=(max(6.0, 0.9 * n_cfg + 2), 3.6 * len(mpis)),
                             squeeze=False, sharey=True)
    axes = [a[0] for a in axes]
    for ax, mpi in zip(axes, mpis):
        gs = [g for g in groups if g.mpi == mpi]
        configs = _bar_configs(gs, keys)
        impls = _impls(gs)
        width = 0.8 / max(len(impls), 1)
        for j, impl in enumerate(impls):
            xs, ys, lo, hi = [], [], [], []
            for g in gs:
                m = g.mean("ratio")
                if g.impl != impl or m is None:
                    continue
                xs.append(configs.index(_config_of(g, keys)) + (j - (len(impls) - 1) / 2) * width)
                ys.append(m)
                lo.append(m - g.min("ratio"))
                hi.append(g.max("ratio") - m)
            if xs:
                ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=impl, color=IMPL_COLOR.get(impl),
                       hatch=IMPL_HATCH.get(impl, ""), edgecolor="black", linewidth=0.5)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle=":", label="no gain (1.0)")
        ax.axhline(0.5, color="green", linewidth=0.8, linestyle="--", label="ideal overlap (0.5)")
        show_test = _needs_test(configs)
        ax.set_xticks(range(len(configs)))
        ax.set_xticklabels([_config_label(c, keys, show_test) for c in configs], fontsize="small")
        ax.set_xlim(-0.6, max(len(configs), 1) - 0.4)
        _title(ax, f"{mpi}: nonblocking / blocking run time", gs, "ratio")
        ax.set_ylabel("average ratio\n(smaller is better)")
        ax.grid(True, axis="y", alpha=0.3)
        if not configs:
            _empty(ax)
        _legend(ax, outside=True)
    name = _save(fig, out_dir, "overlap-ratios.png")
    caption = ("Average ratio of nonblocking to blocking run time per configuration, bars for native "
               "and pario, whiskers from best to worst run (as Büttner's Figures 7.1/7.2). 1.0 means "
               "no gain, 0.5 perfect overlap of equal computation and I/O.")
    if keys:
        caption += " Configurations differ in rank count and " + ", ".join(keys) + "."
    return [(name, caption)]


# -- cfs ---------------------------------------------------------------------------------

def _line_panels(groups: Sequence[Group], out_dir: str, name: str, x_param: str, keys: Sequence[str],
                 title: str, xlabel: str, log_y: bool = False) -> Optional[str]:
    """One panel per MPI flavour of metric mb_per_s against x_param; one legend."""
    mpis = _mpis(groups)
    if not mpis:
        return None
    fig, axes = _subplots(len(mpis), width=4.8, height=3.8)
    for ax, mpi in zip(axes, mpis):
        sel = [g for g in groups if g.mpi == mpi]
        if not _curves(ax, sel, x_param, "mb_per_s", keys):
            _empty(ax)
        _title(ax, f"{title} ({mpi})", sel, "mb_per_s")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("MB/s")
        if log_y:
            _log_y(ax)
    if not log_y:
        for ax in axes:
            ax.set_ylim(bottom=0)
    _legend_once(axes)
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
                               f"implementation (as Nitzberg's Figures 5-9)."))
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
        fig, axes = plt.subplots(len(mpis), len(ops), figsize=(4.8 * len(ops), 3.6 * len(mpis)), squeeze=False)
        for r, mpi in enumerate(mpis):
            for c, op in enumerate(ops):
                ax = axes[r][c]
                sel = [g for g in gs if g.mpi == mpi and op_of(g) == op]
                if not _curves(ax, sel, "region_size", "mb_per_s", keys):
                    _empty(ax)
                _log_y(ax)
                _title(ax, f"{op}, {mpi}, {ranks} ranks", sel, "mb_per_s")
                ax.set_xlabel("region size")
                ax.set_ylabel("MB/s")
        _legend_once([a for row in axes for a in row])
        name = _save(fig, out_dir, f"noncontig-mem-{_slug(mem)}-file-{_slug(file)}.png")
        figs.append((name, f"Independent against collective bandwidth over region size, memory {mem}, "
                           f"file {file}, {ranks} ranks (the HPIO pattern of the PIOviz paper)."))
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
                   "as in Vanegas' chapter 5. Failed or unsupported points are left out.")]


# -- btio --------------------------------------------------------------------------------
def btio_figures(groups: Sequence[Group], out_dir: str) -> List[Figure]:
    every = [g for g in groups if g.suite == "btio"]
    groups = [g for g in every if g.mean("total_s") is not None]
    if not groups:
        return []
    keys = [k for k in varying_params(groups) if k != "test"]
    mpis = _mpis(groups)
    n_cfg = max(len(_bar_configs([g for g in groups if g.mpi == m], keys)) for m in mpis)
    fig, axes = plt.subplots(len(mpis), 1, figsize=(max(6.0, 1.0 * n_cfg + 2), 3.6 * len(mpis)),
                             squeeze=False, sharey=True)
    axes = [a[0] for a in axes]
    parts = (("compute_s", "compute", "#8c8c8c"), ("io_s", "I/O", "#c44e52"), (None, "other", "#dddddd"))
    for ax, mpi in zip(axes, mpis):
        gs = [g for g in groups if g.mpi == mpi]
        configs = _bar_configs(gs, keys)
        impls = _impls(gs)
        width = 0.8 / max(len(impls), 1)
        for j, impl in enumerate(impls):
            sel = [g for g in gs if g.impl == impl]
            xs = [configs.index(_config_of(g, keys)) + (j - (len(impls) - 1) / 2) * width for g in sel]
            bottom = [0.0] * len(sel)
            for metric, lab, color in parts:
                if metric:
                    h = [g.mean(metric) or 0.0 for g in sel]
                else:
                    h = [max((g.mean("total_s") or 0.0) - b, 0.0) for g, b in zip(sel, bottom)]
                ax.bar(xs, h, width, bottom=bottom, color=color, hatch=IMPL_HATCH.get(impl, ""),
                       edgecolor="black", linewidth=0.5)
                bottom = [b + v for b, v in zip(bottom, h)]
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
                   "and pario side by side (pario hatched), as in the RIO paper's BTIO comparison.")]


FIGURES = {
    "overlap": overlap_figures,
    "cfs": cfs_figures,
    "noncontig": noncontig_figures,
    "sharedfp": sharedfp_figures,
    "btio": btio_figures,
}


def suite_figures(suite: str, groups: Sequence[Group], out_dir: str) -> List[Figure]:
    fn = FIGURES.get(suite)
    return fn(groups, out_dir) if fn else []
