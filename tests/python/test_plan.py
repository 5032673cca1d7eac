"""Sweep planning and the per-suite pario-bench command lines."""

import pytest

from pario import IMPLS, MPIS, SUITES, benchargs, plan
from pario.benchargs import BenchArgsError, bench_argv, case_args
from pario.plan import PlanError, expand_case, parse_choice_list, parse_ranks, parse_suites, plan_sweep


def test_parse_suites():
    assert parse_suites("all") == list(SUITES)
    assert parse_suites("sharedfp,cfs") == ["cfs", "sharedfp"]   # canonical order
    assert parse_suites(" btio ") == ["btio"]
    with pytest.raises(PlanError, match="unknown suite"):
        parse_suites("cfs,ior")
    with pytest.raises(PlanError):
        parse_suites(",")


def test_parse_ranks_and_choices():
    assert parse_ranks("4,1,2,2") == [1, 2, 4]
    for bad in ("", "0", "two", "1,-2"):
        with pytest.raises(PlanError):
            parse_ranks(bad)
    assert parse_choice_list("mpich,openmpi", MPIS, "MPI") == ["openmpi", "mpich"]
    with pytest.raises(PlanError, match="unknown MPI"):
        parse_choice_list("intelmpi", MPIS, "MPI")


def test_expand_case_respects_list_params(monkeypatch):
    case = {"mode": [1, 2], "variability": [0, 20], "loops": 8}
    monkeypatch.setitem(benchargs.LIST_PARAMS, "sharedfp", ())
    out = expand_case("sharedfp", case)
    assert len(out) == 4 and all(c["loops"] == 8 for c in out)
    assert {(c["mode"], c["variability"]) for c in out} == {(1, 0), (1, 20), (2, 0), (2, 20)}
    monkeypatch.setitem(benchargs.LIST_PARAMS, "sharedfp", ("mode",))
    out = expand_case("sharedfp", case)
    assert len(out) == 2 and all(c["mode"] == [1, 2] for c in out)


def test_plan_order_and_count():
    runs = plan_sweep(["cfs", "btio"], MPIS, IMPLS, [1, 2], quick=True)
    per_suite = {s: len([c for case in plan.PRESETS["quick"][s]["cases"] for c in expand_case(s, case)])
                 for s in ("cfs", "btio")}
    assert len(runs) == sum(n * len(MPIS) * 2 * len(IMPLS) for n in per_suite.values())
    assert [r.index for r in runs] == list(range(1, len(runs) + 1))
    assert runs[0].suite == "cfs" and runs[-1].suite == "btio"
    # native and pario of one configuration run back to back
    for a, b in zip(runs[::2], runs[1::2]):
        assert (a.impl, b.impl) == ("native", "pario")
        assert (a.suite, a.mpi, a.ranks, a.case) == (b.suite, b.mpi, b.ranks, b.case)
    assert len({r.slug for r in runs}) == len(runs)


def test_plan_ranks_default_and_override():
    runs = plan_sweep(["sharedfp"], ["mpich"], ["pario"], None, quick=True)
    assert sorted({r.ranks for r in runs}) == plan.PRESETS["quick"]["sharedfp"].get("ranks", plan.DEFAULT_RANKS)
    runs = plan_sweep(["overlap"], ["mpich"], ["pario"], [3], quick=True)
    assert {r.ranks for r in runs} == {3}


@pytest.mark.parametrize("preset", ["quick", "full"])
def test_every_preset_case_builds_a_command_line(preset):
    for suite in SUITES:
        assert plan.PRESETS[preset][suite]["cases"], suite
        for case in plan.PRESETS[preset][suite]["cases"]:
            for c in expand_case(suite, case):
                argv = bench_argv("/b/pario-bench", suite, c, "/r/results.jsonl", "/w")
                assert argv[:2] == ["/b/pario-bench", suite]
                assert "/r/results.jsonl" in argv


def test_quick_is_small():
    """--quick must stay a few minutes: bound the number of launches of `all --quick`."""
    runs = plan_sweep(SUITES, MPIS, IMPLS, None, quick=True)
    assert len(runs) <= 160


def test_case_args_shapes(monkeypatch):
    monkeypatch.setitem(benchargs.LIST_PARAMS, "noncontig", ("region_size",))
    args = case_args("noncontig", {"region_size": [32, 1024], "access": "collective",
                                   "hints": {"cb_buffer_size": 1048576}})
    opts = benchargs.OPTIONS["noncontig"]
    i = args.index(opts["region_size"])
    assert args[i + 1] == "32,1024"
    assert args[args.index(opts["access"]) + 1] == "collective"
    assert "cb_buffer_size=1048576" in args
    with pytest.raises(BenchArgsError, match="no pario-bench option"):
        case_args("cfs", {"colour": "red"})
    with pytest.raises(BenchArgsError, match="one value per run"):
        monkeypatch.setitem(benchargs.LIST_PARAMS, "cfs", ())
        case_args("cfs", {"block_size": [1, 2]})
    with pytest.raises(BenchArgsError):
        case_args("ior", {})


def test_quick_overlap_runs_the_direct_regime():
    """make demo shows pario where overlap is possible: direct I/O, besides the page cache."""
    runs = plan_sweep(["overlap"], MPIS, IMPLS, None, quick=True)
    regimes = {r.case["regime"] for r in runs}
    assert regimes == {"cached", "direct"}
    direct = [r for r in runs if r.case["regime"] == "direct"]
    assert {r.ranks for r in direct} == {1, 2}                 # no more ranks than the 2 cores
    assert {r.ranks for r in runs if r.case["regime"] == "cached"} == set(plan.DEFAULT_RANKS)
    for mpi in MPIS:
        for n in (1, 2):
            assert {r.impl for r in direct if r.mpi == mpi and r.ranks == n} == set(IMPLS)
    argv = bench_argv("/b/pario-bench", "overlap", direct[0].case, "/r.jsonl", "/w")
    assert argv[argv.index(benchargs.OPTIONS["overlap"]["regime"]) + 1] == "direct"
    # --ranks overrides the preset's rank counts for every case
    runs = plan_sweep(["overlap"], ["mpich"], ["pario"], [4], quick=True)
    assert {(r.ranks, r.case["regime"]) for r in runs} == {(4, "cached"), (4, "direct")}


def test_quick_demo_time_stays_about_the_same():
    """The direct-regime overlap runs add 8 short launches to the 60 of the quick demo."""
    assert len(plan_sweep(SUITES, MPIS, IMPLS, None, quick=True)) <= 70
