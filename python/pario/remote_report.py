"""DIR/remote.html: the report of `pario bench remote` (seed 004's experiments on one machine).

Figures (PNG shown, SVG beside it): the seed's Figures 3 and 4 redrawn from the `scale` runs
(transfer rate against clients, per server count, blocking and nonblocking, direct and through
a forwarder), the comparison with XRootD and the TCP copy (`seq`, `req4k`, `vec32`) as bars
with min-max whiskers, and the seed's Table 1 from the `btio` runs. Rebuilt from
DIR/remote-summary.json.
"""

from __future__ import annotations

import html
import json
import os
from typing import Dict, List, Sequence

from .remote import SUMMARY_FILE, verdicts

REPORT = "remote.html"


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


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


def _table(rows: Sequence[dict]) -> str:
    head = "<tr><th>experiment</th><th>system</th><th>params</th><th>median</th><th>min</th><th>max</th><th>unit</th><th>runs</th></tr>"
    body = []
    for r in sorted(rows, key=lambda r: (r["experiment"], r["system"], json.dumps(r["params"], sort_keys=True))):
        params = ", ".join(f"{k}={v}" for k, v in sorted(r["params"].items()))
        body.append(f"<tr><td>{_e(r['experiment'])}</td><td>{_e(r['system'])}</td><td>{_e(params)}</td>"
                    f"<td>{r['median']:.1f}</td><td>{r['min']:.1f}</td><td>{r['max']:.1f}</td>"
                    f"<td>{_e(r['unit'])}</td><td>{r['runs']}</td></tr>")
    return f"<table>{head}{''.join(body)}</table>"


def build_remote_report(out: str) -> str:
    with open(os.path.join(out, SUMMARY_FILE), encoding="utf-8") as f:
        data = json.load(f)
    rows = data["rows"]
    figs = [f for f in (_bars(rows, "seq", out), _bars(rows, "req4k", out), _bars(rows, "vec32", out),
                        _bars(rows, "btio", out), _scale(rows, out)) if f]
    ver = "".join(f"<tr><td>{_e(w)}</td><td>{'n/a' if r is None else f'{r:.2f}'}</td><td>{_e(t)}</td></tr>"
                  for w, r, t in verdicts(rows))
    skipped = "".join(f"<li>{_e(k)}: {_e(v)}</li>" for k, v in data.get("skipped", {}).items())
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>pario remote I/O</title>"
            "<style>body{font-family:sans-serif;margin:2em;max-width:1300px}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 7px}img{max-width:100%}</style></head><body>"
            "<h1>pario remote I/O (seed 004)</h1>"
            "<p>Every figure is the median of the runs, the systems alternating run by run; whiskers "
            "and the min/max columns show the spread.</p>"
            f"<h2>Targets</h2><table><tr><th>ratio</th><th>measured</th><th>target</th></tr>{ver}</table>"
            + (f"<h2>Skipped</h2><ul>{skipped}</ul>" if skipped else "")
            + "<h2>Figures</h2>" + "".join(f"<figure><img src='{_e(f)}' alt='{_e(f)}'></figure>" for f in figs)
            + f"<h2>All figures</h2>{_table(rows)}</body></html>")
    path = os.path.join(out, REPORT)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path
