"""Grouping repeats, native-vs-pario pairing and the text summary."""

import pytest

from pario.results import Measurement, load_results
from pario.textout import text_table
from pario.headline import geomean, summary_rows, summary_text
from pario.tables import common_params, compare, fmt_bytes, group, regime_of, varying_params


def m(impl, value, ranks=2, bs=65536, suite="cfs", metric="mb_per_s", status="ok", verified=True, mpi="mpich"):
    return Measurement(suite=suite, test="partitioned-write", impl=impl, mpi=mpi, ranks=ranks,
                       params={"block_size": bs, "file_size": 1 << 22},
                       metrics={metric: value} if value is not None else {},
                       status=status, verified=verified)


def test_group_averages_repeats():
    gs = group([m("native", 100), m("native", 300), m("pario", 50)])
    assert len(gs) == 2
    native = [g for g in gs if g.impl == "native"][0]
    assert native.mean("mb_per_s") == 200 and native.min("mb_per_s") == 100 and native.max("mb_per_s") == 300
    assert len(native.items) == 2 and native.status == "ok" and native.verified is True


def test_group_status_and_verification():
    g = group([m("pario", None, status="unsupported", verified=None)])[0]
    assert g.status == "unsupported" and g.verified is None and g.mean("mb_per_s") is None
    g = group([m("pario", 10, status="failed", verified=False), m("pario", 20)])[0]
    assert g.status == "ok" and g.verified is False
    assert g.mean("mb_per_s") == 20       # failed repeats are not averaged in


def test_compare_ratio_is_pario_over_native():
    cs = compare(group([m("native", 100), m("pario", 150), m("native", 80, ranks=4)]))
    assert len(cs) == 2
    two = [c for c in cs if c.ranks == 2][0]
    assert two.ratio == pytest.approx(1.5)
    four = [c for c in cs if c.ranks == 4][0]
    assert four.ratio is None and four.status("pario") == "missing" and four.status("native") == "ok"


def test_outcome_params_do_not_split_configurations():
    # sharedfp reports the component get_info names: null natively, pario's own under pario.
    def sf(impl, value, comp):
        return Measurement(suite="sharedfp", test="write_shared", impl=impl, mpi="mpich", ranks=4,
                           params={"mode": 1, "data_size": 64, "sharedfp_component": comp},
                           metrics={"mb_per_s": value}, status="ok", verified=True)
    cs = compare(group([sf("native", 10, None), sf("pario", 40, "sm")]))
    assert len(cs) == 1 and cs[0].ratio == pytest.approx(4.0)
    # an asked-for parameter still tells configurations apart
    cs = compare(group([m("native", 100, bs=1), m("pario", 100, bs=2)]))
    assert len(cs) == 2 and all(c.ratio is None for c in cs)


def test_overlap_ratio_of_ratios():
    cs = compare(group([m("native", 1.6, suite="overlap", metric="ratio"),
                        m("pario", 0.8, suite="overlap", metric="ratio")]))
    assert cs[0].metric == "ratio" and cs[0].ratio == pytest.approx(0.5)


def test_varying_and_common_params():
    gs = group([m("native", 1, bs=4096), m("native", 1, bs=65536)])
    assert varying_params(gs) == ["block_size"]
    assert common_params(gs) == {"file_size": 1 << 22}


def test_regime():
    assert regime_of({"regime": "direct"}) == "direct"
    assert regime_of({"sync": True}) == "synced"
    assert regime_of({"sync": False}) == "cached"
    assert regime_of({"sync": False, "cold": True}) == "cold"
    assert regime_of({"sync": False, "cold": False}) == "cached"
    assert regime_of({}) == "cached"


def test_small_helpers():
    assert fmt_bytes(65536) == "64 KiB" and fmt_bytes(32) == "32 B" and fmt_bytes(3 << 30) == "3 GiB"
    assert geomean([2, 8]) == pytest.approx(4) and geomean([None, 0]) is None
    text = text_table(["a", "bb"], [["x", "1"], ["yyy", "[b]22[/b]"]], right=(1,))
    # rich lays it out: the header, a rule, the rows; right-aligned column; no markup read
    assert text.splitlines() == ["a           bb", "---- ---------", "x            1", "yyy  [b]22[/b]"]


def test_summary_of_fixture(fixture_path):
    ms, _ = load_results(fixture_path)
    cs = compare(group(ms))
    rows = summary_rows(cs)
    assert {(r[0], r[1]) for r in rows} == {(s, mpi) for s in ("overlap", "cfs", "noncontig", "sharedfp", "btio")
                                             for mpi in ("openmpi", "mpich")}
    sharedfp_ompi = [r for r in rows if r[0] == "sharedfp" and r[1] == "openmpi"][0]
    assert int(sharedfp_ompi[5]) >= 1          # the fixture's verification failure
    assert int(sharedfp_ompi[6]) >= 1          # and its unsupported mode
    text = summary_text(cs)
    assert "pario/native" in text and "noncontig" in text
    assert summary_text([]) == "(no measurements)"
