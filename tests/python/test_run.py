"""`pario bench run` end to end against a fake pario-bench (no MPI needed)."""

import json
import os
import re
import subprocess
import sys
import time

from conftest import FAKE_LAUNCHER
from pario import SUITES
from pario.cli import main
from pario.results import load_results, load_runs


def run(args, fake_build, out):
    """A sweep against the fake; one round per configuration unless args say otherwise (the
    rounds themselves are tested in test_repeat.py)."""
    rounds = [] if "--repeat" in args else ["--repeat", "1"]
    return main(["bench", "run"] + args + rounds + ["--out", str(out), "--build-dir", str(fake_build),
                                                    "--launcher", FAKE_LAUNCHER])


def test_sweep_all_quick(fake_build, tmp_path, capsys):
    out = tmp_path / "res"
    rc = run(["all", "--quick", "--ranks", "1,2"], fake_build, out)
    text = capsys.readouterr().out
    assert rc == 0, text
    runs = load_runs(str(out))
    assert runs and all(r.status == "ok" for r in runs), [r.message for r in runs if r.status != "ok"]
    n = len(runs)
    # one plain line per run, [k/N], its status and duration; no bar (stderr is no terminal)
    progress = [ln for ln in text.splitlines() if re.match(r"\[\s*\d+/%d\] .* ok +[\d.]+s  \| " % n, ln)]
    assert len(progress) == n
    assert "\r" not in text and "\x1b" not in text
    assert (out / "summary.csv").exists() and (out / "summary.json").exists()
    ms, problems = load_results(str(out))
    assert problems == []
    assert {m.suite for m in ms} == set(SUITES)
    assert {m.impl for m in ms} == {"native", "pario"}
    assert {m.mpi for m in ms} == {"openmpi", "mpich"}
    assert {m.ranks for m in ms} == {1, 2}
    html = (out / "report.html").read_text()
    for suite in SUITES:
        assert f'id="{suite}"' in html
    assert "report: " + os.path.join(str(out), "report.html") in text
    assert "pario/native" in text
    meta = json.loads((out / "meta.json").read_text())
    assert meta["quick"] is True and meta["suites"] == list(SUITES)
    assert meta["command"].startswith("pario bench run all --quick --ranks 1,2 --repeat 1")
    assert meta["repeat"] == 1 and {r.round for r in runs} == {1}
    assert not (out / "scratch").exists()          # test files cleaned up


