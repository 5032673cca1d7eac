"""Repeatable figures: rounds alternating native and pario, the settle step between launches,
medians with min/max, the spread of the per-round ratios, and the machine's limit beside each
figure (sharedfp, overlap, noncontig)."""

import json
import os

import pytest

from conftest import FAKE_LAUNCHER
from pario import settle as settle_mod
from pario.cli import main
from pario.launch import Launcher
from pario.plan import PlanError, default_repeat, plan_sweep
from pario.results import Measurement, RunRecord, load_results, load_runs
from pario.runner import Runner, estimate_left
from pario.settle import SettleError, Settler, fadvise_tree
from pario.summary import comparison_records
from pario.headline import headlines
from pario.tables import compare, group, median


def m(impl, value, rnd=None, suite="cfs", test="partitioned-write", metric="mb_per_s", **extra):
    metrics = {metric: value}
    metrics.update(extra)
    return Measurement(suite=suite, test=test, impl=impl, mpi="mpich", ranks=2,
                       params={"block_size": 65536, "hints": {}}, metrics=metrics, status="ok",
                       verified=True, round=rnd)


# ---- planning ------------------------------------------------------------------------------

def test_rounds_alternate_implementations():
    runs = plan_sweep(["overlap"], mpis=["mpich"], impls=["native", "pario"], ranks=[1], quick=True, repeat=3)
    cases = len(plan_sweep(["overlap"], mpis=["mpich"], impls=["native"], ranks=[1], quick=True))
    assert cases == 2
    assert len(runs) == cases * 3 * 2
    first = runs[:6]
    assert [r.impl for r in first] == ["native", "pario"] * 3
    assert [r.round for r in first] == [1, 1, 2, 2, 3, 3]
    assert all(r.case == first[0].case and r.rounds == 3 for r in first)
    assert runs[6].case != first[0].case                     # next configuration after its rounds
    assert [r.index for r in runs] == list(range(1, len(runs) + 1))
    assert len({r.slug for r in runs}) == len(runs)
    assert [r.round for r in runs[6:]] == [1, 1, 2, 2, 3, 3]
    assert first[3].label.endswith("pario np=1 r2/3") and first[3].slug.endswith("-r2")


def test_default_repeat_and_single_round_names():
    assert default_repeat(["native", "pario"]) == 5
    assert default_repeat(["pario"]) == 1
    one = plan_sweep(["btio"], mpis=["mpich"], impls=["pario"], ranks=[1], quick=True)
    assert all(r.round == 1 and r.rounds == 1 and "r1" not in r.label and "-r" not in r.slug for r in one)
    with pytest.raises(PlanError):
        plan_sweep(["btio"], repeat=0)


# ---- statistics: hand-computed values -------------------------------------------------------

def test_median_min_max_and_ratio_spread():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert median([]) is None
    native = [100.0, 120.0, 90.0, 110.0]
    pario = [130.0, 120.0, 99.0, 143.0]
    ms = [m("native", v, k) for k, v in enumerate(native, 1)] + [m("pario", v, k) for k, v in enumerate(pario, 1)]
    [c] = compare(group(ms))
    assert c.native_value == pytest.approx(105.0)             # (100 + 110) / 2
    assert c.pario_value == pytest.approx(125.0)              # (120 + 130) / 2
    assert c.ratio == pytest.approx(125.0 / 105.0)            # ratio of the medians
    assert c.round_ratios == pytest.approx([1.3, 1.0, 1.1, 1.3])
    assert (c.ratio_min, c.ratio_max, c.rounds) == (pytest.approx(1.0), pytest.approx(1.3), 4)
    assert (c.native.min("mb_per_s"), c.native.max("mb_per_s")) == (90.0, 120.0)
    [rec] = comparison_records([c])
    assert rec["native"] == pytest.approx(105.0) and rec["pario"] == pytest.approx(125.0)
    assert rec["native_min"] == 90.0 and rec["pario_max"] == 143.0
    assert rec["ratio_min"] == pytest.approx(1.0) and rec["ratio_max"] == pytest.approx(1.3)
    assert rec["rounds"] == 4 and rec["limit"] is None and rec["pario_share"] is None


