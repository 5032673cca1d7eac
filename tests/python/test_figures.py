"""The report of a sweep with repeats: SVG beside every PNG, a legend on every panel, medians
with min-max whiskers, log axes for values spanning decades, raw tables collapsed, no "None",
and the machine-readable summary (summary.csv, summary.json) of the native-vs-pario table."""

import csv
import json
import os
import re

import pytest

from conftest import write_synthetic_results
from pario import figures
from pario.cli import main
from pario.report import build_report
from pario.results import load_results
from pario.headline import headlines
from pario.tables import compare, group


@pytest.fixture
def synthetic(tmp_path):
    return write_synthetic_results(str(tmp_path / "res"))


@pytest.fixture
def drawn(monkeypatch):
    """Every figure the report saves: name -> [(y scale, has legend, errorbar containers, axes)]."""
    seen = {}
    real = figures._save

    def spy(fig, out_dir, name):
        seen[name] = [(ax.get_yscale(), ax.get_legend() is not None,
                       sum(1 for c in ax.containers if type(c).__name__ == "ErrorbarContainer"), ax)
                      for ax in fig.axes]
        return real(fig, out_dir, name)

    monkeypatch.setattr(figures, "_save", spy)
    return seen


def test_wants_log():
    assert figures.wants_log([5.0, 50.0, 5000.0])
    assert not figures.wants_log([5.0, 400.0])                 # less than a factor 100
    assert figures.wants_log([5.0, 400.0], ratio=8)
    assert not figures.wants_log([0.55, 1.05])
    assert not figures.wants_log([0.0, 10.0, 5000.0])          # a zero cannot go on a log axis
    assert not figures.wants_log([-1.0, 1000.0])
    assert not figures.wants_log([42.0])
    assert figures.wants_log([None, float("nan"), 1.0, 1000.0])


def test_report_with_repeats(synthetic, drawn):
    html = open(build_report(synthetic), encoding="utf-8").read()
    images = re.findall(r'<img src="([^"]+)"', html)
    assert images
    for img in images:
        svg = os.path.join(synthetic, os.path.splitext(img)[0] + ".svg")
        assert os.path.exists(svg), svg
        assert f'href="{os.path.basename(svg)}"' in html
        text = open(svg, encoding="utf-8").read()
        assert text.lstrip().startswith("<?xml") and "<svg" in text
        labels = re.findall(r"<text[^>]*>([^<]*)</text>", text)
        assert labels, "text in the SVG is kept as text"
        assert "None" not in text, (svg, [t for t in labels if "None" in t])
    assert "None" not in html
    # raw tables collapsed
    assert html.count("<details>") >= 5 and "<summary>Measurements" in html
    # every panel has a legend
    assert drawn
    for name, axes in drawn.items():
        for scale, legend, _, ax in axes:
            assert legend, f"{name}: a panel without legend ({ax.get_title()})"
    # cfs spans 5 .. 5500 MB/s: log; overlap ratios 0.5 .. 1.2: linear
    assert {scale for scale, *_ in drawn["cfs-partitioned-write.png"]} == {"log"}
    assert {scale for scale, *_ in drawn["overlap-ratios.png"]} == {"linear"}
    # runs repeated: whiskers on the curves and on the bars
    assert all(n > 0 for _, _, n, _ in drawn["cfs-partitioned-write.png"])
    assert all(n > 0 for _, _, n, _ in drawn["overlap-ratios.png"])


def test_bars_show_the_median(synthetic, drawn):
    build_report(synthetic)
    ax = drawn["overlap-ratios.png"][0][3]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches if p.get_height() > 0)
    # pario direct: 0.55 x (1, 1.05, 1.3): median 0.5775 (mean 0.6142); native 1.0 x (1, 1.05, 1.3):
    # median 1.05 (mean 1.1167)
    assert 0.5775 in heights and 1.05 in heights
    assert 0.614167 not in heights and 1.116667 not in heights


def test_overlap_figure_shows_the_direct_regime(synthetic, drawn):
    build_report(synthetic)
    ax = drawn["overlap-ratios.png"][0][3]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert any("direct" in lab for lab in labels) and any("cached" in lab for lab in labels)