def test_failed_runs_do_not_abort(fake_build, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL_SUITE", "cfs")
    out = tmp_path / "res"
    rc = run(["cfs,btio", "--quick", "--ranks", "2", "--mpi", "mpich"], fake_build, out)
    text = capsys.readouterr().out
    assert rc == 0                       # a crashed run is reported, not fatal
    runs = load_runs(str(out))
    cfs = [r for r in runs if r.suite == "cfs"]
    btio = [r for r in runs if r.suite == "btio"]
    assert cfs and all(r.status == "failed" and r.returncode == 3 for r in cfs)
    assert "fake failure in cfs" in cfs[0].message
    assert btio and all(r.status == "ok" for r in btio)
    assert "failed" in text and "fake failure in cfs" in text
    log = out / cfs[0].log
    assert "fake failure in cfs" in log.read_text()
    html = (out / "report.html").read_text()
    assert "fake failure in cfs" in html


def test_quiet_leaves_the_summary(fake_build, tmp_path, capsys):
    rc = run(["btio", "--quick", "--ranks", "1,2", "--mpi", "mpich", "--quiet"], fake_build, tmp_path / "res")
    out, err = capsys.readouterr()
    assert rc == 0, out
    assert not re.search(r"^\[\s*\d+/\d+\] ", out, re.M)      # no line per run
    assert "runs in " in out and "report: " in out and err == ""
    assert len(load_runs(str(tmp_path / "res"))) == 4


def test_pario_verification_failure_sets_exit_status(fake_build, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_VERIFY_FAIL", "sharedfp")
    rc = run(["sharedfp", "--quick", "--ranks", "1", "--mpi", "openmpi", "--impl", "pario"],
             fake_build, tmp_path / "res")
    assert rc == 1
    assert "pario FAILED data verification" in capsys.readouterr().err
    html = (tmp_path / "res" / "report.html").read_text()
    assert "Data verification failures" in html and "byte 7 differs" in html


def test_native_verification_failure_is_a_finding(fake_build, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_VERIFY_FAIL", "sharedfp")
    rc = run(["sharedfp", "--quick", "--ranks", "1", "--mpi", "mpich", "--impl", "native"],
             fake_build, tmp_path / "res")
    assert rc == 0
    assert "native MPI-IO failed data verification" in capsys.readouterr().out
    runs = load_runs(str(tmp_path / "res"))
    assert runs and all(r.status == "failed" and r.unverified for r in runs)


def test_timeout(fake_build, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_SLEEP_SUITE", "btio")
    out = tmp_path / "res"
    rc = main(["bench", "run", "btio,sharedfp", "--quick", "--ranks", "1", "--mpi", "mpich", "--impl", "native",
               "--out", str(out), "--build-dir", str(fake_build), "--launcher", FAKE_LAUNCHER,
               "--timeout", "1"])
    assert rc == 0
    runs = load_runs(str(out))
    assert {r.status for r in runs if r.suite == "btio"} == {"timeout"}
    assert {r.status for r in runs if r.suite == "sharedfp"} == {"ok"}


def test_nothing_built(tmp_path, capsys):
    rc = main(["bench", "run", "all", "--quick", "--out", str(tmp_path / "res"),
               "--build-dir", str(tmp_path / "nobuild")])
    assert rc == 2
    assert "not built" in capsys.readouterr().err


def test_one_flavour_missing_is_skipped(fake_build, tmp_path, capsys):
    os.remove(fake_build / "mpich" / "src" / "libpario.so")
    out = tmp_path / "res"
    rc = run(["btio", "--quick", "--ranks", "1"], fake_build, out)
    assert rc == 0
    skipped = [r for r in load_runs(str(out)) if r.status == "skipped"]
    assert skipped and all(r.mpi == "mpich" and r.impl == "pario" for r in skipped)
    assert "no libpario.so for mpich" in capsys.readouterr().err


def test_fresh_and_append(fake_build, tmp_path, capsys):
    out = tmp_path / "res"
    args = ["btio", "--quick", "--ranks", "1", "--mpi", "mpich", "--impl", "native"]
    assert run(args, fake_build, out) == 0
    first = len(load_results(str(out))[0])
    assert run(args, fake_build, out) == 0
    assert len(load_results(str(out))[0]) == first           # replaced, not doubled
    assert run(args + ["--append"], fake_build, out) == 0
    assert len(load_results(str(out))[0]) == 2 * first


def test_dry_run_and_default_launcher(fake_build, tmp_path, capsys):
    rc = main(["bench", "run", "sharedfp", "--quick", "--ranks", "4", "--dry-run",
               "--out", str(tmp_path / "res"), "--build-dir", str(fake_build)])
    assert rc == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(ln.split()[1] == "mpiexec.openmpi" and "LD_PRELOAD=" in ln for ln in lines)
    assert any(ln.split()[1] == "mpiexec.mpich" and "-genv LD_PRELOAD" in ln for ln in lines)
    assert all(" -n 4 " in ln for ln in lines)
    assert not (tmp_path / "res").exists()


def test_bad_arguments(tmp_path, capsys):
    assert main(["bench", "run", "ior", "--out", str(tmp_path)]) == 2
    assert main(["bench", "run", "all", "--mpi", "lam", "--out", str(tmp_path)]) == 2
    assert main(["bench", "run", "all", "--launcher", "srun", "--out", str(tmp_path)]) == 2
    assert "{ranks}" in capsys.readouterr().err


def test_help_commands():
    for args in (["--help"], ["bench", "--help"], ["bench", "run", "--help"], ["bench", "report", "--help"]):
        p = subprocess.run([sys.executable, "-m", "pario"] + args, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert "usage: pario" in p.stdout
    p = subprocess.run([sys.executable, "-m", "pario", "bench", "run", "--help"], capture_output=True, text=True)
    for word in ("--quick", "--ranks", "--mpi", "--impl", "--out", "--launcher", "exit status"):
        assert word in p.stdout


def test_kill_group_stops_descendants_that_left_the_group():
    """A launch whose children call setsid() (MPICH's hydra proxy and ranks do) leaves its
    process group: kill_group still finds them through the process tree (psutil) and stops
    every one."""
    import psutil
    from pario.runner import job_processes, kill_group
    proc = subprocess.Popen(["sh", "-c", "setsid sleep 60 & sleep 60 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(job_processes(proc.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        job = job_processes(proc.pid)
        assert len(job) >= 3, job                     # sh, the sleep in the group, the setsid one
        outside = [p for p in job if os.getpgid(p) != proc.pid]
        assert outside, "the setsid child should have left the group"
        kill_group(proc, grace=1.0)
        alive = [p for p in job if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        assert not alive, alive
    finally:
        if proc.poll() is None:
            proc.kill()
