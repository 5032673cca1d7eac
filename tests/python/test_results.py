"""Parsing pario-bench result lines and results directories."""

import json

import pytest

from pario.results import (Measurement, ResultError, RunRecord, append_run, load_results, load_runs,
                           measurement_from_dict, parse_line, parse_lines)

GOOD = {
    "suite": "cfs", "test": "partitioned-write", "impl": "pario", "impl_version": "0.1.0",
    "mpi": "mpich", "mpi_version": "MPICH 4.0.2", "ranks": 4,
    "params": {"test": "partitioned-write", "block_size": 65536, "file_size": 4194304},
    "metrics": {"seconds": 0.01, "mb_per_s": 419.4}, "verified": True, "status": "ok",
    "error": None, "time": "2025-11-22T10:00:00Z",
}


def test_parse_good_line():
    m = parse_line(json.dumps(GOOD))
    assert isinstance(m, Measurement)
    assert (m.suite, m.test, m.impl, m.mpi, m.ranks) == ("cfs", "partitioned-write", "pario", "mpich", 4)
    assert m.metric("mb_per_s") == pytest.approx(419.4)
    assert m.params["block_size"] == 65536
    assert m.ok and m.verified is True and m.error is None


def test_blank_line_is_none():
    assert parse_line("   \n") is None


@pytest.mark.parametrize("change, message", [
    ({"suite": None}, "suite"),
    ({"ranks": "four"}, "ranks"),
    ({"ranks": 0}, "ranks"),
    ({"status": "maybe"}, "status"),
    ({"params": [1, 2]}, "params"),
    ({"metrics": "fast"}, "metrics"),
    ({"verified": "yes"}, "verified"),
])
def test_invalid_fields(change, message):
    obj = dict(GOOD)
    obj.update(change)
    if change.get("suite", 1) is None:
        del obj["suite"]
    with pytest.raises(ResultError, match=message):
        measurement_from_dict(obj)


def test_not_json_and_not_object():
    with pytest.raises(ResultError):
        parse_line('{"suite": "cfs", ')
    with pytest.raises(ResultError):
        parse_line("[1, 2, 3]")


def test_unsupported_and_failed_lines():
    obj = dict(GOOD, status="unsupported", verified=None, metrics={}, error="no shared pointers here")
    m = parse_line(json.dumps(obj))
    assert m.status == "unsupported" and not m.ok and m.verified is None
    obj = dict(GOOD, status="failed", verified=False, error="verification: byte 12 differs")
    m = parse_line(json.dumps(obj))
    assert m.verified is False and m.error.startswith("verification")


def test_metric_ignores_non_numbers():
    m = parse_line(json.dumps(dict(GOOD, metrics={"a": None, "b": "x", "c": True, "d": 3, "e": float("nan")})))
    assert m.metric("a") is None and m.metric("b") is None and m.metric("c") is None
    assert m.metric("d") == 3.0 and m.metric("e") is None and m.metric("missing") is None


def test_missing_test_falls_back_to_params_or_suite():
    obj = dict(GOOD)
    del obj["test"]
    assert parse_line(json.dumps(obj)).test == "partitioned-write"
    obj["params"] = {}
    assert parse_line(json.dumps(obj)).test == "cfs"


def test_parse_lines_reports_bad_lines_and_keeps_good():
    lines = [json.dumps(GOOD), "", "garbage", json.dumps(dict(GOOD, ranks=2)), '{"suite": "cfs"']
    ms, problems = parse_lines(lines, source="r.jsonl")
    assert [m.ranks for m in ms] == [4, 2]
    assert len(problems) == 2
    assert problems[0].startswith("r.jsonl:3:")


def test_fixture_parses_completely(fixture_path):
    ms, problems = load_results(fixture_path)
    assert problems == []
    assert {m.suite for m in ms} == {"overlap", "cfs", "noncontig", "sharedfp", "btio"}
    assert {m.impl for m in ms} == {"native", "pario"}
    assert {m.mpi for m in ms} == {"openmpi", "mpich"}
    assert {m.status for m in ms} == {"ok", "failed", "unsupported"}


def test_load_results_from_directory(tmp_path, fixture_path):
    assert load_results(str(tmp_path)) == ([], [])
    (tmp_path / "results.jsonl").write_text(open(fixture_path).read() + "truncated {\n")
    ms, problems = load_results(str(tmp_path))
    assert len(ms) > 100 and len(problems) == 1


def test_run_records_round_trip(tmp_path):
    r = RunRecord(index=1, suite="cfs", mpi="mpich", impl="pario", ranks=2, case={"block_size": 4096},
                  command=["mpiexec.mpich", "-n", "2"], status="failed", returncode=3, message="boom")
    append_run(str(tmp_path), r)
    append_run(str(tmp_path), RunRecord(index=2, suite="btio", mpi="openmpi", impl="native", ranks=1,
                                        case={}, command=[], status="ok"))
    with open(tmp_path / "runs.jsonl", "a") as f:
        f.write("not json\n")
    runs = load_runs(str(tmp_path))
    assert [x.index for x in runs] == [1, 2]
    assert runs[0] == r
