"""`pario bench remote` (pario/remote.py, remote_report.py): the statistics and targets from
synthetic records with hand-computed results, the usage errors, where pario-server is found,
and, where pario-server is built, a quick real run of the seq and req4k experiments."""

import json
import os
import stat
import subprocess
import sys

import pytest

from pario import cli, probes, remote_summary
from pario.locate import find_server
from pario.remote_summary import Record, summarize, summary_text, verdicts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rec(exp, system, value, run, **params):
    return Record(exp, system, "mb_per_s", value, "MB/s", run, params)


def test_summarize_median_min_max():
    rows = summarize([rec("seq", "tcp-copy", v, i) for i, v in enumerate([100, 300, 200, 500, 400])]
                     + [rec("seq", "pario-write", v, i) for i, v in enumerate([80, 90])])
    by = {r["system"]: r for r in rows}
    assert by["tcp-copy"]["median"] == 300 and by["tcp-copy"]["min"] == 100 and by["tcp-copy"]["max"] == 500
    assert by["tcp-copy"]["runs"] == 5
    assert by["pario-write"]["median"] == 85  # even count: mean of the middle two


def test_params_keep_configurations_apart():
    rows = summarize([rec("scale", "pario-blocking-write-direct", 10, 0, clients=1, servers=1),
                      rec("scale", "pario-blocking-write-direct", 30, 0, clients=2, servers=1)])
    assert sorted(r["median"] for r in rows) == [10, 30]


def test_verdicts_ratios():
    recs = [rec("seq", "tcp-copy", 1000, 0), rec("seq", "pario-write", 850, 0), rec("seq", "pario-read", 950, 0),
            rec("seq", "xrootd-write", 250, 0), rec("seq", "xrootd-read", 475, 0),
            Record("req4k", "pario-one-at-a-time", "requests_per_s", 1000, "req/s", 0),
            Record("req4k", "pario-pipelined", "requests_per_s", 12000, "req/s", 0, {"depth": 64}),
            Record("btio", "stage-original", "total_s", 100.0, "s", 0),
            Record("btio", "nonblocking-original", "total_s", 70.0, "s", 0)]
    v = {what: ratio for what, ratio, _ in verdicts(summarize(recs))}
    assert v["sequential write / TCP copy"] == pytest.approx(0.85)
    assert v["sequential write / min(TCP copy, server's local write)"] == pytest.approx(0.85)
    slow = verdicts(summarize(recs + [rec("seq", "local-write", 425, 0)]))
    assert {w: r for w, r, _ in slow}["sequential write / min(TCP copy, server's local write)"] == pytest.approx(2.0)
    assert v["sequential read / TCP copy"] == pytest.approx(0.95)
    assert v["sequential write: pario / XRootD"] == pytest.approx(3.4)
    assert v["sequential read: pario / XRootD"] == pytest.approx(2.0)
    assert v["4 KiB reads: pipelined / one at a time"] == pytest.approx(12.0)
    assert v["BTIO original: remote nonblocking faster than staging by"] == pytest.approx(100 / 70 - 1)
    assert v["BTIO optimised: remote nonblocking faster than staging by"] is None
    text = summary_text(summarize(recs), {"scale": "no forwarder"})
    assert "0.85" in text and "12.00" in text and "scale: skipped: no forwarder" in text


def test_local_write_bound(tmp_path, monkeypatch):
    """The bound is the bytes written over the time the writes took: every byte reaches the
    file (its size checked before it is removed), the rate comes from the clock around the
    writes (a fake one: 0.25 s), and nothing is left behind."""
    nbytes = (8 << 20) + 4096  # a whole block and a part of one
    ticks = iter([100.0, 100.25])
    monkeypatch.setattr(probes.time, "perf_counter", lambda: next(ticks))
    sizes, real_remove = [], os.remove
    monkeypatch.setattr(probes.os, "remove", lambda p: (sizes.append(os.path.getsize(p)), real_remove(p)))
    mbps = probes.local_write_mbps(str(tmp_path), nbytes)
    assert sizes == [nbytes]
    assert mbps == pytest.approx(nbytes / 0.25 / 1e6)
    assert list(tmp_path.iterdir()) == []


