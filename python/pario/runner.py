"""Running a planned sweep: launch each pario-bench run, collect its JSON lines, log it.

A run that fails (non-zero exit, crash, timeout, no output, missing binary) is recorded in
runs.jsonl with its reason and the sweep goes on. Each run writes its measurements to a
file of its own, which is then appended to DIR/results.jsonl, so a run killed mid-write
cannot corrupt another run's lines. Progress (progress.py) is one plain line per finished
run and, on a terminal, a progress bar with the time elapsed and an estimate of the time left
(estimate_left). With a settle step (settle.py) each launch is preceded by it: sync,
drop the page cache of the previous run's files, pause; the previous run's scratch directory
is kept until then. Measurements are tagged with their round ("round": k in results.jsonl),
so the native and pario launches of one round pair up for the per-round ratio.

Each launch runs in a session (process group) of its own. When the run times out, or the
sweep is interrupted (Ctrl-C, SIGTERM: the signal handlers of cli.py raise Interrupted), the
whole group gets SIGTERM, then SIGKILL after KILL_GRACE seconds, and the run's scratch
directory is removed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Set, TextIO, Tuple

import psutil

from .benchargs import bench_argv
from .launch import Launcher
from .locate import BUILD_BENCH, BUILD_LIB, BenchInstall, find_bench
from .plan import PlannedRun
from .progress import SweepProgress
from .results import RESULTS_FILE, RunRecord, append_run, parse_lines

LOG_DIR = "logs"
SCRATCH_DIR = "scratch"
KILL_GRACE = 3.0   # seconds between SIGTERM and SIGKILL to a run's process group


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: stop the sweep (raised by the CLI's signal handlers)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"


def build_dir_default() -> str:
    return os.environ.get("PARIO_BUILD_DIR") or "build"


def bench_path(build_dir: str, mpi: str) -> str:
    """pario-bench inside a build tree (locate.find_bench also searches installs)."""
    return os.path.join(build_dir, BUILD_BENCH.format(mpi=mpi))


def lib_path(build_dir: str, mpi: str) -> str:
    return os.path.join(build_dir, BUILD_LIB.format(mpi=mpi))


def estimate_left(done: Sequence[RunRecord], remaining: Sequence[PlannedRun]) -> Optional[float]:
    """Seconds the remaining runs will probably take, from the runs done so far: each remaining
    run is expected to last as long as the finished runs of its suite and rank count took on
    average (else of its suite, else of all). None before anything has run."""
    timed = [r for r in done if r.status != "skipped"]
    if not remaining:
        return 0.0
    if not timed:
        return None

    def mean(rs: Sequence[RunRecord]) -> float:   # a run costs its settle step too
        return statistics.fmean(r.elapsed + r.settle for r in rs)

    overall = mean(timed)
    by_suite: Dict[str, List[RunRecord]] = {}
    by_suite_ranks: Dict[tuple, List[RunRecord]] = {}
    for r in timed:
        by_suite.setdefault(r.suite, []).append(r)
        by_suite_ranks.setdefault((r.suite, r.ranks), []).append(r)
    total = 0.0
    for run in remaining:
        same = by_suite_ranks.get((run.suite, run.ranks)) or by_suite.get(run.suite)
        total += mean(same) if same else overall
    return total


@dataclass
class SweepOutcome:
    runs: List[RunRecord]
    elapsed: float

    def count(self, status: str) -> int:
        return sum(1 for r in self.runs if r.status == status)


class Runner:
    def __init__(self, out_dir: str, build_dir: str, launcher: Launcher, timeout: float,
                 stream: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic,
                 installs: Optional[Dict[str, Optional[BenchInstall]]] = None,
                 kill_grace: float = KILL_GRACE,
                 settle: Optional[Callable[[Optional[str]], None]] = None,
                 progress_stream: Optional[TextIO] = None, quiet: bool = False):
        self.out_dir = os.path.abspath(out_dir)
        self.build_dir = os.path.abspath(build_dir)
        self.launcher = launcher
        self.timeout = timeout
        self.stream = stream or sys.stdout
        self.clock = clock
        self.kill_grace = kill_grace
        self.installs: Dict[str, Optional[BenchInstall]] = dict(installs or {})
        self.progress_stream = progress_stream or sys.stderr   # the bar, when a terminal
        self.quiet = quiet                      # no bar, no per-run lines
        self.records: List[RunRecord] = []      # runs finished so far (also when interrupted)
        self.settle = settle                    # called before each launch with the previous scratch dir
        self._previous: Optional[str] = None    # scratch dir of the last launch, until settled

    # -- one run ---------------------------------------------------------------------------
    def install(self, mpi: str) -> Optional[BenchInstall]:
        if mpi not in self.installs:
            self.installs[mpi] = find_bench(mpi, self.build_dir)
        return self.installs[mpi]

    def _bench(self, mpi: str) -> str:
        found = self.install(mpi)
        return found.bench if found else bench_path(self.build_dir, mpi)

    def _lib(self, mpi: str) -> str:
        found = self.install(mpi)
        return found.lib if found and found.lib else lib_path(self.build_dir, mpi)

    def _missing(self, run: PlannedRun) -> Optional[str]:
        found = self.install(run.mpi)
        if found is None:
            return f"pario-bench not found for {run.mpi} ({bench_path(self.build_dir, run.mpi)}, $PARIO_PREFIX, PATH)"
        if run.impl == "pario" and not found.lib:
            return f"libpario.so not found for {run.mpi} (beside {found.bench})"
        return None

    def command(self, run: PlannedRun, raw_file: str, workdir: str) -> List[str]:
        program = bench_argv(self._bench(run.mpi), run.suite, run.case, raw_file, workdir)
        preload = self._lib(run.mpi) if run.impl == "pario" else None
        return self.launcher.command(run.mpi, run.ranks, program, preload)

    def execute(self, run: PlannedRun) -> RunRecord:
        logs = os.path.join(self.out_dir, LOG_DIR)
        os.makedirs(logs, exist_ok=True)
        raw_file = os.path.join(logs, run.slug + ".jsonl")
        workdir = os.path.join(self.out_dir, SCRATCH_DIR, run.slug)
        log = os.path.join(logs, run.slug + ".log")
        rec = RunRecord(index=run.index, suite=run.suite, mpi=run.mpi, impl=run.impl,
                        ranks=run.ranks, case=run.case, command=[],
                        log=os.path.relpath(log, self.out_dir), round=run.round)
        missing = self._missing(run)
        if missing:
            rec.status, rec.message, rec.log = "skipped", missing, ""
            return rec
        rec.command = self.command(run, raw_file, workdir)
        if os.path.exists(raw_file):
            os.remove(raw_file)
        os.makedirs(workdir, exist_ok=True)
        start = self.clock()
        timed_out = False
        proc: Optional[subprocess.Popen] = None
        try:
            with open(log, "w", encoding="utf-8") as logf:
                logf.write("$ " + " ".join(rec.command) + "\n")
                logf.flush()
                try:
                    proc = subprocess.Popen(rec.command, stdout=logf, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.launcher.env(), cwd=workdir,
                                            start_new_session=True)
                except OSError as e:
                    rec.status, rec.message = "failed", f"cannot start launcher: {e}"
                    rec.elapsed = self.clock() - start
                    return rec
                try:
                    rec.returncode = proc.wait(timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    kill_group(proc, self.kill_grace)
                    rec.returncode = proc.returncode
                # the launcher has ended; ranks it left behind in its group go too
                kill_group(proc, self.kill_grace)
        except BaseException:  # Interrupted (Ctrl-C, SIGTERM): stop the whole MPI job first
            if proc is not None:
                kill_group(proc, self.kill_grace)
            raise
        finally:
            if self.settle is None:
                shutil.rmtree(workdir, ignore_errors=True)
            else:                       # the settle step before the next launch drops its cache
                self._previous = workdir
        rec.elapsed = self.clock() - start
        self._collect(rec, raw_file, log, timed_out)
        return rec

    def _collect(self, rec: RunRecord, raw_file: str, log: str, timed_out: bool) -> None:
        lines: List[str] = []
        if os.path.exists(raw_file):
            with open(raw_file, encoding="utf-8", errors="replace") as f:
                lines = f.readlines()
            os.remove(raw_file)
        kept: List[str] = []
        good, problems = parse_lines(lines, os.path.basename(raw_file), kept)
        if kept:
            with open(os.path.join(self.out_dir, RESULTS_FILE), "a", encoding="utf-8") as f:
                f.writelines(_with_round(line, rec.round) for line in kept)
        rec.measurements = len(good)
        unverified = [m for m in good if m.verified is False]
        rec.unverified = len(unverified)
        failed = [m for m in good if m.status == "failed"]
        if timed_out:
            rec.status, rec.message = "timeout", f"killed after {self.timeout:g} s"
        elif rec.returncode != 0:
            rec.status = "failed"
            if unverified:
                rec.message = f"verification failed ({len(unverified)} measurement(s))"
            elif failed and failed[0].error:
                rec.message = failed[0].error
            else:
                rec.message = f"exit status {rec.returncode}: {_last_line(log)}"
        elif not good:
            rec.status, rec.message = "failed", "no measurements written: " + _last_line(log)
        else:
            rec.status = "ok"
            if failed:
                rec.message = f"{len(failed)} measurement(s) failed"
        if problems:
            rec.message = (rec.message + "; " if rec.message else "") + f"{len(problems)} bad result line(s)"
        rec.message = _one_line(rec.message)

    # -- the sweep -------------------------------------------------------------------------
    def _settle(self) -> float:
        """The settle step before a launch; returns the seconds it took."""
        if self.settle is None:
            return 0.0
        t = self.clock()
        try:
            self.settle(self._previous)
        finally:
            if self._previous:
                shutil.rmtree(self._previous, ignore_errors=True)
            self._previous = None
        return self.clock() - t

    def run_all(self, runs: List[PlannedRun]) -> SweepOutcome:
        os.makedirs(self.out_dir, exist_ok=True)
        t0 = self.clock()
        self.records = records = []
        width = len(str(len(runs)))
        try:
            with SweepProgress(len(runs), self.stream, self.progress_stream, self.quiet) as shown:
                for i, run in enumerate(runs):
                    shown.running(run.label, estimate_left(records, runs[i:]))
                    settled = self._settle()
                    rec = self.execute(run)
                    rec.settle = settled
                    append_run(self.out_dir, rec)
                    records.append(rec)
                    detail = f"{rec.measurements} result(s)" if rec.status == "ok" else rec.message
                    shown.finished(f"[{run.index:>{width}}/{len(runs)}] {run.label:<34} {rec.status:<7} "
                                   f"{rec.elapsed:6.1f}s  | {detail}", estimate_left(records, runs[i + 1:]))
        finally:
            shutil.rmtree(os.path.join(self.out_dir, SCRATCH_DIR), ignore_errors=True)
        return SweepOutcome(records, self.clock() - t0)


def _processes() -> Optional[Dict[int, Tuple[int, int]]]:
    """pid -> (parent pid, process group) of every live process (zombies left out), from
    psutil; None where it cannot list processes."""
    out: Dict[int, Tuple[int, int]] = {}
    try:
        procs = psutil.process_iter(["ppid", "status"])
        for p in procs:
            if p.info["status"] in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD) or p.info["ppid"] is None:
                continue
            try:
                out[p.pid] = (p.info["ppid"], os.getpgid(p.pid))
            except (ProcessLookupError, PermissionError):
                continue  # gone, or not ours to see
    except psutil.Error:
        return None
    return out


def job_processes(pgid: int, known: Set[int] = frozenset()) -> Set[int]:
    """Live processes of a launch: its process group, and every descendant of the group and of
    `known` (MPICH's hydra proxy and ranks call setsid(), so they leave the group)."""
    procs = _processes()
    if procs is None:
        try:
            os.killpg(pgid, 0)
            return {pgid}
        except (ProcessLookupError, PermissionError):
            return set()
    job = {pid for pid, (_, pg) in procs.items() if pg == pgid}
    roots = job | set(known) | {pgid}
    children: Dict[int, List[int]] = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in job:
                job.add(child)
                stack.append(child)
    return job | {pid for pid in known if pid in procs}


def kill_group(proc: subprocess.Popen, grace: float = KILL_GRACE) -> None:
    """Stop a launch: SIGTERM to its process group (it leads its own session) and to the
    processes it started that left the group, then SIGKILL to whatever is left after `grace`
    seconds. Reaps `proc`."""
    pgid = proc.pid
    known: Set[int] = set()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        known |= job_processes(pgid, known)
        proc.poll()
        if not known and proc.returncode is not None:
            return
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in known:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline:
            proc.poll()
            # descendants of processes that are gone were reparented: remember them first
            alive = job_processes(pgid, known)
            known = alive
            if proc.returncode is not None and not alive:
                return
            time.sleep(0.05)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process SIGKILL cannot stop
        pass


def _with_round(line: str, round_: int) -> str:
    """The result line with "round": k added (pario-bench's own keys unchanged)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return line.rstrip("\n") + "\n"
    obj["round"] = round_
    return json.dumps(obj) + "\n"


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _last_line(log: str) -> str:
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("$ ")]
    except OSError:
        return ""
    return lines[-1][:200] if lines else "(no output)"
