"""The CLI's behaviour: Ctrl-C and SIGTERM stop the MPI job, bad input is a one-line error,
the progress bar says how long is left, --version names the MPI of each pario-bench found."""

import io
import os
import re
import shlex
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import pario
from conftest import FAKE_LAUNCHER
from pario import locate
from pario.cli import main, version_lines
from pario.launch import Launcher
from pario.plan import PlannedRun, plan_sweep
from pario.results import RunRecord
from pario.progress import fmt_duration
from pario.runner import Runner, estimate_left

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(pario.__file__)))


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def _exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# -- Ctrl-C and SIGTERM ------------------------------------------------------------------
# A stand-in for mpiexec: leaves a test file in the run's scratch directory, starts a child
# shell and a grandchild sleep (as mpiexec starts proxies and ranks), and a "rank" that leaves
# the process group with setsid() (as MPICH's hydra proxy and ranks do), records their process
# ids and waits. With FAKE_IGNORE_TERM the child, grandchild and rank ignore SIGTERM, so only the
# SIGKILL that follows the grace period stops them.
FAKE_MPIEXEC = textwrap.dedent('''
    import os, subprocess, sys, time
    pids = os.environ["FAKE_PIDS"]
    argv = sys.argv[2:]                               # after {ranks}: pario-bench and its options
    workdir = argv[argv.index("--dir") + 1]
    with open(os.path.join(workdir, "pario-bench-overlap.dat"), "w") as f:
        f.write("x" * 4096)
    trap = "trap '' TERM; " if os.environ.get("FAKE_IGNORE_TERM") else ""
    child = subprocess.Popen(["/bin/sh", "-c", trap + 'sleep 300 & echo $! >> "$FAKE_PIDS"; wait'])
    rank = subprocess.Popen([sys.executable, "-c", "import os, signal, time\\n"
                             "os.setsid()\\n"
                             + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n" if trap else "")
                             + "open(os.environ['FAKE_PIDS'] + '.rank', 'w').write('up')\\n"
                             "time.sleep(300)"])
    while not os.path.exists(pids + ".rank"):
        time.sleep(0.01)
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\\n{child.pid}\\n{rank.pid}\\n")
    while True:
        time.sleep(1)
''')


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat_line = f.read()
    except OSError:
        return False
    return stat_line[stat_line.rfind(")") + 2] != "Z"


