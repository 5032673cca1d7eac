"""DIR/remote.html: the report of `pario bench remote` (seed 004's experiments on one machine).

Figures (PNG shown, SVG beside it): the seed's Figures 3 and 4 redrawn from the `scale` runs
(transfer rate against clients, per server count, blocking and nonblocking, direct and through
a forwarder), the comparison with XRootD and the TCP copy (`seq`, `req4k`, `vec32`) as bars
with min-max whiskers, and the seed's Table 1 from the `btio` runs. Rebuilt from
DIR/remote-summary.json.
"""

from __future__ import annotations

import json
import os
from typing import Dict, List, Sequence

from . import pages
from .pages import Table
from .remote_summary import SUMMARY_FILE, verdicts

REPORT = "remote.html"


def _save(fig, out: str, name: str) -> str:
    fig.savefig(os.path.join(out, name + ".png"), dpi=110, bbox_inches="tight")
    fig.savefig(os.path.join(out, name + ".svg"), bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return name + ".png"


def _bars(rows: Sequence[dict], experiment: str, out: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sel = sorted((r for r in rows if r["experiment"] == experiment), key=lambda r: r["system"])
    if not sel:
        return ""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    xs = range(len(sel))
    med = [r["median"] for r in sel]
    err = [[r["median"] - r["min"] for r in sel], [r["max"] - r["median"] for r in sel]]
    colors = ["#1f77b4" if r["system"].startswith("pario") else "#ff7f0e" if r["system"].startswith("xrootd")
              else "#7f7f7f" for r in sel]
    ax.bar(xs, med, yerr=err, capsize=3, color=colors)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["system"] for r in sel], rotation=25, ha="right")
    ax.set_ylabel(sel[0]["unit"])
    ax.set_title(f"{experiment}: median of {max(r['runs'] for r in sel)} runs, whiskers min-max")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color="#1f77b4", label="pario"), Patch(color="#ff7f0e", label="XRootD"),
                       Patch(color="#7f7f7f", label="TCP copy (limit)")], fontsize=8)
    return _save(fig, out, f"remote-{experiment}")


def _scale(rows: Sequence[dict], out: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sel = [r for r in rows if r["experiment"] == "scale" and r.get("unit") == "MB/s"]
    if not sel:
        return ""
    servers = sorted({r["params"]["servers"] for r in sel})
    fig, axes = plt.subplots(1, len(servers), figsize=(6 * len(servers), 4), sharey=True, squeeze=False)
    for ax, ns in zip(axes[0], servers):
        curves: Dict[str, List[dict]] = {}
        for r in sel:
            if r["params"]["servers"] == ns:
                curves.setdefault(r["system"], []).append(r)
        for name, pts in sorted(curves.items()):
            pts.sort(key=lambda r: r["params"]["clients"])
            x = [p["params"]["clients"] for p in pts]
            y = [p["median"] for p in pts]
            yerr = [[p["median"] - p["min"] for p in pts], [p["max"] - p["median"] for p in pts]]
            ax.errorbar(x, y, yerr=yerr, marker="o", capsize=3, label=name.replace("pario-", ""),
                        linestyle="--" if "forwarder" in name else "-")
        ax.set_xlabel("clients (ranks)")
        ax.set_xticks([1, 2, 4])
        ax.set_title(f"{ns} server(s)")
        ax.grid(alpha=.3)
    axes[0][0].set_ylabel("MB/s (all clients)")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    return _save(fig, out, "remote-scale")


def _rows(rows: Sequence[dict]) -> Table:
    out = []
    for r in sorted(rows, key=lambda r: (r["experiment"], r["system"], json.dumps(r["params"], sort_keys=True))):
        params = ", ".join(f"{k}={v}" for k, v in sorted(r["params"].items()))
        out.append([r["experiment"], r["system"], params, f"{r['median']:.1f}", f"{r['min']:.1f}",
                    f"{r['max']:.1f}", r["unit"], r["runs"]])
    return ["experiment", "system", "params", "median", "min", "max", "unit", "runs"], out


def build_remote_report(out: str) -> str:
    with open(os.path.join(out, SUMMARY_FILE), encoding="utf-8") as f:
        data = json.load(f)
    rows = data["rows"]
    figs = [f for f in (_bars(rows, "seq", out), _bars(rows, "req4k", out), _bars(rows, "vec32", out),
                        _bars(rows, "btio", out), _scale(rows, out)) if f]
    targets = (["ratio", "measured", "target"],
               [[w, "n/a" if r is None else f"{r:.2f}", t] for w, r, t in verdicts(rows)])
    return pages.write(os.path.join(out, REPORT), "remote.html.j2", targets=targets,
                       skipped=data.get("skipped", {}), figures=figs, rows=_rows(rows))