def test_rounds_pair_by_tag_not_by_order():
    # round 2's pario run was written first: pairing must follow the tags
    ms = [m("native", 100.0, 1), m("pario", 300.0, 2), m("native", 200.0, 2), m("pario", 150.0, 1)]
    [c] = compare(group(ms))
    assert c.round_ratios == pytest.approx([1.5, 1.5])
    # a round only one side measured (e.g. pario failed) does not count
    ms.append(m("native", 50.0, 3))
    [c] = compare(group(ms))
    assert c.rounds == 2


def test_untagged_results_pair_in_order():
    ms = [m("native", 100.0), m("native", 200.0), m("pario", 110.0), m("pario", 180.0)]
    [c] = compare(group(ms))
    assert c.round_ratios == pytest.approx([1.1, 0.9])


def test_limit_and_share_medians():
    # each launch measures its own limit: here the pario launches saw twice the native ones'
    ms = []
    for k, (rate, limit) in enumerate([(1000.0, 4000.0), (1500.0, 5000.0), (900.0, 3000.0)], 1):
        for impl, f in (("native", 1.0), ("pario", 2.0)):
            ms.append(m(impl, rate * f, k, suite="sharedfp", test="write_shared", metric="records_per_s",
                        mb_per_s=rate * f / 100, limit_records_per_s=limit * f, share=rate / limit))
    [c] = compare(group(ms))
    assert c.native.limit == 4000.0 and c.pario.limit == 8000.0  # medians of each side's launches
    assert c.limit == 5500.0                                   # 3000 4000 5000 | 6000 8000 10000
    assert c.native.share == pytest.approx(0.3)                # median of 0.25, 0.3, 0.3
    assert c.pario.share == pytest.approx(0.3)
    [rec] = comparison_records([c])
    assert rec["limit_metric"] == "limit_records_per_s"
    assert (rec["limit"], rec["limit_min"], rec["limit_max"]) == (5500.0, 3000.0, 10000.0)
    assert rec["pario_share_min"] == pytest.approx(0.25) and rec["pario_share_max"] == pytest.approx(0.3)
    [h] = headlines([c])
    assert h.pario_share == pytest.approx(0.3) and "share of the machine's limit: pario 0.30, native 0.30" in h.text()
    # a suite without a limit has none
    [c] = compare(group([m("native", 1.0, 1, share=0.5), m("pario", 2.0, 1, share=0.5)]))
    assert c.limit is None and c.pario.share is None


# ---- the settle step -------------------------------------------------------------------------

def test_settler_syncs_drops_and_pauses(tmp_path):
    events = []
    d = tmp_path / "prev"
    d.mkdir()
    (d / "a.dat").write_bytes(b"x" * 8192)
    (d / "sub").mkdir()
    (d / "sub" / "b.dat").write_bytes(b"y")
    assert fadvise_tree(str(d)) == 2
    assert fadvise_tree(str(tmp_path / "missing")) == 0 and fadvise_tree(None) == 0
    s = Settler("fadvise", 0.5, sync=lambda: events.append("sync"), sleep=lambda t: events.append(("sleep", t)))
    s(str(d))
    s(None)
    assert events == ["sync", ("sleep", 0.5), "sync", ("sleep", 0.5)]
    events.clear()
    Settler("none", 0.25, sync=lambda: events.append("sync"), sleep=lambda t: events.append(("sleep", t)))(None)
    assert events == [("sleep", 0.25)]
    with pytest.raises(SettleError):
        Settler("flush")
    with pytest.raises(SettleError):
        Settler("fadvise", -1)


def test_drop_caches_needs_permission(monkeypatch):
    monkeypatch.setattr(settle_mod, "can_drop_caches", lambda: False)
    with pytest.raises(SettleError, match="root"):
        Settler("drop-caches")


def test_settle_runs_before_each_launch(fake_build, tmp_path, monkeypatch):
    """The runner calls the settle step before every launch, after the previous one ended,
    with the previous launch's scratch directory still there; it is removed afterwards."""
    order = tmp_path / "order.log"
    monkeypatch.setenv("FAKE_ORDER_LOG", str(order))
    events = []

    def settle(previous):
        launched = len(order.read_text().splitlines()) if order.exists() else 0
        events.append((launched, previous, previous is not None and os.path.isdir(previous)))

    runs = plan_sweep(["btio"], mpis=["mpich"], impls=["native", "pario"], ranks=[1], quick=True, repeat=2)[:4]
    out = tmp_path / "res"
    runner = Runner(str(out), str(fake_build), Launcher(FAKE_LAUNCHER), 30, settle=settle)
    outcome = runner.run_all(runs)
    assert [r.status for r in outcome.runs] == ["ok"] * 4
    assert [e[0] for e in events] == [0, 1, 2, 3]             # one settle before each launch
    assert events[0][1] is None
    for k in range(1, 4):
        assert events[k][1].endswith(runs[k - 1].slug) and events[k][2]
    assert order.read_text().split("\n")[:4] == ["btio mpich native", "btio mpich pario"] * 2
    assert not (out / "scratch").exists()
    assert [r.round for r in load_runs(str(out))] == [1, 1, 2, 2]
    ms, _ = load_results(str(out))
    assert sorted({(x.impl, x.round) for x in ms}) == [("native", 1), ("native", 2), ("pario", 1), ("pario", 2)]