def _group_members(pgid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read()
        except OSError:
            continue
        fields = fields[fields.rfind(")") + 2:].split()
        if fields[0] != "Z" and fields[2] == str(pgid):
            out.append(int(name))
    return out


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
@pytest.mark.parametrize("sig,code,ignore_term", [(signal.SIGINT, 130, False), (signal.SIGTERM, 143, True)])
def test_signal_stops_the_mpi_job(fake_build, tmp_path, sig, code, ignore_term):
    launcher = _exe(tmp_path / "fake-mpiexec", "#!" + sys.executable + "\n" + FAKE_MPIEXEC)
    pids = tmp_path / "pids"
    out = tmp_path / "res"
    env = _env(FAKE_PIDS=str(pids))
    if ignore_term:
        env["FAKE_IGNORE_TERM"] = "1"
    cli = subprocess.Popen(
        [sys.executable, "-m", "pario", "bench", "run", "overlap", "--quick", "--ranks", "1", "--mpi", "mpich",
         "--impl", "native", "--out", str(out), "--build-dir", str(fake_build),
         "--launcher", shlex.quote(str(launcher)) + " {ranks}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:           # launcher, child, grandchild and rank are up
            if pids.exists() and len(pids.read_text().split()) == 4:
                break
            assert cli.poll() is None, cli.communicate()
            time.sleep(0.05)
        else:
            pytest.fail("the fake MPI job did not start")
        job = [int(p) for p in pids.read_text().split()]
        assert all(_alive(p) for p in job)
        scratch = out / "scratch"
        assert any(scratch.rglob("pario-bench-overlap.dat"))
        cli.send_signal(sig)
        stdout, stderr = cli.communicate(timeout=60)
        survivors = [p for p in job if _alive(p)]
    finally:
        if cli.poll() is None:
            cli.kill()
        for p in (pids.read_text().split() if pids.exists() else []):   # never leave the fake job behind
            if _alive(int(p)):
                os.kill(int(p), signal.SIGKILL)
    assert cli.returncode == code, (stdout, stderr)
    assert "Traceback" not in stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"pario: interrupted by {signal.Signals(sig).name}"), stderr
    assert "scratch files" in lines[0]
    assert not survivors, "processes of the MPI job survived"
    assert _group_members(job[0]) == []              # the launcher led its own process group
    assert not scratch.exists()


# -- bad input -----------------------------------------------------------------------------
BAD_RUN_ARGS = [
    (["--launcher", "srun -n {ranks} 'unbalanced"], "no closing quotation"),
    (["--launcher", 'mpiexec -n {ranks} "x'], "no closing quotation"),
    (["--launcher", "srun -n {rank}"], "placeholders"),
    (["--launcher", "srun"], "{ranks}"),
    (["--timeout", "-5"], "positive number of seconds"),
    (["--timeout", "0"], "positive number of seconds"),
    (["--timeout", "soon"], "not a number of seconds"),
    (["--timeout", "nan"], "positive number of seconds"),
    (["--ranks", "0"], "bad rank count"),
    (["--ranks", "two"], "bad rank count"),
    (["--mpi", "lam"], "unknown MPI flavour"),
    (["--impl", "romio"], "unknown implementation"),
    (["--colour", "red"], "unrecognized arguments"),
]


@pytest.mark.parametrize("extra,words", BAD_RUN_ARGS)
def test_bad_run_input_is_one_line(fake_build, tmp_path, capsys, extra, words):
    rc = main(["bench", "run", "cfs", "--quick", "--out", str(tmp_path / "res"),
               "--build-dir", str(fake_build)] + extra)
    captured = capsys.readouterr()
    assert rc == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pario: error: "), captured.err
    assert words in lines[0]
    assert not (tmp_path / "res").exists()


def test_unknown_suite_and_missing_command(capsys):
    assert main(["bench", "run", "ior,cfs"]) == 2
    assert main([]) == 2
    assert main(["bench"]) == 2
    assert main(["frobnicate"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 4 and all(ln.startswith("pario: error: ") for ln in lines)
    assert "unknown suite ior" in lines[0]


def test_out_is_a_file(fake_build, tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["bench", "run", "cfs", "--quick", "--out", str(f), "--build-dir", str(fake_build),
                 "--launcher", FAKE_LAUNCHER]) == 2
    assert capsys.readouterr().err.startswith("pario: error: --out")


@pytest.mark.parametrize("case", ["missing", "file", "results-is-a-directory", "unwritable"])
def test_unreadable_result_directories(tmp_path, capsys, case, fixture_path):
    d = tmp_path / "res"
    if case == "file":
        d.write_text("not a directory")
    elif case == "results-is-a-directory":
        (d / "results.jsonl").mkdir(parents=True)
    elif case == "unwritable":
        # report.html cannot be written: a directory of that name is in the way
        d.mkdir()
        (d / "results.jsonl").write_text(open(fixture_path).readline())
        (d / "report.html").mkdir()
    rc = main(["bench", "report", str(d)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pario: error: "), err


def test_errors_in_a_real_process_have_no_traceback(tmp_path):
    for args in (["bench", "run", "all", "--launcher", "srun -n {ranks} 'x"],
                 ["bench", "run", "all", "--timeout", "-1"],
                 ["bench", "report", str(tmp_path / "nothing")]):
        p = subprocess.run([sys.executable, "-m", "pario"] + args, capture_output=True, text=True, env=_env(),
                           timeout=60)
        assert p.returncode == 2, p
        assert "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("pario: error: ")


# -- progress ------------------------------------------------------------------------------
def _rec(suite, ranks, elapsed, status="ok"):
    return RunRecord(index=0, suite=suite, mpi="mpich", impl="native", ranks=ranks, case={}, command=[],
                     status=status, elapsed=elapsed)


def _planned(suite, ranks):
    return PlannedRun(0, suite, "mpich", "native", ranks)


def test_estimate_left():
    assert estimate_left([], [_planned("cfs", 1)]) is None
    assert estimate_left([_rec("cfs", 1, 2.0)], []) == 0.0
    done = [_rec("cfs", 1, 2.0), _rec("cfs", 4, 10.0), _rec("btio", 1, 1.0), _rec("btio", 1, 0.0, "skipped")]
    # same suite and ranks; same suite; nothing alike: the mean of all timed runs
    assert estimate_left(done, [_planned("cfs", 4)]) == pytest.approx(10.0)
    assert estimate_left(done, [_planned("cfs", 2)]) == pytest.approx(6.0)
    assert estimate_left(done, [_planned("overlap", 1)]) == pytest.approx(13.0 / 3)
    assert estimate_left(done, [_planned("btio", 1)] * 3) == pytest.approx(3.0)
    assert fmt_duration(83) == "0:01:23" and fmt_duration(3725) == "1:02:05"


class _Clock:
    """A clock that advances 5 s per reading, so the runs have durations to show."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 5.0
        return self.t


class _Tty(io.StringIO):
    def isatty(self):
        return True


def _runner(fake_build, out, stream, bar=None, quiet=False):
    return Runner(str(out), str(fake_build), Launcher(FAKE_LAUNCHER), 30, stream=stream, clock=_Clock(),
                  progress_stream=bar if bar is not None else io.StringIO(), quiet=quiet)


RUN_LINE = re.compile(r"^\[\s*(\d+)/(\d+)\] (\S+) (\S+) (\S+) np=(\d+) +ok +([\d.]+)s  \| \d+ result\(s\)$")


def test_run_lines_without_terminal(fake_build, tmp_path):
    """One plain line per finished run on stdout; no bar when stderr is no terminal."""
    runs = plan_sweep(["btio", "sharedfp"], ["mpich"], ["native", "pario"], [1, 2], quick=True)
    stream, bar = io.StringIO(), io.StringIO()
    outcome = _runner(fake_build, tmp_path / "res", stream, bar).run_all(runs)
    assert outcome.count("ok") == len(runs)
    text = stream.getvalue()
    assert "\r" not in text and "\x1b" not in text and bar.getvalue() == ""
    lines = text.splitlines()
    assert len(lines) == len(runs)
    for k, (line, run) in enumerate(zip(lines, runs), 1):
        m = RUN_LINE.match(line)
        assert m, line
        assert (int(m.group(1)), int(m.group(2))) == (k, len(runs))
        assert (m.group(3), m.group(4), m.group(5), int(m.group(6))) == (run.suite, run.mpi, run.impl, run.ranks)
        assert float(m.group(7)) > 0


def test_progress_bar_on_a_terminal(fake_build, tmp_path):
    """On a terminal: rich's bar on stderr with runs done of the total, elapsed time and the time
    left; the per-run lines go above it; nothing is left running after the sweep."""
    runs = plan_sweep(["btio"], ["mpich"], ["native"], [1, 2], quick=True)
    stream, bar = io.StringIO(), _Tty()
    threads = set(threading.enumerate())
    _runner(fake_build, tmp_path / "res", stream, bar).run_all(runs)
    assert "\x1b[" in bar.getvalue()                     # drawn with terminal control codes
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", bar.getvalue())
    assert f"0/{len(runs)}" in drawn and f"{len(runs)}/{len(runs)}" in drawn
    assert "ETA ?:??:??" in drawn                        # before the first run has finished
    assert re.search(r"ETA \d+:\d\d:\d\d", drawn)         # an estimate once one has
    assert re.search(r"\d+:\d\d:\d\d ETA", drawn)          # the time elapsed, then the time left
    assert runs[0].label in drawn                        # the run in progress
    assert sum(1 for ln in stream.getvalue().splitlines() if RUN_LINE.match(ln)) == len(runs)
    started = [t for t in threading.enumerate() if t not in threads]
    for t in started:                                    # rich's refresh thread was told to stop
        t.join(timeout=2)
    assert not [t for t in started if t.is_alive()]


def test_progress_bar_on_a_terminal_for_both(fake_build, tmp_path):
    """stdout and stderr the same terminal: the per-run lines are printed through the bar."""
    runs = plan_sweep(["btio"], ["mpich"], ["native"], [1], quick=True)
    stream, bar = _Tty(), _Tty()
    _runner(fake_build, tmp_path / "res", stream, bar).run_all(runs)
    assert stream.getvalue() == ""
    assert re.search(r"\[1/1\] btio mpich native np=1 +ok", bar.getvalue())


def test_quiet(fake_build, tmp_path):
    runs = plan_sweep(["btio"], ["mpich"], ["native"], [1, 2], quick=True)
    stream, bar = _Tty(), _Tty()
    outcome = _runner(fake_build, tmp_path / "res", stream, bar, quiet=True).run_all(runs)
    assert outcome.count("ok") == len(runs)
    assert stream.getvalue() == "" and bar.getvalue() == ""


# -- --version and finding pario-bench -----------------------------------------------------
def _fake_bench(path, version=None, links=b"libmpich.so.12"):
    """An executable pario-bench; with `version`, it answers --version like the real one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "#!/bin/sh\n# " + links.decode() + "\n"
    if version:
        body += f'if [ "$1" = --version ]; then echo "{version}"; exit 0; fi\n'
    body += 'echo "pario-bench: unknown subcommand \'$1\'" >&2; exit 2\n'
    return _exe(path, body)


def test_version_names_the_mpi_of_each_bench(tmp_path, capsys, monkeypatch):
    build = tmp_path / "build"
    _fake_bench(build / "mpich" / "bench" / "pario-bench", "pario-bench 0.1.0 (built for MPICH 4.0.2)")
    _fake_bench(build / "openmpi" / "bench" / "pario-bench", None, b"libmpi.so.40")
    monkeypatch.delenv("PARIO_PREFIX", raising=False)
    assert main(["--build-dir", str(build), "--version"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"pario {pario.__version__}"
    mpich = next(ln for ln in out if ln.startswith("mpich: "))
    assert "pario-bench 0.1.0 (built for MPICH 4.0.2)" in mpich
    openmpi = next(ln for ln in out if ln.startswith("openmpi: "))
    assert "unknown" in openmpi and "no --version" in openmpi       # an older pario-bench
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    lines = version_lines(str(tmp_path / "nobuild"))
    assert lines[0].startswith("pario ") and "no pario-bench found" in lines[1]


def test_version_in_a_real_process(tmp_path):
    p = subprocess.run([sys.executable, "-m", "pario", "--build-dir", str(tmp_path), "--version"],
                       capture_output=True, text=True, env=_env(PATH="/usr/bin:/bin"), timeout=60)
    assert p.returncode == 0 and p.stdout.startswith(f"pario {pario.__version__}\n"), p


def test_find_bench_layouts(tmp_path):
    env = {"PATH": ""}
    build = tmp_path / "build"
    assert locate.find_bench("mpich", str(build), env) is None
    # installed prefix: the layouts of locate.PREFIX_BENCH, with libpario.so beside
    prefix = tmp_path / "prefix"
    env = {"PARIO_PREFIX": str(prefix), "PATH": ""}
    b = _fake_bench(prefix / "lib" / "pario" / "mpich" / "bin" / "pario-bench")
    (prefix / "lib" / "pario" / "mpich" / "lib").mkdir()
    (prefix / "lib" / "pario" / "mpich" / "lib" / "libpario.so").write_bytes(b"")
    found = locate.find_bench("mpich", str(build), env)
    assert (found.bench, found.source) == (str(b), "PARIO_PREFIX")
    assert found.lib == str(prefix / "lib" / "pario" / "mpich" / "lib" / "libpario.so")
    b2 = _fake_bench(prefix / "bin" / "pario-bench.mpich")
    assert locate.find_bench("mpich", str(build), env).bench == str(b2)
    b3 = _fake_bench(prefix / "bin" / "pario-bench-mpich")
    assert locate.find_bench("mpich", str(build), env).bench == str(b3)
    # a plain pario-bench counts for the flavour of the MPI library it is linked against
    plain = _fake_bench(prefix / "bin" / "pario-bench", links=b"libmpi.so.40")
    found = locate.find_bench("openmpi", str(build), env)
    assert found.bench == str(plain) and found.lib is None
    assert locate.find_bench("mpich", str(build), env).bench == str(b3)
    # PATH: <dir>/pario-bench-<mpi>, and the lib/pario/<mpi>/bin layout under <dir>/..
    other = tmp_path / "usr"
    _fake_bench(other / "lib" / "pario" / "openmpi" / "bin" / "pario-bench", links=b"libmpi.so.40")
    (other / "bin").mkdir()
    (other / "lib" / "libpario-openmpi.so").write_bytes(b"")
    found = locate.find_bench("openmpi", None, {"PATH": str(other / "bin")})
    assert found.source == "PATH" and found.bench.endswith("lib/pario/openmpi/bin/pario-bench")
    assert found.lib == str(other / "lib" / "libpario-openmpi.so")
    # the build tree comes first
    built = _fake_bench(build / "mpich" / "bench" / "pario-bench")
    found = locate.find_bench("mpich", str(build), env)
    assert (found.bench, found.source, found.lib) == (str(built), "build", None)


def test_run_uses_an_installed_bench(fake_build, tmp_path, capsys, monkeypatch):
    """No build tree: pario-bench-mpich on PATH and libpario beside it run the sweep."""
    prefix = tmp_path / "inst"
    (prefix / "bin").mkdir(parents=True)
    _exe(prefix / "bin" / "pario-bench-mpich", (fake_build / "mpich" / "bench" / "pario-bench").read_text())
    (prefix / "lib" / "pario" / "mpich" / "lib").mkdir(parents=True)
    (prefix / "lib" / "pario" / "mpich" / "lib" / "libpario.so").write_bytes(b"")
    monkeypatch.setenv("PATH", str(prefix / "bin") + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("FAKE_MPI", "mpich")
    out = tmp_path / "res"
    rc = main(["bench", "run", "btio", "--quick", "--ranks", "1", "--mpi", "mpich", "--out", str(out),
               "--build-dir", str(tmp_path / "nobuild"), "--launcher", FAKE_LAUNCHER, "--repeat", "1"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "2 ok" in text
