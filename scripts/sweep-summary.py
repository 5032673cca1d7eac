#!/usr/bin/env python3
"""Medians of a collective-sweep.sh results file: per test, size and rank count, each side's
median (min-max) and the median of the per-round ratios pario / native (and pipeline on / off) (rounds paired in
the order they ran). usage: sweep-summary.py RESULTS.jsonl"""
import collections
import json
import statistics
import sys


def main(path):
    runs = collections.defaultdict(list)
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        p = r["params"]
        side = r["impl"]
        if "pario_coll_pipeline" in p.get("hints", {}):
            side = "pipeline=" + p["hints"]["pario_coll_pipeline"]
        size = p.get("region_size", p.get("piece"))
        metric = "mb_per_s" if r["suite"] == "noncontig" else "us_per_iter"
        runs[(r["suite"], r["test"], size, r["ranks"])].append((side, r["metrics"], metric))
    for key in sorted(runs):
        by = collections.defaultdict(list)
        for side, m, metric in runs[key]:
            by[side].append(m)
        out = [" ".join(map(str, key))]
        for side in sorted(by):
            v = [m[metric] for m in by[side]]
            amp = [m["read_amplification"] for m in by[side] if "read_amplification" in m]
            lim = [m["device_mb_per_s"] for m in by[side] if "device_mb_per_s" in m]
            s = f"{side} {statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f}) n={len(v)}"
            if lim:
                s += f" limit {statistics.median(lim):.0f}"
            if amp:
                s += f" amp {statistics.median(amp):.2f}"
            out.append(s)
        for base, other in (("native", "pario"), ("pipeline=false", "pipeline=true")):
            if base in by and other in by:
                ratios = [x[metric] / y[metric] for x, y in zip(by[other], by[base])]
                out.append(f"{other}/{base} {statistics.median(ratios):.2f} "
                           f"({min(ratios):.2f}-{max(ratios):.2f})")
        print(" | ".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    main(sys.argv[1])