def test_eta_counts_settle_time():
    done = [RunRecord(1, "cfs", "mpich", "native", 1, {}, [], status="ok", elapsed=2.0, settle=1.0)]
    remaining = plan_sweep(["cfs"], mpis=["mpich"], impls=["native", "pario"], ranks=[1], quick=True, repeat=3)[1:4]
    assert estimate_left(done, remaining) == pytest.approx(9.0)


# ---- end to end ------------------------------------------------------------------------------

def test_cli_repeat_default_alternates_and_reports_spread(fake_build, tmp_path, capsys, monkeypatch,
                                                         quick_settle):
    order = tmp_path / "order.log"
    monkeypatch.setenv("FAKE_ORDER_LOG", str(order))
    out = tmp_path / "res"
    rc = main(["bench", "run", "sharedfp", "--quick", "--ranks", "1", "--mpi", "mpich", "--out", str(out),
               "--build-dir", str(fake_build), "--launcher", FAKE_LAUNCHER])
    text = capsys.readouterr().out
    assert rc == 0, text
    runs = load_runs(str(out))
    assert len(runs) == 10                                     # one configuration, 5 rounds x 2
    assert [r.impl for r in runs] == ["native", "pario"] * 5
    assert [r.round for r in runs] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert order.read_text().splitlines() == ["sharedfp mpich native", "sharedfp mpich pario"] * 5
    assert len(quick_settle) == 10                             # sync before every launch
    assert "5 round(s) per configuration, implementations alternating" in text
    assert sum(1 for ln in text.splitlines() if ln.startswith("[") and "/10]" in ln) == 10
    doc = json.loads((out / "summary.json").read_text())
    rows = [r for r in doc["configurations"] if r["test"] == "write_shared"] or doc["configurations"]
    row = rows[0]
    # launch k (0-based) runs at x (1 + 0.1 (k mod 3)): native launches 0,2,4,6,8 -> x1.0,1.2,1.1,1.0,1.2
    # (median 1.1); pario launches 1,3,5,7,9 -> x1.1,1.0,1.2,1.1,1.0 (median 1.1)
    assert row["native"] == pytest.approx(110.0) and row["pario"] == pytest.approx(132.0)
    assert row["native_min"] == pytest.approx(100.0) and row["native_max"] == pytest.approx(120.0)
    assert row["pario_over_native"] == pytest.approx(1.2)
    # per round pario/native: 1.2 x (1.1/1.0, 1.0/1.2, 1.2/1.1, 1.1/1.0, 1.0/1.2)
    assert row["ratio_min"] == pytest.approx(1.0) and row["ratio_max"] == pytest.approx(1.32)
    assert row["rounds"] == 5 and row["limit"] == pytest.approx(4000.0)
    html = (out / "report.html").read_text()
    assert "machine limit" in html and "pario share" in html and 'class="spread"' in html
    meta = json.loads((out / "meta.json").read_text())
    assert meta["repeat"] == 5 and meta["settle"]["method"] == "fadvise"


def test_cli_repeat_option_and_single_impl(fake_build, tmp_path, capsys):
    out = tmp_path / "res"
    base = ["bench", "run", "btio", "--quick", "--ranks", "1", "--mpi", "mpich", "--out", str(out),
            "--build-dir", str(fake_build), "--launcher", FAKE_LAUNCHER]
    assert main(base + ["--impl", "pario"]) == 0
    n1 = len(load_runs(str(out)))
    assert main(base + ["--impl", "pario", "--repeat", "3"]) == 0
    assert len(load_runs(str(out))) == 3 * n1
    assert main(base + ["--repeat", "0"]) == 2
    assert main(base + ["--settle", "bogus"]) == 2
    assert "--repeat 0" in capsys.readouterr().err