def test_unknown_experiment_is_a_usage_error(capsys):
    assert cli.main(["bench", "remote", "--experiments", "seq,nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pario: error: unknown experiment nope") and "\n" == err[-1] and err.count("\n") == 1


def test_no_server_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("PARIO_PREFIX", raising=False)
    assert cli.main(["bench", "remote", "--build-dir", str(tmp_path), "--quick"]) == 2
    assert "no pario-server" in capsys.readouterr().err


def test_find_server_order(tmp_path):
    def exe(p):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
        return str(p)
    env = {"PATH": str(tmp_path / "path"), "PARIO_PREFIX": str(tmp_path / "prefix")}
    assert find_server("mpich", str(tmp_path / "build"), env) is None
    on_path = exe(tmp_path / "path" / "pario-server")
    assert find_server("mpich", str(tmp_path / "build"), env) == on_path
    in_prefix = exe(tmp_path / "prefix" / "bin" / "pario-server.mpich")
    assert find_server("mpich", str(tmp_path / "build"), env) == in_prefix
    other_flavour = exe(tmp_path / "build" / "openmpi" / "server" / "pario-server")
    assert find_server("mpich", str(tmp_path / "build"), env) == other_flavour
    own = exe(tmp_path / "build" / "mpich" / "server" / "pario-server")
    assert find_server("mpich", str(tmp_path / "build"), env) == own


BUILD = os.environ.get("PARIO_BUILD_DIR", os.path.join(ROOT, "build"))
SERVER = find_server("mpich", BUILD)


@pytest.mark.skipif(SERVER is None, reason="pario-server is not built (make build)")
def test_quick_real_run(tmp_path):
    """The real thing, small: servers started and stopped by the command, results and report
    written, nothing left running."""
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    res = subprocess.run([sys.executable, "-m", "pario", "--build-dir", BUILD, "bench", "remote", "--quick",
                          "--experiments", "seq,req4k", "--repeat", "1", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads((out / "remote-summary.json").read_text())
    systems = {r["system"] for r in data["rows"]}
    assert {"pario-write", "pario-read", "pario-one-at-a-time", "pario-pipelined"} <= systems, data
    assert (out / "remote.html").exists()
    left = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True).stdout.strip()
    assert not left, f"processes left running: {left}"


def test_remote_report_from_summary(tmp_path):
    """remote.html from a summary: the targets and every row's figures, text escaped (a skip
    reason with markup shows as text), each figure drawn beside the page."""
    from pario.remote_report import build_remote_report
    recs = [rec("seq", "tcp-copy", v, i) for i, v in enumerate([1000, 1200, 1100])] + \
           [rec("seq", "pario-write", v, i) for i, v in enumerate([850, 990, 900])]
    (tmp_path / remote_summary.SUMMARY_FILE).write_text(json.dumps(
        {"rows": summarize(recs), "skipped": {"scale": "no <b>forwarder</b>"}}))
    html = open(build_remote_report(str(tmp_path)), encoding="utf-8").read()
    assert "no &lt;b&gt;forwarder&lt;/b&gt;" in html and "<b>" not in html
    # pario-write: median 900 of 850..990; the TCP copy 1100 of 1000..1200; write/copy = 900/1100
    assert '<td class="num">900.0</td><td class="num">850.0</td><td class="num">990.0</td>' in html
    assert '<td class="num">1100.0</td><td class="num">1000.0</td><td class="num">1200.0</td>' in html
    assert "<td>sequential write / TCP copy</td><td>0.82</td>" in html
    assert (tmp_path / "remote-seq.png").stat().st_size > 5000 and "remote-seq.png" in html