def test_summary_files(synthetic):
    build_report(synthetic)
    ms, _ = load_results(synthetic)
    comparisons = compare(group(ms))
    with open(os.path.join(synthetic, "summary.csv"), newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(comparisons)
    assert {"suite", "test", "mpi", "ranks", "regime", "native", "pario", "pario_over_native"} <= set(rows[0])
    direct = [r for r in rows if r["suite"] == "overlap" and r["regime"] == "direct"]
    assert len(direct) == 4                                    # 2 MPIs x 2 rank counts
    for r in direct:
        assert float(r["native"]) == pytest.approx(1.05)     # median of 1.0, 1.05, 1.3
        assert float(r["pario"]) == pytest.approx(0.5775)
        assert float(r["pario_over_native"]) == pytest.approx(0.55)
        assert r["native_runs"] == r["pario_runs"] == "3"
        assert float(r["pario_min"]) == pytest.approx(0.55) and float(r["pario_max"]) == pytest.approx(0.715)
        assert json.loads(r["params"])["regime"] == "direct"
    unsupported = [r for r in rows if r["suite"] == "sharedfp" and r["native_status"] == "unsupported"]
    assert unsupported and all(r["native"] == "" and r["pario_over_native"] == "" for r in unsupported)
    assert "None" not in open(os.path.join(synthetic, "summary.csv"), encoding="utf-8").read()

    doc = json.load(open(os.path.join(synthetic, "summary.json"), encoding="utf-8"))
    assert len(doc["configurations"]) == len(comparisons)
    assert doc["configurations"][0].keys() == rows[0].keys()
    nones = [c for c in doc["configurations"] if c["suite"] == "sharedfp" and c["native_status"] == "unsupported"]
    assert nones and all(c["native"] is None and c["pario_over_native"] is None for c in nones)
    head = {h["suite"]: h for h in doc["headline"]}
    assert head["overlap"]["regime"] == "direct"
    assert head["overlap"]["pario_over_native"] == pytest.approx(0.55)
    assert head["overlap"]["verdict"] == "pario overlaps better"
    assert head["cfs"]["pario_over_native"] == pytest.approx(1.1)
    summary = {(s["suite"], s["mpi"], s["regime"]): s for s in doc["summary"]}
    assert summary[("overlap", "mpich", "direct")]["pario_over_native"] == pytest.approx(0.55)
    assert summary[("overlap", "mpich", "cached")]["pario_over_native"] == pytest.approx(0.95)
    assert summary[("sharedfp", "openmpi", "cached")]["unsupported"] == 2


def test_headline_prefers_the_direct_regime_for_overlap(synthetic):
    ms, _ = load_results(synthetic)
    hs = headlines(compare(group(ms)))
    overlap = hs[0]
    assert overlap.suite == "overlap" and overlap.regime == "direct" and overlap.other_regimes == ["cached"]
    assert "overlap, direct regime: pario/native 0.55, pario overlaps better" in overlap.text()
    # without direct-I/O measurements the headline says which regime it is about
    cached_only = [m for m in ms if m.params.get("regime") != "direct"]
    overlap = headlines(compare(group(cached_only)))[0]
    assert overlap.regime == "cached" and overlap.text().startswith("overlap, cached regime")


def test_report_command_prints_headline_and_summary_paths(synthetic, capsys):
    assert main(["bench", "report", synthetic]) == 0
    out = capsys.readouterr().out
    assert "overlap, direct regime: pario/native 0.55" in out
    assert os.path.join(synthetic, "summary.csv") in out and os.path.join(synthetic, "summary.json") in out


def test_bar_labels_name_numbers_and_keep_bars_apart():
    from pario.results import Measurement

    def ov(regime, margin, impl="pario"):
        return Measurement(suite="overlap", test="equal", impl=impl, mpi="mpich", ranks=1,
                           params={"regime": regime, "margin": margin, "elements": 8 << 20},
                           metrics={"ratio": 0.6})
    # the margin follows the regime: left out of the labels
    gs = group([ov("cached", 0.002), ov("direct", 0.005)])
    keys = figures._distinct_keys(gs, figures.OVERLAP_HIDDEN)
    assert keys == ["regime"]
    assert figures._config_label(("equal", 1, "direct"), keys, False) == "np=1\ndirect"
    # two margins in one regime would share a bar: the margin is shown, with its name
    gs = group([ov("cached", 0.002), ov("cached", 0.005)])
    keys = figures._distinct_keys(gs, figures.OVERLAP_HIDDEN)
    assert "margin" in keys
    label = figures._config_label(figures._config_of(gs[0], keys), keys, False)
    assert "margin=0.002" in label and "None" not in label


def test_metascale_figures(tmp_path, drawn):
    """pario-bench metascale: one figure per metric against the rank count, a curve per mode and
    implementation, with a legend; bytes spanning decades on a log axis."""
    recs = []
    for impl, base in (("native", 20000.0), ("pario", 6000.0)):
        for mode, extra in (("once", 0.0), ("fresh", 400.0)):
            for ranks in (4, 16, 64):
                recs.append({"suite": "metascale", "test": mode, "impl": impl, "impl_version": "0.1.0",
                             "mpi": "mpich", "mpi_version": "MPICH 4.0.2", "ranks": ranks,
                             "params": {"mode": mode, "ranks": ranks, "iterations": 5, "runs": 64, "block": 64,
                                        "counted": True, "irregular": True, "hints": {}},
                             "metrics": {"seconds": 0.1, "us_per_iter": 20000.0,
                                         "recv_per_call_mean": base, "recv_per_call_max": base + extra * ranks * ranks,
                                         "recv_per_view_mean": 1.0, "recv_per_view_max": 13.0,
                                         "peak_rss_kib_mean": 20000.0, "peak_rss_kib_max": 21000.0 + ranks},
                             "verified": True, "status": "ok", "error": None, "time": "2026-11-27T12:00:00Z"})
    d = tmp_path / "res"
    d.mkdir()
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    html = open(build_report(str(d)), encoding="utf-8").read()
    names = sorted(n for n in drawn if n.startswith("metascale-"))
    assert names == ["metascale-peak-rss-kib-max.png", "metascale-recv-per-call-max.png",
                     "metascale-recv-per-view-max.png"]
    for n in names:
        assert n in html
        for _, legend, _, ax in drawn[n]:
            assert legend
            assert len(ax.lines) >= 4          # once and fresh, native and pario
    assert drawn["metascale-recv-per-call-max.png"][0][0] == "log"
